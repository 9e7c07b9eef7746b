"""The backend's last stage: executables, plans run on device buffers, host <-> buffer copies.

``Executable`` is a jaxpr lowered for a ``Target`` (``lower.lower_jaxpr``); ``run`` records
its plan's dispatches on a runtime and returns device ``Buffer``s at once (no waiting).
Everything here speaks buffers: ``Array``s are made one layer up (``wjax/dispatch.py``).

A jaxpr's constants reach the backend as *device values* -- any object with a ``buffer``
attribute (an ``Array``) -- or as host values, uploaded here (``const_buffer``).
"""
from __future__ import annotations

import time

import numpy as np

from ..core.ir import ClosedJaxpr, Jaxpr, ShapedArray
from .lower import HostStep, Plan, flatten_closed, lower_jaxpr
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
    if isinstance(buf, Buffer):
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
    with rt.lock:   # one thread records a plan at a time: its steps stay contiguous
        return _run_plan(plan, in_buffers, rt, indirect, out_buffers, consts)


def _is_lit_key(k) -> bool:
    return isinstance(k, tuple) and bool(k) and k[0] == "lit"


def _run_plan(plan, in_buffers, rt, indirect, out_buffers, consts):
    env = dict(zip(plan.in_keys, in_buffers))
    if plan.consts:
        env.update(consts)
    outs = set(k for k in plan.out_keys if not _is_lit_key(k))
    for k, b in zip(plan.out_keys, out_buffers or ()):
        if k in outs and k not in env:
            env[k] = b
    slot = None if indirect is None else indirect[1]
    for i, d in enumerate(plan.steps):
        bufs = []
        for k in d.keys:
            b = env.get(k)
            if b is None:
                b = env[k] = rt.alloc(nbytes_of(plan.avals[k]))
            bufs.append(b)
        if isinstance(d, HostStep):
            assert indirect is None, "an indirect plan holds a host step"
            d.fn(rt, bufs)
        elif indirect is None:
            rt.dispatch(d.wgsl, bufs, d.grid, d.ranges)
        else:
            rt.dispatch(d.wgsl, bufs, d.grid, d.ranges, (indirect[0], 12 * slot))
            slot += 1
        for k in dict.fromkeys(d.keys):     # a step may bind one buffer twice
            if plan.last_use.get(k) == i and k not in outs and k not in plan.in_keys:
                del env[k]
    result = []
    for k in plan.out_keys:
        if _is_lit_key(k):
            result.append(k[1])
        else:
            b = env.get(k)
            if b is None:   # e.g. a zero-size output that no kernel wrote
                b = env[k] = rt.alloc(nbytes_of(plan.avals[k]))
            result.append(b)
    return result


class Executable:
    """A jaxpr lowered for a target; its inputs are the jaxpr's constvars, then its invars.

    Calls inside it are inlined (``lower.flatten_closed``); constants of inner jaxprs become
    buffers the executable holds itself.  ``run(rt, buffers)`` records it and returns one
    Buffer per output; an output the plan knows as a literal comes from a constant buffer.
    Pipelines are compiled, and constants uploaded, on the first run (``prepare``)."""

    def __init__(self, jaxpr: Jaxpr, target: Target, name: str = "jit"):
        t0 = time.perf_counter()
        self.name = name
        self.in_avals: list[ShapedArray] = [v.aval for v in jaxpr.constvars + jaxpr.invars]
        self.out_avals: list[ShapedArray] = [a.aval for a in jaxpr.outvars]
        opened = Jaxpr([], jaxpr.constvars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns)
        flat, inner = flatten_closed(ClosedJaxpr(opened, []))
        self._inner = [(c, v.aval) for c, v in zip(inner, flat.constvars)]
        self.plan: Plan = lower_jaxpr(flat, target)
        self.compile_s = time.perf_counter() - t0
        self._ready: tuple | None = None      # (inner const buffers, literal output buffers)

    def prepare(self, rt: Runtime) -> None:
        """Compiles the pipelines and uploads constants (once)."""
        if self._ready is not None:
            return
        t0 = time.perf_counter()
        for d in self.plan.steps:
            if not isinstance(d, HostStep):
                rt.pipeline(d.wgsl)
        inner = [const_buffer(rt, c, aval) for c, aval in self._inner]
        lits = {i: upload(rt, np.asarray(k[1].val, aval.dtype))
                for i, (k, aval) in enumerate(zip(self.plan.out_keys, self.out_avals))
                if _is_lit_key(k)}
        consts = {k: upload(rt, v) for k, v in self.plan.consts.items()}
        self._ready = (inner, lits, consts)
        self.compile_s += time.perf_counter() - t0

    def run(self, rt: Runtime, buffers: list, indirect=None, out_buffers=None) -> list[Buffer]:
        self.prepare(rt)
        inner, lits, consts = self._ready
        outs = run_plan(self.plan, inner + list(buffers), rt, indirect, out_buffers, consts)
        if lits:
            outs = [lits.get(i, o) for i, o in enumerate(outs)]
        return outs


class Bound:
    """An executable with values for its constvars: ``run(rt, buffers)`` takes the invars'."""

    def __init__(self, exe: Executable, consts: list):
        self.exe = exe
        self.consts = [(c, a) for c, a in zip(consts, exe.in_avals)]
        self._bufs: list | None = None

    def run(self, rt: Runtime, buffers: list, indirect=None, out_buffers=None) -> list[Buffer]:
        if self._bufs is None:
            self._bufs = [const_buffer(rt, c, a) for c, a in self.consts]
        return self.exe.run(rt, self._bufs + list(buffers), indirect, out_buffers)
