"""Cumulative reductions: cumsum, cumprod, cummax, cummin, cumlogsumexp.

Each is a kernel op over ``axis`` (``reverse`` scans from the end), run by the
workgroup scan in shaders/scan.wgsl: one workgroup per (row, part), threads
fold contiguous chunks, the workgroup scans the chunk totals in workgroup
memory, and threads rescan their chunks from their prefixes.  A long row is cut
into parts of 16 elements a thread: a first pass writes each part's total, a
middle pass scans the totals into exclusive prefixes, and the last pass scans
each part from its prefix.  Rows that are short (or numerous) are scanned by
one thread each instead.  Elementwise producers of the operand are fused into
the element reads.
"""
from __future__ import annotations

import numpy as np

from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import convert_expr, kind
from ..transforms import ad as _ad
from ..core import ops
from ..backend import wgsl_cmath  # noqa: F401  (registers wj_cmul)

W.helper("wj_logaddexp", """
fn wj_logaddexp(a: f32, b: f32) -> f32 {
  let m = max(a, b);
  if (wj_isnan(a) || wj_isnan(b)) { return a + b; }
  if (wj_isinf(m) && m < 0.0) { return m; }
  if (wj_isinf(m)) { return m; }
  return m + wj_log1p(wj_exp(-abs(a - b)));
}""")


def _state_dtype(dtype):
    k = kind(dtype)
    if k == "c":
        return np.dtype(np.complex64)
    if k == "f":
        return np.dtype(np.float32)
    if k == "b":
        return np.dtype(np.uint32)
    return np.dtype(np.int32) if k == "i" else np.dtype(np.uint32)


def _monoid(op, dtype):
    """(identity, combine body, helpers) over the state type of ``dtype``."""
    k = kind(dtype)
    st = _state_dtype(dtype)
    if op == "sum":
        return W.zero(st), "  return a + b;", ()
    if op == "prod":
        if k == "c":
            return W.literal(1, st), "  return wj_cmul(a, b);", ("wj_cmul",)
        return W.literal(1, st), "  return a * b;", ()
    if op == "logsumexp":
        return W.literal(-np.inf, st), "  return wj_logaddexp(a, b);", (
            "wj_isnan", "wj_isinf", "wj_log1p", "wj_logaddexp")
    if op in ("max", "min"):
        if k == "f":
            ident = W.literal(-np.inf if op == "max" else np.inf, st)
            return ident, f"  return wj_{op}_f(a, b);", ("wj_isnan", f"wj_{op}_f")
        if k == "b":
            return ("0u" if op == "max" else "1u"), f"  return {op}(a, b);", ()
        info = np.iinfo(dtype)
        ident = W.literal(info.min if op == "max" else info.max, st)
        return ident, f"  return {op}(a, b);", ()
    raise ValueError(op)


def _rows(shape, axis):
    other = [d for d in range(len(shape)) if d != axis]
    return other, [shape[d] for d in other]


def _operand_index(kb, shape, axis, row, p, reverse):
    other, oshape = _rows(shape, axis)
    od = Index(kb, oshape, flat=row).dims() if oshape else []
    dims = [None] * len(shape)
    for d, e in zip(other, od):
        dims[d] = e
    n = shape[axis]
    dims[axis] = f"({n - 1}u - {p})" if reverse else p
    return Index(kb, shape, dims=dims)


def _elem_body(ctx, kb, x, axis, reverse, sdt):
    saved, kb.lines = kb.lines, []
    idx = _operand_index(kb, x.shape, axis, "row", "p", reverse)
    v = ctx.reader(kb, 0, ctx.fuser(kb))(idx)
    body = kb.lines + [f"return {convert_expr(v, x.dtype, sdt)};"]
    kb.lines = saved
    return "  " + "\n  ".join(body)


def _put_body(ctx, kb, x, axis, reverse, sdt, out_dtype):
    saved, kb.lines = kb.lines, []
    idx = _operand_index(kb, x.shape, axis, "row", "p", reverse)
    name = kb.bind(ctx.out_key(0), out_dtype, "read_write")
    val = W.wrap_narrow(convert_expr("v", sdt, out_dtype), out_dtype)
    body = kb.lines + [f"{name}[{idx.flat()}] = {W.store_expr(val, out_dtype)};"]
    kb.lines = saved
    return "  " + "\n  ".join(body)


