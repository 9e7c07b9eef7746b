"""``jax.experimental.sparse``: the ``BCOO`` sparse array (coordinate format) for the
unbatched case -- ``n_batch == 0`` and ``n_dense == 0``: ``data`` holds the ``nse`` stored
values, ``indices`` (``[nse, ndim]``) their coordinates.  As JAX, a padding entry has the
out-of-range index ``shape`` along every axis (``fromdense`` with a larger ``nse``), and
operations drop it; duplicate coordinates add up.

Operations are compositions of jax.numpy (scatter-add and gather), so jit, vmap and
autodiff (with respect to ``data``) apply.  Batched or dense dimensions raise
``NotImplementedError``."""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import numpy as jnp
from .._src.core.tree import register_pytree_node_class

__all__ = ["BCOO", "JAXSparse", "bcoo_fromdense", "bcoo_todense", "fromdense", "todense"]


def _unsupported(n_batch, n_dense):
    if n_batch or n_dense:
        raise NotImplementedError("wjax's BCOO supports n_batch=0 and n_dense=0 only, got "
                                  f"n_batch={n_batch}, n_dense={n_dense}")


class JAXSparse:
    """The base class of JAX's sparse array types."""


@register_pytree_node_class
class BCOO(JAXSparse):
    """A sparse array in coordinate format: ``BCOO((data, indices), shape=shape)``."""

    def __init__(self, args, *, shape, indices_sorted: bool = False,
                 unique_indices: bool = False):
        data, indices = args
        self.data = jnp.asarray(data)
        self.indices = jnp.asarray(indices)
        self.shape = tuple(operator.index(d) for d in shape)
        self.indices_sorted = indices_sorted
        self.unique_indices = unique_indices
        if self.indices.ndim != 2 or self.data.ndim != 1:
            _unsupported(max(self.indices.ndim - 2, 0), max(self.data.ndim - 1, 0))
        if self.indices.shape[-1] != len(self.shape):
            _unsupported(0, len(self.shape) - self.indices.shape[-1])
        if self.data.shape[0] != self.indices.shape[0]:
            raise ValueError(f"BCOO: data of shape {self.data.shape} and indices of shape "
                             f"{self.indices.shape} differ in the number of entries")

    # ---------------------------------------------------------------- attributes
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))
    nse = property(lambda self: self.indices.shape[0])
    n_batch = property(lambda self: 0)
    n_dense = property(lambda self: 0)
    n_sparse = property(lambda self: len(self.shape))
    T = property(lambda self: self.transpose())

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return (f"BCOO({np.dtype(self.dtype).name}{list(self.shape)}, "
                f"nse={self.nse})")

    def tree_flatten(self):
        return (self.data, self.indices), {"shape": self.shape,
                                           "indices_sorted": self.indices_sorted,
                                           "unique_indices": self.unique_indices}

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        obj.shape = aux["shape"]
        obj.indices_sorted = aux["indices_sorted"]
        obj.unique_indices = aux["unique_indices"]
        return obj

    # ---------------------------------------------------------------- constructors
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=jnp.int32, n_dense: int = 0,
                  n_batch: int = 0):
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense: int = 0, n_batch: int = 0):
        _unsupported(n_batch, n_dense)
        coo = mat.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1).astype(index_dtype or np.int32)
        return cls((jnp.asarray(coo.data), jnp.asarray(indices)), shape=coo.shape)

    # ---------------------------------------------------------------- conversions
    def todense(self):
        return bcoo_todense(self)

    def astype(self, dtype):
        return BCOO((self.data.astype(dtype), self.indices), shape=self.shape,
                    indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

    def transpose(self, axes=None):
        axes = tuple(range(self.ndim))[::-1] if axes is None else tuple(
            operator.index(a) % self.ndim for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"axes {axes} are not a permutation of {tuple(range(self.ndim))}")
        return BCOO((self.data, self.indices[:, np.asarray(axes, np.int32)]),
                    shape=tuple(self.shape[a] for a in axes))

    def sum(self, axis=None):
        """The sum over ``axis`` (all by default): a BCOO of the axes left (JAX's
        ``bcoo_reduce_sum``), a dense scalar where none is left."""
        axes = range(self.ndim) if axis is None else (
            [axis] if np.ndim(axis) == 0 else list(axis))
        axes = sorted({operator.index(a) % self.ndim for a in axes})
        keep = [d for d in range(self.ndim) if d not in axes]
        valid = self._valid()
        data = jnp.where(valid, self.data, 0)
        if not keep:
            return data.sum()
        shape = tuple(self.shape[d] for d in keep)
        # a padding entry keeps an out-of-range coordinate
        indices = jnp.where(valid[:, None], self.indices[:, np.asarray(keep, np.int32)],
                            jnp.asarray(shape, self.indices.dtype))
        return BCOO((data, indices), shape=shape)

    # ---------------------------------------------------------------- arithmetic
    def _valid(self):
        """Which entries are in range (padding entries are not)."""
        if not self.ndim:
            return jnp.ones(self.nse, bool)
        bound = jnp.asarray(self.shape, self.indices.dtype)
        return jnp.all((self.indices >= 0) & (self.indices < bound), axis=1)

    def _gather(self, dense):
        """``dense`` (broadcast to this shape) at each entry's coordinates."""
        dense = jnp.broadcast_to(dense, self.shape)
        idx = jnp.where(self._valid()[:, None], self.indices, 0)
        return dense[tuple(idx[:, d] for d in range(self.ndim))]

    def __neg__(self):
        return BCOO((-self.data, self.indices), shape=self.shape)

    def __mul__(self, other):
        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        if other.ndim == 0:
            return BCOO((self.data * other, self.indices), shape=self.shape)
        if np.broadcast_shapes(other.shape, self.shape) != self.shape:
            raise ValueError(f"cannot multiply a BCOO of shape {self.shape} by an array of "
                             f"shape {other.shape} (the result would not be sparse)")
        return BCOO((self.data * self._gather(other), self.indices), shape=self.shape)

    __rmul__ = __mul__
    multiply = __mul__

    def __truediv__(self, other):
        other = jnp.asarray(other)
        if other.ndim:
            return BCOO((self.data / self._gather(other), self.indices), shape=self.shape)
        return BCOO((self.data / other, self.indices), shape=self.shape)

    def __matmul__(self, other):
        if isinstance(other, JAXSparse):
            return NotImplemented
        other = jnp.asarray(other)
        if self.ndim != 2 or other.ndim not in (1, 2):
            raise NotImplementedError(f"BCOO @ array: shapes {self.shape} and {other.shape}"
                                      " (a sparse matrix times a vector or matrix only)")
        if other.shape[0] != self.shape[1]:
            raise TypeError(f"dot_general requires contracting dimensions to have the same "
                            f"shape, got ({self.shape[1]},) and ({other.shape[0]},).")
        dt = jnp.result_type(self.data, other)
        rows, cols = self.indices[:, 0], self.indices[:, 1]
        valid = self._valid()
        picked = other[jnp.where(valid, cols, 0)]
        weights = jnp.where(valid, self.data, 0).astype(dt)
        contrib = picked.astype(dt) * (weights if other.ndim == 1 else weights[:, None])
        out = jnp.zeros((self.shape[0],) + other.shape[1:], dt)
        return out.at[rows].add(contrib, mode="drop")

    def __rmatmul__(self, other):
        other = jnp.asarray(other)
        if other.ndim == 1:
            return self.T @ other
        return (self.T @ other.T).T

    def dot(self, other):
        return self @ other


def bcoo_todense(mat):
    """The dense array of a BCOO (padding entries dropped, duplicates added)."""
    out = jnp.zeros(mat.shape, mat.dtype)
    if not mat.ndim:
        return out + mat.data.sum()
    idx = tuple(mat.indices[:, d] for d in range(mat.ndim))
    return out.at[idx].add(mat.data, mode="drop")


def bcoo_fromdense(mat, *, nse=None, index_dtype=jnp.int32, n_dense: int = 0,
                   n_batch: int = 0):
    """The BCOO of the nonzero entries of ``mat`` (row-major order); ``nse`` (needed under
    tracing) pads with out-of-range entries or drops the entries past it."""
    _unsupported(n_batch, n_dense)
    mat = jnp.asarray(mat)
    if nse is None:
        nse = int(jnp.sum(mat != 0))
    nse = operator.index(nse)
    coords = jnp.nonzero(mat, size=nse, fill_value=mat.shape)
    indices = jnp.stack(coords, axis=1).astype(index_dtype) if mat.ndim else \
        jnp.zeros((nse, 0), index_dtype)
    data = mat[tuple(jnp.minimum(c, n - 1) for c, n in zip(coords, mat.shape))]
    if mat.ndim:
        valid = jnp.all(indices < jnp.asarray(mat.shape, index_dtype), axis=1)
        data = jnp.where(valid, data, 0)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def todense(arr):
    """A sparse array's dense array (other arrays pass through)."""
    return arr.todense() if isinstance(arr, JAXSparse) else arr


fromdense = bcoo_fromdense
