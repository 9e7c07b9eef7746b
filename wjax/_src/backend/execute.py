"""The backend's last stage: executables, plans run on device buffers, host <-> buffer copies.

``Executable`` is a jaxpr lowered for a ``Target`` (``lower.lower_jaxpr``); ``run`` records
its plan's dispatches on a runtime and returns device ``Buffer``s at once (no waiting).
Everything here speaks buffers: ``Array``s are made one layer up (``wjax/_src/dispatch.py``).

A jaxpr's constants reach the backend as *device values* -- any object with a ``buffer``
attribute (an ``Array``) -- or as host values, uploaded here (``const_buffer``).
"""
from __future__ import annotations

import time

import numpy as np

from ..core.ir import ClosedJaxpr, Jaxpr, ShapedArray
from . import disk_cache
from .lower import HostStep, Plan, lower_jaxpr
from .passes import flatten_closed
from .runtime import Buffer, Runtime
from .target import Target
from .wgsl import host_storage_dtype, storage_itemsize


def nbytes_of(aval: ShapedArray) -> int:
    return aval.size * storage_itemsize(aval.dtype)


# --------------------------------------------------------------------------- host <-> buffer

def upload(rt: Runtime, value: np.ndarray) -> Buffer:
    """A new buffer holding ``value`` (already of its final dtype) in the device layout."""
    store = value.astype(host_storage_dtype(value.dtype), copy=False)
    return rt.upload(store) if value.size else rt.alloc(0)


def upload_into(rt: Runtime, buffer: Buffer, value: np.ndarray) -> None:
    """Writes ``value`` (already of its final dtype) into ``buffer``: uploaded, then copied in
    the pending commands, so the write lands in program order."""
    if value.size:
        rt.copy(upload(rt, value), buffer, value.size * storage_itemsize(value.dtype))


def download(rt: Runtime, buffer: Buffer, aval: ShapedArray) -> np.ndarray:
    """The value of a buffer holding ``aval``, as a read-only NumPy array (waits)."""
    store = host_storage_dtype(aval.dtype)
    n = aval.size * store.itemsize
    raw = rt.read(buffer, n) if n else b""
    v = np.frombuffer(raw, dtype=store, count=aval.size).reshape(aval.shape)
    if aval.dtype == np.bool_:
        v = np.asarray(v != 0)   # 0-d comparisons give a NumPy scalar
    else:
        v = v.astype(aval.dtype, copy=False)
    v.flags.writeable = False
    return v


def const_buffer(rt: Runtime, value, aval: ShapedArray) -> Buffer:
    """The buffer of a jaxpr constant: a device value's own, or a host value uploaded."""
    buf = getattr(value, "buffer", None)
    if isinstance(buf, Buffer) and buf.pool.owner is rt:
        return buf
    return upload(rt, np.asarray(value, aval.dtype))


# --------------------------------------------------------------------------- plans

def run_plan(plan: Plan, in_buffers: list, rt: Runtime, indirect=None, out_buffers=None,
             consts=None) -> list:
    """Records the plan's dispatches; returns the output Buffers (or Lits).  ``consts`` holds
    the buffers of the plan's own constants (``Plan.consts``, uploaded by the caller).  With
    ``indirect=(args buffer, first slot)`` the plan's k-th dispatch reads its workgroup counts
    from slot ``first slot + k`` of that buffer (12 bytes a slot); it must hold no HostStep.
    ``out_buffers`` (optional) receive the outputs that the plan computes itself."""
    prog = plan.__dict__.get("_program")
    if prog is None:
        prog = plan._program = Program(plan)
    with rt.lock:   # one thread records a plan at a time: its steps stay contiguous
        return prog.run(rt, in_buffers, indirect, out_buffers, consts)


def _is_lit_key(k) -> bool:
    return isinstance(k, tuple) and bool(k) and k[0] == "lit"


