"""Control flow primitives: ``cond``, ``while`` and ``scan`` (API in ``wjax/lax/control.py``).

Each primitive holds its bodies as ClosedJaxpr parameters (printed nested by ``make_jaxpr``)
and has, side by side: abstract eval, a NumPy reference (``eval_jaxpr_reference``), the
kernel rule, jvp, partial eval (linearize), transpose, batching and DCE rules.

    cond   operands: index:i32[], *operands                 params: branches
    while  operands: *cond_consts, *body_consts, *carry     params: cond_jaxpr, body_jaxpr,
                                                                    cond_nconsts, body_nconsts
    scan   operands: *consts, *carry, *xs                   params: jaxpr, length, reverse,
                                                                    num_consts, num_carry, unroll

The kernel rules only declare what runs: each picks a form and hands the jaxprs of that form
-- rewritten by ``prims/control_rewrites.py`` (conds made selects, guarded while bodies,
restructured scans) -- to ``wjax/_src/backend/host_steps.py``, which compiles them into sub-plans
and runs them as a plan host step (its docstring tells how each form runs and why):

* ``cond``: a literal index records its branch; a traced one picks the branch on the device
  (a gate kernel and indirect dispatches) unless a branch holds a host step, which reads the
  index back.
* ``while``: one kernel looping in chunks (``wjax/_src/backend/loops.py``) when the body
  qualifies; else the guarded body recorded in chunks, one predicate readback per chunk; a
  body holding another ``while`` or a print reads its predicate every iteration.
* ``scan``: restructured first when matmuls or accumulators can leave the loop; then one
  kernel looping in chunks when the body qualifies; else the body recorded per step, with
  no readback.
"""
from __future__ import annotations

import numpy as np

from ..backend import host_steps as HS
from ..core import ops as _ops
from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var
from ..core.primitive import Primitive
from ..transforms import ad as _ad
from ..transforms import batching as _batching
from ..transforms.dce import dce_jaxpr
from ..transforms.jvp import jvp_jaxpr
from ..transforms.partial_eval import partial_eval_jaxpr
from ..transforms.transpose import transpose_jaxpr
from ..transforms.vmap import vmap_closed_jaxpr
from ..util import split_list
from .control_rewrites import (KEEP_BRANCHES, contains_prim, counter_carries, counter_values,
                               eval_closed, guarded_body, restructure_scan, same_types,
                               scan_wrapper, select_cases, selectify, trace_closed, while_step)


# =========================================================================== helpers

def eval_jaxpr_reference(jaxpr, consts, *args):
    """Evaluates a Jaxpr in NumPy with each primitive's reference rule (call primitives
    without one, like ``pjit``, are evaluated through their inner jaxpr)."""
    env: dict = {}

    def read(a):
        return a.val if isinstance(a, Lit) else env[a.id]

    for v, c in zip(jaxpr.constvars, consts):
        env[v.id] = _host(c)
    for v, x in zip(jaxpr.invars, args):
        env[v.id] = _host(x)
    for e in jaxpr.eqns:
        ins = [read(a) for a in e.invars]
        if e.prim.reference is not None:
            out = e.prim.reference(*ins, **e.params)
        elif isinstance(e.params.get("jaxpr"), ClosedJaxpr):
            inner = e.params["jaxpr"]
            out = eval_jaxpr_reference(inner.jaxpr, inner.consts, *ins)
        else:
            raise NotImplementedError(f"no reference rule for primitive {e.prim.name}")
        outs = list(out) if e.prim.multiple_results else [out]
        for v, o in zip(e.outvars, outs):
            env[v.id] = _cast(o, v.aval)
    return [read(a) for a in jaxpr.outvars]


def _host(x):
    return np.asarray(x)


def _cast(x, aval):
    x = np.asarray(x)
    if isinstance(aval.dtype, np.dtype) and x.dtype != aval.dtype:
        x = x.astype(aval.dtype)
    return x


def lift_consts(closed: ClosedJaxpr):
    """``(closed', consts)``: every const of ``closed`` (closed-over tracers included, also
    those of nested calls) becomes a leading invar of ``closed'``, which has no consts."""
    closed = _ad.hoist_call_consts(closed)
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns), []), list(
        closed.consts
    )


def _permute(closed: ClosedJaxpr, in_perm=None, out_perm=None) -> ClosedJaxpr:
    j = closed.jaxpr
    inv = j.invars if in_perm is None else [j.invars[i] for i in in_perm]
    outv = j.outvars if out_perm is None else [j.outvars[i] for i in out_perm]
    return ClosedJaxpr(Jaxpr(j.constvars, inv, outv, j.eqns), closed.consts)


def _with_dummies(closed: ClosedJaxpr, at: int, avals) -> ClosedJaxpr:
    """``closed`` with unused invars of ``avals`` inserted at position ``at``."""
    j = closed.jaxpr
    inv = list(j.invars[:at]) + [Var(a) for a in avals] + list(j.invars[at:])
    return ClosedJaxpr(Jaxpr(j.constvars, inv, j.outvars, j.eqns), closed.consts)


def _nz(t) -> bool:
    return not isinstance(t, _ad.Zero)


