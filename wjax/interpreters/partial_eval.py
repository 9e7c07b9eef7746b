"""``jax.interpreters.partial_eval``: tracing a function to a jaxpr, and partial evaluation
of a function of known values and unknown (abstract) ones, as JAX names them -- over wjax's
tracer (``wjax/_src/core/tracing.py``), which runs the equations that only need known values."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._src.core.ir import Jaxpr, Lit, ShapedArray, Var, raise_to_shaped
from .._src.core.tracing import DebugInfo, eval_jaxpr, new_builder
from ..numpy import asarray

__all__ = ["PartialVal", "trace_to_jaxpr_dynamic", "trace_to_jaxpr_nounits"]


class PartialVal(NamedTuple):
    """``(aval, None)``: unknown, only its shape and dtype; ``(None, value)``: known."""
    pv: Any
    const: Any

    @classmethod
    def known(cls, const: Any) -> "PartialVal":
        return cls(None, const)

    @classmethod
    def unknown(cls, aval: ShapedArray) -> "PartialVal":
        return cls(aval, None)

    def is_known(self) -> bool:
        return self.pv is None

    def get_aval(self) -> ShapedArray:
        return raise_to_shaped(self.const) if self.pv is None else self.pv

    def get_known(self) -> Any:
        return self.const if self.pv is None else None


def _call(fun, args):
    call = getattr(fun, "call_wrapped", fun)
    out = call(*args)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _dependent(j, unknown: set) -> set:
    """The ids of ``j``'s variables that depend on the variables ``unknown`` names -- through
    a call's own jaxpr (``checkpoint``, ``pjit``), output by output."""
    dep = set(unknown)
    for e in j.eqns:
        ins = [isinstance(a, Var) and a.id in dep for a in e.invars]
        if not any(ins):
            continue
        inner = e.params.get("jaxpr") if e.prim.call else None
        inner = getattr(inner, "jaxpr", inner)
        if isinstance(inner, Jaxpr) and len(inner.invars) == len(e.invars) \
                and len(inner.outvars) == len(e.outvars):
            d = _dependent(inner, {v.id for v, u in zip(inner.invars, ins) if u})
            dep.update(v.id for v, o in zip(e.outvars, inner.outvars)
                       if isinstance(o, Var) and o.id in d)
        else:
            dep.update(v.id for v in e.outvars)
    return dep


def _known_from_outside(j, pvals, known_in, consts, out_pvals) -> list:
    """``out_pvals`` with the unknown outputs that depend on no unknown input made known:
    evaluated from the consts and known inputs, in the enclosing trace (the unknown inputs,
    which they do not read, as zeros: a call computing known and unknown outputs runs
    whole)."""
    unknown = [v for v, p in zip(j.invars, pvals) if not p.is_known()]
    dep = _dependent(j, {v.id for v in unknown})
    free = [k for k, (a, p) in enumerate(zip(j.outvars, out_pvals))
            if not p.is_known() and isinstance(a, Var) and a.id not in dep]
    if not free:
        return out_pvals
    outs = [j.outvars[k] for k in free]
    live, eqns = {a.id for a in outs}, []
    for e in reversed(j.eqns):           # their backward slice (effects not run again)
        if any(v.id in live for v in e.outvars):
            eqns.append(e)
            live.update(a.id for a in e.invars if isinstance(a, Var))
    try:
        zeros = [np.zeros(v.aval.shape, v.aval.dtype) for v in unknown]
    except TypeError:                    # an unknown key array: no host zeros for it
        return out_pvals
    values = eval_jaxpr(Jaxpr(j.constvars + known_in, unknown, outs, eqns[::-1]), consts,
                        *zeros)
    out = list(out_pvals)
    for k, v in zip(free, values):
        out[k] = PartialVal.known(v)
    return out


def trace_to_jaxpr_dynamic(fun, in_avals, debug_info: Any = None, **kwargs):
    """``(jaxpr, out_avals, consts)`` of ``fun`` (a function or ``lu.WrappedFun``) traced at
    ``in_avals``; the jaxpr's constvars take ``consts``."""
    with new_builder(DebugInfo("trace_to_jaxpr", None)) as b:
        tracers = [b.new_arg(a) for a in in_avals]
        closed = b.build(_call(fun, tracers))
    return closed.jaxpr, [a.aval for a in closed.jaxpr.outvars], list(closed.consts)


def trace_to_jaxpr_nounits(fun, pvals, instantiate: bool = False):
    """Partial evaluation: ``(jaxpr, out_pvals, consts)``.  Outputs computable from the known
    inputs alone are known (their values computed); the others are unknown, and ``jaxpr``
    (with ``consts``) computes every output from the unknown inputs.  An output computed only
    from values of an enclosing trace (a ``jit``'s tracers the function closes over) is known
    too, its value a tracer of that trace (as JAX's: flax's ``scan`` tells the loop-invariant
    outputs of its body so)."""
    pvals = [p if isinstance(p, PartialVal) else PartialVal(*p) for p in pvals]
    with new_builder(DebugInfo("partial_eval", None), with_values=True) as b:
        tracers = [b.new_arg(p.get_aval(), p.const if p.is_known() else None) for p in pvals]
        outs = _call(fun, tracers)
        closed = b.build(outs)
        out_pvals = []
        for atom in closed.jaxpr.outvars:
            value = atom.val if isinstance(atom, Lit) else b.concrete_value(atom)
            if value is None or instantiate:
                out_pvals.append(PartialVal.unknown(atom.aval))
            else:
                out_pvals.append(PartialVal.known(asarray(value, dtype=atom.aval.dtype)))
    j = closed.jaxpr
    known_in = [v for v, p in zip(j.invars, pvals) if p.is_known()]
    consts = list(closed.consts) + [p.const for p in pvals if p.is_known()]
    if not instantiate:
        out_pvals = _known_from_outside(j, pvals, known_in, consts, out_pvals)
    jaxpr = Jaxpr(j.constvars + known_in, [v for v, p in zip(j.invars, pvals)
                                          if not p.is_known()], j.outvars, j.eqns)
    return jaxpr, out_pvals, consts
