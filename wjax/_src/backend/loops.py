"""Loops inside one kernel: a ``while`` or ``scan`` runs as a WGSL ``loop`` in one dispatch
(or a few), instead of one recorded dispatch (or more) per iteration.

DESIGN — how loops run on the device (the choice is made per loop at lowering time)
--------------------------------------------------------------------------------
1. *Per-element kernel loop* (``_LoopKernels.per_element``).  When every equation of the body (and
   of the predicate) is fusable — elementwise math and views — and each non-scalar carry is
   read only at its own position, every thread runs the whole loop for its own element:
   thread ``i`` keeps carry element ``i`` (and every scalar carry, computed redundantly) in
   registers and iterates ``loop { if !pred break; body }``.  Consts and ``xs`` slices are
   read from their buffers at any index; ``ys`` of the carry's shape (or scalars) are
   written at step ``t``.  Any number of elements (many workgroups).
2. *Single-workgroup kernel loop* (``_LoopKernels.one_workgroup``).  A small body that also holds
   reductions or ``dot_general`` (each kernel primitive's ``element`` rule computes one
   output element as a sequential loop; ``dot_general``'s ``element_tile`` rule gives each
   thread a register block of R x C outputs, reading R + C values per contraction step
   instead of 2 R C), or reads carries at other positions (``roll``, ``m @ v``): one
   workgroup holds the carries and every intermediate a kernel op needs in workgroup memory
   -- or, for arrays that do not fit (32 KiB on lavapipe), in storage buffers of their own
   (``scratch`` roles, with ``storageBarrier``); each stage is a strided loop over its
   elements (or the tile loop) and a barrier; the predicate goes through
   ``workgroupUniformLoad`` so the loop stays in uniform control flow.  Each carry has two
   slots (the current one is ``wj_it % 2``): a step writes the next values into the other
   slot, so nothing is copied between steps; a step's new carries and ``ys`` are computed in
   one strided loop per size, through one fuser, so a value shared by several of them is
   computed once.  On CPU adapters the workgroup has 64 threads and constants of 16 bytes to
   64 KiB are read from uniform buffers (lavapipe reads storage and workgroup memory through
   a per-lane loop with a branch per lane; a uniform buffer with one gather).  Taken when an
   iteration is at most ``MAX_WORKGROUP_WORK`` element-steps: the batched RNN cell of issue
   17 (8 x 64 by 64 x 64 products) runs 100 steps in one dispatch, and so does its backward
   pass once the scan is restructured (``restructure_scan``,
   ``wjax/_src/prims/control_rewrites.py``).
   *Split into blocks of rows* (``_row_block``): when the step keeps its carries' rows
   apart -- every row of the new carry computed from that row alone and from values every
   row shares, as an RNN cell over a batch (``transforms/row_split.py`` decides it from the
   primitives' ``axis_map`` rules) -- the loop over ``b`` rows is ``b / block`` loops over
   blocks of rows: the step is rewritten for one block and runs as this form in that many
   workgroups at once (``Target.loop_slices``: a CPU adapter's cores, up to 1024 on GPUs),
   each reading and writing its block of the carries, ``xs`` and ``ys`` (every loop array
   holds its rows along its first axis); values no row owns (a step counter) are computed
   by every workgroup and stored by the first.  A block may fit one workgroup where the
   whole loop does not (the bench's RNN, 64 rows of 256: one-row blocks).  Each row's
   arithmetic is unchanged, so the values are the unsplit loop's (bit for bit on lavapipe;
   a driver may contract two kernels' multiply-adds differently).
   Both forms run at most ``K`` iterations per dispatch (lavapipe stops an invocation after
   65535 loop iterations; a bounded chunk also keeps a dispatch short) and write a 2-word
   state (iterations done, still running).  A ``scan`` takes ceil(length / K) dispatches
   and no readback; a ``while`` reads the "running" word back once per chunk (once, for
   loops shorter than K).  Between chunks the carry ping-pongs between two buffer sets.
3. *Recorded loop* (``wjax/_src/backend/host_steps.py``): any other body (a sort, a scatter, a
   nested loop, too much work per step for one workgroup) is compiled once into a sub-plan that
   the host records per iteration into the same command stream: ``scan`` with no readback,
   ``while`` with a guarded body (``select(pred, body(c), c)``) in chunks of up to 64
   iterations and one predicate readback per chunk.
4. *Host-driven loop*: a ``while`` whose body holds another ``while`` reads its predicate
   back every iteration (a guarded nested loop could spin on garbage).

``cond`` with a traced index picks its branch on the device with indirect dispatches
(``cond_on_device`` in ``wjax/_src/backend/host_steps.py``); inside loop bodies it becomes a select.
"""
from __future__ import annotations

