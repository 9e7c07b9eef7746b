"""vmap as a jaxpr rewrite.

``vmap_jaxpr(jaxpr, in_dims, axis_size)`` takes a Jaxpr and the batched axis of
each input (``None`` for an input shared by all examples) and returns a Jaxpr
over the batched inputs and the batched axis of each output.  It walks the
equations like ``eval_jaxpr``: an equation whose operands are all unbatched is
copied as it is; otherwise the primitive's ``batch`` rule rewrites it (see
``wjax/_src/transforms/batching.py`` for the rule signature).  The constvars of the
jaxpr stay unbatched constvars of the result.

Named axes: ``vmap(f, axis_name='i')`` rewrites with ``AxisData('i', size)`` as the current
axis.  A *collective* primitive (``psum`` and friends, ``wjax/_src/prims/collective.py``) names the
axes it acts over in ``params['axes']``; its batch rule runs -- even on unbatched operands --
where the current axis is one of them, and becomes an ordinary array operation over the batch
axis.  Calls, loops and conds batched inside the rewrite inherit the current axis.

The API, ``wjax.vmap``, is ``wjax/_src/api/vmap.py``.
"""
from __future__ import annotations

import threading
from typing import Any, NamedTuple

import numpy as np

from ..core.ir import ClosedJaxpr, Jaxpr, Lit, ShapedArray, Var
from ..core.tracing import DebugInfo, Tracer, source_of, trace_flat
from . import batching

# --------------------------------------------------------------------------- named axes

class AxisData(NamedTuple):
    """The axis a rewrite inserts: its name (``vmap``'s ``axis_name``, or None) and size."""
    name: Any
    size: int


class _Axes(threading.local):
    def __init__(self):
        self.stack: list[AxisData] = []


_axes = _Axes()
INHERIT = object()      # vmap_jaxpr's default axis_name: the enclosing rewrite's, if any


def current_axis() -> AxisData | None:
    """The axis of the innermost rewrite under way (batch rules may ask for it)."""
    return _axes.stack[-1] if _axes.stack else None


def _binds_here(eqn, axis: AxisData) -> bool:
    """A collective equation acting over the current axis (its rule runs even unbatched)."""
    return (eqn.prim.collective and axis.name is not None
            and axis.name in eqn.params.get("axes", ()))


# --------------------------------------------------------------------------- the rewrite


def batched_aval(aval: ShapedArray, d, size: int) -> ShapedArray:
    if d is None:
        return aval
    shape = list(aval.shape)
    shape.insert(d, size)
    return aval.update(shape=tuple(shape))


def batch_eval(jaxpr: Jaxpr, consts, args, dims, axis_size: int):
    """Evaluates ``jaxpr`` on batched values (binding primitives into the current trace).

    Returns the outputs and the batched axis of each (``None``: shared by all examples)."""
    env: dict[int, Any] = {}

    def read(a):
        return (a.operand, None) if isinstance(a, Lit) else env[a.id]

    for v, c in zip(jaxpr.constvars, consts):
        env[v.id] = (c, None)
    for v, x, d in zip(jaxpr.invars, args, dims):
        env[v.id] = (x, d)
    axis = current_axis() or AxisData(None, axis_size)
    for eqn in jaxpr.eqns:
        vals, ds = [], []
        for a in eqn.invars:
            x, d = read(a)
            vals.append(x)
            ds.append(d)
        prim = eqn.prim
        with source_of(eqn):
            if all(d is None for d in ds) and not _binds_here(eqn, axis):
                out = prim.bind(*vals, **eqn.params)
                out_dims = [None] * len(eqn.outvars) if prim.multiple_results else None
            else:
                if prim.batch is None:
                    raise NotImplementedError(f"Batching rule for '{prim.name}' not implemented")
                out, out_dims = prim.batch(vals, ds, **eqn.params)
        if prim.multiple_results:
            for v, o, d in zip(eqn.outvars, out, out_dims):
                env[v.id] = (o, d)
        else:
            env[eqn.outvars[0].id] = (out, out_dims)
    res = [read(a) for a in jaxpr.outvars]
    return [r[0] for r in res], [r[1] for r in res]


