"""Helpers for batching rules (vmap), used by the blocks in ``wjax/_src/prims/``.

A batching rule has the signature

    rule(args, dims, **params) -> (out, out_dim)          one result
    rule(args, dims, **params) -> (outs, out_dims)        multiple_results

where ``dims[i]`` is the batched axis of ``args[i]`` or ``None`` (``not_mapped``)
when that operand is the same for every example.  ``vmap_jaxpr`` calls a rule
only when at least one operand is batched; the rule binds primitives (recording
into the trace that ``vmap_jaxpr`` runs) and says where the batch axis of each
result is.  Families of primitives share factories: ``defbroadcasting`` for
elementwise ops, ``defreducer`` for reductions over an ``axes`` parameter.  The factories
also give the family its ``axis_map`` (the axes it keeps apart, ``row_split.py``): what a
batch rule knows about where the batch axis goes, said of every axis.

It imports no family of primitives (the prims files import it): the two primitives it
binds it finds by name in the registry.
"""
from __future__ import annotations

from ..core.ir import raise_to_shaped
from ..core.primitive import REGISTRY
from .row_split import elementwise_axes, kept_axes

not_mapped = None


def aval_of(x):
    return raise_to_shaped(x)


def axis_size(args, dims) -> int:
    """The size of the batch axis, read from the first batched operand."""
    for x, d in zip(args, dims):
        if d is not None:
            return aval_of(x).shape[d]
    raise ValueError("batching rule called with no batched operand")


def unbatched_shape(x, d) -> tuple:
    s = aval_of(x).shape
    return s if d is None else s[:d] + s[d + 1:]


def move_batch_axis(x, src, dst, size):
    """``x`` with its batch axis at ``dst``; an unbatched ``x`` (``src is None``) is broadcast."""
    broadcast_in_dim_p, transpose_p = REGISTRY["broadcast_in_dim"], REGISTRY["transpose"]
    a = aval_of(x)
    if src is None:
        shape = list(a.shape)
        shape.insert(dst, size)
        bd = tuple(i for i in range(len(shape)) if i != dst)
        return broadcast_in_dim_p.bind(
            x, shape=tuple(shape), broadcast_dimensions=bd, sharding=None
        )
    if src == dst:
        return x
    perm = [i for i in range(a.ndim) if i != src]
    perm.insert(dst, src)
    return transpose_p.bind(x, permutation=tuple(perm))


def bdim_at_front(x, d, size):
    return move_batch_axis(x, d, 0, size)


def shift_axes(axes, d):
    """Positions in the batched operand of the unbatched ``axes`` when the batch axis is ``d``."""
    return tuple(a + (a >= d) for a in axes)


def broadcast_batch(args, dims, size, out_dim=None):
    """Aligns operands for an elementwise primitive whose operands are either rank 0 or all of one
    shape: returns the operands (batch axis at ``out_dim``, rank-0 unbatched ones left as they
    are) and ``out_dim``."""
    broadcast_in_dim_p = REGISTRY["broadcast_in_dim"]
    ranks = [len(unbatched_shape(x, d)) for x, d in zip(args, dims)]
    r = max(ranks)
    if out_dim is None:
        out_dim = next((d for x, d, k in zip(args, dims, ranks) if d is not None and k == r), 0)
    full = None
    for x, d, k in zip(args, dims, ranks):
        if k == r:
            full = list(unbatched_shape(x, d))
            break
    full.insert(out_dim, size)
    out = []
    for x, d, k in zip(args, dims, ranks):
        if d is None and k == 0:
            out.append(x)                      # a scalar broadcasts inside the primitive
        elif k == r:
            out.append(move_batch_axis(x, d, out_dim, size))
        else:  # a batched scalar: [B] -> full shape
            out.append(
                broadcast_in_dim_p.bind(
                    x, shape=tuple(full), broadcast_dimensions=(out_dim,), sharding=None
                )
            )
    return out, out_dim


def defbroadcasting(prim):
    """Elementwise primitives (rank-0 operands broadcast): align batch axes, broadcast the rest."""
    def rule(args, dims, **params):
        size = axis_size(args, dims)
        xs, od = broadcast_batch(args, dims, size)
        return prim.bind(*xs, **params), od
    prim.batch = rule
    prim.axis_map = elementwise_axes
    return prim


def defvectorized(prim):
    """Unary primitives that act on each element: the batch axis stays where it is."""
    def rule(args, dims, **params):
        (x,), (d,) = args, dims
        out = prim.bind(x, **params)
        return out, ([d] * len(out) if prim.multiple_results else d)
    prim.batch = rule
    prim.axis_map = elementwise_axes
    return prim


def defreducer(prim, axes_param="axes"):
    """Reductions over an ``axes`` parameter: shift the axes past the batch axis."""
    def rule(args, dims, **params):
        (x,), (d,) = args, dims
        axes = tuple(params[axes_param])
        params = dict(params)
        params[axes_param] = shift_axes(axes, d)
        return prim.bind(x, **params), d - sum(1 for a in axes if a < d)
    prim.batch = rule
    prim.axis_map = lambda in_avals, out_avals, **params: [
        (0, a, 0, b) for a, b in kept_axes(in_avals[0].ndim, params[axes_param])]
    return prim


def defunbatched(prim):
    """Primitives without operands (iota, ...): nothing to batch; the result is shared."""
    def rule(args, dims, **params):
        out = prim.bind(*args, **params)
        return out, ([None] * len(out) if prim.multiple_results else None)
    prim.batch = rule
    return prim


def defaxis(prim, axis_param="axis", default=-1):
    """Primitives acting along one ``axis`` parameter (cumulative ops, top_k): shift it past the
    batch axis; every result keeps the batch axis where the operand had it."""
    def rule(args, dims, **params):
        (x,), (d,) = args, dims
        nd = aval_of(x).ndim - 1
        ax = params.get(axis_param, default) % max(nd, 1)
        params = dict(params)
        params[axis_param] = ax + (ax >= d)
        out = prim.bind(x, **params)
        return out, ([d] * len(out) if prim.multiple_results else d)

    def axis_map(in_avals, out_avals, **params):
        nd = in_avals[0].ndim
        ax = params.get(axis_param, default) % max(nd, 1)
        return [(0, d, j, d) for j in range(len(out_avals)) for d in range(nd) if d != ax]
    prim.batch = rule
    prim.axis_map = axis_map
    return prim


def deffront(prim, out_dims=0):
    """Primitives whose leading operand dimensions are batch-like (keys of random ops): every
    operand gets the batch axis first (unbatched ones broadcast); so does every result."""
    def rule(args, dims, **params):
        n = axis_size(args, dims)
        out = prim.bind(*[bdim_at_front(x, d, n) for x, d in zip(args, dims)], **params)
        return out, ([out_dims] * len(out) if prim.multiple_results else out_dims)
    prim.batch = rule
    return prim
