"""Small API helpers: ShapeDtypeStruct and eval_shape."""
from __future__ import annotations

import numpy as np

from . import dtypes, tree_util


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (``jax.ShapeDtypeStruct``)."""

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


def eval_shape(fun, *args, **kwargs):
    """The output shapes/dtypes of ``fun`` at these arguments, traced without running."""
    from .staging import make_jaxpr
    _, shapes = make_jaxpr(lambda *a: fun(*a, **kwargs), return_shape=True)(*args)
    return shapes
