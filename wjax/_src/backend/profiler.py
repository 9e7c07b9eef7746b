"""Recording what the device runs, for ``wjax.profiler`` (``jax.profiler``'s API).

While a ``Session`` is attached to the runtime (``Runtime.profile``), every dispatch is
recorded with the kernel's label (the jaxpr equations it computes: ``Dispatch.label`` from
the lowering), its estimated FLOPs and bytes, its grid and when the host recorded it.  Its
duration comes from GPU timestamps where the adapter has ``timestamp-query`` (each dispatch
then gets a compute pass of its own, whose beginning and end write a timestamp; the query
sets are resolved into buffers before each submit and read back when the trace stops), and
otherwise from the host: the work recorded before the kernel is waited for, then the kernel
alone is submitted and waited for (so the time includes one submit; the numbers are for
comparing kernels, not for the total).  Host-side events (``TraceAnnotation``, readbacks,
uploads, compiles) are recorded with ``time.perf_counter``.

``Session.result()`` returns the events; ``chrome_trace`` turns them into a Chrome / Perfetto
trace (JSON: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU)
and ``summary`` into a text table (top kernels, achieved GB/s and GFLOP/s against the
adapter's peak, measured by ``measure_peak``).  FLOPs are estimates (``lower.eqn_flops``); a
kernel op emitted as several dispatches (a split-K product) shares its FLOPs among them
evenly, and bytes count each bound buffer once.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from ..core.config import settings

_QUERIES = 1024            # timestamps per query set (2 per dispatch)


def uses_timestamps(rt) -> bool:
    """Whether kernels on ``rt`` are timed by GPU timestamps (the adapter has
    ``timestamp-query`` and ``WJAX_PROFILE_TIMER`` is not ``host``), else on the host."""
    return "timestamp-query" in rt.features and settings().profile_timer != "host"


class Session:
    def __init__(self, rt, timestamps: bool | None = None):
        self.rt = rt
        self.timestamps = uses_timestamps(rt) if timestamps is None else timestamps
        self.kernels: list[dict] = []         # one per dispatch, in recording order
        self.host: list[dict] = []            # host-side events
        self.t0 = time.perf_counter()
        self.gpu_t0 = None                    # the first kernel's GPU start, ns
        self._sets: list = []                 # [query set, resolve buffer, used, resolved]
        self._pending = None                  # host timing: the kernel being measured
        self.program = None                   # the jitted function whose plan is running
        self._lock = threading.Lock()
        self.period = 1.0
        if timestamps:
            try:
                from wgpu.backends.wgpu_native._api import libf   # ns per timestamp tick
                self.period = float(libf.wgpuQueueGetTimestampPeriod(rt.device.queue._internal))
            except Exception:
                self.period = 1.0

    # ------------------------------------------------------------------ dispatch hooks
    def begin(self, wgsl: str, grid, meta) -> dict | None:
        """Called by ``Runtime.dispatch`` (under its lock) before recording a dispatch in a
        new compute pass; returns the pass's ``timestamp_writes`` (or None)."""
        rec = {"name": getattr(meta, "label", None) or _label_of(wgsl),
               "flops": int(getattr(meta, "flops", 0) or 0),
               "bytes": int(getattr(meta, "nbytes", 0) or 0),
               "grid": tuple(grid) if grid is not None else None,
               "host": time.perf_counter() - self.t0,
               "program": self.program}
        self.kernels.append(rec)
        if not self.timestamps:
            rt = self.rt
            rt.flush()
            rt.device._poll(True)             # the kernel runs alone
            rec["t_start"] = time.perf_counter()
            self._pending = rec
            return None
        if not self._sets or self._sets[-1][2] + 2 > _QUERIES:
            import wgpu
            qs = self.rt.device.create_query_set(type="timestamp", count=_QUERIES)
            buf = self.rt.device.create_buffer(
                size=_QUERIES * 8,
                usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
            self._sets.append([qs, buf, 0, 0])
        s = self._sets[-1]
        rec["query"] = (len(self._sets) - 1, s[2])
        s[2] += 2
        return {"query_set": s[0], "beginning_of_pass_write_index": s[2] - 2,
                "end_of_pass_write_index": s[2] - 1}

    def end(self) -> None:
        """Called after the dispatch is recorded (host timing: submit it and wait)."""
        rec = self._pending
        if rec is None:
            return
        self._pending = None
        rt = self.rt
        rt.flush()
        rt.device._poll(True)
        rec["t_end"] = time.perf_counter()

    def before_submit(self, encoder) -> None:
        """Resolves the timestamps written since the last submit into their buffers."""
        for s in self._sets:
            qs, buf, used, resolved = s
            if used > resolved:
                first = resolved // 32 * 32      # resolve offsets: multiples of 256 bytes
                encoder.resolve_query_set(qs, first, used - first, buf, first * 8)
                s[3] = used

    def host_event(self, name: str, t_start: float, t_end: float, **args) -> None:
        with self._lock:
            self.host.append({"name": name, "start": t_start - self.t0,
                              "end": t_end - self.t0, "args": args})

    # ------------------------------------------------------------------ results
    def result(self) -> tuple[list, list]:
        """(kernels with ``start``/``dur`` in seconds from the session start, host events);
        waits for the device."""
        rt = self.rt
        rt.synchronize()
        if self.timestamps:
            stamps = []
            for qs, buf, used, resolved in self._sets:
                raw = rt.device.queue.read_buffer(buf, 0, max(used, 2) * 8)
                stamps.append(np.frombuffer(bytes(raw), np.uint64)[:used].astype(np.float64))
            starts = [stamps[k["query"][0]][k["query"][1]] * self.period
                      for k in self.kernels if "query" in k]
            gpu0 = min(starts) if starts else 0.0
            # GPU time has its own origin: the first kernel starts when the host recorded it
            first_host = min((k["host"] for k in self.kernels), default=0.0)
            for k in self.kernels:
                st = stamps[k["query"][0]]
                a, b = st[k["query"][1]] * self.period, st[k["query"][1] + 1] * self.period
                k["start"] = first_host + (a - gpu0) * 1e-9
                k["dur"] = max(b - a, 0.0) * 1e-9
        else:
            for k in self.kernels:
                k["start"] = k.get("t_start", self.t0) - self.t0
                k["dur"] = max(k.get("t_end", 0.0) - k.get("t_start", 0.0), 0.0)
        return self.kernels, self.host


def _label_of(wgsl: str) -> str:
    """A name for a kernel dispatched without lowering metadata: its first comment line."""
    for line in wgsl.splitlines():
        line = line.strip()
        if line.startswith("//"):
            return line.lstrip("/ ").split(".")[0][:60]
        if line:
            break
    return "kernel"


# --------------------------------------------------------------------------- outputs

def chrome_trace(kernels, host, device_name: str, timer: str) -> dict:
    """The events as a Chrome / Perfetto trace (``{"traceEvents": [...]}``, times in µs):
    process 1 is the device (one event per kernel, on its timeline), process 2 the host
    (annotations, readbacks, uploads, compiles)."""
    ev = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
           "args": {"name": f"{device_name} ({timer} timing)"}},
          {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "kernels"}},
          {"name": "process_name", "ph": "M", "pid": 2, "tid": 0, "args": {"name": "host"}},
          {"name": "thread_name", "ph": "M", "pid": 2, "tid": 1, "args": {"name": "python"}}]
    for k in kernels:
        dur = k["dur"]
        args = {"flops": k["flops"], "bytes": k["bytes"], "grid": list(k["grid"] or ()),
                "recorded_at_us": round(k["host"] * 1e6, 3)}
        if k.get("program"):
            args["program"] = k["program"]
        if dur > 0:
            args["GB/s"] = round(k["bytes"] / dur / 1e9, 3)
            args["GFLOP/s"] = round(k["flops"] / dur / 1e9, 3)
        ev.append({"name": k["name"], "cat": "kernel", "ph": "X", "pid": 1, "tid": 1,
                   "ts": round(k["start"] * 1e6, 3), "dur": round(dur * 1e6, 3), "args": args})
    for h in host:
        ev.append({"name": h["name"], "cat": "host", "ph": "X", "pid": 2, "tid": 1,
                   "ts": round(h["start"] * 1e6, 3),
                   "dur": round((h["end"] - h["start"]) * 1e6, 3),
                   "args": {k: (v if isinstance(v, (int, float, str, bool)) else str(v))
                            for k, v in h["args"].items()}})
    return {"traceEvents": ev, "displayTimeUnit": "ms"}


