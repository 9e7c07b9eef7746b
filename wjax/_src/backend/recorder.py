"""Recorded programs: one run of an executable, written down as data any WebGPU host can replay.

``record(exe, consts, in_avals, max_binding)`` runs the executable's plan once against a
``Recorder`` -- an object with the runtime's interface (``alloc``, ``upload``, ``dispatch``,
``copy``, ...) that performs nothing and writes down every call instead.  Everything a plan does
at run time goes through those calls (kernels, host-recorded scans, the device cond's gate and
indirect dispatches, in-kernel loops chunk by chunk), so the recording is the program, for any
inputs of its shapes.  The only data-dependent decisions a plan makes on the host -- a
``while`` loop's exit and a ``cond`` whose branch holds a loop -- are recorded structurally: the
host steps that make them ask ``rt.records`` and then describe a ``loop`` (with a
``break_if_zero``) or a ``switch`` (``host_steps.py``, ``loops.py``).  A program that reads
values back any other way (a host callback) cannot be recorded: ``Unrecordable``.

The recording (``Recording.program``, JSON-able) is::

    {"kernels": [WGSL, ...],                    # finalized: what a driver compiles
     "buffers": [{"size", "kind", "slot"}, ...],  # kind: input | const | output | temp
     "slots":   [{"size", "indirect"}, ...],   # temps share slots by lifetime
     "inputs": [buffer id, ...], "outputs": [buffer id, ...],
     "consts": [[buffer id, blob index], ...],
     "ops": [op, ...]}

    op = {"op": "dispatch", "kernel": k, "buffers": [ids], "grid": [x, y, z],
          "ranges": null | [null | [byte offset, byte size], ...],   # binding windows
          "indirect": null | [buffer id, byte offset]}                # workgroup counts there
       | {"op": "copy", "src": id, "dst": id, "nbytes": n, "src_offset": a, "dst_offset": b}
       | {"op": "loop", "body": [op, ...]}          # repeats until a break_if_zero fires
       | {"op": "break_if_zero", "buffer": id, "offset": byte offset}   # the u32 there is 0
       | {"op": "switch", "index": id, "branches": [[op, ...], ...]}    # i32 index, clamped

Buffer ``size`` is the byte size to allocate (a multiple of 4, at least 16); every buffer may
be bound as storage or uniform, copied, and read for indirect counts.  An ``output`` buffer is
fresh on every run (outputs never alias inputs, constants or each other); temps with disjoint
lifetimes share a slot (a scan recorded for 1000 steps needs the memory of a few).
``replay(rt, recording, in_buffers)`` runs a recording on a real ``Runtime`` -- the same
interpretation the browser runtime (``wjax/_src/export/wjax-web.js``) makes.
"""
from __future__ import annotations

import itertools
import threading

import numpy as np

from . import wgsl as W
from .execute import nbytes_of
from .runtime import Buffer, Runtime, size_class

_indices = itertools.count(1 << 30)     # recorders' device indices: never a real device's
BINDING = Runtime._BINDING     # a kernel's declared bindings: index, storage|uniform, access


class Unrecordable(Exception):
    """The plan does something at run time that a recording cannot hold."""


class _Gpu:
    """What a recorded buffer stands for: its id and byte size (``Buffer.gpu``)."""

    __slots__ = ("id", "size")

    def __init__(self, i: int, size: int):
        self.id, self.size = i, size


class _Pool:
    """Receives a recorded Buffer when Python drops it: the end of its lifetime."""

    def __init__(self, recorder: "Recorder"):
        self.owner, self.in_use = recorder, 0

    def put(self, gpu, nbytes):
        self.owner._died(gpu.id)


