"""Lowering: Jaxpr -> Plan (fusion groups, buffers, dispatch order).

Every primitive is either *fusable* (it has a ``fuse`` rule: the value at an
output index is an expression of operand values at computed indices; this is
elementwise math and every view: broadcast, reshape, transpose, slice, pad,
gather, ...) or a *kernel* op (it has a ``kernel`` rule that emits whole
dispatches: reductions, matmul, sort, scatter...).

Fusable values are *virtual* — recomputed inside whichever kernel reads them —
unless they must live in a buffer ("materialized"): jaxpr outputs and operands
of kernel ops that cannot take a fused producer.  Each var gets a *level*, the
number of kernel ops beneath it; materialized fusable roots of equal level and
shape share one multi-output kernel.  Execution order is by level: the kernel
ops of level L, then the fused groups of level L.
"""
from __future__ import annotations

import hashlib
import itertools
from typing import Callable

import numpy as np

from ..core.ir import Eqn, Jaxpr, Lit, ShapedArray, Var
from ..transforms.dce import dce_jaxpr
from . import wgsl as W
from .target import Target
from .wgsl import Index, KernelBuilder
from .passes import (broadcast_splits, check_avals, chunk_wide_concats, cse_and_fold,
                     deep_fusion_splits, row_groups, attention_groups, deferred_normalization)


class Dispatch:
    """One kernel launch; ``ranges`` (per binding: None, or a (byte offset, byte size) window,
    size None for the rest of the buffer) bind windows of buffers larger than one binding."""

    __slots__ = ("wgsl", "keys", "grid", "writes", "ranges", "label", "flops", "nbytes")

    def __init__(self, wgsl: str, keys: list, grid: tuple, writes: list,
                 ranges: list | None = None, label: str = "kernel", flops: int = 0,
                 nbytes: int = 0):
        self.wgsl, self.keys, self.grid, self.writes, self.ranges = wgsl, keys, grid, writes, ranges
        # what the profiler shows: the equations it computes, and its work (an estimate)
        self.label, self.flops, self.nbytes = label, flops, nbytes


class HostStep:
    """A step that runs Python at execution time (a control-flow primitive's driver:
    it may record sub-plans, read a predicate back, loop).  ``fn(rt, buffers)`` gets the
    Buffers of ``keys`` in order; the ones in ``writes`` are its outputs."""

    __slots__ = ("fn", "keys", "writes", "wgsl", "ranges", "grid")

    def __init__(self, fn: Callable, keys: list, writes: list, label: str = "host step"):
        self.fn, self.keys, self.writes = fn, list(keys), list(writes)
        self.wgsl, self.ranges, self.grid = f"// {label} (runs on the host)", None, None


class Plan:
    """What running a jaxpr takes: dispatches over buffer keys, in order."""

    def __init__(self):
        self.steps: list[Dispatch | HostStep] = []
        self.in_keys: list = []            # constvars then invars
        self.out_keys: list = []           # key, or ("lit", Lit)
        self.avals: dict = {}              # key -> aval (for allocation)
        self.aliases: dict = {}            # key -> key it shares storage with
        self.last_use: dict = {}           # key -> index of last step reading it
        self.consts: dict = {}             # key -> host value a kernel rule asked for
                                           # (``KernelContext.constant``), uploaded once
        self.submit_early = 0              # ``Target.submit_early`` (``execute.Program``)

    def wgsl_text(self) -> str:
        return "\n".join(
            f"// ---- kernel {i}: grid {d.grid}\n{d.wgsl}" for i, d in enumerate(self.steps)
        )


# --------------------------------------------------------------------------- fuser

class EpilogueMismatch(Exception):
    """An epilogue could not be fused into its producer kernel (planning falls back)."""


def _same_position(idx: Index, flat: str, pos: Index | None) -> bool:
    """Whether ``idx`` is the position ``flat`` (a kernel's own output position, ``pos``
    where the kernel has its coordinates): the same flat offset, or the same coordinates as
    ``pos`` took apart (a read through transposes that cancel rebuilds the flat offset from
    them under another name)."""
    if idx._flat == flat:
        return True
    kb = idx.kb
    if pos is not None and idx._dims is not None and pos._dims is not None \
            and idx.shape == pos.shape:
        return [kb.resolve(d) for d in idx._dims] == [kb.resolve(d) for d in pos._dims]
    return idx.flat() == flat