def summary(kernels, host, device_name: str, timer: str, peak: dict | None,
            top: int = 20) -> str:
    """A text table: kernels grouped by name, by total time, with achieved GB/s and GFLOP/s
    (and their share of the adapter's measured peak)."""
    groups: dict = {}
    for k in kernels:
        g = groups.setdefault(k["name"], {"n": 0, "t": 0.0, "bytes": 0, "flops": 0})
        g["n"] += 1
        g["t"] += k["dur"]
        g["bytes"] += k["bytes"]
        g["flops"] += k["flops"]
    total = sum(g["t"] for g in groups.values())
    lines = [f"wjax profile: {len(kernels)} kernel launches, {len(groups)} distinct kernels, "
             f"{total * 1e3:.3f} ms on {device_name} ({timer} timing)"]
    if peak:
        lines.append(f"adapter peak (measured): {peak['gbps']:.2f} GB/s, "
                     f"{peak['gflops']:.2f} GFLOP/s")
    hdr = ["time ms", "%", "launches", "mean us", "GB/s", "%peak BW", "GFLOP/s", "%peak FLOP",
           "kernel"]
    rows = []
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]["t"])[:top]:
        t = g["t"]
        gbps = g["bytes"] / t / 1e9 if t > 0 else 0.0
        gfl = g["flops"] / t / 1e9 if t > 0 else 0.0
        rows.append([f"{t * 1e3:.3f}", f"{100 * t / total:.1f}" if total else "-", str(g["n"]),
                     f"{t / g['n'] * 1e6:.1f}", f"{gbps:.2f}",
                     f"{100 * gbps / peak['gbps']:.0f}" if peak and peak["gbps"] else "-",
                     f"{gfl:.2f}",
                     f"{100 * gfl / peak['gflops']:.0f}" if peak and peak["gflops"] else "-",
                     name])
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(hdr)]
    lines.append("  ".join(h.rjust(w) if i < len(hdr) - 1 else h
                           for i, (h, w) in enumerate(zip(hdr, widths))))
    for r in rows:
        lines.append("  ".join(c.rjust(w) if i < len(hdr) - 1 else c
                               for i, (c, w) in enumerate(zip(r, widths))))
    if host:
        hs: dict = {}
        for h in host:
            e = hs.setdefault(h["name"], [0, 0.0])
            e[0] += 1
            e[1] += h["end"] - h["start"]
        lines.append("host events: " + ", ".join(
            f"{n} x{c} {t * 1e3:.3f} ms" for n, (c, t) in sorted(hs.items(), key=lambda kv:
                                                                  -kv[1][1])[:10]))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- peak

