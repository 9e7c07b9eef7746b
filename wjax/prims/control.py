"""Control flow primitives: ``cond``, ``while`` and ``scan`` (API in ``wjax/lax/control.py``).

Each primitive holds its bodies as ClosedJaxpr parameters (printed nested by ``make_jaxpr``)
and has, side by side: abstract eval, a NumPy reference (``eval_jaxpr_reference``), the
kernel rule (below), jvp, partial eval (linearize), transpose and batching rules.

    cond   operands: index:i32[], *operands                 params: branches
    while  operands: *cond_consts, *body_consts, *carry     params: cond_jaxpr, body_jaxpr,
                                                                    cond_nconsts, body_nconsts
    scan   operands: *consts, *carry, *xs                   params: jaxpr, length, reverse,
                                                                    num_consts, num_carry, unroll

DESIGN — how control flow runs on the device (the ``kernel`` rules below)
-------------------------------------------------------------------------
Every control-flow equation lowers to one plan *host step* (``KernelContext.host_step``): its
sub-jaxprs are compiled ONCE, at lowering time, into sub-plans (``SubPlan``), and at run time
the step records the sub-plans' dispatches into the same command stream as the rest of the
call, feeding device buffers from one sub-plan run to the next.  Nothing is read back unless
a branch or loop exit must be decided on the host.  The choice between the loop forms is
described in ``wjax/backend/loops.py``:

* Scan restructuring (``_restructure_scan``) comes first: a scan whose body has
  *accumulator carries* (``c' = c + d``, ``d`` independent of ``c``, used nowhere else: the
  weight-gradient sums of a transposed scan) or carry-independent matmuls/reductions worth
  moving (2^20 element-steps or more) is compiled as an equivalent program around an inner
  scan: the hoisted ops run once before it, batched over the steps, and read as extra
  ``xs``; the accumulators' terms are emitted as extra ``ys`` (a product's operands, when
  ``d`` is a ``dot_general``) and summed after the loop by one reduction (one ``dot_general``
  with the step axis contracted); ``ys`` that are an ``xs`` slice, a repeat, or the incoming
  carry (when the outgoing one is also a ``ys``) are taken from outside the loop.  The
  inner scan then goes through the forms below (it is never restructured again).
* ``scan`` and ``while`` first try to run as a loop INSIDE ONE KERNEL (``_in_kernel``,
  ``wjax/backend/loops.py``): per element for elementwise bodies, in one workgroup for small
  bodies with reductions and matmuls.  The bullets below are the recorded form, for the rest.
* ``scan`` records ``length`` runs of the body plan with no readback at all.  The carry
  buffers one run returns are the next run's inputs; each step's slice of ``xs`` is a small
  buffer-to-buffer copy (a few us on lavapipe, against ~65 us for a dispatch) and each step's
  ``ys`` slice is copied into place.  Slices whose byte size is not a multiple of 4 (odd
  float16 rows) are read with ``dynamic_slice`` and written with ``dynamic_update_slice``
  inside a wrapper jaxpr that takes the step index instead.  A loop counter carry
  (``i -> i + 1``, as in ``fori_loop``) is not computed by a dispatch per step: its values
  ``init + s`` are precomputed once and copied in like an ``xs`` slice.  ``unroll=k`` compiles
  k steps into one sub-plan, so their elementwise work fuses (``fori_loop(..., unroll=8)``
  runs 8 small steps per dispatch).  The host submits about every 64 recorded dispatches so
  the device starts while the rest is recorded.
* ``while`` records its body in chunks with the predicate evaluated on the device: the body is
  compiled *guarded*, ``carry' = select(cond(carry), body(carry), carry)``, so iterations run
  after the predicate turned false are no-ops.  A chunk of K guarded iterations is recorded,
  then the predicate of the carry is read back once; K doubles from 1 up to 64, so a loop of
  n iterations costs about log2(n) + n/64 readbacks instead of n host round trips.  From
  K = 8 on, the host records chunk k + 1 while the device runs chunk k and reads chunk k's
  predicate (submitted) before submitting chunk k + 1, so recording and running overlap (at
  the price of at most one chunk of no-op iterations after the exit).  A body
  that holds another ``while`` (whose extra guarded runs could spin on garbage) falls back to
  a host-driven loop: one predicate readback per iteration.
* ``cond`` with a traced index picks its branch on the device: a gate kernel
  (``shaders/cond_gate.wgsl``) reads the index and writes the workgroup counts of every
  branch's kernels, their static grids for the chosen branch and zero for the others; every
  branch's plan is then recorded with *indirect* dispatches reading those counts, and
  ``select_n`` on the clamped index picks the outputs.  Nested ``cond``s in a branch become
  selects first.  A branch whose plan keeps a host step (a ``while`` or ``scan``) falls back
  to reading the index back (4 bytes) and recording the chosen branch's plan; a literal index
  records its branch directly.  Inside a loop body (scan/while) a ``cond`` whose branches
  hold no ``while`` is rewritten to run every branch and ``select_n`` the results, so loops
  stay free of readbacks.
* Eager calls take the same path: the primitive runs as a one-equation jaxpr (plans cached
  by the structure of the jaxprs it carries).
"""
from __future__ import annotations

import numpy as np

from ..backend import wgsl as W
from ..backend.execute import Bound, Executable, nbytes_of, upload
from ..backend.loops import in_kernel_loop
from ..backend.lower import HostStep, cse_and_fold, flatten_closed
from ..core import caches
from ..core import ops as _ops
from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, ShapedArray, Var, subjaxprs
from ..core.primitive import Primitive
from ..core.tracing import Tracer, eval_jaxpr, trace_flat
from ..transforms import ad as _ad
from ..transforms import batching as _batching
from ..transforms.dce import dce_closed, dce_jaxpr, has_effects
from ..transforms.jvp import jvp_jaxpr
from ..transforms.partial_eval import partial_eval_jaxpr
from ..transforms.transpose import transpose_jaxpr
from ..transforms.vmap import batch_eval, vmap_closed_jaxpr
from .elementwise import select_n_p



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


def _trace(fun, avals) -> ClosedJaxpr:
    """Traces ``fun(*tracers) -> list`` into a ClosedJaxpr (rules build bodies with it; they
    must close over no tracer of an enclosing trace)."""
    closed = trace_flat(fun, list(avals))
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise AssertionError("a control-flow rule closed over a traced value")
    return closed