def vmap_jaxpr(jaxpr: Jaxpr, in_dims, axis_size: int, out_dims=None, axis_name=INHERIT):
    """The batched version of ``jaxpr``: ``in_dims[i]`` is the axis of invar ``i`` that is
    inserted (of size ``axis_size``) or ``None``.  Returns ``(batched_jaxpr, out_dims)``;
    the constvars of ``jaxpr`` are the (unbatched) constvars of the result.  ``out_dims``
    (an int for all outputs, or one entry per output) forces where the outputs' batch axes
    go: unbatched outputs are then broadcast (``None`` entries leave an output as it comes).
    ``axis_name`` names the inserted axis; by default a rewrite nested in another (a call or
    loop batched by a rule) inherits the enclosing one's name."""
    if isinstance(jaxpr, ClosedJaxpr):
        raise TypeError("vmap_jaxpr takes a Jaxpr; use vmap_closed_jaxpr for a ClosedJaxpr")
    in_dims = list(in_dims)
    if len(in_dims) != len(jaxpr.invars):
        raise ValueError(f"vmap_jaxpr: {len(in_dims)} in_dims for {len(jaxpr.invars)} inputs")
    if axis_size is None:
        raise ValueError("vmap_jaxpr needs the axis_size of the batch axis it inserts")
    in_dims = [None if d is None else d % (v.aval.ndim + 1) for v, d in zip(jaxpr.invars, in_dims)]
    in_avals = [batched_aval(v.aval, d, axis_size) for v, d in zip(jaxpr.invars, in_dims)]
    const_avals = [v.aval for v in jaxpr.constvars]
    box = []

    def flat(*tracers):
        cs, xs = tracers[:len(const_avals)], tracers[len(const_avals):]
        outs, dims = batch_eval(jaxpr, cs, xs, in_dims, axis_size)
        if out_dims is not None:
            want = [out_dims] * len(outs) if isinstance(out_dims, int) else list(out_dims)
            outs = [o if w is None else batching.move_batch_axis(o, d, w, axis_size)
                    for o, d, w in zip(outs, dims, want)]
            dims = [d if w is None else w for d, w in zip(dims, want)]
        box.append(dims)
        return outs

    if axis_name is INHERIT:
        top = current_axis()
        axis_name = top.name if top is not None and top.size == axis_size else None
    _axes.stack.append(AxisData(axis_name, axis_size))
    try:
        closed = trace_flat(flat, const_avals + in_avals, DebugInfo("vmap", None))
    finally:
        _axes.stack.pop()
    j = _scalar_consts_inline(closed)
    if j.constvars:
        raise AssertionError(
            "vmap_jaxpr: a batching rule captured an array constant ("
            + ", ".join(v.aval.str_short() for v in j.constvars) + "); rules must build arrays "
            "from primitives (iota, broadcast_in_dim of a literal)")
    n = len(const_avals)
    return Jaxpr(j.invars[:n], j.invars[n:], j.outvars, j.eqns), box[0]


def _scalar_consts_inline(closed: ClosedJaxpr) -> Jaxpr:
    """``closed``'s jaxpr with its scalar constants as literals: a rule may compute a
    scalar from unbatched literals eagerly (a forwarded literal of a cond, a broadcast
    weak scalar), which the trace then holds as a constant."""
    j = closed.jaxpr
    lits = {v.id: Lit(np.asarray(c), v.aval) for v, c in zip(j.constvars, closed.consts)
            if v.aval.ndim == 0 and not isinstance(c, Tracer)}
    if not lits:
        return j

    def sub(a):
        return lits.get(a.id, a) if isinstance(a, Var) else a
    eqns = [e.replace(invars=[sub(a) for a in e.invars]) for e in j.eqns]
    return Jaxpr([v for v in j.constvars if v.id not in lits], j.invars,
                 [sub(a) for a in j.outvars], eqns)


def vmap_closed_jaxpr(closed: ClosedJaxpr, in_dims, axis_size: int, out_dims=None,
                      axis_name=INHERIT):
    j, out_dims = vmap_jaxpr(closed.jaxpr, in_dims, axis_size, out_dims, axis_name)
    return ClosedJaxpr(j, closed.consts), out_dims
