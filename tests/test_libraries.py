"""Programs written for JAX, using the libraries JAX users bring, run unchanged on wjax
(``python -m wjax run``) and print what they print under real JAX.

Each program in ``tests/programs/`` runs twice in fresh interpreters: with real JAX, and with
``import jax`` resolving to wjax.  Numbers are compared with rtol 1e-4, words exactly."""
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

PROGRAMS = pathlib.Path(__file__).parent / "programs"


def _run(args, stdin=None, normalize=None, env=None):
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900,
                       input=stdin, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    out = normalize(p.stdout) if normalize else p.stdout
    # numbers apart from the brackets and commas arrays print around them; a complex number's
    # parts are joined (NumPy pads "1.5 -2.j" by the widths of the other entries)
    out = re.sub(r"[\[\](){},:]", " ", out)
    return re.sub(r"(\d\.?)\s+([+-](?:\d+\.?\d*(?:e[+-]?\d+)?|inf|nan)j)", r"\1\2", out).split()


def _number(t):
    try:
        return float(t)
    except ValueError:
        return complex(t) if t.endswith("j") else None


def _devices_named_alike(text: str) -> str:
    """Device and platform names as JAX's CPU ones (wjax's devices are ``webgpu:N``)."""
    text = re.sub(r"\bwebgpu:(\d+)", r"cpu:\1", text)
    text = text.replace("device_kind=webgpu", "device_kind=cpu")
    return text.replace("platform=webgpu", "platform=cpu")


def _shard_map_tutorial_alike(text: str) -> str:
    """Two outputs of the shard_map tutorial print JAX internals: the name of the function
    JAX wraps a one-spec body in (``_rem_singleton``), and the jaxpr of a shard_map (JAX's
    shows its sharding types and a ``pvary`` it inserts).  Both are replaced by a marker on
    both sides; every other line is compared."""
    text = _devices_named_alike(text)
    text = re.sub(r"shard_map applied to the function '[^']*'", "shard_map applied to the "
                  "function F", text)
    return re.sub(r"\{ lambda ; .*?\n  in \(c,\) \}", "JAXPR", text, flags=re.S)


@pytest.mark.parametrize("program,normalize", [
    ("parallel_tutorial.py", _devices_named_alike),
    ("shard_map_tutorial.py", _shard_map_tutorial_alike),
    ("sharding_checks.py", None)])
def test_parallel_programs_run_unchanged_with_jax_results(program, normalize):
    # JAX's two parallel tutorials on 8 devices (8 logical wgpu devices on one adapter; the
    # programs ask for them as JAX's CPU backend takes them), and checks on 4
    path = str(PROGRAMS / program)
    _same(_run(["-m", "wjax", "run", path], normalize=normalize),
          _run([path], normalize=normalize))


def _same(ours, theirs):
    assert len(ours) == len(theirs), (ours, theirs)
    for a, b in zip(ours, theirs):
        try:
            fa, fb = _number(a), _number(b)
        except ValueError:
            fa = fb = None
        if fa is None or fb is None:
            assert a == b, (ours, theirs)
            continue
        np.testing.assert_allclose(fa, fb, rtol=1e-4, atol=1e-6, err_msg=f"{ours} vs {theirs}")


@pytest.mark.parametrize("program", ["optax_mlp.py", "jaxtyping_affine.py", "debug_callbacks.py",
                                     "checkpoint_policies.py", "custom_primitive.py",
                                     "equinox_cnn.py", "chex_linear.py",
                                     "saved_residuals.py", "custom_derivative_calls.py",
                                     "haiku_cnn.py", "jit_tutorial.py", "autodiff_tutorial.py",
                                     "tutorials_vmap_pytrees_random_control.py",
                                     "stax_mnist.py", "flax_nnx.py", "flax_linen.py", "flax_rnn.py",
                                     "flax_lifted.py", "optax_more.py", "flax_vae.py",
                                     "numpyro_svi.py", "diffrax_more.py",
                                     "complex_autodiff.py", "lineax_solve.py",
                                     "optimistix_newton.py", "debug_nans_traceback.py",
                                     "lineax_qr.py",
                                     "numpyro_nuts.py", "diffrax_tsit5.py", "distrax_tanh.py"])
def test_program_runs_unchanged_with_jax_results(program):
    path = str(PROGRAMS / program)
    _same(_run(["-m", "wjax", "run", path]), _run([path]))


def test_chex_restrict_backends_sees_wjax_compiles(tmp_path):
    # chex wraps jax._src.compiler.backend_compile_and_load: every wjax compile goes through it
    script = tmp_path / "restrict.py"
    script.write_text(
        "import chex, jax, jax.numpy as jnp\n"
        "jax.jit(lambda a: a + 1.0)(jnp.ones(2))\n"
        "with chex.restrict_backends(allowed=['webgpu']):\n"
        "    jax.jit(lambda a: a * 2.0)(jnp.ones(3))\n"
        "try:\n"
        "    with chex.restrict_backends(forbidden=['webgpu']):\n"
        "        jax.jit(lambda a: a * 3.0)(jnp.ones(4))\n"
        "except RuntimeError as e:\n"
        "    print('refused', 'webgpu' in str(e))\n")
    assert _run(["-m", "wjax", "run", str(script)]) == ["refused", "True"]


def test_debug_breakpoint_answers_like_jax():
    # the debugger's prompt, frames, source listing and printed values, from piped commands
    commands = "p y\np w * 2\nu\nc\np y\nc\np x\nc\np x\nc\np v\nw\nc\n"
    path = str(PROGRAMS / "debug_breakpoint.py")
    ours = _run(["-m", "wjax", "run", path], stdin=commands)
    assert ours == _run([path], stdin=commands)
    assert ours.count("Entering") == 5
