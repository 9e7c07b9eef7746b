"""Dead-code elimination: a Jaxpr -> Jaxpr rewrite, run after each autodiff step.

``dce_jaxpr(jaxpr, used_outputs)`` drops the outputs not used and every
equation whose results nobody needs (equations with effects are kept), descends
into transparent calls (``pjit``, ``checkpoint``) to prune their unused outputs and operands,
and reports which inputs are still used.
"""
from __future__ import annotations

from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Var, subjaxprs

# Transparent calls (``pjit``, ``checkpoint``) have their inner jaxpr pruned here; custom_jvp/
# vjp calls carry rules tied to their signature, so they are kept whole.  Other primitives
# carrying jaxprs (control flow) drop unused outputs by their ``Primitive.dce`` rule:
# rule(eqn, used_outputs) -> a new eqn whose outvars are a subset of eqn's.


def has_effects(e: Eqn) -> bool:
    """An effectful primitive, or one carrying a jaxpr that binds one (a cond that prints)."""
    if e.prim.effectful:
        return True
    for sub in subjaxprs(e.params):
        j = sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub
        if any(has_effects(x) for x in j.eqns):
            return True
    return False


def dce_jaxpr(jaxpr: Jaxpr, used_outputs=None, prune_invars: bool = False):
    """Returns ``(new_jaxpr, used_inputs)``; with ``prune_invars`` unused invars are dropped."""
    if used_outputs is None:
        used_outputs = [True] * len(jaxpr.outvars)
    outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    live = {a.id for a in outvars if isinstance(a, Var)}
    keep = []
    for e in reversed(jaxpr.eqns):
        used = [v.id in live for v in e.outvars]
        if not any(used) and not has_effects(e):
            continue
        if e.prim.transparent_call and not all(used) and "jaxpr" in e.params:
            e = _prune_call(e, used)
        elif e.prim.dce is not None and not all(used):
            e = e.prim.dce(e, used)
        keep.append(e)
        live.update(a.id for a in e.invars if isinstance(a, Var))
    used_inputs = [v.id in live for v in jaxpr.invars]
    invars = [v for v, u in zip(jaxpr.invars, used_inputs) if u] if prune_invars else jaxpr.invars
    constvars = jaxpr.constvars
    return Jaxpr(constvars, invars, outvars, keep[::-1]), used_inputs


def _prune_call(e: Eqn, used) -> Eqn:
    closed: ClosedJaxpr = e.params["jaxpr"]
    inner, used_in = dce_jaxpr(closed.jaxpr, used, prune_invars=True)
    params = dict(e.params)
    params["jaxpr"] = ClosedJaxpr(inner, closed.consts)
    return Eqn(e.prim, [a for a, u in zip(e.invars, used_in) if u],
               [v for v, u in zip(e.outvars, used) if u], params)


def dce_closed(closed: ClosedJaxpr, used_outputs=None, prune_invars: bool = False):
    """DCE of a closed jaxpr; unused constvars are dropped with their consts."""
    j, used_in = dce_jaxpr(closed.jaxpr, used_outputs, prune_invars)
    live = {a.id for e in j.eqns for a in e.invars if isinstance(a, Var)}
    live |= {a.id for a in j.outvars if isinstance(a, Var)}
    keep = [(v, c) for v, c in zip(j.constvars, closed.consts) if v.id in live]
    j = Jaxpr([v for v, _ in keep], j.invars, j.outvars, j.eqns)
    return ClosedJaxpr(j, [c for _, c in keep]), used_in
