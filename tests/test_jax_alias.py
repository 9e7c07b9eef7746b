"""``import jax`` resolving to wjax: ``wjax.install_as_jax()`` and ``python -m wjax run``.

Each case runs in a fresh interpreter, since the hook changes what ``import jax`` means for the
whole process (and the test suite itself imports real JAX as its oracle)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest


def _python(code=None, args=(), cwd=None):
    cmd = [sys.executable] + (["-c", textwrap.dedent(code)] if code else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_install_as_jax_makes_jax_wjax_and_never_loads_jaxlib():
    out = _python("""
        import sys, wjax
        wjax.install_as_jax()
        wjax.install_as_jax()                      # idempotent
        import jax, jax.numpy as jnp
        import jax.random
        from jax import lax
        from jax.scipy.special import logsumexp
        assert jax is wjax and jnp is wjax.numpy and lax is wjax.lax
        assert sys.modules["jax.random"] is wjax.random
        assert logsumexp is wjax.scipy.special.logsumexp
        print(float(jax.grad(lambda x: jnp.sin(x) * 2.0)(1.0)))
        print(sorted(n for n in sys.modules if n.split(".")[0] in ("jax", "jaxlib")
                     and not sys.modules[n].__name__.startswith("wjax")))
    """)
    grad, foreign = out.strip().split("\n")
    np.testing.assert_allclose(float(grad), 2 * np.cos(1.0), rtol=1e-6)
    assert foreign == "[]"


def test_missing_modules_raise_module_not_found_naming_them():
    out = _python("""
        import wjax
        wjax.install_as_jax()
        for name in ("jax.no_such_module", "jaxlib", "jaxlib.xla_client"):
            try:
                __import__(name)
            except ModuleNotFoundError as e:
                print(e.name, "|", e)
            else:
                print(name, "imported")
    """)
    lines = out.strip().split("\n")
    assert [line.split(" | ")[0] for line in lines] == ["jax.no_such_module", "jaxlib", "jaxlib"]
    assert "jax.no_such_module" in lines[0].split(" | ")[1]


def test_install_as_jax_refuses_when_real_jax_is_loaded():
    out = _python("""
        import jax, wjax
        try:
            wjax.install_as_jax()
        except RuntimeError as e:
            print("RuntimeError", e)
    """)
    assert out.startswith("RuntimeError") and "already imported" in out


def test_uninstall_restores_the_real_jax():
    out = _python("""
        import wjax
        from wjax import jax_alias
        jax_alias.install_as_jax()
        import jax
        assert jax is wjax
        jax_alias.uninstall_as_jax()
        import jax
        print(jax.__name__, jax is wjax)
    """)
    assert out.strip() == "jax False"


def test_python_m_wjax_run_runs_a_jax_program_unchanged(tmp_path):
    script = tmp_path / "prog.py"
    (tmp_path / "helper_mod.py").write_text("import jax.numpy as jnp\nTWO = jnp.float32(2)\n")
    script.write_text(textwrap.dedent("""
        import sys
        import jax
        import jax.numpy as jnp
        from helper_mod import TWO          # the script's own directory is importable
        print(__name__, sys.argv[1:], jax.__name__)
        f = jax.jit(lambda x: jnp.sum(jnp.tanh(x) * TWO))
        print(float(f(jnp.arange(4.0))), float(jax.grad(f)(jnp.ones(3))[0]))
    """))
    out = _python(args=["-m", "wjax", "run", str(script), "a", "--b"], cwd=tmp_path)
    head, nums = out.strip().split("\n")
    assert head == "__main__ ['a', '--b'] wjax"
    want = [np.sum(np.tanh(np.arange(4.0)) * 2), 2 * (1 - np.tanh(1.0) ** 2)]
    np.testing.assert_allclose([float(v) for v in nums.split()], want, rtol=1e-5)


def test_python_m_wjax_run_module_and_usage(tmp_path):
    (tmp_path / "progmod.py").write_text(
        "import sys, jax\nprint(__name__, sys.argv[1:], jax.numpy.ones(2).sum())\n")
    out = _python(args=["-m", "wjax", "run", "-m", "progmod", "x"], cwd=tmp_path)
    assert out.strip() == "__main__ ['x'] 2.0"
    p = subprocess.run([sys.executable, "-m", "wjax", "run"], capture_output=True, text=True)
    assert p.returncode == 2 and "usage" in p.stdout


@pytest.mark.parametrize("bad", ["missing.py"])
def test_python_m_wjax_run_missing_script_fails_cleanly(tmp_path, bad):
    p = subprocess.run([sys.executable, "-m", "wjax", "run", str(tmp_path / bad)],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "missing.py" in p.stderr