class Fuser:
    """Generates the WGSL value of a var at an Index, inlining fusable producers.

    ``subst`` maps a var to (flat index expr, value expr): inside a kernel's epilogue the
    kernel's own result is read from a register, at its own position only (an in-kernel
    loop's carry likewise).  It may instead map a var to a function Index -> expr."""

    def __init__(self, kb: KernelBuilder, lowering: "Lowering", level: int | None, subst=None,
                 inline=frozenset()):
        self.kb, self.lowering, self.level = kb, lowering, level
        self.memo: dict = {}
        self.subst = subst or {}
        # values computed here from their producers though they have a buffer: a kernel's
        # operand that the kernel itself stores (``Lowering.stored_by``)
        self.inline = inline

    def _vec_read(self, k, aval, idx: Index):
        """In a vec4 kernel, a read at a position other than the flat ``i``: the same for
        all lanes (an eager op's Python scalar, a reduction's broadcast operand) is one
        scalar read, splatted; 4 consecutive positions of the innermost dim (``kb.lane_dim``:
        a per-column operand when the lanes are 4 adjacent columns) are a vec4 load.  Returns
        the value, or None (then the read is scalar, which ends the vec4 attempt).  A lane
        placeholder (``wj_vb``, ``wj_vr``) is never defined in WGSL: if one ever reaches
        code, the vec4 kernel fails to compile and the scalar one is used."""
        kb = self.kb
        if aval.ndim == 0:
            flat = "0u"
        else:
            dims = idx._dims if idx._dims is not None else (
                [idx._flat] if len(aval.shape) == 1 else None)
            if dims is not None and any(kb.resolve(d) == kb.lane_dim for d in dims):
                if (kb.resolve(dims[-1]) != kb.lane_dim or aval.shape[-1] % kb.vec
                        or not all(kb.uniform(d) for d in dims[:-1])):
                    return None
                base = Index(kb, aval.shape, dims=list(dims[:-1]) + [kb.lane_base]).flat()
                name = kb.bind(k, aval.dtype, "read")
                kb.nonflat_keys.add(k)
                return kb.let(kb.load(f"{name}[({base}) / {kb.vec}u]", aval.dtype),
                              kb.vt(aval.dtype))
            if dims is not None and not all(kb.uniform(d) for d in dims):
                return None
            flat = idx.flat()
            if not kb.uniform(flat):
                return None
        vec, kb.vec = kb.vec, 1
        name = kb.bind(k, aval.dtype, "read")
        expr = kb.load(f"{name}[{flat}]", aval.dtype)
        kb.vec = vec
        kb.nonflat_keys.add(k)
        return kb.let(f"vec{vec}<{W.value_type(aval.dtype)}>({expr})", kb.vt(aval.dtype))

    def read(self, atom, idx: Index) -> str:
        aval = atom.aval
        if isinstance(atom, Lit):
            return self.kb.lit(atom.val, aval.dtype)
        if aval.ndim == 0:
            idx = Index(self.kb, ())
        if atom.id in self.subst:
            if callable(self.subst[atom.id]):          # a value readable at any index
                return self.subst[atom.id](idx)
            flat, value, *pos = self.subst[atom.id]
            if not _same_position(idx, flat, pos[0] if pos else None):
                raise EpilogueMismatch(atom)
            return value
        key = (atom.id, idx.key())
        if key in self.memo:
            return self.memo[key]
        lowering = self.lowering
        eqn = lowering.producer.get(atom.id)
        inline = (
            eqn is not None
            and eqn.prim.fuse is not None
            and atom.id not in lowering.split
            and (atom.id not in lowering.materialized or lowering.level[atom.id] == self.level
                 or atom.id in self.inline)
        )
        if inline:
            self.kb.ops.append(eqn)
            readers = [(lambda ix, a=a: self.read(a, ix)) for a in eqn.invars]
            expr = eqn.prim.fuse(
                self.kb, idx, readers, [a.aval for a in eqn.invars], aval, **eqn.params
            )
            expr = W.wrap_narrow(expr, aval.dtype)
        else:
            if (
                self.subst
                and self.level is not None
                and lowering.level.get(atom.id, 0) >= self.level
            ):
                raise EpilogueMismatch(atom)   # not computed yet when the epilogue runs
            k = lowering.key_of(atom)
            kb = self.kb
            if kb.vec > 1 and kb.vec_ok and idx._flat not in kb.flat_names:
                got = self._vec_read(k, aval, idx)
                if got is not None:
                    self.memo[key] = got
                    return got
            name = self.kb.bind(k, aval.dtype, "read")
            flat = idx.flat()
            if flat == "0u" and aval.ndim == 0:
                self.kb.nonflat_keys.add(k)     # read once: a vec4 kernel splats it
            elif flat not in self.kb.flat_names:
                self.kb.vec_ok = False
                self.kb.nonflat_keys.add(k)
            expr = self.kb.load(self.kb.elem(name, flat), aval.dtype)
        out = self.kb.let(expr, self.kb.vt(aval.dtype))
        self.memo[key] = out
        return out


# --------------------------------------------------------------------------- lowering

