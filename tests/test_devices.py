"""Many devices: a data-parallel training step gives the same losses on 1, 2 and 4 logical
devices as real JAX on 4 CPU devices, and in 2 MPI processes (``jax.distributed``) as in one.

Each run is a fresh interpreter (the device count is fixed when the first device starts):
``tests/programs/data_parallel_step.py`` prints its losses.  The tutorials and the finer
checks run through ``tests/test_libraries.py`` (``parallel_tutorial.py``,
``shard_map_tutorial.py``, ``sharding_checks.py``)."""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

PROGRAM = str(pathlib.Path(__file__).parent / "programs" / "data_parallel_step.py")
ROOT = str(pathlib.Path(__file__).resolve().parents[1])


def _losses(cmd, **env):
    full = dict(os.environ, **env)
    full["PYTHONPATH"] = os.pathsep.join([ROOT, full.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=full)
    assert p.returncode == 0, p.stdout + p.stderr
    losses = [float(v) for v in re.findall(r"loss ([-0-9.]+)", p.stdout)]
    assert len(losses) == 4, p.stdout
    return np.array(losses)


def test_data_parallel_step_same_losses_on_1_2_4_devices():
    jax_losses = _losses([sys.executable, PROGRAM],
                         XLA_FLAGS="--xla_force_host_platform_device_count=4")
    assert jax_losses[-1] < jax_losses[0]          # it trains
    for n in (1, 2, 4):
        ours = _losses([sys.executable, "-m", "wjax", "run", PROGRAM], WJAX_NUM_DEVICES=str(n))
        np.testing.assert_allclose(ours, jax_losses, rtol=2e-5, err_msg=f"{n} devices")


def _mpiexec():
    exe = os.environ.get("WJAX_MPIEXEC") or shutil.which(
        "mpiexec", path=os.path.dirname(sys.executable))
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    return exe


@pytest.mark.skipif(_mpiexec() is None, reason="mpi4py and an mpiexec (the test extra's "
                    "mpi4py and mpich wheels) are not installed in this environment")
def test_two_mpi_processes_match_one_process():
    one = _losses([sys.executable, "-m", "wjax", "run", PROGRAM], WJAX_NUM_DEVICES="4")
    two = _losses([_mpiexec(), "-n", "2", sys.executable, "-m", "wjax", "run", PROGRAM,
                   "--distributed"], WJAX_NUM_DEVICES="2")
    np.testing.assert_allclose(two, one, rtol=1e-6)


def test_visualize_array_sharding_draws_each_devices_block():
    # the blocks' devices are those of devices_indices_map, which
    # tests/programs/sharding_checks.py checks against JAX
    code = ("import wjax as jax, wjax.numpy as jnp\n"
            "m = jax.make_mesh((2, 2), ('a', 'b'))\n"
            "x = jnp.arange(16.).reshape(4, 4)\n"
            "jax.debug.visualize_array_sharding(jax.device_put(x, jax.NamedSharding(m, "
            "jax.P('a', 'b'))))\n"
            "jax.debug.visualize_array_sharding(jax.device_put(x, jax.NamedSharding(m, "
            "jax.P(None, 'a'))))\n")
    env = dict(os.environ, WJAX_NUM_DEVICES="4")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    # (tests/test_visualize_sharding.py checks the layout itself against JAX's drawings)
    rows = [r for r in p.stdout.splitlines() if r.startswith("│") and r.strip("│ ")]
    assert rows == ["│ WEBGPU 0 │ WEBGPU 1 │", "│ WEBGPU 2 │ WEBGPU 3 │",
                    "│WEBGPU 0,1│WEBGPU 2,3│"], p.stdout
    assert len(p.stdout.splitlines()) == 22        # blocks 4 and 9 lines high, and borders
