"""``jax.Ref`` / ``jax.new_ref``: a mutable box holding an array, read with ``ref[...]`` and
written with ``ref[...] = value`` (or ``ref[idx] = value``).

wjax supports refs outside traced code only: a ref passed into ``jit``, ``grad`` or ``vmap``
(or created while tracing) raises ``TypeError`` -- JAX discharges refs into the traced program
as state effects, which wjax's jaxprs do not model yet."""
from __future__ import annotations

from typing import Any

import numpy as np

from .core.ir import ShapedArray, abstractify
from .core.tracing import Tracer, current_builder
from .numpy import asarray

__all__ = ["AbstractRef", "Ref", "freeze", "new_ref"]

_TRACED = ("wjax's refs work outside traced code only (jit, grad, vmap, loops): pass and return "
           "arrays instead")


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


class Ref:
    """A mutable reference to an array."""

    def __init__(self, value: Any):
        if isinstance(value, Tracer) or current_builder() is not None:
            raise TypeError(_TRACED)
        self._value = asarray(value)

    @property
    def aval(self) -> AbstractRef:
        return AbstractRef(abstractify(self._value))

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: self._value.ndim)

    def __getitem__(self, idx):
        return self._value if idx is Ellipsis else self._value[idx]

    def __setitem__(self, idx, value):
        if isinstance(value, Tracer) or current_builder() is not None:
            raise TypeError(_TRACED)
        if idx is Ellipsis:
            new = asarray(value, dtype=self._value.dtype)
            if new.shape != self._value.shape:
                raise ValueError(f"ref of shape {self._value.shape} cannot take a value of "
                                 f"shape {new.shape}")
            self._value = new
        else:
            self._value = self._value.at[idx].set(value)

    def get(self):
        return self._value

    def set(self, value) -> None:
        self[...] = value

    def __repr__(self):
        return f"Ref({self._value!r})"


def new_ref(init_val: Any) -> Ref:
    """A new ref holding ``init_val``."""
    return Ref(init_val)


def freeze(ref: Ref):
    """The array a ref holds."""
    return ref[...]
