"""Plan host steps: control flow stepped from the host, and the buffers of any host step.

A ``cond``, ``while`` or ``scan`` equation lowers to one plan *host step*
(``KernelContext.host_step``): Python that runs when the plan runs.  The primitive's kernel
rule (``wjax/_src/prims/control.py``) declares what runs -- the jaxprs of its branches or body,
already rewritten -- through the functions here; this module compiles them ONCE, at lowering
time, into sub-plans (``SubPlan``), and at run time records the sub-plans' dispatches into the
same command stream as the rest of the call, feeding device buffers from one sub-plan run to
the next.  Nothing is read back unless a branch or loop exit must be decided on the host.

Why the host steps at all: lavapipe stops a shader invocation after 65535 loop iterations and
a long dispatch stalls everything behind it, so a loop runs inside one kernel only in bounded
chunks, and only when its body qualifies (``wjax/_src/backend/loops.py``: per element for
elementwise bodies, in one workgroup for small bodies with reductions and matmuls).  The rest
is recorded here:

* ``scan`` (``recorded_scan``) records ``length`` runs of the body plan with no readback at
  all.  The carry buffers one run returns are the next run's inputs.  A step reads its slice
  of ``xs`` and writes its own slice of ``ys`` in place, through windows of the scan's
  buffers bound at an offset (``runtime.View``), when the slice's byte offset is a multiple
  of the adapter's binding alignment and the body is kernels only; otherwise (and for
  unrolled steps, or a ``ys`` that is also read, like a carry: one dispatch may not read one
  window of a buffer and write another) the slice is a small buffer-to-buffer copy.  Slices
  whose byte size is not a multiple of 4 (odd float16 rows) cannot be copied: the body reads
  them with ``dynamic_slice`` and writes them with ``dynamic_update_slice`` inside a wrapper jaxpr
  that takes the step index instead.  A loop counter carry (``i -> i + 1``, as in
  ``fori_loop``) is not computed by a dispatch per step: its values ``init + s`` are
  precomputed once and copied in like an ``xs`` slice.  ``unroll=k`` compiles k steps into
  one sub-plan, so their elementwise work fuses (``fori_loop(..., unroll=8)`` runs 8 small
  steps per dispatch).  The host submits about every ``FLUSH_EVERY`` recorded dispatches so
  the device starts while the rest is recorded.  A body of kernels only whose slices are all
  views is *replayed* (``_record_replay``): the body's kernels take the slice bindings at
  dynamic offsets (``Runtime.dynamic_offsets``), each kernel's bind groups are made once per
  call for a ring of R buffer sets (step s writes set s % R, reads set s - 1; temporaries are
  one set), and a step is then one ``set_bind_group`` with its offsets and one dispatch per
  kernel (``Runtime.replay``); ``ys`` that must be copied (a carry also returned as ``ys``)
  are copied R steps at a time.  Where the adapter lacks dynamic offsets the steps run
  one by one through the body plan (``_record_direct``).
* ``while`` (``while_loop``) records its body in chunks with the predicate evaluated on the
  device: the body is compiled *guarded*, ``carry' = select(cond(carry), body(carry),
  carry)``, so iterations run after the predicate turned false are no-ops.  A chunk of K
  guarded iterations is recorded, then the predicate of the carry is read back once; K
  doubles from 1 up to ``MAX_CHUNK``, so a loop of n iterations costs about log2(n) + n/64
  readbacks instead of n host round trips.  From K = ``SPECULATE`` on, the host records chunk
  k + 1 while the device runs chunk k and reads chunk k's predicate (submitted) before
  submitting chunk k + 1, so recording and running overlap (at the price of at most one chunk
  of no-op iterations after the exit).  A body that holds another ``while`` (whose extra
  guarded runs could spin on garbage) or a print runs *host-driven*: one predicate readback
  per iteration.
* ``cond`` with a traced index picks its branch on the device (``cond_on_device``): a gate
  kernel (``shaders/cond_gate.wgsl``) reads the index and writes the workgroup counts of every
  branch's kernels, their static grids for the chosen branch and zero for the others; every
  branch's plan is then recorded with *indirect* dispatches reading those counts, and a
  ``select_n`` on the clamped index picks the outputs.  A branch whose plan keeps a host step
  (a ``while`` or ``scan``) cannot be skipped that way: ``cond_on_host`` reads the index back
  (4 bytes) and records the chosen branch's plan; a literal index records its branch directly.

Eager calls take the same path: the primitive runs as a one-equation jaxpr (plans cached by
the structure of the jaxprs it carries).  ``step_io`` is the operand plumbing every host step
shares (control flow and ``prims/callback.py``'s callbacks): literal operands become constant
buffers, uploaded once per device.
"""
from __future__ import annotations

