"""Reductions: reduce_{sum,prod,max,min,and,or} and argmax/argmin.

One kernel template (shaders/reduce.wgsl) serves them all: a reduction is a
state type, an identity, a ``combine`` and a way to lift an element into a
state.  Large reductions with few outputs run in two passes (partial states
into a scratch buffer, then one more fold), as DESIGN.md measured fastest.
Elementwise producers of the operand are fused into the loop that reads it.
"""
from __future__ import annotations

import re

import numpy as np

from ..backend import wgsl as W
from ..backend.lower import EpilogueMismatch
from ..backend.wgsl import Index
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import kind
from ..backend import wgsl_math  # noqa: F401  (registers wj_opq)
from ..backend import wgsl_cmath  # noqa: F401  (registers wj_cmul)
from ..transforms import ad as _ad
from ..core import dtypes, ops

def _check_axes(name, x, axes):
    axes = tuple(axes)
    for a in axes:
        if not 0 <= a < x.ndim:
            raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for "
                             f"{np.dtype(x.dtype).name}[{','.join(map(str, x.shape))}] ({name}: "
                             f"axis {a} is out of bounds for array of dimension {x.ndim}).")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in 'axes': {axes}")
    return axes


class Monoid:
    """state type, identity, combine body, and how to lift an element (value, index)."""

    def __init__(self, state, identity, combine, lift, result, helpers=(), kahan=False):
        self.state, self.identity, self.combine = state, identity, combine
        self.lift, self.result, self.helpers, self.kahan = lift, result, helpers, kahan


def _monoid(op: str, dtype, index_dtype=None) -> Monoid:
    k = kind(dtype)
    vt = W.value_type(dtype)
    if op == "sum":
        return _sum_monoid(dtype, k, vt)
    if op == "prod":
        if k == "c":
            return Monoid(vt, W.literal(1, dtype), "  return wj_cmul(a, b);", lambda v, r: v,
                          lambda s: s, helpers=("wj_cmul",))
        return Monoid(vt, W.literal(1, dtype), "  return a * b;", lambda v, r: v, lambda s: s)
    if op in ("max", "min"):
        return _extremum_monoid(op, dtype, k, vt)
    if op in ("and", "or"):
        return _bitwise_monoid(op, dtype, k, vt)
    if op in ("argmax", "argmin"):
        return _arg_monoid(op, dtype, k, vt, index_dtype)
    raise ValueError(op)


# A compensated state is (hi, lo): TwoSum's error terms summed in lo.  Once hi is inf or NaN
# it stays so (inf + x is inf or NaN), and lo turns NaN (inf - inf) with it: the folds never
# look at that, the result does -- hi alone where hi is not finite (sum([inf, 1]) is inf), so
# no step pays a compare and a select for it.
_TWO_SUM = ("  let s{i} = wj_opq(a.{h} + b.{h});\n  let bp{i} = wj_opq(s{i} - a.{h});\n"
            "  let err{i} = (a.{h} - wj_opq(s{i} - bp{i})) + (b.{h} - bp{i});\n"
            "  let lo{i} = err{i} + a.{l} + b.{l};\n")
W.helper("wj_sum_result", """
fn wj_sum_result(hi: f32, lo: f32) -> f32 {
  return select(hi + lo, hi, (bitcast<u32>(hi) & 0x7f800000u) == 0x7f800000u);
}""")


def _sum_monoid(dtype, k, vt) -> Monoid:
    if k == "c":
        # each part compensated as a float sum is: (re hi, re lo, im hi, im lo)
        return Monoid("vec4<f32>", "vec4<f32>(0.0, 0.0, 0.0, 0.0)",
                      _TWO_SUM.format(i=0, h="x", l="y") + _TWO_SUM.format(i=1, h="z", l="w")
                      + "  return vec4<f32>(s0, lo0, s1, lo1);",
                      lambda v, r: f"vec4<f32>(({v}).x, 0.0, ({v}).y, 0.0)",
                      lambda s: f"vec2<f32>(wj_sum_result({s}.x, {s}.y), "
                                f"wj_sum_result({s}.z, {s}.w))",
                      helpers=("wj_opq", "wj_sum_result"))
    if k == "f":
        # compensated (TwoSum) accumulation: hi + lo carried through the whole tree, so
        # e.g. sum(ones(10**6) * 0.1) rounds to 100000.0 as XLA's does
        return Monoid("vec2<f32>", "vec2<f32>(0.0, 0.0)",
                      "  let s = wj_opq(a.x + b.x);\n  let bp = wj_opq(s - a.x);\n"
                      "  let err = (a.x - wj_opq(s - bp)) + (b.x - bp);\n"
                      "  return vec2<f32>(s, err + a.y + b.y);",
                      lambda v, r: f"vec2<f32>(f32({v}), 0.0)",
                      lambda s: f"{vt}(wj_sum_result({s}.x, {s}.y))",
                      helpers=("wj_opq", "wj_sum_result"), kahan=True)
    return Monoid(vt, W.zero(dtype), "  return a + b;", lambda v, r: v, lambda s: s)


# the order keys (wgsl_math's wj_okey) of -inf and inf: a max fold's and a min fold's identity
_KEY_IDENTITY = {"max": "bitcast<i32>(0x807fffffu)", "min": "2139095040"}


def _extremum_monoid(op, dtype, k, vt) -> Monoid:
    """max / min."""
    if k == "c":
        # XLA's lexicographic order (real parts, then imaginary parts; wj_cgt/wj_clt of
        # prims/elementwise.py); an element with a NaN part wins, as in NumPy (XLA's CPU fold
        # keeps whatever its sequential comparisons leave, an order-dependent result)
        better = "wj_cgt" if op == "max" else "wj_clt"
        inf = -np.inf if op == "max" else np.inf
        return Monoid(vt, f"vec2<f32>({W.literal(inf, np.float32)}, "
                          f"{W.literal(inf, np.float32)})",
                      "  if (wj_canynan(a)) { return a; }\n  if (wj_canynan(b)) { return b; }\n"
                      f"  return select(b, a, {better}(a, b));",
                      lambda v, r: v, lambda s: s, helpers=("wj_isnan", "wj_canynan", better))
    if k == "f":
        # integer keys of the values (wgsl_math's wj_okey: -0 below +0, NaN the key that
        # wins): one integer max/min a step; float16 through f32, exact either way
        return Monoid("i32", _KEY_IDENTITY[op], f"  return {op}(a, b);",
                      lambda v, r: f"wj_okey_{op}(f32({v}))", lambda s: f"{vt}(wj_okey_f({s}))",
                      helpers=("wj_okey", f"wj_okey_{op}", "wj_okey_f"))
    if k == "b":
        return Monoid(vt, "false" if op == "max" else "true",
                      "  return a || b;" if op == "max" else "  return a && b;",
                      lambda v, r: v, lambda s: s)
    info = np.iinfo(dtype)
    ident = W.literal(info.min if op == "max" else info.max, dtype)
    return Monoid(vt, ident, f"  return {op}(a, b);", lambda v, r: v, lambda s: s)


def _bitwise_monoid(op, dtype, k, vt) -> Monoid:
    """and / or (logical on bool)."""
    if k == "b":
        return Monoid("bool", "true" if op == "and" else "false",
                      "  return a && b;" if op == "and" else "  return a || b;",
                      lambda v, r: v, lambda s: s)
    ident = W.literal(-1 if op == "and" else 0, dtype) if k == "i" else (
        W.literal(np.iinfo(dtype).max, dtype) if op == "and" else W.zero(dtype))
    return Monoid(
        vt, ident, f"  return a {'&' if op == 'and' else '|'} b;", lambda v, r: v, lambda s: s
    )


