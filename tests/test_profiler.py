"""wjax.profiler (jax.profiler's API): the trace file's structure and contents -- kernel
names, counts, FLOPs and bytes, programs, host annotations -- and the summary; never timings.
Against real JAX: the same API calls are accepted (and refused) the same way."""
from __future__ import annotations

import glob
import gzip
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

N = 1 << 12


def selu(x):
    return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)


@pytest.fixture(autouse=True)
def no_peak(monkeypatch):
    monkeypatch.setenv("WJAX_PROFILE_PEAK", "0")     # the peak benchmark is not under test


def load(d):
    files = glob.glob(os.path.join(d, "*.trace.json.gz"))
    assert len(files) == 1, files
    with gzip.open(files[0], "rt") as f:
        return json.load(f)


def kernels(tr):
    return [e for e in tr["traceEvents"] if e.get("cat") == "kernel"]


def run_traced(tmp_path, timer=None, monkeypatch=None):
    if timer is not None:
        monkeypatch.setenv("WJAX_PROFILE_TIMER", timer)
    f = wjax.jit(selu)
    x = jnp.asarray(np.linspace(-2, 2, N, dtype=np.float32))
    want = np.asarray(f(x))                       # compiled before the trace
    with wjax.profiler.trace(str(tmp_path)):
        with wjax.profiler.TraceAnnotation("three steps", step=3):
            for _ in range(3):
                y = f(x)
        total = float(jnp.sum(y))
    np.testing.assert_allclose(np.asarray(y), want)
    np.testing.assert_allclose(total, want.astype(np.float64).sum(), rtol=1e-5)
    return load(wjax.profiler.last_trace_dir())


@pytest.mark.parametrize("timer", ["default", "host"])
def test_trace_records_each_kernel(tmp_path, monkeypatch, timer):
    tr = run_traced(tmp_path, None if timer == "default" else timer, monkeypatch)
    ks = kernels(tr)
    selu_k = [k for k in ks if k["args"].get("program") == "selu"]
    assert len(selu_k) == 3                       # one fused kernel per call
    for k in selu_k:
        assert k["name"].startswith("fused(")
        assert {"exp", "select_n", "gt", "mul"} <= set(k["name"][6:-1].split(","))
        assert k["args"]["bytes"] == 2 * N * 4    # reads x, writes y
        assert k["args"]["flops"] >= 4 * N        # at least 4 arithmetic ops per element
        assert k["ph"] == "X" and k["pid"] == 1 and k["dur"] >= 0
    sums = [k for k in ks if k["name"].startswith("reduce_sum")]
    assert len(sums) >= 1 and sums[0]["args"]["program"] == "reduce_sum"
    assert sums[0]["args"]["flops"] == N
    # kernels in recording order on the device timeline
    assert [k["ts"] for k in ks] == sorted(k["ts"] for k in ks)
    host = [e for e in tr["traceEvents"] if e.get("cat") == "host"]
    ann = [e for e in host if e["name"] == "three steps"]
    assert len(ann) == 1 and ann[0]["args"] == {"step": 3} and ann[0]["pid"] == 2
    assert any(e["name"].startswith("readback") for e in host)     # float(...) waited
    names = {e["args"]["name"] for e in tr["traceEvents"] if e.get("ph") == "M"
             and e["name"] == "process_name"}
    assert any(("timestamp" if timer == "default" else "host") in n for n in names)
    summary = open(os.path.join(wjax.profiler.last_trace_dir(), "summary.txt")).read()
    assert summary == wjax.profiler.last_summary()
    row = next(line for line in summary.splitlines() if line.endswith(selu_k[0]["name"]))
    assert row.split()[2] == "3"                  # launches column


