"""``jax._src.traceback_util``: JAX hides its own frames from tracebacks; libraries register
theirs to be hidden too.  wjax does not filter tracebacks, so registering is recorded only."""
from __future__ import annotations

import functools
import types
from typing import Callable

_exclusions: list[str] = []


def register_exclusion(path: str) -> None:
    """Marks frames from files under ``path`` as library internals."""
    _exclusions.append(path)


def include_filename(filename: str) -> bool:
    return not any(filename.startswith(p) for p in _exclusions)


def include_frame(f: types.FrameType) -> bool:
    return include_filename(f.f_code.co_filename)


def api_boundary(fun: Callable | None = None, **kwargs) -> Callable:
    """Marks a public entry point (a no-op: tracebacks are shown whole)."""
    if fun is None:
        return functools.partial(api_boundary, **kwargs)
    return fun