def _arg_monoid(op, dtype, k, vt, index_dtype) -> Monoid:
    """argmax / argmin: the state is (the value's order key, or the value as i32/u32, index);
    NaN wins (the first NaN); ties go to the lower index."""
    better = ">" if op == "argmax" else "<"
    if k == "f":
        # order keys as max/min fold (wgsl_math's wj_okey), -0 made +0 (they tie, as NumPy
        # and XLA compare them), NaN the winning key: one branch-free select a step
        state = f"ArgKey_{op}"
        m = Monoid(state, f"{state}({_KEY_IDENTITY[op[3:]]}, 0xffffffffu)",
                   f"  let w = a.v {better} b.v || (a.v == b.v && a.i < b.i);\n"
                   f"  return {state}(select(b.v, a.v, w), select(b.i, a.i, w));",
                   lambda v, r: f"{state}(wj_okey_{op}(f32({v})), {r})",
                   lambda s: f"{W.value_type(index_dtype)}({s}.i)",
                   helpers=("wj_okey", f"wj_okey_{op[3:]}", f"wj_okey_{op}"))
        m.struct = f"struct {state} {{ v: i32, i: u32 }}"
        return m
    state = f"ArgState_{vt}"
    body = (
        f"  if (a.v {better} b.v) {{ return a; }}\n  if (b.v {better} a.v) {{ return b; }}\n"
        f"  if (a.i < b.i) {{ return a; }}\n  return b;"
    )
    if k == "b":
        vt2 = "u32"
        lift = lambda v, r: f"{state}(select(0u, 1u, {v}), {r})"
    else:
        vt2 = vt
        lift = lambda v, r: f"{state}({v}, {r})"
    if k in "iu":
        ident_v = W.literal(np.iinfo(dtype).min if op == "argmax" else np.iinfo(dtype).max, dtype)
    else:
        ident_v = "0u" if op == "argmax" else "1u"
    m = Monoid(state, f"{state}({ident_v}, 0xffffffffu)", body, lift,
               lambda s: f"{W.value_type(index_dtype)}({s}.i)")
    m.struct = f"struct {state} {{ v: {vt2}, i: u32 }}"
    return m


# TwoSum's error term would fold to zero under reassociation: its sums go through wj_opq
# (wjax/_src/backend/wgsl_math.py), an identity the compiler cannot see through.


def _slices(target) -> bool:
    """The ``reduction`` strategy (``Target``): "slices" -- each thread folds a contiguous
    slice, one thread per output wherever that form applies, few parts (CPU adapters) --
    or "strided" -- threads stride over the elements, many parts (GPUs)."""
    return target.reduction == "slices"


def _vec_len(state: str) -> int:
    """N for a ``vecN<f32>`` state (compensated sums, complex values), else 0."""
    mm = re.fullmatch(r"vec(\d)<f32>", state)
    return int(mm.group(1)) if mm else 0


def _words(m: Monoid) -> int:
    return _vec_len(m.state) or (2 if hasattr(m, "struct") else 1)


def _to_words(m: Monoid, e: str) -> list:
    n = _vec_len(m.state)
    if n:
        return [f"bitcast<u32>({e}.{c})" for c in "xyzw"[:n]]
    if hasattr(m, "struct"):
        vt = m.struct.split("v: ")[1].split(",")[0]
        return [_bits(f"{e}.v", vt), f"{e}.i"]
    return [_bits(e, m.state)]


def _from_words(m: Monoid, ws: list) -> str:
    n = _vec_len(m.state)
    if n:
        return f"vec{n}<f32>(" + ", ".join(f"bitcast<f32>({w})" for w in ws) + ")"
    if hasattr(m, "struct"):
        vt = m.struct.split("v: ")[1].split(",")[0]
        return f"{m.state}({_from_bits(ws[0], vt)}, {ws[1]})"
    return _from_bits(ws[0], m.state)


class Job:
    """One reduction to emit: its equation's context, op, operand position and output."""

    def __init__(self, ctx, op, x_aval, axes, out_key, out_dtype, index_dtype=None, reader_index=0):
        self.ctx, self.op, self.x_aval, self.axes = ctx, op, x_aval, tuple(sorted(axes))
        self.out_key, self.out_dtype, self.reader_index = out_key, out_dtype, reader_index
        self.mono = _monoid(op, x_aval.dtype, index_dtype)


def emit_reduction(ctx, op, x_aval: ShapedArray, axes, out_key, out_dtype, index_dtype=None,
                   reader_index=0, wg=256):
    """Emits the dispatches of one reduction over ``axes`` of operand ``reader_index``."""
    emit_reductions([Job(ctx, op, x_aval, axes, out_key, out_dtype, index_dtype, reader_index)], wg)


def emit_reductions(jobs: list, wg=256):
    """Emits several reductions over the same iteration space as ONE kernel (per pass):
    the state is a struct with one field per reduction (e.g. the sum and the sum of
    squares of a one-pass variance).  Epilogues (``jobs[0].ctx.epilogue``: small values the
    lowering computes from the outputs, see ``Lowering._try_epilogue``) are written by the
    GPU forms' last pass; the other forms decline them (``EpilogueMismatch``)."""
    if not _slices(jobs[0].ctx.target):
        st = _Strided(jobs)
        if st.applies():
            return st.emit()
    if jobs[0].ctx.epilogue:
        raise EpilogueMismatch(None)
    seq = _Sequential(jobs)
    if seq.applies():
        return seq.emit()
    r = _Reductions(jobs, wg)
    if r.N <= 512 and r.M >= 64:
        return _emit_thread_per_output(jobs, r.monos, r.M, r.N, r.element_index,
                                       r.write_outputs)
    r.first_pass()
    if r.parts > 1:
        r.second_pass()