def _eval(closed: ClosedJaxpr, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


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


def _split(xs, *sizes):
    out, i = [], 0
    for n in sizes:
        out.append(list(xs[i:i + n]))
        i += n
    out.append(list(xs[i:]))
    return out


def _nz(t) -> bool:
    return not isinstance(t, _ad.Zero)


def _same_types(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _zeros_like_aval(aval):
    return _ad.instantiate(_ad.Zero(aval))


# a cond in a loop body becomes a select of all its branches unless one holds these: a
# while (its extra guarded runs could spin) or a print (it would print for untaken branches)
_KEEP_BRANCHES = ("while", "debug_callback", "io_callback")
# primitives that lower to host steps, which the device-side cond (indirect dispatch) can't skip
_HOST_STEPS = ("while", "scan", "debug_callback", "pure_callback", "io_callback")


def contains_prim(closed, names) -> bool:
    """Whether a jaxpr (or any jaxpr nested in it) binds one of the primitives ``names``."""
    j = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    return any(e.prim.name in names or any(contains_prim(s, names) for s in subjaxprs(e.params))
               for e in j.eqns)


# --------------------------------------------------------------------------- sub-plans

_subplans = caches.Memo(512)


class SubPlan:
    """A sub-jaxpr compiled once, at lowering time, for the equation's target: ``run(rt,
    buffers)`` records it and returns its output buffers."""

    def __init__(self, closed: ClosedJaxpr, target, name: str):
        self.bound = Bound(Executable(closed.jaxpr, target, name), list(closed.consts))

    plan = property(lambda self: self.bound.exe.plan)

    def run(self, rt, ins, indirect=None, out_buffers=None):
        return self.bound.run(rt, ins, indirect, out_buffers)


def _memo(ctx, objs: tuple, tag, make):
    """``make()``, cached per (the jaxprs ``objs`` by identity, ``tag``, the target):
    ``lower_jaxpr`` may plan an equation more than once."""
    return _subplans.get_or_make(tuple(objs), (tag, ctx.target.key()), make)


def _sub(ctx, objs: tuple, tag, build, name: str) -> SubPlan:
    """The cached sub-plan of the jaxpr ``build()`` (made from ``objs``)."""
    return _memo(ctx, objs, tag, lambda: SubPlan(build(), ctx.target, name))


def _eqn_io(ctx):
    """The equation's operand keys, its output keys and ``split(rt, buffers) -> (ins, outs)``;
    literal operands become constant buffers (uploaded on the first run)."""
    keys, src = [], []
    for a in ctx.eqn.invars:
        if isinstance(a, Lit):
            src.append(np.asarray(a.val, a.aval.dtype))
        else:
            src.append(len(keys))
            keys.append(ctx.lowering.key_of(a))
    out_keys = [ctx.out_key(j) for j in range(len(ctx.eqn.outvars))]
    n = len(keys)
    lits: dict = {}

    def split(rt, bufs):
        ins = []
        for i, s in enumerate(src):
            if isinstance(s, int):
                ins.append(bufs[s])
            else:
                if (rt.index, i) not in lits:       # per device
                    lits[(rt.index, i)] = upload(rt, s)
                ins.append(lits[(rt.index, i)])
        return ins, list(bufs[n:])

    return keys, out_keys, split


def _copy(rt, src, dst, nbytes, src_offset=0, dst_offset=0):
    if nbytes and not (src is dst and src_offset == dst_offset):
        rt.copy(src, dst, nbytes, src_offset=src_offset, dst_offset=dst_offset)


def _read_scalar(rt, buf) -> int:
    return int(np.frombuffer(rt.read(buf, 4), np.int32)[0])


def selectify(closed: ClosedJaxpr) -> ClosedJaxpr:
    """For loop bodies: each top-level ``cond`` whose branches hold no ``while`` runs all its
    branches and selects the results (``select_n`` on the index), so a loop records no
    readback for it."""
    if not any(
        e.prim is cond_p and not any(contains_prim(b, _KEEP_BRANCHES) for b in e.params["branches"])
        for e in closed.jaxpr.eqns
    ):
        return closed
    j = closed.jaxpr

    def fun(*args):
        env: dict = {}

        def read(a):
            return a.operand if isinstance(a, Lit) else env[a.id]

        for v, c in zip(j.constvars, closed.consts):
            env[v.id] = c
        for v, x in zip(j.invars, args):
            env[v.id] = x
        for e in j.eqns:
            ins = [read(a) for a in e.invars]
            brs = e.params.get("branches", ())
            if e.prim is cond_p and not any(contains_prim(b, _KEEP_BRANCHES) for b in brs):
                outs_b = [_eval(b, *ins[1:]) for b in brs]
                outs = [outs_b[0][k] if len(brs) == 1 else
                        _select_n(ins[0], [o[k] for o in outs_b], v.aval)
                        for k, v in enumerate(e.outvars)]
            else:
                outs = e.prim.bind(*ins, **e.params)
                outs = list(outs) if e.prim.multiple_results else [outs]
            for v, o in zip(e.outvars, outs):
                env[v.id] = o
        return [read(a) for a in j.outvars]

    return _trace(fun, [v.aval for v in j.invars])


def _select_n(which, cases, aval):
    cases = [
        c if not isinstance(c, np.ndarray) or c.ndim else np.asarray(c, aval.dtype) for c in cases
    ]
    return select_n_p.bind(which, *cases)


# =========================================================================== cond

cond_p = Primitive("cond", multiple_results=True)


@cond_p.def_abstract_eval
def _cond_abstract(index, *ops, branches):
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond index must be an int32 scalar, got {index.str_short()}")
    if not branches:
        raise TypeError("cond needs at least one branch")
    for i, b in enumerate(branches):
        if len(b.in_avals) != len(ops) or not all(map(_same_types, b.in_avals, ops)):
            raise TypeError(
                f"cond branch {i} takes ({', '.join(a.str_short() for a in b.in_avals)}) "
                f"but the operands are ({', '.join(a.str_short() for a in ops)})"
            )
        if len(b.out_avals) != len(branches[0].out_avals) or not all(
                map(_same_types, b.out_avals, branches[0].out_avals)):
            raise TypeError("cond branches must have equal output types")
    return list(branches[0].out_avals)


@cond_p.def_reference
def _cond_reference(index, *ops, branches):
    i = int(np.clip(int(index), 0, len(branches) - 1))
    return eval_jaxpr_reference(branches[i].jaxpr, branches[i].consts, *ops)


@cond_p.def_kernel
def _cond_kernel(ctx, *avals, branches):
    keys, out_keys, split = _eqn_io(ctx)
    nbytes = [nbytes_of(v.aval) for v in ctx.eqn.outvars]
    idx_atom = ctx.eqn.invars[0]
    n = len(branches)
    static = (
        0
        if n == 1
        else int(np.clip(int(idx_atom.val), 0, n - 1))
        if isinstance(idx_atom, Lit)
        else None
    )
    picked, label = None, "cond: a gate kernel picks the branch; all branches recorded indirect"
    if static is None and not any(contains_prim(b, _HOST_STEPS) for b in branches):
        picked = _device_cond(ctx, branches, idx_atom.aval)
    if picked is None:
        label = (
            "cond: read the index back, record the branch"
            if static is None
            else "cond: literal index"
        )
        subs = [_sub(ctx, (b,), "cond", lambda b=b: b, "cond_branch") for b in branches]

        def picked(rt, index, ops, outs):
            i = static if static is not None else min(max(_read_scalar(rt, index), 0), n - 1)
            return subs[i].run(rt, ops)

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        for r, o, nb in zip(picked(rt, ins[0], ins[1:], outs), outs, nbytes):
            _copy(rt, r, o, nb)

    ctx.host_step(run, keys, out_keys, label=label)


def _device_cond(ctx, branches, index_aval):
    """``run(rt, index, operands, results) -> outputs`` picking the branch on the device: a
    gate kernel writes the indirect dispatch arguments of every branch's kernels (zero
    workgroups outside the chosen branch), every branch is recorded with them, and
    ``select_n`` on the index writes the outputs (into ``results``).  None when a branch's
    plan holds a host step."""
    def flat(b):            # nested conds become selects, so the branch plan is all kernels
        while (s := selectify(b)) is not b:
            b = s
        return b
    subs = [_sub(ctx, (b,), "cond_dev", lambda b=b: flat(b), "cond_branch") for b in branches]
    plans = [s.plan for s in subs]
    if any(isinstance(d, HostStep) for p in plans for d in p.steps):
        return None
    n, out_avals = len(branches), list(branches[0].out_avals)

    def build_select():
        def f(i, *outs):
            i = _ops.clamp(np.int32(0), i, np.int32(n - 1))
            return [_select_n(i, list(outs[j::len(out_avals)]), a) for j, a in enumerate(out_avals)]
        return _trace(f, [index_aval] + out_avals * n)

    sel = _sub(
        ctx, (), ("cond_select", n, index_aval, tuple(out_avals)), build_select, "cond_select"
    )
    table = [
        tuple(d.grid) + (1,) * (3 - len(d.grid)) + (b,)
        for b, p in enumerate(plans)
        for d in p.steps
    ]
    first = np.cumsum([0] + [len(p.steps) for p in plans]).tolist()
    gate = W.render("cond_gate.wgsl", SLOTS=len(table), LAST=n - 1) if table else None
    made: dict = {}     # the gate's table and the indirect arguments, per device, on first run

    def run(rt, index, ops, results):
        if table:
            bufs = made.get(rt.index)
            if bufs is None:
                bufs = made[rt.index] = [upload(rt, np.array(table, np.uint32)),
                                         rt.alloc(12 * len(table), indirect=True)]
            tab, args = bufs
            rt.dispatch(gate, [index, tab, args], (-(-len(table) // 64), 1, 1))
        outs = [o for s, f in zip(subs, first)
                for o in s.run(rt, ops, (bufs[1], f) if table else None)]
        return sel.run(rt, [index] + outs, out_buffers=results)
    return run


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
            outs = _eval(known, *xs)
            mine = outs[nk:]
            res = []
            for j, r in enumerate(res_avals):
                res.extend(mine if j == i else [_zeros_like_aval(a) for a in r])
            return list(outs[:nk]) + res
        return _trace(f, known_ops_avals)

    def unknown_branch(i):
        unknown = splits[i][1]
        start = sum(len(r) for r in res_avals[:i])

        def f(*xs):
            res, ops = xs[:len(all_res)], xs[len(all_res):]
            return _eval(unknown, *res[start:start + len(res_avals[i])], *ops)
        return _trace(f, all_res + uk_ops_avals)

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
    outs_b = [_eval(vmap_closed_jaxpr(b, odims, n, out_dims=0)[0], *ops) for b in branches]
    outs = []
    for k, a in enumerate(branches[0].out_avals):
        shape = (n,) + a.shape
        which = _ops.broadcast_in_dim(index, shape, (0,)) if a.shape else index
        outs.append(_select_n(which, [o[k] for o in outs_b], a))
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
    cc, bc, carry = _split(avals, cond_nconsts, body_nconsts)
    if not all(map(_same_types, cond_jaxpr.in_avals, cc + carry)) or len(
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
        or not all(map(_same_types, body_jaxpr.in_avals, bc + carry))
        or len(body_jaxpr.out_avals) != len(carry)
        or not all(map(_same_types, body_jaxpr.out_avals, carry))
    ):
        raise TypeError(
            "while: body_jaxpr must map (body consts, carry) to a carry of the same types"
        )
    return [
        a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(carry, body_jaxpr.out_avals)
    ]


@while_p.def_reference
def _while_reference(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = _split(args, cond_nconsts, body_nconsts)
    while bool(eval_jaxpr_reference(cond_jaxpr.jaxpr, cond_jaxpr.consts, *cc, *carry)[0]):
        carry = eval_jaxpr_reference(body_jaxpr.jaxpr, body_jaxpr.consts, *bc, *carry)
    return carry


def _guarded_body(cond_jaxpr, body_jaxpr, nc, nb):
    """``(cond consts, body consts, carry) -> select(cond(carry), body(carry), carry)``."""
    avals = cond_jaxpr.in_avals[:nc] + body_jaxpr.in_avals

    def f(*xs):
        cc, bc, carry = _split(xs, nc, nb)
        p = _eval(cond_jaxpr, *cc, *carry)[0]
        new = _eval(body_jaxpr, *bc, *carry)
        return [
            _select_n(p, [old, nw], v.aval)
            for old, nw, v in zip(carry, new, body_jaxpr.jaxpr.outvars)
        ]

    return selectify(_trace(f, avals))


MAX_CHUNK = 64
SPECULATE = 8       # from chunks of this size on, record one chunk ahead of the predicate


def _read_submitted(rt, buf) -> int:
    """Reads a 4-byte value written by work already submitted, WITHOUT submitting the work
    recorded since: the host records the next chunk while the device runs this one."""
    return int(np.frombuffer(rt.read_submitted(buf, 4), np.int32)[0])


def _in_kernel(ctx, objs, tag, build_step, kind, n_consts, n_carry, **kw):
    """The loop as one WGSL kernel (``wjax/backend/loops.py``) when its body qualifies;
    cached like a sub-plan (a kernel rule may be planned more than once)."""
    return _memo(ctx, objs, (tag, kind, n_consts, n_carry, tuple(sorted(kw.items()))),
                 lambda: in_kernel_loop(build_step(), kind, n_consts, n_carry, ctx.target, **kw))


def _while_step(cond_jaxpr, body_jaxpr, nc, nb):
    """``(cond consts, body consts, carry) -> [pred(carry), *body(carry)]``."""
    cj, bj = selectify(cond_jaxpr), selectify(body_jaxpr)

    def f(*xs):
        cc, bc, carry = _split(xs, nc, nb)
        return [_eval(cj, *cc, *carry)[0]] + list(_eval(bj, *bc, *carry))
    return _trace(f, cond_jaxpr.in_avals[:nc] + body_jaxpr.in_avals)


@while_p.def_kernel
def _while_kernel(ctx, *avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    keys, out_keys, split = _eqn_io(ctx)
    nc, nb = cond_nconsts, body_nconsts
    nbytes = [nbytes_of(v.aval) for v in ctx.eqn.outvars]
    ncar = len(ctx.eqn.outvars)
    fused = _in_kernel(ctx, (cond_jaxpr, body_jaxpr), "loop_w",
                       lambda: _while_step(cond_jaxpr, body_jaxpr, nc, nb), "while", nc + nb, ncar)
    if fused is not None:
        def run_fused(rt, bufs):
            ins, outs = split(rt, bufs)
            fused.run(rt, ins[:nc + nb], ins[nc + nb:], [], outs, [])

        ctx.host_step(
            run_fused,
            keys,
            out_keys,
            label="while: one kernel loops, state read back per chunk",
            wgsl=fused.wgsl,
        )
        return
    cond_sub = _sub(ctx, (cond_jaxpr,), "wcond", lambda: selectify(cond_jaxpr), "while_cond")
    host_driven = (contains_prim(body_jaxpr, _KEEP_BRANCHES)
                   or contains_prim(cond_jaxpr, _KEEP_BRANCHES))
    if host_driven:
        body_sub = _sub(ctx, (body_jaxpr,), "wbody", lambda: selectify(body_jaxpr), "while_body")
    else:
        body_sub = _sub(ctx, (cond_jaxpr, body_jaxpr), "guarded",
                        lambda: _guarded_body(cond_jaxpr, body_jaxpr, nc, nb), "while_body")

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        cc, bc, carry = _split(ins, nc, nb)
        if host_driven:
            while _read_scalar(rt, cond_sub.run(rt, cc + carry)[0]):
                carry = body_sub.run(rt, bc + carry)
        else:
            k, prev = 1, None
            while True:
                for _ in range(k):
                    carry = body_sub.run(rt, cc + bc + carry)
                p = cond_sub.run(rt, cc + carry)[0]
                if k < SPECULATE:
                    if not _read_scalar(rt, p):
                        break
                else:
                    # the device runs chunk n while the host records chunk n + 1; the predicate
                    # of chunk n is read before chunk n + 1 is submitted (a no-op if it was false)
                    if prev is not None and not _read_submitted(rt, prev):
                        break
                    rt.flush()
                    prev = p
                k = min(2 * k, MAX_CHUNK)
        for c, o, n in zip(carry, outs, nbytes):
            _copy(rt, c, o, n)

    ctx.host_step(
        run, keys, out_keys, label="while: guarded body in chunks, predicate read back per chunk"
    )


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nc, nb = cond_nconsts, body_nconsts
    cc, bc, init = _split(primals, nc, nb)
    _, bct, initt = _split(tangents, nc, nb)
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
    cuk, buk, carry_uk = _split(uin, nc, nb)
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
    cc, bc, init = _split(e.invars, nc, nb)
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
    cc, bc, init = _split(args, nc, nb)
    ccd, bcd, initd = _split(dims, nc, nb)
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
        p = _eval(cj, *xs)[0]
        return [_ops.reduce_or(p, (0,))]

    def guarded(*xs):
        cc_, bc_, carry = _split(xs, nc, nb)
        p = _eval(cj, *cc_, *carry)[0]
        new = _eval(bj, *bc_, *carry)
        out = []
        for old, nw, a in zip(carry, new, carry_avals):
            which = _ops.broadcast_in_dim(p, a.shape, (0,)) if a.ndim > 1 else p
            out.append(_select_n(which, [old, nw], a))
        return out

    cond2 = _trace(any_cond, cc_avals + carry_avals)
    body2 = _trace(guarded, cc_avals + bc_avals + carry_avals)
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
    cc, bc, init = _split(e.invars, nc, nb)
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
    consts, carry, xs = _split(avals, num_consts, num_carry)
    for x in xs:
        if x.ndim == 0 or x.shape[0] != length:
            raise TypeError(
                f"scan: xs of type {x.str_short()} does not have a leading axis of length {length}"
            )
    want = consts + carry + [x.update(shape=x.shape[1:]) for x in xs]
    if len(jaxpr.in_avals) != len(want) or not all(map(_same_types, jaxpr.in_avals, want)):
        raise TypeError("scan: the body does not take (consts, carry, x slices)")
    outs = jaxpr.out_avals
    if len(outs) < num_carry or not all(map(_same_types, outs[:num_carry], carry)):
        raise TypeError("scan: the body's carry output does not match its carry input")
    return ([a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(carry, outs)]
            + [a.update(shape=(length,) + a.shape) for a in outs[num_carry:]])


@scan_p.def_reference
def _scan_reference(
    *args, jaxpr, length, reverse, num_consts, num_carry, unroll, _split_transpose=False
):
    consts, carry, xs = _split(args, num_consts, num_carry)
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


FLUSH_EVERY = 64    # scan: submit after about this many recorded dispatches


def _counter_carries(j: Jaxpr, nc: int, ncar: int) -> list:
    """Carries ``k`` whose body output is ``carry_k + 1`` (an int32/uint32 loop counter)."""
    prod = {v.id: e for e in j.eqns for v in e.outvars}
    out = []
    for k in range(ncar):
        v, o = j.invars[nc + k], j.outvars[k]
        if v.aval.dtype not in (np.dtype(np.int32), np.dtype(np.uint32)) or v.aval.shape != ():
            continue
        e = prod.get(o.id) if isinstance(o, Var) else None
        if e is None or e.prim.name != "add":
            continue
        a, b = e.invars
        if isinstance(a, Lit):
            a, b = b, a
        if isinstance(a, Var) and a.id == v.id and isinstance(b, Lit) and int(b.val) == 1:
            out.append(k)
    return out


def _scan_wrapper(jaxpr, length, nc, ncar, counters, xs_mis, ys_mis, k=1):
    """The scan body as the kernel runs it, ``k`` steps at a time (``unroll``):

        (consts, other carries, per step [aligned x slices, counter values, t],
         misaligned xs, ys accumulators)
          -> (other carries, per step [aligned y slices], ys accumulators)

    counter carries come in as values; misaligned slices are read/written at step ``t``.
    With ``k > 1`` the steps' elementwise work fuses into shared kernels."""
    body = selectify(jaxpr)
    c_avals, carry_avals, x_avals = _split(jaxpr.in_avals, nc, ncar)
    y_avals = jaxpr.out_avals[ncar:]
    rest = [i for i in range(ncar) if i not in counters]
    xs_al = [j for j in range(len(x_avals)) if j not in xs_mis]
    ys_al = [j for j in range(len(y_avals)) if j not in ys_mis]
    with_t = bool(xs_mis or ys_mis)
    step_avals = ([x_avals[j] for j in xs_al] + [carry_avals[i] for i in counters]
                  + ([ShapedArray((), np.int32)] if with_t else []))
    in_avals = (c_avals + [carry_avals[i] for i in rest] + step_avals * k
                + [x_avals[j].update(shape=(length,) + x_avals[j].shape) for j in xs_mis]
                + [y_avals[j].update(shape=(length,) + y_avals[j].shape) for j in ys_mis])
    ns = len(step_avals)

    def f(*args):
        consts, rc, steps, xm, ya = _split(args, nc, len(rest), ns * k, len(xs_mis))
        ys_out = []
        for st in range(k):
            xa, cv, tt = _split(steps[st * ns:(st + 1) * ns], len(xs_al), len(counters))
            carry = [None] * ncar
            for i, v in zip(rest, rc):
                carry[i] = v
            for i, v in zip(counters, cv):
                carry[i] = v
            xs = [None] * len(x_avals)
            for j, v in zip(xs_al, xa):
                xs[j] = v
            for j, full in zip(xs_mis, xm):
                xs[j] = _ops.reshape(_ops.dynamic_slice_in_dim(full, tt[0], 1, 0), x_avals[j].shape)
            outs = _eval(body, *consts, *carry, *xs)
            cout, ys = outs[:ncar], outs[ncar:]
            rc = [cout[i] for i in rest]
            ys_out += [ys[j] for j in ys_al]
            ya = [_ops.dynamic_update_slice_in_dim(
                a, _ops.reshape(_as_traced(ys[j], y_avals[j]), (1,) + y_avals[j].shape), tt[0], 0)
                for j, a in zip(ys_mis, ya)]
        return list(rc) + ys_out + list(ya)

    return dce_closed(_trace(f, in_avals))[0]


def _as_traced(x, aval):
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return _ops.broadcast_in_dim(np.asarray(x, aval.dtype), aval.shape, ())
    return x


@scan_p.def_kernel
def _scan_kernel(
    ctx, *avals, jaxpr, length, reverse, num_consts, num_carry, unroll, _split_transpose=False
):
    keys, out_keys, split = _eqn_io(ctx)
    nc, ncar = num_consts, num_carry
    tag = (length, reverse, nc, ncar, unroll)
    whole = _memo(ctx, (jaxpr,), ("restructure",) + tag,
                  lambda: _restructure_scan(jaxpr, length, reverse, nc, ncar, unroll))
    if whole is not None:
        sub = _sub(ctx, (jaxpr,), ("restructured",) + tag, lambda: whole, "scan")
        nbytes = [nbytes_of(v.aval) for v in ctx.eqn.outvars]

        def run_whole(rt, bufs):
            ins, outs = split(rt, bufs)
            res = sub.run(rt, ins, out_buffers=outs)
            for r, o, n in zip(res, outs, nbytes):
                if r is not o:
                    _copy(rt, r, o, n)
        ctx.host_step(run_whole, keys, out_keys,
                      label="scan: restructured (hoisted matmuls, accumulators summed after)",
                      wgsl=sub.plan.wgsl_text())
        return
    fused = _in_kernel(ctx, (jaxpr,), "loop_s", lambda: selectify(jaxpr),
                       "scan", nc, ncar, length=length, reverse=reverse)
    if fused is not None:
        def run_fused(rt, bufs):
            ins, outs = split(rt, bufs)
            consts, carry, xs = _split(ins, nc, ncar)
            fused.run(rt, consts, carry, xs, outs[:ncar], outs[ncar:])
        ctx.host_step(run_fused, keys, out_keys, label="scan: one kernel loops over the steps",
                      wgsl=fused.wgsl)
        return
    scan = _RecordedScan(ctx, split, avals, jaxpr, length, reverse, nc, ncar, unroll)
    ctx.host_step(scan.run, keys, out_keys, label="scan: body recorded per step, no readback")


# --------------------------------------------------------------------------- scan restructuring

HOIST_BYTES = 256 << 20     # stacked values a restructured scan may add (hoisted xs, acc terms)
HOIST_WORK = 1 << 20        # hoist when the moved kernel ops do this many element-steps
_ADDS = ("add",)
_restructured = caches.Memo(512)     # bodies made by _restructure_scan


def _is_kernel_op(e: Eqn) -> bool:
    return e.prim.fuse is None or e.prim.kernel is not None


def _kernel_work(e: Eqn) -> int:
    """Element-steps of a kernel op: output size times its contraction/reduction length."""
    ins = [a.aval.size for a in e.invars]
    out = max(sum(v.aval.size for v in e.outvars), 1)
    if e.prim.name == "dot_general":
        (lc, _), _ = e.params["dimension_numbers"]
        return out * int(np.prod([e.invars[0].aval.shape[d] for d in lc]))
    return max(out, max(ins, default=0))


def _restructure_scan(jaxpr: ClosedJaxpr, length: int, reverse: bool, nc: int, ncar: int,
                      unroll: int):
    """The scan equation as an equivalent program that leaves less work inside the loop, or
    None when nothing would move (see "Scan restructuring" in the module docstring):

    * *accumulator carries* -- a carry ``c`` whose only use is ``c' = c + d`` with ``d`` not
      depending on ``c`` (the weight-gradient sums of a transposed scan) -- leave the loop:
      the body emits ``d`` (or, for ``d = dot_general(a, b)``, its operands) as extra ``ys``
      and ``c_final = c_init + sum over steps`` is one reduction, or ONE ``dot_general``
      with the step axis contracted, after the loop;
    * *hoisting*: kernel ops (matmuls, reductions) that read no carry -- ``x_t @ Wx`` --
      run once for all steps before the loop (the body's carry-independent part, batched over
      the step axis), and the loop reads their results as extra ``xs`` (or consts).

    Returns a ClosedJaxpr taking and returning what the scan equation does."""
    if length == 0 or _restructured.get_or_make((jaxpr,), "made", lambda: False):
        return None          # made by this function: nothing more moves out
    body = selectify(jaxpr)
    j, cconsts = flatten_closed(body)
    j = dce_jaxpr(cse_and_fold(j))[0]
    if any(has_effects(e) for e in j.eqns):
        return None
    consts_v, carry_v, xs_v = _split(j.invars, nc, ncar)
    outs = list(j.outvars)
    produced = {v.id: e for e in j.eqns for v in e.outvars}
    uses: dict = {}
    for e in j.eqns:
        for a in e.invars:
            if isinstance(a, Var):
                uses[a.id] = uses.get(a.id, 0) + 1
    for a in outs:
        if isinstance(a, Var):
            uses[a.id] = uses.get(a.id, 0) + 1
    # which carries each var depends on; its class: "c" consts only, "x" xs, "v" a carry
    deps: dict = {v.id: {k} for k, v in enumerate(carry_v)}
    cls: dict = {v.id: "c" for v in j.constvars + consts_v}
    cls.update({v.id: "v" for v in carry_v})
    cls.update({v.id: "x" for v in xs_v})
    rank = {"c": 0, "x": 1, "v": 2}
    for e in j.eqns:
        d = set().union(*[deps.get(a.id, set()) for a in e.invars if isinstance(a, Var)])
        c = max([cls[a.id] for a in e.invars if isinstance(a, Var)] + ["c"], key=rank.get)
        for v in e.outvars:
            deps[v.id], cls[v.id] = d, c

    # accumulator carries: k -> ("dot", eqn, (a, b)) or ("sum", d)
    acc = {}
    for k, c in enumerate(carry_v):
        o = outs[k]
        p = produced.get(o.id) if isinstance(o, Var) else None
        if p is None or p.prim.name not in _ADDS or len(p.invars) != 2:
            continue
        a0, a1 = p.invars
        d = a1 if isinstance(a0, Var) and a0.id == c.id else a0
        other = a0 if d is a1 else a1
        if not (isinstance(other, Var) and other.id == c.id and isinstance(d, Var)
                and d.id != c.id and _same_types(d.aval, c.aval)):
            continue
        if uses.get(c.id) != 1 or uses.get(o.id) != 1 or k in deps.get(d.id, set()):
            continue
        pd = produced.get(d.id)
        if (pd is not None and pd.prim.name == "dot_general" and uses.get(d.id) == 1
                and all(isinstance(x, Var) and cls[x.id] != "c" for x in pd.invars)):
            acc[k] = ("dot", pd, p, tuple(pd.invars))
        else:
            acc[k] = ("sum", None, p, (d,))
    # values stacked over the steps for the accumulators' sums
    stacked = list(dict.fromkeys(x for _, _, _, xs_ in acc.values() for x in xs_))
    keep_k = [k for k in range(ncar) if k not in acc]
    # ys the loop need not write: an xs slice (the stacked xs), a repeated ys, or the carry
    # coming in when the carry going out is also a ys (the same stack shifted by one step)
    ys_from: dict = {}          # ys position -> ("xs", i) | ("ys", j) | ("shift", k, j)
    first: dict = {}
    for q, y in enumerate(outs[ncar:]):
        if not isinstance(y, Var):
            continue
        xi = next((i for i, v in enumerate(xs_v) if v.id == y.id), None)
        if xi is not None:
            ys_from[q] = ("xs", xi)
        elif y.id in first:
            ys_from[q] = ("ys", first[y.id])
        else:
            first[y.id] = q
    for q, y in enumerate(outs[ncar:]):
        k = next((k for k, v in enumerate(carry_v) if isinstance(y, Var) and v.id == y.id), None)
        if q in ys_from or k is None or k in acc or length == 0:
            continue
        jn = first.get(outs[k].id) if isinstance(outs[k], Var) else None
        if jn is not None and jn not in ys_from:
            ys_from[q] = ("shift", k, jn)
    ys_kept = [q for q in range(len(outs) - ncar) if q not in ys_from]
    new_outs = [outs[k] for k in keep_k] + [outs[ncar + q] for q in ys_kept]
    # stacked values that are not per-step results of the loop come from before it
    pre_stk = [x for x in stacked if cls[x.id] != "v" and not any(x is v for v in xs_v)]
    ys_stk = [x for x in stacked if cls[x.id] == "v"]
    # hoisting: carry-independent kernel ops and everything they read
    live = dce_jaxpr(Jaxpr(j.constvars, j.invars, new_outs + stacked, j.eqns))[0]
    hoist_ids: set = {x.id for x in pre_stk}
    for e in reversed(live.eqns):
        if any(v.id in hoist_ids for v in e.outvars) or (
                _is_kernel_op(e) and cls[e.outvars[0].id] != "v"):
            hoist_ids.update(v.id for v in e.outvars)
            hoist_ids.update(a.id for a in e.invars
                             if isinstance(a, Var) and a.id in produced)
    hoisted = [e for e in live.eqns if e.outvars[0].id in hoist_ids]
    work = length * sum(_kernel_work(e) for e in hoisted if _is_kernel_op(e))
    if not acc and work < HOIST_WORK:
        return None          # too little to pay for the dispatches it adds
    rest = [e for e in live.eqns if e.outvars[0].id not in hoist_ids]
    read_by_rest = {a.id for e in rest for a in e.invars if isinstance(a, Var)}
    read_by_rest |= {a.id for a in new_outs if isinstance(a, Var)}
    front = [v for e in hoisted for v in e.outvars if v.id in read_by_rest]
    front_c = [v for v in front if cls[v.id] == "c"]
    front_x = [v for v in front if cls[v.id] == "x"]
    extra = sum(length * nbytes_of(v.aval) for v in front_x + pre_stk + ys_stk)
    if extra > HOIST_BYTES:
        return None
    pre = Jaxpr(j.constvars, consts_v + xs_v, front_c + front_x + pre_stk, hoisted)
    new_body = ClosedJaxpr(
        Jaxpr(j.constvars, consts_v + front_c + [carry_v[k] for k in keep_k] + xs_v + front_x,
              new_outs + ys_stk, rest),
        cconsts,
    )
    _restructured.get_or_make((new_body,), "made", lambda: True)
    ny = len(outs) - ncar
    in_avals = [v.aval for v in consts_v + carry_v] + [
        v.aval.update(shape=(length,) + v.aval.shape) for v in xs_v]

    def whole(*args):
        consts, init, xs = _split(args, nc, ncar)
        vals, dims = batch_eval(pre, cconsts, consts + xs,
                                    [None] * nc + [0] * len(xs), length)
        fc, fx, pstk = _split(vals, len(front_c), len(front_x))
        dfc, dfx, dpstk = _split(dims, len(front_c), len(front_x))
        if any(d is not None for d in dfc):
            raise AssertionError("scan restructuring: a loop-invariant value is batched")
        fx = [_batching.move_batch_axis(v, d, 0, length) for v, d in zip(fx, dfx)]
        pstk = [_batching.move_batch_axis(v, d, 0, length) for v, d in zip(pstk, dpstk)]
        res = scan_p.bind(*consts, *fc, *[init[k] for k in keep_k], *xs, *fx,
                          jaxpr=new_body, length=length, reverse=reverse,
                          num_consts=nc + len(fc), num_carry=len(keep_k), unroll=unroll)
        kc, kys, ystk = _split(res, len(keep_k), len(ys_kept))
        ys = [None] * ny
        for j, v in zip(ys_kept, kys):
            ys[j] = v
        for j, src in ys_from.items():
            if src[0] == "xs":
                ys[j] = xs[src[1]]
        for j, src in ys_from.items():
            if src[0] == "shift":
                _, k, jn = src
                c0 = _ops.expand_dims(init[k], (0,))
                if reverse:
                    ys[j] = _ops.concatenate([_ops.slice_in_dim(ys[jn], 1, length), c0], 0)
                else:
                    ys[j] = _ops.concatenate([c0, _ops.slice_in_dim(ys[jn], 0, length - 1)], 0)
        for j, src in ys_from.items():
            if src[0] == "ys":
                ys[j] = ys[src[1]]
        full = {x.id: v for x, v in zip(ys_stk, ystk)}
        full.update({x.id: v for x, v in zip(pre_stk, pstk)})
        full.update({x.id: v for x, v in zip(xs_v, xs)})
        carry = dict(zip(keep_k, kc))
        for k, (kind, pd, p, ops_) in acc.items():
            if kind == "dot":
                (lc, rc), (lb, rb) = pd.params["dimension_numbers"]
                up = lambda t: tuple(int(i) + 1 for i in t)  # noqa: E731
                dn = (((0,) + up(lc), (0,) + up(rc)), (up(lb), up(rb)))
                total = pd.prim.bind(full[ops_[0].id], full[ops_[1].id],
                                     **dict(pd.params, dimension_numbers=dn))
            else:
                total = _ops.reduce_sum(full[ops_[0].id], (0,))
            carry[k] = p.prim.bind(init[k], total, **p.params)
        return [carry[k] for k in range(ncar)] + list(ys)

    return _trace(whole, in_avals)


class _RecordedScan:
    """A scan run as ``length`` recorded runs of its body plan (see the module docstring):
    the layout of carries, slices and counters, the body's sub-plans, and ``run``, the
    host step."""

    def __init__(self, ctx, split, avals, jaxpr, length, reverse, nc, ncar, unroll):
        self.split, self.length, self.reverse = split, length, reverse
        self.nc, self.ncar = nc, ncar
        x_avals = [a.update(shape=a.shape[1:]) for a in avals[nc + ncar:]]
        y_avals = jaxpr.out_avals[ncar:]
        self.xnb = [nbytes_of(a) for a in x_avals]
        self.ynb = [nbytes_of(a) for a in y_avals]
        # slices whose byte size is not a multiple of 4 are read/written inside the body
        self.xs_mis = [j for j, b in enumerate(self.xnb) if b % 4]
        self.ys_mis = [j for j, b in enumerate(self.ynb) if b % 4]
        self.counters = _counter_carries(jaxpr.jaxpr, nc, ncar)
        self.rest = [i for i in range(ncar) if i not in self.counters]
        self.xs_al = [j for j in range(len(x_avals)) if j not in self.xs_mis]
        self.ys_al = [j for j in range(len(y_avals)) if j not in self.ys_mis]
        self.cnb = [nbytes_of(v.aval) for v in ctx.eqn.outvars[:ncar]]
        self.accnb = [nbytes_of(ctx.eqn.outvars[ncar + j].aval) for j in self.ys_mis]
        self.k = max(1, min(int(unroll), length))
        self.subs = self._body_plans(ctx, jaxpr)
        self.ctr_static, self.ctr_subs = _counter_values(ctx, self.counters, nc, length)
        self.steps = (np.arange(max(length, 1), dtype=np.int32)
                      if (self.xs_mis or self.ys_mis) else None)
        self.host_consts: dict = {}  # the counters' and step indices' buffers, on the first run

    def _body_plans(self, ctx, jaxpr) -> dict:
        """The body's sub-plans: ``k`` steps at a time (``unroll``), and one step for the
        remainder."""
        counters, xs_mis, ys_mis = self.counters, self.xs_mis, self.ys_mis
        length, nc, ncar = self.length, self.nc, self.ncar

        def wrapper(kk):
            return lambda: _scan_wrapper(jaxpr, length, nc, ncar, counters, xs_mis, ys_mis, kk)

        tag = ("scan", tuple(counters), tuple(xs_mis), tuple(ys_mis), length)
        subs = {}
        for kk in {self.k, 1}:
            subs[kk] = _sub(ctx, (jaxpr,), tag + (kk,), wrapper(kk), "scan_body")
        return subs

    def _const(self, rt, name, value):
        key = (rt.index, name)            # per device
        if key not in self.host_consts:
            self.host_consts[key] = upload(rt, value)
        return self.host_consts[key]

    def run(self, rt, bufs):
        ins, outs = self.split(rt, bufs)
        consts, carry, xs = _split(ins, self.nc, self.ncar)
        cout, yout = outs[:self.ncar], outs[self.ncar:]
        ctr = [
            self._const(rt, i, self.ctr_static[i]) if i in self.ctr_static
            else self.ctr_subs[i].run(rt, [carry[i]])[0]
            for i in self.counters
        ]
        rc = [carry[i] for i in self.rest]
        accs = [yout[j] for j in self.ys_mis]
        rc, accs = self._record_steps(rt, consts, rc, xs, ctr, accs, yout)
        for i, c in zip(self.rest, rc):
            _copy(rt, c, cout[i], self.cnb[i])
        for i, c in zip(self.counters, ctr):
            _copy(rt, c, cout[i], 4, src_offset=4 * self.length)
        for j, a, nb in zip(self.ys_mis, accs, self.accnb):
            _copy(rt, a, yout[j], nb)

    def _record_steps(self, rt, consts, rc, xs, ctr, accs, yout):
        """Records the body runs, ``k`` steps per run while they fit, copying each step's
        aligned ``ys`` slices into place; returns the final carries and accumulators."""
        length, k, ys_al, ynb = self.length, self.k, self.ys_al, self.ynb
        s, recorded = 0, 0
        while s < length:
            kk = k if s + k <= length else 1
            per_run = len(self.subs[kk].plan.steps)
            ts = [length - 1 - (s + st) if self.reverse else s + st for st in range(kk)]
            steps_buf = self._const(rt, "steps", self.steps) if self.steps is not None else None
            step_in = _scan_step_inputs(rt, s, ts, [xs[j] for j in self.xs_al],
                                        [self.xnb[j] for j in self.xs_al], ctr, steps_buf)
            extra = [xs[j] for j in self.xs_mis]
            res = self.subs[kk].run(rt, consts + rc + step_in + extra + accs)
            rc, ys, accs = _split(res, len(self.rest), len(ys_al) * kk)
            for st, t in enumerate(ts):
                for j, y in zip(ys_al, ys[st * len(ys_al):(st + 1) * len(ys_al)]):
                    _copy(rt, y, yout[j], ynb[j], dst_offset=t * ynb[j])
            s += kk
            recorded += per_run
            if recorded >= FLUSH_EVERY:     # let the device start while the host records on
                rt.flush()
                recorded = 0
        return rc, accs


def _counter_values(ctx, counters, nc, length):
    """The values init + s (s = 0..length) of each loop-counter carry: a constant array when
    init is a literal, else a small sub-plan computing them once per run."""
    ctr_static, ctr_subs = {}, {}
    for i in counters:
        a = ctx.eqn.invars[nc + i]
        dt = a.aval.dtype
        if isinstance(a, Lit):
            vals = (np.int64(a.val) + np.arange(length + 1, dtype=np.int64)).astype(dt)
            ctr_static[i] = vals
        else:
            def build(dt=dt):
                return _trace(lambda c: [_ops.add(_ops.broadcast_in_dim(c, (length + 1,), ()),
                                                 _ops.iota(dt, length + 1))],
                              [ShapedArray((), dt)])
            ctr_subs[i] = _sub(ctx, (), ("counter", dt.name, length), build, "scan_counter")
    return ctr_static, ctr_subs


def _scan_step_inputs(rt, s, ts, xs, xnb, ctr, steps_buf) -> list:
    """Buffers for steps s, s+1, ... (at positions ``ts`` of ``xs``): each step's ``xs``
    slices, counter values and (for misaligned slices) its step index, copied out."""
    step_in = []
    for st, t in enumerate(ts):
        for x, nb in zip(xs, xnb):
            b = rt.alloc(nb)
            _copy(rt, x, b, nb, src_offset=t * nb)
            step_in.append(b)
        for c in ctr:
            b = rt.alloc(4)
            _copy(rt, c, b, 4, src_offset=4 * (s + st))
            step_in.append(b)
        if steps_buf is not None:
            b = rt.alloc(4)
            _copy(rt, steps_buf, b, 4, src_offset=4 * t)
            step_in.append(b)
    return step_in


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, num_consts, num_carry, unroll,
              _split_transpose=False):
    nc, ncar = num_consts, num_carry
    consts, init, xs = _split(primals, nc, ncar)
    ct, it, xt = _split(tangents, nc, ncar)
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
    carry, carry_t, ys, ys_t = _split(outs, ncar, ncart, ny)
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
    cuk, carry_uk, xuk = _split(uin, nc, ncar)
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
    consts, init, xs = _split(e.invars, nc, ncar)
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
    consts, init, xs = _split(args, nc, ncar)
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
        nlc_, acc, cc, cy, nlx = _split(a, nnl, nlc, ncar, len(ys_avals))
        outs = _eval(tj, *nlc_, *nlx, *cc, *cy)
        g_c, g_carry, g_x = _split(outs, nlc, ncar)
        return [_ops.add(x, y) for x, y in zip(acc, g_c)] + list(g_carry) + list(g_x)

    bj = _trace(
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
    g_c, g_carry, g_x = _split(outs, nlc, ncar)
    gc, gx = iter(g_c), iter(g_x)
    return ([next(gc) if l else None for l in c_lin]
            + [g if _ad.is_undefined_primal(x) else None for g, x in zip(g_carry, init)]
            + [next(gx) if l else None for l in x_lin])


def _scan_batch(args, dims, *, jaxpr, length, reverse, num_consts, num_carry, unroll,
                _split_transpose=False):
    n = _batching.axis_size(args, dims)
    nc, ncar = num_consts, num_carry
    consts, init, xs = _split(args, nc, ncar)
    cd, idims, xd = _split(dims, nc, ncar)
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