def test_start_stop_errors_and_annotations(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        wjax.profiler.stop_trace()
    wjax.profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already been started"):
        wjax.profiler.start_trace(str(tmp_path))

    @wjax.profiler.annotate_function
    def work(a):
        return (a * 2).block_until_ready()

    @wjax.profiler.annotate_function(name="named")
    def other(a):
        return a + 1
    with wjax.profiler.StepTraceAnnotation("train", step_num=7):
        work(jnp.ones(8))
        other(jnp.ones(8))
    wjax.profiler.stop_trace()
    with pytest.raises(RuntimeError, match="No profile started"):
        wjax.profiler.stop_trace()
    tr = load(wjax.profiler.last_trace_dir())
    host = {e["name"] for e in tr["traceEvents"] if e.get("cat") == "host"}
    assert {"train 7", "named"} <= host
    assert any(n.endswith("work") for n in host)
    # outside a trace the annotations cost nothing and record nothing
    with wjax.profiler.TraceAnnotation("idle"):
        work(jnp.ones(8))
    assert wjax.profiler.last_trace_dir() is not None


def test_same_errors_as_jax(tmp_path):
    rjax = pytest.importorskip("jax")
    for prof in (wjax.profiler, rjax.profiler):
        with pytest.raises(RuntimeError, match="No profile started"):
            prof.stop_trace()


def test_jax_profiler_through_the_import_hook(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x: jnp.tanh(x) * 2)
        x = jnp.ones(64)
        f(x)
        with jax.profiler.trace({str(tmp_path / 'tr')!r}):
            f(x).block_until_ready()
    """))
    env = dict(os.environ, WJAX_PROFILE_PEAK="0",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-m", "wjax", "run", str(script)], check=True, env=env,
                   timeout=300)
    (d,) = glob.glob(str(tmp_path / "tr" / "plugins" / "profile" / "*"))
    ks = kernels(load(d))
    assert [k["args"]["program"] for k in ks] == ["<lambda>"]
    assert set(ks[0]["name"][6:-1].split(",")) == {"tanh", "mul"}


def test_peak_probe_is_sized_to_the_adapter():
    """The peak probe's buffers and invocations come from the Target (``Target.threads``):
    hundreds of MB and 2^20 FMA invocations on a GPU profile, copied one vec4 an invocation
    and in a grid-stride loop (a fixed 16 MiB probe said 145 GB/s on an H100; the
    grid-stride copy alone 1.4 TB/s on an H200 where a*2+b ran at 3.1), 16 MiB in
    contiguous slices on CPU adapters, within the binding limit."""
    from wjax._src.backend import profiler as prof
    from wjax._src.backend.target import Target
    nb, copies, fma = prof.probe_size(Target.for_profile("nvidia"))
    assert nb >= 256 << 20 and fma >= 1 << 20
    assert copies == (prof._COPY_ONE, prof._COPY_STRIDED)
    nb, copies, fma = prof.probe_size(Target.for_profile("webgpu-default"))
    assert nb <= Target.for_profile("webgpu-default")["max-storage-buffer-binding-size"]
    nb, copies, fma = prof.probe_size(Target.for_profile("lavapipe"))
    assert nb == 16 << 20 and copies == (prof._COPY,) and fma == 4096


@pytest.mark.parametrize("timer", ["", "host"])
def test_peak_probe_times_as_the_profiler_does(monkeypatch, timer):
    """The probe's kernels are timed as the profiler times kernels: by GPU timestamps where
    the adapter has them (the probe's own copy of wall time per launch included the submit
    and the wait: on an H200 ~0.4 ms a call), else on the host; either way a positive rate
    of each kind, and the one timer asked for is used."""
    from wjax._src.backend import profiler as prof
    from wjax._src.backend import runtime
    rt = runtime.get()
    monkeypatch.setenv("WJAX_PROFILE_TIMER", timer)
    used = []
    for name in ("_gpu_times", "_host_times"):
        real = getattr(prof, name)
        monkeypatch.setattr(prof, name, lambda rt, runs, _r=real, _n=name: (
            used.append(_n), _r(rt, runs))[1])
    monkeypatch.setattr(rt, "_measured_peak", None, raising=False)
    peak = prof.measure_peak(rt)
    want = "_gpu_times" if ("timestamp-query" in rt.features and not timer) else "_host_times"
    assert prof.uses_timestamps(rt) == (want == "_gpu_times")
    assert used == [want]
    assert peak["gbps"] > 0 and peak["gflops"] > 0
    assert isinstance(peak["gbps"], float) and isinstance(peak["gflops"], float)
    rt._measured_peak = None


def test_peak_fma_kernel_does_the_work_it_counts():
    """``FMA_FLOPS`` is what an invocation of the FMA probe computes: FMA_CHAINS chains of
    FMA_STEPS steps ``a = a * a + d`` each (NumPy's recurrence, float64, against the kernel's
    results: each lane falls into an attracting cycle of period 2, 4, 1 or 1, so a step
    count wrong by 1-3 moves the first two lanes, a chain count any lane)."""
    from wjax._src.backend import profiler as prof
    from wjax._src.backend import runtime
    rt = runtime.get()
    out = rt.alloc(64 * 2 * 16)
    rt.dispatch(prof._FMA, [out], (2, 1, 1))
    got = np.frombuffer(rt.read(out, 128 * 16), np.float32).reshape(128, 4)
    d = np.array([-1.0, -1.3, 0.2, -0.5])
    t = np.arange(128, dtype=np.float64)[:, None]
    total = 0.0
    for c in range(prof.FMA_CHAINS):
        a = np.concatenate([np.float32(t * 1e-4 + c / 10), np.broadcast_to([0.1, 0.2, 0.3],
                                                                            (128, 3))], axis=1)
        for _ in range(prof.FMA_STEPS):
            a = a * a + d
        total = total + a
    np.testing.assert_allclose(got, total, rtol=1e-4, atol=1e-5)
    assert np.ptp(total[:, 1]) < 1e-9 and abs(total[0, 0]) < 1e-9   # converged; 1024 is even
    assert prof.FMA_FLOPS == prof.FMA_STEPS * prof.FMA_CHAINS * 8


def test_probe_grids_cover_every_workgroup():
    """``grid_of`` splits a workgroup count past the per-dimension limit into whole rows that
    cover it (a few more, never fewer: the last rows of a copy were left out before), and
    the one-vec4 copy probe run on such a grid copies the whole buffer."""
    from wjax._src.backend import profiler as prof
    from wjax._src.backend import runtime
    for groups in (1, 7, 65535, 65536, 100001, (1 << 18) + 5, 1 << 20):
        gx, gy, gz = prof.grid_of(groups, 65535)
        assert gz == 1 and gx <= 65535 and gy <= 65535
        assert groups <= gx * gy < groups + gy, (groups, gx, gy)
    rt = runtime.get()
    n_vec = 256 * 23                        # 23 workgroups on rows of at most 5
    src = np.arange(4 * n_vec, dtype=np.float32)
    x, y = rt.upload(src), rt.alloc(n_vec * 16)
    rt.zero(y)
    grid = prof.grid_of(23, 5)
    assert grid[1] > 1
    rt.dispatch(prof._COPY_ONE, [x, y], grid)
    got = np.frombuffer(rt.read(y, n_vec * 16), np.float32)
    np.testing.assert_array_equal(got, src)