import numpy as np

from ..core.ir import ClosedJaxpr, ShapedArray
from . import wgsl as W
from .execute import const_buffer, nbytes_of, upload
from ..transforms.dce import dce_jaxpr
from ..transforms.row_split import block_jaxpr, find_rows
from .lower import EpilogueMismatch, Fuser, Lowering
from .passes import cse_and_fold, flatten_closed
from .target import Target
from .wgsl import Index, KernelBuilder

DEFAULT_CAP = 1 << 16           # iterations per dispatch where the adapter has no loop limit
MAX_WORKGROUP_WORK = 1 << 17    # element-steps per iteration the single-workgroup form takes on
_U32 = np.dtype(np.uint32)


class InKernelLoop:
    """A loop compiled to one WGSL kernel; ``run`` dispatches it chunk by chunk.

    ``step`` maps (consts, carry, x slices) to ``[pred, *carry]`` (kind ``while``) or to
    ``[*carry, *y slices]`` (kind ``scan``)."""

    def __init__(self, wgsl, grid, roles, consts, K, kind, length, carry_avals,
                 scratch=(), blocks=1):
        self.wgsl, self.grid, self.roles, self.K = wgsl, grid, roles, K
        self.blocks = blocks          # workgroups of a row split, one block of rows each
        self.scratch = list(scratch)  # byte sizes of storage buffers holding loop arrays
        self.kind, self.length, self.carry_avals = kind, length, carry_avals
        self.consts = consts          # (value, aval) of the step's closed consts
        self._fixed = {}              # their buffers and the zero loop state, per device

    def run(self, rt, consts, carry, xs, carry_out, ys_out):
        """Records the loop; writes the final carry into ``carry_out`` and the stacked
        ``ys`` into ``ys_out``.  Returns the number of dispatches."""
        fixed = self._fixed.get(rt.index)
        if fixed is None:
            fixed = self._fixed[rt.index] = ([const_buffer(rt, v, a) for v, a in self.consts],
                                             upload(rt, np.zeros(2, np.uint32)))
        closed, state0 = fixed
        other = [rt.alloc(nbytes_of(a)) for a in self.carry_avals]
        states = [rt.alloc(8), rt.alloc(8)]
        fixed = {"const": consts, "closed": closed, "xs": xs, "ys": ys_out,
                 "scratch": [rt.alloc(n) for n in self.scratch]}
        if self.kind == "while" and getattr(rt, "records", False):   # (backend/recorder.py)
            return self._record_while(rt, fixed, carry, carry_out, other, state0, states)
        cin, sin, c = list(carry), [state0], 0
        while True:
            cout = carry_out if c % 2 == 0 else other
            sout = [states[c % 2]]
            by_role = dict(fixed, cin=cin, cout=cout, sin=sin, sout=sout)
            rt.dispatch(self.wgsl, [by_role[kind][k] for kind, k in self.roles], self.grid)
            cin, sin, c = cout, sout, c + 1
            if self.kind == "scan":
                if c * self.K >= self.length:
                    break
            elif not np.frombuffer(rt.read(sout[0], 8), np.uint32)[1]:
                break
        if cin is other:
            for a, src, dst in zip(self.carry_avals, other, carry_out):
                if nbytes_of(a):
                    rt.copy(src, dst, nbytes_of(a))
        return c


    def _record_while(self, rt, fixed, carry, carry_out, other, state0, states) -> int:
        """The while loop for a recorder: each pass runs one chunk from (``carry_out``, state
        0) into (``other``, state 1), copies them back, and stops once the state says the
        loop is done."""
        sizes = [nbytes_of(a) for a in self.carry_avals]
        for a, src, dst in zip(sizes, carry, carry_out):
            if a:
                rt.copy(src, dst, a)
        rt.copy(state0, states[0], 8)

        def one_pass():
            by_role = dict(fixed, cin=carry_out, cout=other, sin=[states[0]], sout=[states[1]])
            rt.dispatch(self.wgsl, [by_role[kind][k] for kind, k in self.roles], self.grid)
            for a, src, dst in zip(sizes, other, carry_out):
                if a:
                    rt.copy(src, dst, a)
            rt.copy(states[1], states[0], 8)
            rt.break_if_zero(states[0], 4)

        rt.loop(one_pass)
        return 1