import numpy as np

from ..core import caches
from ..core.ir import ClosedJaxpr, Lit
from . import wgsl as W
from .execute import Bound, Executable, _is_lit_key, nbytes_of, upload
from .runtime import View
from .loops import in_kernel_loop
from .lower import HostStep
from ..util import split_list

MAX_CHUNK = 64      # while: guarded iterations per chunk, at most
SPECULATE = 8       # while: from chunks of this size on, record one chunk ahead of the predicate
FLUSH_EVERY = 64    # scan: submit after about this many recorded dispatches
RECORDED_CHUNK = 8  # while, in a recording (jax.export): guarded iterations per predicate read


# --------------------------------------------------------------------------- sub-plans

_subplans = caches.Memo(512)


class SubPlan:
    """A sub-jaxpr compiled once, at lowering time, for the equation's target: ``run(rt,
    buffers)`` records it and returns its output buffers."""

    def __init__(self, closed: ClosedJaxpr, target, name: str):
        self.bound = Bound(Executable(closed.jaxpr, target, name), list(closed.consts))
        # a loop body or branch runs once a step: its steps submit with the loop's, never
        # on their own (``Target.submit_early`` is for a call's plan)
        self.bound.exe.plan.submit_early = 0

    plan = property(lambda self: self.bound.exe.plan)

    def run(self, rt, ins, indirect=None, out_buffers=None):
        return self.bound.run(rt, ins, indirect, out_buffers)


def memo(ctx, objs: tuple, tag, make):
    """``make()``, cached per (the jaxprs ``objs`` by identity, ``tag``, the target):
    ``lower_jaxpr`` may plan an equation more than once."""
    return _subplans.get_or_make(tuple(objs), (tag, ctx.target.key()), make)


def sub_plan(ctx, objs: tuple, tag, build, name: str) -> SubPlan:
    """The cached sub-plan of the jaxpr ``build()`` (made from ``objs``)."""
    return memo(ctx, objs, tag, lambda: SubPlan(build(), ctx.target, name))


# --------------------------------------------------------------------------- a step's buffers

def step_io(ctx):
    """The equation's operand keys, its output keys and ``split(rt, buffers) -> (ins, outs)``;
    literal operands become constant buffers (uploaded on the first run, per device)."""
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


def _copy_out(rt, results, outs, nbytes):
    for r, o, nb in zip(results, outs, nbytes):
        _copy(rt, r, o, nb)


def _read_scalar(rt, buf) -> int:
    return int(np.frombuffer(rt.read(buf, 4), np.int32)[0])


def _read_submitted(rt, buf) -> int:
    """Reads a 4-byte value written by work already submitted, WITHOUT submitting the work
    recorded since: the host records the next chunk while the device runs this one."""
    return int(np.frombuffer(rt.read_submitted(buf, 4), np.int32)[0])



def _out_nbytes(ctx) -> list:
    return [nbytes_of(v.aval) for v in ctx.eqn.outvars]


# --------------------------------------------------------------------------- whole sub-plans

def sub_plan_step(ctx, sub: SubPlan, label: str) -> None:
    """Declares the equation's host step as one run of ``sub`` (taking the equation's
    operands, returning its outputs) writing into the output buffers."""
    keys, out_keys, split = step_io(ctx)
    nbytes = _out_nbytes(ctx)

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        _copy_out(rt, sub.run(rt, ins, out_buffers=outs), outs, nbytes)

    ctx.host_step(run, keys, out_keys, label=label, wgsl=sub.plan.wgsl_text())


def loop_in_kernel(ctx, objs, tag, build_step, kind, n_consts, n_carry, label, **kw) -> bool:
    """Declares the loop as one WGSL kernel (``wjax/_src/backend/loops.py``) run chunk by chunk,
    when the step jaxpr ``build_step()`` qualifies; False (nothing declared) when not.  The
    operands are (consts, carry, xs), the outputs (carry, ys).  Cached like a sub-plan (a
    kernel rule may be planned more than once)."""
    loop = memo(ctx, objs, (tag, kind, n_consts, n_carry, tuple(sorted(kw.items()))),
                lambda: in_kernel_loop(build_step(), kind, n_consts, n_carry, ctx.target, **kw))
    if loop is None:
        return False
    keys, out_keys, split = step_io(ctx)

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        consts, carry, xs = split_list(ins, [n_consts, n_carry])
        loop.run(rt, consts, carry, xs, outs[:n_carry], outs[n_carry:])

    if loop.blocks > 1:
        label = f"{label}, its rows split over {loop.blocks} workgroups"
    ctx.host_step(run, keys, out_keys, label=label, wgsl=loop.wgsl)
    return True


