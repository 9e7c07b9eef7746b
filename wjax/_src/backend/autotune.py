"""Autotuning of kernel variants per adapter, with the choices cached on disk.

A kernel rule that has several correct variants of a kernel (the matmul's register-block
shapes, workgroup sizes and split-K factors; the convolution's) builds every candidate for a
*proxy* of its problem -- the problem's sizes rounded to a size class -- and asks the target
which one to use (``Target.tune``, made here and handed to the lowering by the runtime).  The
first time a size class is seen on an adapter, each candidate is compiled and timed on the
device (scratch buffers, the fastest of a few runs); the winner is written to a small JSON
file keyed by the adapter, so later processes on the same machine use it without timing:

    $WJAX_AUTOTUNE_CACHE, or $XDG_CACHE_HOME/wjax/autotune.json (~/.cache/wjax/autotune.json)
    {"version": 1, "adapters": {"<adapter>": {"<kernel>|<size class>": "<candidate>"}}}

``WJAX_AUTOTUNE=0`` turns tuning off: every rule then takes its default variant (the test
suite runs so).  The choice never affects results -- every candidate computes the same
values -- so a missing, stale or corrupt cache file only costs the timing again.
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
import time

import numpy as np

from ..core.config import settings

VERSION = 1
REPS = 3                      # timed runs per candidate (the fastest counts)
MIN_TIMED = 2e-3              # seconds a timed run should last: short kernels repeat in it ...
MAX_INNER = 64                # ... at most this many times


def enabled() -> bool:
    return settings().autotune


def cache_path() -> str:
    env = settings()
    if env.autotune_cache:
        return env.autotune_cache
    base = env.cache_home or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "wjax", "autotune.json")


class Tuner:
    """Times candidates on one runtime's device and remembers the winners (on disk)."""

    def __init__(self, rt, adapter_key: str):
        self.rt, self.adapter_key = rt, adapter_key
        self._lock = threading.RLock()
        self._entries: dict | None = None
        self.stats = {"timed": 0, "hits": 0, "defaults": 0}
        self.last_times: dict = {}      # candidate -> seconds, of the last timing (benchmarks)

    # ------------------------------------------------------------------ the cache file
    def _read_file(self) -> dict:
        try:
            with open(cache_path()) as f:
                data = json.load(f)
            if not isinstance(data, dict) or data.get("version") != VERSION:
                return {}
            adapters = data.get("adapters", {})
            return adapters if isinstance(adapters, dict) else {}
        except (OSError, ValueError):
            return {}

    def entries(self) -> dict:
        if self._entries is None:
            got = self._read_file().get(self.adapter_key, {})
            self._entries = dict(got) if isinstance(got, dict) else {}
        return self._entries

    def _save(self, key: str, name: str) -> None:
        """Adds one choice to the file (read, merge, write a temp file, rename): concurrent
        processes may lose each other's entries, never corrupt the file."""
        path = cache_path()
        adapters = self._read_file()
        mine = adapters.get(self.adapter_key)
        mine = dict(mine) if isinstance(mine, dict) else {}
        mine[key] = name
        adapters[self.adapter_key] = mine
        try:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".autotune.", dir=os.path.dirname(path) or ".")
            with os.fdopen(fd, "w") as f:
                json.dump({"version": VERSION, "adapters": adapters}, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError:
            pass            # a read-only home: the choice still holds for this process

    def forget(self) -> None:
        """Drops what this process read from the file (tests point it at another file)."""
        with self._lock:
            self._entries = None

    # ------------------------------------------------------------------ choosing
    def pick(self, key: str, names: list, build, buffer_bytes: list, default: str) -> str:
        """The name of the variant to use for problem ``key``: the cached choice, else the
        fastest of ``names`` after timing them (``build(name)`` gives a variant's dispatches:
        a list of (wgsl, indices into the tuning buffers, grid); the buffers are zeroed, of
        ``buffer_bytes``), else ``default`` when tuning is off or nothing could be timed."""
        if not enabled() or len(names) < 2:
            self.stats["defaults"] += 1
            return default
        with self._lock:
            got = self.entries().get(key)
            if got in names:
                self.stats["hits"] += 1
                return got
            best = self._time(names, build, buffer_bytes)
            if best is None:
                self.stats["defaults"] += 1
                return default
            self.entries()[key] = best
            self._save(key, best)
            self.stats["timed"] += 1
            return best

    def _time(self, names, build, buffer_bytes):
        rt = self.rt
        bufs = [rt.upload(np.zeros(max(1, -(-n // 4)), np.float32)) for n in buffer_bytes]
        times, built = {}, {}
        for name in names:
            try:
                built[name] = build(name)
            except Exception:         # a variant this problem cannot take
                continue
        # every candidate's kernels compiled at once (several at a time), then timed one by
        # one; a variant this adapter cannot compile is left out
        failed = rt.pipelines([src for d in built.values() for src, _, _ in d],
                              raise_errors=False)
        for name, dispatches in built.items():
            if any(src in failed for src, _, _ in dispatches):
                continue

            def run(n=1, dispatches=dispatches):
                for _ in range(n):
                    for src, idx, grid in dispatches:
                        rt.dispatch(src, [bufs[i] for i in idx], grid)
                rt.synchronize()
            # a short kernel runs ``inner`` times a timing, so that waiting for the device
            # (tens of microseconds on a GPU) does not drown the kernels' own time; the
            # warm-up run says how long one takes
            t0 = time.perf_counter()
            run()
            inner = max(1, min(MAX_INNER, int(MIN_TIMED / max(time.perf_counter() - t0, 1e-7))))
            best = float("inf")
            for _ in range(REPS):
                t0 = time.perf_counter()
                run(inner)
                best = min(best, (time.perf_counter() - t0) / inner)
                if times and best > 2 * min(times.values()):
                    break             # far behind: no need to time it again
            times[name] = best
        self.last_times = times
        if not times:
            return None
        return min(times, key=times.get)
