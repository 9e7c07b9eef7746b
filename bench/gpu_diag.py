"""Which matmul variant loses the device: each variant the tuner may choose for a product,
in a fresh process of its own (a lost device poisons the process), checked against NumPy,
and an elementwise kernel after it checked too.  ``python bench/gpu_diag.py [M N K ...]``."""
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, sys, time
import numpy as np
import wjax as jax, wjax.numpy as jnp
from wjax import lax
M, N, K, scan = (int(v) for v in sys.argv[1:5])
from wjax._src.backend import runtime
rt = runtime.get()
ctx = rt.options(loop_slices=1) if scan else None
if ctx is not None:
    ctx.__enter__()
rs = np.random.RandomState(0)
a = rs.randn(M, K).astype(np.float32)
b = (rs.randn(K, N) / np.sqrt(K)).astype(np.float32)
if scan:
    xs = rs.randn(5, M, N).astype(np.float32)
    def f(a, b, xs):
        def cell(c, x):
            c = jnp.tanh(jnp.dot(c, b, precision=lax.Precision.HIGHEST) + x)
            return c, c
        return lax.scan(cell, a, xs)[1]
    c, want = a.astype(np.float64), []
    for x in xs:
        c = np.tanh(c @ b + x); want.append(c)
    want = np.stack(want); args = (a, b, xs)
else:
    f = lambda a, b: jnp.tanh(jnp.dot(a, b, precision=lax.Precision.HIGHEST))
    want = np.tanh(a.astype(np.float64) @ b); args = (a, b)
t0 = time.perf_counter()
got = np.asarray(jax.jit(f)(*args))
t1 = time.perf_counter()
err = float(np.max(np.abs(got - want)))
x = rs.randn(1 << 20).astype(np.float32)
y = np.asarray(jax.jit(lambda x: x * 2 + 1)(x))
times = {k: round(v * 1e6, 1) for k, v in (rt.tuner.last_times or {}).items()}
print(json.dumps(dict(err=err, after=float(np.max(np.abs(y - (x * 2 + 1)))),
                      s=round(t1 - t0, 3), tuned_us=times)))
"""


def names_for(M, N, K):
    from wjax._src.backend import runtime, profiles
    from wjax._src.prims import dot as linalg
    rt = runtime.get()
    offered = []
    with rt.options(**dict(profiles.GPU_STRATEGIES)):
        t = rt.target()
        linalg._mm_config(t.replace(tune=lambda key, names, build, nb, default: offered.append(
            (key, names, default)) or default), 1, M, N, K)
    return offered[0][:2] if offered else (None, [])


def main():
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1:]] or [
        (2048, 2048, 2048, 0), (64, 256, 256, 1), (1024, 2048, 1024, 0)]
    from wjax._src.backend import runtime
    adapter = runtime.get().tuner.adapter_key
    for M, N, K, scan in shapes:
        key, names = names_for(M, N, K)
        names = [None] + names        # None: an empty cache, the tuner times them all
        print(f"## {M}x{N}x{K} scan={scan} key={key}: {len(names)} variants", flush=True)
        for name in names:
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "t.json")
                with open(p, "w") as fh:
                    json.dump({"version": 1, "adapters": {adapter: {key: name}} if name
                               else {}}, fh)
                env = dict(os.environ, WJAX_AUTOTUNE="1", WJAX_AUTOTUNE_CACHE=p)
                if scan:
                    env["WJAX_LOOP_SLICES"] = "1"
                t0 = time.perf_counter()
                try:
                    r = subprocess.run([sys.executable, "-c", CHILD, str(M), str(N), str(K),
                                        str(scan)], env=env, capture_output=True, text=True,
                                       timeout=30)
                    out = (r.stdout.strip().splitlines() or ["rc %d: %s" % (
                        r.returncode, " | ".join(r.stderr.strip().splitlines()[-3:]))])[-1]
                except subprocess.TimeoutExpired:
                    out = "TIMEOUT"
                print(f"  {name or 'tuned':<18} {time.perf_counter() - t0:5.1f}s {out}", flush=True)


if __name__ == "__main__":
    main()
