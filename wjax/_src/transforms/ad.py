"""Autodiff rule registries and helpers, used by the blocks in ``wjax/_src/prims/``.

A jvp rule has the signature

    prim.jvp(primals, tangents, **params) -> (primal_out, tangent_out)

(lists for ``multiple_results`` primitives).  A tangent is a value or a
symbolic :class:`Zero`; ``jvp_jaxpr`` calls a rule only when some operand has
a nonzero tangent, and the rule binds primitives, recording into the trace
that ``jvp_jaxpr`` runs.  A transpose rule (linear primitives) has the signature

    prim.transpose(ct, *args, **params) -> [cotangent or None per operand]

where the linear operands are :class:`UndefinedPrimal` (only their aval is
known) and the others are values; ``ct`` is the output cotangent (a list for
``multiple_results``; a single ``ct`` is never a Zero, some of a list may be).

Factories, registered right after each primitive's block:

    defjvp(prim, *fns)       fn(g, *primals, **params) per operand (None: not differentiable)
    defjvp2(prim, *fns)      fn(g, ans, *primals, **params) (uses the primal output)
    defjvp_zero(prim)        piecewise constant / integer-valued: tangent is a symbolic zero
    deflinear(prim, tfn)     linear in all operands: jvp = the primitive on the tangents
    defbilinear(prim, l, r)  bilinear (mul, dot_general): l(ct, x, y) / r(ct, x, y)

It imports no family of primitives (the prims files import it): what it binds, it binds
through ``wjax/_src/core/ops.py`` (by name).
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes, ops
from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var, WeakScalar, raise_to_shaped
from ..core.tracing import Tracer


# --------------------------------------------------------------------------- symbolic values

class Zero:
    """A symbolic zero tangent (or cotangent) of a given aval."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_value(x) -> "Zero":
        return Zero(tangent_aval(raise_to_shaped(x)))

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """A linear operand in a transpose rule: only its aval is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x) -> bool:
    return isinstance(x, UndefinedPrimal)


def aval_of(x) -> ShapedArray:
    if isinstance(x, (Zero, UndefinedPrimal)):
        return x.aval
    return raise_to_shaped(x)


def is_differentiable(aval) -> bool:
    dt = aval.dtype
    return not getattr(dt, "is_key", False) and dtypes.is_inexact(dt)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type)


def zeros(aval: ShapedArray):
    """A concrete (traced) zero array of ``aval``."""
    z = np.zeros((), np.dtype(aval.dtype))
    if not aval.shape:
        return z          # a rank-0 zero stays a literal (a Lit when traced)
    return ops.broadcast_in_dim(z, aval.shape, ())


def instantiate(t):
    return zeros(t.aval) if isinstance(t, Zero) else t


def add_tangents(x, y):
    if isinstance(x, Zero):
        return y
    if isinstance(y, Zero):
        return x
    return ops.add(x, y)


def bcast_to(t, shape):
    """Broadcasts ``t`` (rank 0, or trailing-aligned) to ``shape``."""
    if isinstance(t, Zero):
        return Zero(t.aval.update(shape=shape))
    a = aval_of(t)
    shape = tuple(shape)
    if a.shape == shape:
        return t
    nd = len(shape)
    keep = tuple(range(nd - a.ndim, nd))
    squeeze = [i for i, (s, o) in enumerate(zip(a.shape, shape[nd - a.ndim:])) if s != o]
    if squeeze:
        t = ops.reshape(t, [s for i, s in enumerate(a.shape) if i not in squeeze])
        keep = tuple(k for i, k in enumerate(keep) if i not in squeeze)
    return ops.broadcast_in_dim(t, shape, keep)


def unbroadcast(ct, aval: ShapedArray):
    """Sums a cotangent of a broadcast elementwise result back to an operand's aval."""
    if isinstance(ct, Zero):
        return Zero(aval)
    c = aval_of(ct)
    if c.shape != aval.shape:
        nd = c.ndim
        lead = nd - aval.ndim
        axes = list(range(lead)) + [
            lead + i for i, s in enumerate(aval.shape) if s == 1 and c.shape[lead + i] != 1
        ]
        ct = ops.reduce_sum(ct, axes)
        if aval_of(ct).shape != aval.shape:
            ct = ops.reshape(ct, aval.shape)
    if np.dtype(aval_of(ct).dtype) != np.dtype(aval.dtype):
        ct = ops.convert_element_type(ct, aval.dtype)
    return ct


def const(x, val):
    """``val`` as a weakly typed scalar of ``x``'s dtype."""
    return WeakScalar(np.asarray(val, np.dtype(aval_of(x).dtype)))


# --------------------------------------------------------------------------- jvp factories

def _finish_tangent(t, out_aval):
    if isinstance(t, Zero):
        return Zero(tangent_aval(out_aval))
    t = bcast_to(t, out_aval.shape)
    if np.dtype(aval_of(t).dtype) != np.dtype(out_aval.dtype):
        t = ops.convert_element_type(t, out_aval.dtype)
    return t