def emit_scan(ctx, op, x: ShapedArray, axis: int, reverse: bool, out_dtype):
    N = x.shape[axis]
    M = x.size // N if N else 0
    sdt = _state_dtype(x.dtype)
    ident, comb, helpers = _monoid(op, x.dtype)
    st = W.value_type(sdt)

    def prelude(kb):
        for h in helpers:
            kb.use_helper(h)
        elem = _elem_body(ctx, kb, x, axis, reverse, sdt)
        put = _put_body(ctx, kb, x, axis, reverse, sdt, out_dtype)
        return (f"fn combine(a: {st}, b: {st}) -> {st} {{\n{comb}\n}}\n"
                f"fn elem(row: u32, p: u32) -> {st} {{\n{elem}\n}}\n"
                f"fn put(row: u32, p: u32, v: {st}) {{\n{put}\n}}\n")

    if N <= 32 or M >= 2048:
        # one thread per row, a sequential scan
        kb = ctx.new_kb()
        fns = prelude(kb)
        kb.emit(f"var acc: {st} = {ident};")
        kb.emit(
            f"for (var p = 0u; p < {N}u; p = p + 1u) {{ acc = combine(acc, elem(i, p)); put(i, p, "
            f"acc); }}"
        )
        src, grid = kb.elementwise_kernel(M, wg=64)
        head, rest = src.split("@compute", 1)
        ctx.dispatch(kb, head + fns + "@compute" + rest, grid)
        return

    wg = 256 if N > 2048 else (128 if N > 512 else 64)
    parts = 1
    if N > wg * 64:
        # a long row: parts of wg x per elements (per >= 16) over as many workgroups as that
        # makes (a GPU's thousands of threads), their totals scanned by a middle pass when
        # there are many: ~16 sequential combines per element's prefix before the trees, so
        # float sums round like a blocked pairwise sum (a 2^22 cumsum: 5x closer to the
        # exact one than 256 threads folding 16384 each, as close as XLA's on the CPU)
        per = max(16, -(-N // (wg * _MAX_PARTS)))
        parts = -(-N // (wg * per))
    slice_n = -(-N // parts)
    totals = ctx.scratch(ShapedArray((M * parts,), sdt)) if parts > 1 else None
    scanned = totals is not None and parts > 16
    prefixes = ctx.scratch(ShapedArray((M * parts,), sdt)) if scanned else None

    def build(mode_totals):
        kb = ctx.new_kb()
        for h in helpers:
            kb.use_helper(h)
        elem = _elem_body(ctx, kb, x, axis, reverse, sdt)
        put = _put_body(ctx, kb, x, axis, reverse, sdt, out_dtype) if not mode_totals else ""
        after, prefix = "", ""
        if totals is not None and mode_totals:
            tname = kb.bind(totals, sdt, "read_write")
            after = f"  if (lid == {wg - 1}u) {{ {tname}[g] = sv[lid]; }}\n  return;"
        elif scanned:             # the part's exclusive prefix, from the middle pass
            pname = kb.bind(prefixes, sdt, "read")
            prefix = f"  pre = {pname}[g];"
        elif totals is not None:
            tname = kb.bind(totals, sdt, "read")
            prefix = (f"  for (var q = 0u; q < part; q = q + 1u) "
                      f"{{ pre = combine(pre, {tname}[row * {parts}u + q]); }}")
        grid = W.grid_for(M * parts, kb.max_groups)
        src = W.render("scan.wgsl", HEADER=kb.header(), STATE=st, WG=wg, COMBINE=comb, ELEM=elem,
                       PUT=put if not mode_totals else "", NX=grid[0], GROUPS=M * parts,
                       PARTS=parts, SLICE=slice_n, N=N, IDENTITY=ident, AFTER_SCAN=after,
                       PART_PREFIX=prefix, EXCLUSIVE="false")
        if mode_totals:   # no put in this pass; keep the function well-formed
            src = src.replace("fn put(row: u32, p: u32, v: " + st + ") {\n\n}",
                              "fn put(row: u32, p: u32, v: " + st + ") {}")
        ctx.dispatch(kb, src, grid)

    def scan_totals():
        """The middle pass: per row, one workgroup turns its parts' totals into exclusive
        prefixes (the same fold, tree and rescan as the kernel, over the totals)."""
        kb = ctx.new_kb()
        for h in helpers:
            kb.use_helper(h)
        tname = kb.bind(totals, sdt, "read")
        pname = kb.bind(prefixes, sdt, "read_write")
        elem = f"  return {tname}[row * {parts}u + p];"
        put = f"  {pname}[row * {parts}u + p] = v;"
        grid = W.grid_for(M, kb.max_groups)
        src = W.render("scan.wgsl", HEADER=kb.header(), STATE=st, WG=256, COMBINE=comb,
                       ELEM=elem, PUT=put, NX=grid[0], GROUPS=M, PARTS=1, SLICE=parts, N=parts,
                       IDENTITY=ident, AFTER_SCAN="", PART_PREFIX="", EXCLUSIVE="true")
        ctx.dispatch(kb, src, grid)

    if totals is not None:
        build(True)
    if scanned:
        scan_totals()
    build(False)


_MAX_PARTS = 16384     # GPU scans: parts per row at most (the middle pass folds them)


# --------------------------------------------------------------------------- primitives

_ACCEPTS = {"sum": "fiuc", "prod": "fiuc", "max": "fiub", "min": "fiub", "logsumexp": "f"}


def _ref(op, x, axis, reverse):
    y = np.flip(x, axis) if reverse else x
    with np.errstate(all="ignore"):
        if op == "sum":
            r = np.cumsum(y, axis=axis, dtype=x.dtype)
        elif op == "prod":
            r = np.cumprod(y, axis=axis, dtype=x.dtype)
        elif op == "max":
            r = np.maximum.accumulate(y, axis=axis)
        elif op == "min":
            r = np.minimum.accumulate(y, axis=axis)
        else:
            r = np.logaddexp.accumulate(y, axis=axis)
    r = np.asarray(r, x.dtype)
    return np.flip(r, axis) if reverse else r


def _cumulative(name, op):
    p = Primitive(name)
    p.fuse_inputs = (0,)

    def abstract(x, axis, reverse=False):
        if not 0 <= axis < max(x.ndim, 0) or x.ndim == 0:
            raise ValueError(f"{name}: axis {axis} is out of bounds for array of shape {x.shape}")
        if kind(x.dtype) not in _ACCEPTS[op]:
            raise TypeError(f"{name} does not accept dtype {np.dtype(x.dtype).name}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    def kernel(ctx, x, axis, reverse=False):
        emit_scan(ctx, op, x, axis, reverse, ctx.eqn.outvars[0].aval.dtype)

    p.abstract_eval, p.kernel = abstract, kernel
    p.reference = lambda x, axis, reverse=False: _ref(op, x, axis, reverse)
    p.monoid = op
    _batching.defaxis(p)   # vmap: shift the axis past the batch axis
    return p


cumsum_p = _cumulative("cumsum", "sum")
cumprod_p = _cumulative("cumprod", "prod")
cummax_p = _cumulative("cummax", "max")
cummin_p = _cumulative("cummin", "min")
cumlogsumexp_p = _cumulative("cumlogsumexp", "logsumexp")


# --------------------------------------------------------------------------- autodiff

_ad.deflinear(
    cumsum_p, lambda ct, x, axis, reverse=False: [cumsum_p.bind(ct, axis=axis, reverse=not reverse)]
)


def _cumprod_jvp(g, ans, x, axis, reverse=False):
    # d out_i = out_i * sum_{j <= i} t_j / x_j   (exact where x is nonzero)
    return ops.mul(ans, cumsum_p.bind(ops.div(g, x), axis=axis, reverse=reverse))


def _cum_extremal_jvp(prim, pick):
    """cummax/cummin: each output takes the tangent where its running extremum was attained."""
    def rule(primals, tangents, axis, reverse=False):
        x, = primals
        t, = tangents
        ans = prim.bind(x, axis=axis, reverse=reverse)
        a = _ad.aval_of(x)
        if not _ad.is_differentiable(a):
            return ans, _ad.Zero(a)
        n = a.shape[axis]
        pos = ops.broadcasted_iota(np.int32, a.shape, axis)
        record = ops.eq(x, ans)
        if not reverse:  # the last record at or before i
            src = cummax_p.bind(
                ops.select(record, pos, np.full((), -1, np.int32)), axis=axis, reverse=False
            )
        else:  # the first record at or after i
            src = cummin_p.bind(
                ops.select(record, pos, np.full((), n, np.int32)), axis=axis, reverse=True
            )
        return ans, ops.take_along_axis(t, src, axis)
    return rule


def _cumlogsumexp_jvp(g, ans, x, axis, reverse=False):
    # d out_i = sum_{j <= i} t_j exp(x_j - out_i)
    m = ops.stop_gradient(ops.reduce_max(x, tuple(range(_ad.aval_of(x).ndim))))
    e = ops.exp(ops.sub(x, m))
    return ops.div(
        cumsum_p.bind(ops.mul(g, e), axis=axis, reverse=reverse), ops.exp(ops.sub(ans, m))
    )


_ad.defjvp2(cumprod_p, _cumprod_jvp)
cummax_p.jvp = _cum_extremal_jvp(cummax_p, "max")
cummin_p.jvp = _cum_extremal_jvp(cummin_p, "min")
_ad.defjvp2(cumlogsumexp_p, _cumlogsumexp_jvp)
