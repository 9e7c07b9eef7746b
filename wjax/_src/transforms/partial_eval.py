"""Partial evaluation: split a jaxpr into what can be computed from the known inputs now and
what must wait for the unknown ones (JAX's ``partial_eval_jaxpr_nounits``).

``partial_eval_jaxpr(closed, unknowns)`` returns

    known    : known inputs                 -> (known outputs, residuals)
    unknown  : (residuals, unknown inputs)  -> unknown outputs
    out_unknowns, num_res

``linearize`` is ``jvp_jaxpr`` followed by this with the tangents unknown: the
known jaxpr is the primal computation (saving residuals), the unknown one is
the linear map from input tangents to output tangents.  Equations carrying jaxprs split by
their primitive's ``partial_eval`` rule (``wjax/_src/prims/calls.py``, ``control.py``): a call is
split recursively; ``checkpoint`` saves only its inputs and recomputes the rest in the
unknown jaxpr (rematerialization).
"""
from __future__ import annotations

from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Var
from .ad import hoist_call_consts
from .dce import dce_jaxpr

# Primitive.partial_eval(eqn, unknowns_in) -> (known_eqns, unknown_eqns, out_unknowns): a rule
# may return new known eqns whose outvars the unknown eqns read (residuals are found by the
# caller from the variables the unknown side reads).


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns, instantiate=False):
    closed = hoist_call_consts(closed)
    jaxpr = closed.jaxpr
    n_out = len(jaxpr.outvars)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    unk: set[int] = {v.id for v, u in zip(jaxpr.invars, unknowns) if u}
    known_eqns, unknown_eqns = [], []
    for e in jaxpr.eqns:
        uin = [isinstance(a, Var) and a.id in unk for a in e.invars]
        if not any(uin):
            known_eqns.append(e)
            continue
        rule = e.prim.partial_eval
        if rule is None or all(uin) and not e.prim.remat:
            unknown_eqns.append(e)
            unk.update(v.id for v in e.outvars)
            continue
        ke, ue, uout = rule(e, uin)
        known_eqns.extend(ke)
        unknown_eqns.extend(ue)
        unk.update(v.id for v, u in zip(e.outvars, uout) if u)

    out_unknowns = [(isinstance(a, Var) and a.id in unk) or i for a, i in zip(jaxpr.outvars, inst)]
    # residuals: known vars the unknown side reads (consts stay consts on both sides)
    const_ids = {v.id for v in jaxpr.constvars}
    res, seen = [], set()

    def need(a):
        if isinstance(a, Var) and a.id not in unk and a.id not in const_ids and a.id not in seen:
            seen.add(a.id)
            res.append(a)

    for e in unknown_eqns:
        for a in e.invars:
            need(a)
    for a, u in zip(jaxpr.outvars, out_unknowns):
        if u:
            need(a)
    known_outs = [a for a, u in zip(jaxpr.outvars, out_unknowns) if not u]
    known = Jaxpr(jaxpr.constvars, [v for v in jaxpr.invars if v.id not in unk],
                  known_outs + res, known_eqns)
    known, _ = dce_jaxpr(known)
    # the unknown jaxpr reads fresh copies of the residuals
    ren = {v.id: Var(v.aval) for v in res}

    def rn(a):
        return ren.get(a.id, a) if isinstance(a, Var) else a

    ueqns = [Eqn(e.prim, [rn(a) for a in e.invars], e.outvars, e.params) for e in unknown_eqns]
    unknown = Jaxpr(
        jaxpr.constvars,
        [ren[v.id] for v in res] + [v for v in jaxpr.invars if v.id in unk],
        [rn(a) for a, u in zip(jaxpr.outvars, out_unknowns) if u],
        ueqns,
    )
    unknown, _ = dce_jaxpr(unknown)
    return (ClosedJaxpr(known, closed.consts), ClosedJaxpr(unknown, closed.consts),
            out_unknowns, len(res))