def in_kernel_loop(step: ClosedJaxpr, kind: str, n_consts: int, n_carry: int, target: Target,
                   length: int = 0, reverse: bool = False):
    """An :class:`InKernelLoop` for ``step``, or None when the body qualifies for neither
    kernel form (see the module docstring)."""
    if not target.in_kernel_loops or (kind == "scan" and length == 0):
        return None
    j, closed_consts = flatten_closed(step, target)
    j = dce_jaxpr(cse_and_fold(j))[0]
    g = _LoopKernels(j, kind, n_consts, n_carry, target, length, reverse)

    def forms():
        yield g, g.per_element
        split = _row_block(j, kind, n_consts, n_carry, target)
        if split is not None:
            gs = _LoopKernels(split[0], kind, n_consts, n_carry, target, length, reverse,
                              *split[1:])
            yield gs, gs.one_workgroup
        yield g, g.one_workgroup
    for k, form in forms():
        k.reset()
        try:
            src_grid = form()
        except EpilogueMismatch:     # a carry read at another element's position
            src_grid = None
        if src_grid is not None and k.fits():
            consts = [(c, v.aval) for c, v in zip(closed_consts, j.constvars)]
            return InKernelLoop(*src_grid, k.roles(), consts, k.K, kind, length,
                                [v.aval for v in g.carry_v], k.scratch_bytes(), k.slices)
    return None


