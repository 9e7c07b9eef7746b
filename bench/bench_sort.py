"""jnp.sort of one float32 row: the LSD radix sort (``Target.radix_sort``) against the bitonic
network, under the device's strategies and the GPU ones, with NumPy and real JAX (CPU).

    .venv/bin/python bench/bench_sort.py [sizes, default 65536,1048576,4194304]
"""
from __future__ import annotations

import sys
import time

import numpy as np

import wjax
import wjax.numpy as jnp
from wjax._src.backend import profiles, runtime


def best(f, x, reps):
    f(x).block_until_ready()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f(x).block_until_ready()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main():
    sizes = [int(s) for s in (sys.argv[1] if len(sys.argv) > 1 else
                              "65536,1048576,4194304").split(",")]
    rt = runtime.get()
    print(f"jnp.sort, one float32 row, on {rt.describe()}; best of 3, ms")
    forms = {"device": {}, "GPU strategies": dict(profiles.GPU_STRATEGIES)}
    try:
        import jax
        jax.config.update("jax_platforms", "cpu")
    except ImportError:
        jax = None
    for n in sizes:
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        xd = wjax.device_put(x)
        row = []
        for name, opts in forms.items():
            for radix in (1, 0):
                wjax.clear_caches()
                with rt.options(**dict(opts, radix_sort=radix)):
                    t = best(wjax.jit(lambda a: jnp.sort(a)), xd, 3)
                row.append(f"{name} {'radix' if radix else 'bitonic'} {t * 1e3:.1f}")
        t0 = time.perf_counter()
        np.sort(x, kind="stable")
        row.append(f"NumPy {(time.perf_counter() - t0) * 1e3:.1f}")
        if jax is not None:
            xj = jax.numpy.asarray(x)
            row.append(f"JAX {best(jax.jit(jax.numpy.sort), xj, 3) * 1e3:.1f}")
        print(f"n={n}: " + ", ".join(row), flush=True)


if __name__ == "__main__":
    main()