def _zeros_like_aval(aval):
    return _ad.instantiate(_ad.Zero(aval))


# primitives that lower to host steps, which the device-side cond (indirect dispatch) can't skip
_HOST_STEPS = ("while", "scan", "debug_callback", "pure_callback", "io_callback")


# =========================================================================== cond

cond_p = Primitive("cond", multiple_results=True)


@cond_p.def_abstract_eval
def _cond_abstract(index, *ops, branches):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
    if not branches:
        raise TypeError("cond needs at least one branch")
    for i, b in enumerate(branches):
        if len(b.in_avals) != len(ops) or not all(map(same_types, b.in_avals, ops)):
            raise TypeError(
                f"cond branch {i} takes ({', '.join(a.str_short() for a in b.in_avals)}) "
                f"but the operands are ({', '.join(a.str_short() for a in ops)})"
            )
        if len(b.out_avals) != len(branches[0].out_avals) or not all(
                map(same_types, b.out_avals, branches[0].out_avals)):
            raise TypeError("cond branches must have equal output types")
    return list(branches[0].out_avals)


@cond_p.def_reference
def _cond_reference(index, *ops, branches):
    i = int(np.clip(int(index), 0, len(branches) - 1))
    return eval_jaxpr_reference(branches[i].jaxpr, branches[i].consts, *ops)


@cond_p.def_kernel
def _cond_kernel(ctx, *avals, branches):
    index, n = ctx.eqn.invars[0], len(branches)
    if n == 1 or isinstance(index, Lit):        # the branch is known at lowering
        static = 0 if n == 1 else int(np.clip(int(index.val), 0, n - 1))
        HS.cond_on_host(ctx, branches, static)
        return
    on_device = not any(contains_prim(b, _HOST_STEPS) for b in branches) and HS.cond_on_device(
        ctx, branches, _without_conds, lambda: _cond_select(n, index.aval, branches))
    if not on_device:
        HS.cond_on_host(ctx, branches, None)    # reads the index back


def _without_conds(branch):
    """The branch with its nested conds made selects, so its plan is all kernels."""
    while (s := selectify(branch)) is not branch:
        branch = s
    return branch


def _cond_select(n, index_aval, branches):
    """``(index, every branch's outputs) -> the outputs of branch clamp(index)``."""
    out_avals = list(branches[0].out_avals)

    def f(i, *outs):
        i = _ops.clamp(np.int32(0), i, np.int32(n - 1))
        return [select_cases(i, list(outs[j::len(out_avals)]), a)
                for j, a in enumerate(out_avals)]
    return trace_closed(f, [index_aval] + out_avals * n)


def _cond_jvp(primals, tangents, *, branches):
    index, ops = primals[0], primals[1:]
    tops = tangents[1:]
    nz = [_nz(t) for t in tops]
    out_nz = [False] * len(branches[0].out_avals)
    for b in branches:
        _, onz = jvp_jaxpr(b, nz)
        out_nz = [x or y for x, y in zip(out_nz, onz)]
    out_nz = [z and _ad.is_differentiable(a) for z, a in zip(out_nz, branches[0].out_avals)]
    new = tuple(jvp_jaxpr(b, nz, instantiate_outs=out_nz)[0] for b in branches)
    outs = cond_p.bind(index, *ops, *[t for t in tops if _nz(t)], branches=new)
    n = len(branches[0].out_avals)
    it = iter(outs[n:])
    return list(outs[:n]), [
        next(it) if z else _ad.Zero(a) for z, a in zip(out_nz, branches[0].out_avals)
    ]


def _cond_partial_eval(e: Eqn, uin):
    branches = e.params["branches"]
    nout = len(e.outvars)
    if uin[0]:
        return [], [e], [True] * nout
    ops_uk = list(uin[1:])
    out_uk = [False] * nout
    for b in branches:
        out_uk = [x or y for x, y in zip(out_uk, partial_eval_jaxpr(b, ops_uk)[2])]
    splits = [partial_eval_jaxpr(b, ops_uk, instantiate=out_uk) for b in branches]
    res_avals = [s[0].out_avals[len(s[0].out_avals) - s[3]:] for s in splits]
    all_res = [a for r in res_avals for a in r]
    nk = sum(1 for u in out_uk if not u)
    known_ops_avals = [a.aval for a, u in zip(e.invars[1:], ops_uk) if not u]
    uk_ops_avals = [a.aval for a, u in zip(e.invars[1:], ops_uk) if u]

    def known_branch(i):
        known = splits[i][0]

        def f(*xs):
            outs = eval_closed(known, *xs)
            mine = outs[nk:]
            res = []
            for j, r in enumerate(res_avals):
                res.extend(mine if j == i else [_zeros_like_aval(a) for a in r])
            return list(outs[:nk]) + res
        return trace_closed(f, known_ops_avals)

    def unknown_branch(i):
        unknown = splits[i][1]
        start = sum(len(r) for r in res_avals[:i])

        def f(*xs):
            res, ops = xs[:len(all_res)], xs[len(all_res):]
            return eval_closed(unknown, *res[start:start + len(res_avals[i])], *ops)
        return trace_closed(f, all_res + uk_ops_avals)

    res_vars = [Var(a) for a in all_res]
    kouts = [v for v, u in zip(e.outvars, out_uk) if not u]
    uouts = [v for v, u in zip(e.outvars, out_uk) if u]
    idx = e.invars[0]
    ke = Eqn(cond_p, [idx] + [a for a, u in zip(e.invars[1:], ops_uk) if not u], kouts + res_vars,
             dict(branches=tuple(known_branch(i) for i in range(len(branches)))))
    ue = Eqn(cond_p, [idx] + res_vars + [a for a, u in zip(e.invars[1:], ops_uk) if u], uouts,
             dict(branches=tuple(unknown_branch(i) for i in range(len(branches)))))
    return [ke], ([ue] if uouts else []), out_uk


