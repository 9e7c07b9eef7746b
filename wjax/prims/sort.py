"""Sorting on the device: ``sort`` (multi-operand, stable) and ``top_k``.

Both compute a permutation per row with a bitonic sort of (key words...,
position) tuples, then gather every operand through it.  Keys are u32 words
whose unsigned order is the sort order: floats map to JAX's sort order
(-0.0 == 0.0, every NaN equal and last), signed ints flip the sign bit.  The
position word breaks ties, so the sort is stable and rows pad to a power of
two with positions past the end.  Stages whose compare distance fits in a
block run in workgroup memory (shaders/bitonic_local.wgsl); longer distances
run one dispatch per step in global memory.
"""
from __future__ import annotations

import numpy as np

from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..ir import ShapedArray
from ..primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import kind

W.helper("wj_sortkey_f", """
fn wj_sortkey_f(x: f32) -> u32 {
  var b = bitcast<u32>(x);
  if (wj_isnan(x)) { b = 0x7fc00000u; }
  if (x == 0.0) { b = 0u; }
  return select(b ^ 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}""")
W.helper("wj_totalkey_f", """
fn wj_totalkey_f(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b ^ 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}""")


def key_expr(kb, v: str, dtype, total_order: bool = False) -> str:
    """A u32 WGSL expression whose unsigned order is the sort order of ``v``."""
    k = kind(dtype)
    if k == "f":
        kb.use_helper("wj_isnan")
        h = "wj_totalkey_f" if total_order else "wj_sortkey_f"
        kb.use_helper(h)
        return f"{h}(f32({v}))"
    if k == "i":
        return f"(bitcast<u32>({v}) ^ 0x80000000u)"
    if k == "b":
        return f"select(0u, 1u, {v})"
    return f"u32({v})"


def _np_keys(x, total_order=False):
    """NumPy version of key_expr (for the reference rules)."""
    if x.dtype.kind == "f":
        f = x.astype(np.float32)
        b = f.view(np.uint32).copy()
        if not total_order:
            b[np.isnan(f)] = 0x7FC00000
            b[f == 0] = 0
        neg = (b & 0x80000000) != 0
        return np.where(neg, ~b, b ^ 0x80000000).astype(np.uint32)
    if x.dtype.kind == "i":
        return (x.astype(np.int64) + 2**31).astype(np.uint32)
    return x.astype(np.uint32)


def _pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _row_index(kb, shape, axis, row, p):
    """Index of element ``p`` along ``axis`` of row ``row`` (rows enumerate the other dims)."""
    other = [d for d in range(len(shape)) if d != axis]
    oshape = [shape[d] for d in other]
    od = Index(kb, oshape, flat=row).dims() if oshape else []
    dims = [None] * len(shape)
    for d, e in zip(other, od):
        dims[d] = e
    dims[axis] = p
    return Index(kb, shape, dims=dims)


