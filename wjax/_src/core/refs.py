"""Refs inside traced code: trace-time discharge.

A ref (``wjax/ref.py``'s ``Ref``, a :class:`RefCell`) holds its current value: an array
outside traced code, a tracer of the trace it was last written in inside.  Reading it reads that
value and writing it replaces the value functionally (``value.at[idx].set(v)``), so the traced
program never sees a ref at all: it threads the values, as JAX's discharge rewrite would make it.

What needs care is a ref written inside a *nested* trace (a loop body, a jitted call) that it
does not belong to.  The sites that can thread state (``jit``, ``scan``, ``while_loop``,
``fori_loop``) trace their body under :func:`tracking`, which records such refs (and restores
their values afterwards); when any were written, the site traces again with the refs' values as
extra carries/inputs (:func:`rebound`) and writes the results back (:func:`write`).  ``vmap``
tracks its body too: a ref class with ``merge_batched(refs, examples)`` (checkify's error
state) has each example's writes merged into one value; any other ref written from a vmapped
function raises JAX's error.  A write from a nested trace that cannot thread state
(``grad``, ...) raises ``NotImplementedError`` naming the case.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable

from .tracing import _state as _trace_state, current_builder

__all__ = ["RefCell", "holds_ref_value", "rebound", "tracking", "write"]

_cells: "weakref.WeakSet" = weakref.WeakSet()     # every live ref


class RefCell:
    """The state of a ref: ``_value`` and the trace it belongs to (``_home``, a builder or
    None outside traced code, at builder-stack depth ``_depth``)."""

    _value: Any
    _home: Any
    _depth: int

    def _bind_here(self, value) -> None:
        _cells.add(self)
        self._value = value
        self._home = current_builder()
        self._depth = len(_trace_state.builders)
        frames = _frames.stack
        if frames and frames[-1].depth < self._depth:
            frames[-1].local.add(id(self))


def holds_ref_value(values) -> bool:
    """Whether one of ``values`` is a live ref's current value: a trace that read a ref holds
    it as a constant, so that trace is not reusable once the ref is written."""
    held = {id(r._value) for r in list(_cells)}
    return any(id(v) in held for v in values)


class _Frame:
    def __init__(self, depth: int):
        self.depth = depth                       # builders below the traced body
        self.written: dict[int, tuple[RefCell, Any]] = {}   # id -> (ref, value before)
        self.local: set[int] = set()             # refs created inside the body


class _Frames(threading.local):
    def __init__(self):
        self.stack: list[_Frame] = []


_frames = _Frames()


def _where(what: str | None) -> str:
    return f" inside {what}" if what else " inside this trace"


def write(ref: RefCell, value, what: str | None = None) -> None:
    """``ref``'s value becomes ``value`` (checked against the trace it is written in)."""
    b = current_builder()
    if ref._home is b or (b is None and ref._home is None):
        ref._value = value
        return
    depth = len(_trace_state.builders)
    frames = _frames.stack
    if frames and frames[-1].depth == depth - 1 and ref._depth <= frames[-1].depth \
            and id(ref) not in frames[-1].local:
        f = frames[-1]
        if id(ref) not in f.written:
            f.written[id(ref)] = (ref, ref._value)
        ref._value = value
        return
    if ref._home is not None and not ref._home.alive:
        raise RuntimeError("writing a ref created inside a trace that has finished (a ref "
                           "created in a jitted function or loop body used after it)")
    name = getattr(b, "debug", None)
    name = getattr(name, "what", None)
    if name == "vmap":
        raise Exception(   # JAX's exception class and words
            "performing a set/swap operation with vmapped value on an unbatched array "
            f"reference of type Ref{{{_aval_text(ref._value)}}}. Move the "
            "array reference to be an argument to the vmapped function?")
    raise NotImplementedError(
        f"wjax: writing{_where(name)} a ref created outside it is not supported (wjax "
        "threads refs through jit arguments, scan, fori_loop and while_loop bodies only; "
        "under grad, vmap, cond/switch and other transformations, create the ref inside the "
        "transformed function or pass values instead)")


def _aval_text(value) -> str:
    """``float32[3]``: a ref's type as JAX names it (never weak)."""
    a = getattr(value, "aval", None)
    shape = ",".join(str(d) for d in getattr(value, "shape", ()))
    dtype = getattr(getattr(a, "dtype", None), "name", None) or str(getattr(value, "dtype", ""))
    return f"{dtype}[{shape}]"


def tracking(fn: Callable[[], Any]) -> tuple[Any, list[RefCell]]:
    """Runs ``fn`` (which traces a body one builder deeper) recording the outer refs the body
    writes; their values are restored afterwards.  Returns ``(fn's result, refs written)``."""
    f = _Frame(len(_trace_state.builders))
    _frames.stack.append(f)
    try:
        out = fn()
    finally:
        _frames.stack.pop()
        for ref, before in f.written.values():
            ref._value = before
    return out, [r for r, _ in f.written.values()]


@contextlib.contextmanager
def rebound(refs: list[RefCell], values):
    """Inside, ``refs`` belong to the current trace and hold ``values`` (a traced body's
    carries); afterwards they are back as they were."""
    saved = [(r._value, r._home, r._depth) for r in refs]
    for r, v in zip(refs, values):
        r._value, r._home, r._depth = v, current_builder(), len(_trace_state.builders)
    try:
        yield
    finally:
        for r, (v, h, d) in zip(refs, saved):
            r._value, r._home, r._depth = v, h, d
