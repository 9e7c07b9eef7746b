"""``jax.Ref`` / ``jax.new_ref``: a mutable box holding an array, read with ``ref[...]`` and
written with ``ref[...] = value`` (or ``ref[idx] = value``).

Inside traced code a ref holds a tracer and its reads and writes become ordinary array
operations (``wjax/_src/core/refs.py``: the trace-time discharge).  A ref can be created inside
``jit``, ``grad``, ``vmap`` and loop bodies, passed into ``jit`` (its new value is visible after
the call) and written inside ``scan``/``fori_loop``/``while_loop`` bodies (threaded as extra
carries).  Writing a ref from a nested ``grad``/``vmap``/``cond`` that it was not created in
raises ``NotImplementedError``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._src.core.ir import ShapedArray, abstractify
from ._src.core import refs as _refs
from . import lax
from .numpy import asarray, zeros

__all__ = ["AbstractRef", "Ref", "Slice", "ds", "empty_ref", "free_ref", "freeze", "new_ref"]

class Slice:
    """A slice of static ``size`` at a (possibly traced) ``start``, every ``stride``-th element:
    ``jax.ds(start, size)`` (JAX's ``Slice``).  Refs accept it as an index."""

    def __init__(self, start, size: int, stride: int = 1):
        if int(size) < 0:
            raise ValueError(f"Slice size must be non-negative, got {size}")
        if int(stride) < 1:
            raise ValueError(f"Slice stride must be >= 1, got {stride}")
        self.start, self.size, self.stride = start, int(size), int(stride)

    def __repr__(self):
        return f"Slice(start={self.start}, size={self.size}, stride={self.stride})"

    def __eq__(self, other):
        return isinstance(other, Slice) and (self.start, self.size, self.stride) == \
            (other.start, other.size, other.stride)

    def __hash__(self):
        return hash((Slice, self.size, self.stride))


def ds(start, size: int | None = None, stride: int | None = None):
    """``jax.ds``: a :class:`Slice` of ``size`` elements from ``start`` (``ds(n)`` is
    ``ds(0, n)``)."""
    if size is None:
        if not isinstance(start, int):
            raise ValueError("Non-static `dslice`")
        return Slice(0, start, 1 if stride is None else stride)
    return Slice(start, size, 1 if stride is None else stride)


def _index_with_slices(value, idx):
    """Reads ``value[idx]`` where ``idx`` may hold :class:`Slice` entries."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    if not any(isinstance(i, Slice) for i in idx):
        return value[idx]
    out = value
    for axis, i in reversed(list(enumerate(idx))):
        if isinstance(i, Slice):
            span = (i.size - 1) * i.stride + 1 if i.size else 0
            out = lax.dynamic_slice_in_dim(out, i.start, span, axis)
            if i.stride > 1:
                out = lax.slice_in_dim(out, 0, span, i.stride, axis)
    rest = tuple(slice(None) if isinstance(i, Slice) else i for i in idx)
    return out[rest]


class AbstractRef:
    """The abstract value of a ref: the aval of the array it holds."""

    def __init__(self, inner_aval: ShapedArray):
        self.inner_aval = inner_aval

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)

    def __repr__(self):
        a = self.inner_aval
        return f"Ref{{{np.dtype(a.dtype).name}[{','.join(map(str, a.shape))}]}}"

    def __eq__(self, other):
        return isinstance(other, AbstractRef) and other.inner_aval == self.inner_aval

    def __hash__(self):
        return hash(("ref", self.inner_aval))


class Ref(_refs.RefCell):
    """A mutable reference to an array."""

    def __init__(self, value: Any):
        if isinstance(value, Ref):
            raise TypeError("new_ref: the initial value must be an array, not a Ref")
        self._bind_here(asarray(value))

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(abstractify(self._value))

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)

    def __getitem__(self, idx):
        if self._value is None:
            raise ValueError("reading a ref released by free_ref")
        return self._value if idx is Ellipsis else _index_with_slices(self._value, idx)

    def __setitem__(self, idx, value):
        if self._value is None:
            raise ValueError("writing a ref released by free_ref")
        if isinstance(value, Ref):
            raise TypeError("a Ref cannot be stored in a Ref: read it with ref[...]")
        if idx is Ellipsis:
            new = asarray(value, dtype=self._value.dtype)
            if new.shape != self._value.shape:
                raise ValueError(f"ref of shape {self._value.shape} cannot take a value of "
                                 f"shape {new.shape}")
        elif any(isinstance(i, Slice) for i in (idx if isinstance(idx, tuple) else (idx,))):
            new = _set_slices(self._value, idx, value)
        else:
            new = self._value.at[idx].set(value)
        _refs.write(self, new)

    def get(self):
        return self._value

    def set(self, value) -> None:
        self[...] = value

    def __repr__(self):             # JAX's: the array's repr, named Ref
        r = repr(self._value)
        return "Ref" + r[len("Array"):] if r.startswith("Array(") else f"Ref({r})"

    def unsafe_buffer_pointer(self) -> int:
        """The address-like identity of the device buffer holding the ref's value."""
        return self._value.unsafe_buffer_pointer()


def new_ref(init_val: Any) -> Ref:
    """A new ref holding ``init_val``."""
    return Ref(init_val)


def empty_ref(ty, memory_space=None) -> Ref:
    """A new ref of the type ``ty`` (anything with ``shape`` and ``dtype``); its contents are
    unspecified until written (wjax fills it with zeros)."""
    return Ref(zeros(tuple(ty.shape), ty.dtype))


def free_ref(ref: Ref) -> None:
    """Releases ``ref``'s array; reading it afterwards is an error."""
    if not isinstance(ref, Ref):
        raise TypeError(f"free_ref expects a Ref, got {type(ref).__name__}")
    _refs.write(ref, None)


def freeze(ref: Ref):
    """The array a ref holds."""
    return ref[...]


def _set_slices(value, idx, update):
    """``value`` with ``value[idx] = update``, ``idx`` holding :class:`Slice` entries (unit
    strides; other entries full slices)."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    starts = []
    for axis in range(value.ndim):
        i = idx[axis] if axis < len(idx) else slice(None)
        if isinstance(i, Slice):
            if i.stride != 1:
                raise NotImplementedError("ref writes through a strided ds() slice")
            starts.append(i.start)
        elif i == slice(None):
            starts.append(0)
        else:
            raise NotImplementedError("ref writes mixing ds() slices with other indices")
    shape = tuple(i.size if isinstance(i, Slice) else value.shape[a]
                  for a, i in enumerate(idx + (slice(None),) * (value.ndim - len(idx))))
    upd = asarray(update, dtype=value.dtype)
    upd = upd if upd.shape == shape else lax.broadcast_in_dim(
        upd, shape, tuple(range(len(shape) - upd.ndim, len(shape))))
    return lax.dynamic_update_slice(value, upd, starts)