class KernelContext:
    """What a kernel rule sees: its equation, readers for operands, output keys."""

    def __init__(self, lowering: "Lowering", eqn: Eqn):
        self.lowering, self.eqn = lowering, eqn
        self.target = lowering.target

    @property
    def max_groups(self):
        return self.target["max-compute-workgroups-per-dimension"]

    def new_kb(self) -> KernelBuilder:
        return self.lowering.new_kb()

    def reader(self, kb: KernelBuilder, i: int, fuser: Fuser | None = None):
        """A function Index -> WGSL expr for operand ``i`` (fused producers inlined)."""
        f = fuser or Fuser(kb, self.lowering, None)
        a = self.eqn.invars[i]
        return lambda idx: f.read(a, idx)

    def fuser(self, kb: KernelBuilder) -> Fuser:
        return Fuser(kb, self.lowering, None)

    @property
    def stores(self) -> tuple:
        """Positions of the operands this kernel computes from their producers and stores
        itself (``Primitive.store_inputs``, ``Lowering.stored_by``)."""
        got = self.lowering.stored_by
        return tuple(i for i, a in enumerate(self.eqn.invars)
                     if isinstance(a, Var) and got.get(a.id, (None,))[0] is self.eqn)

    def compute_first(self, i: int) -> None:
        """Computes stored operand ``i`` by a fused kernel of its own before this kernel
        (a kernel that cannot store it after all reads it from its buffer then).  The claim
        stays: a kernel whose steps are taken back (an epilogue that did not fit) and built
        again dispatches it again."""
        a = self.eqn.invars[i]
        self.lowering._fused_group([a], self.lowering.level[a.id])

    epilogue: list = []   # fused roots the kernel should also compute (set by the Lowering)
    # whether nothing but the epilogue reads the output (set by the Lowering): a kernel that
    # honours it (the matmul kernels) computes the roots and stores no output of its own
    output_dead: bool = False

    def epilogue_code(self, kb: KernelBuilder, value: str, flat: str, more=()) -> list:
        """WGSL lines computing and storing every epilogue root at flat position ``flat``
        of this kernel's output, whose value there is ``value`` (a register).  ``more``:
        (var, register) pairs of further outputs at the same position (a merged kernel's:
        ``jnp.var``'s two sums, which its standard deviation reads both of)."""
        if not self.epilogue:
            return []
        saved, kb.lines = kb.lines, []
        out = self.eqn.outvars[0]
        # the output's position, shared by the roots of its shape: a root that reads the
        # output through transposes that cancel (a convolution's NHWC output) reaches it at
        # the coordinates this Index takes apart, not at ``flat`` itself
        pos = Index(kb, out.aval.shape, flat=flat)
        subst = {out.id: (flat, value, pos)}
        subst.update({v.id: (flat, val) + ((pos,) if v.aval.shape == out.aval.shape else ())
                      for v, val in more})
        f = Fuser(kb, self.lowering, self.lowering.level[out.id], subst=subst)
        for r in self.epilogue:    # (a root of another shape reads the outputs at ``flat``,
            #                         or the Fuser raises EpilogueMismatch)
            at = src = None
            if self.eqn.prim.epilogue_layouts:
                # a root that is a reshape of a permuted output (flax's attention output
                # merged into (b, s, h * d)) is its source's value at the source's position:
                # the same flat offset in both
                src = self._view_source(r)
                at = self._transposed_position(src, pos)
            if at is None:
                at = pos if r.aval.shape == out.aval.shape else Index(kb, r.aval.shape, flat=flat)
                val = Lowering._read_root(f, r, at)
            else:
                val = Lowering._read_root(f, r, at) if src is r else f.read(src, at)
            name = kb.bind(self.lowering.key_of(r), r.aval.dtype, "read_write")
            kb.emit(f"{name}[{at.flat()}] = {kb.store(val, r.aval.dtype)};")
            if r.id in self.lowering.split:    # later roots read it here (it is not inlined)
                f.subst[r.id] = (at.flat(), val, at)
        lines, kb.lines = kb.lines, saved
        return lines

    def _view_source(self, r: Var) -> Var:
        """The fused value that root ``r`` is a contiguous reshape of (through reshapes that
        have no buffer of their own), or ``r`` itself."""
        src = r
        while True:
            e = self.lowering.producer.get(src.id)
            if (e is None or not e.prim.shares_storage or not isinstance(e.invars[0], Var)
                    or e.invars[0].id in self.lowering.materialized):
                return src
            src = e.invars[0]

    def _transposed_position(self, r: Var, pos: Index) -> Index | None:
        """The position of epilogue root ``r`` at which it reads this kernel's output at
        ``pos``, where ``r`` reads the output through a permutation of its axes (transposes,
        reshapes that keep the shape): ``r``'s coordinates are ``pos``'s, permuted.  Found by
        reading ``r`` at placeholder coordinates in a scratch kernel and seeing which of them
        reach the output along which axis; None where the reads are not such a permutation
        (another shape, several positions)."""
        out = self.eqn.outvars[0]
        if r.aval.size != out.aval.size:
            return None
        kb = self.lowering.new_kb()
        names = [f"wj_q{d}" for d in range(r.aval.ndim)]
        reads = []

        def at_output(idx):
            if idx._dims is None:
                reads.append(None)
            else:
                reads.append(tuple(kb.resolve(d) for d in idx._dims))
            return W.zero(out.aval.dtype)
        f = Fuser(kb, self.lowering, self.lowering.level[out.id], subst={out.id: at_output})
        try:
            Lowering._read_root(f, r, Index(kb, r.aval.shape, dims=names))
        except EpilogueMismatch:
            return None
        if not reads or any(rd != reads[0] for rd in reads) or reads[0] is None:
            return None
        axis = {}            # root axis -> output axis it is read along
        for j, (d, n) in enumerate(zip(reads[0], out.aval.shape)):
            if d in names:
                i = names.index(d)
                if i in axis or r.aval.shape[i] != n:
                    return None
                axis[i] = j
            elif not (d == "0u" and n == 1):
                return None
        if any(i not in axis and n != 1 for i, n in enumerate(r.aval.shape)):
            return None
        dims = pos.dims()
        return Index(pos.kb, r.aval.shape,
                     dims=[dims[axis[i]] if i in axis else "0u" for i in range(r.aval.ndim)])

    def in_key(self, i: int):
        return self.lowering.key_of(self.eqn.invars[i])

    def out_key(self, j: int = 0):
        return self.lowering.key_of(self.eqn.outvars[j])

    def scratch(self, aval: ShapedArray):
        k = ("scratch", next(self.lowering._scratch_ids))
        self.lowering.plan.avals[k] = aval
        return k

    def constant(self, value: np.ndarray):
        """The key of a read-only buffer holding ``value`` (a host array of its final dtype,
        e.g. a table of twiddle factors computed in float64): it is uploaded once per
        executable (``Executable.prepare``) and bound like any other buffer.  Equal values
        share one buffer within a plan."""
        value = np.ascontiguousarray(value)
        k = ("const", value.dtype.str, value.shape, hashlib.sha1(value.tobytes()).hexdigest())
        plan = self.lowering.plan
        if k not in plan.consts:
            value.flags.writeable = False
            plan.consts[k] = value
            plan.avals[k] = ShapedArray(value.shape, value.dtype)
        return k

    def dispatch(self, kb: KernelBuilder, src: str, grid) -> None:
        self.lowering.add_dispatch(kb, src, grid, self.eqn)

    def host_step(self, fn, in_keys, out_keys, label="host step", wgsl=None) -> None:
        """Appends a HostStep reading ``in_keys`` and writing ``out_keys`` (``wgsl``: the
        kernel it dispatches, shown by ``lower().as_text()``)."""
        step = HostStep(fn, list(in_keys) + list(out_keys), out_keys, label)
        if wgsl:
            step.wgsl += "\n" + wgsl
        self.lowering.plan.steps.append(step)


class BindingOverflow(Exception):
    """A kernel would bind more storage buffers than the device allows (``windowed``: some
    of them are windows of a buffer larger than one binding)."""

    def __init__(self, var, n, windowed=False):
        super().__init__(var, n)
        self.var, self.n, self.windowed = var, n, windowed


