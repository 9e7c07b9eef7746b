"""Tracebacks without wjax's own frames, as JAX shows them.

An exception that leaves wjax through an API boundary -- ``bind`` (every operation, eager or
traced) and a jitted function's call -- has the frames of files under wjax's package (and of
paths libraries register, ``register_exclusion``) removed from its traceback, and JAX's note
added ("For simplicity, JAX has removed its internal frames ..."), once, at the outermost
boundary.  ``jax_traceback_filtering`` (or ``JAX_TRACEBACK_FILTERING``) ``off`` keeps whole
tracebacks; wjax treats the other modes as JAX's default, ``quiet_remove_frames``.
"""
from __future__ import annotations

import os
import traceback
import types

from .config import config, settings

_WJAX = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_exclusions: list[str] = [_WJAX + os.sep]
_NOTE = ("--------------------\nFor simplicity, JAX has removed its internal frames from the "
         "traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include "
         "these.")
_BOUNDARY = "_wjax_api_boundary"       # a local a boundary frame holds


def register_exclusion(path: str) -> None:
    """Frames from files under ``path`` are library internals too."""
    _exclusions.append(os.path.abspath(path))


def include_filename(filename: str) -> bool:
    f = os.path.abspath(filename)
    return not any(f.startswith(p) for p in _exclusions)


def include_frame(f: types.FrameType) -> bool:
    return include_filename(f.f_code.co_filename)


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    out = None
    for f, lineno in reversed(list(traceback.walk_tb(tb))):
        if include_frame(f):
            out = types.TracebackType(out, f, f.f_lasti, lineno)
    return out


def _mode() -> str:
    mode = config.jax_traceback_filtering or settings().traceback_filtering or "auto"
    return "off" if mode == "off" else "quiet_remove_frames"


def _under_boundary(e: BaseException) -> bool:
    """Whether a boundary further out will see ``e`` (only the outermost one filters)."""
    tb = e.__traceback__
    if tb is None:
        return False
    f = tb.tb_frame.f_back
    while f is not None:
        if _BOUNDARY in f.f_locals:
            return True
        f = f.f_back
    return False


def filtered(e: Exception) -> Exception:
    """``e`` with wjax's frames removed from its traceback and JAX's note, unless filtering
    is off or a boundary further out will do it.  Called in a boundary's ``except`` clause,
    which then re-raises with a bare ``raise`` (so its own frame is not added back)."""
    if _mode() == "off" or _under_boundary(e) or getattr(e, "_wjax_filtered", False):
        return e
    e.with_traceback(filter_traceback(e.__traceback__))
    try:
        e.add_note(_NOTE)
        e._wjax_filtered = True
    except (AttributeError, TypeError):
        pass
    return e
