"""gather (fusable index math) and the scatter family (atomic kernels).

Dimension numbers follow XLA/JAX; the index vector is the last axis of
``indices``.  Modes: 'clip' (and 'promise_in_bounds') clamp the window start
into bounds, 'fill' gives ``fill_value`` for out-of-bounds windows (gather) or
drops the update (scatter).
"""
from __future__ import annotations


import numpy as np

from ..core import dtypes
from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import _same_dtypes, kind


from ..core.ops import GatherDimensionNumbers, ScatterDimensionNumbers  # noqa: E402,F401
from ..core.ops import gather_mode as _mode  # noqa: E402
from ..transforms import ad as _ad
from ..core import ops


# --------------------------------------------------------------------------- gather

gather_p = Primitive("gather")


@gather_p.def_abstract_eval
def _gather_abstract(operand, indices, dimension_numbers, slice_sizes, mode=None, fill_value=None,
                     indices_are_sorted=False, unique_indices=False):
    dn = dimension_numbers
    if not dtypes.is_int(indices.dtype):
        raise TypeError(f"gather indices must be of integer type, got {indices.dtype}")
    if indices.ndim == 0 or indices.shape[-1] != len(dn.start_index_map):
        raise TypeError(f"gather: the last dimension of indices (shape {indices.shape}) must equal "
                        f"len(start_index_map) = {len(dn.start_index_map)}")
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"gather slice_sizes {tuple(slice_sizes)} must have one entry per operand "
                        f"dimension (shape {operand.shape})")
    for s, n in zip(slice_sizes, operand.shape):
        if not 0 <= s <= n:
            raise TypeError(f"gather slice_sizes {tuple(slice_sizes)} out of bounds for operand "
                            f"shape {operand.shape}")
    for d in dn.collapsed_slice_dims:
        if slice_sizes[d] != 1:
            raise TypeError(f"gather collapsed dimension {d} must have slice size 1")
    batch = list(indices.shape[:-1])
    offset_sizes = [s for i, s in enumerate(slice_sizes)
                    if i not in dn.collapsed_slice_dims and i not in dn.operand_batching_dims]
    rank = len(batch) + len(offset_sizes)
    shape, bi, oi = [], iter(batch), iter(offset_sizes)
    for d in range(rank):
        shape.append(next(oi) if d in dn.offset_dims else next(bi))
    return ShapedArray(shape, operand.dtype, operand.weak_type)


