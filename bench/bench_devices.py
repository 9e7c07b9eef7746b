"""Data-parallel MLP training step on 1, 2, 4 (and 8) logical devices, wjax next to real JAX
with as many CPU devices, and the bytes each collective moves.

256-128-10 MLP (tanh), global batch 128 split over a 'batch' mesh axis, parameters
replicated; ``jit(value_and_grad)`` of a ``shard_map`` loss with ``pmean``, plus the SGD
update (the step of ``tests/programs/data_parallel_step.py``, larger).  Each device count runs
in a fresh interpreter (the count is fixed when the first device starts); each number is the
median wall time of a step including the wait for its loss.  wjax's collectives are host
steps (device -> host -> device); the table shows per step how many run and how many bytes
they stage.

    python3 bench/bench_devices.py [--counts 1,2,4] [--steps N]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import ms, table  # noqa: E402

SIZES = (256, 128, 10)
BATCH = 128

CHILD = r"""
import json, os, sys, time, statistics
import numpy as np
lib = sys.argv[1]; n = int(sys.argv[2]); steps = int(sys.argv[3])
if lib == "jax":
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    import jax
    jax.config.update("jax_platforms", "cpu")
else:
    sys.path.insert(0, sys.argv[4])
    import wjax as jax
    jax.config.update("jax_num_cpu_devices", n)
jnp = jax.numpy
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P   # noqa
P = jax.sharding.PartitionSpec
mesh = jax.sharding.Mesh(np.array(jax.devices()[:n]), ("batch",))
rng = np.random.default_rng(0)
sizes = %(sizes)r
params = [(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a), np.zeros(b, np.float32))
          for a, b in zip(sizes, sizes[1:])]
x = rng.normal(size=(%(batch)d, sizes[0])).astype(np.float32)
y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], %(batch)d)]
params = jax.device_put(params, jax.sharding.NamedSharding(mesh, P()))
batch = jax.device_put((x, y), jax.sharding.NamedSharding(mesh, P("batch")))

def loss_local(params, b):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(b[0] @ w1 + b1)
    logits = h @ w2 + b2
    logits = logits - jnp.max(logits, axis=1, keepdims=True)
    logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=1, keepdims=True))
    return jax.lax.pmean(-jnp.mean(jnp.sum(b[1] * logp, axis=1)), "batch")

loss = jax.shard_map(loss_local, mesh=mesh, in_specs=(P(), P("batch")), out_specs=P())

@jax.jit
def step(params, b):
    l, g = jax.value_and_grad(loss)(params, b)
    return l, jax.tree.map(lambda p, q: p - 0.1 * q, params, g)

l, params = step(params, batch); float(l)
l, params = step(params, batch); float(l)
stats0 = dict(jax.spmd.STATS) if lib == "wjax" else {}
ts = []
for _ in range(steps):
    t0 = time.perf_counter()
    l, params = step(params, batch)
    float(l)
    ts.append(time.perf_counter() - t0)
coll = {}
if lib == "wjax":
    for (name, what), v in jax.spmd.STATS.items():
        coll.setdefault(name, {})[what] = (v - stats0.get((name, what), 0)) / steps
print(json.dumps({"t": statistics.median(ts), "loss": float(l), "coll": coll}))
"""


def run(lib, n, steps):
    code = CHILD % {"sizes": SIZES, "batch": BATCH}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-c", code, lib, str(n), str(steps), root],
                       capture_output=True, text=True, timeout=1200,
                       env=dict(os.environ, XDG_RUNTIME_DIR=os.environ.get(
                           "XDG_RUNTIME_DIR", "/tmp")))
    if p.returncode:
        raise SystemExit(p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--counts", default="1,2,4")
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    rows, coll_rows = [], []
    for n in [int(c) for c in a.counts.split(",")]:
        ours = run("wjax", n, a.steps)
        try:
            theirs = run("jax", n, a.steps)
        except SystemExit:
            theirs = None
        rows.append([n, ms(ours["t"]), f"{ours['loss']:.6f}",
                     ms(theirs["t"]) if theirs else "-",
                     f"{theirs['loss']:.6f}" if theirs else "-"])
        print(f"  {n} devices: wjax {ms(ours['t'])}, JAX "
              f"{ms(theirs['t']) if theirs else '-'}", flush=True)
        for name, c in sorted(ours["coll"].items()):
            coll_rows.append([n, name, f"{c.get('steps', 0):.0f}",
                              f"{c.get('bytes', 0) / 1024:.1f} KiB"])
    table(f"data-parallel MLP {SIZES} step, global batch {BATCH} (median of {a.steps})", rows,
          ["devices", "wjax step", "wjax loss", "JAX CPU step", "JAX loss"])
    table("collectives per step (wjax: staged through host memory)", coll_rows,
          ["devices", "collective", "steps", "bytes moved"])


if __name__ == "__main__":
    main()