class Program:
    """A plan prepared for running often: buffer keys become slots of a list, and each step
    knows which slots it allocates before and frees after it (the work ``run`` does per call
    is what recording the dispatches needs, nothing proportional to the plan's analysis)."""

    def __init__(self, plan: Plan):
        slot: dict = {}
        for i, k in enumerate(plan.in_keys):
            slot[k] = i
        self.n_in = len(plan.in_keys)
        in_set = set(plan.in_keys)
        # the plan's own constants (``Plan.consts``): slots filled from the caller's buffers
        self.const_slots = []
        for k in plan.consts:
            slot[k] = len(slot)
            self.const_slots.append((slot[k], k))
            in_set.add(k)
        n_fixed = len(slot)
        outs = set(k for k in plan.out_keys if not _is_lit_key(k))
        self.out_slots = []          # per output: its slot, or None (a literal)
        for k in plan.out_keys:
            if _is_lit_key(k):
                self.out_slots.append(None)
                continue
            if k not in slot:
                slot[k] = len(slot)
            self.out_slots.append(slot[k])
        self.lits = [k[1] if _is_lit_key(k) else None for k in plan.out_keys]
        self.steps = []
        for i, d in enumerate(plan.steps):
            slots, allocs = [], []
            for k in d.keys:
                if k not in slot:
                    slot[k] = len(slot)
                s = slot[k]
                if s >= n_fixed:
                    allocs.append((s, nbytes_of(plan.avals[k])))
                slots.append(s)
            frees = [slot[k] for k in dict.fromkeys(d.keys)   # a step may bind one buffer twice
                     if plan.last_use.get(k) == i and k not in outs and k not in in_set]
            self.steps.append((isinstance(d, HostStep), d, slots, allocs, frees))
        self.out_sizes = {slot[k]: nbytes_of(plan.avals[k]) for k in outs
                          if slot[k] >= n_fixed}
        self.n_slots = len(slot)
        self.name = getattr(plan, "name", None)
        # per slot, the id of the GPU buffer it had last call: asked for again (a preference,
        # harmless when stale), so repeated calls bind the same buffers and reuse bind groups
        self._last: list = [None] * self.n_slots
        self._slots_only = None not in self.out_slots
        # a program of ``plan.submit_early`` dispatches or more (``Target.submit_early``:
        # GPUs) submits while it records -- after its 2nd, 6th, 14th, ... dispatch and at its
        # end -- so the device starts on its first kernels while the host records the rest
        # (one submit at ``block_until_ready`` leaves a GPU idle while the call is recorded)
        early = getattr(plan, "submit_early", 0)
        dispatches = [i for i, st in enumerate(self.steps) if not st[0]]
        self.kick_end = bool(early) and len(dispatches) >= early
        self.kicks, mark = set(), 2
        while self.kick_end and mark <= len(dispatches):
            self.kicks.add(dispatches[mark - 1])
            mark = 2 * mark + 2

    def binding_sites(self, in_positions, out_positions) -> dict:
        """Where the given inputs (positions in ``in_buffers``) and outputs are bound: wgsl ->
        the binding indices at which its dispatches bind any of them."""
        want = set(in_positions)
        want.update(self.out_slots[j] for j in out_positions if self.out_slots[j] is not None)
        sites: dict = {}
        for host, d, slots, _, _ in self.steps:
            if not host:
                idx = [b for b, s in enumerate(slots) if s in want]
                if idx:
                    sites.setdefault(d.wgsl, set()).update(idx)
        return sites

    def run(self, rt: Runtime, in_buffers, indirect=None, out_buffers=None,
            consts=None) -> list:
        n_in = self.n_in
        env = list(in_buffers) + [None] * (self.n_slots - n_in)
        for s, k in self.const_slots:
            env[s] = consts[k]
        if out_buffers:
            for s, b in zip(self.out_slots, out_buffers):
                if s is not None and s >= n_in and env[s] is None:
                    env[s] = b
        return self.run_env(rt, env, indirect)

    def tail(self, consts) -> list | None:
        """The slots after the inputs as ``run`` starts them (the plan's constants in place,
        the rest empty), for ``run_env(rt, in_buffers + tail)``; None where a constant's slot
        is among the inputs'."""
        n_in = self.n_in
        tail = [None] * (self.n_slots - n_in)
        for s, k in self.const_slots:
            if s < n_in:
                return None
            tail[s - n_in] = consts[k]
        return tail

    def run_env(self, rt: Runtime, env: list, indirect=None) -> list:
        """Records the steps over ``env`` (a list of ``n_slots``: the inputs, then the
        plan's constants, then empty slots -- written to); returns the outputs."""
        slot = None if indirect is None else indirect[1]
        dispatch, alloc = rt.dispatch, rt.alloc
        prof = rt.profile
        profiling = prof is not None
        if profiling:
            outer, prof.program = prof.program, self.name
        last = self._last
        kicks = self.kicks if indirect is None else ()
        for i, (host, d, slots, allocs, frees) in enumerate(self.steps):
            for s, n in allocs:
                if env[s] is None:
                    b = env[s] = alloc(n, prefer=last[s])
                    last[s] = id(b.gpu)
            bufs = [env[s] for s in slots]
            if host:
                assert indirect is None, "an indirect plan holds a host step"
                d.fn(rt, bufs)
            elif profiling:
                dispatch(d.wgsl, bufs, d.grid, d.ranges,
                         None if indirect is None else (indirect[0], 12 * slot), meta=d)
                slot = None if indirect is None else slot + 1
            elif indirect is None:
                dispatch(d.wgsl, bufs, d.grid, d.ranges)
            else:
                dispatch(d.wgsl, bufs, d.grid, d.ranges, (indirect[0], 12 * slot))
                slot += 1
            for s in frees:
                env[s] = None
            if i in kicks:
                rt.flush()
        if profiling:
            prof.program = outer
        if self.kick_end and indirect is None:
            rt.flush()
        if self._slots_only:      # every output a slot: no literal among them
            result = [env[s] for s in self.out_slots]
            if None not in result:
                return result
        result = []
        for s, lit in zip(self.out_slots, self.lits):
            if s is None:
                result.append(lit)
                continue
            b = env[s]
            if b is None:   # e.g. a zero-size output that no kernel wrote
                b = env[s] = alloc(self.out_sizes[s])
            result.append(b)
        return result


