"""Shared helpers for the benchmarks: timing, tables, optional real JAX."""
from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


def timeit(fn, *, warmup=2, reps=7, min_time=0.0):
    """Median wall time of ``fn()`` in seconds (fn must synchronize itself)."""
    for _ in range(warmup):
        fn()
    ts = []
    t_end = time.perf_counter() + min_time
    while len(ts) < reps or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def real_jax():
    try:
        import jax  # noqa: F401  (the oracle, benchmarks only)
        jax.config.update("jax_platforms", "cpu")
        return jax
    except Exception:
        return None


def table(title, rows, cols):
    print(f"\n{title}")
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) for i, c in enumerate(cols)]
    print("  " + "  ".join(str(c).ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  " + "  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


def ms(t):
    return f"{t * 1e3:.3f} ms"


def us(t):
    return f"{t * 1e6:.1f} us"


def interleaved(fns: dict, reps: int = 7, warmup: int = 1) -> dict:
    """{name: (min wall s, min process CPU s)} of each ``fn()`` (which must synchronize),
    the functions run in turn ``reps`` times so that a burst of load elsewhere on the machine
    hits them all alike.  The process CPU time includes the driver's worker threads (lavapipe
    runs shaders on CPU threads of this process), so on a CPU adapter it is a second,
    load-insensitive measure of the same work.  A function with an ``after`` attribute has it
    called after each timed run, off the clock."""
    for f in fns.values():
        for _ in range(warmup):
            f()
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            w0, c0 = time.perf_counter(), time.process_time()
            f()
            wall[k].append(time.perf_counter() - w0)
            cpu[k].append(time.process_time() - c0)
            after = getattr(f, "after", None)     # untimed follow-up work (a device wait)
            if after is not None:
                after()
    return {k: (min(wall[k]), min(cpu[k])) for k in fns}


def ratio(ref, t):
    """``ref / t`` as 'N.NNx' (speed relative to ``ref``: above 1 is faster)."""
    return f"{ref / t:.2f}x" if t > 0 else "-"