class Lowering:
    def __init__(self, jaxpr: Jaxpr, target: Target, split=frozenset(), small=frozenset()):
        self.jaxpr, self.target = jaxpr, target
        self.max_storage = int(target["max-storage-buffers-per-shader-stage"])
        self.plan = Plan()
        self.plan.submit_early = int(target.submit_early or 0)
        self._scratch_ids = itertools.count()
        self.producer: dict[int, Eqn] = {}
        for e in jaxpr.eqns:
            for v in e.outvars:
                self.producer[v.id] = e
        self.materialized: set[int] = set()
        self.level: dict[int, int] = {}
        self.eqn_level: dict[int, int] = {}    # per equation (one with no outputs too)
        self.split: set[int] = set(split)   # fusable vars forced into their own kernel
        # the splits that are small values broadcast into large kernels
        # (``passes.broadcast_splits``): an epilogue may compute them
        self.small: set[int] = set(small)
        # operand copies a kernel rule made, by (value, layout): products reading one value
        # in one layout share a copy (``dot._canonical``)
        self.copies: dict = {}
        self._readers: dict | None = None    # var id -> the equations reading it
        # fused values that have a buffer but are stored by the kernel reading them, which
        # computes them from their producers in its loads (``Primitive.store_inputs``): var
        # id -> (that equation, operand position)
        self.stored_by: dict[int, tuple] = {}
        avals = self.plan.avals
        self.windows = W.Windows(
            target["max-storage-buffer-binding-size"],
            target["min-storage-buffer-offset-alignment"],
            lambda k: avals[k].size * W.storage_itemsize(avals[k].dtype) if k in avals else None)

    def key_of(self, v: Var):
        return self.plan.aliases.get(v.id, v.id)

    def new_kb(self) -> KernelBuilder:
        """A kernel builder for this device: buffers over the binding limit get windows."""
        return KernelBuilder(self.target["max-compute-workgroups-per-dimension"],
                             windows=self.windows)

    # ---------------------------------------------------------------- planning
    def run(self) -> Plan:
        """Plans the jaxpr: which values get buffers and at which level each is computed,
        then the kernels, level by level, and each buffer's last use."""
        j, plan = self.jaxpr, self.plan
        for v in j.constvars + j.invars:
            self.materialized.add(v.id)
            self.level[v.id] = 0
            plan.avals[v.id] = v.aval
        plan.in_keys = [v.id for v in j.constvars + j.invars]
        self._assign_levels()
        self._share_storage()
        self._emit_levels(self._fused_roots())
        for a in j.outvars:
            plan.out_keys.append(("lit", a) if isinstance(a, Lit) else self.key_of(a))
        # liveness: last step that touches each key
        for i, d in enumerate(plan.steps):
            for k in d.keys:
                plan.last_use[k] = i
        for eqn, ds in self.__dict__.get("_op_dispatches", {}).values():
            share = eqn_flops(eqn) // len(ds)       # (a split-K product: partials + a sum)
            for d in ds:
                d.flops += share
        return plan

    def _assign_levels(self):
        """Marks the values that get a buffer (kernel operands and outputs, forced splits,
        the outputs) and gives each value its level: the kernels (and splits) on the longest
        path to it from the inputs."""
        j, plan = self.jaxpr, self.plan
        for e in j.eqns:
            if e.prim.fuse is None and e.prim.kernel is None:
                raise NotImplementedError(f"wjax: no WGSL lowering for primitive {e.prim.name}")
            if e.prim.kernel is not None:
                keep = e.prim.materialize_inputs(e, self) if e.prim.materialize_inputs else ()
                for i, a in enumerate(e.invars):
                    if isinstance(a, Var) and (i not in e.prim.fuse_inputs or i in keep):
                        self.materialized.add(a.id)
                for v in e.outvars:
                    self.materialized.add(v.id)
            lv = max([self.level[a.id] + (1 if a.id in self.split else 0)
                      for a in e.invars if isinstance(a, Var)], default=0)
            # an equation with no outputs (a print) has a level too
            self.eqn_level[id(e)] = lv + (1 if e.prim.kernel is not None else 0)
            for v in e.outvars:
                self.level[v.id] = lv + (1 if e.prim.kernel is not None else 0)
                plan.avals[v.id] = v.aval
                if v.id in self.split:
                    self.materialized.add(v.id)
        for a in j.outvars:
            if isinstance(a, Var):
                self.materialized.add(a.id)
        for e in j.eqns:
            if e.prim.kernel is not None and e.prim.store_inputs is not None:
                for i in e.prim.store_inputs(e, self):
                    self.stored_by[e.invars[i].id] = (e, i)

    def store_claimable(self, e: Eqn, a) -> bool:
        """Whether kernel equation ``e`` may compute its operand ``a`` and store it
        (``Primitive.store_inputs``): a fused value with a buffer of its own that something
        else reads too (another equation, or the program as an output), no view, no forced
        split, read once by ``e``, and by nothing that runs before ``e``'s kernel or with it
        (every other reader a kernel or a fused value of a later level)."""
        if not isinstance(a, Var) or a.id not in self.materialized or a.id in self.split:
            return False
        p = self.producer.get(a.id)
        if p is None or p.prim.fuse is None or a.id in self.stored_by:
            return False
        if sum(1 for x in e.invars if isinstance(x, Var) and x.id == a.id) != 1:
            return False
        lvl = self.eqn_level[id(e)]
        others = any(isinstance(o, Var) and o.id == a.id for o in self.jaxpr.outvars)
        for r in self.readers(a.id):
            if r is e:
                continue
            others = True
            if r.prim.kernel is not None:
                if self.eqn_level[id(r)] <= lvl:
                    return False
            elif r.prim.shares_storage or any(self.level.get(o.id, 0) <= lvl for o in r.outvars):
                return False       # (a fused value at lvl may be another kernel's epilogue)
        return others              # (else its buffer is only the kernel's operand copy)

    def _share_storage(self):
        """Contiguous views of buffers share storage."""
        for e in self.jaxpr.eqns:
            if not e.outvars:
                continue
            v = e.outvars[0]
            if (e.prim.shares_storage and v.id in self.materialized
                    and isinstance(e.invars[0], Var) and e.invars[0].id in self.materialized):
                self.plan.aliases[v.id] = self.key_of(e.invars[0])

    def _fused_roots(self) -> dict:
        """The fused values that get a buffer, grouped by (level, phase) in jaxpr order (phase
        0: forced splits, computed before the level's other fused values)."""
        groups: dict[tuple, list[Var]] = {}
        for e in self.jaxpr.eqns:
            if e.prim.fuse is None:
                continue
            for v in e.outvars:
                if (v.id in self.materialized and v.id not in self.plan.aliases
                        and v.aval.size > 0 and v.id not in self.stored_by):
                    phase = 0 if v.id in self.split else 1
                    groups.setdefault((self.level[v.id], phase), []).append(v)
        return groups

    def _emit_levels(self, groups: dict):
        """Level by level: the kernel equations (merged, or with fused epilogues where they
        can be), then that level's fused groups."""
        max_level = max(list(self.level.values()) + list(self.eqn_level.values()), default=0)
        kernels_by_level: dict[int, list[Eqn]] = {}
        for e in self.jaxpr.eqns:
            if e.prim.kernel is not None:
                kernels_by_level.setdefault(self.eqn_level[id(e)], []).append(e)
        for L in range(max_level + 1):
            for batch in self._merged(kernels_by_level.get(L, [])):
                if len(batch) > 1:
                    if not (batch[0].prim.epilogue and self._try_epilogue(batch, groups)):
                        batch[0].prim.kernel_many([KernelContext(self, e) for e in batch])
                    continue
                e = batch[0]
                if e.outvars and all(v.aval.size == 0 for v in e.outvars):
                    continue
                if e.prim.epilogue and self._try_epilogue([e], groups):
                    continue
                e.prim.kernel(KernelContext(self, e), *[a.aval for a in e.invars],
                              **e.params)
            for (lvl, phase), roots in sorted(groups.items(), key=lambda kv: kv[0]):
                if lvl == L and roots:
                    self._fused_group(roots, L)

    MAX_MERGE = 4

    def _try_epilogue(self, batch: list, groups: dict) -> bool:
        """Fuses the same-shaped elementwise consumers of a kernel's output into the kernel
        (e.g. bias + relu after a matmul), and the small split values computed from it
        (``self.small``: a column mean or standard deviation, computed once per output by
        the reduction's last pass instead of by a kernel of their own; of the outputs' size,
        ``keepdims`` shapes included; also those of later levels computed from it and from
        earlier such roots, as ``nn.standardize``'s ``rsqrt(var + eps)`` from the mean).
        ``batch``: one equation, or the merged equations of one kernel (``kernel_many``: the
        epilogue may read each of their outputs).  Falls back (returns False) when a
        consumer reads an output at another position or needs a value not computed yet
        (first without the later levels' roots, if there were any)."""
        outs = [e.outvars[0] for e in batch]
        out = outs[0]
        ids = {v.id for v in outs}
        lvl = self.level[out.id]
        base, later = [], []
        for (level, phase), rs in sorted(groups.items(), key=lambda kv: kv[0]):
            if level < lvl:
                continue
            for r in rs:
                if level == lvl and phase == 1 and (r.aval.shape == out.aval.shape or (
                        batch[0].prim.epilogue_layouts and r.aval.size == out.aval.size)):
                    pass
                elif not (r.id in self.small and r.aval.size == out.aval.size):
                    continue
                if level == lvl and ids & self._deps(r):
                    base.append(r)
                elif level > lvl and (ids | {x.id for x in base + later}) & self._deps(r):
                    later.append(r)
        tries = [base + later, base] if later and base else [base]
        # without the roots of another shape (they may read the output otherwise than
        # through a permutation of its axes)
        same = [r for r in base if r.aval.shape == out.aval.shape or r.id in self.small]
        if len(same) < len(base):
            tries.append(same)
        for roots in tries:
            if not roots:
                continue
            mark = len(self.plan.steps)
            ctxs = [KernelContext(self, e) for e in batch]
            ctxs[0].epilogue = roots
            ctxs[0].output_dead = len(batch) == 1 and self._read_only_by(out, roots)
            try:
                if len(batch) > 1:
                    batch[0].prim.kernel_many(ctxs)
                else:
                    batch[0].prim.kernel(ctxs[0], *[a.aval for a in batch[0].invars],
                                         **batch[0].params)
            except (EpilogueMismatch, BindingOverflow):
                del self.plan.steps[mark:]
                continue
            for key in groups:
                groups[key] = [r for r in groups[key] if r not in roots]
            return True
        return False

    def readers(self, vid: int) -> list:
        """The equations reading var ``vid`` (each once, in jaxpr order)."""
        if self._readers is None:
            self._readers = {}
            for e in self.jaxpr.eqns:
                for a in dict.fromkeys(x.id for x in e.invars if isinstance(x, Var)):
                    self._readers.setdefault(a, []).append(e)
        return self._readers.get(vid, [])

    def _read_only_by(self, v: Var, roots: list) -> bool:
        """Whether every read of ``v`` is part of computing ``roots`` (an epilogue's): ``v``
        is no output of the program nor the buffer of another value, and every equation
        reading it, directly or through unmaterialized producers, makes one of the roots."""
        aliases = self.plan.aliases
        if v.id in aliases or v.id in aliases.values() or any(
                isinstance(o, Var) and o.id == v.id for o in self.jaxpr.outvars):
            return False
        ids = {r.id for r in roots}
        stack, seen = [v.id], set()
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            for e in self.readers(x):
                if len(e.outvars) != 1:
                    return False
                o = e.outvars[0]
                if o.id in ids:
                    continue
                if e.prim.fuse is None or o.id in self.materialized or o.id in self.split:
                    return False
                stack.append(o.id)
        return True

    def _deps(self, v: Var) -> set:
        """Var ids an (unsplit, same-level) fused root reads through virtual producers."""
        out, stack, seen = set(), [v], set()
        lvl = self.level[v.id]
        while stack:
            x = stack.pop()
            e = self.producer.get(x.id)
            if e is None or e.prim.fuse is None or x.id in seen:
                continue
            seen.add(x.id)
            for a in e.invars:
                if isinstance(a, Var):
                    out.add(a.id)
                    if a.id not in self.split and (
                        a.id not in self.materialized or self.level[a.id] == lvl
                    ):
                        stack.append(a)
        return out

    def _merged(self, eqns):
        """Kernel eqns of one level, batched by merge key (at most MAX_MERGE per batch)."""
        out, open_ = [], {}
        for e in eqns:
            key = e.prim.merge_key(e) if (e.prim.merge_key and e.prim.kernel_many
                                          and all(v.aval.size for v in e.outvars)) else None
            if key is None:
                out.append([e])
                continue
            b = open_.get(key)
            if b is None or len(b) >= self.MAX_MERGE:
                b = open_[key] = []
                out.append(b)
            b.append(e)
        return out

    @staticmethod
    def _read_root(f: Fuser, v: Var, idx: Index) -> str:
        eqn = f.lowering.producer[v.id]
        f.kb.ops.append(eqn)
        readers = [(lambda ix, a=a: f.read(a, ix)) for a in eqn.invars]
        expr = eqn.prim.fuse(f.kb, idx, readers, [a.aval for a in eqn.invars], v.aval, **eqn.params)
        return f.kb.let(W.wrap_narrow(expr, v.aval.dtype), f.kb.vt(v.aval.dtype))

    def _fused_group(self, roots, level):
        """All fused roots of one level: one kernel over the largest of them, the smaller
        shapes guarded (``if (i < size)``)."""
        self._fused_kernels(roots, level)

    def _gen_fused(self, roots, level, n, vec=1, restrict=None):
        """One kernel computing every root at flat index ``i`` < ``n``; roots smaller than
        ``n`` are guarded by ``if (i < size)``.  With ``vec`` = 4 each value is a vec4;
        ``restrict`` binds only a chunk of some buffers (see ``_emit_chunked``)."""
        kb = self.new_kb()
        kb.vec = vec
        kb.restrict = restrict or {}
        shapes = list(dict.fromkeys(v.aval.shape for v in roots))
        shapes.sort(key=lambda sh: -int(np.prod(sh)))     # unguarded (full-size) code first
        for shape in shapes:
            size = int(np.prod(shape))
            guarded = size < n
            if guarded:
                kb.emit(f"if (i < {size}u) {{")
            f = Fuser(kb, self, level)                       # lets of a block stay in it
            if vec > 1 and len(shape) >= 2 and shape[-1] % vec == 0 and not guarded:
                # the lanes are ``vec`` adjacent positions of the last dim: operands
                # broadcast along it (a bias) are vec4 loads, those constant over it (a
                # row's statistics) splats (``Fuser._vec_read``)
                kb.emit(f"let wj_e = i * {vec}u;")
                dims = Index(kb, shape, flat="wj_e").dims()
                lane = kb.lanes_along_last_dim(vec, dims[-1])
                idx = Index(kb, shape, flat="i", dims=dims[:-1] + [lane], lanes=True)
            else:
                idx = Index(kb, shape, flat="i")
            for v in roots:
                if v.aval.shape == shape:
                    val = self._read_root(f, v, idx)
                    name = kb.bind(self.key_of(v), v.aval.dtype, "read_write")
                    kb.emit(f"{name}[i] = {kb.store(val, v.aval.dtype)};")
            if guarded:
                kb.emit("}")
        return kb

    def _fused_kernels(self, roots, level):
        """Kernels for ``roots``: as many as the storage-buffer limit requires.  A group of
        one shape may instead be windowed over the binding size or vectorized."""
        n = max(v.aval.size for v in roots)
        single = len({v.aval.shape for v in roots}) == 1
        current: list[Var] = []
        for v in roots:
            kb = self._gen_fused(current + [v], level, n)
            if kb.n_bindings() > self.max_storage and current:
                prev = self._gen_fused(current, level, n)
                if prev.n_bindings() > self.max_storage:    # one root alone is too wide
                    raise BindingOverflow(current[0], prev.n_bindings(), bool(prev.windowed))
                self._emit_fused(prev, n)
                current = [v]
            else:
                current.append(v)
        kb = self._gen_fused(current, level, n)
        if single and kb.windowed and self._flat_keys(kb, n):
            return self._emit_chunked(current, level, kb, n)
        if kb.n_bindings() > self.max_storage:
            raise BindingOverflow(current[0], kb.n_bindings(), bool(kb.windowed))
        if (single and self.target.elementwise == "looped" and not kb.windowed
                and self._looped(current, level, kb)):
            return
        # vec4 is tried even where the scalar kernel's reads are not flat (``kb.vec_ok``): a
        # broadcast operand read along the last dim (a bias, a column's statistics) or
        # uniformly over each vec4 (a row's) is a vec4 or a splat (``Fuser._vec_read``)
        if single and n % 4 == 0 and n >= 4096:
            vkb = self._gen_fused(current, level, n, vec=4)
            if self.target.elementwise == "flat":     # GPUs: 256 threads, interleaved;
                # 4 vec4 a thread only where a vec4 each would exceed the threads the adapter
                # keeps in flight (a scan step's 64 x 256 would be 4 workgroups, not 16)
                big = n // 4 >= 4 * int(self.target.threads)
                src, grid = vkb.elementwise_kernel(n // 4, wg=256, per_thread=4 if big else 1,
                                                   interleave=True)
            else:
                src, grid = vkb.elementwise_kernel(n // 4, wg=64, per_thread=4)
            if vkb.vec_ok and self._compiles(vkb.finish(src)):
                self.add_dispatch(vkb, src, grid)
                return
        self._emit_fused(kb, n)

    _READ = __import__("re").compile(r"\bb\d+\[")

    def _looped(self, roots, level, flat_kb: KernelBuilder) -> bool:
        """Where the target's ``elementwise`` is "looped" (CPU adapters), an elementwise
        kernel that reads broadcast operands (a row's mean, a column's scale) may run as a
        loop instead: each thread takes a chunk of a range of dims ``[k1, k2)`` at fixed outer
        and inner positions, so reads depending only on those are made once per thread,
        before the loop (each read is a gather per SIMD lane on lavapipe: a normalization
        reading three values per element costs three times one reading one).  The range
        with the fewest reads left in the loop wins, if it has fewer than the flat kernel; a
        range ending at the last dim (``I == 1``) also tries ``vec4`` loads along it.  Emits
        the kernel and returns True, or returns False."""
        shape = roots[0].aval.shape
        n = roots[0].aval.size
        if len(shape) < 2 or n < 256:
            return False
        if not any(k in self.plan.avals and self.plan.avals[k].size < n
                   for k in flat_kb.nonflat_keys):
            return False       # no broadcast operand: nothing to hoist
        flat_reads = sum(len(self._READ.findall(ln)) for ln in flat_kb.lines) - len(roots)
        best = None
        for k1 in range(len(shape)):
            for k2 in range(k1 + 1, len(shape) + 1):
                if (k1, k2) == (0, len(shape)) or int(np.prod(shape[k1:k2])) < 2:
                    continue
                kb, pre, inside, meta = self._gen_looped(roots, level, shape, k1, k2, 1)
                reads = sum(len(self._READ.findall(ln)) for ln in inside) - len(roots)
                if best is None or reads < best[0]:
                    best = (reads, k1, k2, kb, pre, inside, meta)
        if best is None or best[0] >= flat_reads:
            return False
        reads, k1, k2, kb, pre, inside, meta = best
        if (k2 == len(shape) and meta["L"] % 4 == 0) or (k2 < len(shape) and shape[-1] % 4 == 0):
            vkb, vpre, vinside, vmeta = self._gen_looped(roots, level, shape, k1, k2, 4)
            if vkb.vec_ok:
                src, grid = self._looped_src(vkb, vpre, vinside, vmeta)
                if self._compiles(vkb.finish(src)):
                    self.add_dispatch(vkb, src, grid)
                    return True
        src, grid = self._looped_src(kb, pre, inside, meta)
        self.add_dispatch(kb, src, grid)
        return True

    def _gen_looped(self, roots, level, shape, k1, k2, vec):
        O = int(np.prod(shape[:k1], dtype=np.int64))
        L = int(np.prod(shape[k1:k2], dtype=np.int64))
        I = int(np.prod(shape[k2:], dtype=np.int64))
        threads = 4096
        C = max(1, min(-(-L // 16), -(-threads // max(O * I, 1))))
        limit = self.target.loop_limit
        if limit:       # each thread's loop within half the driver's loop limit
            C = max(C, -(-L // -(-limit // 2)))
        chunk = -(-L // C)
        if vec > 1 and k2 == len(shape):
            chunk = -(-chunk // 4) * 4
            C = -(-L // chunk)
        inner_lanes = vec > 1 and k2 < len(shape)     # lanes: 4 positions of the last dim
        kb = self.new_kb()
        od = Index(kb, shape[:k1], flat="wj_out").dims() if k1 else []
        ind = Index(kb, shape[k2:], flat="wj_in").dims() if k2 < len(shape) else []
        head, kb.lines = kb.lines, []
        if inner_lanes:     # (the loop range's coordinates: lines inside the loop, not before)
            ld = Index(kb, shape[k1:k2], flat="l").dims()
            ind = ind[:-1] + [kb.lanes_along_last_dim(vec, ind[-1])]
            kb.emit(f"let i: u32 = (wj_base + l * {I}u) / 4u;")
        elif vec > 1:
            kb.vec, kb.vec_ok = vec, True
            kb.varying |= {"l", "wj_vl"}
            ld = ["wj_vl"] * (k2 - k1)
            kb.emit("let i: u32 = wj_base / 4u + l;")
        else:
            ld = Index(kb, shape[k1:k2], flat="l").dims()
            kb.emit(f"let i: u32 = wj_base + l * {I}u;" if I > 1 else "let i: u32 = wj_base + l;")
        idx = Index(kb, shape, flat="i", dims=od + ld + ind, lanes=vec > 1)
        f = Fuser(kb, self, level)
        written = []
        for v in roots:
            val = self._read_root(f, v, idx)
            name = kb.bind(self.key_of(v), v.aval.dtype, "read_write")
            written.append(name)
            kb.emit(f"{name}[i] = {kb.store(val, v.aval.dtype)};")
        # (a dead coordinate naming the lane placeholder would cost the vec4 form its compile)
        pre, inside = W.hoist_invariants(W.drop_dead_lets(kb.lines, []), ["l", "i"], written)
        meta = dict(O=O, L=L, I=I, C=C, chunk=chunk, head=head, vec=vec, inner=inner_lanes)
        return kb, pre, inside, meta

    def _looped_src(self, kb, pre, inside, meta):
        O, L, I, C, chunk, vec = (meta[k] for k in ("O", "L", "I", "C", "chunk", "vec"))
        wg = 64
        Iq = I // vec if meta["inner"] else I         # threads along the inner dims
        threads = O * Iq * C
        grid = W.grid_for(-(-threads // wg), kb.max_groups)
        units = L if meta["inner"] else L // vec
        step = chunk if meta["inner"] else chunk // vec
        lines = [f"let t = (wid.x + wid.y * {grid[0]}u) * {wg}u + lid;",
                 f"if (t >= {threads}u) {{ return; }}",
                 f"let wj_in = (t % {Iq}u) * {I // Iq}u;", f"let wj_c = (t / {Iq}u) % {C}u;",
                 f"let wj_out = t / {Iq * C}u;",
                 f"let wj_base = wj_out * {L * I}u + wj_in;",
                 f"let lo = wj_c * {step}u;",
                 f"let hi = min(lo + {step}u, {units}u);"] + meta["head"] + pre
        body = "\n    ".join(inside)
        src = (f"{kb.header()}\n@compute @workgroup_size({wg})\n"
               f"fn main(@builtin(workgroup_id) wid: vec3<u32>, "
               f"@builtin(local_invocation_index) lid: u32) {{\n  "
               + "\n  ".join(lines)
               + f"\n  for (var l = lo; l < hi; l = l + 1u) {{\n    {body}\n  }}\n}}\n")
        return src, grid

    def _flat_keys(self, kb: KernelBuilder, n: int) -> list:
        """The buffers an elementwise kernel over ``n`` elements reads and writes at ``i``."""
        return [
            k
            for k, _, _ in kb.bindings
            if k not in kb.nonflat_keys and k in self.plan.avals and self.plan.avals[k].size == n
        ]

    def _emit_chunked(self, roots, level, kb: KernelBuilder, n: int):
        """An elementwise kernel over arrays larger than one binding, dispatched in chunks:
        chunk c binds just its elements of every flat-indexed buffer (one window each) and
        keeps the global index ``i`` for index math (iota, broadcasts, random counters);
        buffers read at other positions are bound whole, in windows."""
        flat = self._flat_keys(kb, n)
        esize = max(W.storage_itemsize(self.plan.avals[k].dtype) for k in flat)
        chunk = self.windows.chunk(esize)
        for start in range(0, n, chunk):
            cnt = min(chunk, n - start)
            ckb = self._gen_fused(roots, level, n, restrict={k: (start, cnt) for k in flat})
            src, grid = ckb.elementwise_kernel(cnt, base=start)
            self.add_dispatch(ckb, src, grid)

    def _compiles(self, src: str) -> bool:
        """vec4 kernels are opportunistic: any template that is scalar-only fails WGSL
        validation, and the scalar kernel is used instead."""
        return self.target.compiles(src)

    def _emit_fused(self, kb: KernelBuilder, n: int):
        src, grid = kb.elementwise_kernel(n)
        self.add_dispatch(kb, src, grid)

    def add_dispatch(self, kb: KernelBuilder, src: str, grid, eqn=None) -> None:
        n = kb.n_bindings()
        if n > self.max_storage:
            raise BindingOverflow(eqn.outvars[0] if eqn is not None else None, n, bool(kb.windowed))
        keys, ranges = kb.dispatch_bindings()
        writes = [k for k, acc, _ in kb.bindings if acc != "read"]
        ops = list(dict.fromkeys(id(e) for e in kb.ops))
        fused = {id(e): e for e in kb.ops}
        names = list(dict.fromkeys(fused[i].prim.name for i in ops
                                   if not fused[i].prim.view)) or \
            list(dict.fromkeys(fused[i].prim.name for i in ops))
        label = (f"{eqn.prim.name}({','.join(names)})" if names else eqn.prim.name) \
            if eqn is not None else f"fused({','.join(names)})"
        flops = sum(eqn_flops(fused[i]) for i in ops)
        avals = self.plan.avals
        nbytes = sum(avals[k].size * W.storage_itemsize(avals[k].dtype)
                     for k in dict.fromkeys(keys) if k in avals
                     and not getattr(avals[k].dtype, "is_key", False))
        d = Dispatch(kb.finish(src), keys, tuple(grid), writes,
                     ranges if kb.windowed else None, label, flops, nbytes)
        self.plan.steps.append(d)
        if eqn is not None:     # a kernel op's work is shared by its dispatches (see run)
            self.__dict__.setdefault("_op_dispatches", {}).setdefault(id(eqn), (eqn, []))[1] \
                .append(d)


def eqn_flops(e: Eqn) -> int:
    """An estimate of an equation's floating-point work (the profiler's GFLOP/s): products
    count 2 per multiply-add, reductions one per element read, views none, anything else
    one per output element."""
    outs = [v.aval for v in e.outvars]
    ins = [a.aval for a in e.invars]
    name = e.prim.name
    if e.prim.view:
        return 0
    if name == "dot_general" and len(ins) == 2:
        (lc, _), _ = e.params["dimension_numbers"]
        k = int(np.prod([ins[0].shape[d] for d in lc], dtype=np.int64))
        return 2 * outs[0].size * k
    if name.startswith("conv") and len(ins) == 2:
        spec = e.params.get("dimension_numbers")
        rhs = ins[1]
        o_dim = getattr(spec, "rhs_spec", (0,))[0] if spec is not None else 0
        per_out = rhs.size // max(rhs.shape[o_dim], 1) if rhs.ndim else 1
        return 2 * outs[0].size * per_out
    if getattr(e.prim, "monoid", None) is not None or name.startswith(("reduce_", "arg")):
        return ins[0].size if ins else 0
    return sum(o.size for o in outs)


def _virtual_operands(lowering: Lowering, v: Var) -> list:
    """Fusable operands of ``v``'s equation that would be inlined (split candidates)."""
    e = lowering.producer.get(v.id)
    if e is None:
        return []
    return [a for a in e.invars if isinstance(a, Var) and a.id in lowering.producer
            and lowering.producer[a.id].prim.fuse is not None and a.id not in lowering.split
            and (a.id not in lowering.materialized or e.prim.kernel is None)]


def _buffers_under(lowering: Lowering, v: Var, seen=None) -> set:
    seen = set() if seen is None else seen
    e = lowering.producer.get(v.id)
    if e is None or e.prim.fuse is None or v.id in lowering.split:
        return {v.id}
    out = set()
    for a in e.invars:
        if isinstance(a, Var) and a.id not in seen:
            seen.add(a.id)
            out |= _buffers_under(lowering, a, seen)
    return out


def lower_jaxpr(jaxpr: Jaxpr, target: Target) -> Plan:
    """Plans a jaxpr.  Where the target has ``row_resident`` (GPUs), a softmax read only by a
    product over its axes is normalized after the product (``passes.deferred_normalization``).
    Where the target has ``attention`` and
    ``row_resident`` (GPUs), attention (``passes.attention_groups``, before that) and
    row-resident groups (softmax, logsumexp, layer norms: ``passes.row_groups``) become one
    kernel each; a plan whose group kernel cannot fit the device's bindings is planned again
    without groups.
    When a kernel would bind more storage buffers than the device allows, the fusable
    operand reading the most buffers is split into a kernel of its own (materialized) and
    planning starts again (``_plan``)."""
    max_ops = int(target["max-storage-buffers-per-shader-stage"]) - 1
    j = chunk_wide_concats(dce_jaxpr(cse_and_fold(jaxpr))[0], max(max_ops, 2))
    check_avals(j, target)
    # (where softmax rows are resident -- GPUs: there the division was 45% of the softmax
    # kernel, and the product's kernel takes the one after it as its epilogue; CPU forms
    # would spend a kernel on it)
    defer = _deferred if target.row_resident else (lambda x: x)
    base = defer(j)
    if target.row_resident or target.attention:
        # attention first: a softmax normalized after its product is no longer attention
        att = attention_groups(j, target)
        grouped = row_groups(base if att is j else defer(att), target)
        if grouped is not base:
            try:
                return _plan(grouped, target)
            except (NotImplementedError, MemoryError):
                pass        # a group's kernel binds too many buffers: plan without groups
    return _plan(base, target)


def _deferred(j: Jaxpr) -> Jaxpr:
    """``j`` with its softmaxes that feed products normalized after them
    (``passes.deferred_normalization``); ``j`` itself where none does."""
    d = deferred_normalization(j)
    return j if d is j else dce_jaxpr(d)[0]


def _plan(j: Jaxpr, target: Target) -> Plan:
    split: set[int] = deep_fusion_splits(j)
    small: set[int] = set()
    if target.elementwise == "flat":
        small = broadcast_splits(j)
        split |= small
    while True:
        lowering = Lowering(j, target, split, small)
        try:
            return lowering.run()
        except BindingOverflow as err:
            cands = _virtual_operands(lowering, err.var) if err.var is not None else []
            if err.var is not None and not cands and err.var.id in lowering.producer:
                # the root's own operands are buffers: nothing left to split here
                cands = []
            if not cands:
                if err.windowed:
                    raise MemoryError(
                        f"wjax: a kernel needs {err.n} storage bindings -- arrays larger than the "
                        f"adapter's max-storage-buffer-binding-size are bound as several windows "
                        f"-- more than the adapter's limit of {lowering.max_storage}"
                    ) from None
                raise NotImplementedError(
                    f"wjax: a kernel needs {err.n} storage buffers and cannot be split below the "
                    f"device's limit of {lowering.max_storage}") from None
            best = max(cands, key=lambda a: len(_buffers_under(lowering, a)))
            split.add(best.id)