class Recorder:
    """A runtime that records: see the module docstring."""

    records = True
    profile = None

    def __init__(self, max_binding: int):
        self.index = next(_indices)
        self.lock = threading.RLock()
        self.max_binding = int(max_binding)
        self.kernels: dict[str, int] = {}
        self.buffers: list[dict] = []
        self.blobs: list[np.ndarray] = []
        self.ops: list = []               # the block being recorded
        self.pos = 0                      # ops recorded so far (all blocks): lifetimes
        self._pool = _Pool(self)
        self._writes: dict[int, list] = {}   # kernel -> which bindings it may write

    # -------------------------------------------------------------- buffers
    def _new(self, nbytes: int, kind: str) -> Buffer:
        i = len(self.buffers)
        self.buffers.append({"size": nbytes, "kind": kind, "birth": self.pos, "death": None})
        return Buffer(_Gpu(i, nbytes), nbytes, self._pool)

    def _died(self, i: int) -> None:
        self.buffers[i]["death"] = self.pos

    def alloc(self, nbytes: int, indirect: bool = False, prefer: int | None = None) -> Buffer:
        buf = self._new(size_class(nbytes), "temp")       # (a recording has no pool: no
        # buffer to prefer)
        if indirect:
            self.buffers[buf.gpu.id]["indirect"] = True
        return buf

    def upload(self, data: np.ndarray) -> Buffer:
        data = np.ascontiguousarray(data)
        buf = self._new(size_class(data.nbytes), "const")
        self.buffers[buf.gpu.id]["blob"] = len(self.blobs)
        self.blobs.append(data)
        return buf

    def input(self, nbytes: int) -> Buffer:
        return self._new(size_class(nbytes), "input")

    # -------------------------------------------------------------- work
    def _op(self, op: dict) -> None:
        self.ops.append(op)
        self.pos += 1

    def _check_writable(self, buf: Buffer, what: str) -> None:
        if self.buffers[buf.gpu.id]["kind"] in ("const", "input"):
            raise Unrecordable(f"{what} writes into a program input or constant")

    def pipeline(self, wgsl: str):
        return None

    def pipelines(self, sources, raise_errors: bool = True) -> dict:
        return {}         # the host that replays the recording compiles its kernels

    def _kernel(self, wgsl: str) -> int:
        k = self.kernels.get(wgsl)
        if k is None:
            k = self.kernels[wgsl] = len(self.kernels)
            self._writes[k] = [m.group(3) == "read_write" for m in BINDING.finditer(wgsl)]
        return k

    def dispatch(self, wgsl, buffers, grid, ranges=None, indirect=None, meta=None) -> None:
        k = self._kernel(wgsl)
        for b, w in zip(buffers, self._writes[k]):
            if w:
                self._check_writable(b, "a kernel")
        rs = None
        if ranges is not None:
            rs = []
            for b, r in zip(buffers, ranges):
                if r is None:
                    rs.append(None)
                else:
                    off, size = r
                    rs.append([int(off), int(size) if size is not None
                               else min(b.gpu.size - off, self.max_binding)])
        self._op({"op": "dispatch", "kernel": k, "buffers": [b.gpu.id for b in buffers],
                  "grid": [int(g) for g in grid] + [1] * (3 - len(grid)), "ranges": rs,
                  "indirect": None if indirect is None else
                  [getattr(indirect[0], "gpu", indirect[0]).id, int(indirect[1])]})

    def copy(self, src, dst, nbytes, src_offset=0, dst_offset=0) -> None:
        self._check_writable(dst, "a copy")
        self._op({"op": "copy", "src": src.gpu.id, "dst": dst.gpu.id,
                  "nbytes": (int(nbytes) + 3) // 4 * 4, "src_offset": int(src_offset),
                  "dst_offset": int(dst_offset)})

    def flush(self) -> None:
        pass

    def read(self, *args, **kwargs):
        raise Unrecordable("the program reads a value back to the host while it runs (a host "
                           "callback)")

    read_submitted = read

    # -------------------------------------------------------------- control flow
    def _block(self, fn) -> list:
        """Records ``fn()`` into a block of its own; buffers born before the block that Python
        drops inside it live to its end (a loop runs its body again)."""
        saved, self.ops = self.ops, []
        start = self.pos
        try:
            fn()
        finally:
            body, self.ops = self.ops, saved
        for b in self.buffers:
            if b["birth"] < start and b["death"] is not None and b["death"] >= start:
                b["death"] = self.pos
        return body

    def loop(self, body) -> None:
        """Records a loop: ``body()`` records one pass and calls ``break_if_zero``."""
        ops = self._block(body)
        self.ops.append({"op": "loop", "body": ops})
        self.pos += 1

    def break_if_zero(self, buf: Buffer, offset: int = 0) -> None:
        self._op({"op": "break_if_zero", "buffer": buf.gpu.id, "offset": int(offset)})

    def switch(self, index: Buffer, branches) -> None:
        """Records a switch on the int32 at the start of ``index`` (clamped to the branches):
        ``branches[i]()`` records branch i.  What a branch computes for later must be written
        into buffers born before the switch."""
        ops = [self._block(fn) for fn in branches]
        self.ops.append({"op": "switch", "index": index.gpu.id, "branches": ops})
        self.pos += 1


# --------------------------------------------------------------------------- recording

def record(run, in_avals, max_binding: int) -> dict:
    """Records ``run(recorder, input buffers) -> output buffers`` for inputs of ``in_avals``;
    returns the recording (module docstring) with its constant blobs under ``"blobs"``."""
    rec = Recorder(max_binding)
    ins = [rec.input(nbytes_of(a)) for a in in_avals]
    outs = list(run(rec, ins))
    seen = set()
    final = []
    for b in outs:
        entry = rec.buffers[b.gpu.id]
        if entry["kind"] != "temp" or b.gpu.id in seen:
            fresh = rec.alloc(b.gpu.size)
            rec.copy(b, fresh, b.gpu.size)
            b = fresh
        seen.add(b.gpu.id)
        rec.buffers[b.gpu.id]["kind"] = "output"
        final.append(b)
    out_ids = [b.gpu.id for b in final]
    in_ids = [b.gpu.id for b in ins]
    del outs, final, ins, b
    slots = _assign_slots(rec)
    buffers = [{"size": b["size"], "kind": b["kind"], "slot": b.get("slot")}
               for b in rec.buffers]
    return {"kernels": [W.finalize(k) for k in rec.kernels], "buffers": buffers,
            "slots": slots, "inputs": in_ids, "outputs": out_ids,
            "consts": [[i, b["blob"]] for i, b in enumerate(rec.buffers) if b["kind"] == "const"],
            "ops": rec.ops, "blobs": rec.blobs}


