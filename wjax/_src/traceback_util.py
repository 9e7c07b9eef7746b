"""``jax._src.traceback_util``: tracebacks without the library's own frames
(``wjax/_src/core/traceback_util.py``); libraries register their files to be hidden too, and
mark their entry points with ``api_boundary``."""
from __future__ import annotations

import functools
from typing import Callable

from .core.traceback_util import (filter_traceback, filtered, include_filename,  # noqa: F401
                                  include_frame, register_exclusion)


def api_boundary(fun: Callable | None = None, **kwargs) -> Callable:
    """Marks a public entry point: exceptions leaving it lose the library frames."""
    if fun is None:
        return functools.partial(api_boundary, **kwargs)

    @functools.wraps(fun)
    def reraise_with_filtered_traceback(*args, **kw):
        _wjax_api_boundary = True  # noqa: F841 (read by core.traceback_util)
        try:
            return fun(*args, **kw)
        except Exception as e:
            filtered(e)
            raise
    return reraise_with_filtered_traceback