_COPY = """@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = g.x + g.y * n.x * 64u;
  let per = arrayLength(&y) / (n.x * n.y * 64u);
  for (var i = t * per; i < t * per + per; i++) { y[i] = x[i]; }
}"""

# GPUs: neighbouring invocations copy neighbouring vec4s, one each (the elementwise kernels'
# form: 3.1 TB/s for a*2+b on an H200, where the grid-stride loop below measured 1.4)
_COPY_ONE = """@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = g.x + g.y * n.x * 256u;
  if (i < arrayLength(&y)) { y[i] = x[i]; }
}"""

# ... or a grid-stride loop over the buffer
_COPY_STRIDED = """@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let total = n.x * n.y * 256u;
  let t = g.x + g.y * n.x * 256u;
  for (var i = t; i < arrayLength(&y); i += total) { y[i] = x[i]; }
}"""

# FMA_CHAINS independent vec4 chains an invocation (a GPU's FMA latency is hidden by the
# chains of one invocation as well as by other invocations), FMA_UNROLL steps of each a
# loop iteration (the loop's own compare and branch are a few percent of the work).  Each
# step squares: a = a * a + d, which no compiler can fold into fewer steps (a linear step,
# a * b + d with constant b and d, let the H200's compiler fold them: the probe read 219
# TFLOP/s on a card of ~67).  Each lane's d has an attracting cycle (period 2, 4, 1, 1) that
# small starts fall into, so the values stay bounded and are what float64 gives.
FMA_STEPS, FMA_CHAINS, FMA_UNROLL = 1024, 4, 8
_FMA = """@group(0) @binding(0) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let t = g.x + g.y * n.x * 64u;
  let d = vec4<f32>(-1.0, -1.3, 0.2, -0.5);
%s
  for (var k = 0u; k < %du; k++) {
%s
  }
  y[t] = %s;
}""" % ("\n".join(f"  var a{c} = vec4<f32>(f32(t % 1024u) * 1e-4 + 0.{c}, 0.1, 0.2, 0.3);"
                   for c in range(FMA_CHAINS)),
       FMA_STEPS // FMA_UNROLL,
       "\n".join(f"    a{c} = fma(a{c}, a{c}, d);" for _ in range(FMA_UNROLL)
                 for c in range(FMA_CHAINS)),
       " + ".join(f"a{c}" for c in range(FMA_CHAINS)))
FMA_FLOPS = FMA_STEPS * FMA_CHAINS * 4 * 2      # an invocation's: vec4 FMAs, 2 FLOPs a lane


