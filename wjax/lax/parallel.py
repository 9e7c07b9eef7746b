"""``lax.psum`` and the other collectives over named axes (``vmap(f, axis_name=...)``), on
pytrees as in JAX.  The primitives and how ``vmap`` rewrites them:
``wjax/_src/prims/collective.py``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._src.core import dtypes, ops, tree_util
from .._src.core.ir import raise_to_shaped
from .._src.core.tracing import bound_axis_size
from .._src.prims.collective import (all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p,
                                     ppermute_p, psum_p)
from .._src.prims.shard_map import pvary_p

__all__ = ["all_gather", "all_to_all", "axis_index", "axis_size", "pcast", "pmax", "pmean",
           "pmin", "ppermute", "pshuffle", "psum", "psum_scatter", "pswapaxes", "pvary"]


def _names(axis_name) -> tuple:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for n in names:
        bound_axis_size(n)          # NameError for an unbound name
    return names


def _one_name(axis_name, what: str):
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"{what} over several named axes {names}: wjax supports one")
    return names


def _no_groups(axis_index_groups, what: str):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{what}: axis_index_groups is not supported under vmap")


def _size(names) -> int:
    n = 1
    for a in names:
        n *= bound_axis_size(a)
    return n


def axis_size(axis_name) -> int:
    """The number of examples along the bound axis (or axes) ``axis_name``."""
    return _size(_names(axis_name))


def axis_index(axis_name):
    """This example's position along the bound axis ``axis_name`` (int32)."""
    return axis_index_p.bind(axes=_one_name(axis_name, "axis_index"))


def _reducer(prim, what: str):
    def reduce(x, axis_name, *, axis_index_groups=None):
        _no_groups(axis_index_groups, what)
        names = _names(axis_name)

        def one(leaf):
            leaf = ops._as_operand(leaf)
            if what == "psum" and np.dtype(raise_to_shaped(leaf).dtype) == np.bool_:
                leaf = ops.convert_element_type(leaf, dtypes.canonicalize_dtype(np.int64))
            return prim.bind(leaf, axes=names)
        return tree_util.tree_map(one, x)
    reduce.__name__ = reduce.__qualname__ = what
    reduce.__doc__ = (f"``{what}`` of ``x`` (a pytree) over the examples of the named axis "
                      f"(or axes) ``axis_name``.")
    return reduce


psum = _reducer(psum_p, "psum")
pmax = _reducer(pmax_p, "pmax")
pmin = _reducer(pmin_p, "pmin")


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of ``x`` (a pytree) over the examples of the named axis ``axis_name``."""
    n = _size(_names(axis_name))
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    return tree_util.tree_map(lambda t: ops.div(_floating(t), np.float32(n)), total)


def _floating(t):
    if dtypes.is_float(raise_to_shaped(t).dtype):
        return t
    return ops.convert_element_type(t, dtypes.canonicalize_dtype(np.float64))


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
    """Every example's ``x`` stacked along a new axis ``axis`` (concatenated when ``tiled``)."""
    _no_groups(axis_index_groups, "all_gather")
    names = _one_name(axis_name, "all_gather")
    n = _size(names)

    def one(leaf):
        leaf = ops._as_operand(leaf)
        nd = raise_to_shaped(leaf).ndim
        ax = _axis(axis, nd + (0 if tiled else 1), "all_gather")
        return all_gather_p.bind(leaf, axes=names, axis_size=n, axis=ax, tiled=bool(tiled))
    return tree_util.tree_map(one, x)


def _axis(a: int, nd: int, what: str) -> int:
    if not -nd <= a < max(nd, 1):
        raise ValueError(f"{what}: axis {a} is out of bounds for rank {nd}")
    return int(a) % max(nd, 1)


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
    """Splits ``x`` along ``split_axis`` into one piece per example, sends piece ``i`` to
    example ``i``, and stacks (``tiled``: concatenates) the received pieces along
    ``concat_axis``."""
    _no_groups(axis_index_groups, "all_to_all")
    names = _one_name(axis_name, "all_to_all")
    n = _size(names)

    def one(leaf):
        leaf = ops._as_operand(leaf)
        nd = raise_to_shaped(leaf).ndim
        s = _axis(split_axis, nd, "all_to_all")
        c = _axis(concat_axis, nd, "all_to_all")
        return all_to_all_p.bind(leaf, axes=names, axis_size=n, split_axis=s, concat_axis=c,
                                 tiled=bool(tiled))
    return tree_util.tree_map(one, x)


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
    """Swaps the named axis with the positional ``axis`` (``all_to_all(x, name, axis, axis)``)."""
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


def ppermute(x, axis_name, perm):
    """Example ``dst`` receives example ``src``'s ``x`` for each ``(src, dst)`` pair."""
    names = _one_name(axis_name, "ppermute")
    perm = tuple((int(s), int(d)) for s, d in perm)
    n = _size(names)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts) or any(
            not 0 <= i < n for i in srcs + dsts):
        raise ValueError(f"ppermute sources and destinations must be unique positions of the "
                         f"axis (size {n}), got perm={perm}")
    return tree_util.tree_map(
        lambda leaf: ppermute_p.bind(ops._as_operand(leaf), axes=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
    """Example ``i`` receives example ``perm[i]``'s ``x``."""
    return ppermute(x, axis_name, [(int(s), d) for d, s in enumerate(perm)])


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False):
    """``psum`` followed by each example keeping its own piece along ``scatter_dimension``."""
    _no_groups(axis_index_groups, "psum_scatter")
    names = _one_name(axis_name, "psum_scatter")
    n = _size(names)

    def one(leaf: Any):
        total = psum(leaf, names)
        shape = raise_to_shaped(total).shape
        d = _axis(scatter_dimension, len(shape), "psum_scatter")
        if shape[d] % n if tiled else shape[d] != n:
            raise ValueError(f"psum_scatter: dimension {d} of shape {shape} must "
                             f"{'be divisible by' if tiled else 'equal'} the axis size {n}")
        k = shape[d] // n
        i = axis_index_p.bind(axes=names)
        piece = ops.dynamic_slice_in_dim(total, ops.mul(i, np.int32(k)), k, d,
                                         allow_negative_indices=False)
        return piece if tiled else ops.squeeze(piece, (d,))
    return tree_util.tree_map(one, x)


def pcast(x, axis_name, *, to: str):
    """``to='varying'``: marks ``x`` (a pytree) as varying over the named axes (a no-op on
    values; inside ``shard_map`` JAX's type checks use it)."""
    if to != "varying":
        raise NotImplementedError(f"pcast to={to!r}: wjax has to='varying'")
    names = _names(axis_name)
    return tree_util.tree_map(lambda v: pvary_p.bind(ops._as_operand(v), axes=names), x)


def pvary(x, axis_name):
    return pcast(x, axis_name, to="varying")