def _split_passes(M, N, wg, slices, loop_limit):
    """(parts, slice length): each output's N elements are split into ``parts`` slices, one
    workgroup each, when few outputs each reduce many elements (a second pass folds them)."""
    busy = 16 if slices else 2048      # tuning: workgroups wanted in flight
    parts = 1 if N <= wg * 64 else int(min(256, max(1, -(-busy // max(M, 1))),
                                           -(-N // (wg * 4))))
    if loop_limit:   # keep each thread's loop within half the driver's loop limit
        parts = max(parts, -(-N // (wg * -(-loop_limit // 2))))
    slice_n = -(-N // parts) if N else 0
    if N % 4 == 0 and parts > 1:
        slice_n = -(-slice_n // 4) * 4          # vec4-aligned slices
    return parts, slice_n


class _Reductions:
    """The shared iteration space of a group of reductions and the kernels over it."""

    def __init__(self, jobs, wg):
        self.jobs, self.wg = jobs, wg
        self.ctx, self.x_aval, self.axes = jobs[0].ctx, jobs[0].x_aval, jobs[0].axes
        x_aval, axes = self.x_aval, self.axes
        self.kept = [d for d in range(x_aval.ndim) if d not in axes]
        self.kept_shape = [x_aval.shape[d] for d in self.kept]
        self.red_shape = [x_aval.shape[d] for d in axes]
        self.M = int(np.prod(self.kept_shape, dtype=np.int64))
        self.N = int(np.prod(self.red_shape, dtype=np.int64))
        self.slices = _slices(self.ctx.target)
        self.parts, self.slice_n = _split_passes(self.M, self.N, wg, self.slices,
                                                 self.ctx.target.loop_limit)
        self.trailing = tuple(axes) == tuple(range(x_aval.ndim - len(axes), x_aval.ndim))
        self.monos = [j.mono for j in jobs]
        self.words = [_words(m) for m in self.monos]
        self.offs = [sum(self.words[:k]) for k in range(len(self.words))]
        self.w_total = sum(self.words)
        self.partial_key = (self.ctx.scratch(ShapedArray((self.M * self.parts * self.w_total,),
                                                         np.uint32))
                            if self.parts > 1 and not (self.N <= 512 and self.M >= 64) else None)

    def element_index(self, kb):
        """The operand index of element r of output o."""
        x_aval, N = self.x_aval, self.N
        if self.trailing:
            return Index(kb, x_aval.shape, flat=kb.let(f"o * {N}u + r", "u32"))
        od = Index(kb, self.kept_shape, flat="o").dims() if self.kept_shape else []
        rd = Index(kb, self.red_shape, flat="r").dims() if self.red_shape else []
        dims = [None] * x_aval.ndim
        for d, e in zip(self.kept, od):
            dims[d] = e
        for d, e in zip(self.axes, rd):
            dims[d] = e
        return Index(kb, x_aval.shape, dims=dims)

    def write_outputs(self, kb):
        lines = []
        for k, (j, m) in enumerate(zip(self.jobs, self.monos)):
            name = kb.bind(j.out_key, j.out_dtype, "read_write")
            val = W.wrap_narrow(m.result(f"res.m{k}"), j.out_dtype)
            lines.append(f"    {name}[o] = {W.store_expr(val, j.out_dtype)};")
        return "\n".join(lines)

    def first_pass(self):
        """vec4 loads when the reduction is trailing and long (if the adapter compiles it),
        else one element at a time."""
        N, slice_n = self.N, self.slice_n
        if self.trailing and N % 4 == 0 and slice_n % 4 == 0 and N >= 1024:
            kb, src = self._pass1(True)
            if kb.vec_ok and self.ctx.target.compiles(src[0]):
                self.ctx.dispatch(kb, *src)
                return
        kb, src = self._pass1(False)
        self.ctx.dispatch(kb, *src)

    def _pass1(self, vec: bool):
        """Pass 1; with ``vec`` the loop reads vec4s of 4 consecutive elements (trailing
        reductions whose operand is read at one flat index), else one element at a time."""
        ctx, monos, jobs, N = self.ctx, self.monos, self.jobs, self.N
        kb = ctx.new_kb()
        saved, kb.lines = kb.lines, []
        if vec:
            kb.vec = 4
            kb.emit(f"let i = o * {N // 4}u + r;")
            idx = Index(kb, self.x_aval.shape, flat="i")
        else:
            idx = self.element_index(kb)
        vals = [j.ctx.reader(kb, j.reader_index, j.ctx.fuser(kb))(idx) for j in jobs]
        body, kb.lines = kb.lines, saved
        kb.vec = 1
        if vec:
            lanes = [[m.lift(f"{v}.{c}", f"(r * 4u + {q}u)") for m, v in zip(monos, vals)]
                     for q, c in enumerate("xyzw")]
        else:
            lanes = [[m.lift(v, "r") for m, v in zip(monos, vals)]]
        if self.parts > 1:
            pn = kb.bind(self.partial_key, np.uint32, "read_write")
            write = "\n".join(f"    {pn}[g * {self.w_total}u + {self.offs[k] + w}u] = {e};"
                              for k, m in enumerate(monos)
                              for w, e in enumerate(_to_words(m, f"res.m{k}")))
        else:
            write = self.write_outputs(kb)
        div = 4 if vec else 1
        return kb, _fill(kb, monos, self.wg, self.M * self.parts, self.parts,
                         self.slice_n // div, N // div, _loop(body, lanes, self.slices, self.wg),
                         write)

    def second_pass(self):
        """Folds the partial states of each output."""
        kb = self.ctx.new_kb()
        inp = kb.bind(self.partial_key, np.uint32, "read")
        at = f"(o * {self.parts}u + r) * {self.w_total}u"
        states = [_from_words(m, [f"{inp}[{at} + {self.offs[k] + w}u]"
                                  for w in range(self.words[k])])
                  for k, m in enumerate(self.monos)]
        src = _fill(kb, self.monos, self.wg, self.M, 1, self.parts, self.parts,
                    _loop([], states, self.slices, self.wg, lifted_is_state=True),
                    self.write_outputs(kb))
        self.ctx.dispatch(kb, *src)


class _Sequential:
    """Reductions with one thread per output, folding its reduced elements sequentially.

    The operand is viewed as ``[A, R, B]`` (kept dims before the reduced ones, the reduced
    ones, kept dims after; size-1 dims ignored) when the reduced axes are adjacent, so an
    element is ``base + r * B`` with ``base`` fixed per thread; other layouts index through
    the reduced dims.  Thread ``t`` takes ``U`` adjacent outputs along ``B`` (4 when ``B`` is
    a multiple of 4: each thread then reads 16 contiguous bytes of every row it visits) and
    part ``p`` of the ``R`` reduced elements: when there are too few outputs to keep the
    adapter busy, or a part would pass the adapter's loop limit, ``R`` is split into ``P``
    parts whose states a second pass folds (one thread per output, or one workgroup per
    output when few outputs have many parts).  A trailing reduction (``B == 1``) whose operand
    is read at its flat position, or at positions the same for the whole row (a broadcast
    shift), loads ``vec4``s of 4 consecutive elements instead.  Reads that do not depend on
    the reduced index (a broadcast mean, the first row of a shifted variance) are computed
    once per thread, before the loop (``wgsl.hoist_invariants``).  Each lane (output, or
    element of a vec4) folds into its own accumulator, so the lanes' chains run side by side.
    No workgroup trees or barriers in the first pass: on CPU adapters (lavapipe) a barrier
    switches every invocation of the workgroup, which cost more than the folding itself.

    Used for every reduction on CPU adapters, and on GPUs for reductions over leading or
    middle axes (adjacent threads read adjacent addresses); trailing reductions on GPUs keep
    the strided workgroup form (``_Reductions``)."""

    WG = 64
    BUSY = 1024     # threads that keep a CPU adapter busy
    SPLIT_MIN = 1 << 18     # elements below which a reduction is not split for parallelism

    def __init__(self, jobs):
        self.jobs = jobs
        j0 = jobs[0]
        self.ctx, self.x_aval, self.axes = j0.ctx, j0.x_aval, j0.axes
        self.target = self.ctx.target
        self.monos = [j.mono for j in jobs]
        shape = self.x_aval.shape
        self.kept = [d for d in range(len(shape)) if d not in self.axes]
        self.kept_shape = [shape[d] for d in self.kept]
        self.red_shape = [shape[d] for d in self.axes]
        self.M = int(np.prod(self.kept_shape, dtype=np.int64))
        self.N = int(np.prod(self.red_shape, dtype=np.int64))
        nontriv = [d for d in range(len(shape)) if shape[d] != 1]
        red = [d for d in nontriv if d in self.axes]
        k = nontriv.index(red[0]) if red else 0
        self.canon = bool(red) and nontriv[k:k + len(red)] == red
        if self.canon:
            self.A = int(np.prod([shape[d] for d in nontriv[:k]], dtype=np.int64))
            self.B = int(np.prod([shape[d] for d in nontriv[k + len(red):]], dtype=np.int64))
        else:
            self.A, self.B = self.M, 1
        self.words = [_words(m) for m in self.monos]
        self.offs = [sum(self.words[:i]) for i in range(len(self.words))]
        self.w_total = sum(self.words)

    def applies(self) -> bool:
        if self.M == 0:
            return False
        if _slices(self.target):
            return True
        return self.canon and self.B > 1

    # ------------------------------------------------------------------ shape of the work
    def _parts(self, outputs: int, units: int) -> int:
        busy, min_part = (self.BUSY, 64) if _slices(self.target) else (16384, 32)
        P = 1
        # splitting costs a second dispatch: worth it for parallelism on big reductions only
        while (outputs * P < busy and units // (P * 2) >= min_part
               and self.M * self.N >= self.SPLIT_MIN):
            P *= 2
        limit = self.target.loop_limit
        max_iter = (limit // 2) if limit else (1 << 20)
        while -(-units // P) > max_iter:
            P *= 2
        return P

    def _index(self, kb, o: str, flat: str | None):
        """The operand Index of element ``r`` of output ``o``."""
        od = Index(kb, self.kept_shape, flat=o).dims() if self.kept_shape else []
        if not hasattr(self, "_rd"):
            self._rd = Index(kb, self.red_shape, flat="r").dims() if self.red_shape else []
        dims = [None] * self.x_aval.ndim
        for d, e in zip(self.kept, od):
            dims[d] = e
        for d, e in zip(self.axes, self._rd):
            dims[d] = e
        return Index(kb, self.x_aval.shape, flat=flat, dims=dims)

    def _body(self, mode: str):
        """(kernel builder, body lines, per lane the lifted states).  ``mode``: "rows" --
        the lanes are 4 consecutive elements of one output (a vec4); "cols" -- the lanes are
        4 adjacent outputs, read as a vec4 of each row; "scalar" -- the ``U`` outputs of the
        thread, read one element at a time."""
        kb = self.ctx.new_kb()
        saved, kb.lines = kb.lines, []
        fuser = self.ctx.fuser(kb)
        self.__dict__.pop("_rd", None)
        if mode == "cols":
            od = Index(kb, self.kept_shape, flat="o").dims()
            rd = Index(kb, self.red_shape, flat="r").dims() if self.red_shape else []
            dims = [None] * self.x_aval.ndim
            for d, e in zip(self.kept, od):
                dims[d] = e
            for d, e in zip(self.axes, rd):
                dims[d] = e
            dims[-1] = kb.lanes_along_last_dim(4, dims[-1])
            kb.emit("let i: u32 = wj_i;")        # the loop's vec4 cursor (``_cursor``)
            idx = Index(kb, self.x_aval.shape, flat="i", dims=dims, lanes=True)
            vals = [j.ctx.reader(kb, j.reader_index, fuser)(idx) for j in self.jobs]
            lanes = [[m.lift(f"{v}.{c}", "r") for m, v in zip(self.monos, vals)] for c in "xyzw"]
        elif mode == "rows":
            # elements 4r .. 4r + 3 of one output's row: the vec4 at flat ``i``; the kept dims
            # are the same for all lanes, the reduced ones (``wj_vr``) are not
            od = Index(kb, self.kept_shape, flat="o").dims() if self.kept_shape else []
            dims = ["wj_vr"] * self.x_aval.ndim
            for d, e in zip(self.kept, od):
                dims[d] = e
            kb.vec, kb.vec_ok = 4, True
            kb.varying |= {"r", "wj_vr"}
            kb.emit("let i: u32 = wj_base + r;")
            idx = Index(kb, self.x_aval.shape, flat="i", dims=dims, lanes=True)
            vals = [j.ctx.reader(kb, j.reader_index, fuser)(idx) for j in self.jobs]
            lanes = [[m.lift(f"{v}.{c}", f"(r * 4u + {q}u)") for m, v in zip(self.monos, vals)]
                     for q, c in enumerate("xyzw")]
        else:     # scalar
            lanes = []
            B = self.B
            for q in range(self.U):
                o = f"o{q}"
                flat = None
                if self.canon:
                    flat = kb.let(f"wj_base + {q}u + r * {B}u" if B > 1 else "wj_base + r", "u32")
                idx = self._index(kb, o, flat)
                vals = [j.ctx.reader(kb, j.reader_index, fuser)(idx) for j in self.jobs]
                lanes.append([m.lift(v, "r") for m, v in zip(self.monos, vals)])
        body, kb.lines = kb.lines, saved
        body = W.drop_dead_lets(body, [x for lane in lanes for x in lane])
        kb.vec = 1
        return kb, body, lanes

    def emit(self):
        B = self.B
        self.U = 4 if (self.canon and B % 4 == 0) else 2 if (self.canon and B % 2 == 0) else 1
        mode = None
        if self.canon and B == 1 and self.N % 4 == 0 and self.N >= 16:
            mode, self.U = "rows", 1
        elif self.canon and B % 4 == 0 and self.x_aval.shape[-1] % 4 == 0:
            mode = "cols"
        if mode is not None:
            kb, body, lanes = self._body(mode)
            if kb.vec_ok:
                src = self._pass1(kb, body, lanes, mode)
                if self.target.compiles(src[0]):
                    self.ctx.dispatch(kb, *src)
                    return self._pass2()
        kb, body, lanes = self._body("scalar")
        self.ctx.dispatch(kb, *self._pass1(kb, body, lanes, "scalar"))
        self._pass2()

    def _comb(self, a: str, b: str) -> str:
        return "RState(" + ", ".join(f"combine{k}({a}.m{k}, {b}.m{k})"
                                     for k in range(len(self.monos))) + ")"

    def _pass1(self, kb, body, lanes, mode):
        M, WG, B, U = self.M, self.WG, self.B, self.U
        vec = mode == "rows"
        units = self.N // 4 if vec else self.N
        groups = M // U                    # threads per part
        P = self.P = self._parts(M, units)
        per = -(-units // P) if units else 0
        if P > 1:
            self.partial_key = self.ctx.scratch(ShapedArray((M * P * self.w_total,), np.uint32))
        threads = groups * P
        grid = W.grid_for(-(-threads // WG), kb.max_groups)
        head = [f"let t = (wid.x + wid.y * {grid[0]}u) * {WG}u + lid;",
                f"if (t >= {threads}u) {{ return; }}"]
        if self.canon and B > 1:
            head += [f"let wj_b = (t % {B // U}u) * {U}u;", f"let wj_q = t / {B // U}u;",
                     f"let p = wj_q % {P}u;", f"let wj_a = wj_q / {P}u;",
                     f"let o = wj_a * {B}u + wj_b;",
                     f"let wj_base = wj_a * {self.N * B}u + wj_b;"]
        else:
            head += [f"let p = t % {P}u;", f"let o = t / {P}u;"]
            if self.canon:
                head.append(f"let wj_base = o * {units}u;")
        head += [f"let o{q} = o + {q}u;" for q in range(U)]
        head += [f"let lo = min(p * {per}u, {units}u);",
                 f"let hi = min(lo + {per}u, {units}u);"]
        start, advance = _cursor(mode, B, "lo", 1)
        pre, inside = W.hoist_invariants(body, ["r", "wj_i"])
        _declare_state(kb, self.monos)
        ident = "RState(" + ", ".join(m.identity for m in self.monos) + ")"
        accs = [f"acc{q}" for q in range(len(lanes))]
        step = "\n    ".join([f"{a} = {self._comb(a, 'RState(' + ', '.join(l) + ')')};"
                               for a, l in zip(accs, lanes)] + advance)
        if vec:        # the element lanes fold into the one output's state
            fold = accs
            while len(fold) > 1:
                fold = [self._comb(fold[k], fold[k + 1]) if k + 1 < len(fold) else fold[k]
                        for k in range(0, len(fold), 2)]
            results = [("o", fold[0])]
        else:
            results = [(f"o{q}", a) for q, a in enumerate(accs)]
        out = []
        if P > 1:
            pn = kb.bind(self.partial_key, np.uint32, "read_write")
            for o, a in results:
                for k, m in enumerate(self.monos):
                    for w, e in enumerate(_to_words(m, f"{a}.m{k}")):
                        out.append(f"  {pn}[({o} * {P}u + p) * {self.w_total}u + "
                                   f"{self.offs[k] + w}u] = {e};")
        else:
            for o, a in results:
                out.append(f"  {{\n  let res = {a};")
                out.append(self.write_outputs(kb, o))
                out.append("  }")
        inner = "\n    ".join(inside)
        src = _main(kb, WG, "  " + "\n  ".join(head + start + pre)
                    + "".join(f"\n  var {a} = {ident};" for a in accs) + "\n"
                    f"  for (var r = lo; r < hi; r = r + 1u) {{\n    {inner}\n    {step}\n  }}\n"
                    + "\n".join(out))
        return src, grid

    def write_outputs(self, kb, o="o"):
        lines = []
        for k, (j, m) in enumerate(zip(self.jobs, self.monos)):
            name = kb.bind(j.out_key, j.out_dtype, "read_write")
            val = W.wrap_narrow(m.result(f"res.m{k}"), j.out_dtype)
            lines.append(f"  {name}[{o}] = {W.store_expr(val, j.out_dtype)};")
        return "\n".join(lines)

    def _pass2(self):
        """Folds the P partial states of each output."""
        P, M = self.P, self.M
        if P == 1:
            return
        kb = self.ctx.new_kb()
        inp = kb.bind(self.partial_key, np.uint32, "read")

        def states(part):
            at = f"(o * {P}u + {part}) * {self.w_total}u"
            return [_from_words(m, [f"{inp}[{at} + {self.offs[k] + w}u]"
                                    for w in range(self.words[k])])
                    for k, m in enumerate(self.monos)]
        if M < 64 and P >= 128:     # few outputs, many parts: a workgroup per output
            wg = 64
            src = _fill(kb, self.monos, wg, M, 1, P, P,
                        _loop([], states("r"), _slices(self.target), wg, lifted_is_state=True),
                        self.write_outputs(kb).replace("  ", "    ", 1))
            self.ctx.dispatch(kb, *src)
            return
        _declare_state(kb, self.monos)
        WG = self.WG
        grid = W.grid_for(-(-M // WG), kb.max_groups)
        write = self.write_outputs(kb)
        src = _main(kb, WG,
                    f"  let o = (wid.x + wid.y * {grid[0]}u) * {WG}u + lid;\n"
                    f"  if (o >= {M}u) {{ return; }}\n"
                    f"  var acc = RState({', '.join(m.identity for m in self.monos)});\n"
                    f"  for (var q = 0u; q < {P}u; q = q + 1u) {{\n"
                    f"    let x = RState({', '.join(states('q'))});\n"
                    f"    acc = {self._comb('acc', 'x')};\n  }}\n"
                    f"  let res = acc;\n{write}")
        self.ctx.dispatch(kb, src, grid)


def _epilogue_lines(jobs, kb, vals, o: str) -> str:
    """The epilogue of a reduction's last pass at output ``o``: ``vals`` are the jobs'
    results there (registers)."""
    ctx = jobs[0].ctx
    if not ctx.epilogue:
        return ""
    regs = [(j.ctx.eqn.outvars[0], kb.fresh("wj_ep")) for j in jobs]
    lines = [f"let {r} = {v};" for (_, r), v in zip(regs, vals)]
    saved, kb.vec = kb.vec, 1
    try:
        lines += ctx.epilogue_code(kb, regs[0][1], o, more=regs[1:])
    finally:
        kb.vec = saved
    return "\n".join("    " + ln for ln in lines)


class _Strided(_Sequential):
    """GPU reductions (``Target.reduction == "strided"``): neighbouring threads read
    neighbouring addresses, enough workgroups to fill a big GPU, and a second pass whenever
    the first one was split.  Two layouts of the operand ``[A, R, B]`` (``_Sequential``):

    * **columns** (``B > 1``: a leading or middle axis reduced, few or many outputs): a
      workgroup is ``TC`` column threads (``U`` = 4 adjacent outputs each, read as a ``vec4``
      of every row, when ``B % 4 == 0``) by ``TL`` row lanes; lane ``l`` folds rows
      ``lo + l, lo + l + TL, ...`` of the workgroup's part of ``R``, so a warp reads whole
      rows, and a workgroup tree folds the lanes.  Tall-skinny operands (2^20 x 64) are
      split into ``P`` parts (``Target.threads`` invocations in all), whose states a second pass
      folds as a column reduction of the ``[P, M]`` partial states.
    * **rows** (``B == 1``, or reduced axes that are not adjacent): a team of ``T`` threads
      per output (or per part of one: full reductions split into ``P`` parts), striding over
      the row with ``vec4`` loads where the operand is read at its flat position (one
      accumulator per component, so four chains run side by side); teams of a whole
      workgroup fold with subgroup shuffles where the adapter has subgroups
      (``Target.subgroup_size``), else in a workgroup-memory tree.  The second pass folds
      each output's ``P`` states the same way.

    Float sums stay compensated (TwoSum) in every lane, tree and shuffle."""

    MIN_UNITS = 16        # units a thread folds at least before a reduction is split
    SPLIT_MIN = 1 << 16   # elements below which a reduction is not split

    def __init__(self, jobs):
        super().__init__(jobs)
        w = self.w_total * 4 * 256
        mem = self.target.workgroup_memory
        self.WG = 256 if w <= mem else max(1 << int(np.log2(max(mem // (self.w_total * 4),
                                                                   1))), 1)
        self.WG = min(self.WG, int(self.target["max-compute-invocations-per-workgroup"]))

    def applies(self) -> bool:
        return self.M > 0

    def write_outputs(self, kb, o="o"):
        """The outputs at ``o``, then the lowering's epilogue there (every output of a
        strided reduction is written by one invocation, once: the last pass's)."""
        out = super().write_outputs(kb, o)
        if not self.ctx.epilogue:
            return out
        vals = [W.wrap_narrow(m.result(f"res.m{k}"), j.out_dtype)
                for k, (j, m) in enumerate(zip(self.jobs, self.monos))]
        return out + "\n" + _epilogue_lines(self.jobs, kb, vals, o)

    def _max_iter(self):
        limit = self.target.loop_limit
        return (limit // 2) if limit else (1 << 20)

    def _split(self, items: int, units: int, lanes: int) -> int:
        """Parts P: a power of two, so that ``items * P`` work items (of ``lanes`` threads
        each) keep ``Target.threads`` invocations busy, each thread folding at least
        ``MIN_UNITS`` units, and no thread's loop passes the loop limit."""
        P = 1
        want = int(self.target.threads)
        while (items * lanes * P < want and units // (P * 2 * lanes) >= self.MIN_UNITS
               and self.M * self.N >= self.SPLIT_MIN):
            P *= 2
        while -(-units // (P * lanes)) > self._max_iter():
            P *= 2
        return P

    def emit(self):
        if self.canon and self.B > 1:
            return self._emit_columns()
        return self._emit_rows()

    # ------------------------------------------------------------------ columns
    def _emit_columns(self):
        B = self.B
        if B % 4 == 0 and self.x_aval.shape[-1] % 4 == 0:
            self.U = 4
            kb, body, lanes = self._body("cols")
            if kb.vec_ok:
                src = self._columns_pass1(kb, body, lanes, "cols")
                if self.target.compiles(src[0]):
                    self.ctx.dispatch(kb, *src)
                    return self._columns_pass2()
        self.U = 1
        kb, body, lanes = self._body("scalar")
        self.ctx.dispatch(kb, *self._columns_pass1(kb, body, lanes, "scalar"))
        self._columns_pass2()

    def _lanes_shape(self, cols: int, rows: int):
        """(TC, TL): column threads (at most 64) and power-of-two row lanes of a workgroup."""
        TC = max(1, min(cols, 64, self.WG))
        TL = 1
        while TC * TL * 2 <= self.WG and TL < rows:
            TL *= 2
        return TC, TL

    def _tree(self, acc: str, write: str, lane: str, stride: int, TL: int) -> list:
        """A workgroup-memory tree over ``TL`` lanes ``stride`` invocations apart: lane 0
        then runs ``write`` (with ``res``, the folded state)."""
        out = [f"sv[lid] = {acc};", "workgroupBarrier();"]
        s = TL // 2
        while s >= 1:
            both = self._comb("sv[lid]", f"sv[lid + {s * stride}u]")
            out += [f"if ({lane} < {s}u) {{ sv[lid] = {both}; }}", "workgroupBarrier();"]
            s //= 2
        out.append(f"if ({lane} == 0u) {{\n  let res = sv[lid];\n{write}\n  }}")
        return out

    def _columns_pass1(self, kb, body, lanes, mode):
        M, N, B, U = self.M, self.N, self.B, self.U
        BU = B // U
        TC, TL = self._lanes_shape(BU, N)
        NB = -(-BU // TC)
        P = self.P = self._split(self.A * NB * TC, N, TL)
        per = -(-N // P) if N else 0
        if P > 1:
            self.partial_key = self.ctx.scratch(ShapedArray((M * P * self.w_total,), np.uint32))
        WG = TC * TL
        groups = self.A * NB * P
        grid = W.grid_for(groups, kb.max_groups)
        head = [f"let g = wid.x + wid.y * {grid[0]}u;",
                f"if (g >= {groups}u) {{ return; }}",
                f"let wj_c = lid % {TC}u;", f"let wj_l = lid / {TC}u;",
                f"let wj_q = g / {NB}u;", f"let p = wj_q % {P}u;", f"let wj_a = wj_q / {P}u;",
                f"let wj_cc = (g % {NB}u) * {TC}u + wj_c;",
                f"let wj_act = wj_cc < {BU}u;",
                f"let wj_b = min(wj_cc, {BU - 1}u) * {U}u;",
                f"let o = wj_a * {B}u + wj_b;",
                f"let wj_base = wj_a * {N * B}u + wj_b;"]
        head += [f"let o{q} = o + {q}u;" for q in range(U)]
        head += [f"let lo = min(p * {per}u, {N}u);",
                 f"let hi = select(lo, min(lo + {per}u, {N}u), wj_act);"]
        start, advance = _cursor(mode, B, "lo + wj_l", TL)
        pre, inside = W.hoist_invariants(body, ["r", "wj_i"])
        _declare_state(kb, self.monos)
        kb.decls.append(f"var<workgroup> sv: array<RState, {WG}>;")
        ident = "RState(" + ", ".join(m.identity for m in self.monos) + ")"
        accs = [f"acc{q}" for q in range(len(lanes))]
        step = "\n    ".join([f"{a} = {self._comb(a, 'RState(' + ', '.join(l) + ')')};"
                               for a, l in zip(accs, lanes)] + advance)
        tail = []
        for q, a in enumerate(accs):
            if P > 1:
                pn = kb.bind(self.partial_key, np.uint32, "read_write")
                write = "\n".join(
                    f"    {pn}[(p * {self.w_total}u + {self.offs[k] + w}u) * {M}u + o{q}] = {e};"
                    for k, m in enumerate(self.monos)
                    for w, e in enumerate(_to_words(m, f"res.m{k}")))
            else:
                write = self.write_outputs(kb, f"o{q}")
            tail += self._tree(a, f"    if (wj_act) {{\n{write}\n    }}", "wj_l", TC, TL)
        inner = "\n    ".join(inside)
        src = _main(kb, WG, "  " + "\n  ".join(head + start + pre)
                    + "".join(f"\n  var {a} = {ident};" for a in accs) + "\n"
                    f"  for (var r = lo + wj_l; r < hi; r = r + {TL}u) {{\n    {inner}\n"
                    f"    {step}\n  }}\n  " + "\n  ".join(tail))
        return src, grid

    def _columns_pass2(self):
        """Folds the ``[P, M]`` partial states (word-planar: word ``w`` of part ``p``, output
        ``o`` at ``(p * W + w) * M + o``) as a column reduction: ``TO`` adjacent outputs by
        ``TL`` part lanes per workgroup."""
        P, M = self.P, self.M
        if P == 1:
            return
        kb = self.ctx.new_kb()
        inp = kb.bind(self.partial_key, np.uint32, "read")
        TL = 1
        while TL < 32 and TL * 2 <= max(1, P // 8):
            TL *= 2
        TO = max(1, self.WG // TL)
        groups = -(-M // TO)
        states = [_from_words(m, [f"{inp}[(r * {self.w_total}u + {self.offs[k] + w}u) * {M}u + o]"
                                  for w in range(self.words[k])])
                  for k, m in enumerate(self.monos)]
        _declare_state(kb, self.monos)
        kb.decls.append(f"var<workgroup> sv: array<RState, {TO * TL}>;")
        ident = "RState(" + ", ".join(m.identity for m in self.monos) + ")"
        grid = W.grid_for(groups, kb.max_groups)
        write = self.write_outputs(kb, "o")
        tail = self._tree("acc", f"    if (wj_act) {{\n{write}\n    }}", "wj_l", TO, TL)
        src = _main(kb, TO * TL,
                    f"  let g = wid.x + wid.y * {grid[0]}u;\n"
                    f"  if (g >= {groups}u) {{ return; }}\n"
                    f"  let wj_l = lid / {TO}u;\n"
                    f"  let wj_o = g * {TO}u + lid % {TO}u;\n"
                    f"  let wj_act = wj_o < {M}u;\n"
                    f"  let o = min(wj_o, {M - 1}u);\n"
                    f"  var acc = {ident};\n"
                    f"  for (var r = wj_l; r < select(0u, {P}u, wj_act); r = r + {TL}u) {{\n"
                    f"    acc = {self._comb('acc', 'RState(' + ', '.join(states) + ')')};\n  }}\n  "
                    + "\n  ".join(tail))
        self.ctx.dispatch(kb, src, grid)

    # ------------------------------------------------------------------ rows
    def _emit_rows(self):
        self.U = 1
        if self.canon and self.N % 4 == 0 and self.N >= 16:
            kb, body, lanes = self._body("rows")
            if kb.vec_ok:
                src = self._rows_pass1(kb, body, lanes, self.N // 4)
                if self.target.compiles(src[0]):
                    self.ctx.dispatch(kb, *src)
                    return self._rows_pass2()
        kb, body, lanes = self._body("scalar")
        self.ctx.dispatch(kb, *self._rows_pass1(kb, body, lanes, self.N))
        self._rows_pass2()

    def _team(self, units: int) -> int:
        """Threads per row: a power of two, about a quarter of the row's units, <= WG."""
        T = 1
        while T < self.WG and T * 4 < units:
            T *= 2
        return T

    SUBGROUP_ITEMS = 4096   # work items up to which a whole-workgroup team uses subgroups

    def _fold_team(self, kb, acc: str, T: int, write: str, items: int) -> list:
        """Folds the states ``acc`` of each team of ``T`` threads; the first thread of a
        team runs ``write`` (with ``res``).  Subgroup shuffles where the target has
        subgroups, the team is the whole workgroup and there are few work items (a full
        reduction's parts, a second pass): on an H100 they were as fast as the tree there,
        and 10% slower for 8192 rows of 4096."""
        if T == self.WG and self.target.subgroup_size and items <= self.SUBGROUP_ITEMS:
            kb.sg = True
            mono_words = []
            for k, m in enumerate(self.monos):
                ws = [f"subgroupShuffleXor({w}, wj_s)" for w in _to_words(m, f"{acc}.m{k}")]
                mono_words.append(_from_words(m, ws))
            shfl = "RState(" + ", ".join(mono_words) + ")"
            ident = "RState(" + ", ".join(m.identity for m in self.monos) + ")"
            bfly = (f"for (var wj_s = 1u; wj_s < wj_sgs; wj_s = wj_s * 2u) {{ "
                    f"{acc} = {self._comb(acc, shfl)}; }}")
            return [bfly,
                    f"if (wj_sid == 0u) {{ sv[wj_sgi] = {acc}; }}",
                    "workgroupBarrier();",
                    f"{acc} = {ident};",
                    f"for (var wj_k = wj_sid; wj_k < wj_nsg; wj_k = wj_k + wj_sgs) {{ "
                    f"{acc} = {self._comb(acc, 'sv[wj_k]')}; }}",
                    bfly,
                    f"if (lid == 0u) {{\n  let res = {acc};\n{write}\n  }}"]
        if T == 1:
            return [f"{{\n  let res = {acc};\n{write}\n  }}"]
        return self._tree(acc, write, "wj_tl", 1, T)

    def _rows_kernel(self, kb, pre, inside, lanes, units, P, write_of, vec):
        """A rows kernel: ``M * P`` work items (an output's part), ``T`` threads each."""
        M = self.M
        T = self._team(-(-units // P) if units else 0)
        WG = max(T, min(self.WG, 256))
        R = WG // T
        per = -(-units // P) if units else 0
        items = M * P
        groups = -(-items // R)
        grid = W.grid_for(groups, kb.max_groups)
        _declare_state(kb, self.monos)
        sv_len = WG
        ident = "RState(" + ", ".join(m.identity for m in self.monos) + ")"
        accs = [f"acc{q}" for q in range(len(lanes))]
        step = "\n    ".join(f"{a} = {self._comb(a, 'RState(' + ', '.join(l) + ')')};"
                              for a, l in zip(accs, lanes))
        fold = accs
        while len(fold) > 1:
            fold = [self._comb(fold[k], fold[k + 1]) if k + 1 < len(fold) else fold[k]
                    for k in range(0, len(fold), 2)]
        head = [f"let g = wid.x + wid.y * {grid[0]}u;",
                f"if (g >= {groups}u) {{ return; }}",
                f"let wj_tl = lid % {T}u;",
                f"let wj_w = g * {R}u + lid / {T}u;",
                f"let wj_act = wj_w < {items}u;",
                f"let wj_wc = min(wj_w, {items - 1}u);",
                f"let p = wj_wc % {P}u;", f"let o = wj_wc / {P}u;", "let o0 = o;"]
        if self.canon:
            head.append(f"let wj_base = o * {units}u;")
        head += [f"let lo = min(p * {per}u, {units}u);",
                 f"let hi = select(lo, min(lo + {per}u, {units}u), wj_act);"]
        head += pre
        head += [f"var {a} = {ident};" for a in accs]
        inner = "\n    ".join(inside)
        head.append(f"for (var r = lo + wj_tl; r < hi; r = r + {T}u) {{\n    {inner}\n"
                    f"    {step}\n  }}")
        head.append(f"var wj_acc = {fold[0]};")
        tail = self._fold_team(kb, "wj_acc", T, f"    if (wj_act) {{\n{write_of()}\n    }}",
                               items)
        kb.decls.append(f"var<workgroup> sv: array<RState, {sv_len}>;")
        return _main(kb, WG, "  " + "\n  ".join(head + tail)), grid

    def _rows_pass1(self, kb, body, lanes, units):
        T = self._team(units)
        P = self.P = self._split(self.M, units, T)
        if P > 1:
            self.partial_key = self.ctx.scratch(
                ShapedArray((self.M * P * self.w_total,), np.uint32))
        pre, inside = W.hoist_invariants(body, ["r"])

        def write_of():
            if P > 1:
                pn = kb.bind(self.partial_key, np.uint32, "read_write")
                return "\n".join(f"    {pn}[(o * {P}u + p) * {self.w_total}u + "
                                 f"{self.offs[k] + w}u] = {e};"
                                 for k, m in enumerate(self.monos)
                                 for w, e in enumerate(_to_words(m, f"res.m{k}")))
            return self.write_outputs(kb, "o")
        return self._rows_kernel(kb, pre, inside, lanes, units, P, write_of, True)

    def _rows_pass2(self):
        """Folds each output's ``P`` partial states (``(o * P + p) * W``) as a rows
        reduction."""
        P = self.P
        if P == 1:
            return
        kb = self.ctx.new_kb()
        inp = kb.bind(self.partial_key, np.uint32, "read")
        at = f"(o * {P}u + r) * {self.w_total}u"
        states = [_from_words(m, [f"{inp}[{at} + {self.offs[k] + w}u]"
                                  for w in range(self.words[k])])
                  for k, m in enumerate(self.monos)]
        src = self._rows_kernel(kb, [], [], [states], P, 1,
                                lambda: self.write_outputs(kb, "o"), False)
        self.ctx.dispatch(kb, *src)


def _emit_thread_per_output(jobs, monos, M, N, element_index, write_outputs, wg=64):
    """Many outputs, each reducing few elements: one thread folds one output sequentially
    (no workgroup tree; on GPUs neighbouring threads read neighbouring outputs)."""
    ctx = jobs[0].ctx
    kb = ctx.new_kb()
    saved, kb.lines = kb.lines, []
    idx = element_index(kb)
    lifted = [m.lift(j.ctx.reader(kb, j.reader_index, j.ctx.fuser(kb))(idx), "r")
              for j, m in zip(jobs, monos)]
    body, kb.lines = kb.lines, saved
    write = write_outputs(kb)
    _declare_state(kb, monos)
    comb = ", ".join(f"combine{k}(acc.m{k}, x.m{k})" for k in range(len(monos)))
    grid = W.grid_for(-(-M // wg), kb.max_groups)
    inner = "\n    ".join(body)
    src = _main(
        kb, wg,
        f"  let o = (wid.x + wid.y * {grid[0]}u) * {wg}u + lid;\n  if (o >= {M}u) {{ return; }}\n"
        f"  var acc = RState({', '.join(m.identity for m in monos)});\n"
        f"  for (var r = 0u; r < {N}u; r = r + 1u) {{\n    {inner}\n"
        f"    let x = RState({', '.join(lifted)});\n    acc = RState({comb});\n  }}\n"
        f"  let res = acc;\n{write}")
    ctx.dispatch(kb, src, grid)


def _main(kb, wg: int, body: str) -> str:
    """A reduction kernel's source: the builder's header, then ``fn main`` taking the
    workgroup id and local index (and the subgroup builtins where the builder uses subgroups,
    ``kb.sg``) around ``body``."""
    params = "@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32"
    if getattr(kb, "sg", False):
        params += (", @builtin(subgroup_size) wj_sgs: u32, "
                   "@builtin(subgroup_invocation_id) wj_sid: u32, "
                   "@builtin(subgroup_id) wj_sgi: u32, @builtin(num_subgroups) wj_nsg: u32")
    return f"{kb.header()}\n@compute @workgroup_size({wg})\nfn main({params}) {{\n{body}\n}}\n"


def _bits(expr, ty):
    return (
        f"bitcast<u32>({expr})"
        if ty in ("f32", "i32")
        else (f"select(0u, 1u, {expr})" if ty == "bool" else expr)
    )


def _from_bits(expr, ty):
    return (
        f"bitcast<{ty}>({expr})"
        if ty in ("f32", "i32")
        else (f"({expr} != 0u)" if ty == "bool" else expr)
    )


def _loop(body_lines, lanes, slices, wg, lifted_is_state=False):
    """The per-thread loop: ``lanes`` is a list (one per element the iteration covers) of
    lists (one per reduction) of lifted states; ``slices``: each thread takes a contiguous
    slice of ``[lo, hi)``, else the threads stride over it."""
    if lanes and not isinstance(lanes[0], list):
        lanes = [lanes]
    inner = "\n      ".join(body_lines)
    step = "\n      ".join(f"acc = combine(acc, RState({', '.join(l)}));" for l in lanes)
    if slices:
        first, nxt = "lo + lid * per", "r + 1u"
        pre = (f"let per = (hi - lo + {wg - 1}u) / {wg}u;\n"
               "  let r1 = min(lo + lid * per + per, hi);\n  ")
        stop = "r1"
    else:
        first, nxt, pre, stop = "lo + lid", f"r + {wg}u", "", "hi"
    return (
        f"{pre}for (var r = {first}; r < {stop}; r = {nxt}) {{\n      {inner}\n      {step}\n  }}"
    )


def _cursor(mode: str, B: int, first: str, stride: int) -> tuple[list, list]:
    """(lines before the loop, its last lines) keeping ``wj_i``, the flat ``vec4`` index of
    row ``r`` of the thread's 4 adjacent columns ("cols" mode: ``(wj_base + r B) / 4``), as
    a variable stepped by ``stride`` rows: lavapipe's kernels recomputed that product and
    quotient for every row (a column max over 1024 rows ran 20-25% slower).  Other modes
    index by ``r`` itself: nothing."""
    if mode != "cols":
        return [], []
    return ([f"var wj_i = (wj_base + ({first}) * {B}u) / 4u;"],
            [f"wj_i = wj_i + {stride * B // 4}u;"])


def _declare_state(kb, monos) -> list:
    """Declares the RState struct (one field per reduction), its per-field combine functions
    and the helpers they use; returns the helper names."""
    helpers = [h for m in monos for h in m.helpers]
    for h in helpers:
        kb.use_helper(h)
    for m in monos:
        if hasattr(m, "struct") and m.struct not in kb.decls:
            kb.decls.append(m.struct)
    fields = ", ".join(f"m{k}: {m.state}" for k, m in enumerate(monos))
    kb.decls.append(f"struct RState {{ {fields} }}")
    for k, m in enumerate(monos):
        kb.decls.append(
            f"fn combine{k}(a: {m.state}, b: {m.state}) -> {m.state} {{\n{m.combine}\n}}"
        )
    return helpers


def _fill(kb, monos, wg, groups, parts, slice_n, n, loop, write):
    _declare_state(kb, monos)
    combine = (
        "  return RState("
        + ", ".join(f"combine{k}(a.m{k}, b.m{k})" for k in range(len(monos)))
        + ");"
    )
    identity = "RState(" + ", ".join(m.identity for m in monos) + ")"
    grid = W.grid_for(groups, kb.max_groups)
    src = W.render("reduce.wgsl", HEADER=kb.header(), STATE="RState", WG=wg, EXTRA_SHARED="",
                   COMBINE=combine, NX=grid[0], GROUPS=groups, PARTS=parts, SLICE=max(slice_n, 1),
                   N=n, IDENTITY=identity, LOOP=loop, WRITE=write)
    return src, grid


def element_reduction(kb, idx, read, x: ShapedArray, axes, op, index_dtype=None) -> str:
    """One output of a reduction as a sequential loop over the reduced elements (the
    ``element`` rule: single-workgroup loop kernels, ``wjax/_src/backend/loops.py``)."""
    m = _monoid(op, x.dtype, index_dtype)
    for h in m.helpers:
        kb.use_helper(h)
    if hasattr(m, "struct") and m.struct not in kb.decls:
        kb.decls.append(m.struct)
    comb = kb.fresh("wj_comb")
    kb.decls.append(f"fn {comb}(a: {m.state}, b: {m.state}) -> {m.state} {{\n{m.combine}\n}}")
    red = sorted(axes)
    kept = [d for d in range(x.ndim) if d not in red]
    n = int(np.prod([x.shape[d] for d in red]))
    dims = [None] * x.ndim
    for d, e in zip(kept, idx.dims()):
        dims[d] = e
    acc, r = kb.var(m.identity, m.state), kb.fresh("r")
    kb.emit(f"for (var {r} = 0u; {r} < {n}u; {r} = {r} + 1u) {{")
    for d, st in zip(red, W.strides_of([x.shape[d] for d in red])):
        e = r if st == 1 else f"{r} / {st}u"
        dims[d] = kb.let(e if st * x.shape[d] >= n else f"({e}) % {x.shape[d]}u", "u32")
    v = read(Index(kb, x.shape, dims=dims))
    kb.emit(f"{acc} = {comb}({acc}, {m.lift(v, r)});")
    kb.emit("}")
    return m.result(acc)


# --------------------------------------------------------------------------- primitives

def _merge_key(eqn):
    """Reductions of equal-shaped operands over the same axes share one kernel."""
    return ("reduce", eqn.invars[0].aval.shape, tuple(sorted(eqn.params["axes"])))


def _kernel_many(ctxs):
    emit_reductions([Job(c, c.eqn.prim.monoid, c.eqn.invars[0].aval, c.eqn.params["axes"],
                         c.out_key(0), c.eqn.outvars[0].aval.dtype) for c in ctxs])


def _reducer(name, op, np_ref, accepts):
    p = Primitive(name)
    p.fuse_inputs = (0,)

    def abstract(x, axes, out_sharding=None):
        axes = _check_axes(name, x, axes)
        if kind(x.dtype) not in accepts:
            raise TypeError(f"{name} does not accept dtype {np.dtype(x.dtype).name}")
        return ShapedArray(
            [s for i, s in enumerate(x.shape) if i not in axes], x.dtype, x.weak_type
        )

    def kernel(ctx, x, axes, out_sharding=None):
        emit_reduction(ctx, op, x, axes, ctx.out_key(0), ctx.eqn.outvars[0].aval.dtype)

    def reference(x, axes, out_sharding=None):
        if x.dtype in (np.float16, dtypes.bfloat16):   # folded in f32, rounded once (as XLA)
            return np.asarray(np_ref(x.astype(np.float32), axis=tuple(axes))).astype(x.dtype)
        return np.asarray(np_ref(x, axis=tuple(axes)), dtype=x.dtype)

    def element(kb, idx, read, in_avals, out_aval, axes, out_sharding=None):
        return element_reduction(kb, idx, read[0], in_avals[0], axes, op)

    p.abstract_eval, p.kernel, p.reference, p.element = abstract, kernel, reference, element
    p.monoid = op
    p.epilogue = True    # the GPU forms' last pass computes small values of its outputs
    p.merge_key = _merge_key
    p.kernel_many = _kernel_many
    _batching.defreducer(p)   # vmap: shift the axes past the batch axis
    return p


reduce_sum_p = _reducer("reduce_sum", "sum", np.sum, "fiuc")
reduce_prod_p = _reducer("reduce_prod", "prod", np.prod, "fiuc")
reduce_max_p = _reducer("reduce_max", "max", np.max, "fiubc")
reduce_min_p = _reducer("reduce_min", "min", np.min, "fiubc")
reduce_and_p = _reducer("reduce_and", "and", lambda x, axis: np.all(x, axis=axis) if x.dtype == bool
                        else np.bitwise_and.reduce(x, axis=axis), "iub")
reduce_or_p = _reducer("reduce_or", "or", lambda x, axis: np.any(x, axis=axis) if x.dtype == bool
                       else np.bitwise_or.reduce(x, axis=axis), "iub")


def _arg(name, op):
    p = Primitive(name)
    p.fuse_inputs = (0,)

    def abstract(x, axes, index_dtype):
        axes = _check_axes(name, x, axes)
        if kind(x.dtype) == "c":
            raise TypeError(f"{name} does not accept dtype complex64: wjax orders no complex "
                            "values")
        if len(axes) != 1:
            raise TypeError(f"{name} takes exactly one axis, got {axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: attempt to get {op} of an empty sequence")
        return ShapedArray([s for i, s in enumerate(x.shape) if i not in axes], index_dtype, False)

    def kernel(ctx, x, axes, index_dtype):
        emit_reduction(ctx, op, x, axes, ctx.out_key(0), index_dtype, index_dtype=index_dtype)

    def reference(x, axes, index_dtype):
        a = axes[0]
        if dtypes.is_float(x.dtype):
            nan = np.isnan(x)
            r = (np.nanargmax if op == "argmax" else np.nanargmin)(np.where(nan, 0, x), axis=a)
            anynan = nan.any(axis=a)
            r = np.where(
                anynan,
                np.argmax(nan, axis=a),
                (np.argmax if op == "argmax" else np.argmin)(x, axis=a),
            )
            return r.astype(index_dtype)
        return (np.argmax if op == "argmax" else np.argmin)(x, axis=a).astype(index_dtype)

    def element(kb, idx, read, in_avals, out_aval, axes, index_dtype):
        return element_reduction(kb, idx, read[0], in_avals[0], axes, op, index_dtype)

    p.abstract_eval, p.kernel, p.reference, p.element = abstract, kernel, reference, element
    _batching.defreducer(p)   # vmap: shift the axes past the batch axis
    return p


argmax_p = _arg("argmax", "argmax")
argmin_p = _arg("argmin", "argmin")


# --------------------------------------------------------------------------- autodiff


def _kept(x_aval, axes):
    return tuple(d for d in range(x_aval.ndim) if d not in axes)


def _sum_transpose(ct, x, axes, out_sharding=None):
    a = x.aval
    return [ops.broadcast_in_dim(ct, a.shape, _kept(a, axes))]


def _chooser_jvp(prim):
    """max/min: the tangent is the mean of the tangents at the positions that attain the result."""
    def rule(primals, tangents, axes, out_sharding=None):
        x, = primals
        t, = tangents
        ans = prim.bind(x, axes=axes, out_sharding=out_sharding)
        a = _ad.aval_of(x)
        if not _ad.is_differentiable(a):
            return ans, _ad.Zero(_ad.aval_of(ans))
        loc = ops.convert_element_type(
            ops.eq(x, ops.broadcast_in_dim(ans, a.shape, _kept(a, axes))), a.dtype
        )
        counts = ops.reduce_sum(loc, axes)
        return ans, ops.div(ops.reduce_sum(ops.mul(t, loc), axes), counts)
    return rule


def _prod_jvp(primals, tangents, axes, out_sharding=None):
    """d prod / d x_i = product of the others, computed without dividing by zeros."""
    x, = primals
    t, = tangents
    ans = reduce_prod_p.bind(x, axes=axes, out_sharding=out_sharding)
    a = _ad.aval_of(x)
    if not _ad.is_differentiable(a):
        return ans, _ad.Zero(_ad.aval_of(ans))
    dt = a.dtype
    kept = _kept(a, axes)
    is0 = ops.eq(x, np.zeros((), dt))
    nz = ops.select(is0, np.ones((), dt), x)
    p_nz = ops.broadcast_in_dim(ops.reduce_prod(nz, axes), a.shape, kept)
    n0 = ops.broadcast_in_dim(
        ops.reduce_sum(ops.convert_element_type(is0, dt), axes), a.shape, kept
    )
    others = ops.select(ops.eq(n0, np.zeros((), dt)), ops.div(p_nz, nz),
                         ops.select(ops.bitwise_and(ops.eq(n0, np.ones((), dt)), is0), p_nz,
                                     np.zeros((), dt)))
    return ans, ops.reduce_sum(ops.mul(t, others), axes)


_ad.deflinear(reduce_sum_p, _sum_transpose)
reduce_max_p.jvp = _chooser_jvp(reduce_max_p)
reduce_min_p.jvp = _chooser_jvp(reduce_min_p)
reduce_prod_p.jvp = _prod_jvp
for _p in (reduce_and_p, reduce_or_p, argmax_p, argmin_p):
    _ad.defjvp_zero(_p)
