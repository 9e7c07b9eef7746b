"""Transposition of linear jaxprs (reverse mode), with cotangent accumulation.

``transpose_jaxpr(closed, linear)`` takes a jaxpr linear in the inputs marked
``linear`` and returns a jaxpr of ``(non-linear inputs, output cotangents) ->
cotangents of the linear inputs``.  Equations that read no linear variable
(residual arithmetic, constants, the recomputation inside a ``checkpoint``)
are evaluated forward first; the linear ones are then walked backwards, each
calling its primitive's transpose rule and adding the cotangents it returns
into the cotangents of its linear operands.

An equation that reads linear and non-linear operands and has a partial-evaluation
rule (a call or control-flow primitive: ``pjit``, ``checkpoint``, ``scan``, ...) may
compute non-linear outputs too: the jvp of a call inside a ``checkpoint`` returns
both primals and tangents.  Such an equation is split by its rule, as ``linearize``
would split it, into a forward part (evaluated now) and a linear part (transposed).
"""
from __future__ import annotations

from ..core.ir import ClosedJaxpr, Jaxpr, Lit, Var
from ..core.tracing import source_of, trace_flat
from .ad import UndefinedPrimal, Zero, add_tangents, aval_of, hoist_call_consts, instantiate
from .dce import dce_closed


def backward_pass(jaxpr: Jaxpr, consts, linear, nonlinear_args, cts_out):
    """Returns the cotangents (values or Zeros) of the linear inputs of ``jaxpr``."""
    env: dict = {}
    lin: set[int] = set()

    def read(a):
        return a.operand if isinstance(a, Lit) else env[a.id]

    for v, c in zip(jaxpr.constvars, consts):
        env[v.id] = c
    it = iter(nonlinear_args)
    for v, is_lin in zip(jaxpr.invars, linear):
        if is_lin:
            lin.add(v.id)
        else:
            env[v.id] = next(it)
    def forward(e):
        outs = e.prim.bind(*[read(a) for a in e.invars], **e.params)
        for v, o in zip(e.outvars, outs if e.prim.multiple_results else [outs]):
            env[v.id] = o

    lin_eqns = []
    for e in jaxpr.eqns:
        uin = [isinstance(a, Var) and a.id in lin for a in e.invars]
        if not any(uin):
            forward(e)
            continue
        rule = e.prim.partial_eval
        if rule is None:
            lin.update(v.id for v in e.outvars)
            lin_eqns.append(e)
            continue
        known, unknown, uout = rule(e, uin)
        for k in known:
            forward(k)
        lin_eqns.extend(unknown)
        lin.update(v.id for v, u in zip(e.outvars, uout) if u)

    ct_env: dict = {}

    def accum(v, ct):
        if ct is None or isinstance(ct, Zero):
            return
        if aval_of(ct).shape != v.aval.shape:
            raise AssertionError(f"cotangent of shape {aval_of(ct).shape} for a variable of shape "
                                 f"{v.aval.shape} ({where})")
        ct_env[v.id] = add_tangents(ct_env[v.id], ct) if v.id in ct_env else ct

    where = "outputs"
    for a, ct in zip(jaxpr.outvars, cts_out):
        if isinstance(a, Var) and a.id in lin:
            accum(a, ct)
    for e in reversed(lin_eqns):
        cts = [ct_env.pop(v.id, None) for v in e.outvars]
        cts = [Zero(v.aval) if c is None else c for c, v in zip(cts, e.outvars)]
        if all(isinstance(c, Zero) for c in cts):
            continue
        rule = e.prim.transpose
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{e.prim.name}' not "
                f"implemented"
            )
        args = [UndefinedPrimal(a.aval) if isinstance(a, Var) and a.id in lin else read(a)
                for a in e.invars]
        where = f"transpose of {e.prim.name}"
        with source_of(e):
            cts_in = rule(cts if e.prim.multiple_results else cts[0], *args, **e.params)
        for a, c in zip(e.invars, cts_in):
            if isinstance(a, Var) and a.id in lin:
                accum(a, c)
    return [ct_env.get(v.id, Zero(v.aval)) for v, is_lin in zip(jaxpr.invars, linear) if is_lin]


def transpose_jaxpr(closed: ClosedJaxpr, linear, instantiate_zeros: bool = True) -> ClosedJaxpr:
    """``(non-linear inputs, cotangents of every output) -> cotangents of the linear inputs``."""
    closed = hoist_call_consts(closed)
    jaxpr = closed.jaxpr
    linear = [bool(x) for x in linear]
    nl_avals = [v.aval for v, l in zip(jaxpr.invars, linear) if not l]
    ct_avals = [a.aval for a in jaxpr.outvars]
    n = len(nl_avals)

    def fun(*args):
        cts = backward_pass(jaxpr, closed.consts, linear, args[:n], list(args[n:]))
        return [instantiate(c) for c in cts]

    out = trace_flat(fun, nl_avals + ct_avals)
    out, _ = dce_closed(out)
    return out
