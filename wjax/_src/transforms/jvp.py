"""Forward-mode autodiff as a rewrite: ``jvp_jaxpr`` maps a jaxpr of ``primals -> outs`` to a
jaxpr of ``(primals, nonzero tangents) -> (outs, nonzero out tangents)``.

It is an interpreter (env, read/write, a loop over equations) run under a new
trace: each equation with a nonzero input tangent calls its primitive's jvp
rule, which binds primitives into that trace; the others are copied as they
are.  Tangents are values or symbolic :class:`~wjax._src.transforms.ad.Zero`s.
"""
from __future__ import annotations

from ..core.ir import ClosedJaxpr, Jaxpr, Lit
from ..core.tracing import source_of, trace_flat
from .ad import Zero, aval_of, hoist_call_consts, instantiate, is_differentiable, tangent_aval
from .dce import dce_closed


def jvp_eval(jaxpr: Jaxpr, consts, primals, tangents):
    """Evaluates ``jaxpr`` on primals and tangents (values or Zeros) by binding (tracing)."""
    env: dict = {}
    tenv: dict = {}

    def read(a):
        return a.operand if isinstance(a, Lit) else env[a.id]

    def read_t(a):
        if isinstance(a, Lit):
            return Zero(tangent_aval(a.aval))
        t = tenv.get(a.id)
        return t if t is not None else Zero(tangent_aval(a.aval))

    for v, x in zip(jaxpr.constvars, consts):
        env[v.id] = x
    for v, x, t in zip(jaxpr.invars, primals, tangents):
        env[v.id] = x
        if not isinstance(t, Zero) and is_differentiable(v.aval):
            tenv[v.id] = t
    for e in jaxpr.eqns:
        ins = [read(a) for a in e.invars]
        tins = [read_t(a) for a in e.invars]
        if all(isinstance(t, Zero) for t in tins):
            with source_of(e):
                outs = e.prim.bind(*ins, **e.params)
            outs = list(outs) if e.prim.multiple_results else [outs]
            touts = [None] * len(outs)
        else:
            rule = e.prim.jvp
            if rule is None:
                raise NotImplementedError(
                    f"Differentiation rule for '{e.prim.name}' not implemented")
            with source_of(e):
                outs, touts = rule(ins, tins, **e.params)
            if not e.prim.multiple_results:
                outs, touts = [outs], [touts]
        for v, o, t in zip(e.outvars, outs, touts):
            env[v.id] = o
            if t is not None and not isinstance(t, Zero) and is_differentiable(v.aval):
                if aval_of(t).shape != v.aval.shape:
                    raise AssertionError(
                        f"jvp rule of {e.prim.name} gave a tangent of shape "
                        f"{aval_of(t).shape} for an output of shape {v.aval.shape}"
                    )
                tenv[v.id] = t
    return [read(a) for a in jaxpr.outvars], [read_t(a) for a in jaxpr.outvars]


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros, instantiate_outs=False):
    """Returns ``(jvp_closed, out_nonzeros)``.

    ``jvp_closed`` takes the primals, then one tangent per input with ``nonzeros[i]`` true, and
    returns the outputs, then one tangent per output with ``out_nonzeros[j]`` true.
    ``instantiate_outs`` (a bool or a list per output) forces out tangents to be returned as
    (zero) arrays rather than left out."""
    closed = hoist_call_consts(closed)
    jaxpr = closed.jaxpr
    n_out = len(jaxpr.outvars)
    inst = (
        [instantiate_outs] * n_out if isinstance(instantiate_outs, bool) else list(instantiate_outs)
    )
    nonzeros = [bool(nz) for nz in nonzeros]
    in_avals = [v.aval for v in jaxpr.invars]
    tan_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    box = []

    def fun(*args):
        n = len(in_avals)
        primals, it = list(args[:n]), iter(args[n:])
        tangents = [next(it) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
        outs, touts = jvp_eval(jaxpr, closed.consts, primals, tangents)
        touts = [instantiate(t) if i else t for t, i in zip(touts, inst)]
        box.append([not isinstance(t, Zero) for t in touts])
        return outs + [t for t in touts if not isinstance(t, Zero)]

    out = trace_flat(fun, in_avals + tan_avals)
    out, _ = dce_closed(out)
    return out, box[0]