class Executable:
    """A jaxpr lowered for a target; its inputs are the jaxpr's constvars, then its invars.

    Calls inside it are inlined, and so are the compositions the target's ``decompose``
    choices give (``passes.flatten_closed``: a contraction split under a loop limit); constants
    of inner jaxprs become buffers the executable holds itself.  ``run(rt, buffers)`` records
    it and returns one
    Buffer per output; an output the plan knows as a literal comes from a constant buffer.
    Pipelines are compiled, and constants uploaded, on the first run (``prepare``)."""

    def __init__(self, jaxpr: Jaxpr, target: Target, name: str = "jit"):
        t0 = time.perf_counter()
        stats["lowered"] += 1
        self._persist = None     # the disk cache key to store this under once compiled
        self.name = name
        self.in_avals: list[ShapedArray] = [v.aval for v in jaxpr.constvars + jaxpr.invars]
        self.out_avals: list[ShapedArray] = [a.aval for a in jaxpr.outvars]
        opened = Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)
        flat, inner = flatten_closed(ClosedJaxpr(opened, []), target)
        self._inner = [(c, v.aval) for c, v in zip(inner, flat.constvars)]
        self.plan: Plan = lower_jaxpr(flat, target)
        self.plan.name = name
        self.compile_s = time.perf_counter() - t0
        self._ready: tuple | None = None      # (inner const buffers, literal output buffers)
        self._ready_on: dict = {}             # the same for devices other than the default

    @classmethod
    def from_parts(cls, name, in_avals, out_avals, inner, plan, compile_s) -> "Executable":
        """An executable whose plan was lowered before (the persistent cache)."""
        exe = cls.__new__(cls)
        exe.name, exe.in_avals, exe.out_avals = name, in_avals, out_avals
        exe._inner, exe.plan, exe.compile_s = inner, plan, compile_s
        plan.name = name
        exe._ready, exe._persist = None, None
        exe._ready_on = {}
        exe.from_disk = True
        return exe

    from_disk = False

    def prepare(self, rt: Runtime) -> None:
        """Compiles the pipelines and uploads constants (once); then stores the plan in the
        persistent cache when it is on."""
        if rt.index:
            if rt.index not in self._ready_on:
                saved, self._ready = self._ready, None
                try:
                    self._prepare(rt)
                    self._ready_on[rt.index] = self._ready
                finally:
                    self._ready = saved
            return
        if self._ready is not None:
            return
        self._prepare(rt)

    def _prepare(self, rt: Runtime) -> None:
        t0 = time.perf_counter()
        rt.pipelines([d.wgsl for d in self.plan.steps if not isinstance(d, HostStep)])
        inner = [const_buffer(rt, c, aval) for c, aval in self._inner]
        lits = {i: upload(rt, np.asarray(k[1].val, aval.dtype))
                for i, (k, aval) in enumerate(zip(self.plan.out_keys, self.out_avals))
                if _is_lit_key(k)}
        consts = {k: upload(rt, v) for k, v in self.plan.consts.items()}
        self._ready = (inner, lits, consts)
        self.compile_s += time.perf_counter() - t0
        if self._persist is not None:
            disk_cache.save(self._persist, self)
            self._persist = None

    def run(self, rt: Runtime, buffers: list, indirect=None, out_buffers=None) -> list[Buffer]:
        self.prepare(rt)
        inner, lits, consts = self._ready_on[rt.index] if rt.index else self._ready
        outs = run_plan(self.plan, inner + list(buffers), rt, indirect, out_buffers, consts)
        if lits:
            outs = [lits.get(i, o) for i, o in enumerate(outs)]
        return outs