def _cond_transpose(cts, index, *ops, branches):
    if _ad.is_undefined_primal(index):
        raise TypeError("cond is not linear in its index")
    lin = [_ad.is_undefined_primal(x) for x in ops]
    new = tuple(transpose_jaxpr(b, lin) for b in branches)
    cts = [_ad.instantiate(c) for c in cts]
    outs = cond_p.bind(index, *[x for x, l in zip(ops, lin) if not l], *cts, branches=new)
    it = iter(outs)
    return [None] + [next(it) if l else None for l in lin]


def _cond_batch(args, dims, *, branches):
    n = _batching.axis_size(args, dims)
    index, ops = args[0], args[1:]
    idim, odims = dims[0], list(dims[1:])
    if idim is None:
        new = tuple(vmap_closed_jaxpr(b, odims, n, out_dims=0)[0] for b in branches)
        outs = cond_p.bind(index, *ops, branches=new)
        return list(outs), [0] * len(outs)
    # a batched predicate: every branch runs on the whole batch, then a select per element
    index = _batching.move_batch_axis(index, idim, 0, n)
    outs_b = [eval_closed(vmap_closed_jaxpr(b, odims, n, out_dims=0)[0], *ops) for b in branches]
    outs = []
    for k, a in enumerate(branches[0].out_avals):
        shape = (n,) + a.shape
        which = _ops.broadcast_in_dim(index, shape, (0,)) if a.shape else index
        outs.append(select_cases(which, [o[k] for o in outs_b], a))
    return outs, [0] * len(outs)


def _cond_dce(e: Eqn, used):
    """Unused outputs leave every branch; operands no branch reads leave the equation."""
    branches = e.params["branches"]
    pruned = [dce_jaxpr(b.jaxpr, used) for b in branches]
    used_in = [any(u[i] for _, u in pruned) for i in range(len(e.invars) - 1)]
    new = tuple(
        ClosedJaxpr(
            Jaxpr(j.constvars, [v for v, u in zip(j.invars, used_in) if u], j.outvars, j.eqns),
            b.consts,
        )
        for (j, _), b in zip(pruned, branches)
    )
    return Eqn(cond_p, [e.invars[0]] + [a for a, u in zip(e.invars[1:], used_in) if u],
               [v for v, u in zip(e.outvars, used) if u], dict(e.params, branches=new))


cond_p.jvp = _cond_jvp
cond_p.dce = _cond_dce
cond_p.transpose = _cond_transpose
cond_p.batch = _cond_batch
cond_p.partial_eval = _cond_partial_eval


# =========================================================================== while

while_p = Primitive("while", multiple_results=True)

WHILE_TRANSPOSE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop.")


