"""dot_general: batched matrix products on the kernels in shaders/ (workgroup-memory tiles on
GPUs, register blocking on CPU adapters), with a fused elementwise epilogue."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import dtypes
from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..core.ir import ShapedArray, raise_to_shaped
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import convert_expr, kind
from ..transforms import ad as _ad
from ..core import ops
from ..backend import wgsl_cmath  # noqa: F401  (registers wj_cmul)
from ..core.ir import Var
from ..backend.lower import Fuser

dot_general_p = Primitive("dot_general")
dot_general_p.fuse_inputs = (0, 1)
dot_general_p.epilogue = True     # same-shaped elementwise consumers fuse into the kernel
dot_general_p.epilogue_layouts = True    # ... and transposed ones, stored where they belong


def _dot_pp(params, eqn):
    """As JAX prints it: dimension numbers as lists, no None-valued parameters, no
    ``out_sharding`` (implied by the result's type)."""
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    shown = {k: v for k, v in params.items()
             if v is not None and k != "out_sharding" and not k.startswith("_")}
    shown["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
    return sorted(shown.items())


dot_general_p.pp_params = _dot_pp


def _dims(dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    return tuple(lc), tuple(rc), tuple(lb), tuple(rb)


@dot_general_p.def_abstract_eval
def _dot_abstract(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                  out_sharding=None):
    lc, rc, lb, rb = _dims(dimension_numbers)
    if lhs.dtype != rhs.dtype and preferred_element_type is None:
        raise TypeError(
            f"dot_general requires operands of the same dtype, got {lhs.dtype} and {rhs.dtype}"
        )
    for d, x, nm in ((lc + lb, lhs, "lhs"), (rc + rb, rhs, "rhs")):
        if any(not 0 <= a < x.ndim for a in d) or len(set(d)) != len(d):
            raise TypeError(f"dot_general {nm} dimension numbers {d} out of range or repeated for "
                            f"shape {x.shape}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(
            "dot_general requires equal numbers of lhs and rhs contracting and batch dimensions"
        )
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(
                f"dot_general requires contracting dimensions to have the same shape, got "
                f"{tuple(lhs.shape[i] for i in lc)} and {tuple(rhs.shape[i] for i in rc)} "
                f"(lhs shape {lhs.shape}, rhs shape {rhs.shape})."
            )
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(
                f"dot_general requires lhs batch dimensions and rhs batch dimensions to have "
                f"the same shape, got {tuple(lhs.shape[i] for i in lb)} and "
                f"{tuple(rhs.shape[i] for i in rb)}."
            )
    batch = [lhs.shape[i] for i in lb]
    lfree = [s for i, s in enumerate(lhs.shape) if i not in lc + lb]
    rfree = [s for i, s in enumerate(rhs.shape) if i not in rc + rb]
    dt = (
        dtypes.check_supported(preferred_element_type)
        if preferred_element_type is not None
        else lhs.dtype
    )
    return ShapedArray(batch + lfree + rfree, dt, lhs.weak_type and rhs.weak_type)


def _acc_dtype(dt):
    k = kind(dt)
    if k == "c":
        return np.dtype(np.complex64)
    return (
        np.dtype(np.float32)
        if k == "f"
        else (np.dtype(np.uint32) if k in "ub" else np.dtype(np.int32))
    )


def _operand_reader(ctx, kb, i, aval, batch_dims, row_dims, contract_dims, fn_args):
    """WGSL body of rdA/rdB: map (b, row, k) to the operand's coordinates (an operand the
    kernel stores itself computed from its producers: ``KernelContext.stores``)."""
    a = ctx.eqn.invars[i]
    fuser = Fuser(kb, ctx.lowering, None,
                  inline=frozenset({a.id}) if i in ctx.stores else frozenset())
    saved, kb.lines = kb.lines, []
    bshape = [aval.shape[d] for d in batch_dims]
    rshape = [aval.shape[d] for d in row_dims]
    kshape = [aval.shape[d] for d in contract_dims]
    b, r, k = fn_args
    dims = [None] * aval.ndim
    for ds, sh, var in ((batch_dims, bshape, b), (row_dims, rshape, r), (contract_dims, kshape, k)):
        if not ds:
            continue
        coords = Index(kb, sh, flat=var).dims()
        for d, c in zip(ds, coords):
            dims[d] = c
    v = ctx.reader(kb, i, fuser)(Index(kb, aval.shape, dims=dims))
    acc = _acc_dtype(aval.dtype)
    body = kb.lines + [f"return {convert_expr(v, aval.dtype, acc)};"]
    kb.lines = saved
    return "  " + "\n  ".join(body)


def _canonical(ctx, i, aval, batch_dims, row_dims, contract_dims, rows_first, pad_rows=0,
               defer=False):
    """The buffer key of operand ``i`` laid out as [B, rows, K] (rows_first) or [B, K, rows]:
    the operand's own buffer when it already is, else a copy made by a fused kernel (which
    also absorbs any fused producer and transpose).  ``defer``: (the key, a function that
    dispatches the copy, or None) -- the copy not yet dispatched."""
    order = tuple(batch_dims) + (tuple(row_dims) + tuple(contract_dims) if rows_first
                                 else tuple(contract_dims) + tuple(row_dims))
    a = ctx.eqn.invars[i]
    held = _held(ctx.lowering, a)
    if held is not None and order == held[1] and not pad_rows:
        return (held[0], None) if defer else held[0]
    # one copy of a value in one layout serves every product that reads it so (a backward
    # pass reads an activation or a masked cotangent in two products) -- while the step that
    # made it is still in the plan (a fused epilogue that did not fit drops the steps it made)
    memo, steps = ctx.lowering.copies, ctx.lowering.plan.steps
    mk = (a.id, order, len(batch_dims), len(row_dims), pad_rows) if isinstance(a, Var) else None
    if mk in memo:
        key, at, step = memo[mk]
        if at < len(steps) and steps[at] is step:
            return (key, None) if defer else key
    rows = int(np.prod([aval.shape[d] for d in row_dims], dtype=np.int64))
    kk = int(np.prod([aval.shape[d] for d in contract_dims], dtype=np.int64))
    bs = int(np.prod([aval.shape[d] for d in batch_dims], dtype=np.int64))
    prow = max(rows, pad_rows)
    shape = [bs, prow, kk] if rows_first else [bs, kk, prow]       # padded rows read as 0
    key = ctx.scratch(ShapedArray((bs * prow * kk,), aval.dtype))
    n = bs * prow * kk

    def copy():
        kb = None
        if np.dtype(aval.dtype) == np.float32 and shape[-1] % 4 == 0 and n >= 4096:
            # vec4 lanes along the copy's last dim where the operand's reads allow (it is
            # contiguous there: a fused producer's bias is a vec4 load); else one element a
            # thread
            kb, src, grid = _copy_kernel(ctx, i, aval, batch_dims, row_dims, contract_dims,
                                         rows_first, shape, rows, key, 4)
            if not (kb.vec_ok and not kb.windowed and ctx.target.compiles(kb.finish(src))):
                kb = None
        if kb is None:
            kb, src, grid = _copy_kernel(ctx, i, aval, batch_dims, row_dims, contract_dims,
                                         rows_first, shape, rows, key, 1)
        ctx.dispatch(kb, src, grid)
        if mk is not None:
            memo[mk] = (key, len(steps) - 1, steps[-1])
    if defer:
        return key, copy
    copy()
    return key


def _copy_kernel(ctx, i, aval, batch_dims, row_dims, contract_dims, rows_first, shape, rows,
                 key, vec):
    """``_canonical``'s copy of operand ``i`` into ``key`` laid out as ``shape``: (kernel
    builder, wgsl, grid), ``vec`` elements of the last dim a thread."""
    kb = ctx.new_kb()
    if vec > 1:
        kb.emit(f"let wj_e = i * {vec}u;")
        cb, c1, c2 = Index(kb, shape, flat="wj_e").dims()
        c2 = kb.lanes_along_last_dim(vec, c2)
    else:
        cb, c1, c2 = Index(kb, shape, flat="i").dims()
    cr, ck = (c1, c2) if rows_first else (c2, c1)
    prow = shape[1] if rows_first else shape[2]
    dims = [None] * aval.ndim
    rowc = cr if prow == rows else f"min({cr}, {rows - 1}u)"
    for ds, var in ((batch_dims, cb), (row_dims, rowc), (contract_dims, ck)):
        if ds:
            for d, c in zip(ds, Index(kb, [aval.shape[d] for d in ds], flat=var).dims()):
                dims[d] = c
    v = ctx.reader(kb, i)(Index(kb, aval.shape, dims=dims))
    if prow != rows:
        v = f"select({W.zero(aval.dtype)}, {v}, {cr} < {rows}u)"
    name = kb.bind(key, aval.dtype, "read_write")
    kb.emit(f"{name}[i] = {v};")
    src, grid = kb.elementwise_kernel(int(np.prod(shape, dtype=np.int64)) // vec)
    return kb, src, grid


# The float32 matmul kernels.  GPUs: shaders/matmul_tiled.wgsl (64x64 workgroup tiles in
# workgroup memory).  CPU adapters (lavapipe): shaders/matmul_vec4.wgsl, register blocking
# straight from storage: each thread owns RM rows x V vec4 columns of C.  On lavapipe every
# storage load is a per-lane loop, so big blocks (fewer loads per multiply-add) win, up to
# where LLVM's compile time explodes (32 x 8 vec4 takes seconds, 32 x 16 a minute).  A
# contraction may be split S ways (split-K: partial products summed by a second kernel), for
# products with few output blocks and a long contraction (a weight gradient), and on a driver
# with a loop limit always in chunks of at most ``k_chunk(target)`` steps.
# The variant is autotuned per adapter and size class (``backend/autotune.py``).
_F32, _F16, _BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(dtypes.bfloat16)
MM_RM, MM_V, MM_WG = 16, 8, 16       # the default block: rows, vec4 columns, threads/workgroup
MM_MIN_THREADS = 16  # shrink blocks / split the contraction below this many threads


def k_chunk(target) -> int | None:
    """Contraction steps one thread may run under the target's loop limit: a quarter of it,
    rounded up (16384 on lavapipe, whose invocations stop after 65535 loop iterations),
    leaving room for the kernel's other loops; None on a driver without a limit."""
    limit = target.loop_limit
    return -(-limit // 4) if limit else None


class MMConfig(NamedTuple):
    """A matmul variant, the contraction split S ways: the vec4 kernel's RM rows x V vec4
    columns per thread and WG threads per workgroup, or (``tiled``) the workgroup-memory
    kernel's BM x BN tile and BK-deep slabs, its contraction split ``kg`` ways more inside the
    workgroup (``kg`` groups of the tile's threads, their partial tiles summed in workgroup
    memory: one dispatch; named ``...gKG``)."""
    rm: int
    v: int
    wg: int
    s: int
    tiled: bool = False
    bm: int = 0
    bn: int = 0
    bk: int = 0
    db: bool = False      # tiled: workgroup memory twice over, one barrier a slab
    kg: int = 1           # tiled: thread groups splitting the contraction in the workgroup

    @property
    def name(self) -> str:
        if self.tiled:
            return (f"t{self.bm}x{self.bn}x{self.bk}s{self.s}" + ("d" if self.db else "")
                    + (f"g{self.kg}" if self.kg > 1 else ""))
        return f"rm{self.rm}v{self.v}wg{self.wg}s{self.s}"


def _tile_config(target, B, M, N, K) -> MMConfig:
    """The tiled kernel's variant for a product: the forced tile (``Target.matmul_tile``) or
    the largest tile that still gives the GPU ``GPU_FILL`` workgroups without padding the
    product by more than a quarter (measured on an H100: 128 x 128 from 2048^2 up, 64 x 64
    at 1024^2; bench/results/gpu-h100-20261127-0836.txt); then the contraction
    split while there are too few workgroups and each part keeps >= 512 steps."""
    def fits(t):         # enough workgroups, and at most a quarter of the tile padding
        rows, cols = -(-M // t[0]), -(-N // t[1])
        return B * rows * cols >= GPU_FILL and rows * t[0] * cols * t[1] <= 1.25 * M * N

    tile, _, kg = target.matmul_tile.partition("g")     # "BMxBNxBK" or "BMxBNxBKgKG"
    forced = TILES.get(tile)
    if tile and forced is None:
        raise ValueError(f"wjax: the matmul tile {tile!r} is not one of the tiled kernel's: "
                         f"{', '.join(TILES)} (WJAX_MATMUL_TILE)")
    kg = int(kg) if kg.isdigit() and int(kg) > 1 else 1
    if forced is not None and not _tile_fits(target, *forced, kg):
        kg = 1
    if forced is not None and not _tile_fits(target, *forced, 1):
        forced = None
    if forced is None:
        forced, kg = next((t for t in TILES.values() if t[2] == 16 and fits(t)),
                          TILES["64x64x16"]), 1
    bm, bn, bk = forced
    tiles = B * -(-M // bm) * -(-N // bn)
    S = 1
    while S < 64 and tiles * S < GPU_FILL and K // (2 * S) >= 512:
        S *= 2
    return MMConfig(0, 0, 0, S, True, bm, bn, bk, False, kg)


def _tile_fits(target, bm, bn, bk, kg=1, db=False) -> bool:
    """Whether the target holds tile bm x bn x bk with ``kg`` thread groups (their slabs, once
    or twice over: ``db``) in one workgroup: its workgroup memory and invocations."""
    threads = kg * _threads(bm, bn)
    return (kg * (1 + db) * (bm + bn) * bk * 4 <= target.workgroup_memory
            and threads <= int(target.get("max-compute-invocations-per-workgroup", 256))
            and threads <= int(target.get("max-compute-workgroup-size-x", 256)))


def _pow2(n: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, 1 << max(0, int(n) - 1).bit_length()))


def _mm_splits(K: int, s: int, chunk: int | None) -> int:
    """The split count actually used for a contraction of K: at least ``s``, at least enough
    for chunks of ``chunk`` steps (``k_chunk``; None: no limit), at most K."""
    need = -(-K // chunk) if chunk else 1
    return max(1, min(K, max(s, need)))


def _fits_one_thread(target, K) -> bool:
    """Whether one thread may walk the whole contraction (the tiled kernel does not split)."""
    chunk = k_chunk(target)
    return chunk is None or K <= chunk


def _mm_default(target, B, M, N4, K) -> MMConfig:
    if target.matmul == "tiled" and _fits_one_thread(target, K):
        return _tile_config(target, B, M, 4 * N4, K)
    RM, V, S = MM_RM, MM_V, 1
    if target.register_block == "small":       # GPU registers: a small block, 64 threads
        RM, V = GPU_BLOCK
        return MMConfig(RM, V, 64, _gpu_split(target, B * -(-M // RM) * -(-N4 // V), K))
    while RM > 2 and B * (-(-M // RM)) * (-(-N4 // V)) < MM_MIN_THREADS:
        RM, V = RM // 2, max(1, V // 2)
    while S < 16 and K // (2 * S) >= 256 and S * B * (-(-M // RM)) * (-(-N4 // V)) < \
            MM_MIN_THREADS:
        S *= 2
    return MMConfig(RM, V, MM_WG, S)


def _mm_candidates(target, Mp, N4p, Kp, tiled=True) -> list:
    """The variants tried on a proxy problem (Mp x 4 N4p x Kp, one batch); ``tiled``: the
    workgroup-memory kernel among them (float32 only)."""
    out = []
    if tiled and _fits_one_thread(target, Kp):
        out.append(_tile_config(target, 1, Mp, 4 * N4p, Kp))
    if target.register_block == "large":      # CPU adapters: fewer loads per multiply-add
        blocks = [(8, 4), (16, 4), (16, 8)]
        if Mp >= 256 and N4p >= 32:
            blocks.append((32, 8))
        wg = MM_WG
    else:
        blocks, wg = [(4, 1), (4, 2), (8, 2), (4, 4)], 64
    for rm, v in blocks:
        if rm > 2 * Mp or v > 2 * N4p:
            continue
        tiles = (-(-Mp // rm)) * (-(-N4p // v))
        for s in (1, 2, 4, 8, 16):
            if target.register_block == "small":   # GPU: splits while threads are few
                if s == 1 or (tiles * s <= GPU_SPLIT_THREADS and Kp // s >= 32):
                    out.append(MMConfig(rm, v, wg, s))
            elif s == 1 or (tiles * s <= 256 and Kp // s >= 64):
                out.append(MMConfig(rm, v, wg, s))
    return out


GPU_BLOCK = (4, 2)          # the register-blocked kernel's default block on a GPU
GPU_SPLIT_THREADS = 8192    # GPU: split a contraction while it gives fewer threads than this


def _gpu_split(target, threads, K) -> int:
    """The default split of a register-blocked product on a GPU: parts of >= 64 steps while
    there are fewer than ``GPU_SPLIT_THREADS`` threads."""
    S = 1
    while S < 16 and threads * S * 2 <= GPU_SPLIT_THREADS and K // (2 * S) >= 64:
        S *= 2
    return S


def _fills_gpu(cfg, B, M, N) -> bool:
    """Whether tile variant ``cfg`` offers a GPU ``GPU_FILL`` workgroups for the product."""
    return B * -(-M // cfg.bm) * -(-N // cfg.bn) * cfg.s >= GPU_FILL


def _mm_config(target, B, M, N, K, tiled=True) -> MMConfig:
    """The variant for a float32 product: the tuned one for its size class, or the default.
    GPU targets time the tiled kernel's variants at the product's own size
    (``_gpu_mm_config``): proxies of a size class would be too small to show a GPU's
    preference for big tiles."""
    N4 = -(-N // 4)
    default = _mm_default(target, B, M, N4, K)
    if default.tiled and target.register_block == "small":
        return _gpu_mm_config(target, B, M, N, K, default)
    Mp, Np, Kp = _pow2(B * M, 4, 512), _pow2(N, 4, 512), _pow2(K, 4, 1024)
    cands = _mm_candidates(target, Mp, Np // 4, Kp, tiled)
    if len(cands) < 2:
        return default
    c = _tuned(target, f"matmul|{Mp}x{Np}x{Kp}", cands, Mp, Np, Kp, default.name)
    if c is None or (c.tiled and not _fits_one_thread(target, K)):
        return default
    if c.tiled:          # the tile as tuned, the split for the product's own size
        return _tile_config(target.replace(matmul_tile=f"{c.bm}x{c.bn}x{c.bk}"), B, M, N, K)
    return c


GPU_TUNE_MAX = (4096, 4096, 16384)   # rows (batch x M), N, K: larger products take the rule


def _gpu_mm_config(target, B, M, N, K, default) -> MMConfig:
    """A GPU's variant for a product up to ``GPU_TUNE_MAX``: timed on the adapter at its own
    size (rounded up to 16s) among the tiles with contractions split 1, 2 or 4 ways and the
    rule's pick (``_tile_config``); a product too small to fill the GPU (a scan step's)
    among the tiles, the 64 x 64 tiles split 2 or 4 ways inside the workgroup
    (``MMConfig.kg``) and register blocks, unsplit (one dispatch each).  Larger
    products fill the GPU with the rule's big tiles (measured on an H100 from 2048^2 up)."""
    R = B * M
    if target.matmul_tile or R > GPU_TUNE_MAX[0] or N > GPU_TUNE_MAX[1] or K > GPU_TUNE_MAX[2]:
        return default
    Mp, Np, Kp = (-(-x // 16) * 16 for x in (R, N, K))
    rule = _tile_config(target, 1, Mp, Np, Kp)
    small = not _fills_gpu(rule, 1, Mp, Np)
    # a small product's variants are one dispatch each: in a loop every dispatch costs the
    # host and the GPU several microseconds (an H200's RNN step: split variants halved the
    # kernels' time and lost it twice over in dispatches)
    # a small product also gets deeper slabs (64x64x32/64): its time is the latency of the
    # slabs walked one after another, not the arithmetic
    cands = [rule]
    for bm, bn, bk in TILES.values():
        for s in ((1,) if small else (1, 2, 4)):
            for db in (False, True):     # double buffering where the memory holds it twice
                c = MMConfig(0, 0, 0, s, True, bm, bn, bk, db)
                if ((bk == 16 or (small and bm == 64 and not db)) and c not in cands
                        and (s == 1 or Kp // s >= 128)
                        and _tile_fits(target, bm, bn, bk, 1, db)):
                    cands.append(c)
    if small:
        # ... and its contraction split inside the workgroup: KG groups of threads walk
        # 1/KG of it each for the same tile (a KG times shorter chain of slabs, one dispatch),
        # where each group still walks two slabs or more
        cands += [MMConfig(0, 0, 0, 1, True, 64, 64, bk, False, kg)
                  for bk in (16, 32) for kg in (2, 4)
                  if Kp >= 2 * kg * bk and _tile_fits(target, 64, 64, bk, kg)]
        # ... and tiles below 64 x 64 (more workgroups, fewer threads each), split so that a
        # workgroup has 128-256 threads and each group walks one slab or more
        cands += [MMConfig(0, 0, 0, 1, True, bm, bn, bk, False, kg)
                  for bm, bn, bk in TILES.values() if min(bm, bn) < 64
                  for kg in (1, 2, 4, 8) if 128 <= kg * _threads(bm, bn) <= 256
                  and Kp >= kg * bk and _tile_fits(target, bm, bn, bk, kg)]
        cands += [c for c in _mm_candidates(target, Mp, Np // 4, Kp, tiled=False) if c.s == 1]
    c = _tuned(target, f"matmul-gpu|{Mp}x{Np}x{Kp}", cands, Mp, Np, Kp, rule.name)
    return default if c is None or c == rule else c


def _tuned(target, key, cands, Mp, Np, Kp, default_name):
    """The candidate the target's tuner picks for proxy Mp x Np x Kp (None: unknown name)."""
    by_name = {c.name: c for c in cands}
    nb = [4 * Mp * Kp, 4 * Kp * Np, 4 * Mp * Np, 4 * max(c.s for c in cands) * Mp * Np]
    name = target.pick_variant(key, list(by_name),
                               lambda name: _mm_proxy(target, by_name[name], Mp, Np, Kp), nb,
                               default_name, flops=2 * Mp * Np * Kp)
    return by_name.get(name)


def _mm_proxy(target, cfg, M, N, K) -> list:
    """The dispatches of variant ``cfg`` on buffers 0: A (M x K), 1: B (K x N), 2: C (M x N),
    3: split-K partials."""
    kb = W.KernelBuilder(int(target["max-compute-workgroups-per-dimension"]))
    S = _mm_splits(K, cfg.s, k_chunk(target))
    out = "C" if S == 1 else "P"
    if cfg.tiled:
        src, grid = _tiled_src(kb, "A", "B", out, 1, M, N, K, cfg, cfg.s, [])
    else:
        src, grid = _vec4_src(kb, "A", "B", out, 1, M, N, K, cfg, S, [])
    order = {"A": 0, "B": 1, "C": 2, "P": 3}
    d = [(src, [order[k] for k, _, _ in kb.bindings], grid)]
    if S > 1:
        kb2 = W.KernelBuilder(int(target["max-compute-workgroups-per-dimension"]))
        src2, grid2 = _split_sum_src(kb2, "P", "C", S, M * N, np.dtype(np.float32), [])
        d.append((src2, [order[k] for k, _, _ in kb2.bindings], grid2))
    return d


# The tiled kernel's tiles (shaders/matmul_tiled.wgsl; threads: ``_tile_threads``): BM x BN outputs,
# BK-deep slabs (workgroup memory (BM + BN) BK 4 bytes: 16 KiB, WebGPU's default, for the
# 16-deep tiles the rule picks; the deeper ones only where the target has the memory: forced,
# or among a small product's timed variants).
TILES = {"128x128x16": (128, 128, 16), "128x128x8": (128, 128, 8),
         "128x64x16": (128, 64, 16), "64x64x16": (64, 64, 16), "128x128x32": (128, 128, 32),
         "64x64x32": (64, 64, 32), "64x64x64": (64, 64, 64),
         "32x64x32": (32, 64, 32), "32x32x32": (32, 32, 32), "16x64x32": (16, 64, 32),
         "16x32x32": (16, 32, 32)}
# The tiles below 64 x 64 have fewer threads (a 4 x 4 block each: 32 to 128 threads) and are
# only a small product's timed variants, usually with their contraction split inside the
# workgroup (``kg``): a scan step's 64 x 256 x 256 product offers 4 workgroups of 64 x 64 (4
# of a GPU's ~100 multiprocessors, each walking the whole contraction), 32 of 16 x 32.
GPU_FILL = 256        # workgroups a product should offer a GPU before it takes smaller tiles


def _tile_threads(bm, bn) -> tuple[int, int]:
    """The thread grid (TY, TX) of tile bm x bn: 16 x 16 from 64 x 64 up, each thread a
    (bm / 16) x (bn / 16) block; a 4 x 4 block each in smaller tiles."""
    return min(16, bm // 4), min(16, bn // 4)


def _threads(bm, bn) -> int:
    """Threads of tile bm x bn (a thread group of it: ``kg`` of them split a workgroup)."""
    ty, tx = _tile_threads(bm, bn)
    return ty * tx


def _lanes(elem, row, rows, row_ok, col, cols, col_end):
    """A vec4 of the 4 elements at (``row``, ``col``...) of a [rows, cols] layout, one scalar
    read each -- ``elem(row, col)`` of the clamped indices, so nothing is read out of bounds
    -- and zero outside (``row_ok``; columns from ``col_end``)."""
    r = f"min({row}, {rows - 1}u)"
    comps = ", ".join(f"select(0.0, {elem(r, f'min({col} + {c}u, {cols - 1}u)')}, "
                      f"{row_ok} && {col} + {c}u < {col_end})" for c in range(4))
    return f"vec4<f32>({comps})"


def _guarded_vec4(name, vec, base, row, rows, row_ok, col, cols, col_end, f16=False,
                  stride=None):
    """4 consecutive elements of a row-major [rows, cols] operand at (``row``, ``col``...),
    its rows ``stride`` elements apart (default ``cols``), zero outside (``row_ok``; columns
    from ``col_end``): one vec4 load where ``vec``, else four scalar ones, as f32 (``f16``:
    the operand is stored as float16).  Indices are clamped, so nothing is read out of
    bounds."""
    stride = cols if stride is None else stride
    if vec:
        at = f"{base} + min({row}, {rows - 1}u) * {stride}u"
        v = f"{name}[({at} + min({col}, {cols - 4}u)) / 4u]"
        return (f"select(vec4<f32>(0.0), {f'vec4<f32>({v})' if f16 else v}, "
                f"{row_ok} && {col} < {col_end})")
    cv = "f32" if f16 else ""
    return _lanes(lambda r, cc: f"{cv}({name}[{base} + {r} * {stride}u + {cc}])",
                  row, rows, row_ok, col, cols, col_end)


def _inline_vec4(fn, kfirst, row, rows, row_ok, col, cols, col_end):
    """``_guarded_vec4`` for an operand read through its reader function ``fn(b, free, k)``
    (``_inline_operand``) instead of a buffer, in the layout the loads walk ([K, X] where
    ``kfirst``, else [X, K])."""
    return _lanes(lambda r, cc: f"{fn}(b, {cc}, {r})" if kfirst else f"{fn}(b, {r}, {cc})",
                  row, rows, row_ok, col, cols, col_end)


def _tile_loads(tag, name, vec, kfirst, BX, BK, X, K, base, t0, f16, kend, wg, inline=False,
                stride=None, side=None):
    """The global loads of one BX x BK slab of an operand (``tag`` "a"/"b") into registers and
    their stores into workgroup memory (``tag.upper()``s: vec4 of 4 free indices per k).
    ``kfirst``: stored [K, X] (the free axis contiguous), else [X, K], its rows ``stride``
    elements apart (default: packed); ``vec``: read as vec4 along the contiguous axis (its
    length, the stride and the base multiples of 4); zero from ``kend`` (the end of the
    thread's contraction range); ``wg`` threads share the loads; ``inline``: ``name`` is the
    operand's reader function, not a buffer; ``side``: (buffer, ``Layout``, the other
    operand's tile origin) -- each value loaded is also stored there at its place in the
    layout, by the workgroups whose other tile origin is 0.  Returns (decl, load(k),
    stage)."""
    U = BX * BK // 4 // wg
    assert U * wg * 4 == BX * BK, (BX, BK, wg)
    smem = f"{tag.upper()}s"
    decl, load, stage = [], [], []
    for u in range(U):
        e = f"(lid + {u * wg}u)"
        r = f"l{tag}{u}"
        decl.append(f"  var {r} = vec4<f32>(0.0);")
        if kfirst:          # unit (kk, x4): 4 free indices at one k
            gx = f"({t0} + ({e} % {BX // 4}u) * 4u)"
            gk = f"(k + ({e} / {BX // 4}u))"
            v = (_inline_vec4(name, True, gk, K, f"{gk} < {kend}", gx, X, f"{X}u") if inline
                 else _guarded_vec4(name, vec, base, gk, K, f"{gk} < {kend}", gx, X, f"{X}u",
                                    f16, stride))
            stage.append(f"    {smem}[{e}] = {r};")
            whole = f"{gk} < {kend}"
            lanes = [(f"{gx} + {c}u < {X}u", f"{gx} + {c}u", gk) for c in range(4)]
        else:               # unit (x, kq): 4 k at one free index
            x, kq = f"({e} / {BK // 4}u)", f"({e} % {BK // 4}u)"
            gx, gk = f"({t0} + {e} / {BK // 4}u)", f"(k + {kq} * 4u)"
            v = (_inline_vec4(name, False, gx, X, f"{gx} < {X}u", gk, K, kend) if inline
                 else _guarded_vec4(name, vec, base, gx, X, f"{gx} < {X}u", gk, K, kend, f16,
                                    stride))
            stage += [f"    {smem}[({kq} * 4u + {c}u) * {BX // 4}u + {x} / 4u][{x} % 4u] = "
                      f"{r}[{c}];" for c in range(4)]
            whole = f"{gx} < {X}u"
            lanes = [(f"{gk} + {c}u < {kend}", gx, f"{gk} + {c}u") for c in range(4)]
        load.append(f"    {r} = {v};")
        if side:            # each lane (in range) also stored at its (free, k) place
            sname, lay, o0 = side
            load += [f"    if ({o0} == 0u && {whole}) {{"] + [
                f"      if ({ok}) {{ {sname}[{lay.at(x, k)}] = {r}[{c}]; }}"
                for c, (ok, x, k) in enumerate(lanes)] + ["    }"]
    return decl, load, stage


def _tiled_src(kb, ka, kbk, kc, B, M, N, K, cfg, S, epi, a_lay=None, b_lay=None,
               in_dt=_F32, out_dt=_F32, sides=(None, None)):
    """shaders/matmul_tiled.wgsl for tile ``cfg`` (``MMConfig`` with ``tiled``), ``S``
    contraction splits (``kc`` then holds S partial products, float32), epilogue lines
    ``epi`` (S == 1 only).  A is found in its buffer as ``a_lay`` says (a ``Layout``; default
    packed [B, M, K]), B as ``b_lay`` (default packed [B, K, N]), of ``in_dt`` (float32,
    float16 or bfloat16: products in float32), the result of ``out_dt``.  ``cfg.kg`` > 1:
    that many groups of the tile's threads split each workgroup's contraction, group 0 sums
    their tiles and stores (``_group_sum``).  ``sides``: for A and B, None or (buffer name,
    ``Layout``) where the operand, read through its reader, is also stored there -- by the
    workgroups of the first column (A) or row (B) of tiles, each element once."""
    BM, BN, BK, KG = cfg.bm, cfg.bn, cfg.bk, cfg.kg
    TY, TX = _tile_threads(BM, BN)
    TM, TN, WG = BM // TY, BN // TX, TY * TX
    a_lay = a_lay or Layout.packed(False, B, M, K)
    b_lay = b_lay or Layout.packed(True, B, N, K)
    a_kfirst, b_kfirst = a_lay.kfirst, b_lay.kfirst
    a_in, b_in = isinstance(ka, Inline), isinstance(kbk, Inline)
    a_vec = not a_in and (M if a_kfirst else K) % 4 == 0 and a_lay.aligned()
    b_vec = not b_in and (N if b_kfirst else K) % 4 == 0 and b_lay.aligned()
    f16 = np.dtype(in_dt) == _F16
    in_dt = _F16 if f16 else _F32          # bfloat16 is held in f32 lanes
    if S > 1:
        out_dt = _F32
    kb.vec = 4 if a_vec else 1
    a_name = ka.fn if a_in else kb.bind(ka, in_dt, "read")
    kb.vec = 4 if b_vec else 1
    b_name = kbk.fn if b_in else kb.bind(kbk, in_dt, "read")
    c_vec = N % 4 == 0 and not epi
    kb.vec = 4 if c_vec else 1
    c_name = kb.bind(kc, out_dt, "read_write") if kc is not None else None
    kb.vec = 1
    def cv4(e):
        return _round_to4(e, out_dt)

    def cv(e):
        return e if np.dtype(out_dt) == _F32 else _round_to(e, out_dt)
    KC = -(-(-(-K // S)) // BK) * BK
    KCG = -(-(-(-KC // KG)) // BK) * BK          # a thread group's part of it (KG > 1)
    kend = "kge" if KG > 1 else "ke"
    tiles = S * B * (-(-M // BM)) * (-(-N // BN))
    grid = W.grid_for(tiles, kb.max_groups)
    da, la, sa = _tile_loads("a", a_name, a_vec, a_kfirst, BM, BK, M, K, "abase", "tm", f16,
                             kend, WG, a_in, a_lay.stride, sides[0] and (*sides[0], "tn"))
    db, lb, sb = _tile_loads("b", b_name, b_vec, b_kfirst, BN, BK, N, K, "bbase", "tn", f16,
                             kend, WG, b_in, b_lay.stride, sides[1] and (*sides[1], "tm"))
    decl = da + db
    decl += [f"  var c{i}_{q}_{j} = vec4<f32>(0.0);"
             for i in range(TM // 4) for q in range(4) for j in range(TN // 4)]
    fma = [f"      let a{i} = As[kk * {BM // 4}u + {i * TY}u + ty];" for i in range(TM // 4)]
    fma += [f"      let b{j} = Bs[kk * {BN // 4}u + {j * TX}u + tx];" for j in range(TN // 4)]
    fma += [f"      c{i}_{q}_{j} = fma(vec4<f32>(a{i}[{q}]), b{j}, c{i}_{q}_{j});"
            for i in range(TM // 4) for q in range(4) for j in range(TN // 4)]
    store = []
    rowvar = "bb" if S > 1 else "b"
    for i in range(TM // 4):
        for q in range(4):
            store.append(f"  let m{i}_{q} = tm + ({i * TY}u + ty) * 4u + {q}u;")
    for j in range(TN // 4):
        store.append(f"  let n{j} = tn + ({j * TX}u + tx) * 4u;")
    if c_vec:
        for i in range(TM // 4):
            for q in range(4):
                for j in range(TN // 4):
                    c = cv4(f"c{i}_{q}_{j}")
                    store.append(f"  if (m{i}_{q} < {M}u && n{j} < {N}u) {{ {c_name}[(({rowvar} * "
                                 f"{M}u + m{i}_{q}) * {N}u + n{j}) / 4u] = {c}; }}")
    else:   # element by element, unrolled: a loop over an array of the accumulators would
        # index registers dynamically (local memory on a GPU)
        body = "\n".join(f"      {line}" for line in epi)
        for i in range(TM // 4):
            for q in range(4):
                for j in range(TN // 4):
                    for e in range(4):
                        val = cv(f"c{i}_{q}_{j}[{e}]")
                        own = f"      {c_name}[o] = val;\n" if c_name is not None else ""
                        store.append(
                            f"  if (m{i}_{q} < {M}u && n{j} + {e}u < {N}u) {{\n"
                            f"      let o = ({rowvar} * {M}u + m{i}_{q}) * {N}u + n{j} + {e}u;\n"
                            f"      let val = {val};\n{own}{body}\n  }}")
    stage = "\n".join(sa + sb)
    if cfg.db:      # shaders/matmul_tiled_db.wgsl: halves at offsets na/nb (staging), oa/ob
        stage = stage.replace("As[", "As[na + ").replace("Bs[", "Bs[nb + ")
        fma = [f.replace("As[", "As[oa + ").replace("Bs[", "Bs[ob + ") for f in fma]
    halves = 2 if cfg.db else 1
    AS, BS = halves * BM * BK // 4, halves * BN * BK // 4      # one group's slabs, in vec4
    group = ""
    if KG > 1:      # each group's slabs at its own offset; its range [kg0, kge)
        stage = stage.replace("As[", "As[ga + ").replace("Bs[", "Bs[gb + ")
        fma = [f.replace("As[", "As[ga + ").replace("Bs[", "Bs[gb + ") for f in fma]
        group = "".join(f"  {line};\n" for line in (
            f"let grp = lix / {WG}u", f"let lid = lix % {WG}u",
            f"let goff = grp * {KCG}u", "let kg0 = ks + goff", f"let kge = min(kg0 + {KCG}u, ke)",
            f"let kl = ks + {KCG}u", f"let ga = grp * {AS}u", f"let gb = grp * {BS}u"))
        accs = [f"c{i}_{q}_{j}" for i in range(TM // 4) for q in range(4) for j in range(TN // 4)]
        store = _group_sum(accs, KG, KG * AS, KG * BS, WG) + store
    # the slab's BK steps written out, kk a constant in each (a driver that left the loop
    # rolled computed every step's addresses: 4.69 -> 4.09 ms for 4096^2 on an H200)
    steps = "\n".join(f"    {{ let kk = {k}u;\n" + "\n".join(fma) + "\n    }"
                      for k in range(BK))
    loop = W.render("matmul_tiled_db.wgsl" if cfg.db else "matmul_tiled_loop.wgsl",
                    AS=BM * BK // 4, BS=BN * BK // 4, BK=BK, STAGE=stage, FMA=steps,
                    LOAD_NEXT="\n".join(line.replace("(k + ", "(k1 + ") for line in la + lb),
                    KEND="kl" if KG > 1 else "ke", GOFF=" + goff" if KG > 1 else "")
    loop = "\n".join(line for line in loop.splitlines() if not line.startswith("//"))
    k0 = "(kg0 + " if KG > 1 else "(ks + "
    readers = "".join(x.src for x in (ka, kbk) if isinstance(x, Inline))
    src = W.render("matmul_tiled.wgsl", HEADER=kb.header(), READERS=readers,
                   AS_ALL=KG * AS, BS_ALL=KG * BS,
                   WG=KG * WG, LID="lix" if KG > 1 else "lid", GROUP=group, M=M, N=N,
                   K=K, B=B, BSPLIT=B * S, KC=KC, BM=BM, BN=BN, BK=BK, TX=TX, NX=grid[0],
                   ABASE=a_lay.base("b"), BBASE=b_lay.base("b"),
                   DECL="\n".join(decl),
                   LOAD="\n".join(line.replace("(k + ", k0)[2:] for line in la + lb),
                   KLOOP=loop, STORE="\n".join(store))
    return src, grid


def _group_sum(accs, KG, AS_ALL, BS_ALL, WG) -> list:
    """The lines that sum KG thread groups' accumulators ``accs`` (vec4 each) into group 0's,
    through the slabs' workgroup memory (As: ``AS_ALL`` vec4, Bs: ``BS_ALL``; free after the
    contraction loop's last barrier): in rounds of as many accumulators as it holds for the
    other KG - 1 groups, each round groups 1.. write, a barrier, group 0 adds; a barrier
    between rounds.  The barriers are in uniform control flow; then every group but 0 returns
    (the stores and the epilogue follow)."""
    per = (KG - 1) * WG
    pa, pb = AS_ALL // per, BS_ALL // per          # accumulators a round, per thread
    assert pa + pb > 0
    out, i = [], 0
    while i < len(accs):
        ra, rb = accs[i:i + pa], accs[i + pa:i + pa + pb]
        i += pa + pb
        if out:
            out.append("  workgroupBarrier();")
        out.append("  if (grp > 0u) {")
        for arr, p, part in (("As", pa, ra), ("Bs", pb, rb)):
            out += [f"    {arr}[((grp - 1u) * {p}u + {s}u) * {WG}u + lid] = {c};"
                    for s, c in enumerate(part)]
        out += ["  }", "  workgroupBarrier();", "  if (grp == 0u) {"]
        for g in range(1, KG):
            for arr, p, part in (("As", pa, ra), ("Bs", pb, rb)):
                out += [f"    {c} = {c} + {arr}[{((g - 1) * p + s) * WG}u + lid];"
                        for s, c in enumerate(part)]
        out.append("  }")
    out.append("  if (grp != 0u) { return; }")
    return out


def _vec4_src(kb, ka, kbk, kc, B, M, N, K, cfg, S, epi, in_dt=_F32, out_dt=_F32, a_lay=None,
              b_lay=None):
    """shaders/matmul_vec4.wgsl for variant ``cfg`` (``S`` contraction splits: ``kc`` then
    holds S partial products, float32); ``epi``: epilogue lines (S == 1 only).  ``in_dt``:
    the operands' storage (float16 or float32; products accumulate in float32), ``out_dt``
    the result's.  A is found in its buffer as ``a_lay`` says (a ``Layout``, read one
    element at a time; default packed [B, M, K]), B as ``b_lay`` (k-first, read as vec4
    rows: ``_vec4_reads``; default packed [B, K, 4 N4], its columns padded to 4)."""
    N4 = -(-N // 4)
    a_lay = a_lay or Layout.packed(False, B, M, K)
    b_lay = b_lay or Layout.packed(True, B, 4 * N4, K)
    a_row, a_k = (1, a_lay.stride) if a_lay.kfirst else (a_lay.stride, 1)
    if S > 1:
        out_dt = _F32
    a_name = kb.bind(ka, in_dt, "read")
    kb.vec = 4
    b_name = kb.bind(kbk, in_dt, "read")
    if N % 4 == 0 and kc is not None:
        c_name = kb.bind(kc, out_dt, "read_write")
    kb.vec = 1
    if N % 4 and kc is not None:
        c_name = kb.bind(kc, out_dt, "read_write")
    def cv(e):
        return _round_to4(e, out_dt)

    def cs_(e):
        return _round_to(e, out_dt)
    RM, V, WG = cfg.rm, cfg.v, cfg.wg
    KC = -(-K // S)
    threads = S * B * (-(-M // RM)) * (-(-N4 // V))
    grid = W.grid_for(-(-threads // WG), kb.max_groups)
    decl = "\n".join(f"  var c{i}_{j} = vec4<f32>(0.0);" for i in range(RM) for j in range(V))
    decl += "\n" + "\n".join(
        f"  let ar{i} = abase + min(m0 + {i}u, {M - 1}u) * {a_row}u;" for i in range(RM)
    )
    decl += "\n" + "\n".join(f"  let bc{j} = min(n0 + {j}u, {N4 - 1}u);" for j in range(V))
    load_b = "\n".join(f"    let bv{j} = vec4<f32>({b_name}[bbase + k * {b_lay.stride // 4}u"
                       f" + bc{j}]);" for j in range(V))
    ak = "k" if a_k == 1 else f"k * {a_k}u"
    fma = "\n".join(f"    let av{i} = vec4<f32>(f32({a_name}[ar{i} + {ak}]));\n" + "\n".join(
        f"    c{i}_{j} = fma(av{i}, bv{j}, c{i}_{j});" for j in range(V)) for i in range(RM))
    # with splits the partial products go to [S, B, M, N]: bb = split * B + batch
    row = "(bb * {M}u + m0 + {i}u)" if S > 1 else "(b * {M}u + m0 + {i}u)"
    if kc is None:      # only the epilogue's values are stored (``ctx.output_dead``)
        store = ""
    elif N % 4 == 0:
        store = "\n".join(
            f"  if (m0 + {i}u < {M}u && n0 + {j}u < {N4}u) {{ {c_name}["
            + row.format(M=M, i=i) + f" * {N4}u + n0 + {j}u] = {cv(f'c{i}_{j}')}; }}"
            for i in range(RM)
            for j in range(V)
        )
    else:   # scalar stores of the real columns
        store = "\n".join(
            f"  if (m0 + {i}u < {M}u && (n0 + {j}u) * 4u + {q}u < {N}u) {{ {c_name}["
            + row.format(M=M, i=i)
            + f" * {N}u + (n0 + {j}u) * 4u + {q}u] = {cs_(f'c{i}_{j}[{q}]')}; }}"
            for i in range(RM)
            for j in range(V)
            for q in range(4)
        )
    if epi and RM * V * 4 > 64:   # a CPU's big block: a loop (compile time)
        cs = ", ".join(f"c{i}_{j}" for i in range(RM) for j in range(V))
        body = "\n      ".join(epi)
        store += (f"\n  var cs = array<vec4<f32>, {RM * V}>({cs});\n"
                  f"  for (var ii = 0u; ii < {RM * V * 4}u; ii = ii + 1u) {{\n"
                  f"    let m = m0 + ii / {V * 4}u;\n    let n4 = n0 + (ii / 4u) % {V}u;\n"
                  f"    if (m < {M}u && n4 * 4u + ii % 4u < {N}u) {{\n"
                  f"      let o = (b * {M}u + m) * {N}u + n4 * 4u + ii % 4u;\n"
                  f"      let val = {cs_('cs[ii / 4u][ii % 4u]')};\n      {body}\n    }}\n  }}")
    elif epi:   # a GPU's small block, unrolled: a loop would index registers dynamically
        body = "\n      ".join(epi)
        store += "".join(
            f"\n  if (m0 + {i}u < {M}u && (n0 + {j}u) * 4u + {q}u < {N}u) {{\n"
            f"      let o = (b * {M}u + m0 + {i}u) * {N}u + (n0 + {j}u) * 4u + {q}u;\n"
            f"      let val = {cs_(f'c{i}_{j}[{q}]')};\n      {body}\n  }}"
            for i in range(RM) for j in range(V) for q in range(4))
    b4 = Layout(True, b_lay.stride // 4, b_lay.bshape, tuple(t // 4 for t in b_lay.bstrides))
    src = W.render("matmul_vec4.wgsl", HEADER=kb.header(), RM=RM, V=V, WG=WG, M=M, N4=N4, K=K,
                   B=B, BS=B * S, KC=KC, NX=grid[0], DECL=decl, LOAD_B=load_b, FMA=fma,
                   STORE=store, ABASE=a_lay.base("b"), BBASE=b4.base("b"))
    return src, grid


def _round_to(e, dt):
    """An f32 accumulator as a value of ``dt`` (bfloat16: rounded, in its f32 lane; float16:
    rounded to nearest even by the bits, ``wj_f16r``, as a driver may convert otherwise)."""
    if np.dtype(dt) == _BF16:
        return W.wrap_narrow(e, dt)
    if np.dtype(dt) == _F16:
        return f"wj_f16r({e})"
    return f"{W.storage_type(dt)}({e})"


def _round_to4(e, dt):
    """``_round_to`` of a vec4<f32>."""
    if np.dtype(dt) == _BF16:
        return f"wj_bf16r4({e})"
    if np.dtype(dt) == _F16:
        return "vec4<f16>(" + ", ".join(f"wj_f16r(({e}).{c})" for c in "xyzw") + ")"
    return e


def _split_sum_src(kb, kp, ko, S, total, out_dtype, epi):
    """The sum of S partial products (each ``total`` elements), then the epilogue."""
    p = kb.bind(kp, np.float32, "read")
    kb.emit(f"var acc0 = 0.0;\n  for (var s = 0u; s < {S}u; s = s + 1u) {{ acc0 = acc0 + {p}[s "
            f"* {total}u + i]; }}\n  let acc = {_round_to('acc0', out_dtype)};")
    if ko is not None:
        kb.emit(f"{kb.bind(ko, out_dtype, 'read_write')}[i] = acc;")
    for line in epi:
        kb.emit(line)
    return kb.elementwise_kernel(total)


def _held(lowering, a):
    """(buffer key, the order of ``a``'s axes in it) where ``a`` (a product's operand) is a
    value with a buffer, or such a value read through transposes that have none (``x.T @
    y``: x's buffer, the operand's axes in the order (1, 0)) or through a reshape of a value
    held in its own order (flax's ``(x @ w).reshape(b, s, h, d)``: the product's buffer);
    None otherwise."""
    perm = tuple(range(a.aval.ndim))  # perm[j]: the buffer's axis of operand axis j
    while isinstance(a, Var):
        if a.id in lowering.materialized:
            return lowering.key_of(a), tuple(sorted(range(len(perm)), key=perm.__getitem__))
        e = lowering.producer.get(a.id)
        if e is None or a.id in lowering.split:
            return None
        if e.prim.shares_storage:
            # a contiguous view holds its elements in its own order where its operand does
            inner = _held(lowering, e.invars[0])
            if inner is None or inner[1] != tuple(range(e.invars[0].aval.ndim)):
                return None
            return inner[0], tuple(sorted(range(len(perm)), key=perm.__getitem__))
        if e.prim.name != "transpose":
            return None
        p = e.params["permutation"]
        perm = tuple(p[q] for q in perm)
        a = e.invars[0]
    return None


class Layout(NamedTuple):
    """Where the tiled kernel finds a product's operand in a buffer: element (b, x, k) -- b
    the batch, x the free and k the contracted index, each flattened -- at ``base(b) + x *
    stride + k``, or where ``kfirst`` at ``base(b) + k * stride + x``; ``base(b)`` the sum of
    each batch axis's coordinate times its stride (``bshape``, ``bstrides``).  A packed
    [B, X, K] or [B, K, X] copy is one such layout; so are a (b, s, h, d) tensor's heads in
    place (flax's and haiku's attention: s rows ``h * d`` apart, batch axes b and h)."""
    kfirst: bool
    stride: int
    bshape: tuple = ()
    bstrides: tuple = ()

    @classmethod
    def packed(cls, kfirst, B, X, K) -> "Layout":
        return cls(kfirst, X if kfirst else K, (B,), (X * K,))

    def at(self, x: str, k: str, var: str = "b") -> str:
        """WGSL of the offset of element (``var``, ``x``, ``k``)."""
        row, col = (k, x) if self.kfirst else (x, k)
        return f"{self.base(var)} + ({row}) * {self.stride}u + {col}"

    def aligned(self) -> bool:
        """Whether rows and batches start at multiples of 4 elements (vec4 loads)."""
        return self.stride % 4 == 0 and all(t % 4 == 0 for t in self.bstrides)

    def base(self, var: str) -> str:
        """WGSL of ``base(var)``, batch axes that nest as one merged into one term."""
        axes = [(n, t) for n, t in zip(self.bshape, self.bstrides) if n > 1]
        merged = []
        for n, t in reversed(axes):        # innermost first
            if merged and t == merged[-1][1] * merged[-1][0]:
                merged[-1] = (merged[-1][0] * n, merged[-1][1])
            else:
                merged.append((n, t))
        terms, inner = [], 1
        for k, (n, t) in enumerate(merged):
            c = var if inner == 1 else f"({var} / {inner}u)"
            if k < len(merged) - 1:
                c = f"({c} % {n}u)"
            if t:
                terms.append(c if t == 1 else f"{c} * {t}u")
            inner *= n
        return " + ".join(terms) or "0u"


def _group_stride(shape, strides, axes):
    """The stride of the flattened index over ``axes`` (in that order) where it has one
    (each axis's stride the next one's times its size; axes of size 1 aside); 0 where no
    axis is longer than 1 (the index is always 0); None where it has none."""
    live = [a for a in axes if shape[a] != 1]
    if not live:
        return 0
    if any(strides[x] != strides[y] * shape[y] for x, y in zip(live, live[1:])):
        return None
    return strides[live[-1]]


def _strided_layout(shape, order, batch_dims, free_dims, contract_dims) -> Layout | None:
    """The ``Layout`` of an operand of ``shape`` in a packed buffer holding its axes in
    ``order`` (buffer axis p is operand axis ``order[p]``), or None where the tiled kernel
    cannot read it so: its free and contracted axes each flatten to one index with a stride,
    and one of the two strides is 1."""
    st = [0] * len(shape)
    for p, t in zip(order, W.strides_of([shape[a] for a in order])):
        st[p] = t
    sf = _group_stride(shape, st, free_dims)
    sk = _group_stride(shape, st, contract_dims)
    if sf is None or sk is None:
        return None
    X = int(np.prod([shape[a] for a in free_dims], dtype=np.int64))
    K = int(np.prod([shape[a] for a in contract_dims], dtype=np.int64))
    if sk == 1 or (sk == 0 and sf != 1):        # the contraction contiguous (or of one step)
        kfirst, stride = False, sf or K
    elif sf in (0, 1):                          # the free axes contiguous (or one row)
        kfirst, stride = True, sk or X
    else:
        return None
    return Layout(kfirst, stride, tuple(shape[a] for a in batch_dims),
                  tuple(st[a] for a in batch_dims))


def _vec4_readable(lay, i, N) -> bool:
    """Whether the register-blocked kernel reads operand ``i`` in place in ``Layout`` ``lay``
    (None: none): A in any (one element at a time), B k-first with its rows and batches at
    multiples of 4 elements and N a multiple of 4 (vec4 rows)."""
    return lay is not None and (i == 0 or (lay.kfirst and lay.aligned() and N % 4 == 0))


def _vec4_reads(lowering, a, i, dims, N):
    """(buffer key, ``Layout``) where the register-blocked kernel reads operand ``i`` (``a``,
    its batch, free and contracted axes ``dims``) in place (``_vec4_readable``); None: it
    takes a copy."""
    held = _in_place(lowering, a, *dims)
    return held if held is not None and _vec4_readable(held[1], i, N) else None


def _in_place(lowering, a, batch_dims, free_dims, contract_dims):
    """(buffer key, ``Layout``) where operand ``a`` is held by a buffer (its own, or the one
    it is a transpose or a view of: ``_held``) that the tiled kernel reads in place; None
    where it needs a copy or a reader."""
    held = _held(lowering, a)
    if held is None:
        return None
    lay = _strided_layout(a.aval.shape, held[1], batch_dims, free_dims, contract_dims)
    return None if lay is None else (held[0], lay)


class Inline(NamedTuple):
    """An operand the tiled kernel reads through a reader function (``_inline_operand``)."""
    fn: str          # its name: fn(b, free index, k) -> f32
    src: str         # its WGSL


# An inline operand's elements are computed again for every tile of the other operand that
# the product has -- its producers' arithmetic and index maps, in a kernel whose time is the
# multiply-adds' -- where a copy computes them once and costs one write and one read of the
# operand.  Reads take the inline form where the other operand is at most INLINE_TILES tiles
# wide: a convolution's patches against its output features (64 in the benchmark's: one
# tile), both of its gradients, a product with a narrow side (an MLP's last layer); an MLP's
# hidden layers against 2048 features (16 tiles) keep their copies (on lavapipe reading
# relu(h + b) inline there was 10% slower than the copies).
INLINE_TILES = 2


def _free_last(aval, free_dims, batch_dims, default) -> bool:
    """Whether the tiled kernel walks an operand that is not in a buffer k-first: where its
    own last axis is a free one (neighbouring threads then read neighbouring elements, and a
    copy of it is a straight copy), rows-first where it is a contracted one, ``default``
    where it is a batch axis."""
    last = aval.ndim - 1
    if last < 0 or last in batch_dims:
        return default
    return last in free_dims


def _planned(eqn, target):
    """(variant, each operand's (batch, free, contracted) axes, M, N) of a product on the
    blocked kernels, the variant the kernel rule will take; None: the generic kernel (which
    reads anything)."""
    lhs, rhs = (a.aval for a in eqn.invars)
    lc, rc, lb, rb, lfree, rfree, B, M, N, K = _problem(lhs, rhs,
                                                        eqn.params["dimension_numbers"])
    if not _blocked(target, lhs, rhs, eqn.outvars[0].aval, M, N, K):
        return None
    dims = ((tuple(lb), tuple(lfree), tuple(lc)), (tuple(rb), tuple(rfree), tuple(rc)))
    return _mm_config(target, B, M, N, K), dims, M, N


def _other_tiles(cfg, i, M, N) -> int:
    """How many of tile variant ``cfg``'s tiles the other operand of operand ``i`` spans
    (the times a reader of operand ``i`` runs for each of its elements)."""
    return -(-(N, M)[i] // (cfg.bn, cfg.bm)[i])


def _materialize_inputs(eqn, lowering) -> tuple:
    """The operands a GPU's product gives a buffer of their own at planning
    (``Primitive.materialize_inputs``): one computed by fused producers (not a transpose of a
    value with a buffer, which the kernel reads in place), already laid out as the kernel
    reads it, that the kernel would copy -- it cannot read it inline (the other operand is
    wider than ``INLINE_TILES`` of the variant's tiles), or it is the register-blocked
    kernel.  Given a buffer, the operand is computed where its inputs are -- an MLP layer's
    ``relu(h + b)`` or a backward pass's masked cotangent by the epilogue of the product
    that makes ``h`` -- and read in place by every product that takes it (the layer's and
    its weight gradient's), where a copy kernel read the product's output again."""
    target = lowering.target
    planned = _planned(eqn, target) if target.matmul == "tiled" else None
    if planned is None:
        return ()
    cfg, dims, M, N = planned
    keep = []
    for i, a in enumerate(eqn.invars):
        if not isinstance(a, Var) or a.id in lowering.materialized:
            continue
        lay = _strided_layout(a.aval.shape, tuple(range(a.aval.ndim)), *dims[i])
        readable = lay is not None if cfg.tiled else _vec4_readable(lay, i, N)
        if not readable:
            continue                              # a copy lays it out anyway
        if (cfg.tiled and target.operand_reads == "inline"
                and _other_tiles(cfg, i, M, N) <= INLINE_TILES):
            continue                              # read inline
        if _held(lowering, a) is None:           # (a view of a buffer: read in place)
            keep.append(i)
    return tuple(keep)


dot_general_p.materialize_inputs = _materialize_inputs

# A fused operand that has a buffer anyway (another kernel or the program reads it too) is
# computed by the tiled kernel in its loads and stored from there where the other operand is
# at most STORE_TILES tiles wide: its producers are computed that many times over, where a
# kernel of its own would compute them once, write the operand and have the product read it
# back -- and cost a dispatch.  A recurrent network's backward step (the cotangent through
# tanh, kept for the weight gradients, times the transposed weights) is one kernel so.
STORE_TILES = 4


def _store_inputs(eqn, lowering) -> tuple:
    """The operands a GPU's tiled product computes and stores itself
    (``Primitive.store_inputs``): float32 fused values with a buffer in a ``Layout`` the
    kernel can write, the other operand at most ``STORE_TILES`` tiles wide, that the
    Lowering lets it claim (``Lowering.store_claimable``)."""
    target = lowering.target
    if (target.matmul != "tiled" or target.operand_reads != "inline"
            or not all(v.aval.dtype == _F32 for v in (*eqn.invars, *eqn.outvars))):
        return ()
    planned = _planned(eqn, target)
    if planned is None or not planned[0].tiled:
        return ()
    cfg, dims, M, N = planned
    return tuple(i for i, a in enumerate(eqn.invars)
                 if _other_tiles(cfg, i, M, N) <= STORE_TILES
                 and _strided_layout(a.aval.shape, tuple(range(a.aval.ndim)), *dims[i])
                 is not None and lowering.store_claimable(eqn, a))


dot_general_p.store_inputs = _store_inputs


def _inline_operand(ctx, kb, i, aval, batch_dims, free_dims, contract_dims, tag, other_tiles):
    """Operand ``i`` of the tiled kernel read element by element through a reader function
    ``wj_rd{tag}(b, free, k)`` built in ``kb`` -- its fused producers inlined (implicit GEMM for a
    convolution's patches), any layout -- instead of a copy laid out for the kernel; with the
    order its loads walk, k-first where the operand's last axis is a free one (so neighbouring
    threads read neighbouring elements).  None: read in place (stored [B, free, K] or
    [B, K, free]), or copied (the target's ``operand_reads`` is "copy", the other operand
    has more than ``INLINE_TILES`` tiles, a buffer is bound in windows).  An operand the
    kernel stores itself (``KernelContext.stores``) is read so wherever its reads fit."""
    if i not in ctx.stores:
        if _in_place(ctx.lowering, ctx.eqn.invars[i], batch_dims, free_dims,
                     contract_dims) is not None:
            return None
        if ctx.target.operand_reads != "inline" or other_tiles > INLINE_TILES:
            return None
    probe = ctx.new_kb()
    _operand_reader(ctx, probe, i, aval, batch_dims, free_dims, contract_dims, ("b", "r", "k"))
    if probe.windowed:
        return None
    body = _operand_reader(ctx, kb, i, aval, batch_dims, free_dims, contract_dims,
                           ("b", "r", "k"))
    fn = f"wj_rd{tag}"
    kfirst = _free_last(aval, free_dims, batch_dims, tag == "B")
    X = int(np.prod([aval.shape[d] for d in free_dims], dtype=np.int64))
    K = int(np.prod([aval.shape[d] for d in contract_dims], dtype=np.int64))
    return (Inline(fn, f"fn {fn}(b: u32, r: u32, k: u32) -> f32 {{\n{body}\n}}\n"),
            Layout.packed(kfirst, 1, X, K))


def _dot_tiled(ctx, lhs, rhs, lc, rc, lb, rb, lfree, rfree, B, M, N, K, out, cfg):
    """The workgroup-memory kernel; an operand a buffer holds in a ``Layout`` is read in
    place, any other through its reader (``_inline_operand``) or from a copy
    (``_canonical``).  A kernel whose inline operands bind more buffers than the adapter
    allows takes copies instead."""
    S = cfg.s
    # the product itself is not stored where its epilogue computes all that reads it
    own = None if ctx.output_dead else ctx.out_key(0)
    out_key = own if S == 1 else ctx.scratch(ShapedArray((S * B * M * N,), _F32))
    ops = [(0, lhs, lb, lfree, lc, "A", _other_tiles(cfg, 0, M, N)),
           (1, rhs, rb, rfree, rc, "B", _other_tiles(cfg, 1, M, N))]
    placed = {}                     # operand -> (its buffer key, the copy to dispatch, Layout)

    def in_buffer(i, aval, bd, fd, cd, *_):
        if i not in placed:
            held = _in_place(ctx.lowering, ctx.eqn.invars[i], bd, fd, cd)
            if held is not None:
                placed[i] = (held[0], None, held[1])
            else:                  # a copy in the operand's own order (a straight copy)
                kf = _free_last(aval, fd, bd, i == 1)
                X = (M, N)[i]
                placed[i] = (*_canonical(ctx, i, aval, bd, fd, cd, not kf, defer=True),
                             Layout.packed(kf, B, X, K))
        key, _, lay = placed[i]
        return key, lay

    computed = set()              # stored operands given a kernel of their own (once)
    for inline in (True, False):
        kb = ctx.new_kb()
        got, sides = [], [None, None]
        for op in ops:
            i, aval, bd, fd, cd = op[:5]
            g = inline and _inline_operand(ctx, kb, *op)
            stored = i in ctx.stores
            if g and stored:           # computed here, and stored by one row of tiles
                key, lay = _in_place(ctx.lowering, ctx.eqn.invars[i], bd, fd, cd)
                sides[i] = (kb.bind(key, _F32, "read_write"), lay)
            elif stored and i not in computed:
                ctx.compute_first(i)   # a kernel of its own first, then read in place
                computed.add(i)
            got.append(g or in_buffer(*op))
        (ka, a_lay), (kbk, b_lay) = got
        epi = ctx.epilogue_code(kb, "val", "o") if S == 1 else []
        src, grid = _tiled_src(kb, ka, kbk, out_key, B, M, N, K, cfg, S, epi, a_lay,
                               b_lay, lhs.dtype, out.dtype, sides)
        if (kb.n_bindings() <= ctx.lowering.max_storage
                or not any(isinstance(key, Inline) for key, _ in got)):
            break
    for i, (key, _) in enumerate(got):       # the copies this form reads, before it
        if not isinstance(key, Inline) and placed[i][1] is not None:
            placed[i][1]()
    ctx.dispatch(kb, src, grid)
    if S > 1:
        kb = ctx.new_kb()
        epi = ctx.epilogue_code(kb, "acc", "i")
        src, grid = _split_sum_src(kb, out_key, own, S, B * M * N, out.dtype, epi)
        ctx.dispatch(kb, src, grid)


def _dot_vec4(ctx, lhs, rhs, lc, rc, lb, rb, lfree, rfree, B, M, N, K, out, cfg):
    """The register-blocked kernel (float32, or float16 operands accumulated in float32)."""
    N4 = -(-N // 4)                      # B's columns padded to a multiple of 4 when needed
    S = _mm_splits(K, cfg.s, k_chunk(ctx.target))
    held_a, held_b = (_vec4_reads(ctx.lowering, a, i, dims, N) for i, (a, dims) in
                      enumerate(zip(ctx.eqn.invars, ((lb, lfree, lc), (rb, rfree, rc)))))
    ka, a_lay = held_a or (_canonical(ctx, 0, lhs, lb, lfree, lc, True), None)
    kbk, b_lay = held_b or (_canonical(ctx, 1, rhs, rb, rfree, rc, False,
                                       pad_rows=N4 * 4 if N % 4 else 0), None)
    own = None if ctx.output_dead else ctx.out_key(0)
    out_key = own if S == 1 else ctx.scratch(ShapedArray((S * B * M * N,), np.float32))
    kb = ctx.new_kb()
    epi = ctx.epilogue_code(kb, "val", "o") if S == 1 else []
    src, grid = _vec4_src(kb, ka, kbk, out_key, B, M, N, K, cfg, S, epi, lhs.dtype, out.dtype,
                          a_lay, b_lay)
    ctx.dispatch(kb, src, grid)
    if S > 1:   # sum the partial products (S <= 65535 iterations per thread)
        kb = ctx.new_kb()
        epi = ctx.epilogue_code(kb, "acc", "i")
        src, grid = _split_sum_src(kb, out_key, own, S, B * M * N, out.dtype, epi)
        ctx.dispatch(kb, src, grid)


def _dot_element(kb, idx, read, in_avals, out, dimension_numbers, precision=None,
                 preferred_element_type=None, out_sharding=None):
    """One output element as a sequential loop over the contraction (single-workgroup loop
    kernels, ``wjax/_src/backend/loops.py``)."""
    lhs, rhs = in_avals
    lc, rc, lb, rb = _dims(dimension_numbers)
    lfree = [d for d in range(lhs.ndim) if d not in lc + lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc + rb]
    od = idx.dims()
    ldims, rdims = [None] * lhs.ndim, [None] * rhs.ndim
    for k, (a, b) in enumerate(zip(lb, rb)):
        ldims[a] = rdims[b] = od[k]
    for k, a in enumerate(lfree):
        ldims[a] = od[len(lb) + k]
    for k, b in enumerate(rfree):
        rdims[b] = od[len(lb) + len(lfree) + k]
    csh = [lhs.shape[a] for a in lc]
    n = int(np.prod(csh))
    acc_dt = _acc_dtype(out.dtype)
    acc, r = kb.var(W.zero(acc_dt), W.value_type(acc_dt)), kb.fresh("r")
    if W.is_complex(acc_dt):
        kb.use_helper("wj_cmul")
    kb.emit(f"for (var {r} = 0u; {r} < {n}u; {r} = {r} + 1u) {{")
    if csh:
        for a, b, c in zip(lc, rc, Index(kb, csh, flat=r).dims()):
            ldims[a] = rdims[b] = c
    x = convert_expr(read[0](Index(kb, lhs.shape, dims=ldims)), lhs.dtype, acc_dt)
    y = convert_expr(read[1](Index(kb, rhs.shape, dims=rdims)), rhs.dtype, acc_dt)
    kb.emit(f"{acc} = {acc} + {_mul_expr(acc_dt, f'({x})', f'({y})')};")
    kb.emit("}")
    return convert_expr(acc, acc_dt, out.dtype)


dot_general_p.element = _dot_element


def _dot_tile_shape(in_avals, dimension_numbers, rows, cols, **_):
    """(B, M, N, K, R, C): the product's batch, rows, columns, contraction and the R x C block
    of outputs one thread accumulates."""
    lhs, rhs = in_avals
    lc, rc, lb, rb = _dims(dimension_numbers)
    prod = lambda a, ds: int(np.prod([a.shape[d] for d in ds], dtype=np.int64))  # noqa: E731
    lfree = [d for d in range(lhs.ndim) if d not in lc + lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc + rb]
    B, M, N, K = prod(lhs, lb), prod(lhs, lfree), prod(rhs, rfree), prod(lhs, lc)
    return B, M, N, K, max(1, min(rows, M)), max(1, min(cols, N))


def _dot_tile(kb, wg, read, in_avals, out, store, *, rows, cols, dimension_numbers,
              precision=None, preferred_element_type=None, out_sharding=None, splits=1):
    """Every element of the product, computed by ``wg`` threads (``lid``) of one workgroup,
    each accumulating R x C blocks of outputs in registers: per contraction step it reads R
    lhs and C rhs values for R * C products (the element rule reads 2 per product).  On CPU
    adapters every load from storage or workgroup memory costs a per-lane loop, so this is
    what makes a matmul inside a single-workgroup loop fast.  ``splits`` > 1 (GPUs, whose
    blocks are small): each output is ``splits`` partial sums over interleaved steps of the
    contraction, added as a balanced tree at the end -- independent chains of multiply-adds
    whose loads can be in flight together, where one chain waits on each (a one-row block of
    an RNN: a 256-long chain a thread).  ``store(flat, value)`` emits the store of one output
    element; returns the sequential steps per thread."""
    lhs, rhs = in_avals
    lc, rc, lb, rb = _dims(dimension_numbers)
    lfree = [d for d in range(lhs.ndim) if d not in lc + lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc + rb]
    B, M, N, K, R, C = _dot_tile_shape(in_avals, dimension_numbers, rows, cols)
    tm, tn = -(-M // R), -(-N // C)
    tiles = B * tm * tn
    if kb is None:
        return -(-tiles // wg) * (K + 1)
    acc_dt = _acc_dtype(out.dtype)
    vt = W.value_type(acc_dt)
    tt = kb.fresh("tt")
    kb.emit(f"for (var {tt} = lid; {tt} < {tiles}u; {tt} = {tt} + {wg}u) {{")
    b = kb.let(f"{tt} / {tm * tn}u", "u32")
    m0 = kb.let(f"({tt} / {tn}u) % {tm}u * {R}u", "u32")
    n0 = kb.let(f"{tt} % {tn}u * {C}u", "u32")

    def coords(shape, flat):
        return Index(kb, shape, flat=flat).dims() if shape else []

    bsh = [lhs.shape[d] for d in lb]
    bc = coords(bsh, b)
    mrow = [coords([lhs.shape[d] for d in lfree], f"min({m0} + {r}u, {M - 1}u)")
            for r in range(R)]
    ncol = [coords([rhs.shape[d] for d in rfree], f"min({n0} + {c}u, {N - 1}u)")
            for c in range(C)]
    S = int(splits) if K >= 2 * int(splits) else 1
    acc = [[[kb.var(W.zero(acc_dt), vt) for _ in range(S)] for _ in range(C)] for _ in range(R)]
    if W.is_complex(acc_dt):
        kb.use_helper("wj_cmul")

    def step(kexpr, s):
        """Adds contraction step ``kexpr`` into every output's partial sum ``s``."""
        kc = coords([lhs.shape[d] for d in lc], kexpr)

        def load(side, aval, batch, free, contract, at):
            dims = [None] * aval.ndim
            for ds, cs in ((batch, bc), (free, at), (contract, kc)):
                for d, c in zip(ds, cs):
                    dims[d] = c
            v = convert_expr(read[side](Index(kb, aval.shape, dims=dims)), aval.dtype, acc_dt)
            return kb.let(v, vt)
        xs = [load(0, lhs, lb, lfree, lc, mrow[r]) for r in range(R)]
        ys = [load(1, rhs, rb, rfree, rc, ncol[c]) for c in range(C)]
        for r in range(R):
            for c in range(C):
                a = acc[r][c][s]
                kb.emit(f"{a} = {a} + {_mul_expr(acc_dt, xs[r], ys[c])};")
    k = kb.fresh("k")
    KS = K // S * S
    kb.emit(f"for (var {k} = 0u; {k} < {KS}u; {k} = {k} + {S}u) {{")
    for s in range(S):
        step(f"({k} + {s}u)" if s else k, s)
    kb.emit("}")
    if KS < K:                             # the last K % S steps, into the first sums
        kb.emit(f"for (var {k} = {KS}u; {k} < {K}u; {k} = {k} + 1u) {{")
        step(k, 0)
        kb.emit("}")

    for r in range(R):
        for c in range(C):
            kb.emit(f"if ({m0} + {r}u < {M}u && {n0} + {c}u < {N}u) {{")
            flat = f"({b} * {M}u + {m0} + {r}u) * {N}u + {n0} + {c}u"
            store(flat, convert_expr(W.tree_sum(acc[r][c]), acc_dt, out.dtype))
            kb.emit("}")
    kb.emit("}")
    return -(-tiles // wg) * (K + 1)


dot_general_p.element_tile = _dot_tile


def _problem(lhs, rhs, dimension_numbers):
    """A product's axes and sizes: (lc, rc, lb, rb, lfree, rfree, B, M, N, K)."""
    lc, rc, lb, rb = _dims(dimension_numbers)
    lfree = [i for i in range(lhs.ndim) if i not in lc + lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc + rb]
    B = int(np.prod([lhs.shape[i] for i in lb], dtype=np.int64))
    M = int(np.prod([lhs.shape[i] for i in lfree], dtype=np.int64))
    N = int(np.prod([rhs.shape[i] for i in rfree], dtype=np.int64))
    K = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    return lc, rc, lb, rb, lfree, rfree, B, M, N, K


def _blocked(target, lhs, rhs, out, M, N, K) -> bool:
    """Whether a product runs on the tiled or register-blocked kernel (else the generic one):
    float32, or float16 storage (bfloat16: f32 lanes) accumulated in float32
    (``preferred_element_type=float32`` keeps the float32 result), the variant chosen as
    float32's; not too small."""
    f32 = lhs.dtype == rhs.dtype == out.dtype == _F32
    half = ((lhs.dtype == rhs.dtype == _F16 and out.dtype in (_F16, _F32) and target.has_f16)
            or (lhs.dtype == rhs.dtype == _BF16 and out.dtype in (_BF16, _F32)))
    return (f32 or half) and K > 0 and M * N * K >= 32768


@dot_general_p.def_kernel
def _dot_kernel(ctx, lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                out_sharding=None):
    lc, rc, lb, rb, lfree, rfree, B, M, N, K = _problem(lhs, rhs, dimension_numbers)
    out = ctx.eqn.outvars[0].aval
    acc = _acc_dtype(lhs.dtype)
    if _blocked(ctx.target, lhs, rhs, out, M, N, K):
        cfg = _mm_config(ctx.target, B, M, N, K)
        if cfg.tiled:
            return _dot_tiled(ctx, lhs, rhs, lc, rc, lb, rb, lfree, rfree, B, M, N, K, out, cfg)
        return _dot_vec4(ctx, lhs, rhs, lc, rc, lb, rb, lfree, rfree, B, M, N, K, out, cfg)
    kb = ctx.new_kb()
    read_a = _operand_reader(ctx, kb, 0, lhs, lb, lfree, lc, ("b", "m", "k"))
    read_b = _operand_reader(ctx, kb, 1, rhs, rb, rfree, rc, ("b", "n", "k"))
    out_name = kb.bind(ctx.out_key(0), out.dtype, "read_write")
    res = W.wrap_narrow(convert_expr("v", acc, out.dtype), out.dtype)
    write = (
        f"        let res = {res};\n        {out_name}[o] = {W.store_expr('res', out.dtype)};\n    "
        f"    "
        + "\n        ".join(ctx.epilogue_code(kb, "res", "o"))
    )
    emit_generic_matmul(ctx, kb, read_a, read_b, write, acc, B, M, N, K)


def _mul_expr(acc, a, b):
    """The product of two accumulator values (complex64: the complex product)."""
    return f"wj_cmul({a}, {b})" if W.is_complex(acc) else f"{a} * {b}"


def emit_generic_matmul(ctx, kb, read_a, read_b, write, acc, B, M, N, K):
    """Dispatches shaders/matmul.wgsl (any dtype and layout: ``read_a``/``read_b`` are the
    bodies of rdA(b, m, k)/rdB(b, k, n), ``write`` stores ``v`` at output ``o``); shared by
    dot_general and conv_general_dilated (implicit im2col)."""
    big = M * N >= 4096
    WX, WY, RM, RN = (8, 8, 4, 4) if big else (16, 1, 1, 1)
    TM, TN = WY * RM, WX * RN
    grid = W.grid_for(B * (-(-M // TM)) * (-(-N // TN)), kb.max_groups)
    if W.is_complex(acc):
        kb.use_helper("wj_cmul")
    src = W.render("matmul.wgsl", HEADER=kb.header(), ACC=W.value_type(acc), READ_A=read_a,
                   READ_B=read_b, WX=WX, WY=WY, RM=RM, RN=RN, TM=TM, TN=TN, M=M, N=N, K=K, B=B,
                   NX=grid[0], WRITE=write, MUL=_mul_expr(acc, "a[i]", "bb[j]"))
    ctx.dispatch(kb, src, grid)


# --------------------------------------------------------------------------- long contractions
# The jaxpr keeps one dot_general at every size (as JAX's); how a long contraction runs is
# decided at lowering, for the target (``dot_general_p.decompose``, which the backend traces
# and inlines in the equation's place).
DOT_AS_REDUCTION_K = 32768   # tuning: a contraction longer than this with at most ...
DOT_AS_REDUCTION_OUT = 64    # ... this many outputs runs as a multiply fused into a reduction


def _dot_decompose(target, lhs, rhs, dimension_numbers, precision=None,
                   preferred_element_type=None, out_sharding=None):
    """The composition a long contraction runs as on ``target``, or None (the kernel).

    * Few outputs (a dot of two long vectors), on any target: a broadcast multiply fused into
      the (two-pass, compensated) reduction kernel -- memory-bound and fully parallel, where a
      matmul kernel would leave one thread walking the whole contraction.
    * Under a loop limit (lavapipe stops an invocation after 65535 loop iterations, silently),
      a contraction past half of it is cut into chunks of ``k_chunk(target)`` steps that run
      as an extra batch dimension of one dot_general, then summed.  Without a limit (GPUs)
      the kernels take it whole."""
    lc, rc, lb, rb = _dims(dimension_numbers)
    lfree = [i for i in range(lhs.ndim) if i not in lc + lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc + rb]
    K = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    outputs = int(np.prod([lhs.shape[i] for i in lb + tuple(lfree)]
                          + [rhs.shape[i] for i in rfree], dtype=np.int64))
    dn, pet = dimension_numbers, preferred_element_type
    if K > DOT_AS_REDUCTION_K and outputs <= DOT_AS_REDUCTION_OUT:
        return lambda a, b: _dot_as_reduction(a, b, dn, pet)
    chunk = k_chunk(target)
    if chunk is not None and K > -(-target.loop_limit // 2):
        return lambda a, b: _dot_in_chunks(a, b, dn, pet, chunk)
    return None


dot_general_p.decompose = _dot_decompose


def _permute(x, perm):
    """transpose, or a (cheaper) reshape when only size-1 axes move."""
    shape = raise_to_shaped(x).shape
    if [p for p in perm if shape[p] != 1] == [i for i in range(len(shape)) if shape[i] != 1]:
        return ops.reshape(x, [shape[p] for p in perm])
    return ops.transpose(x, perm)


def _dot_layout(lhs, rhs, dn):
    """(batch dims, lhs free dims, rhs free dims, batch shape, lhs free shape, rhs free shape,
    contraction length) of a product."""
    (lc, rc), (lb, rb) = dn
    la, ra = raise_to_shaped(lhs), raise_to_shaped(rhs)
    lfree = tuple(i for i in range(la.ndim) if i not in lc + lb)
    rfree = tuple(i for i in range(ra.ndim) if i not in rc + rb)
    bsh = [la.shape[i] for i in lb]
    msh, nsh = [la.shape[i] for i in lfree], [ra.shape[i] for i in rfree]
    K = int(np.prod([la.shape[i] for i in lc], dtype=np.int64))
    return lfree, rfree, bsh, msh, nsh, K


def _dot_as_reduction(lhs, rhs, dn, pet):
    """The product as ``sum_k a[..., k] * b[..., k]``: both operands laid out as
    [batch, lhs free, rhs free, K] (broadcast where they lack a dim), multiplied and reduced
    over the last axis (``or`` of ``and`` for bool)."""
    (lc, rc), (lb, rb) = dn
    lfree, rfree, bsh, msh, nsh, K = _dot_layout(lhs, rhs, dn)
    dt = pet if pet is not None else raise_to_shaped(lhs).dtype
    a = ops.reshape(_permute(lhs, lb + lfree + lc), bsh + msh + [1] * len(nsh) + [K])
    b = ops.reshape(_permute(rhs, rb + rfree + rc), bsh + [1] * len(msh) + nsh + [K])
    full = bsh + msh + nsh + [K]
    nd = len(full)
    a = ops.broadcast_in_dim(ops.convert_element_type(a, dt), full, tuple(range(nd)))
    b = ops.broadcast_in_dim(ops.convert_element_type(b, dt), full, tuple(range(nd)))
    if np.dtype(dt) == np.bool_:
        return ops.reduce_or(ops.bitwise_and(a, b), (nd - 1,))
    return ops.reduce_sum(ops.mul(a, b), (nd - 1,))


def _dot_in_chunks(lhs, rhs, dn, pet, chunk):
    """The product with its contraction cut into nS chunks of at most ``chunk`` steps (a
    count that divides K when one is near, else the last chunk zero-padded): one dot_general
    with the chunk index as an extra batch dimension, then the sum over it."""
    (lc, rc), (lb, rb) = dn
    lfree, rfree, bsh, msh, nsh, K = _dot_layout(lhs, rhs, dn)
    nb, nm = len(bsh), len(msh)
    nS = -(-K // chunk)
    nS = next((d for d in range(nS, 2 * nS + 1) if K % d == 0), nS)   # no padding if it divides
    Kc = -(-K // nS)
    npad = nS * Kc - K
    a = ops.reshape(_permute(lhs, lb + lfree + lc), bsh + msh + [K])
    b = ops.reshape(_permute(rhs, rb + rc + rfree), bsh + [K] + nsh)
    if npad:
        la, ra = raise_to_shaped(lhs), raise_to_shaped(rhs)
        a = ops.pad(a, np.zeros((), la.dtype), [(0, 0, 0)] * (nb + nm) + [(0, npad, 0)])
        b = ops.pad(b, np.zeros((), ra.dtype),
                    [(0, 0, 0)] * nb + [(0, npad, 0)] + [(0, 0, 0)] * len(nsh))
    a = ops.reshape(a, bsh + msh + [nS, Kc])
    b = ops.reshape(b, bsh + [nS, Kc] + nsh)
    dn2 = (((nb + nm + 1,), (nb + 1,)), (tuple(range(nb)) + (nb + nm,), tuple(range(nb)) + (nb,)))
    out = dot_general_p.bind(a, b, dimension_numbers=dn2, precision=None,
                             preferred_element_type=pet, out_sharding=None)
    # out: batch dims, the chunk axis, lhs free dims, rhs free dims
    if raise_to_shaped(out).dtype == np.bool_:
        return ops.reduce_or(out, (nb,))
    return ops.reduce_sum(out, (nb,))


def _dot_ref(
    lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    lc, rc, lb, rb = _dims(dimension_numbers)
    lfree = [i for i in range(lhs.ndim) if i not in lc + lb]
    rfree = [i for i in range(rhs.ndim) if i not in rc + rb]
    a = np.transpose(lhs, lb + tuple(lfree) + lc)
    b = np.transpose(rhs, rb + rc + tuple(rfree))
    Bs = a.shape[:len(lb)]
    Ms = a.shape[len(lb):len(lb) + len(lfree)]
    Ks = a.shape[len(lb) + len(lfree):]
    Ns = b.shape[len(rb) + len(rc):]
    acc = (np.complex128 if dtypes.is_complex(lhs.dtype) else
           np.float64 if dtypes.is_float(lhs.dtype) else np.int64)
    a2 = a.reshape(int(np.prod(Bs)), int(np.prod(Ms)), int(np.prod(Ks))).astype(acc)
    b2 = b.reshape(int(np.prod(Bs)), int(np.prod(Ks)), int(np.prod(Ns))).astype(acc)
    out_dt = np.dtype(preferred_element_type) if preferred_element_type is not None else lhs.dtype
    return np.matmul(a2, b2).reshape(tuple(Bs) + tuple(Ms) + tuple(Ns)).astype(out_dt)


dot_general_p.reference = _dot_ref


def _dot_batch(args, dims, dimension_numbers, **params):
    (lhs, rhs), (dl, dr) = args, dims
    lc, rc, lb, rb = _dims(dimension_numbers)
    if dl is not None and dr is not None:   # a new batch dimension, first in the output
        n = _batching.axis_size(args, dims)
        lhs, rhs = _batching.bdim_at_front(lhs, dl, n), _batching.bdim_at_front(rhs, dr, n)
        up = lambda t: tuple(a + 1 for a in t)
        dn = ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb)))
        return dot_general_p.bind(lhs, rhs, dimension_numbers=dn, **params), 0
    sh = _batching.shift_axes
    if dr is None:                          # the batch axis is one more free lhs dimension
        lc2, lb2 = sh(lc, dl), sh(lb, dl)
        free = [i for i in range(_batching.aval_of(lhs).ndim) if i not in lc2 + lb2]
        out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc2, rc), (lb2, rb)), **params)
        return out, len(lb) + free.index(dl)
    rc2, rb2 = sh(rc, dr), sh(rb, dr)       # ... or one more free rhs dimension
    n_lfree = _batching.aval_of(lhs).ndim - len(lc) - len(lb)
    free = [i for i in range(_batching.aval_of(rhs).ndim) if i not in rc2 + rb2]
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc, rc2), (lb, rb2)), **params)
    return out, len(lb) + n_lfree + free.index(dr)


dot_general_p.batch = _dot_batch


def _dot_axes(in_avals, out_avals, dimension_numbers, **params):
    """Batch axes (both operands) come first in the result, then the free axes of the lhs and
    of the rhs in order; contracted axes mix."""
    lc, rc, lb, rb = _dims(dimension_numbers)
    out = [m for i, (a, b) in enumerate(zip(lb, rb)) for m in ((0, a, 0, i), (1, b, 0, i))]
    pos = len(lb)
    for k, (c, b) in enumerate(((lc, lb), (rc, rb))):
        for d in range(in_avals[k].ndim):
            if d not in c and d not in b:
                out.append((k, d, 0, pos))
                pos += 1
    return out


dot_general_p.axis_map = _dot_axes


# --------------------------------------------------------------------------- autodiff


def _ranges_like(*xs):
    start = 0
    for x in xs:
        yield tuple(range(start, start + len(x)))
        start += len(x)


def _remaining(n, *removed):
    rm = set(i for r in removed for i in r)
    return [i for i in range(n) if i not in rm]


def _dot_transpose_lhs(g, x, y, dimension_numbers, swap_ans=False, preferred_element_type=None):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim = _ad.aval_of(x).ndim
    y_ndim = _ad.aval_of(y).ndim
    x_kept = _remaining(x_ndim, x_contract, x_batch)
    y_kept = _remaining(y_ndim, y_contract, y_batch)
    if swap_ans:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, tuple(y_kept)), (ans_batch, tuple(y_batch)))
    x_contract_sorted_by_y = (
        list(np.take(x_contract, np.argsort(y_contract))) if len(x_contract) else []
    )
    out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
    yv = y
    xdt = _ad.aval_of(x).dtype
    if _ad.aval_of(g).dtype != _ad.aval_of(yv).dtype:
        g = ops.convert_element_type(g, _ad.aval_of(yv).dtype)
    # dot_general(y, g) gives x's dims in the order [batch, contract (by y), kept]: when that is
    # x's own order, it avoids transposing the result (a separate kernel here)
    alt_axes = np.argsort(list(x_batch) + x_contract_sorted_by_y + x_kept)
    if list(out_axes) != list(range(x_ndim)) and list(alt_axes) == list(range(x_ndim)):
        return _maybe_convert(
            ops.dot_general(yv, g, ((tuple(y_kept), ans_y), (tuple(y_batch), ans_batch))), xdt
        )
    r = ops.dot_general(g, yv, dims)
    r = ops.transpose(r, tuple(int(i) for i in out_axes))
    if _ad.aval_of(r).dtype != xdt:
        r = ops.convert_element_type(r, xdt)
    return r


def _maybe_convert(r, dt):
    return r if _ad.aval_of(r).dtype == dt else ops.convert_element_type(r, dt)


def _dot_transpose_rhs(g, x, y, dimension_numbers, preferred_element_type=None):
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _dot_transpose_lhs(g, y, x, swapped, swap_ans=True)


_ad.defbilinear(
    dot_general_p,
    lambda ct, x, y, dimension_numbers, **_: _dot_transpose_lhs(ct, x, y, dimension_numbers),
    lambda ct, x, y, dimension_numbers, **_: _dot_transpose_rhs(ct, x, y, dimension_numbers),
)
