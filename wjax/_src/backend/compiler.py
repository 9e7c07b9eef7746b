"""The compile step's entry point.  Every program wjax runs is compiled through
``backend_compile_and_load(backend, build)``, looked up on this module when a compile
happens, so a library that wraps it -- chex's ``restrict_backends``, which imports it as
``jax._src.compiler`` -- sees each compile and may refuse it."""
from __future__ import annotations

import time
from typing import Any, Callable

from ..core import monitoring



class Backend:
    """The backend a program is compiled for (``platform`` as ``jax.default_backend()``)."""
    platform = "webgpu"

    def __repr__(self):
        return f"Backend({self.platform})"


BACKEND = Backend()


def backend_compile_and_load(backend: Backend, build: Callable[[], Any], *args, **kwargs):
    """Compiles (``build()``) a program for ``backend``, reporting its duration to
    ``jax.monitoring`` listeners as ``/jax/core/compile/backend_compile_duration``."""
    t0 = time.perf_counter()
    out = build()
    monitoring.record_event_duration_secs("/jax/core/compile/backend_compile_duration",
                                          time.perf_counter() - t0)
    return out