def _row_block(j, kind, n_consts, n_carry, target):
    """The loop split into independent blocks of rows (``transforms/row_split.py``): (the
    step for one block, the number of blocks -- the most up to ``Target.loop_slices`` that
    divide the rows evenly --, the ids of its variables holding rows), or None where the step
    mixes its carries' rows, or a loop array holds them along another axis than its first."""
    if target.loop_slices < 2:
        return None
    carry = j.invars[n_consts:n_consts + n_carry]
    outs = list(j.outvars)
    new_carry = outs[1:] if kind == "while" else outs[:n_carry]
    rows = find_rows(j, tied=list(zip(carry, new_carry)), candidates=carry)
    if rows is None or any(rows.axis.get(getattr(v, "id", None), 0) != 0
                           for v in j.constvars + j.invars + outs):
        return None
    slices = max(d for d in range(1, min(rows.size, target.loop_slices) + 1)
                 if rows.size % d == 0)
    split = block_jaxpr(j, rows, rows.size // slices) if slices > 1 else None
    if split is None:
        return None
    jb, new = split
    return jb, slices, frozenset(new[i].id for i in rows.axis if i in new)


class _LoopKernels:
    """Generates the two kernel forms over one flattened step jaxpr."""

    def __init__(self, j, kind, n_consts, n_carry, target, length, reverse, slices=1,
                 rows=frozenset()):
        self.j, self.kind, self.target, self.loop_limit = j, kind, target, target.loop_limit
        # a row split (``_row_block``): ``slices`` workgroups, each running the step ``j`` on
        # its block of rows; ``rows``: the ids of j's variables holding rows (along axis 0)
        self.slices, self.rows = slices, rows
        self.length, self.reverse = length, reverse
        self.consts_v = j.invars[:n_consts]
        self.carry_v = j.invars[n_consts:n_consts + n_carry]
        self.xs_v = j.invars[n_consts + n_carry:]
        outs = list(j.outvars)
        if kind == "while":
            self.pred, self.new_carry, self.ys = outs[0], outs[1:], []
        else:
            self.pred, self.new_carry, self.ys = None, outs[:n_carry], outs[n_carry:]
        # kernel ops (not fusable): none in the per-element form, ``element`` rules otherwise
        self.ops = [e for e in j.eqns if e.prim.fuse is None or e.prim.kernel is not None]
        self.role_of = {v.id: ("closed", p) for p, v in enumerate(j.constvars)}
        self.role_of.update({v.id: ("const", p) for p, v in enumerate(self.consts_v)})
        self.lowering = Lowering(j, target)
        for v in j.constvars + j.invars:
            self.lowering.materialized.add(v.id)
            self.lowering.level[v.id] = 0

    def reset(self):
        self.kb = KernelBuilder(int(self.target["max-compute-workgroups-per-dimension"]))
        self.K = 1
        self._in_storage: set = set()     # var ids whose loop arrays live in storage buffers
        self._scratch: list = []          # (elements, dtype) of each such buffer

    def scratch_bytes(self) -> list:
        return [n * W.storage_itemsize(dt) for n, dt in self._scratch]

    @property
    def cap(self) -> int:
        """Iterations one invocation may run: a margin under the adapter's loop limit."""
        return self.loop_limit // 2 if self.loop_limit else DEFAULT_CAP

    def fuser(self, subst) -> Fuser:
        return Fuser(self.kb, self.lowering, None, subst=subst)

    # ------------------------------------------------------------------ shared pieces
    def _loop_head(self):
        kb = self.kb
        kb.emit("var wj_it = 0u;")
        kb.emit("var wj_run = true;")
        kb.emit("loop {")
        kb.emit(f"if (wj_it >= {self.K}u) {{ break; }}")
        if self.kind == "scan":
            L = self.length
            kb.emit(f"if (wj_base + wj_it >= {L}u) {{ wj_run = false; break; }}")
            kb.emit(
                f"let wj_step "
                f"= {f'{L - 1}u - (wj_base + wj_it)' if self.reverse else 'wj_base + wj_it'};"
            )

    def _split(self, v) -> bool:
        """Whether loop array ``v`` is split into the workgroups' blocks of rows."""
        return getattr(v, "id", None) in self.rows

    def _at(self, v) -> str:
        """The offset of this workgroup's block in loop array ``v`` (a prefix of an index)."""
        return f"wj_row * {v.aval.size}u + " if self._split(v) else ""

    def _once(self, v, stmt) -> str:
        """``stmt`` storing into loop array ``v``: where every workgroup computes the same
        (unsplit) value, only the first stores it."""
        return stmt if self.slices == 1 or self._split(v) else f"if (wj_row == 0u) {{ {stmt} }}"

    def _step_size(self, v) -> int:
        """Elements of one step's slice of ``xs``/``ys`` array ``v``, all blocks together."""
        return v.aval.size * (self.slices if self._split(v) else 1)

    def _xs_subst(self) -> dict:
        kb, subst = self.kb, {}
        for p, v in enumerate(self.xs_v):
            name = kb.bind(("xs", p), v.aval.dtype, "read")
            subst[v.id] = (lambda idx, name=name, m=self._step_size(v), at=self._at(v),
                           dt=v.aval.dtype: kb.load(f"{name}[wj_step * {m}u + {at}{idx.flat()}]",
                                                    dt))
        return subst

    def _ys_store(self, p, y, val, flat) -> str:
        name = self.kb.bind(("ys", p), y.aval.dtype, "read_write")
        return self._once(y, f"{name}[wj_step * {self._step_size(y)}u + {self._at(y)}{flat}] "
                             f"= {self.kb.store(val, y.aval.dtype)};")

    def _state_out(self, first) -> str:
        sout = self.kb.bind(("sout", 0), _U32, "read_write")
        if self.slices > 1:
            first = f"{first} && wj_row == 0u"
        return (
            f"if ({first}) {{ {sout}[0] = wj_base + wj_it; {sout}[1] = select(0u, 1u, wj_run); }}"
        )

    def _has_inner_loops(self, lines) -> bool:
        text = "\n".join(lines) + "".join(W.HELPERS[h] for h in self.kb.helpers)
        return any(w in text for w in ("loop {", "for (", "while"))

    # ------------------------------------------------------------------ form 1
    def per_element(self):
        """Thread i runs the whole loop for element i of every non-scalar carry (one shape
        S), scalar carries computed redundantly; registers hold the carry."""
        kb = self.kb
        if self.ops:
            return None
        avals = [v.aval for v in self.carry_v]
        shapes = {a.shape for a in avals if a.ndim}
        if len(shapes) > 1 or any(a.size == 0 for a in avals):
            return None
        shape = shapes.pop() if shapes else ()
        if any(y.aval.shape not in (shape, ()) for y in self.ys):
            return None
        n = int(np.prod(shape))
        self.K = max(1, min(self.cap, self.target.loop_work // n))

        def flat_of(aval):
            return "i" if aval.ndim else "0u"

        regs = []
        for k, v in enumerate(self.carry_v):
            name = kb.bind(("cin", k), v.aval.dtype, "read")
            regs.append(
                kb.var(
                    kb.load(f"{name}[{flat_of(v.aval)}]", v.aval.dtype), W.value_type(v.aval.dtype)
                )
            )
        sin = kb.bind(("sin", 0), _U32, "read")
        kb.emit(f"let wj_base = {sin}[0];")
        self._loop_head()
        subst = {v.id: (flat_of(v.aval), r) for v, r in zip(self.carry_v, regs)}
        subst.update(self._xs_subst())
        f = self.fuser(subst)
        body_start = len(kb.lines)
        if self.pred is not None:
            kb.emit(f"if (!({f.read(self.pred, Index(kb, ()))})) {{ wj_run = false; break; }}")
        vals = [
            kb.let(f.read(a, Index(kb, a.aval.shape, flat=flat_of(a.aval))), kb.vt(a.aval.dtype))
            for a in self.new_carry + self.ys
        ]
        for p, (y, val) in enumerate(zip(self.ys, vals[len(regs):])):
            st = self._ys_store(p, y, val, flat_of(y.aval))
            kb.emit(st if y.aval.ndim else f"if (i == 0u) {{ {st} }}")
        for r, val in zip(regs, vals):
            kb.emit(f"{r} = {val};")
        kb.emit("wj_it = wj_it + 1u;")
        kb.emit("}")
        if self.loop_limit and self._has_inner_loops(kb.lines[body_start:]):
            return None      # an inner loop's iterations would count against the adapter's limit
        for k, v in enumerate(self.carry_v):
            name = kb.bind(("cout", k), v.aval.dtype, "read_write")
            st = f"{name}[{flat_of(v.aval)}] = {kb.store(regs[k], v.aval.dtype)};"
            kb.emit(st if v.aval.ndim else f"if (i == 0u) {{ {st} }}")
        kb.emit(self._state_out("i == 0u"))
        return kb.elementwise_kernel(n)

    # ------------------------------------------------------------------ form 2
    def one_workgroup(self):
        """One workgroup runs the loop: carries and the results of kernel ops (reductions,
        dot_general: each output element a sequential loop, the ``element`` rule) live in
        workgroup memory, every stage is a strided loop over its elements followed by a
        barrier; the predicate is made uniform with ``workgroupUniformLoad``."""
        if any(e.prim.element is None for e in self.ops):
            return None
        stages = self._wg_stages()
        if stages is None or not self._wg_budget(stages):
            return None
        if self.slices > 1 and self._in_storage:
            return None      # a storage array per workgroup: smaller blocks instead
        kb, carries = self.kb, self.carry_v
        kb.uniform_bufs = self._uniform_consts()
        if self.slices > 1:
            kb.emit("let wj_row = wid.x;")
        # each carry has two slots in one array: slot wj_it % 2 is the current value, the
        # other receives the next one (no copy between steps)
        slots = [self._wg_array("wl_c", v, copies=2) for v in carries]
        kb.decls.append("var<workgroup> wl_u: u32;")
        for k, (v, name) in enumerate(zip(carries, slots)):
            src = kb.bind(("cin", k), v.aval.dtype, "read")
            self._strided(v.aval.size, lambda e, name=name, src=src, at=self._at(v): kb.emit(
                f"{name}[{e}] = {src}[{at}{e}];"))
        if self._in_storage:
            kb.emit("storageBarrier();")
        sin = kb.bind(("sin", 0), _U32, "read")
        kb.emit(f"if (lid == 0u) {{ wl_u = {sin}[0]; }}")
        kb.emit("let wj_base = workgroupUniformLoad(&wl_u);")
        self._loop_head()
        kb.emit("let wj_par = wj_it & 1u;")
        subst = {v.id: self._wg_reader(name, v.aval.dtype, f"wj_par * {v.aval.size}u")
                 for v, name in zip(carries, slots)}
        subst.update(self._xs_subst())
        subst.update(self._split_consts())
        self._wg_emit_stages(stages, subst)
        self._wg_emit_step_end(slots, subst)
        if self.loop_limit and self._has_inner_loops([]):
            return None      # a helper's loop would count against the adapter's limit
        kb.emit("let wj_last = wj_it & 1u;")
        for k, (v, name) in enumerate(zip(carries, slots)):
            dst = kb.bind(("cout", k), v.aval.dtype, "read_write")
            self._strided(v.aval.size, lambda e, v=v, name=name, dst=dst, n=v.aval.size: kb.emit(
                self._once(v, f"{dst}[{self._at(v)}{e}] = {name}[wj_last * {n}u + {e}];")))
        kb.emit(self._state_out("lid == 0u"))
        body = "\n  ".join(kb.lines)
        src = (f"{kb.header()}\n@compute @workgroup_size({self._wg})\n"
               f"fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) "
               f"lid: u32) {{\n  {body}\n}}\n")
        return src, (self.slices, 1, 1)

    def _split_consts(self) -> dict:
        """Readers of the constants split into blocks of rows (a mask over the batch)."""
        kb, subst = self.kb, {}
        for v in self.j.constvars + self.consts_v:
            if self._split(v):
                name = kb.bind(v.id, v.aval.dtype, "read")
                subst[v.id] = (lambda idx, name=name, at=self._at(v), dt=v.aval.dtype:
                               kb.load(f"{name}[{at}{idx.flat()}]", dt))
        return subst

    def _uniform_consts(self) -> dict:
        """Constants bound as uniform buffers (key -> elements), where the target's
        ``loop_constants`` is "uniform" (CPU adapters): lavapipe reads a storage or workgroup
        buffer through a per-lane loop with a branch per lane, a uniform buffer with one
        gather (the matmul weights of an RNN cell read ~2x faster).  32-bit elements, 16
        bytes to the adapter's uniform binding limit."""
        if self.target.loop_constants != "uniform":
            return {}
        most = int(self.target.get("max-uniform-buffer-binding-size", 0))
        room = int(self.target.get("max-uniform-buffers-per-shader-stage", 0))
        out = {}
        for v in self.j.constvars + self.consts_v:
            n = v.aval.size
            if (len(out) < room and not self._split(v) and W.storage_itemsize(v.aval.dtype) == 4
                    and W.storage_type(v.aval.dtype) != "f16" and 16 <= 4 * n <= most):
                out[v.id] = n
        return out

    def _barrier(self) -> str:
        """A barrier over the loop's arrays (storage ones need ``storageBarrier``)."""
        if self._in_storage:
            return "storageBarrier(); workgroupBarrier();"
        return "workgroupBarrier();"

    def _wg_stages(self):
        """The values a workgroup loop keeps in workgroup memory, in order: the operands of
        each kernel op (unless a view of values already there) and its outputs."""
        op_ids = {id(e) for e in self.ops}
        self._produced = produced = {v.id: e for e in self.j.eqns for v in e.outvars}
        self._op_ids = op_ids

        def cheap(a):        # a view chain over values already in memory: read it in place
            e = produced.get(a.id)
            return e is None or (id(e) not in op_ids and e.prim.view
                                 and all(not hasattr(x, "id") or cheap(x) for x in e.invars))

        stages, seen = [], set()
        for e in self.ops:
            outs = [a for a in e.invars if hasattr(a, "id") and not cheap(a)] + list(e.outvars)
            for a in outs:
                if a.id not in seen:
                    seen.add(a.id)
                    stages.append(a)
        if any(v.aval.size == 0 for v in stages + self.carry_v):
            return None
        return stages

    def _wg_inner(self, v) -> int:
        """Sequential steps of one element of ``v`` (a kernel op's reduction length)."""
        e = self._produced.get(v.id)
        if e is None or id(e) not in self._op_ids:
            return 0
        if e.prim.name == "dot_general":
            contract = e.params["dimension_numbers"][0][0]
            return int(np.prod([e.invars[0].aval.shape[d] for d in contract]))
        return e.invars[0].aval.size // max(v.aval.size, 1)

    def _tile(self, v):
        """The kernel op computing stage ``v`` when it computes blocks of outputs per thread
        (``element_tile``), else None."""
        e = self._produced.get(v.id)
        if e is not None and id(e) in self._op_ids and e.prim.element_tile is not None:
            return e
        return None

    def _tile_rc(self, v) -> dict:
        """Rows and columns of the block of stage ``v`` one thread computes (the target's
        ``register_block``): "large" on CPU adapters, where every memory load is a per-lane
        loop; "small" on GPUs, smaller still (down to one output) while the blocks would
        leave threads of the workgroup idle (a one-row block of an RNN's rows: 256 outputs,
        one a thread rather than two for half the threads)."""
        if self.target.register_block == "large":
            return {"rows": 4, "cols": 8}
        rows, cols = 2, 2
        while rows * cols > 1 and v.aval.size < self._wg * rows * cols:
            rows, cols = (rows, cols // 2) if cols >= rows else (rows // 2, cols)
        # and each output summed in 4 interleaved parts (``_dot_tile``'s ``splits``): the
        # same for every block size, so a loop split into blocks of rows adds in the order
        # the whole loop does
        return {"rows": rows, "cols": cols, "splits": 4}

    def _wg_budget(self, stages) -> bool:
        """Whether one iteration fits (work, workgroup memory); sets the workgroup size and K,
        the iterations per dispatch."""
        carries, roots = self.carry_v, self.new_carry + self.ys
        work = (sum(v.aval.size * (self._wg_inner(v) + 1) for v in stages)
                + sum(a.aval.size for a in roots))
        if work > MAX_WORKGROUP_WORK:
            return False
        # arrays that do not fit workgroup memory live in storage buffers (largest first)
        arrays = sorted([(4 * v.aval.size, v) for v in stages]
                        + [(8 * v.aval.size, v) for v in carries], key=lambda t: -t[0])
        room = int(self.target["max-compute-workgroup-storage-size"]) - 16
        shared = sum(n for n, _ in arrays)
        for n, v in arrays:
            if shared <= room:
                break
            self._in_storage.add(v.id)
            shared -= n
        biggest = max(v.aval.size for v in stages + carries + roots)
        wg = self._wg = min(int(self.target.loop_workgroup),
                            int(self.target["max-compute-invocations-per-workgroup"]),
                            max(32, 1 << (biggest - 1).bit_length()))

        def trips(size, inn=0):
            return (-(-size // wg) + 1) * (inn + 1)

        def stage_trips(v):
            e = self._tile(v)
            if e is None:
                return trips(v.aval.size, self._wg_inner(v))
            return 1 + e.prim.element_tile(None, wg, None, [a.aval for a in e.invars], v.aval,
                                           None, **self._tile_rc(v), **e.params)
        per_iter = 2 + sum(stage_trips(v) for v in stages) + sum(
            trips(a.aval.size) for a in roots) + sum(2 * trips(v.aval.size) for v in carries)
        self.K = min(self.cap // per_iter, max(1, self.target.loop_work // work))
        return self.K >= 1

    def _wg_array(self, prefix, v, copies=1) -> str:
        """An array of ``copies`` x the elements of ``v``, in workgroup memory or (when the
        budget moved ``v`` out) in a storage buffer of its own."""
        kb = self.kb
        if v.id in self._in_storage:
            self._scratch.append((v.aval.size * copies, v.aval.dtype))
            return kb.bind(("scratch", len(self._scratch) - 1), v.aval.dtype, "read_write")
        name = kb.fresh(prefix)
        if v.aval.dtype == np.float16:
            kb.enable_f16 = True
        kb.decls.append(f"var<workgroup> {name}: "
                        f"array<{W.storage_type(v.aval.dtype)}, {v.aval.size * copies}>;")
        return name

    def _wg_reader(self, name, dt, base=None):
        if base is None:
            return lambda idx: self.kb.load(f"{name}[{idx.flat()}]", dt)
        return lambda idx: self.kb.load(f"{name}[{base} + {idx.flat()}]", dt)

    def _strided(self, size, fn):
        """A loop of the workgroup's threads over ``size`` elements; ``fn(e)`` emits the body."""
        kb = self.kb
        e = kb.fresh("e")
        kb.emit(f"for (var {e} = lid; {e} < {size}u; {e} = {e} + {self._wg}u) {{")
        fn(e)
        kb.emit("}")

    def _wg_value(self, v, idx, subst) -> str:
        e = self._produced.get(v.id)
        if e is not None and id(e) in self._op_ids:
            readers = [(lambda ix, a=a: self.fuser(subst).read(a, ix)) for a in e.invars]
            return e.prim.element(self.kb, idx, readers, [a.aval for a in e.invars], v.aval,
                                  **e.params)
        return self.fuser(subst).read(v, idx)

    def _wg_emit_stages(self, stages, subst) -> None:
        """Each stage into its workgroup array, then a barrier; the predicate, uniformly."""
        kb = self.kb
        for v in stages:
            name = self._wg_array("wl_m", v)
            op = self._tile(v)
            if op is not None:
                readers = [(lambda ix, a=a: self.fuser(subst).read(a, ix)) for a in op.invars]
                op.prim.element_tile(
                    kb, self._wg, readers, [a.aval for a in op.invars], v.aval,
                    lambda flat, val, name=name, dt=v.aval.dtype: kb.emit(
                        f"{name}[{flat}] = {kb.store(val, dt)};"),
                    **self._tile_rc(v), **op.params)
                kb.emit(self._barrier())
                subst[v.id] = self._wg_reader(name, v.aval.dtype)
                continue

            def stage(e, v=v, name=name):
                val = self._wg_value(v, Index(kb, v.aval.shape, flat=e), subst)
                kb.emit(f"{name}[{e}] = {kb.store(val, v.aval.dtype)};")
            self._strided(v.aval.size, stage)
            kb.emit(self._barrier())
            subst[v.id] = self._wg_reader(name, v.aval.dtype)
        if self.pred is not None:
            kb.emit("if (lid == 0u) {")
            kb.emit(f"wl_u = select(0u, 1u, {self.fuser(subst).read(self.pred, Index(kb, ()))});")
            kb.emit("}")
            kb.emit("if (workgroupUniformLoad(&wl_u) == 0u) { wj_run = false; break; }")

    def _wg_emit_step_end(self, slots, subst) -> None:
        """The new carries (into their other slot) and this step's ``ys``: one strided loop
        per size, reading every value through one fuser, so values shared by several roots
        (a new carry that is also a ``ys``) are computed once."""
        kb = self.kb
        roots = [(a, ("carry", name, v.aval.size)) for v, a, name in
                 zip(self.carry_v, self.new_carry, slots)]
        roots += [(y, ("ys", p)) for p, y in enumerate(self.ys)]
        by_size: dict = {}
        for a, dst in roots:
            by_size.setdefault(a.aval.size, []).append((a, dst))

        def body(e, group):
            f = self.fuser(subst)
            for a, dst in group:
                val = f.read(a, Index(kb, a.aval.shape, flat=e))
                if dst[0] == "carry":
                    _, name, n = dst
                    kb.emit(f"{name}[(1u - wj_par) * {n}u + {e}] = {kb.store(val, a.aval.dtype)};")
                else:
                    kb.emit(self._ys_store(dst[1], a, val, e))
        for size, group in by_size.items():
            self._strided(size, lambda e, group=group: body(e, group))
        kb.emit(self._barrier())
        kb.emit("wj_it = wj_it + 1u;")
        kb.emit("}")

    # ------------------------------------------------------------------ checks
    def fits(self) -> bool:
        kb = self.kb
        if len(kb.bindings) > int(self.target["max-storage-buffers-per-shader-stage"]):
            return False
        max_binding = int(self.target["max-storage-buffer-binding-size"])
        for key, _, _ in kb.bindings:
            a = self._binding_aval(key)
            if a is not None and a.size * W.storage_itemsize(a.dtype) > max_binding:
                return False
        return True

    def _binding_aval(self, key):
        """The array a binding holds, all blocks of rows together (for the binding-size
        check)."""
        if isinstance(key, tuple):
            kind, k = key
            if kind in ("cin", "cout"):
                return self._whole(self.carry_v[k])
            if kind in ("xs", "ys"):
                a = self._whole((self.xs_v if kind == "xs" else self.ys)[k])
                return a.update(shape=(self.length,) + a.shape)
            if kind == "scratch":
                n, dt = self._scratch[k]
                return ShapedArray((n,), dt)
            return None
        for v in self.j.constvars + self.j.invars:
            if v.id == key:
                return self._whole(v)
        return None

    def _whole(self, v):
        """The aval of loop array ``v`` with every block of rows."""
        a = v.aval
        return a.update(shape=(a.shape[0] * self.slices,) + a.shape[1:]) if self._split(v) else a

    def roles(self) -> list:
        return [
            key if isinstance(key, tuple) else self.role_of[key] for key, _, _ in self.kb.bindings
        ]
