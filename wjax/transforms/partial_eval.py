"""Partial evaluation: split a jaxpr into what can be computed from the known inputs now and
what must wait for the unknown ones (JAX's ``partial_eval_jaxpr_nounits``).

``partial_eval_jaxpr(closed, unknowns)`` returns

    known    : known inputs                 -> (known outputs, residuals)
    unknown  : (residuals, unknown inputs)  -> unknown outputs
    out_unknowns, num_res

``linearize`` is ``jvp_jaxpr`` followed by this with the tangents unknown: the
known jaxpr is the primal computation (saving residuals), the unknown one is
the linear map from input tangents to output tangents.  Calls (``pjit``) are
split recursively; ``checkpoint`` saves only its inputs and recomputes the rest
in the unknown jaxpr (rematerialization).
"""
from __future__ import annotations

from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var
from .ad import hoist_call_consts
from .dce import dce_jaxpr

# prim name -> rule(eqn, unknowns_in) -> (known_eqns, unknown_eqns, out_unknowns)
# A rule may return new known eqns whose outvars the unknown eqns read (residuals are
# found by the caller from the variables the unknown side reads).
pe_rules: dict = {}


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
        rule = pe_rules.get(e.prim.name)
        if rule is None or all(uin) and e.prim.name != "checkpoint":
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
    unknown = Jaxpr(jaxpr.constvars, [ren[v.id] for v in res] + [v for v in jaxpr.invars if v.id in unk],
                    [rn(a) for a, u in zip(jaxpr.outvars, out_unknowns) if u], ueqns)
    unknown, _ = dce_jaxpr(unknown)
    return (ClosedJaxpr(known, closed.consts), ClosedJaxpr(unknown, closed.consts),
            out_unknowns, len(res))


# --------------------------------------------------------------------------- call rules

def _call_partial_eval(e: Eqn, uin):
    """Splits a call in two: the known call also returns the residuals the unknown call reads."""
    closed = e.params["jaxpr"]
    known, unknown, uout, nres = partial_eval_jaxpr(closed, uin)
    res_vars = [Var(a) for a in known.out_avals[len(known.out_avals) - nres:]]
    kouts = [v for v, u in zip(e.outvars, uout) if not u]
    uouts = [v for v, u in zip(e.outvars, uout) if u]
    name = e.params.get("name", e.prim.name)
    kp = dict(e.params, jaxpr=known)
    up = dict(e.params, jaxpr=unknown)
    if "name" in e.params:
        kp["name"], up["name"] = f"known_{name}", f"unknown_{name}"
    ke = Eqn(e.prim, [a for a, u in zip(e.invars, uin) if not u], kouts + res_vars, kp)
    ue = Eqn(e.prim, res_vars + [a for a, u in zip(e.invars, uin) if u], uouts, up)
    return [ke], [ue], uout


def _checkpoint_partial_eval(e: Eqn, uin):
    """Remat: the known side computes only the known outputs; the unknown side takes the known
    inputs as residuals and recomputes everything it needs from them."""
    closed = e.params["jaxpr"]
    known, _, uout, _ = partial_eval_jaxpr(closed, uin)
    nk = sum(1 for u in uout if not u)
    kj, used = dce_jaxpr(known.jaxpr, [True] * nk + [False] * (len(known.jaxpr.outvars) - nk))
    kouts = [v for v, u in zip(e.outvars, uout) if not u]
    ke = [Eqn(e.prim, [a for a, u in zip(e.invars, uin) if not u], kouts,
              dict(e.params, jaxpr=ClosedJaxpr(kj, known.consts)))] if kouts else []
    # the unknown side: the whole call, reading known inputs (residuals) and the unknown ones,
    # returning only the unknown outputs
    full, _ = dce_jaxpr(closed.jaxpr, list(uout))
    uouts = [v for v, u in zip(e.outvars, uout) if u]
    ue = [Eqn(e.prim, list(e.invars), uouts, dict(e.params, jaxpr=ClosedJaxpr(full, closed.consts)))]
    return ke, ue, uout


pe_rules["pjit"] = _call_partial_eval
pe_rules["checkpoint"] = _checkpoint_partial_eval
