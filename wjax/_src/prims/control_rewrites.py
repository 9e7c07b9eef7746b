"""Jaxpr rewrites that control flow's kernel rules (``wjax/_src/prims/control.py``) apply before
handing a branch or a loop body to the backend (``wjax/_src/backend/host_steps.py``, which runs
them).  Every function here is jaxpr -> jaxpr; none runs anything.

* ``selectify``: inside a loop body a ``cond`` whose branches hold no ``while`` (nor a print)
  runs every branch and ``select_n``s the results, so loops stay free of readbacks; the
  device-side cond applies it to its branches too, so a branch plan is all kernels.
* ``guarded_body`` / ``while_step``: a ``while`` body as the recorded loop runs it
  (``select(pred, body(c), c)``) and as an in-kernel loop step (``[pred, *body(c)]``).
* Scan restructuring (``restructure_scan``) comes first for a ``scan``: a body with
  *accumulator carries* (``c' = c + d``, ``d`` independent of ``c``, used nowhere else: the
  weight-gradient sums of a transposed scan) or carry-independent matmuls/reductions worth
  moving (``HOIST_WORK`` element-steps or more) becomes an equivalent program around an
  inner scan: the hoisted ops run once before it, batched over the steps, and read as extra
  ``xs`` (a loop-invariant right operand read with its last axis contracted, ``dz @ W.T``,
  is transposed there once, so that the loop reads it contraction-first: coalesced); the
  accumulators' terms are emitted as extra ``ys`` (a product's operands, when
  ``d`` is a ``dot_general``; a sum's operand, when ``d`` is a ``reduce_sum``: a bias
  gradient's sum over the batch) and summed after the loop by one reduction (one
  ``dot_general`` with the step axis contracted); ``ys`` that are an ``xs`` slice, a repeat,
  or the incoming carry (when the outgoing one is also a ``ys``) are taken from outside the
  loop.  The inner scan then goes through the other forms (it is never restructured again).
* A scan recorded step by step runs its body through ``scan_wrapper`` (``k`` steps per
  sub-plan, loop counters and misaligned slices passed the way the recorded loop feeds them);
  ``counter_carries`` finds the loop counters, ``counter_values`` computes their values.

``cond`` and ``scan`` are found and bound through the primitive registry (as ``core/ops.py``
binds by name), so this module sits below ``prims/control.py``, which defines them.
"""
from __future__ import annotations

import numpy as np

from ..backend.execute import nbytes_of
from ..backend.passes import cse_and_fold, flatten_closed
from ..core import caches
from ..core import ops as _ops
from ..util import split_list
from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, ShapedArray, Var, subjaxprs
from ..core.primitive import REGISTRY
from ..core.tracing import Tracer, eval_jaxpr, trace_flat
from ..transforms import batching as _batching
from ..transforms.dce import dce_closed, dce_jaxpr, has_effects
from ..transforms.vmap import batch_eval
from .elementwise import select_n_p


# =========================================================================== helpers

def trace_closed(fun, avals) -> ClosedJaxpr:
    """Traces ``fun(*tracers) -> list`` into a ClosedJaxpr (rules build bodies with it; they
    must close over no tracer of an enclosing trace)."""
    closed = trace_flat(fun, list(avals))
    if any(isinstance(c, Tracer) for c in closed.consts):
        raise AssertionError("a control-flow rule closed over a traced value")
    return closed


def eval_closed(closed: ClosedJaxpr, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)