@while_p.def_abstract_eval
def _while_abstract(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = split_list(avals, [cond_nconsts, body_nconsts])
    if not all(map(same_types, cond_jaxpr.in_avals, cc + carry)) or len(
        cond_jaxpr.in_avals
    ) != len(cc + carry):
        raise TypeError("while: cond_jaxpr does not take (cond consts, carry)")
    out = cond_jaxpr.out_avals
    if len(out) != 1 or out[0].shape != () or out[0].dtype != np.bool_:
        raise TypeError(
            f"cond_fun must return a boolean scalar, but got output type(s) {list(out)}."
        )
    if (
        len(body_jaxpr.in_avals) != len(bc + carry)
        or not all(map(same_types, body_jaxpr.in_avals, bc + carry))
        or len(body_jaxpr.out_avals) != len(carry)
        or not all(map(same_types, body_jaxpr.out_avals, carry))
    ):
        raise TypeError(
            "while: body_jaxpr must map (body consts, carry) to a carry of the same types"
        )
    return [
        a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(carry, body_jaxpr.out_avals)
    ]


@while_p.def_reference
def _while_reference(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = split_list(args, [cond_nconsts, body_nconsts])
    while bool(eval_jaxpr_reference(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cc, *carry)[0]):
        carry = eval_jaxpr_reference(body_jaxpr.jaxpr, body_jaxpr.consts, *bc, *carry)
    return carry


@while_p.def_kernel
def _while_kernel(ctx, *avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    if HS.loop_in_kernel(ctx, (cond_jaxpr, body_jaxpr), "loop_w",
                         lambda: while_step(cond_jaxpr, body_jaxpr, nc, nb), "while", nc + nb,
                         len(ctx.eqn.outvars),
                         label="while: one kernel loops, state read back per chunk"):
        return
    cond = HS.sub_plan(ctx, (cond_jaxpr,), "wcond", lambda: selectify(cond_jaxpr), "while_cond")
    host_driven = (contains_prim(body_jaxpr, KEEP_BRANCHES)
                   or contains_prim(cond_jaxpr, KEEP_BRANCHES))
    if host_driven:
        body = HS.sub_plan(ctx, (body_jaxpr,), "wbody", lambda: selectify(body_jaxpr),
                           "while_body")
    else:
        body = HS.sub_plan(ctx, (cond_jaxpr, body_jaxpr), "guarded",
                           lambda: guarded_body(cond_jaxpr, body_jaxpr, nc, nb), "while_body")
    HS.while_loop(ctx, cond, body, nc, nb, guarded=not host_driven)


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, init = split_list(primals, [nc, nb])
    _, bct, initt = split_list(tangents, [nc, nb])
    bnz = [_nz(t) for t in bct]
    cnz = [_nz(t) and _ad.is_differentiable(_ad.aval_of(x)) for t, x in zip(initt, init)]
    while True:       # which carries get a nonzero tangent: a fixed point
        _, onz = jvp_jaxpr(body_jaxpr, bnz + cnz)
        new = [
            a or (b and _ad.is_differentiable(_ad.aval_of(x))) for a, b, x in zip(cnz, onz, init)
        ]
        if new == cnz:
            break
        cnz = new
    if not any(cnz):
        return while_p.bind(
            *primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=nc, body_nconsts=nb
        ), [_ad.Zero(_ad.aval_of(x)) for x in init]
    bj, _ = jvp_jaxpr(body_jaxpr, bnz + cnz, instantiate_outs=cnz)
    ncar, nbt, nct = len(init), sum(bnz), sum(cnz)
    # (bconsts, carry, bconst tangents, carry tangents)
    #   -> (bconsts, bconst tangents, carry, carry tangents)
    perm = (list(range(nb)) + list(range(nb + ncar, nb + ncar + nbt)) + list(range(nb, nb + ncar))
            + list(range(nb + ncar + nbt, nb + ncar + nbt + nct)))
    bj = _permute(bj, perm)
    cj = _with_dummies(cond_jaxpr, nc + ncar, [_ad.aval_of(x) for x, z in zip(init, cnz) if z])
    ts = [
        _ad.instantiate(_ad.Zero(_ad.aval_of(x))) if not _nz(t) else t
        for t, x, z in zip(initt, init, cnz)
        if z
    ]
    outs = while_p.bind(
        *cc,
        *bc,
        *[t for t in bct if _nz(t)],
        *init,
        *ts,
        cond_jaxpr=cj,
        body_jaxpr=bj,
        cond_nconsts=nc,
        body_nconsts=nb + nbt,
    )
    it = iter(outs[ncar:])
    return list(outs[:ncar]), [
        next(it) if z else _ad.Zero(_ad.aval_of(x)) for z, x in zip(cnz, init)
    ]


def _while_partial_eval(e: Eqn, uin):
    """Carries that depend only on known values run in a known loop; the unknown side is the
    whole loop again (JAX does the same), so forward-mode linearize works; its transpose
    raises JAX's error."""
    p = e.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_jaxpr, body_jaxpr = p["cond_jaxpr"], p["body_jaxpr"]
    cuk, buk, carry_uk = split_list(uin, [nc, nb])
    nout = len(e.outvars)
    everything = ([], [e], [True] * nout)
    if any(cuk):
        return everything
    while True:
        ouk = partial_eval_jaxpr(body_jaxpr, buk + carry_uk)[2]
        new = [a or b for a, b in zip(carry_uk, ouk)]
        if new == carry_uk:
            break
        carry_uk = new
    if all(carry_uk) or partial_eval_jaxpr(cond_jaxpr, cuk + carry_uk)[2][0]:
        return everything
    known = [not u for u in carry_uk]
    bj, _ = dce_jaxpr(body_jaxpr.jaxpr, known)
    bj = Jaxpr(
        bj.constvars, [v for v, u in zip(bj.invars, buk + carry_uk) if not u], bj.outvars, bj.eqns
    )
    cj, _ = dce_jaxpr(cond_jaxpr.jaxpr)
    cj = Jaxpr(
        cj.constvars,
        cj.invars[:nc] + [v for v, u in zip(cj.invars[nc:], carry_uk) if not u],
        cj.outvars,
        cj.eqns,
    )
    cc, bc, init = split_list(e.invars, [nc, nb])
    ke = Eqn(
        while_p,
        cc + [a for a, u in zip(bc, buk) if not u] + [a for a, u in zip(init, carry_uk) if not u],
        [v for v, u in zip(e.outvars, carry_uk) if not u],
        dict(
            cond_jaxpr=ClosedJaxpr(cj, cond_jaxpr.consts),
            body_jaxpr=ClosedJaxpr(bj, body_jaxpr.consts),
            cond_nconsts=nc,
            body_nconsts=sum(1 for u in buk if not u),
        ),
    )
    ue = Eqn(
        while_p,
        list(e.invars),
        [v if u else Var(v.aval) for v, u in zip(e.outvars, carry_uk)],
        dict(p),
    )
    return [ke], [ue], carry_uk


def _while_transpose(cts, *args, **params):
    raise ValueError(WHILE_TRANSPOSE_ERROR)


def _while_batch(args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    n = _batching.axis_size(args, dims)
    nc, nb = cond_nconsts, body_nconsts
    args = [x if d is None else _batching.move_batch_axis(x, d, 0, n) for x, d in zip(args, dims)]
    dims = [None if d is None else 0 for d in dims]
    cc, bc, init = split_list(args, [nc, nb])
    ccd, bcd, initd = split_list(dims, [nc, nb])
    carry_b = [d is not None for d in initd]
    while True:
        _, od = vmap_closed_jaxpr(body_jaxpr, bcd + [0 if b else None for b in carry_b], n)
        new = [b or d is not None for b, d in zip(carry_b, od)]
        if new == carry_b:
            break
        carry_b = new
    cdims = [0 if b else None for b in carry_b]
    pred_b = vmap_closed_jaxpr(cond_jaxpr, ccd + cdims, n)[1][0] is not None
    if pred_b:
        carry_b = [True] * len(carry_b)
        cdims = [0] * len(carry_b)
    init = [
        _batching.move_batch_axis(x, d, 0, n) if b else x for x, d, b in zip(init, initd, carry_b)
    ]
    bj, _ = vmap_closed_jaxpr(body_jaxpr, bcd + cdims, n, out_dims=cdims)
    cj, (pd,) = vmap_closed_jaxpr(cond_jaxpr, ccd + cdims, n)
    if not pred_b:
        outs = while_p.bind(
            *cc, *bc, *init, cond_jaxpr=cj, body_jaxpr=bj, cond_nconsts=nc, body_nconsts=nb
        )
        return list(outs), cdims
    # a batched predicate: loop while any example's predicate holds; an example whose predicate
    # is false keeps its carry (a select per element)
    cc_avals = [_ad.aval_of(x) for x in cc]
    carry_avals = [_ad.aval_of(x) for x in init]
    bc_avals = [_ad.aval_of(x) for x in bc]

    def any_cond(*xs):
        p = eval_closed(cj, *xs)[0]
        return [_ops.reduce_or(p, (0,))]

    def guarded(*xs):
        cc_, bc_, carry = split_list(xs, [nc, nb])
        p = eval_closed(cj, *cc_, *carry)[0]
        new = eval_closed(bj, *bc_, *carry)
        out = []
        for old, nw, a in zip(carry, new, carry_avals):
            which = _ops.broadcast_in_dim(p, a.shape, (0,)) if a.ndim > 1 else p
            out.append(select_cases(which, [old, nw], a))
        return out

    cond2 = trace_closed(any_cond, cc_avals + carry_avals)
    body2 = trace_closed(guarded, cc_avals + bc_avals + carry_avals)
    outs = while_p.bind(*cc, *cc, *bc, *init, cond_jaxpr=cond2, body_jaxpr=body2, cond_nconsts=nc,
                        body_nconsts=nc + nb)
    return list(outs), [0] * len(outs)


def _while_dce(e: Eqn, used):
    """Carries neither used outside, nor by the predicate, nor by a kept carry are dropped."""
    p = e.params
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cj, bj = p["cond_jaxpr"], p["body_jaxpr"]
    _, cu = dce_jaxpr(cj.jaxpr)
    keep = [a or b for a, b in zip(used, cu[nc:])]
    while True:
        _, bu = dce_jaxpr(bj.jaxpr, keep)
        new = [a or b for a, b in zip(keep, bu[nb:])]
        if new == keep:
            break
        keep = new
    if all(keep):
        return e
    b2, bu = dce_jaxpr(bj.jaxpr, keep)
    b2 = Jaxpr(
        b2.constvars, [v for v, u in zip(b2.invars, bu[:nb] + keep) if u], b2.outvars, b2.eqns
    )
    c2 = Jaxpr(cj.jaxpr.constvars, [v for v, u in zip(cj.jaxpr.invars, cu[:nc] + keep) if u],
               cj.jaxpr.outvars, cj.jaxpr.eqns)
    cc, bc, init = split_list(e.invars, [nc, nb])
    return Eqn(while_p, [a for a, u in zip(cc, cu) if u] + [a for a, u in zip(bc, bu) if u]
               + [a for a, u in zip(init, keep) if u], [v for v, u in zip(e.outvars, keep) if u],
               dict(p, cond_jaxpr=ClosedJaxpr(c2, cj.consts), body_jaxpr=ClosedJaxpr(b2, bj.consts),
                    cond_nconsts=sum(cu[:nc]), body_nconsts=sum(bu[:nb])))


while_p.jvp = _while_jvp
while_p.dce = _while_dce
while_p.transpose = _while_transpose
while_p.batch = _while_batch
while_p.partial_eval = _while_partial_eval


# =========================================================================== scan

scan_p = Primitive("scan", multiple_results=True)


@scan_p.def_abstract_eval
def _scan_abstract(
    *avals, jaxpr, length, reverse, num_consts, num_carry, unroll, _split_transpose=False
):
    consts, carry, xs = split_list(avals, [num_consts, num_carry])
    for x in xs:
        if x.ndim == 0 or x.shape[0] != length:
            raise TypeError(
                f"scan: xs of type {x.str_short()} does not have a leading axis of length {length}"
            )
    want = consts + carry + [x.update(shape=x.shape[1:]) for x in xs]
    if len(jaxpr.in_avals) != len(want) or not all(map(same_types, jaxpr.in_avals, want)):
        raise TypeError("scan: the body does not take (consts, carry, x slices)")
    outs = jaxpr.out_avals
    if len(outs) < num_carry or not all(map(same_types, outs[:num_carry], carry)):
        raise TypeError("scan: the body's carry output does not match its carry input")
    return ([a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(carry, outs)]
            + [a.update(shape=(length,) + a.shape) for a in outs[num_carry:]])


@scan_p.def_reference
def _scan_reference(
    *args, jaxpr, length, reverse, num_consts, num_carry, unroll, _split_transpose=False
):
    consts, carry, xs = split_list(args, [num_consts, num_carry])
    ys = []
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        out = eval_jaxpr_reference(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *[x[t] for x in xs])
        carry, y = out[:num_carry], out[num_carry:]
        ys.append((t, y))
    ys.sort(key=lambda ty: ty[0])
    ny = len(jaxpr.out_avals) - num_carry
    stacked = [np.stack([y[k] for _, y in ys]) if ys else np.zeros((0,) + a.shape, a.dtype)
               for k, a in zip(range(ny), jaxpr.out_avals[num_carry:])]
    return list(carry) + stacked


@scan_p.def_kernel
def _scan_kernel(
    ctx, *avals, jaxpr, length, reverse, num_consts, num_carry, unroll, _split_transpose=False
):
    nc, ncar = num_consts, num_carry
    tag = (length, reverse, nc, ncar, unroll)
    whole = HS.memo(ctx, (jaxpr,), ("restructure",) + tag,
                    lambda: restructure_scan(jaxpr, length, reverse, nc, ncar, unroll))
    if whole is not None:
        sub = HS.sub_plan(ctx, (jaxpr,), ("restructured",) + tag, lambda: whole, "scan")
        HS.sub_plan_step(ctx, sub,
                         label="scan: restructured (hoisted matmuls, accumulators summed after)")
        return
    if HS.loop_in_kernel(ctx, (jaxpr,), "loop_s", lambda: selectify(jaxpr), "scan", nc, ncar,
                         label="scan: one kernel loops over the steps",
                         length=length, reverse=reverse):
        return
    counters = counter_carries(jaxpr.jaxpr, nc, ncar)
    HS.recorded_scan(
        ctx, avals, jaxpr, length, reverse, nc, ncar, unroll, counters,
        wrapper=lambda xs_mis, ys_mis, k: scan_wrapper(
            jaxpr, length, nc, ncar, counters, xs_mis, ys_mis, k),
        counter_values=lambda dtype: counter_values(dtype, length))


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry, unroll,
              _split_transpose=False):
    nc, ncar = num_consts, num_carry
    consts, init, xs = split_list(primals, [nc, ncar])
    ct, it, xt = split_list(tangents, [nc, ncar])
    cnz, xnz = [_nz(t) for t in ct], [_nz(t) for t in xt]
    dif = [_ad.is_differentiable(_ad.aval_of(x)) for x in init]
    carry_nz = [_nz(t) and d for t, d in zip(it, dif)]
    while True:
        _, onz = jvp_jaxpr(jaxpr, cnz + carry_nz + xnz)
        new = [a or (b and d) for a, b, d in zip(carry_nz, onz[:ncar], dif)]
        if new == carry_nz:
            break
        carry_nz = new
    ny = len(jaxpr.out_avals) - ncar
    jj, onz = jvp_jaxpr(jaxpr, cnz + carry_nz + xnz, instantiate_outs=carry_nz + [False] * ny)
    ynz = onz[ncar:]
    nx = len(xs)
    nct, ncart, nxt, nyt = sum(cnz), sum(carry_nz), sum(xnz), sum(ynz)
    # invars (consts, carry, xs, ct, carry_t, xs_t) -> (consts, ct, carry, carry_t, xs, xs_t)
    o = [0, nc, nc + ncar, nc + ncar + nx, nc + ncar + nx + nct, nc + ncar + nx + nct + ncart]
    rng = lambda a, n: list(range(a, a + n))  # noqa: E731
    perm = (
        rng(o[0], nc)
        + rng(o[3], nct)
        + rng(o[1], ncar)
        + rng(o[4], ncart)
        + rng(o[2], nx)
        + rng(o[5], nxt)
    )
    # outvars (carry, ys, carry_t, ys_t) -> (carry, carry_t, ys, ys_t)
    operm = rng(0, ncar) + rng(ncar + ny, ncart) + rng(ncar, ny) + rng(ncar + ny + ncart, nyt)
    jj = _permute(jj, perm, operm)
    its = [
        t if _nz(t) else _ad.instantiate(_ad.Zero(_ad.aval_of(x)))
        for t, x, z in zip(it, init, carry_nz)
        if z
    ]
    outs = scan_p.bind(
        *consts,
        *[t for t in ct if _nz(t)],
        *init,
        *its,
        *xs,
        *[t for t in xt if _nz(t)],
        jaxpr=jj,
        length=length,
        reverse=reverse,
        num_consts=nc + nct,
        num_carry=ncar + ncart,
        unroll=unroll,
        _split_transpose=_split_transpose,
    )
    carry, carry_t, ys, ys_t = split_list(outs, [ncar, ncart, ny])
    ct_it, yt_it = iter(carry_t), iter(ys_t)
    out_avals = scan_p.abstract_eval(*[_ad.aval_of(x) for x in primals], jaxpr=jaxpr, length=length,
                                     reverse=reverse, num_consts=nc, num_carry=ncar, unroll=unroll)
    tans = ([next(ct_it) if z else _ad.Zero(a) for z, a in zip(carry_nz, out_avals[:ncar])]
            + [next(yt_it) if z else _ad.Zero(a) for z, a in zip(ynz, out_avals[ncar:])])
    return list(carry) + list(ys), tans


def _scan_partial_eval(e: Eqn, uin):
    """Known scan: the known carries and ys, plus the residuals each step saves, stacked as
    extra ys; unknown scan: reads them as extra xs.  Residuals that are loop-invariant body
    consts are passed as consts instead of stacked."""
    p = e.params
    nc, ncar, length = p["num_consts"], p["num_carry"], p["length"]
    jaxpr = p["jaxpr"]
    cuk, carry_uk, xuk = split_list(uin, [nc, ncar])
    nout = len(e.outvars)
    ny = nout - ncar
    while True:
        ouk = partial_eval_jaxpr(jaxpr, cuk + carry_uk + xuk)[2]
        new = [a or b for a, b in zip(carry_uk, ouk[:ncar])]
        if new == carry_uk:
            break
        carry_uk = new
    known, unknown, out_uk, nres = partial_eval_jaxpr(jaxpr, cuk + carry_uk + xuk,
                                                     instantiate=carry_uk + [False] * ny)
    if all(out_uk):
        return [], [e], [True] * nout
    kj = known.jaxpr
    nk_out = len(kj.outvars) - nres
    res = kj.outvars[nk_out:]
    const_pos = {v.id: i for i, v in enumerate(jaxpr.jaxpr.invars[:nc])}
    inv = [i for i, r in enumerate(res) if r.id in const_pos]        # loop-invariant residuals
    stk = [i for i in range(nres) if i not in inv]
    nkc = sum(1 for u in cuk if not u)
    nkcar = sum(1 for u in carry_uk if not u)
    known2 = ClosedJaxpr(
        Jaxpr(kj.constvars, kj.invars, list(kj.outvars[:nk_out]) + [res[i] for i in stk], kj.eqns),
        known.consts,
    )
    res_avals = [r.aval for r in res]
    stk_vars = [Var(res_avals[i].update(shape=(length,) + res_avals[i].shape)) for i in stk]
    consts, init, xs = split_list(e.invars, [nc, ncar])
    ke = Eqn(
        scan_p,
        [a for a, u in zip(consts, cuk) if not u]
        + [a for a, u in zip(init, carry_uk) if not u]
        + [a for a, u in zip(xs, xuk) if not u],
        [v for v, u in zip(e.outvars, out_uk) if not u] + stk_vars,
        dict(p, jaxpr=known2, num_consts=nkc, num_carry=nkcar),
    )
    # unknown body invars: (res..., uk consts, uk carry, uk xs) ->
    #                      (invariant res, uk consts, uk carry, uk xs, stacked res)
    nukc = sum(cuk)
    nukcar = sum(carry_uk)
    nukx = sum(xuk)
    perm = (inv + list(range(nres, nres + nukc + nukcar + nukx)) + stk)
    unknown2 = _permute(unknown, perm)
    ue = Eqn(
        scan_p,
        [consts[const_pos[res[i].id]] for i in inv]
        + [a for a, u in zip(consts, cuk) if u]
        + [a for a, u in zip(init, carry_uk) if u]
        + [a for a, u in zip(xs, xuk) if u]
        + stk_vars,
        [v for v, u in zip(e.outvars, out_uk) if u],
        dict(p, jaxpr=unknown2, num_consts=len(inv) + nukc, num_carry=nukcar),
    )
    return [ke], [ue], out_uk


def _scan_transpose(cts, *args, jaxpr, length, reverse, num_consts, num_carry, unroll,
                    _split_transpose=False):
    nc, ncar = num_consts, num_carry
    consts, init, xs = split_list(args, [nc, ncar])
    c_lin = [_ad.is_undefined_primal(x) for x in consts]
    x_lin = [_ad.is_undefined_primal(x) for x in xs]
    # carries are linear (a known value passed as a carry of a linear scan, e.g. an
    # instantiated zero tangent, is treated like one; its cotangent is dropped)
    tj = transpose_jaxpr(jaxpr, c_lin + [True] * ncar + x_lin)
    nl_consts = [x for x, l in zip(consts, c_lin) if not l]
    nl_xs = [x for x, l in zip(xs, x_lin) if not l]
    lc_avals = [x.aval for x, l in zip(consts, c_lin) if l]
    carry_avals = jaxpr.in_avals[nc:nc + ncar]
    ys_avals = jaxpr.out_avals[ncar:]
    nlx_avals = [a for a, l in zip(jaxpr.in_avals[nc + ncar:], x_lin) if not l]
    nnl, nlc = len(nl_consts), len(lc_avals)
    ct_carry, ct_ys = cts[:ncar], cts[ncar:]
    ct_carry = [_ad.instantiate(c) for c in ct_carry]
    ct_ys = [_ad.instantiate(c) for c in ct_ys]

    def body(*a):
        nlc_, acc, cc, cy, nlx = split_list(a, [nnl, nlc, ncar, len(ys_avals)])
        outs = eval_closed(tj, *nlc_, *nlx, *cc, *cy)
        g_c, g_carry, g_x = split_list(outs, [nlc, ncar])
        return [_ops.add(x, y) for x, y in zip(acc, g_c)] + list(g_carry) + list(g_x)

    bj = trace_closed(
        body,
        [_ad.aval_of(x) for x in nl_consts]
        + lc_avals
        + list(carry_avals)
        + list(ys_avals)
        + nlx_avals,
    )
    outs = scan_p.bind(
        *nl_consts,
        *[_zeros_like_aval(a) for a in lc_avals],
        *ct_carry,
        *ct_ys,
        *nl_xs,
        jaxpr=bj,
        length=length,
        reverse=not reverse,
        num_consts=nnl,
        num_carry=nlc + ncar,
        unroll=unroll,
        _split_transpose=_split_transpose,
    )
    g_c, g_carry, g_x = split_list(outs, [nlc, ncar])
    gc, gx = iter(g_c), iter(g_x)
    return ([next(gc) if l else None for l in c_lin]
            + [g if _ad.is_undefined_primal(x) else None for g, x in zip(g_carry, init)]
            + [next(gx) if l else None for l in x_lin])


def _scan_batch(args, dims, *, jaxpr, length, reverse, num_consts, num_carry, unroll,
                _split_transpose=False):
    n = _batching.axis_size(args, dims)
    nc, ncar = num_consts, num_carry
    consts, init, xs = split_list(args, [nc, ncar])
    cd, idims, xd = split_list(dims, [nc, ncar])
    consts = [x if d is None else _batching.move_batch_axis(x, d, 0, n) for x, d in zip(consts, cd)]
    xs = [x if d is None else _batching.move_batch_axis(x, d, 1, n) for x, d in zip(xs, xd)]
    cdims = [None if d is None else 0 for d in cd]
    xdims = [None if d is None else 0 for d in xd]
    carry_b = [d is not None for d in idims]
    while True:
        _, od = vmap_closed_jaxpr(jaxpr, cdims + [0 if b else None for b in carry_b] + xdims, n)
        new = [b or d is not None for b, d in zip(carry_b, od[:ncar])]
        if new == carry_b:
            break
        carry_b = new
    kdims = [0 if b else None for b in carry_b]
    init = [
        _batching.move_batch_axis(x, d, 0, n) if b else x for x, d, b in zip(init, idims, carry_b)
    ]
    in_dims = cdims + kdims + xdims
    _, od = vmap_closed_jaxpr(jaxpr, in_dims, n)
    ydims = [None if d is None else 0 for d in od[ncar:]]
    bj, _ = vmap_closed_jaxpr(jaxpr, in_dims, n, out_dims=kdims + ydims)
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=bj, length=length, reverse=reverse, num_consts=nc,
                       num_carry=ncar, unroll=unroll, _split_transpose=_split_transpose)
    return list(outs), kdims + [None if d is None else 1 for d in ydims]


def _scan_dce(e: Eqn, used):
    """Unused ys leave the body; so do carries that no kept output depends on."""
    p = e.params
    nc, ncar = p["num_consts"], p["num_carry"]
    j = p["jaxpr"]
    keep, used_ys = list(used[:ncar]), list(used[ncar:])
    while True:
        _, ui = dce_jaxpr(j.jaxpr, keep + used_ys)
        new = [a or b for a, b in zip(keep, ui[nc:nc + ncar])]
        if new == keep:
            break
        keep = new
    j2, ui = dce_jaxpr(j.jaxpr, keep + used_ys)
    in_keep = ui[:nc] + keep + ui[nc + ncar:]
    j2 = Jaxpr(j2.constvars, [v for v, u in zip(j2.invars, in_keep) if u], j2.outvars, j2.eqns)
    return Eqn(
        scan_p,
        [a for a, u in zip(e.invars, in_keep) if u],
        [v for v, u in zip(e.outvars, keep + used_ys) if u],
        dict(p, jaxpr=ClosedJaxpr(j2, j.consts), num_consts=sum(ui[:nc]), num_carry=sum(keep)),
    )


scan_p.jvp = _scan_jvp
scan_p.dce = _scan_dce
scan_p.transpose = _scan_transpose
scan_p.batch = _scan_batch
scan_p.partial_eval = _scan_partial_eval
