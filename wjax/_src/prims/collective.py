"""Collectives over named axes: ``psum``, ``pmax``, ``pmin``, ``all_gather``, ``all_to_all``,
``ppermute`` and ``axis_index``.

wjax runs on one device, so a named axis is a ``vmap`` axis (``vmap(f, axis_name='i')``).
A collective is recorded in the per-example jaxpr like any primitive; the ``vmap`` rewrite
whose axis it names (``transforms/vmap.py``: ``collective`` primitives) calls its batch rule,
which turns it into an ordinary array operation over the batch axis -- a reduction, a
transpose, a gather of slices, an iota -- so no collective ever reaches the backend.  At a
rewrite of another axis the collective is batched like an elementwise op and stays.

    psum, pmax, pmin  operands: x   params: axes (names)      result: x's aval
    all_gather        operands: x   params: axes, axis_size, axis, tiled
    all_to_all        operands: x   params: axes, axis_size, split_axis, concat_axis, tiled
    ppermute          operands: x   params: axes, perm ((source, destination) pairs)
    axis_index        no operands   params: axes (one name)   result: int32 scalar

Differentiation follows JAX: ``psum`` transposes to ``psum`` (so ``vmap(grad(f))`` of a
``psum`` gives JAX's per-example gradients), ``all_gather`` to a sum of the cotangents'
slices, ``all_to_all`` to the swapped ``all_to_all``, ``ppermute`` to the inverse
permutation; ``pmax``/``pmin`` have no derivative (as in JAX).
"""
from __future__ import annotations

import numpy as np

from ..core import ops
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import ad
from ..transforms.batching import bdim_at_front, move_batch_axis
from ..transforms.vmap import current_axis


def _collective(name: str) -> Primitive:
    p = Primitive(name)
    p.collective = True
    return p


def _here(axes):
    """The current vmap axis when it is one of ``axes``, else None."""
    ax = current_axis()
    return ax if ax is not None and ax.name is not None and ax.name in axes else None


# --------------------------------------------------------------------------- reductions

psum_p = _collective("psum")
pmax_p = _collective("pmax")
pmin_p = _collective("pmin")


def _reduction_rules(prim, reduce, unbatched):
    prim.def_abstract_eval(lambda x, *, axes: x.strip_weak())
    prim.def_reference(lambda x, *, axes: x)     # over one example: the value itself

    def batch(args, dims, *, axes):
        (x,), (d,) = args, dims
        ax = _here(axes)
        if ax is None:
            return prim.bind(x, axes=axes), d
        y = unbatched(x, ax.size) if d is None else reduce(x, (d,))
        rest = tuple(a for a in axes if a != ax.name)
        return (prim.bind(y, axes=rest) if rest else y), None
    prim.batch = batch


def _times(x, n):
    return ops.mul(x, np.asarray(n, np.dtype(ops._aval(x).dtype)))


_reduction_rules(psum_p, ops.reduce_sum, _times)
_reduction_rules(pmax_p, ops.reduce_max, lambda x, n: x)
_reduction_rules(pmin_p, ops.reduce_min, lambda x, n: x)
ad.deflinear(psum_p, lambda ct, x, *, axes: [psum_p.bind(ct, axes=axes)])


# --------------------------------------------------------------------------- axis_index

axis_index_p = _collective("axis_index")
axis_index_p.def_abstract_eval(lambda *, axes: ShapedArray((), np.int32))


def _axis_index_batch(args, dims, *, axes):
    ax = _here(axes)
    return ops.iota(np.int32, ax.size), 0


axis_index_p.batch = _axis_index_batch
ad.defjvp_zero(axis_index_p)


# --------------------------------------------------------------------------- all_gather

all_gather_p = _collective("all_gather")


def _gather_shape(shape, n, axis, tiled):
    s = list(shape)
    if tiled:
        s[axis] *= n
    else:
        s.insert(axis, n)
    return tuple(s)


def _all_gather_abstract(x, *, axes, axis_size, axis, tiled):
    return ShapedArray(_gather_shape(x.shape, axis_size, axis, tiled), x.dtype)


def _all_gather_batch(args, dims, *, axes, axis_size, axis, tiled):
    (x,), (d,) = args, dims
    ax = _here(axes)
    if ax is None:      # another axis: gather every example's slice, the batch axis first
        x = bdim_at_front(x, d, axis_size)
        return all_gather_p.bind(x, axes=axes, axis_size=axis_size, axis=axis + 1,
                                 tiled=tiled), 0
    y = move_batch_axis(x, d, axis, ax.size)         # [.., n (at axis), ..]
    if tiled:
        s = list(ops._aval(y).shape)
        s[axis:axis + 2] = [s[axis] * s[axis + 1]]
        y = ops.reshape(y, tuple(s))
    return y, None