@gather_p.def_fuse
def _gather_fuse(kb, idx, read, in_avals, out_aval, dimension_numbers, slice_sizes, mode=None,
                 fill_value=None, indices_are_sorted=False, unique_indices=False):
    dn = dimension_numbers
    op, ind = in_avals
    d = idx.dims()
    batch_coords = [d[i] for i in range(out_aval.ndim) if i not in dn.offset_dims]
    offset_coords = [d[i] for i in dn.offset_dims]
    m = _mode(mode)
    starts = {}
    ok = []
    for k, od in enumerate(dn.start_index_map):
        s = read[1](Index(kb, ind.shape, dims=batch_coords + [f"{k}u"]))
        hi = op.shape[od] - slice_sizes[od]
        si = kb.let(f"i32({s})", "i32")
        if m == "fill":
            ok.append(f"({si} >= 0 && {si} <= {hi})")
        starts[od] = kb.let(f"u32(clamp({si}, 0, {max(hi, 0)}))", "u32")
    it = iter(offset_coords)
    src = []
    bmap = dict(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    for od in range(op.ndim):
        if od in bmap:
            src.append(batch_coords[bmap[od]])
            continue
        off = "0u" if od in dn.collapsed_slice_dims else next(it)
        src.append(f"{starts[od]} + {off}" if od in starts else off)
    val = read[0](Index(kb, op.shape, dims=src))
    if m == "fill" and ok:
        fv = fill_value
        if fv is None:
            fv = np.nan if kind(op.dtype) in "fc" else (
                True if op.dtype == np.bool_ else np.iinfo(op.dtype).min if kind(op.dtype) == "i"
                else np.iinfo(op.dtype).max)
        return f"select({W.literal(fv, op.dtype)}, {val}, {' && '.join(ok)})"
    return val


def _gather_ref(operand, indices, dimension_numbers, slice_sizes, mode=None, fill_value=None,
                indices_are_sorted=False, unique_indices=False):
    dn = dimension_numbers
    out_aval = _gather_abstract(ShapedArray(operand.shape, operand.dtype),
                                ShapedArray(indices.shape, indices.dtype), dn, slice_sizes)
    out = np.empty(out_aval.shape, operand.dtype)
    m = _mode(mode)
    for oidx in np.ndindex(*out_aval.shape):
        b = [oidx[i] for i in range(len(oidx)) if i not in dn.offset_dims]
        offs = iter([oidx[i] for i in dn.offset_dims])
        bmap = dict(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
        full, good = [], True
        starts = {}
        for k, od in enumerate(dn.start_index_map):
            s = int(indices[tuple(b) + (k,)])
            hi = operand.shape[od] - slice_sizes[od]
            good &= 0 <= s <= hi
            starts[od] = min(max(s, 0), max(hi, 0))
        for od in range(operand.ndim):
            if od in bmap:
                full.append(b[bmap[od]])
                continue
            off = 0 if od in dn.collapsed_slice_dims else next(offs)
            full.append(starts.get(od, 0) + off)
        if m == "fill" and not good:
            fv = (
                fill_value
                if fill_value is not None
                else (
                    np.nan
                    if dtypes.is_inexact(operand.dtype)
                    else True
                    if operand.dtype == bool
                    else np.iinfo(operand.dtype).min
                    if operand.dtype.kind == "i"
                    else np.iinfo(operand.dtype).max
                )
            )
            out[oidx] = fv
        else:
            out[oidx] = operand[tuple(full)]
    return out


gather_p.reference = _gather_ref


def _up(t):
    return tuple(a + 1 for a in t)


def _gather_batch(args, dims, dimension_numbers, slice_sizes, **params):
    (op, ind), (do, di) = args, dims
    n = _batching.axis_size(args, dims)
    dn, ss = dimension_numbers, tuple(slice_sizes)
    if di is None:     # the operand's batch axis is one more window axis, first in the output
        op = _batching.bdim_at_front(op, do, n)
        dn = GatherDimensionNumbers((0,) + _up(dn.offset_dims), _up(dn.collapsed_slice_dims),
                                    _up(dn.start_index_map), _up(dn.operand_batching_dims),
                                    tuple(dn.start_indices_batching_dims))
        return gather_p.bind(op, ind, dimension_numbers=dn, slice_sizes=(n,) + ss, **params), 0
    ind = _batching.bdim_at_front(ind, di, n)
    if do is None:     # one more batch axis of the indices, first in the output
        dn = GatherDimensionNumbers(_up(dn.offset_dims), tuple(dn.collapsed_slice_dims),
                                    tuple(dn.start_index_map), tuple(dn.operand_batching_dims),
                                    _up(dn.start_indices_batching_dims))
        return gather_p.bind(op, ind, dimension_numbers=dn, slice_sizes=ss, **params), 0
    op = _batching.bdim_at_front(op, do, n)  # both: a batching dimension pair
    dn = GatherDimensionNumbers(
        _up(dn.offset_dims),
        _up(dn.collapsed_slice_dims),
        _up(dn.start_index_map),
        (0,) + _up(dn.operand_batching_dims),
        (0,) + _up(dn.start_indices_batching_dims),
    )
    return gather_p.bind(op, ind, dimension_numbers=dn, slice_sizes=(1,) + ss, **params), 0


gather_p.batch = _gather_batch


# --------------------------------------------------------------------------- scatter

def _scatter_abstract(operand, indices, updates, dimension_numbers, indices_are_sorted=False,
                      unique_indices=False, mode=None, update_jaxpr=None, update_consts=()):
    _same_dtypes("scatter", [operand, updates])
    if not dtypes.is_int(indices.dtype):
        raise TypeError(f"scatter indices must be of integer type, got {indices.dtype}")
    dn = dimension_numbers
    if indices.ndim == 0 or indices.shape[-1] != len(dn.scatter_dims_to_operand_dims):
        raise TypeError(
            f"scatter: the last dimension of indices (shape {indices.shape}) must equal "
            f"len(scatter_dims_to_operand_dims) = {len(dn.scatter_dims_to_operand_dims)}"
        )
    n_win = operand.ndim - len(dn.inserted_window_dims) - len(dn.operand_batching_dims)
    if len(dn.update_window_dims) != n_win or updates.ndim != indices.ndim - 1 + n_win:
        raise TypeError(f"scatter: updates shape {updates.shape} does not fit operand shape "
                        f"{operand.shape} and indices shape {indices.shape}")
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type)


_COMBINE = {
    "scatter": None,
    "scatter_add": "({a} + {b})",
    "scatter_mul": "({a} * {b})",
    "scatter_min": {
        "f": "wj_min_f({a}, {b})",
        "i": "min({a}, {b})",
        "u": "min({a}, {b})",
        "b": "({a} && {b})",
    },
    "scatter_max": {
        "f": "wj_max_f({a}, {b})",
        "i": "max({a}, {b})",
        "u": "max({a}, {b})",
        "b": "({a} || {b})",
    },
}


def _bits(expr, dtype):
    vt = W.value_type(dtype)
    if vt == "bool":
        return f"select(0u, 1u, {expr})"
    return expr if vt == "u32" else f"bitcast<u32>({expr})"


def _unbits(expr, dtype):
    vt = W.value_type(dtype)
    if vt == "bool":
        return f"({expr} != 0u)"
    return expr if vt == "u32" else f"bitcast<{vt}>({expr})"


def _scatter_kernel_for(name):
    """The kernel rule of scatter primitive ``name``: the operand is copied into the output,
    then every update element lands on its operand position (dropped when out of bounds)."""
    def kernel(ctx, operand, indices, updates, dimension_numbers, indices_are_sorted=False,
               unique_indices=False, mode=None, update_jaxpr=None, update_consts=()):
        if W.storage_type(operand.dtype) == "f16":
            raise TypeError(
                "wjax: scatter into float16 arrays is not supported (no 16-bit atomics)"
            )
        out_key = ctx.out_key(0)
        _copy_operand(ctx, operand, out_key)
        if updates.size == 0:
            return

        def position(kb):
            return _update_position(ctx, kb, operand, indices, updates, dimension_numbers, mode)

        comb = _COMBINE[name]
        if comb is None:
            _scatter_last_wins(ctx, position, operand, updates, out_key)
        else:
            _scatter_combine(ctx, position, comb, operand, updates, out_key)
    return kernel


def _copy_operand(ctx, operand, out_key):
    """Pass 1: out = operand."""
    kb = ctx.new_kb()
    v = ctx.reader(kb, 0)(Index(kb, operand.shape, flat="i"))
    o = kb.bind(out_key, operand.dtype, "read_write")
    kb.emit(f"{o}[i] = {W.store_expr(v, operand.dtype)};")
    src, grid = kb.elementwise_kernel(operand.size)
    ctx.dispatch(kb, src, grid)


def _update_position(ctx, kb, operand, indices, updates, dn, mode):
    """Emits, for update element ``i``: its flat position in the operand, the condition that
    it is in bounds, and its value.  Returns the three WGSL expressions."""
    f = ctx.fuser(kb)
    ud = Index(kb, updates.shape, flat="i").dims()
    scatter_coords = [ud[i] for i in range(updates.ndim) if i not in dn.update_window_dims]
    win = iter(ud[i] for i in dn.update_window_dims)
    starts = {}
    # window extent along each operand dim (1 for inserted dims)
    wdims = iter(dn.update_window_dims)
    extent = {od: (1 if od in dn.inserted_window_dims or od in dn.operand_batching_dims
                   else updates.shape[next(wdims)]) for od in range(operand.ndim)}
    for k, od in enumerate(dn.scatter_dims_to_operand_dims):
        s = ctx.reader(kb, 1, f)(Index(kb, indices.shape, dims=scatter_coords + [f"{k}u"]))
        if _mode(mode) == "clip":   # clamp the window start into bounds, as gather does
            s = f"clamp(i32({s}), 0, {max(operand.shape[od] - extent[od], 0)})"
        starts[od] = kb.let(f"i32({s})", "i32")
    dims, conds = [], []
    bmap = dict(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims))
    for od in range(operand.ndim):
        if od in bmap:
            dims.append(scatter_coords[bmap[od]])
            continue
        off = "0" if od in dn.inserted_window_dims else f"i32({next(win)})"
        p = kb.let(f"{starts.get(od, '0')} + {off}", "i32")
        conds.append(f"({p} >= 0 && {p} < {operand.shape[od]})")
        dims.append(f"u32(clamp({p}, 0, {max(operand.shape[od] - 1, 0)}))")
    flat = Index(kb, operand.shape, dims=dims).flat()
    ok = " && ".join(conds) if conds else "true"
    upd = ctx.reader(kb, 2, f)(Index(kb, updates.shape, flat="i"))
    return flat, ok, upd