stats = {"lowered": 0}      # plans lowered in this process (not read from the disk cache)


def build(jaxpr: Jaxpr, target: Target, name: str, adapter_info: dict) -> Executable:
    """The executable of ``jaxpr``: from the persistent cache when it is on and holds it,
    else lowered (and stored there once its pipelines are compiled)."""
    k = disk_cache.key(jaxpr, target, adapter_info) if disk_cache.cache_dir() else None
    if k is not None:
        parts = disk_cache.load(k)
        if parts is not None:
            return Executable.from_parts(*parts)
    exe = Executable(jaxpr, target, name)
    exe._persist = k
    return exe


class Bound:
    """An executable with values for its constvars: ``run(rt, buffers)`` takes the invars'."""

    def __init__(self, exe: Executable, consts: list):
        self.exe = exe
        self.consts = [(c, a) for c, a in zip(consts, exe.in_avals)]
        self._bufs: list | None = None
        self._bufs_on: dict = {}       # the same for devices other than the default

    def _const_buffers(self, rt: Runtime) -> list:
        if rt.index:
            bufs = self._bufs_on.get(rt.index)
            if bufs is None:
                bufs = self._bufs_on[rt.index] = [const_buffer(rt, c, a) for c, a in self.consts]
            return bufs
        if self._bufs is None:
            self._bufs = [const_buffer(rt, c, a) for c, a in self.consts]
        return self._bufs

    def run(self, rt: Runtime, buffers: list, indirect=None, out_buffers=None) -> list[Buffer]:
        bufs = self._const_buffers(rt)
        return self.exe.run(rt, bufs + list(buffers), indirect, out_buffers)

    def program(self) -> Program:
        plan = self.exe.plan
        prog = plan.__dict__.get("_program")
        if prog is None:
            prog = plan._program = Program(plan)
        return prog

    def binding_sites(self, in_positions, out_positions) -> dict:
        """``Program.binding_sites`` with input positions in ``run``'s ``buffers``."""
        n = len(self.exe._inner) + len(self.consts)
        return self.program().binding_sites([n + i for i in in_positions], out_positions)

    def runner(self, rt: Runtime):
        """``run(buffers, out_buffers)``, the same as ``run(rt, buffers, out_buffers=...)``
        with what ``run`` looks up per call looked up once (a cached ``jit`` call, a
        recorded scan's steps).  None where the plan returns literal outputs (``run``
        substitutes their constant buffers)."""
        exe = self.exe
        exe.prepare(rt)
        inner, lits, consts = exe._ready_on[rt.index] if rt.index else exe._ready
        if lits:
            return None
        prefix = list(inner) + self._const_buffers(rt)
        prog = self.program()
        prog_run, run_env, tail = prog.run, prog.run_env, prog.tail(consts)
        lock = rt.lock

        def run(buffers, out_buffers=None):
            with lock:
                if out_buffers is None and tail is not None:
                    return run_env(rt, prefix + buffers + tail)
                return prog_run(rt, prefix + buffers, None, out_buffers, consts)
        return run