def _defjvp(prim, fns, with_ans):
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out_aval = aval_of(ans)
        if not is_differentiable(out_aval):
            return ans, Zero(tangent_aval(out_aval))
        lead = (ans,) if with_ans else ()
        acc = None
        for fn, t in zip(fns, tangents):
            if fn is None or isinstance(t, Zero):
                continue
            c = bcast_to(fn(t, *lead, *primals, **params), out_aval.shape)
            acc = c if acc is None else add_tangents(acc, c)
        return ans, _finish_tangent(Zero(out_aval) if acc is None else acc, out_aval)
    prim.jvp = rule
    return rule


def defjvp(prim, *fns):
    """Per-operand jvp contributions ``fn(g, *primals, **params)``; None = not differentiable."""
    return _defjvp(prim, fns, with_ans=False)


def defjvp2(prim, *fns):
    """Like defjvp, with the primal output: ``fn(g, ans, *primals, **params)``."""
    return _defjvp(prim, fns, with_ans=True)


def defjvp_zero(prim):
    """The tangent is a symbolic zero (piecewise-constant, integer or boolean results)."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if prim.multiple_results:
            return ans, [Zero(tangent_aval(aval_of(a))) for a in ans]
        return ans, Zero(tangent_aval(aval_of(ans)))
    prim.jvp = rule
    prim.zero_jvp = True
    return rule


def deflinear(prim, transpose_fn):
    """A primitive linear in every operand: its jvp applies it to the tangents."""
    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        if all(isinstance(t, Zero) for t in tangents):
            return ans, (Zero(aval_of(ans)) if not prim.multiple_results
                         else [Zero(aval_of(a)) for a in ans])
        ts = [instantiate(t) for t in tangents]
        return ans, prim.bind(*ts, **params)
    prim.jvp = rule
    prim.transpose = transpose_fn
    return rule


def defbilinear(prim, lhs_rule, rhs_rule):
    """``prim(x, y)`` linear in each operand; ``lhs_rule(ct, x, y)`` gives x's cotangent."""
    def jvp(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        ans = prim.bind(x, y, **params)
        out_aval = aval_of(ans)
        acc = Zero(out_aval)
        if not isinstance(tx, Zero):
            acc = add_tangents(acc, bcast_to(prim.bind(tx, y, **params), out_aval.shape))
        if not isinstance(ty, Zero):
            acc = add_tangents(acc, bcast_to(prim.bind(x, ty, **params), out_aval.shape))
        return ans, _finish_tangent(acc, out_aval)

    def transpose(ct, x, y, **params):
        if is_undefined_primal(x) and is_undefined_primal(y):
            raise TypeError(
                f"transpose of {prim.name}: both operands are linear (the jaxpr is not linear)"
            )
        if is_undefined_primal(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]
    prim.jvp = jvp
    prim.transpose = transpose
    return jvp


def nonlinear_error(prim):
    def transpose(*args, **params):
        raise TypeError(f"{prim.name} is not linear in its tangent operands: cannot transpose it")
    return transpose


# --------------------------------------------------------------------------- closure conversion

# call primitives whose ClosedJaxpr param may carry tracers of the trace around them


def _tracer_consts(closed) -> bool:
    if any(isinstance(c, Tracer) for c in closed.consts):
        return True
    return any(e.prim.transparent_call and _tracer_consts(e.params["jaxpr"])
               for e in closed.jaxpr.eqns if "jaxpr" in e.params)


def hoist_call_consts(closed):
    """Makes the traced values that call equations (``pjit``, ``checkpoint``) close over explicit
    operands of those equations, so each transformation can rewrite the call's jaxpr on its own.

    A closed-over tracer that is a variable of ``closed`` becomes that variable; one from a trace
    further out becomes a new constvar of ``closed`` whose value is the tracer."""
    if not _tracer_consts(closed):
        return closed
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    j = _hoist(closed.jaxpr, constvars, consts)
    return ClosedJaxpr(Jaxpr(constvars, j.invars, j.outvars, j.eqns), consts)


def _hoist(jaxpr, constvars, consts):
    defined = {v.id: v for v in jaxpr.constvars + jaxpr.invars}
    by_obj = {id(c): v for v, c in zip(constvars, consts)}
    eqns = []
    for e in jaxpr.eqns:
        if e.prim.transparent_call and "jaxpr" in e.params and _tracer_consts(e.params["jaxpr"]):
            inner = e.params["jaxpr"]
            icv, icc = list(inner.jaxpr.constvars), list(inner.consts)
            ij = _hoist(inner.jaxpr, icv, icc)
            keep_v, keep_c, moved_v, extra = [], [], [], []
            for v, c in zip(icv, icc):
                if not isinstance(c, Tracer):
                    keep_v.append(v)
                    keep_c.append(c)
                    continue
                moved_v.append(v)
                if c._var.id in defined:
                    extra.append(defined[c._var.id])
                else:
                    ov = by_obj.get(id(c))
                    if ov is None:
                        ov = Var(c.aval)
                        constvars.append(ov)
                        consts.append(c)
                        by_obj[id(c)] = ov
                    extra.append(ov)
            new_inner = ClosedJaxpr(Jaxpr(keep_v, moved_v + ij.invars, ij.outvars, ij.eqns), keep_c)
            params = dict(e.params)
            params["jaxpr"] = new_inner
            e = Eqn(e.prim, extra + list(e.invars), e.outvars, params)
        eqns.append(e)
        for v in e.outvars:
            defined[v.id] = v
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)