def probe_size(target) -> tuple:
    """(bytes copied each way, copy kernels, FMA invocations) of the peak probe, sized to the
    adapter by its ``Target``: ``threads`` invocations (CPU 1024, GPU 2^18) and 2 KiB per
    invocation each way (at least 16 MiB, at most a quarter of the largest binding), copied
    as the reduction strategy reads (contiguous slices on CPU adapters; on GPUs neighbouring
    vec4s, one an invocation and in a grid-stride loop: the faster counts), and FMA chains
    on at least 4096 invocations (GPUs: 4x ``threads``, several waves of every core)."""
    threads = int(target.threads)
    nbytes = max(16 << 20, min(threads * 2048,
                               int(target["max-storage-buffer-binding-size"]) // 4))
    nbytes -= nbytes % (16 * 64 * 256)
    if target.reduction == "slices":
        return nbytes, (_COPY,), max(4096, threads)
    return nbytes, (_COPY_ONE, _COPY_STRIDED), 4 * threads


def measure_peak(rt) -> dict:
    """The adapter's copy bandwidth (GB/s, read + written bytes) and vec4 FMA rate
    (GFLOP/s), each kernel sized to the adapter (``probe_size``) and timed the way the
    profiler times kernels: by GPU timestamps where the adapter has them (the best of five
    launches), else on the host (the best of five timings of four launches between
    waits, so a submit and a wait are shared among them).  Cached on the runtime.  On a
    loaded CPU adapter this is what the adapter gets now, so a kernel may show above 100%."""
    cached = getattr(rt, "_measured_peak", None)
    if cached is not None:
        return cached
    nbytes, copies, fma_threads = probe_size(rt.target())
    n_vec = nbytes // 16
    x, y = rt.alloc(n_vec * 16), rt.alloc(n_vec * 16)
    max_groups = int(rt.target()["max-compute-workgroups-per-dimension"])
    fma_grid = grid_of(fma_threads // 64, max_groups)
    threads = fma_grid[0] * fma_grid[1] * 64       # (the grid's whole rows)
    out = rt.alloc(threads * 16)
    runs = [(_FMA, [out], fma_grid)]
    for copy in copies:
        if copy is _COPY:                  # 256 contiguous slices
            groups = 256
        elif copy is _COPY_ONE:            # a vec4 an invocation
            groups = -(-n_vec // 256)
        else:                              # a grid-stride loop on the FMA's invocations
            groups = max(1, min(n_vec, fma_threads) // 256)
        runs.append((copy, [x, y], grid_of(groups, max_groups)))
    for src, _, _ in runs:
        rt.pipeline(src)
    times = time_dispatches(rt, runs)
    peak = {"gbps": float(2 * n_vec * 16 / min(times[1:]) / 1e9),
            "gflops": float(threads * FMA_FLOPS / times[0] / 1e9)}
    rt._measured_peak = peak
    return peak


def time_dispatches(rt, runs) -> list:
    """Seconds of each dispatch of ``runs`` (``Runtime.dispatch``'s arguments: wgsl, buffers,
    grid[, ranges]) with the profiler's timer (``uses_timestamps``)."""
    return (_gpu_times if uses_timestamps(rt) else _host_times)(rt, runs)


def _gpu_times(rt, runs, reps=5) -> list:
    """Seconds of each dispatch of ``runs`` (``Runtime.dispatch``'s arguments: wgsl, buffers,
    grid[, ranges]) by GPU timestamps: the best of ``reps`` launches after one to warm up."""
    with rt.lock:
        rt.synchronize()
        saved, sess = rt.profile, Session(rt, timestamps=True)
        rt.profile = sess
        try:
            for _ in range(reps + 1):
                for run in runs:
                    rt.dispatch(*run)
            kernels, _ = sess.result()        # attached: the submit resolves its timestamps
        finally:
            rt.profile = saved
    n = len(runs)
    return [min(k["dur"] for k in kernels[n + i::n]) or 1e-9 for i in range(n)]


def _host_times(rt, runs, reps=4) -> list:
    """Seconds of each dispatch of ``runs`` on the host: the best of five timings of ``reps``
    launches between waits, after one such timing to warm up."""
    out = []
    for run in runs:
        ts = []
        for _ in range(6):
            rt.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                rt.dispatch(*run)
            rt.synchronize()
            ts.append((time.perf_counter() - t0) / reps)
        out.append(min(ts[1:]))
    return out


def grid_of(groups: int, max_per_dim: int) -> tuple:
    """A 2-D grid of exactly ``groups`` workgroups or a few more when ``groups`` passes the
    per-dimension limit (the probes cover whole rows: ``x * y`` invocation blocks)."""
    if groups <= max_per_dim:
        return (groups, 1, 1)
    y = -(-groups // max_per_dim)
    return (-(-groups // y), y, 1)