def same_types(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


# a cond in a loop body becomes a select of all its branches unless one holds these: a
# while (its extra guarded runs could spin) or a print (it would print for untaken branches)
KEEP_BRANCHES = ("while", "debug_callback", "io_callback")


def contains_prim(closed, names) -> bool:
    """Whether a jaxpr (or any jaxpr nested in it) binds one of the primitives ``names``."""
    j = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    return any(e.prim.name in names or any(contains_prim(s, names) for s in subjaxprs(e.params))
               for e in j.eqns)


def selectify(closed: ClosedJaxpr) -> ClosedJaxpr:
    """For loop bodies: each top-level ``cond`` whose branches hold no ``while`` runs all its
    branches and selects the results (``select_n`` on the index), so a loop records no
    readback for it."""
    cond_p = REGISTRY["cond"]
    if not any(
        e.prim is cond_p and not any(contains_prim(b, KEEP_BRANCHES) for b in e.params["branches"])
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
            if e.prim is cond_p and not any(contains_prim(b, KEEP_BRANCHES) for b in brs):
                outs_b = [eval_closed(b, *ins[1:]) for b in brs]
                outs = [outs_b[0][k] if len(brs) == 1 else
                        select_cases(ins[0], [o[k] for o in outs_b], v.aval)
                        for k, v in enumerate(e.outvars)]
            else:
                outs = e.prim.bind(*ins, **e.params)
                outs = list(outs) if e.prim.multiple_results else [outs]
            for v, o in zip(e.outvars, outs):
                env[v.id] = o
        return [read(a) for a in j.outvars]

    return trace_closed(fun, [v.aval for v in j.invars])


def select_cases(which, cases, aval):
    """``select_n(which, *cases)``, 0-d host cases (a branch returning a constant) cast to
    ``aval``'s dtype."""
    cases = [
        c if not isinstance(c, np.ndarray) or c.ndim else np.asarray(c, aval.dtype) for c in cases
    ]
    return select_n_p.bind(which, *cases)


# =========================================================================== while bodies

def guarded_body(cond_jaxpr, body_jaxpr, nc, nb):
    """``(cond consts, body consts, carry) -> select(cond(carry), body(carry), carry)``."""
    avals = cond_jaxpr.in_avals[:nc] + body_jaxpr.in_avals

    def f(*xs):
        cc, bc, carry = split_list(xs, [nc, nb])
        p = eval_closed(cond_jaxpr, *cc, *carry)[0]
        new = eval_closed(body_jaxpr, *bc, *carry)
        return [
            select_cases(p, [old, nw], v.aval)
            for old, nw, v in zip(carry, new, body_jaxpr.jaxpr.outvars)
        ]

    return selectify(trace_closed(f, avals))


def while_step(cond_jaxpr, body_jaxpr, nc, nb):
    """``(cond consts, body consts, carry) -> [pred(carry), *body(carry)]``."""
    cj, bj = selectify(cond_jaxpr), selectify(body_jaxpr)

    def f(*xs):
        cc, bc, carry = split_list(xs, [nc, nb])
        return [eval_closed(cj, *cc, *carry)[0]] + list(eval_closed(bj, *bc, *carry))
    return trace_closed(f, cond_jaxpr.in_avals[:nc] + body_jaxpr.in_avals)


# =========================================================================== scan bodies

def counter_carries(j: Jaxpr, nc: int, ncar: int) -> list:
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


def scan_wrapper(jaxpr, length, nc, ncar, counters, xs_mis, ys_mis, k=1):
    """The scan body as the recorded loop runs it, ``k`` steps at a time (``unroll``):

        (consts, other carries, per step [aligned x slices, counter values, t],
         misaligned xs, ys accumulators)
          -> (other carries, per step [aligned y slices], ys accumulators)

    counter carries come in as values; misaligned slices are read/written at step ``t``.
    With ``k > 1`` the steps' elementwise work fuses into shared kernels."""
    body = selectify(jaxpr)
    c_avals, carry_avals, x_avals = split_list(jaxpr.in_avals, [nc, ncar])
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
        consts, rc, steps, xm, ya = split_list(args, [nc, len(rest), ns * k, len(xs_mis)])
        ys_out = []
        for st in range(k):
            xa, cv, tt = split_list(steps[st * ns:(st + 1) * ns], [len(xs_al), len(counters)])
            carry = [None] * ncar
            for i, v in zip(rest, rc):
                carry[i] = v
            for i, v in zip(counters, cv):
                carry[i] = v
            xs = [None] * len(x_avals)
            for j, v in zip(xs_al, xa):
                xs[j] = v
            for j, full in zip(xs_mis, xm):
                xs[j] = _ops.reshape(_ops.dynamic_slice_in_dim(
                    full, tt[0], 1, 0, allow_negative_indices=False), x_avals[j].shape)
            outs = eval_closed(body, *consts, *carry, *xs)
            cout, ys = outs[:ncar], outs[ncar:]
            rc = [cout[i] for i in rest]
            ys_out += [ys[j] for j in ys_al]
            ya = [_ops.dynamic_update_slice_in_dim(
                a, _ops.reshape(_as_traced(ys[j], y_avals[j]), (1,) + y_avals[j].shape), tt[0], 0,
                allow_negative_indices=False)
                for j, a in zip(ys_mis, ya)]
        return list(rc) + ys_out + list(ya)

    return dce_closed(trace_closed(f, in_avals))[0]


def _as_traced(x, aval):
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return _ops.broadcast_in_dim(np.asarray(x, aval.dtype), aval.shape, ())
    return x


def counter_values(dtype, length: int) -> ClosedJaxpr:
    """``init -> init + [0, 1, ..., length]``: every value a loop counter takes."""
    return trace_closed(lambda c: [_ops.add(_ops.broadcast_in_dim(c, (length + 1,), ()),
                                      _ops.iota(dtype, length + 1))],
                  [ShapedArray((), dtype)])


# --------------------------------------------------------------------------- scan restructuring

HOIST_BYTES = 256 << 20     # stacked values a restructured scan may add (hoisted xs, acc terms)
HOIST_WORK = 1 << 20        # hoist when the moved kernel ops do this many element-steps
_ADDS = ("add",)
_restructured = caches.Memo(512)     # bodies made by restructure_scan


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


def _summed(d, produced, uses):
    """The ``reduce_sum`` equation ``d`` is (through reshapes, each value read once), or
    None."""
    while True:
        e = produced.get(d.id)
        if e is None or uses.get(d.id) != 1 or not isinstance(e.invars[0], Var):
            return None
        if e.prim.name == "reduce_sum":
            return e
        if e.prim.name != "reshape":
            return None
        d = e.invars[0]


def _k_major(rest, cls, before, length):
    """Products in the loop body ``rest`` whose right operand is loop-invariant (a var in
    ``before``: a const or made before the loop, or a ``transpose`` of one) read so that
    neighbouring threads -- one per output column -- walk it a row apart: its last axis
    contracted (the transposed scan's ``dz @ Wh.T`` of an RNN's gradient, ``dot_general``
    contracting Wh's axis 1), or a transposed view of it (``h @ W.T``).  Each reads instead
    a copy transposed once before the loop (or the operand itself, where the two transposes
    cancel) with the contraction first, so the loop reads it coalesced (on an H200 the RNN's
    backward loop took 4x its forward one).  Returns (the body so rewritten, the transposes
    before the loop, whether any product changed)."""
    made = {e.outvars[0].id: e for e in rest if e.prim.name == "transpose"}
    flips: dict = {}
    out, changed = [], False
    for e in rest:
        w = e.invars[1] if e.prim.name == "dot_general" and len(e.invars) == 2 else None
        if isinstance(w, Var) and length >= 4 and not e.params["dimension_numbers"][1][1]:
            (lc, rc), (lb, _) = e.params["dimension_numbers"]
            nd = len(w.aval.shape)
            t = made.get(w.id)
            base, p1 = (t.invars[0], tuple(t.params["permutation"])) if t is not None else (
                w, tuple(range(nd)))
            p2 = tuple(int(d) for d in rc) + tuple(d for d in range(nd) if d not in tuple(rc))
            final = tuple(p1[d] for d in p2)
            if (isinstance(base, Var) and base.id in before and len(rc) < nd
                    and (p1 != tuple(range(nd)) or p2 != tuple(range(nd)))):
                if final == tuple(range(nd)):
                    wt = base                         # the two transposes cancel
                else:
                    if (base.id, final) not in flips:
                        v = Var(base.aval.update(shape=tuple(base.aval.shape[d] for d in final)))
                        cls[v.id] = "c"
                        flips[(base.id, final)] = Eqn(REGISTRY["transpose"], [base], [v],
                                                      {"permutation": final})
                    wt = flips[(base.id, final)].outvars[0]
                dn = ((tuple(lc), tuple(range(len(rc)))), (tuple(lb), ()))
                e = e.replace(invars=[e.invars[0], wt],
                              params=dict(e.params, dimension_numbers=dn))
                changed = True
        out.append(e)
    return out, list(flips.values()), changed   # a transpose no longer read: the DCE drops it


def restructure_scan(jaxpr: ClosedJaxpr, length: int, reverse: bool, nc: int, ncar: int,
                     unroll: int):
    """The scan equation as an equivalent program that leaves less work inside the loop, or
    None when nothing would move (see "Scan restructuring" in the module docstring):

    * *accumulator carries* -- a carry ``c`` whose only use is ``c' = c + d`` with ``d`` not
      depending on ``c`` (the weight-gradient sums of a transposed scan) -- leave the loop:
      the body emits ``d`` (or, for ``d = dot_general(a, b)``, its operands; for ``d =
      reduce_sum(a)``, ``a``) as extra ``ys`` and ``c_final = c_init + sum over steps`` is
      one reduction (over the step axis and ``a``'s summed ones), or ONE ``dot_general``
      with the step axis contracted, after the loop (a step that no longer sums over its
      rows may then run split into blocks of them, ``backend/loops.py``);
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
    consts_v, carry_v, xs_v = split_list(j.invars, [nc, ncar])
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

    # accumulator carries: k -> (kind, the eqn making d, the add, what is stacked)
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
                and d.id != c.id and same_types(d.aval, c.aval)):
            continue
        if uses.get(c.id) != 1 or uses.get(o.id) != 1 or k in deps.get(d.id, set()):
            continue
        pd, pr = produced.get(d.id), _summed(d, produced, uses)
        if (pd is not None and pd.prim.name == "dot_general" and uses.get(d.id) == 1
                and all(isinstance(x, Var) and cls[x.id] != "c" for x in pd.invars)):
            acc[k] = ("dot", pd, p, tuple(pd.invars))
        elif pr is not None:
            acc[k] = ("reduce", pr, p, (pr.invars[0],))
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
    rest = [e for e in live.eqns if e.outvars[0].id not in hoist_ids]
    before = {v.id for v in j.constvars + consts_v} | {
        v.id for e in hoisted for v in e.outvars if cls[v.id] == "c"}
    rest, flips, flipped = _k_major(rest, cls, before, length)
    if not acc and not flipped and work < HOIST_WORK:
        return None          # too little to pay for the dispatches it adds
    hoisted += flips
    read_by_rest = {a.id for e in rest for a in e.invars if isinstance(a, Var)}
    read_by_rest |= {a.id for a in new_outs if isinstance(a, Var)}
    front = [v for e in hoisted for v in e.outvars if v.id in read_by_rest]
    front_c = [v for v in front if cls[v.id] == "c"]
    front_x = [v for v in front if cls[v.id] == "x"]
    extra = sum(length * nbytes_of(v.aval) for v in front_x + pre_stk + ys_stk)
    if extra > HOIST_BYTES:
        return None
    pre = Jaxpr(j.constvars, consts_v + xs_v, front_c + front_x + pre_stk, hoisted)
    new_body = ClosedJaxpr(dce_jaxpr(
        Jaxpr(j.constvars, consts_v + front_c + [carry_v[k] for k in keep_k] + xs_v + front_x,
              new_outs + ys_stk, rest))[0],
        cconsts,
    )
    _restructured.get_or_make((new_body,), "made", lambda: True)
    ny = len(outs) - ncar
    in_avals = [v.aval for v in consts_v + carry_v] + [
        v.aval.update(shape=(length,) + v.aval.shape) for v in xs_v]

    def whole(*args):
        consts, init, xs = split_list(args, [nc, ncar])
        vals, dims = batch_eval(pre, cconsts, consts + xs,
                                [None] * nc + [0] * len(xs), length)
        fc, fx, pstk = split_list(vals, [len(front_c), len(front_x)])
        dfc, dfx, dpstk = split_list(dims, [len(front_c), len(front_x)])
        if any(d is not None for d in dfc):
            raise AssertionError("scan restructuring: a loop-invariant value is batched")
        fx = [_batching.move_batch_axis(v, d, 0, length) for v, d in zip(fx, dfx)]
        pstk = [_batching.move_batch_axis(v, d, 0, length) for v, d in zip(pstk, dpstk)]
        res = REGISTRY["scan"].bind(*consts, *fc, *[init[k] for k in keep_k], *xs, *fx,
                                    jaxpr=new_body, length=length, reverse=reverse,
                                    num_consts=nc + len(fc), num_carry=len(keep_k),
                                    unroll=unroll)
        kc, kys, ystk = split_list(res, [len(keep_k), len(ys_kept)])
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
            elif kind == "reduce":
                axes = (0,) + tuple(int(a) + 1 for a in pd.params["axes"])
                total = pd.prim.bind(full[ops_[0].id], **dict(pd.params, axes=axes))
                total = _ops.reshape(total, init[k].shape)    # through d's reshapes
            else:
                total = _ops.reduce_sum(full[ops_[0].id], (0,))
            carry[k] = p.prim.bind(init[k], total, **p.params)
        return [carry[k] for k in range(ncar)] + list(ys)

    return trace_closed(whole, in_avals)