def _scatter_last_wins(ctx, position, operand, updates, out_key):
    """Plain ``scatter``: "last update wins" like XLA on CPU.  One pass claims each position
    with atomicMax(i + 1), a second writes the updates that hold their position's claim."""
    n_out = operand.size
    claim = ctx.scratch(ShapedArray((n_out,), np.uint32))
    kb = ctx.new_kb()
    flat, ok, _ = position(kb)
    c = kb.bind(claim, np.uint32, "atomic")
    kb.emit(f"if ({ok}) {{ atomicMax(&{c}[{flat}], i + 1u); }}")
    src, grid = kb.elementwise_kernel(updates.size)
    _zero_then(ctx, claim, n_out)
    ctx.dispatch(kb, src, grid)
    kb = ctx.new_kb()
    flat, ok, upd = position(kb)
    c = kb.bind(claim, np.uint32, "read")
    o = kb.bind(out_key, operand.dtype, "read_write")
    kb.emit(
        f"if ({ok} && {c}[{flat}] == i + 1u) {{ {o}[{flat}] "
        f"= {W.store_expr(upd, operand.dtype)}; }}"
    )
    src, grid = kb.elementwise_kernel(updates.size)
    ctx.dispatch(kb, src, grid)


def _cas_fold(o, word, upd, tmpl, dtype):
    """WGSL folding ``upd`` into 32-bit word ``word`` of atomic buffer ``o`` by a
    compare-exchange loop (``tmpl`` over {a} the old value, {b} the update)."""
    newv = W.wrap_narrow(tmpl.format(a=_unbits("old", dtype), b="u"), dtype)
    return (f"  {{\n    let u = {upd};\n    loop {{\n      let old = atomicLoad(&{o}[{word}]);\n"
            f"      let nv = {_bits(newv, dtype)};\n      if (atomicCompareExchangeWeak(&{o}["
            f"{word}], old, nv).exchanged) {{ break; }}\n    }}\n  }}")


