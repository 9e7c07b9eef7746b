"""``jax.profiler`` for wjax: a trace of every kernel the device runs.

    with wjax.profiler.trace("/tmp/trace"):
        step(params, batch).block_until_ready()

writes ``/tmp/trace/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz`` -- a
Chrome / Perfetto trace (open it at https://ui.perfetto.dev or chrome://tracing): one event
per kernel launch on the device's timeline, named by the jaxpr equations the kernel computes
(``fused(mul,exp,sub)``, ``reduce_sum(sub,mul)``, ``dot_general(add,tanh)``) and carrying its
estimated FLOPs and bytes, the program (jitted function) it belongs to, its grid, and its
achieved GB/s and GFLOP/s; host events (``TraceAnnotation``s, readbacks, uploads, pipeline
compiles) on a second timeline -- and ``summary.txt`` next to it: the kernels by total time,
with achieved bandwidth and FLOP rate against the adapter's peak measured when the trace
stops.  Kernel times are GPU timestamps where the adapter has ``timestamp-query`` (each kernel
then runs in a compute pass of its own), else host timings of each kernel run alone
(``WJAX_PROFILE_TIMER=host`` forces those).  ``WJAX_PROFILE_PEAK=0`` skips measuring the peak.

``start_trace``/``stop_trace``, ``trace``, ``TraceAnnotation``, ``StepTraceAnnotation`` and
``annotate_function`` take JAX's arguments.  ``last_trace_dir()`` and ``last_summary()`` (wjax
additions) give the directory and the summary text of the last trace.
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import gzip
import json
import logging
import os
import socket
import threading
import time
from typing import Any, Callable

from ._src.backend import profiler as _prof
from ._src.backend import runtime
from ._src.core.config import settings

logger = logging.getLogger("wjax")

__all__ = ["start_trace", "stop_trace", "trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "ProfileOptions", "last_trace_dir", "last_summary",
           "device_memory_profile", "save_device_memory_profile"]


class ProfileOptions:
    """Accepted for JAX compatibility (``jax.profiler.ProfileOptions``); wjax's trace has
    no options of this kind."""

    def __init__(self, **kwargs: Any):
        self.__dict__.update(kwargs)


class _State:
    def __init__(self):
        self.lock = threading.Lock()
        self.session: _prof.Session | None = None
        self.log_dir: str | None = None
        self.perfetto = False
        self.last_dir: str | None = None
        self.last_summary: str | None = None


_state = _State()


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
    """Starts recording every kernel launch (and host annotations) until ``stop_trace``.
    Only one trace runs at a time (a second ``start_trace`` is a RuntimeError, as in JAX)."""
    with _state.lock:
        if _state.session is not None:
            raise RuntimeError("Profile has already been started. "
                               "Only one profile may be run at a time.")
        rt = runtime.get()
        with rt.lock:
            rt.flush()
            _state.session = _prof.Session(rt)
            rt.profile = _state.session
        _state.log_dir = str(log_dir)
        _state.perfetto = bool(create_perfetto_trace or create_perfetto_link)
        _state.link = bool(create_perfetto_link)


def stop_trace() -> None:
    """Stops the trace and writes it (see the module docstring for the files)."""
    with _state.lock:
        sess = _state.session
        if sess is None:
            raise RuntimeError("No profile started")
        rt = sess.rt
        try:
            kernels, host = sess.result()
        finally:
            with rt.lock:
                rt.profile = None
            _state.session = None
        timer = "GPU timestamp" if sess.timestamps else "host"
        peak = None
        if settings().profile_peak:
            peak = _prof.measure_peak(rt)
        name = rt.describe()
        run = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
        out_dir = os.path.join(_state.log_dir, "plugins", "profile", run)
        os.makedirs(out_dir, exist_ok=True)
        trace_obj = _prof.chrome_trace(kernels, host, name, timer)
        trace_obj["metadata"] = {"wjax_adapter": name, "timer": timer,
                                 "peak": peak or {}}
        host_name = socket.gethostname() or "localhost"
        with gzip.open(os.path.join(out_dir, f"{host_name}.trace.json.gz"), "wt") as f:
            json.dump(trace_obj, f)
        if _state.perfetto:
            perf = dict(trace_obj)
            perf.pop("metadata", None)
            path = os.path.join(out_dir, "perfetto_trace.json.gz")
            with gzip.open(path, "wt") as f:
                json.dump(perf, f)
            if _state.link:
                logger.warning("wjax does not serve the trace: open %s in "
                               "https://ui.perfetto.dev (Open trace file)", path)
        text = _prof.summary(kernels, host, name, timer, peak)
        with open(os.path.join(out_dir, "summary.txt"), "w") as f:
            f.write(text)
        _state.last_dir, _state.last_summary = out_dir, text
        logger.info("wjax profile written to %s", out_dir)


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False, profiler_options: ProfileOptions | None = None):
    """Traces the enclosed code (``start_trace`` ... ``stop_trace``)."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


def last_trace_dir() -> str | None:
    """The directory the last ``stop_trace`` wrote (wjax addition)."""
    return _state.last_dir


def last_summary() -> str | None:
    """The text summary of the last trace (wjax addition; also ``summary.txt``)."""
    return _state.last_summary


class TraceAnnotation:
    """``with TraceAnnotation("name", **args):`` -- an event on the host timeline of a
    running trace spanning the block (nothing when no trace runs)."""

    def __init__(self, name: str, **kwargs: Any):
        self.name, self.kwargs = name, kwargs
        self._t0 = None

    def __enter__(self):
        if _state.session is not None:
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        sess = _state.session
        if sess is not None and self._t0 is not None:
            sess.host_event(self.name, self._t0, time.perf_counter(), **self.kwargs)
        self._t0 = None
        return False


class StepTraceAnnotation(TraceAnnotation):
    """A training-step annotation (``step_num=`` names the step), as JAX's."""

    def __init__(self, name: str, **kwargs: Any):
        step = kwargs.get("step_num")
        super().__init__(f"{name} {step}" if step is not None else name, **kwargs)


def annotate_function(func: Callable | None = None, name: str | None = None,
                      **decorator_kwargs: Any):
    """Decorator: each call of ``func`` is a ``TraceAnnotation`` named ``name`` (default:
    the function's qualified name)."""
    if func is None:
        return functools.partial(annotate_function, name=name, **decorator_kwargs)
    label = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper


def device_memory_profile(backend: str | None = None) -> bytes:
    raise NotImplementedError("wjax has no pprof device memory profile; "
                              "wjax.devices()[0].memory_stats() gives the device's memory use")


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    device_memory_profile(backend)