def _assign_slots(rec: Recorder) -> list:
    """Gives every temp a slot: temps whose lifetimes [birth, death) do not overlap share one
    (same size class).  Returns the slots: their byte size, and whether a dispatch reads its
    workgroup counts from one."""
    end = rec.pos + 1
    temps = sorted((b["birth"], b["death"] if b["death"] is not None else end, i)
                   for i, b in enumerate(rec.buffers) if b["kind"] == "temp")
    slots: list[dict] = []
    free: dict[int, list] = {}          # size -> slots free now
    busy: list = []                     # (death, slot, size)
    for birth, death, i in temps:
        busy.sort()
        while busy and busy[0][0] <= birth:
            _, s, size = busy.pop(0)
            free.setdefault(size, []).append(s)
        size = rec.buffers[i]["size"]
        pool = free.get(size)
        s = pool.pop() if pool else None
        if s is None:
            s = len(slots)
            slots.append({"size": size, "indirect": False})
        rec.buffers[i]["slot"] = s
        if rec.buffers[i].get("indirect"):
            slots[s]["indirect"] = True
        busy.append((max(death, birth + 1), s, size))
    return slots


# --------------------------------------------------------------------------- replay

class _Break(Exception):
    pass


def replay(rt, recording: dict, in_buffers: list, const_buffers: dict) -> list:
    """Runs ``recording`` on the runtime ``rt`` over ``in_buffers`` (one per input);
    ``const_buffers`` maps a constant's buffer id to its uploaded Buffer.  Returns the output
    Buffers (fresh)."""
    bufs = recording["buffers"]
    env: list = [None] * len(bufs)
    for i, b in zip(recording["inputs"], in_buffers):
        env[i] = b
    env_slots: list = [None] * len(recording["slots"])
    for i, b in enumerate(bufs):
        if b["kind"] == "const":
            env[i] = const_buffers[i]
        elif b["kind"] == "output":
            env[i] = rt.alloc(b["size"])
        elif b["kind"] == "temp":
            s = b["slot"]
            if env_slots[s] is None:
                slot = recording["slots"][s]
                env_slots[s] = rt.alloc(slot["size"], indirect=slot["indirect"])
            env[i] = env_slots[s]
    kernels = recording["kernels"]
    with rt.lock:
        _run_ops(rt, recording["ops"], env, kernels)
    return [env[i] for i in recording["outputs"]]


def _run_ops(rt, ops, env, kernels) -> None:
    for op in ops:
        kind = op["op"]
        if kind == "dispatch":
            ind = op["indirect"]
            rt.dispatch(kernels[op["kernel"]], [env[i] for i in op["buffers"]], op["grid"],
                        None if op["ranges"] is None else [None if r is None else tuple(r)
                                                           for r in op["ranges"]],
                        None if ind is None else (env[ind[0]], ind[1]))
        elif kind == "copy":
            if op["nbytes"]:
                rt.copy(env[op["src"]], env[op["dst"]], op["nbytes"], op["src_offset"],
                        op["dst_offset"])
        elif getattr(rt, "records", False) and kind in ("loop", "break_if_zero", "switch"):
            _rerecord(rt, op, env, kernels)     # a recording replayed into a recorder
        elif kind == "loop":
            try:
                while True:
                    _run_ops(rt, op["body"], env, kernels)
            except _Break:
                pass
        elif kind == "break_if_zero":
            word = np.frombuffer(rt.read(env[op["buffer"]], 4, op["offset"]), np.uint32)[0]
            if word == 0:
                raise _Break
        elif kind == "switch":
            i = int(np.frombuffer(rt.read(env[op["index"]], 4), np.int32)[0])
            branches = op["branches"]
            _run_ops(rt, branches[min(max(i, 0), len(branches) - 1)], env, kernels)
        else:
            raise ValueError(f"wjax: unknown recorded operation {kind!r}")


def _rerecord(rt, op, env, kernels) -> None:
    kind = op["op"]
    if kind == "loop":
        rt.loop(lambda: _run_ops(rt, op["body"], env, kernels))
    elif kind == "break_if_zero":
        rt.break_if_zero(env[op["buffer"]], op["offset"])
    else:
        rt.switch(env[op["index"]], [lambda b=b: _run_ops(rt, b, env, kernels)
                                     for b in op["branches"]])


class Recorded:
    """A recording with its constants, ready to run on any runtime: ``run(rt, in_buffers)``
    (constants uploaded once per device).  Compared by identity (a jaxpr parameter of
    ``call_exported``)."""

    def __init__(self, recording: dict, blobs: list):
        self.recording, self.blobs = recording, blobs
        self._consts: dict = {}

    def run(self, rt, in_buffers: list) -> list:
        consts = self._consts.get(rt.index)
        if consts is None:
            consts = self._consts[rt.index] = {
                i: rt.upload(self.blobs[j]) if self.blobs[j].nbytes else rt.alloc(0)
                for i, j in self.recording["consts"]}
        return replay(rt, self.recording, in_buffers, consts)