def _all_gather_transpose(ct, x, *, axes, axis_size, axis, tiled):
    # example i's operand went to slice i of every example's result: its cotangent is the
    # sum over examples of their cotangents' slice i
    total = psum_p.bind(ad.instantiate(ct), axes=axes)
    i = axis_index_p.bind(axes=axes)
    k = x.aval.shape[axis] if tiled else 1
    piece = ops.dynamic_slice_in_dim(total, ops.mul(i, np.int32(k)), k, axis,
                                     allow_negative_indices=False)
    return [piece if tiled else ops.reshape(piece, x.aval.shape)]


all_gather_p.def_abstract_eval(_all_gather_abstract)
all_gather_p.batch = _all_gather_batch
ad.deflinear(all_gather_p, _all_gather_transpose)


# --------------------------------------------------------------------------- all_to_all

all_to_all_p = _collective("all_to_all")


def _to_all_shape(shape, n, split_axis, concat_axis, tiled):
    s = list(shape)
    if tiled:
        s[split_axis] //= n
        s[concat_axis] *= n
    else:
        del s[split_axis]
        s.insert(concat_axis, n)
    return tuple(s)


def _all_to_all_abstract(x, *, axes, axis_size, split_axis, concat_axis, tiled):
    n = axis_size
    if (x.shape[split_axis] % n) if tiled else (x.shape[split_axis] != n):
        raise ValueError(f"all_to_all: the split axis {split_axis} of {x.str_short()} must "
                         f"{'be divisible by' if tiled else 'equal'} the axis size {n}")
    return ShapedArray(_to_all_shape(x.shape, n, split_axis, concat_axis, tiled), x.dtype)


def _moveaxis(x, src, dst):
    nd = ops._aval(x).ndim
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return x if src == dst else ops.transpose(x, tuple(perm))


def _all_to_all_batch(args, dims, *, axes, axis_size, split_axis, concat_axis, tiled):
    (x,), (d,) = args, dims
    ax = _here(axes)
    n = axis_size
    params = dict(axes=axes, axis_size=n, tiled=tiled)
    if ax is None:
        x = bdim_at_front(x, d, n)
        return all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                                 **params), 0
    x = bdim_at_front(x, d, n)                       # X[j, ...]: example j's operand
    shape = list(ops._aval(x).shape)
    if tiled:   # split the split axis into (n pieces, k each): piece i goes to example i
        shape[1 + split_axis:2 + split_axis] = [n, shape[1 + split_axis] // n]
        x = ops.reshape(x, tuple(shape))
    y = _moveaxis(x, 1 + split_axis, 0)               # Y[i, j, ...] = piece i of example j
    if not tiled:
        return _moveaxis(y, 1, 1 + concat_axis), 0
    # rest axes of Y after (i, j): the example's axes, the split one now of size k
    y = _moveaxis(y, 1, 1 + concat_axis)              # j just before the concat axis
    s = list(ops._aval(y).shape)
    c = 1 + concat_axis
    s[c:c + 2] = [s[c] * s[c + 1]]
    return ops.reshape(y, tuple(s)), 0


all_to_all_p.def_abstract_eval(_all_to_all_abstract)
all_to_all_p.batch = _all_to_all_batch
ad.deflinear(all_to_all_p, lambda ct, x, *, axes, axis_size, split_axis, concat_axis, tiled: [
    all_to_all_p.bind(ad.instantiate(ct), axes=axes, axis_size=axis_size,
                      split_axis=concat_axis, concat_axis=split_axis, tiled=tiled)])


# --------------------------------------------------------------------------- ppermute

ppermute_p = _collective("ppermute")
ppermute_p.def_abstract_eval(lambda x, *, axes, perm: x.strip_weak())


def _ppermute_batch(args, dims, *, axes, perm):
    (x,), (d,) = args, dims
    ax = _here(axes)
    if ax is None:
        return ppermute_p.bind(x, axes=axes, perm=perm), d
    n = ax.size
    if len(perm) != n:
        raise AssertionError(f"ppermute under vmap: the permutation {perm} must name every one "
                             f"of the axis' {n} positions")
    src_of = {dst: src for src, dst in perm}
    x = bdim_at_front(x, d, n)
    rows = [ops.slice_in_dim(x, src_of[i], src_of[i] + 1) for i in range(n)]
    return ops.concatenate(rows, 0), 0


ppermute_p.batch = _ppermute_batch
ad.deflinear(ppermute_p, lambda ct, x, *, axes, perm: [
    ppermute_p.bind(ad.instantiate(ct), axes=axes, perm=tuple((d, s) for s, d in perm))])