def _scatter_complex(ctx, position, name, operand, updates, out_key):
    """complex64 scatter_add: the two f32 words of an element fold independently.
    scatter_mul: the product at each position in polar form -- magnitudes multiply and angles
    add, each by a 32-bit compare-exchange into a scratch buffer -- applied by a last pass."""
    f32 = np.float32
    kb = ctx.new_kb()
    flat, ok, upd = position(kb)
    if name == "scatter_add":
        o = kb.bind(out_key, operand.dtype, "atomic")
        u = kb.let(upd, "vec2<f32>")
        kb.emit(f"if ({ok}) {{\n{_cas_fold(o, f'2u * {flat}', f'{u}.x', '({a} + {b})', f32)}\n"
                f"{_cas_fold(o, f'2u * {flat} + 1u', f'{u}.y', '({a} + {b})', f32)}\n}}")
        src, grid = kb.elementwise_kernel(updates.size)
        ctx.dispatch(kb, src, grid)
        return
    n = operand.size
    mag = ctx.scratch(ShapedArray((n,), f32))
    ang = ctx.scratch(ShapedArray((n,), f32))
    init = ctx.new_kb()
    mb, ab = init.bind(mag, f32, "read_write"), init.bind(ang, f32, "read_write")
    init.emit(f"{mb}[i] = 1.0;\n  {ab}[i] = 0.0;")
    ctx.dispatch(init, *init.elementwise_kernel(n))
    kb.use_helper("wj_cabs")
    kb.use_helper("wj_atan2")
    m, a = kb.bind(mag, f32, "atomic"), kb.bind(ang, f32, "atomic")
    u = kb.let(upd, "vec2<f32>")
    kb.emit(f"if ({ok}) {{\n{_cas_fold(m, flat, f'wj_cabs({u})', '({a} * {b})', f32)}\n"
            f"{_cas_fold(a, flat, f'wj_atan2({u}.y, {u}.x)', '({a} + {b})', f32)}\n}}")
    ctx.dispatch(kb, *kb.elementwise_kernel(updates.size))
    fin = ctx.new_kb()
    fin.use_helper("wj_cmul")
    fin.use_helper("wj_sin")
    fin.use_helper("wj_cos")
    mb, ab = fin.bind(mag, f32, "read"), fin.bind(ang, f32, "read")
    o = fin.bind(out_key, operand.dtype, "read_write")
    fin.emit(f"if ({ab}[i] != 0.0 || {mb}[i] != 1.0) {{ {o}[i] = wj_cmul({o}[i], {mb}[i] * "
             f"vec2<f32>(wj_cos({ab}[i]), wj_sin({ab}[i]))); }}")
    ctx.dispatch(fin, *fin.elementwise_kernel(n))


