"""Persistent compilation cache: the MLP training step of
``bench_mlp.py`` (784-512-10, batch 128, jit(value_and_grad + SGD)) in fresh processes --
cold (empty cache directory), then warm (the cache the cold one wrote) -- for wjax and for
real JAX on the CPU with its own persistent cache, in one run.

Reported per process: ``first call`` (trace, compile -- or read the cache --, run and wait
for the loss), the steady ``step`` after it, and ``to first result`` (interpreter start to
the first loss: imports, device start, first call).  Each number is the minimum over
``--reps`` process pairs.  wjax's counters show what the warm process did: plans lowered
(0 when the cache served all of them) and driver pipelines compiled (WebGPU has no pipeline
cache: lavapipe compiles each kernel again in every process).

    .venv/bin/python bench/bench_cache.py [--reps N]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from common import table

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import time
T0 = time.perf_counter()
import json, sys
sys.path.insert(0, {here!r})
import numpy as np
lib = sys.argv[1]
if lib == "wjax":
    import wjax as jax
else:
    import jax
    jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_compilation_cache_dir", sys.argv[2])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
import bench_mlp as B
rng = np.random.default_rng(0)
params = B.init(rng)
x = rng.normal(size=(B.BATCH, B.SIZES[0])).astype(np.float32)
y = np.eye(B.SIZES[-1], dtype=np.float32)[rng.integers(0, B.SIZES[-1], B.BATCH)]
_, update = B.make(jax)
params = jax.tree_util.tree_map(jax.numpy.asarray, params)
x, y = jax.numpy.asarray(x), jax.numpy.asarray(y)
if lib == "wjax":
    from wjax._src.backend import execute, runtime
    rt = runtime.get()
    l0, c0 = execute.stats["lowered"], rt.stats["compiles"]
t1 = time.perf_counter()
params, v = update(params, x, y)
loss = float(v)
t2 = time.perf_counter()
params, v = update(params, x, y)
float(v)
t3 = time.perf_counter()
out = dict(first=t2 - t1, step=t3 - t2, total=t2 - T0, loss=loss)
if lib == "wjax":
    out.update(lowered=execute.stats["lowered"] - l0, pipelines=rt.stats["compiles"] - c0)
print(json.dumps(out))
"""


def child(lib, cache):
    env = dict(os.environ, PYTHONPATH=ROOT, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR",
                                                                            "/tmp"))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", CHILD.format(here=HERE), lib, cache], env=env,
                       capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    libs = ["wjax"]
    try:
        import jax  # noqa: F401  (the oracle, benchmarks only)
        libs.append("jax")
    except ImportError:
        pass
    best: dict = {}
    for _ in range(args.reps):
        for lib in libs:
            d = tempfile.mkdtemp(prefix=f"cache-{lib}-")
            try:
                for phase in ("cold", "warm"):
                    r = child(lib, d)
                    b = best.setdefault((lib, phase), r)
                    for k in ("first", "step", "total"):
                        b[k] = min(b[k], r[k])
            finally:
                shutil.rmtree(d, ignore_errors=True)
    rows = []
    for lib in libs:
        c, w = best[(lib, "cold")], best[(lib, "warm")]
        extra = (f"lowered {c['lowered']} -> {w['lowered']}, pipelines {c['pipelines']} -> "
                 f"{w['pipelines']}") if lib == "wjax" else ""
        rows.append([lib, f"{c['first'] * 1e3:.0f} ms", f"{w['first'] * 1e3:.0f} ms",
                     f"{c['first'] / w['first']:.2f}x", f"{c['total']:.2f} s",
                     f"{w['total']:.2f} s", f"{w['step'] * 1e3:.1f} ms", f"{c['loss']:.5f}",
                     extra])
    if len(libs) == 2:
        jw, ww = best[("jax", "warm")], best[("wjax", "warm")]
        jc, wc = best[("jax", "cold")], best[("wjax", "cold")]
        rows.append(["wjax / JAX", f"{wc['first'] / jc['first']:.1f}x",
                     f"{ww['first'] / jw['first']:.1f}x", "", f"{wc['total'] / jc['total']:.1f}x",
                     f"{ww['total'] / jw['total']:.1f}x", "", "", "(> 1: wjax slower)"])
    table("MLP step (784-512-10, b128): cold and warm processes with the persistent cache "
          "(min over repetitions)", rows,
          ["library", "first call cold", "first call warm", "cold/warm", "to first result cold",
           "to first result warm", "step after", "loss", "warm process did"])


if __name__ == "__main__":
    main()