# --------------------------------------------------------------------------- cond

def cond_on_host(ctx, branches, static) -> None:
    """Declares the cond as a run of one branch's sub-plan: branch ``static`` when the index
    is known at lowering, else the one the index read back (clamped) names."""
    keys, out_keys, split = step_io(ctx)
    nbytes = _out_nbytes(ctx)
    subs = [sub_plan(ctx, (b,), "cond", lambda b=b: b, "cond_branch") for b in branches]
    n = len(branches)

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        if static is None and getattr(rt, "records", False):     # (backend/recorder.py)
            rt.switch(ins[0], [lambda s=s: _copy_out(rt, s.run(rt, ins[1:]), outs, nbytes)
                               for s in subs])
            return
        i = static if static is not None else min(max(_read_scalar(rt, ins[0]), 0), n - 1)
        _copy_out(rt, subs[i].run(rt, ins[1:]), outs, nbytes)

    label = ("cond: read the index back, record the branch" if static is None
             else "cond: literal index")
    ctx.host_step(run, keys, out_keys, label=label)


def cond_on_device(ctx, branches, prepare, build_select) -> bool:
    """Declares the cond as a gate kernel writing the indirect dispatch arguments of every
    branch's kernels (zero workgroups outside the chosen branch), every branch recorded with
    them, and the select jaxpr ``build_select()`` -- (index, every branch's outputs) ->
    outputs -- writing the outputs.  ``prepare(branch)`` is the branch as recorded (its plan
    must be all kernels).  False (nothing declared) when a branch's plan holds a host step."""
    subs = [sub_plan(ctx, (b,), "cond_dev", lambda b=b: prepare(b), "cond_branch")
            for b in branches]
    plans = [s.plan for s in subs]
    if any(isinstance(d, HostStep) for p in plans for d in p.steps):
        return False
    n, out_avals = len(branches), list(branches[0].out_avals)
    index_aval = ctx.eqn.invars[0].aval
    sel = sub_plan(ctx, (), ("cond_select", n, index_aval, tuple(out_avals)), build_select,
                   "cond_select")
    table = [
        tuple(d.grid) + (1,) * (3 - len(d.grid)) + (b,)
        for b, p in enumerate(plans)
        for d in p.steps
    ]
    first = np.cumsum([0] + [len(p.steps) for p in plans]).tolist()
    gate = W.render("cond_gate.wgsl", SLOTS=len(table), LAST=n - 1) if table else None
    made: dict = {}     # the gate's table and the indirect arguments, per device, on first run
    keys, out_keys, split = step_io(ctx)
    nbytes = _out_nbytes(ctx)

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        index, ops = ins[0], ins[1:]
        if table:
            fixed = made.get(rt.index)
            if fixed is None:
                fixed = made[rt.index] = (upload(rt, np.array(table, np.uint32)),
                                          rt.alloc(12 * len(table), indirect=True))
            tab, indirect = fixed
            rt.dispatch(gate, [index, tab, indirect], (-(-len(table) // 64), 1, 1))
        results = [o for s, f in zip(subs, first)
                   for o in s.run(rt, ops, (indirect, f) if table else None)]
        _copy_out(rt, sel.run(rt, [index] + results, out_buffers=outs), outs, nbytes)

    ctx.host_step(run, keys, out_keys,
                  label="cond: a gate kernel picks the branch; all branches recorded indirect")
    return True


# --------------------------------------------------------------------------- while

def while_loop(ctx, cond: SubPlan, body: SubPlan, nc: int, nb: int, guarded: bool) -> None:
    """Declares the while loop driven from the host.  ``cond`` takes (cond consts, carry) to
    the predicate.  ``guarded``: ``body`` takes (cond consts, body consts, carry) and leaves
    the carry unchanged once the predicate is false, so it runs in chunks with one predicate
    readback per chunk; else ``body`` takes (body consts, carry) and the predicate is read
    back before every iteration."""
    keys, out_keys, split = step_io(ctx)
    nbytes = _out_nbytes(ctx)

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        cc, bc, carry = split_list(ins, [nc, nb])
        if getattr(rt, "records", False):      # (backend/recorder.py)
            _record_while(rt, cond, body, cc, bc, carry, outs, nbytes, guarded)
            return
        if not guarded:
            while _read_scalar(rt, cond.run(rt, cc + carry)[0]):
                carry = body.run(rt, bc + carry)
        else:
            k, prev = 1, None
            while True:
                for _ in range(k):
                    carry = body.run(rt, cc + bc + carry)
                p = cond.run(rt, cc + carry)[0]
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
        _copy_out(rt, carry, outs, nbytes)

    ctx.host_step(
        run, keys, out_keys, label="while: guarded body in chunks, predicate read back per chunk"
    )


def _record_while(rt, cond, body, cc, bc, carry, outs, nbytes, guarded) -> None:
    """The while loop for a recorder: the carry lives in buffers of the loop's own, copied
    back after each pass; a guarded body runs ``RECORDED_CHUNK`` times between predicate
    reads, an unguarded one once after each."""
    state = [rt.alloc(nb) for nb in nbytes]
    _copy_out(rt, carry, state, nbytes)

    def one_pass():
        if guarded:
            c = state
            for _ in range(RECORDED_CHUNK):
                c = body.run(rt, cc + bc + c)
            _copy_out(rt, c, state, nbytes)
            rt.break_if_zero(cond.run(rt, cc + state)[0])
        else:
            rt.break_if_zero(cond.run(rt, cc + state)[0])
            _copy_out(rt, body.run(rt, bc + state), state, nbytes)

    rt.loop(one_pass)
    _copy_out(rt, state, outs, nbytes)


# --------------------------------------------------------------------------- scan

def recorded_scan(ctx, avals, jaxpr, length, reverse, nc, ncar, unroll, counters,
                  wrapper, counter_values) -> None:
    """Declares the scan as ``length`` recorded runs of its body plan (see the module
    docstring).  ``counters``: the loop-counter carries; ``wrapper(xs_mis, ys_mis, k)``: the
    body as recorded, ``k`` steps at a time (``prims/scan_rewrite.scan_wrapper``);
    ``counter_values(dtype)``: the jaxpr init -> init + [0..length] of a counter."""
    scan = _RecordedScan(ctx, avals, jaxpr, length, reverse, nc, ncar, unroll, counters,
                         wrapper, counter_values)
    ctx.host_step(scan.run, scan.keys, scan.out_keys,
                  label="scan: body recorded per step, no readback")


class _RecordedScan:
    """A scan run as ``length`` recorded runs of its body plan: the layout of carries, slices
    and counters, the body's sub-plans, and ``run``, the host step."""

    def __init__(self, ctx, avals, jaxpr, length, reverse, nc, ncar, unroll, counters,
                 wrapper, counter_values):
        self.keys, self.out_keys, self.split = step_io(ctx)
        self.length, self.reverse = length, reverse
        self.nc, self.ncar = nc, ncar
        x_avals = [a.update(shape=a.shape[1:]) for a in avals[nc + ncar:]]
        y_avals = jaxpr.out_avals[ncar:]
        self.xnb = [nbytes_of(a) for a in x_avals]
        self.ynb = [nbytes_of(a) for a in y_avals]
        # slices whose byte size is not a multiple of 4 are read/written inside the body
        self.xs_mis = [j for j, b in enumerate(self.xnb) if b % 4]
        self.ys_mis = [j for j, b in enumerate(self.ynb) if b % 4]
        self.counters = counters
        self.rest = [i for i in range(ncar) if i not in self.counters]
        self.xs_al = [j for j in range(len(x_avals)) if j not in self.xs_mis]
        self.ys_al = [j for j in range(len(y_avals)) if j not in self.ys_mis]
        self.cnb = [nbytes_of(v.aval) for v in ctx.eqn.outvars[:ncar]]
        self.accnb = [nbytes_of(ctx.eqn.outvars[ncar + j].aval) for j in self.ys_mis]
        self.k = max(1, min(int(unroll), length))
        tag = ("scan", tuple(counters), tuple(self.xs_mis), tuple(self.ys_mis), length)
        self.subs = {kk: sub_plan(ctx, (jaxpr,), tag + (kk,),
                                  lambda kk=kk: wrapper(self.xs_mis, self.ys_mis, kk), "scan_body")
                     for kk in {self.k, 1}}     # k steps at a time, and one for the remainder
        self.own_ys = self._own_ys(self.subs[1].plan, len(self.rest), len(self.ys_al))
        self.ctr_static, self.ctr_subs = self._counters(ctx, counter_values)
        self.steps = (np.arange(max(length, 1), dtype=np.int32)
                      if (self.xs_mis or self.ys_mis) else None)
        self.host_consts: dict = {}  # the counters' and step indices' buffers, on the first run
        self._dynamic_done: set = set()     # devices whose body kernels bind views dynamically
        self._dyn_ok: dict = {}     # device -> whether every view binding is dynamic there
        self._held: dict = {}       # device -> (R, temporaries, ring) kept between calls

    def _counters(self, ctx, counter_values):
        """The values init + s (s = 0..length) of each loop-counter carry: a constant array
        when init is a literal, else a small sub-plan computing them once per run."""
        ctr_static, ctr_subs = {}, {}
        for i in self.counters:
            a = ctx.eqn.invars[self.nc + i]
            dt = a.aval.dtype
            if isinstance(a, Lit):
                vals = np.int64(a.val) + np.arange(self.length + 1, dtype=np.int64)
                ctr_static[i] = vals.astype(dt)
            else:
                ctr_subs[i] = sub_plan(ctx, (), ("counter", dt.name, self.length),
                                       lambda dt=dt: counter_values(dt), "scan_counter")
        return ctr_static, ctr_subs

    def _const(self, rt, name, value):
        key = (rt.index, name)            # per device
        if key not in self.host_consts:
            self.host_consts[key] = upload(rt, value)
        return self.host_consts[key]

    def run(self, rt, bufs):
        ins, outs = self.split(rt, bufs)
        consts, carry, xs = split_list(ins, [self.nc, self.ncar])
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
        if self.length == 0:         # no step: the carries leave as they came
            return rc, accs
        if self.k == 1 and self.own_ys is not None:
            self._dynamic_views(rt)
            if hasattr(rt, "zero"):     # ys written through dynamic windows: see Runtime.zero
                for (j, o, v) in zip(self.ys_al, self.own_ys, self._views(rt)[1]):
                    if o and v:
                        rt.zero(yout[j])
            if self._replay_ok(rt):
                return self._record_replay(rt, consts, rc, xs, yout), accs
            run = self.subs[1].bound.runner(rt)
            if run is not None:
                return self._record_direct(rt, run, consts, rc, xs, ctr, accs, yout)
        length, k, ys_al, ynb = self.length, self.k, self.ys_al, self.ynb
        s, recorded = 0, 0
        xv, yv = self._views(rt)
        while s < length:
            kk = k if s + k <= length else 1
            sub = self.subs[kk]
            per_run = len(sub.plan.steps)
            ts = [length - 1 - (s + st) if self.reverse else s + st for st in range(kk)]
            steps_buf = self._const(rt, "steps", self.steps) if self.steps is not None else None
            direct = kk == 1 and self.own_ys is not None
            step_in = _step_inputs(rt, s, ts, [xs[j] for j in self.xs_al],
                                   [self.xnb[j] for j in self.xs_al], ctr, steps_buf,
                                   xv if direct else None)
            extra = [xs[j] for j in self.xs_mis]
            y_views = None
            if direct and any(yv):     # the step writes its own ys slices in place
                y_views = [View(yout[j], t * ynb[j], ynb[j]) if self.own_ys[q] and yv[q]
                           else None for t in ts for q, j in enumerate(ys_al)]
                out_buffers = [None] * len(self.rest) + y_views + [None] * len(accs)
                res = sub.run(rt, consts + rc + step_in + extra + accs, out_buffers=out_buffers)
            else:
                res = sub.run(rt, consts + rc + step_in + extra + accs)
            rc, ys, accs = split_list(res, [len(self.rest), len(ys_al) * kk])
            for st, t in enumerate(ts):
                for q, (j, y) in enumerate(zip(ys_al, ys[st * len(ys_al):(st + 1) * len(ys_al)])):
                    if y_views is None or y is not y_views[st * len(ys_al) + q]:
                        _copy(rt, y, yout[j], ynb[j], dst_offset=t * ynb[j])
            s += kk
            recorded += per_run
            if recorded >= FLUSH_EVERY:     # let the device start while the host records on
                rt.flush()
                recorded = 0
        return rc, accs


    RING_BYTES = 32 << 20   # deferred ys copies: the carries kept alive for them, at most

    def _record_direct(self, rt, run, consts, rc, xs, ctr, accs, yout):
        """``_record_steps`` for one step per run of a body of kernels only, the hot loop of
        an RNN: each step's aligned ``xs`` slices are read and its own ``ys`` slices written
        through views, the body plan runs through ``Bound.runner`` (no per-run lookups), and
        the ``ys`` that must be copied (a carry that is also a ``ys``) are copied in batches
        of up to 16 steps -- their buffers held until then -- so the compute pass is not
        ended for a copy at every step."""
        length, reverse, ynb = self.length, self.reverse, self.ynb
        xv, yv = self._views(rt)
        xa = [xs[j] for j in self.xs_al]
        xanb = [self.xnb[j] for j in self.xs_al]
        own = [bool(o and v) for o, v in zip(self.own_ys, yv)]
        ya = [(yout[j], ynb[j], own[q]) for q, j in enumerate(self.ys_al)]
        n_rest, n_ys = len(self.rest), len(ya)
        extra = [xs[j] for j in self.xs_mis]
        steps_buf = self._const(rt, "steps", self.steps) if self.steps is not None else None
        copy_nb = sum(nb for _, nb, o in ya if not o)
        ring = max(1, min(16, self.RING_BYTES // max(copy_nb, 1)))
        if getattr(rt, "records", False):   # no passes to spare; buffers' lives kept short
            ring = 1
        per_run = len(self.subs[1].plan.steps)
        pending: list = []        # (buffer, ys buffer, bytes, offset) not yet copied
        head = consts + rc        # the inputs before a step's slices (rc: the carries)
        recorded = 0
        out_pre = [None] * n_rest
        out_post = [None] * len(accs)
        any_own = any(own)
        for s in range(length):
            t = length - 1 - s if reverse else s
            step_in = _step_inputs(rt, s, (t,), xa, xanb, ctr, steps_buf, xv)
            if any_own:
                y_views = [View(y, t * nb, nb) if o else None for y, nb, o in ya]
                res = run(head + step_in + extra + accs, out_pre + y_views + out_post)
            else:
                y_views = None
                res = run(head + step_in + extra + accs)
            rc = res[:n_rest]
            for q in range(n_ys):
                y = res[n_rest + q]
                if y_views is None or y is not y_views[q]:
                    dst, nb, _ = ya[q]
                    pending.append((y, dst, nb, t * nb))
            if accs:
                accs = res[n_rest + n_ys:]
            head = consts + rc
            if len(pending) >= ring:
                for args in pending:
                    _copy(rt, args[0], args[1], args[2], dst_offset=args[3])
                pending.clear()
            recorded += per_run
            if recorded >= FLUSH_EVERY:     # let the device start while the host records on
                rt.flush()
                recorded = 0
        for args in pending:
            _copy(rt, args[0], args[1], args[2], dst_offset=args[3])
        return rc, accs

    def _layout(self):
        """The body plan's buffers as the replay sees them (None where it cannot replay):
        ``fixed`` (input position -> scan input: ("c", i) a constant, ("x", q) an xs slice
        read through a view), ``carry_in`` (carry -> input position), ``carry_out`` (carry ->
        slot), ``ys`` (per ys: ("view", slot) written in place, or ("copy", slot)), ``temps``
        (computed slots that are neither: slot -> bytes), ``rot`` (the slots a step's
        successors still read -- carries, copied ys: slot -> bytes)."""
        if "_replay" in self.__dict__:
            return self._replay
        self._replay = None
        bound = self.subs[1].bound
        prog = bound.program()
        n_pre = len(bound.exe._inner) + len(bound.consts)
        n_rest, n_ys = len(self.rest), len(self.ys_al)
        if (self.counters or self.steps is not None or self.xs_mis or self.ys_mis
                or prog.n_in != n_pre + self.nc + n_rest + len(self.xs_al)
                or len(prog.out_slots) != n_rest + n_ys or None in prog.out_slots
                or any(h for h, *_ in prog.steps)):
            return None
        n_in = prog.n_in
        outs = prog.out_slots
        carry_out = outs[:n_rest]
        ys_slots = outs[n_rest:]
        if min(outs, default=n_in) < n_in or len(set(carry_out)) < n_rest:
            return None
        sizes = {}
        for _, _, _, allocs, _ in prog.steps:
            sizes.update(allocs)
        views = {sl for sl, o in zip(ys_slots, self.own_ys) if o}
        ys = [("view" if o else "copy", sl) for sl, o in zip(ys_slots, self.own_ys)]
        rot = {sl: sizes[sl] for sl in carry_out}
        rot.update((sl, sizes[sl]) for kind, sl in ys if kind == "copy")
        if views & set(rot) or not set(sizes) >= set(rot) | views:
            return None
        temps = {sl: n for sl, n in sizes.items() if sl not in rot and sl not in views}
        first = n_pre + self.nc
        self._replay = dict(n_pre=n_pre, prog=prog, first=first,
                            carry_in=list(range(first, first + n_rest)), carry_out=carry_out,
                            xs_in=list(range(first + n_rest, n_in)), ys=ys, temps=temps, rot=rot)
        return self._replay

    def _replay_ok(self, rt) -> bool:
        """Whether this run's steps can be replayed (``_record_replay``): a layout, every
        slice bound through a view at a dynamic offset, no profiler."""
        lay = self._layout()
        if lay is None or rt.profile is not None or not hasattr(rt, "replay"):
            return False
        xv, yv = self._views(rt)
        if not all(xv) or not all(v for v, (kind, _) in zip(yv, lay["ys"]) if kind == "view"):
            return False
        dyn_ok = self._dyn_ok.get(rt.index)
        if dyn_ok is None:      # every view binding of every kernel dynamic on this device
            sites = self.subs[1].bound.binding_sites(
                [i - lay["n_pre"] for i in lay["xs_in"]],
                [len(self.rest) + q for q, (k, _) in enumerate(lay["ys"]) if k == "view"])
            dyn_ok = self._dyn_ok[rt.index] = all(
                set(idx) <= set(rt.dynamic_bindings(w)) for w, idx in sites.items())
        return dyn_ok

    def _record_replay(self, rt, consts, rc, xs, yout):
        """The steps of a kernels-only body recorded as prepared dispatches (``rt.replay``):
        each kernel's bind groups are made (or found in the runtime's cache) once per call
        for a ring of R buffer sets -- step s writes its carries and copied ``ys`` into set
        s % R and reads the previous set --, the ``xs``/``ys`` slices are bound as views at
        dynamic offsets, temporaries are one set for all steps (the queue runs in order), and
        the copied ``ys`` go out R steps at a time.  Per step the host sets a bind group
        with its offsets and dispatches; nothing else.  Returns the final carries."""
        lay = self._layout()
        bound = self.subs[1].bound
        prog = lay["prog"]
        length, reverse = self.length, self.reverse
        exe = bound.exe
        exe.prepare(rt)
        inner, _, pconsts = exe._ready_on[rt.index] if rt.index else exe._ready
        rot_bytes = sum(lay["rot"].values())
        R = max(2, min(16, length, self.RING_BYTES // max(rot_bytes, 1)))
        env = list(inner) + bound._const_buffers(rt) + list(consts)
        env += [None] * (prog.n_slots - len(env))
        for sl, k in prog.const_slots:
            env[sl] = pconsts[k]
        xs_al = [xs[j] for j in self.xs_al]
        mult = {}                   # slot -> bytes a step moves its window by
        for q, pos in enumerate(lay["xs_in"]):
            nb = self.xnb[self.xs_al[q]]
            env[pos] = View(xs_al[q], 0, nb)
            mult[pos] = nb
        for q, (kind, sl) in enumerate(lay["ys"]):
            if kind == "view":
                nb = self.ynb[self.ys_al[q]]
                env[sl] = View(yout[self.ys_al[q]], 0, nb)
                mult[sl] = nb
        temps, ring = self._ring(rt, lay, R)
        for sl, b in temps.items():
            env[sl] = b
        carry_in, carry_out = lay["carry_in"], lay["carry_out"]
        kernels = [(d, slots) for _, d, slots, _, _ in prog.steps]

        def prepared(r_in, r_out):
            """Per kernel: (pipeline, bind group, [(offset, slot mult)] per dynamic binding,
            grid), for a step reading carry set ``r_in`` (None: the scan's inputs) and
            writing set ``r_out``."""
            e = list(env)
            for pos, sl, c in zip(carry_in, carry_out, rc):
                e[pos] = c if r_in is None else ring[r_in][sl]
            for sl, b in ring[r_out].items():
                e[sl] = b
            out = []
            for d, slots in kernels:
                bufs = [e[sl] for sl in slots]
                pipe, bg, offsets = rt.bind(d.wgsl, bufs, d.ranges)
                if offsets is not None:
                    dyn = rt.dynamic_bindings(d.wgsl)
                    offsets = [(o, mult.get(slots[i], 0)) for o, i in zip(offsets, dyn)]
                out.append((pipe, bg, offsets, d.grid))
            return out

        sets: dict = {}
        copies = [(sl, yout[self.ys_al[q]], self.ynb[self.ys_al[q]])
                  for q, (kind, sl) in enumerate(lay["ys"]) if kind == "copy"]
        pending: list = []          # (ring set, t) of steps whose copies are not yet made
        calls: list = []
        since_flush = 0
        for s in range(length):
            t = length - 1 - s if reverse else s
            r_out = s % R
            key = (None if s == 0 else (s - 1) % R, r_out)
            prep = sets.get(key)
            if prep is None:
                prep = sets[key] = prepared(*key)
            for pipe, bg, offsets, grid in prep:
                if offsets is not None:
                    offsets = [o + t * m for o, m in offsets]
                calls.append((pipe, bg, offsets, grid))
            if copies:
                pending.append((r_out, t))
            if len(pending) >= R or len(calls) >= FLUSH_EVERY or s == length - 1:
                rt.replay(calls)
                since_flush += len(calls)
                calls = []
                for r, tt in pending:
                    for sl, dst, nb in copies:
                        _copy(rt, ring[r][sl], dst, nb, dst_offset=tt * nb)
                pending.clear()
                if since_flush >= FLUSH_EVERY:  # the device starts while the host records on
                    rt.flush()
                    since_flush = 0
        last = ring[(length - 1) % R]
        return [last[sl] for sl in carry_out]

    HOLD_BYTES = 4 << 20    # a replay's ring and temporaries are kept between calls up to this

    def _ring(self, rt, lay, R):
        """The temporaries and the ring of R buffer sets of a replay: allocated per call, or
        -- when they are small -- kept between calls, so the bind groups found in the
        runtime's cache are the same every call (buffers from the pool come back in another
        order).  Reusing them in the next call is safe as the pool's reuse is: the queue
        runs in order."""
        held = self._held.get(rt.index)
        if held is not None and held[0] == R:
            return held[1], held[2]
        temps = {sl: rt.alloc(n) for sl, n in lay["temps"].items()}
        ring = [{sl: rt.alloc(n) for sl, n in lay["rot"].items()} for _ in range(R)]
        total = sum(b.nbytes for b in temps.values()) + sum(
            b.nbytes for r in ring for b in r.values())
        if total <= self.HOLD_BYTES:
            self._held[rt.index] = (R, temps, ring)
        return temps, ring

    def _dynamic_views(self, rt):
        """Once per device: the body's kernels take the bindings of the slices the steps
        read and write through views at dynamic offsets (``Runtime.dynamic_offsets``), so
        one bind group serves every step; asked before they are compiled."""
        if rt.index in self._dynamic_done:
            return
        self._dynamic_done.add(rt.index)
        if not hasattr(rt, "dynamic_offsets"):      # a recording (jax.export): no views
            return
        xv, yv = self._views(rt)
        first = self.nc + len(self.rest)            # the step's xs slices come first
        ins = [first + q for q, v in enumerate(xv) if v]
        outs = [len(self.rest) + q for q, (o, v) in enumerate(zip(self.own_ys, yv)) if o and v]
        for wgsl, idx in self.subs[1].bound.binding_sites(ins, outs).items():
            rt.dynamic_offsets(wgsl, idx)

    def _views(self, rt):
        """Which aligned ``xs`` and ``ys`` slices the steps may read and write in place
        (``View``): those whose offsets are multiples of the adapter's binding alignment;
        none in a recording (``jax.export`` replays copies)."""
        if getattr(rt, "records", False):
            return [False] * len(self.xs_al), [False] * len(self.ys_al)
        align = int(rt.target()["min-storage-buffer-offset-alignment"])
        return ([self.xnb[j] % align == 0 for j in self.xs_al],
                [self.ynb[j] % align == 0 for j in self.ys_al])

    @staticmethod
    def _own_ys(plan, n_carry, n_ys):
        """For one step's body plan: per ``ys`` output, whether it is a value of its own (not
        also a carry, another output, an input or a literal) that only the kernel computing it
        binds -- only those are written through a view: a value living in a window of ``ys``
        and read by another kernel (a carry, next step) would be read from a buffer that
        kernel also writes, which one dispatch may not do.  None where the plan holds a host
        step (which would read its inputs' buffers itself, not through a binding)."""
        if any(isinstance(d, HostStep) for d in plan.steps):
            return None
        keys = list(plan.out_keys)
        ins = set(plan.in_keys)
        bound: dict = {}
        for d in plan.steps:
            for k in set(d.keys):
                bound[k] = bound.get(k, 0) + 1
        return [keys.count(k) == 1 and k not in ins and bound.get(k) == 1
                and not _is_lit_key(k) for k in keys[n_carry:n_carry + n_ys]]


def _step_inputs(rt, s, ts, xs, xnb, ctr, steps_buf, views=None) -> list:
    """Buffers for steps s, s+1, ... (at positions ``ts`` of ``xs``): each step's ``xs``
    slices (where ``views[j]``: windows of ``xs[j]`` itself), counter values and (for
    misaligned slices) its step index, copied out."""
    step_in = []
    for st, t in enumerate(ts):
        for j, (x, nb) in enumerate(zip(xs, xnb)):
            if views is not None and views[j]:
                step_in.append(View(x, t * nb, nb))
                continue
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