# the order key of one f32 part for complex scatter_max (a u32, larger wins; -0 as +0): NaN
# tops every value in an update and is below all in the operand (XLA folds max(old, update) =
# old > update ? old : update, so a NaN part never keeps the old value and always yields)
W.helper("wj_ckey", """
fn wj_ckey(v: f32, upd: bool, neg: bool) -> u32 {
  if (wj_isnan(v)) { return select(0u, 0xffffffffu, upd); }
  let b = bitcast<u32>(select(v, 0.0, v == 0.0));
  let k = select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
  return select(k, 0xffffffffu - k, neg);
}""")


def _scatter_complex_extremal(ctx, position, name, operand, updates, out_key):
    """complex64 scatter_max/min, lexicographic as XLA's complex max/min: the largest real-part
    key at each position (atomicMax), then the largest imaginary-part key among the values with
    that real part, then the last update holding both claims its position and is written
    (XLA: a tie goes to the update).  ``wj_ckey`` orders a part (reversed for min)."""
    u32, n = np.uint32, operand.size
    neg = "true" if name == "scatter_min" else "false"
    re_k, im_k, claim = (ctx.scratch(ShapedArray((n,), u32)) for _ in range(3))

    def key(kb, v, part, upd):
        kb.use_helper("wj_isnan")
        kb.use_helper("wj_ckey")
        return f"wj_ckey({v}.{part}, {upd}, {neg})"

    init = ctx.new_kb()
    o = init.bind(out_key, operand.dtype, "read")
    r, c = init.bind(re_k, u32, "read_write"), init.bind(claim, u32, "read_write")
    init.emit(f"{r}[i] = {key(init, f'{o}[i]', 'x', 'false')};\n  {c}[i] = 0u;")
    ctx.dispatch(init, *init.elementwise_kernel(n))

    def per_update(body, binds):
        kb = ctx.new_kb()
        flat, ok, upd = position(kb)
        names = [kb.bind(k, u32, acc) for k, acc in binds]
        u = kb.let(upd, "vec2<f32>")
        kb.emit(body(kb, flat, ok, u, *names))
        ctx.dispatch(kb, *kb.elementwise_kernel(updates.size))

    per_update(lambda kb, flat, ok, u, r: f"if ({ok}) {{ atomicMax(&{r}[{flat}], "
               f"{key(kb, u, 'x', 'true')}); }}", [(re_k, "atomic")])
    mid = ctx.new_kb()
    o = mid.bind(out_key, operand.dtype, "read")
    r, m = mid.bind(re_k, u32, "read"), mid.bind(im_k, u32, "read_write")
    mid.emit(f"{m}[i] = select(0u, {key(mid, f'{o}[i]', 'y', 'false')}, "
             f"{key(mid, f'{o}[i]', 'x', 'false')} == {r}[i]);")
    ctx.dispatch(mid, *mid.elementwise_kernel(n))
    per_update(lambda kb, flat, ok, u, r, m: f"if ({ok} && {key(kb, u, 'x', 'true')} == "
               f"{r}[{flat}]) {{ atomicMax(&{m}[{flat}], {key(kb, u, 'y', 'true')}); }}",
               [(re_k, "read"), (im_k, "atomic")])
    per_update(lambda kb, flat, ok, u, r, m, c: f"if ({ok} && {key(kb, u, 'x', 'true')} == "
               f"{r}[{flat}] && {key(kb, u, 'y', 'true')} == {m}[{flat}]) {{ "
               f"atomicMax(&{c}[{flat}], i + 1u); }}",
               [(re_k, "read"), (im_k, "read"), (claim, "atomic")])
    kb = ctx.new_kb()
    flat, ok, upd = position(kb)
    c = kb.bind(claim, u32, "read")
    o = kb.bind(out_key, operand.dtype, "read_write")
    kb.emit(f"if ({ok} && {c}[{flat}] == i + 1u) {{ {o}[{flat}] = {upd}; }}")
    ctx.dispatch(kb, *kb.elementwise_kernel(updates.size))