def emit_permutation(ctx, avals, key_positions, axis, *, descending=False, total_order=False):
    """Dispatches that sort each row of the key operands; returns (idx scratch key, P).

    ``idx[row * P + p]`` is the position (along ``axis``) of the p-th smallest element."""
    shape = avals[key_positions[0]].shape
    N = shape[axis]
    R = int(np.prod(shape, dtype=np.int64)) // N
    P = _pow2(N)
    nk = len(key_positions)
    u32 = np.dtype(np.uint32)
    keys = [ctx.scratch(ShapedArray((R * P,), u32)) for _ in range(nk)]
    idx = ctx.scratch(ShapedArray((R * P,), u32))

    # init: key words and positions (padding: all-ones keys, positions >= N sort last)
    kb = ctx.new_kb()
    f = ctx.fuser(kb)
    row = kb.let(f"i / {P}u", "u32")
    p = kb.let(f"i % {P}u", "u32")
    pc = kb.let(f"min({p}, {N - 1}u)", "u32")
    for slot, pos in enumerate(key_positions):
        a = avals[pos]
        v = ctx.reader(kb, pos, f)(_row_index(kb, a.shape, axis, row, pc))
        ke = key_expr(kb, v, a.dtype, total_order)
        if descending:
            ke = f"(~{ke})"
        name = kb.bind(keys[slot], u32, "read_write")
        kb.emit(f"{name}[i] = select(0xffffffffu, {ke}, {p} < {N}u);")
    name = kb.bind(idx, u32, "read_write")
    kb.emit(f"{name}[i] = {p};")
    src, grid = kb.elementwise_kernel(R * P)
    ctx.dispatch(kb, src, grid)
    if P == 1:
        return idx, P

    words_per = nk + 1
    B = min(P, 2048, 1 << ((4096 // words_per).bit_length() - 1))
    T = min(256, B // 2)

    def local(kstart, kend, jinit):
        kb = ctx.new_kb()
        bufs = [kb.bind(k, u32, "read_write") for k in keys] + [kb.bind(idx, u32, "read_write")]
        shared = "\n".join(f"var<workgroup> s{w}: array<u32, {B}>;" for w in range(words_per))
        less = "".join(f"  if (s{w}[a] != s{w}[b]) {{ return s{w}[a] < s{w}[b]; }}\n" for w in range(nk))
        less += f"  return s{nk}[a] < s{nk}[b];"
        swap = "\n".join(f"  let t{w} = s{w}[a]; s{w}[a] = s{w}[b]; s{w}[b] = t{w};" for w in range(words_per))
        load = "\n".join(f"    s{w}[q] = {bufs[w]}[base + q];" for w in range(words_per))
        store = "\n".join(f"    {bufs[w]}[base + q] = s{w}[q];" for w in range(words_per))
        groups = R * (P // B)
        grid = W.grid_for(groups, kb.max_groups)
        src = W.load_shader("bitonic_local.wgsl")
        for k, v in {"HEADER": kb.header(), "SHARED": shared, "LESS": less, "SWAP": swap,
                     "LOAD": load, "STORE": store, "T": T, "NX": grid[0], "GROUPS": groups,
                     "BPR": P // B, "P": P, "B": B, "HALF": B // 2, "KSTART": kstart,
                     "KEND": kend, "JINIT": jinit}.items():
            src = src.replace("{{" + k + "}}", str(v))
        ctx.dispatch(kb, src, grid)

    def global_step(k, j):
        kb = ctx.new_kb()
        bufs = [kb.bind(kk, u32, "read_write") for kk in keys] + [kb.bind(idx, u32, "read_write")]
        half = P // 2
        kb.emit(f"let row = i / {half}u;")
        kb.emit(f"let t = i % {half}u;")
        kb.emit(f"let a = row * {P}u + (t / {j}u) * {2 * j}u + (t % {j}u);")
        kb.emit(f"let b = a + {j}u;")
        kb.emit(f"let up = (((t / {j}u) * {2 * j}u + (t % {j}u)) & {k}u) == 0u;")
        cmp = "var blt = false;\n  "
        conds = []
        for w in range(nk):
            conds.append(f"if ({bufs[w]}[b] != {bufs[w]}[a]) {{ blt = {bufs[w]}[b] < {bufs[w]}[a]; }}")
        conds.append(f"{{ blt = {bufs[nk]}[b] < {bufs[nk]}[a]; }}")
        cmp += " else ".join(conds)
        kb.emit(cmp)
        sw = " ".join(f"let t{w} = {bufs[w]}[a]; {bufs[w]}[a] = {bufs[w]}[b]; {bufs[w]}[b] = t{w};"
                      for w in range(words_per))
        kb.emit(f"if (blt == up) {{ {sw} }}")
        src, grid = kb.elementwise_kernel(R * half)
        ctx.dispatch(kb, src, grid)

    local(2, B, "k / 2u")
    k = 2 * B
    while k <= P:
        j = k // 2
        while j >= B:
            global_step(k, j)
            j //= 2
        local(k, k, f"{B // 2}u")
        k *= 2
    return idx, P


# --------------------------------------------------------------------------- sort

sort_p = Primitive("sort", multiple_results=True)
sort_p.fuse_inputs = ()   # set per operand count below (all operands accept fused producers)


@sort_p.def_abstract_eval
def _sort_abstract(*operands, dimension, is_stable=True, num_keys=1):
    if not operands:
        raise TypeError("sort requires at least one operand")
    shape = operands[0].shape
    for o in operands:
        if o.shape != shape:
            raise TypeError("sort operands must all have the same shape, got "
                            + ", ".join(str(x.shape) for x in operands))
    if len(shape) == 0:
        raise TypeError("sort requires operands of rank at least 1, got shape ()")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"sort dimension {dimension} is out of bounds for operand shape {shape}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort num_keys={num_keys} must be between 1 and the number of operands "
                         f"({len(operands)})")
    return [ShapedArray(o.shape, o.dtype, o.weak_type) for o in operands]


class _AllInputs(tuple):
    """fuse_inputs that contains every operand position."""

    def __contains__(self, i):
        return True


sort_p.fuse_inputs = _AllInputs()


def _gather_out(ctx, avals, axis, idx, P, n_out, outs, extra=None):
    """out_j[row, p] = operand_j[row, idx[row * P + p]] for p < n_out (one dispatch per chunk of
    operands so the storage-buffer limit holds).  ``extra`` writes the positions too."""
    shape = avals[0].shape
    N = shape[axis]
    R = int(np.prod(shape, dtype=np.int64)) // N
    out_shape = list(shape)
    out_shape[axis] = n_out
    per = max(1, (ctx.lw.max_storage - 2) // 2)
    jobs = [(j, outs[j]) for j in range(len(avals))] + ([("pos", extra)] if extra is not None else [])
    for c in range(0, len(jobs), per):
        kb = ctx.new_kb()
        f = ctx.fuser(kb)
        row = kb.let(f"i / {n_out}u", "u32")
        p = kb.let(f"i % {n_out}u", "u32")
        ib = kb.bind(idx, np.uint32, "read")
        s = kb.let(f"{ib}[{row} * {P}u + {p}]", "u32")
        oidx = _row_index(kb, out_shape, axis, row, p)
        for j, (key, dt) in jobs[c:c + per]:
            if j == "pos":
                o = kb.bind(key, dt, "read_write")
                kb.emit(f"{o}[{oidx.flat()}] = {W.wrap_narrow(W.value_type(dt) + '(' + s + ')', dt)};")
                continue
            a = avals[j]
            v = ctx.reader(kb, j, f)(_row_index(kb, a.shape, axis, row, s))
            o = kb.bind(key, a.dtype, "read_write")
            kb.emit(f"{o}[{oidx.flat()}] = {W.store_expr(v, a.dtype)};")
        src, grid = kb.elementwise_kernel(R * n_out)
        ctx.dispatch(kb, src, grid)


@sort_p.def_kernel
def _sort_kernel(ctx, *operands, dimension, is_stable=True, num_keys=1):
    idx, P = emit_permutation(ctx, operands, list(range(num_keys)), dimension)
    outs = [(ctx.out_key(j), operands[j].dtype) for j in range(len(operands))]
    _gather_out(ctx, operands, dimension, idx, P, operands[0].shape[dimension], outs)


def _sort_ref(*operands, dimension, is_stable=True, num_keys=1):
    keys = [np.moveaxis(_np_keys(o), dimension, -1) for o in operands[:num_keys]]
    shape = keys[0].shape
    flat = [k.reshape(int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]) for k in keys]
    order = np.stack([np.lexsort([k[r] for k in reversed(flat)]) for r in range(flat[0].shape[0])]) \
        if flat[0].shape[0] else np.zeros((0, shape[-1]), np.int64)
    order = order.reshape(shape)
    return [np.moveaxis(np.take_along_axis(np.moveaxis(o, dimension, -1), order, -1), -1, dimension)
            for o in operands]


sort_p.reference = _sort_ref


def _sort_batch(args, dims, dimension, **params):
    """vmap: every operand gets the batch axis where the first batched one has it."""
    n = _batching.axis_size(args, dims)
    d = next(d for d in dims if d is not None)
    ops = [_batching.move_batch_axis(x, e, d, n) for x, e in zip(args, dims)]
    outs = sort_p.bind(*ops, dimension=dimension + (dimension >= d), **params)
    return outs, [d] * len(outs)


sort_p.batch = _sort_batch

# --------------------------------------------------------------------------- top_k

top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.fuse_inputs = (0,)


@top_k_p.def_abstract_eval
def _top_k_abstract(x, k, axis=-1):
    if x.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got shape ()")
    ax = axis % x.ndim
    if not 0 <= k <= x.shape[ax]:
        raise ValueError(f"k argument to top_k must be nonnegative and no larger than the size of "
                         f"the reduced axis; got k={k} for operand shape {x.shape}")
    shape = list(x.shape)
    shape[ax] = k
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.int32)]


@top_k_p.def_kernel
def _top_k_kernel(ctx, x, k, axis=-1):
    ax = axis % x.ndim
    if k == 0:
        return
    idx, P = emit_permutation(ctx, [x], [0], ax, descending=True, total_order=True)
    _gather_out(ctx, [x], ax, idx, P, k, [(ctx.out_key(0), x.dtype)],
                extra=(ctx.out_key(1), np.dtype(np.int32)))


def _top_k_ref(x, k, axis=-1):
    ax = axis % x.ndim
    keys = ~_np_keys(x, total_order=True)
    order = np.argsort(keys, axis=ax, kind="stable")
    order = np.take(order, np.arange(k), axis=ax)
    return [np.take_along_axis(x, order, ax), order.astype(np.int32)]


top_k_p.reference = _top_k_ref
_batching.defaxis(top_k_p)
