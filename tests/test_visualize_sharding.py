"""``jax.debug.visualize_array_sharding`` draws JAX's grid: the same boxes, widths and heights
for the same blocks (compared with real JAX on 8 CPU devices, run in a subprocess; wjax's
labels carry its platform, WEBGPU, so the layout is compared with JAX's label, CPU)."""
import json
import os
import subprocess
import sys

import pytest

from wjax import debug

CASES = [((8, 4), ("a", "b")), ((8, 4), ("a",)), ((8,), ("a",)), ((8, 16), (None, "b")),
         ((32,), (("a", "b"),)), ((4, 4), ()), ((4, 64), ("a",)), ((64, 2), (None, "b"))]

SCRIPT = """
import contextlib, io, json, sys
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((4, 2), ("a", "b"))
out = []
for shape, spec in json.loads(sys.argv[1]):
    spec = [tuple(s) if isinstance(s, list) else s for s in spec]
    x = jax.device_put(jnp.zeros(shape), NamedSharding(mesh, P(*spec)))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        jax.debug.visualize_array_sharding(x)
    idx = {d.id: [[s.start, s.stop] for s in ix] for d, ix in
           x.sharding.devices_indices_map(tuple(shape)).items()}
    out.append([buf.getvalue(), idx])
print(json.dumps(out))
"""


class _Device:
    def __init__(self, i):
        self.id = i


class _Sharding:
    def __init__(self, idx):
        self.idx = idx

    def devices_indices_map(self, shape):
        return {_Device(int(i)): tuple(slice(a, b) for a, b in ix)
                for i, ix in self.idx.items()}


def test_grid_is_laid_out_as_jax_lays_it_out():
    pytest.importorskip("jax")
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=8")
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CASES)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    for (shape, _), (drawn, idx) in zip(CASES, json.loads(p.stdout)):
        ours = debug._drawing(tuple(shape), debug._blocks(tuple(shape), _Sharding(idx)),
                              "CPU", 1.0, 9, 80)
        assert ours == drawn.rstrip("\n"), f"{shape}:\n{ours}\nJAX:\n{drawn}"