def _scatter_combine(ctx, position, comb, operand, updates, out_key):
    """scatter_add/mul/min/max: each update folds into its position with a compare-exchange
    loop on the 32-bit word (``comb`` is the fold's WGSL template, per dtype kind or not)."""
    if W.is_complex(operand.dtype):
        for name in ("scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
            if comb == _COMBINE[name]:
                break
        if name in ("scatter_min", "scatter_max"):
            return _scatter_complex_extremal(ctx, position, name, operand, updates, out_key)
        return _scatter_complex(ctx, position, name, operand, updates, out_key)
    kb = ctx.new_kb()
    flat, ok, upd = position(kb)
    o = kb.bind(out_key, operand.dtype, "atomic")
    k = kind(operand.dtype)
    tmpl = comb[k] if isinstance(comb, dict) else comb
    if "wj_" in tmpl:
        for helper in ("wj_isnan", "wj_max_f", "wj_min_f"):
            kb.use_helper(helper)
    newv = W.wrap_narrow(tmpl.format(a=_unbits("old", operand.dtype), b="u"), operand.dtype)
    kb.emit(
        f"if ({ok}) {{\n    let u = {upd};\n    loop {{\n      let old = "
        f"atomicLoad(&{o}[{flat}]);\n      let nv = {_bits(newv, operand.dtype)};\n      if "
        f"(atomicCompareExchangeWeak(&{o}[{flat}], old, nv).exchanged) {{ break; }}\n    }}\n "
        f" }}"
    )
    src, grid = kb.elementwise_kernel(updates.size)
    ctx.dispatch(kb, src, grid)


def _zero_then(ctx, key, n):
    kb = ctx.new_kb()
    z = kb.bind(key, np.uint32, "read_write")
    kb.emit(f"{z}[i] = 0u;")
    src, grid = kb.elementwise_kernel(n)
    ctx.dispatch(kb, src, grid)


def _scatter_ref_for(name):
    def ref(
        operand,
        indices,
        updates,
        dimension_numbers,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        update_jaxpr=None,
        update_consts=(),
    ):
        dn = dimension_numbers
        out = operand.copy()
        bmap = dict(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims))
        for uidx in np.ndindex(*updates.shape):
            sc = [uidx[i] for i in range(updates.ndim) if i not in dn.update_window_dims]
            win = iter(uidx[i] for i in dn.update_window_dims)
            starts = {
                od: int(indices[tuple(sc) + (k,)])
                for k, od in enumerate(dn.scatter_dims_to_operand_dims)
            }
            if _mode(mode) == "clip":
                wd = iter(dn.update_window_dims)
                ext = {od: (1 if od in dn.inserted_window_dims or od in dn.operand_batching_dims
                            else updates.shape[next(wd)]) for od in range(operand.ndim)}
                starts = {
                    od: min(max(v, 0), max(operand.shape[od] - ext[od], 0))
                    for od, v in starts.items()
                }
            pos, ok = [], True
            for od in range(operand.ndim):
                if od in bmap:
                    pos.append(sc[bmap[od]])
                    continue
                p = starts.get(od, 0) + (0 if od in dn.inserted_window_dims else next(win))
                ok &= 0 <= p < operand.shape[od]
                pos.append(p)
            if not ok:
                continue
            p, u = tuple(pos), updates[uidx]
            if name == "scatter":
                out[p] = u
            elif name == "scatter_add":
                out[p] = out[p] + u
            elif name == "scatter_mul":
                out[p] = out[p] * u
            elif out.dtype.kind == "c":   # XLA's complex max/min: old if it wins, else u
                o = out[p]
                a, b = (o, u) if name == "scatter_max" else (u, o)
                wins = a.real > b.real or (a.real == b.real and a.imag > b.imag)
                out[p] = o if wins else u
            elif name == "scatter_min":
                out[p] = np.minimum(out[p], u)
            else:
                out[p] = np.maximum(out[p], u)
        return out
    return ref


def _scatter_batch_for(p):
    """vmap: operand, indices and updates all get the batch axis first, as a batching dimension."""
    def rule(args, dims, dimension_numbers, **params):
        n = _batching.axis_size(args, dims)
        op, ind, upd = [_batching.bdim_at_front(x, d, n) for x, d in zip(args, dims)]
        dn = dimension_numbers
        dn = ScatterDimensionNumbers(
            _up(dn.update_window_dims),
            _up(dn.inserted_window_dims),
            _up(dn.scatter_dims_to_operand_dims),
            (0,) + _up(dn.operand_batching_dims),
            (0,) + _up(dn.scatter_indices_batching_dims),
        )
        return p.bind(op, ind, upd, dimension_numbers=dn, **params), 0
    return rule


def _make_scatter(name):
    p = Primitive(name)
    p.fuse_inputs = (0, 1, 2)
    p.abstract_eval = _scatter_abstract
    p.kernel = _scatter_kernel_for(name)
    p.reference = _scatter_ref_for(name)
    p.batch = _scatter_batch_for(p)   # vmap
    return p


scatter_p = _make_scatter("scatter")
scatter_add_p = _make_scatter("scatter_add")
scatter_mul_p = _make_scatter("scatter_mul")
scatter_min_p = _make_scatter("scatter_min")
scatter_max_p = _make_scatter("scatter_max")


# --------------------------------------------------------------------------- autodiff


def _scatter_dn_of(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        update_window_dims=tuple(dn.offset_dims),
        inserted_window_dims=tuple(dn.collapsed_slice_dims),
        scatter_dims_to_operand_dims=tuple(dn.start_index_map),
        operand_batching_dims=tuple(dn.operand_batching_dims),
        scatter_indices_batching_dims=tuple(dn.start_indices_batching_dims),
    )


def _gather_dn_of(dn: ScatterDimensionNumbers, operand_shape, updates_shape):
    gdn = GatherDimensionNumbers(
        offset_dims=tuple(dn.update_window_dims),
        collapsed_slice_dims=tuple(dn.inserted_window_dims),
        start_index_map=tuple(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=tuple(dn.operand_batching_dims),
        start_indices_batching_dims=tuple(dn.scatter_indices_batching_dims),
    )
    sizes, pos = [], 0
    for i in range(len(operand_shape)):
        if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(updates_shape[dn.update_window_dims[pos]])
            pos += 1
    return gdn, tuple(sizes)


def _gather_at(x, indices, dn: ScatterDimensionNumbers, updates_shape):
    """The values of ``x`` at the positions a scatter with ``dn`` writes (0 where dropped)."""
    xa = _ad.aval_of(x)
    gdn, sizes = _gather_dn_of(dn, xa.shape, updates_shape)
    return gather_p.bind(x, indices, dimension_numbers=gdn, slice_sizes=sizes, mode="fill",
                         fill_value=0, indices_are_sorted=False, unique_indices=False)


def _window_starts(indices, op_shape, start_index_map, slice_sizes, mode):
    """Gather's window starts made explicit for a scatter (which drops out-of-bounds elements):
    clamped for 'clip'; for 'fill' an out-of-bounds window is moved wholly out of bounds."""
    ia = _ad.aval_of(indices)
    dt = ia.dtype
    hi = np.asarray([op_shape[od] - slice_sizes[od] for od in start_index_map], dt)
    last = (ia.ndim - 1,)
    hi_b = ops.broadcast_in_dim(hi, ia.shape, last)
    if mode == "clip":
        return ops.clamp(np.zeros((), dt), indices, hi_b)
    ok = ops.bitwise_and(ops.ge(indices, np.zeros((), dt)), ops.le(indices, hi_b))
    ok = ops.broadcast_in_dim(ops.reduce_and(ok, last), ia.shape, tuple(range(ia.ndim - 1)))
    big = ops.broadcast_in_dim(
        np.asarray([op_shape[od] for od in start_index_map], dt), ia.shape, last
    )
    return ops.select(ok, indices, big)


def _gather_jvp(primals, tangents, **params):
    x, idx = primals
    ans = gather_p.bind(x, idx, **params)
    if isinstance(tangents[0], _ad.Zero):
        return ans, _ad.Zero(_ad.aval_of(ans))
    tp = dict(params)
    if _mode(params.get("mode")) == "fill":
        tp["fill_value"] = 0
    return ans, gather_p.bind(tangents[0], idx, **tp)


def _gather_transpose(
    ct,
    operand,
    indices,
    dimension_numbers,
    slice_sizes,
    mode=None,
    fill_value=None,
    indices_are_sorted=False,
    unique_indices=False,
):
    if _ad.is_undefined_primal(indices):
        raise TypeError("gather is not linear in its indices")
    a = operand.aval
    dn = dimension_numbers
    idx = _window_starts(indices, a.shape, dn.start_index_map, slice_sizes, _mode(mode))
    out = scatter_add_p.bind(_ad.zeros(a), idx, ct, dimension_numbers=_scatter_dn_of(dn),
                             indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                             mode="fill", update_jaxpr=None, update_consts=())
    return [out, None]


gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose


def _scatter_linear_jvp(prim):
    """scatter_add, and scatter (its 'last update wins' choice is the same for the tangents)."""
    def rule(primals, tangents, **params):
        x, idx, u = primals
        tx, _, tu = tangents
        ans = prim.bind(x, idx, u, **params)
        if isinstance(tx, _ad.Zero) and isinstance(tu, _ad.Zero):
            return ans, _ad.Zero(_ad.aval_of(ans))
        return ans, prim.bind(_ad.instantiate(tx), idx, _ad.instantiate(tu), **params)
    return rule


def _scatter_add_transpose(ct, x, indices, u, dimension_numbers, **params):
    t_x = ct if _ad.is_undefined_primal(x) else None
    t_u = None
    if _ad.is_undefined_primal(u):
        t_u = _gather_at(ct, indices, dimension_numbers, u.aval.shape)
    return [t_x, None, t_u]


def _scatter_transpose(ct, x, indices, u, dimension_numbers, **params):
    ua = _ad.aval_of(u)
    t_x = t_u = None
    if _ad.is_undefined_primal(x):
        t_x = scatter_p.bind(
            ct, indices, _ad.zeros(ua), dimension_numbers=dimension_numbers, **params
        )
    if _ad.is_undefined_primal(u):
        # only the update that won a position receives its cotangent
        ids = ops.add(ops.reshape(ops.iota(np.int32, ua.size), ua.shape), np.ones((), np.int32))
        winners = scatter_p.bind(
            _ad.zeros(ShapedArray(_ad.aval_of(ct).shape, np.int32)),
            indices,
            ids,
            dimension_numbers=dimension_numbers,
            **params,
        )
        won = ops.eq(_gather_at(winners, indices, dimension_numbers, ua.shape), ids)
        t_u = ops.select(
            won, _gather_at(ct, indices, dimension_numbers, ua.shape), np.zeros((), ua.dtype)
        )
    return [t_x, None, t_u]


def _scatter_mul_jvp(primals, tangents, **params):
    x, idx, u = primals
    tx, _, tu = tangents
    ans = scatter_mul_p.bind(x, idx, u, **params)
    t = _ad.Zero(_ad.aval_of(ans))
    if not isinstance(tx, _ad.Zero):
        t = scatter_mul_p.bind(tx, idx, u, **params)
    if not isinstance(tu, _ad.Zero):
        zeros = _ad.zeros(_ad.aval_of(x))
        dn = params["dimension_numbers"]
        rest = {k: v for k, v in params.items() if k != "dimension_numbers"}
        if params.get("unique_indices"):
            tu_t = ops.mul(x, scatter_add_p.bind(zeros, idx, tu, dimension_numbers=dn, **rest))
        else:  # out * sum_i tu_i / u_i (exact where the updates are nonzero)
            tu_t = ops.mul(
                ans, scatter_add_p.bind(zeros, idx, ops.div(tu, u), dimension_numbers=dn, **rest)
            )
        t = _ad.add_tangents(t, tu_t)
    return ans, t


def _scatter_mul_transpose(ct, x, indices, u, **params):
    if _ad.is_undefined_primal(u):
        raise TypeError("scatter_mul is not linear in its updates")
    return [scatter_mul_p.bind(ct, indices, u, **params), None, None]


def _scatter_extremal_jvp(prim):
    """scatter_min/max: the mean of the tangents of the values that attain each result."""
    def rule(primals, tangents, **params):
        x, idx, u = primals
        tx, _, tu = tangents
        ans = prim.bind(x, idx, u, **params)
        xa, ua = _ad.aval_of(x), _ad.aval_of(u)
        dn = params["dimension_numbers"]
        rest = {k: v for k, v in params.items() if k != "dimension_numbers"}
        tx, tu = _ad.instantiate(tx), _ad.instantiate(tu)
        dt = xa.dtype
        zero = np.zeros((), dt)
        x_wins = ops.eq(x, ans)
        u_wins = ops.eq(u, _gather_at(ans, idx, dn, ua.shape))
        zeros = _ad.zeros(xa)
        num = ops.add(ops.convert_element_type(x_wins, dt),
                       scatter_add_p.bind(zeros, idx, ops.convert_element_type(u_wins, dt),
                                          dimension_numbers=dn, **rest))
        tsum = ops.add(ops.select(x_wins, tx, zero),
                        scatter_add_p.bind(zeros, idx, ops.select(u_wins, tu, zero),
                                           dimension_numbers=dn, **rest))
        return ans, ops.div(tsum, num)
    return rule


scatter_add_p.jvp = _scatter_linear_jvp(scatter_add_p)
scatter_add_p.transpose = _scatter_add_transpose
scatter_p.jvp = _scatter_linear_jvp(scatter_p)
scatter_p.transpose = _scatter_transpose
scatter_mul_p.jvp = _scatter_mul_jvp
scatter_mul_p.transpose = _scatter_mul_transpose
scatter_min_p.jvp = _scatter_extremal_jvp(scatter_min_p)
scatter_max_p.jvp = _scatter_extremal_jvp(scatter_max_p)
