"""Shape and view primitives: all fusable, lowered to index math (no copies).

Each ``fuse`` rule maps an output Index to operand Index(es): a broadcast
drops or zeroes coordinates, a reshape reinterprets the flat offset, a
transpose permutes coordinates, a slice scales and shifts them, and so on.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..backend.wgsl import Index
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from ..transforms import row_split as _rows
from .elementwise import _same_dtypes
from ..transforms import ad as _ad
from ..core import ops
from .elementwise import convert_element_type_p, convert_expr, kind, select_n_p
from .indexing import GatherDimensionNumbers, ScatterDimensionNumbers, gather_p, scatter_p


def _u(x) -> str:
    return f"{int(x)}u"


# --------------------------------------------------------------------------- broadcast_in_dim

broadcast_in_dim_p = Primitive("broadcast_in_dim")
broadcast_in_dim_p.view = True


def _bcast_pp(params, eqn):
    """As JAX prints it: no ``shape``/``sharding`` (the result's type says them), no empty
    ``broadcast_dimensions``."""
    return sorted((k, v) for k, v in params.items()
                  if k not in ("shape", "sharding") and not k.startswith("_")
                  and not (k == "broadcast_dimensions" and not v))


broadcast_in_dim_p.pp_params = _bcast_pp


@broadcast_in_dim_p.def_abstract_eval
def _bcast_abstract(x, shape, broadcast_dimensions, sharding=None):
    shape, bd = tuple(shape), tuple(broadcast_dimensions)
    if any(d < 0 for d in shape):
        raise TypeError(
            f"broadcast_in_dim shape must have every element be nonnegative, got {shape}."
        )
    if len(bd) != x.ndim:
        raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to operand "
                        f"ndim; got broadcast_dimensions {bd} for operand ndim {x.ndim}.")
    for i, d in enumerate(bd):
        if not (0 <= d < len(shape)) or x.shape[i] not in (1, shape[d]):
            raise TypeError(
                f"broadcast_in_dim operand dimension sizes must either be 1, or be equal "
                f"to their corresponding dimensions in the target broadcast shape; got "
                f"operand of shape {x.shape}, target broadcast shape {shape}, "
                f"broadcast_dimensions {bd}"
            )
    if list(bd) != sorted(bd):
        raise TypeError(
            f"broadcast_in_dim broadcast_dimensions must be strictly increasing; got {bd}"
        )
    return ShapedArray(shape, x.dtype, x.weak_type)


@broadcast_in_dim_p.def_fuse
def _bcast_fuse(kb, idx, read, in_avals, out_aval, shape, broadcast_dimensions, sharding=None):
    x = in_avals[0]
    if x.shape == tuple(shape):
        return read[0](idx)
    if x.size == 1:
        return read[0](Index(kb, x.shape, flat="0u"))
    d = idx.dims()
    return read[0](Index(kb, x.shape, dims=[d[bd] if x.shape[i] != 1 else "0u"
                                             for i, bd in enumerate(broadcast_dimensions)]))


def _bcast_ref(x, shape, broadcast_dimensions, sharding=None):
    expanded = np.reshape(
        x,
        [
            x.shape[broadcast_dimensions.index(i)] if i in broadcast_dimensions else 1
            for i in range(len(shape))
        ],
    )
    return np.broadcast_to(expanded, shape).copy()


broadcast_in_dim_p.reference = _bcast_ref

# autodiff


def _bcast_transpose(ct, x, shape, broadcast_dimensions, sharding=None):
    a = x.aval
    bd = tuple(broadcast_dimensions)
    unit = [bd[i] for i, s in enumerate(a.shape) if s == 1 and shape[bd[i]] != 1]
    dims = sorted([d for d in range(len(shape)) if d not in bd] + unit)
    r = ops.reduce_sum(ct, dims) if dims else ct
    return [ops.reshape(r, a.shape)]


_ad.deflinear(broadcast_in_dim_p, _bcast_transpose)


def _bcast_batch(args, dims, shape, broadcast_dimensions, sharding=None):
    n = _batching.axis_size(args, dims)
    x = _batching.bdim_at_front(args[0], dims[0], n)
    return broadcast_in_dim_p.bind(
        x,
        shape=(n,) + tuple(shape),
        sharding=sharding,
        broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions),
    ), 0


broadcast_in_dim_p.batch = _bcast_batch


def _bcast_axes(in_avals, out_avals, shape, broadcast_dimensions, sharding=None):
    """Operand axis i is result axis ``broadcast_dimensions[i]`` (unless broadcast from size
    1); along every other result axis the result is the same everywhere."""
    x, out = in_avals[0], []
    mapped = {}
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] == shape[d]:
            mapped[d] = i
    for d in range(len(shape)):
        out.append((0, mapped[d], 0, d) if d in mapped else (None, None, 0, d))
    return out


broadcast_in_dim_p.axis_map = _bcast_axes
broadcast_in_dim_p.with_shapes = lambda params, in_avals, out_avals: dict(
    params, shape=tuple(out_avals[0].shape))

# --------------------------------------------------------------------------- reshape

reshape_p = Primitive("reshape")
reshape_p.view = True
reshape_p.shares_storage = True    # a contiguous view: the output aliases the operand


@reshape_p.def_abstract_eval
def _reshape_abstract(x, new_sizes, dimensions=None, sharding=None):
    new_sizes = tuple(new_sizes)
    if any(d < 0 for d in new_sizes):
        raise TypeError(f"reshape new_sizes must all be positive, got {new_sizes}.")
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:   # JAX: a ValueError (from lowering)
        raise ValueError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for "
                         f"shape {x.shape}.")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


@reshape_p.def_fuse
def _reshape_fuse(kb, idx, read, in_avals, out_aval, new_sizes, dimensions=None, sharding=None):
    if tuple(in_avals[0].shape) == tuple(out_aval.shape):     # the same position, coordinates
        return read[0](idx)                                    # and all
    return read[0](Index(kb, in_avals[0].shape, flat=idx.flat()))


reshape_p.reference = lambda x, new_sizes, dimensions=None, sharding=None: np.reshape(x, new_sizes)
_ad.deflinear(reshape_p, lambda ct, x, new_sizes, dimensions=None, sharding=None:
              [ops.reshape(ct, x.aval.shape)])


def _reshape_batch(args, dims, new_sizes, dimensions=None, sharding=None):
    n = _batching.axis_size(args, dims)
    x = _batching.bdim_at_front(args[0], dims[0], n)
    return reshape_p.bind(
        x, new_sizes=(n,) + tuple(new_sizes), dimensions=None, sharding=sharding
    ), 0


reshape_p.batch = _reshape_batch


def _reshape_axes(in_avals, out_avals, new_sizes, dimensions=None, sharding=None):
    """The leading axes up to the first that differs and the trailing ones from the last that
    differs keep their positions (a row-major reshape regroups only the axes between; one
    that transposes first, ``dimensions``, is taken as mixing them all)."""
    if dimensions is not None:
        return []
    a, b = in_avals[0].shape, out_avals[0].shape
    out, i = [], 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        out.append((0, i, 0, i))
        i += 1
    j = 1
    while j <= min(len(a), len(b)) - i and a[-j] == b[-j]:
        out.append((0, len(a) - j, 0, len(b) - j))
        j += 1
    return out


reshape_p.axis_map = _reshape_axes
reshape_p.with_shapes = lambda params, in_avals, out_avals: dict(
    params, new_sizes=tuple(out_avals[0].shape), dimensions=None)

squeeze_p = Primitive("squeeze")
squeeze_p.view = True
squeeze_p.shares_storage = True    # a contiguous view: the output aliases the operand


@squeeze_p.def_abstract_eval
def _squeeze_abstract(x, dimensions):
    dims = tuple(sorted(d % max(x.ndim, 1) for d in dimensions))
    for d in dims:
        if x.shape[d] != 1:
            raise ValueError(
                f"cannot select an axis to squeeze out which has size not equal to one, "
                f"got shape={x.shape} and dimensions={tuple(dimensions)}"
            )
    return ShapedArray(
        tuple(s for i, s in enumerate(x.shape) if i not in dims), x.dtype, x.weak_type
    )


@squeeze_p.def_fuse
def _squeeze_fuse(kb, idx, read, in_avals, out_aval, dimensions):
    return read[0](Index(kb, in_avals[0].shape, flat=idx.flat()))


squeeze_p.reference = lambda x, dimensions: np.squeeze(x, tuple(dimensions))
_ad.deflinear(squeeze_p, lambda ct, x, dimensions: [ops.reshape(ct, x.aval.shape)])


def _squeeze_batch(args, dims, dimensions):
    (x,), (d,) = args, dims
    dd = tuple(sorted(k % max(_batching.aval_of(x).ndim - 1, 1) for k in dimensions))
    return squeeze_p.bind(x, dimensions=_batching.shift_axes(dd, d)), d - sum(k < d for k in dd)


squeeze_p.batch = _squeeze_batch
squeeze_p.axis_map = lambda in_avals, out_avals, dimensions: [
    (0, a, 0, b) for a, b in _rows.kept_axes(in_avals[0].ndim, dimensions)]

expand_dims_p = Primitive("expand_dims")
expand_dims_p.view = True
expand_dims_p.shares_storage = True    # a contiguous view: the output aliases the operand


@expand_dims_p.def_abstract_eval
def _expand_abstract(x, dimensions):
    shape = list(x.shape)
    nd = x.ndim + len(dimensions)
    for d in sorted(d % nd for d in dimensions):
        shape.insert(d, 1)
    return ShapedArray(shape, x.dtype, x.weak_type)


@expand_dims_p.def_fuse
def _expand_fuse(kb, idx, read, in_avals, out_aval, dimensions):
    return read[0](Index(kb, in_avals[0].shape, flat=idx.flat()))


expand_dims_p.reference = lambda x, dimensions: np.expand_dims(x, tuple(dimensions))
# JAX has no expand_dims primitive: its jaxprs show the broadcast_in_dim it is
expand_dims_p.pp_name = "broadcast_in_dim"
expand_dims_p.pp_params = lambda params, eqn: _bcast_pp({"broadcast_dimensions": tuple(
    d for d in range(eqn.outvars[0].aval.ndim) if d not in params["dimensions"])}, eqn)
_ad.deflinear(expand_dims_p, lambda ct, x, dimensions: [ops.reshape(ct, x.aval.shape)])


def _expand_batch(args, dims, dimensions):
    n = _batching.axis_size(args, dims)
    x = _batching.bdim_at_front(args[0], dims[0], n)
    nd = _batching.aval_of(x).ndim - 1 + len(dimensions)
    return expand_dims_p.bind(x, dimensions=tuple(k % nd + 1 for k in dimensions)), 0


expand_dims_p.batch = _expand_batch
expand_dims_p.axis_map = lambda in_avals, out_avals, dimensions: [
    (0, a, 0, b) for b, a in _rows.kept_axes(out_avals[0].ndim, dimensions)] + [
    (None, None, 0, d % out_avals[0].ndim) for d in dimensions]

# --------------------------------------------------------------------------- transpose

transpose_p = Primitive("transpose")
transpose_p.view = True


@transpose_p.def_abstract_eval
def _transpose_abstract(x, permutation):
    perm = tuple(permutation)
    if sorted(perm) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {perm} for operand shape {x.shape}.")
    return ShapedArray([x.shape[p] for p in perm], x.dtype, x.weak_type)


@transpose_p.def_fuse
def _transpose_fuse(kb, idx, read, in_avals, out_aval, permutation):
    d = idx.dims()
    src = [None] * len(permutation)
    for o, p in enumerate(permutation):
        src[p] = d[o]
    return read[0](Index(kb, in_avals[0].shape, dims=src))


transpose_p.reference = lambda x, permutation: np.transpose(x, permutation)
_ad.deflinear(
    transpose_p,
    lambda ct, x, permutation: [ops.transpose(ct, tuple(int(i) for i in np.argsort(permutation)))],
)


def _transpose_batch(args, dims, permutation):
    n = _batching.axis_size(args, dims)
    x = _batching.bdim_at_front(args[0], dims[0], n)
    return transpose_p.bind(x, permutation=(0,) + tuple(p + 1 for p in permutation)), 0


transpose_p.batch = _transpose_batch
transpose_p.axis_map = lambda in_avals, out_avals, permutation: [
    (0, a, 0, b) for b, a in enumerate(permutation)]

# --------------------------------------------------------------------------- slice, rev

slice_p = Primitive("slice")
slice_p.view = True


@slice_p.def_abstract_eval
def _slice_abstract(x, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    if not (len(start_indices) == len(limit_indices) == len(strides) == x.ndim):
        raise TypeError(f"slice start_indices, limit_indices and strides must have length "
                        f"{x.ndim} for operand shape {x.shape}")
    shape = []
    for s, l, st, n in zip(start_indices, limit_indices, strides, x.shape):
        if not (0 <= s <= l <= n) or st < 1:
            raise TypeError(f"slice indices out of bounds: start_indices {tuple(start_indices)}, "
                            f"limit_indices {tuple(limit_indices)}, strides {tuple(strides)} for "
                            f"operand shape {x.shape}")
        shape.append(max(0, -(-(l - s) // st)))
    return ShapedArray(shape, x.dtype, x.weak_type)


@slice_p.def_fuse
def _slice_fuse(kb, idx, read, in_avals, out_aval, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * len(start_indices)
    d = idx.dims()
    src = []
    for di, s, st in zip(d, start_indices, strides):
        e = di if st == 1 else f"{di} * {_u(st)}"
        src.append(e if s == 0 else f"{e} + {_u(s)}")
    return read[0](Index(kb, in_avals[0].shape, dims=src))


slice_p.reference = lambda x, start_indices, limit_indices, strides=None: x[
    tuple(
        slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides or (1,) * x.ndim)
    )
]

rev_p = Primitive("rev")
rev_p.view = True


@rev_p.def_abstract_eval
def _rev_abstract(x, dimensions):
    if any(not 0 <= d < x.ndim for d in dimensions):
        raise TypeError(f"rev dimensions {tuple(dimensions)} out of range for shape {x.shape}")
    return x


@rev_p.def_fuse
def _rev_fuse(kb, idx, read, in_avals, out_aval, dimensions):
    d = list(idx.dims())
    for k in dimensions:
        d[k] = f"({_u(in_avals[0].shape[k] - 1)} - {d[k]})"
    return read[0](Index(kb, in_avals[0].shape, dims=d))


rev_p.reference = lambda x, dimensions: np.flip(x, tuple(dimensions)) if dimensions else x


def _slice_transpose(ct, x, start_indices, limit_indices, strides=None):
    shape = x.aval.shape
    strides = strides or (1,) * len(shape)
    ct_shape = _ad.aval_of(ct).shape
    real_limits = [
        s + (0 if n == 0 else (n - 1) * st + 1)
        for s, n, st in zip(start_indices, ct_shape, strides)
    ]
    cfg = [(s, d - rl, st - 1) for s, d, rl, st in zip(start_indices, shape, real_limits, strides)]
    return [ops.pad(ct, np.zeros((), x.aval.dtype), cfg)]


_ad.deflinear(slice_p, _slice_transpose)
_ad.deflinear(rev_p, lambda ct, x, dimensions: [ops.rev(ct, dimensions)])


def _slice_batch(args, dims, start_indices, limit_indices, strides=None):
    (x,), (d,) = args, dims
    n = _batching.axis_size(args, dims)
    st, lim = list(start_indices), list(limit_indices)
    st.insert(d, 0)
    lim.insert(d, n)
    if strides is not None:
        strides = list(strides)
        strides.insert(d, 1)
        strides = tuple(strides)
    return slice_p.bind(x, start_indices=tuple(st), limit_indices=tuple(lim), strides=strides), d


slice_p.batch = _slice_batch


def _whole_axes(in_avals, out_avals, start_indices, limit_indices, strides=None):
    """The axes a slice keeps whole."""
    strides = strides or (1,) * len(start_indices)
    return [(0, d, 0, d) for d, (s, l, st, n) in enumerate(
        zip(start_indices, limit_indices, strides, in_avals[0].shape)) if (s, l, st) == (0, n, 1)]


def _slice_shapes(params, in_avals, out_avals):
    """A whole axis of another length stays whole (the others keep their limits)."""
    return dict(params, limit_indices=tuple(
        min(lim, n) for lim, n in zip(params["limit_indices"], in_avals[0].shape)))


slice_p.axis_map = _whole_axes
slice_p.with_shapes = _slice_shapes
rev_p.batch = lambda args, dims, dimensions: (
    rev_p.bind(args[0], dimensions=_batching.shift_axes(dimensions, dims[0])), dims[0])
rev_p.axis_map = lambda in_avals, out_avals, dimensions: [
    (0, d, 0, d) for d in range(in_avals[0].ndim) if d not in dimensions]

# --------------------------------------------------------------------------- iota

iota_p = Primitive("iota")


@iota_p.def_abstract_eval
def _iota_abstract(dtype, shape, dimension, sharding=None):
    if any(d < 0 for d in shape):
        raise TypeError(f"iota shape must have every element be nonnegative, got {tuple(shape)}.")
    return ShapedArray(shape, dtypes.check_supported(dtype), False)


@iota_p.def_fuse
def _iota_fuse(kb, idx, read, in_avals, out_aval, dtype, shape, dimension, sharding=None):
    d = idx.dims()[dimension]
    return convert_expr(d, np.uint32, out_aval.dtype)


def _iota_ref(dtype, shape, dimension, sharding=None):
    r = np.arange(shape[dimension]).astype(dtype)
    return np.broadcast_to(
        r.reshape([-1 if i == dimension else 1 for i in range(len(shape))]), shape
    ).copy()


iota_p.reference = _iota_ref
_ad.defjvp_zero(iota_p)

_batching.defunbatched(iota_p)
iota_p.axis_map = lambda in_avals, out_avals, dtype, shape, dimension, sharding=None: [
    (None, None, 0, d) for d in range(len(shape)) if d != dimension]   # counts along one axis
iota_p.with_shapes = lambda params, in_avals, out_avals: dict(
    params, shape=tuple(out_avals[0].shape))

# --------------------------------------------------------------------------- pad

pad_p = Primitive("pad")


@pad_p.def_abstract_eval
def _pad_abstract(x, padval, padding_config):
    _same_dtypes("pad", [x, padval])
    if padval.ndim != 0:
        raise TypeError(f"pad padding_value must be a scalar, got shape {padval.shape}")
    if len(padding_config) != x.ndim:
        raise ValueError(f"length of padding_config must equal the number of axes of operand, got "
                         f"padding_config {tuple(padding_config)} for operand shape {x.shape}")
    shape = []
    for (lo, hi, interior), n in zip(padding_config, x.shape):
        if interior < 0:
            raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                             f"padding_config {tuple(padding_config)}")
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                             f"for padding_config {tuple(padding_config)} on shape {x.shape}")
        shape.append(size)
    return ShapedArray(shape, x.dtype, x.weak_type and padval.weak_type)


@pad_p.def_fuse
def _pad_fuse(kb, idx, read, in_avals, out_aval, padding_config):
    x = in_avals[0]
    d = idx.dims()
    conds, src = [], []
    for di, (lo, hi, interior), n in zip(d, padding_config, x.shape):
        # position relative to the operand start, in i32 (may be negative)
        rel = kb.let(f"i32({di}) - i32({lo})", "i32")
        step = interior + 1
        if step == 1:
            q = rel
        else:
            conds.append(f"({rel} % {step}) == 0")
            q = kb.let(f"{rel} / {step}", "i32")
        conds.append(f"{rel} >= 0 && {q} < {n}")
        src.append(f"u32(clamp({q}, 0, {max(n - 1, 0)}))")
    inside = " && ".join(f"({c})" for c in conds) if conds else "true"
    if x.size == 0:
        return read[1](Index(kb, ()))
    val = read[0](Index(kb, x.shape, dims=src))
    return f"select({read[1](Index(kb, ()))}, {val}, {inside})"


def _pad_ref(x, padval, padding_config):
    out = np.full(_pad_abstract(ShapedArray(x.shape, x.dtype), ShapedArray((), x.dtype),
                                padding_config).shape, padval, dtype=x.dtype)
    # place the interior-dilated operand, then crop negative padding
    dil_shape = [n + max(n - 1, 0) * it for n, (_, _, it) in zip(x.shape, padding_config)]
    dil = np.full(dil_shape, padval, dtype=x.dtype)
    dil[tuple(slice(None, None, it + 1) for (_, _, it) in padding_config)] = x
    big = np.full(
        [max(lo, 0) + n + max(hi, 0) for n, (lo, hi, _) in zip(dil_shape, padding_config)],
        padval,
        dtype=x.dtype,
    )
    big[
        tuple(slice(max(lo, 0), max(lo, 0) + n) for n, (lo, _, _) in zip(dil_shape, padding_config))
    ] = dil
    crop = tuple(
        slice(max(-lo, 0), big.shape[i] - max(-hi, 0))
        for i, (lo, hi, _) in enumerate(padding_config)
    )
    out[...] = big[crop]
    return out


pad_p.reference = _pad_ref


def _pad_transpose(ct, x, padval, padding_config):
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    ca = _ad.aval_of(ct)
    zero = np.zeros((), ca.dtype)
    unpad = ops.pad(ct, zero, [(-l, -h, 0) for l, h in zip(lo, hi)])
    ua = _ad.aval_of(unpad)
    t_x = ops.slice(unpad, [0] * ua.ndim, ua.shape, [i + 1 for i in interior])
    t_pv = None
    if _ad.is_undefined_primal(padval):
        t_pv = ops.sub(ops.reduce_sum(ct, tuple(range(ca.ndim))),
                        ops.reduce_sum(t_x, tuple(range(ca.ndim))))
    return [t_x if _ad.is_undefined_primal(x) else None, t_pv]


_ad.deflinear(pad_p, _pad_transpose)


def _pad_batch(args, dims, padding_config):
    (x, pv), (dx, dp) = args, dims
    n = _batching.axis_size(args, dims)
    if dp is None:
        cfg = list(padding_config)
        cfg.insert(dx, (0, 0, 0))
        return pad_p.bind(x, pv, padding_config=tuple(cfg)), dx
    # a batched padding value: pad with zeros, then select it where a padded mask is False
    x = _batching.bdim_at_front(x, dx, n)
    a = _batching.aval_of(x)
    cfg = ((0, 0, 0),) + tuple(padding_config)
    padded = pad_p.bind(x, np.zeros((), a.dtype), padding_config=cfg)
    ones = broadcast_in_dim_p.bind(
        np.bool_(True), shape=a.shape, broadcast_dimensions=(), sharding=None
    )
    mask = pad_p.bind(ones, np.bool_(False), padding_config=cfg)
    shape = _batching.aval_of(padded).shape
    fill = broadcast_in_dim_p.bind(pv, shape=shape, broadcast_dimensions=(0,), sharding=None)
    return select_n_p.bind(mask, fill, padded), 0


pad_p.batch = _pad_batch
pad_p.axis_map = lambda in_avals, out_avals, padding_config: [
    (0, d, 0, d) for d, cfg in enumerate(padding_config) if tuple(cfg) == (0, 0, 0)]

# --------------------------------------------------------------------------- concatenate

concatenate_p = Primitive("concatenate")


@concatenate_p.def_abstract_eval
def _concat_abstract(*xs, dimension):
    if not xs:
        raise TypeError("concatenate requires at least one operand")
    _same_dtypes("concatenate", xs)
    nd = xs[0].ndim
    if not 0 <= dimension < max(nd, 1) or nd == 0:
        raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                        + ", ".join(str(x.shape) for x in xs))
    for x in xs:
        if x.ndim != nd or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != dimension
        ):
            raise TypeError(
                "Cannot concatenate arrays with shapes that differ in dimensions other than "
                f"the one being concatenated: concatenating along dimension {dimension} for "
                "shapes " + ", ".join(str(x.shape) for x in xs) + "."
            )
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


@concatenate_p.def_fuse
def _concat_fuse(kb, idx, read, in_avals, out_aval, dimension):
    d = idx.dims()
    k = d[dimension]
    parts, off = [], 0          # (offset, value) of each non-empty operand
    for r, a in zip(read, in_avals):
        n = a.shape[dimension]
        if n == 0:
            continue
        src = list(d)
        src[dimension] = f"min(({k}) - {_u(off)}, {_u(n - 1)})" if off else f"min({k}, {_u(n - 1)})"
        parts.append((off, r(Index(kb, a.shape, dims=src))))
        off += n
    out = parts[-1][1]
    for (_, v), (nxt, _) in zip(reversed(parts[:-1]), reversed(parts[1:])):
        out = f"select({out}, {v}, {k} < {_u(nxt)})"
    return out


concatenate_p.reference = lambda *xs, dimension: np.concatenate(xs, axis=dimension)


def _concat_transpose(ct, *xs, dimension):
    shape = _ad.aval_of(ct).shape
    out, off = [], 0
    for x in xs:
        n = _ad.aval_of(x).shape[dimension]
        if _ad.is_undefined_primal(x):
            start, limit = [0] * len(shape), list(shape)
            start[dimension], limit[dimension] = off, off + n
            out.append(ops.slice(ct, start, limit))
        else:
            out.append(None)
        off += n
    return out


_ad.deflinear(concatenate_p, _concat_transpose)


def _concat_batch(args, dims, dimension):
    n = _batching.axis_size(args, dims)
    xs = [_batching.bdim_at_front(x, d, n) for x, d in zip(args, dims)]
    return concatenate_p.bind(*xs, dimension=dimension + 1), 0


concatenate_p.batch = _concat_batch
concatenate_p.axis_map = lambda in_avals, out_avals, dimension: [
    (k, d, 0, d) for k in range(len(in_avals)) for d in range(in_avals[k].ndim)
    if d != dimension]

# --------------------------------------------------------------------------- clamp

clamp_p = Primitive("clamp")


@clamp_p.def_abstract_eval
def _clamp_abstract(lo, x, hi):
    _same_dtypes("clamp", [lo, x, hi])
    for b, nm in ((lo, "min"), (hi, "max")):
        if b.ndim != 0 and b.shape != x.shape:
            raise TypeError(
                f"clamp requires {nm} to be a scalar or have the same shape as operand; "
                f"got {nm} shape {b.shape} and operand shape {x.shape}"
            )
    return ShapedArray(x.shape, x.dtype, x.weak_type)


@clamp_p.def_fuse
def _clamp_fuse(kb, idx, read, in_avals, out_aval):
    lo, x, hi = read[0](idx), read[1](idx), read[2](idx)
    if kind(out_aval.dtype) == "c":   # XLA's complex clamp: by the real parts (_clamp_ref)
        kb.use_helper("wj_opq")       # an opaque bound: GL folds a select of a compare
        r = kb.let(f"select({x}, {lo}, {x}.x <= wj_opq({lo}.x))", "vec2<f32>")
        return f"select({hi}, {r}, {r}.x <= wj_opq({hi}.x))"
    if kind(out_aval.dtype) == "f":
        for helper in ("wj_isnan", "wj_max_f", "wj_min_f"):
            kb.use_helper(helper)
        if out_aval.dtype == np.float16:   # the helpers are f32; exact for f16 values
            return f"f16(wj_min_f(wj_max_f(f32({x}), f32({lo})), f32({hi})))"
        return f"wj_min_f(wj_max_f({x}, {lo}), {hi})"
    return f"min(max({x}, {lo}), {hi})"


def _clamp_ref(lo, x, hi):
    """min(max(x, lo), hi); complex values (as XLA's clamp) by their real parts alone: ``lo``
    where ``x.real <= lo.real``, then ``hi`` unless that value's real part is <= ``hi.real``
    (so a NaN real part gives the bound that it is compared to)."""
    if x.dtype.kind != "c":
        return np.minimum(np.maximum(x, lo), hi)
    r = np.where(x.real <= lo.real, lo, x)
    return np.where(r.real <= hi.real, r, hi).astype(x.dtype)


clamp_p.reference = _clamp_ref


def _zero_of(x):
    return np.zeros((), _ad.aval_of(x).dtype)


_ad.defjvp(
    clamp_p,
    lambda g, lo, x, hi: ops.select(ops.bitwise_and(ops.gt(lo, x), ops.lt(lo, hi)), g, _zero_of(x)),
    lambda g, lo, x, hi: ops.select(ops.bitwise_and(ops.gt(x, lo), ops.lt(x, hi)), g, _zero_of(x)),
    lambda g, lo, x, hi: ops.select(ops.lt(hi, x), g, _zero_of(x)),
)

_batching.defbroadcasting(clamp_p)

# --------------------------------------------------------------------------- dynamic slicing


def _clamped_start(kb, read_start, n, size) -> str:
    """Starts are shifted to keep the window in bounds, as in JAX."""
    s = read_start(Index(kb, ()))
    return kb.let(f"u32(clamp(i32({s}), 0, {max(n - size, 0)}))", "u32")


dynamic_slice_p = Primitive("dynamic_slice")


@dynamic_slice_p.def_abstract_eval
def _dslice_abstract(x, *starts, slice_sizes):
    if len(starts) != x.ndim or len(slice_sizes) != x.ndim:
        raise TypeError(f"dynamic_slice needs {x.ndim} start indices and slice sizes for operand "
                        f"shape {x.shape}, got {len(starts)} and {tuple(slice_sizes)}")
    for s in starts:
        if s.ndim != 0 or not dtypes.is_int(s.dtype):
            raise TypeError(
                f"dynamic_slice start indices must be integer scalars, got {s.str_short()}"
            )
    for sz, n in zip(slice_sizes, x.shape):
        if not 0 <= sz <= n:
            raise TypeError(
                f"slice_sizes {tuple(slice_sizes)} must be within operand shape {x.shape}"
            )
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


@dynamic_slice_p.def_fuse
def _dslice_fuse(kb, idx, read, in_avals, out_aval, slice_sizes):
    x = in_avals[0]
    d = idx.dims()
    src = [f"{di} + {_clamped_start(kb, read[1 + k], x.shape[k], slice_sizes[k])}"
           for k, di in enumerate(d)]
    return read[0](Index(kb, x.shape, dims=src))


def _dslice_ref(x, *starts, slice_sizes):
    st = [int(np.clip(int(s), 0, n - sz)) for s, n, sz in zip(starts, x.shape, slice_sizes)]
    return x[tuple(slice(s, s + sz) for s, sz in zip(st, slice_sizes))].copy()


dynamic_slice_p.reference = _dslice_ref


def _dslice_jvp(primals, tangents, slice_sizes):
    x, *starts = primals
    ans = dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
    if isinstance(tangents[0], _ad.Zero):
        return ans, _ad.Zero(_ad.aval_of(ans))
    return ans, dynamic_slice_p.bind(tangents[0], *starts, slice_sizes=slice_sizes)


def _dslice_transpose(ct, x, *starts, slice_sizes):
    if any(_ad.is_undefined_primal(s) for s in starts):
        raise TypeError("dynamic_slice is not linear in its start indices")
    return [dynamic_update_slice_p.bind(_ad.zeros(x.aval), ct, *starts)] + [None] * len(starts)


dynamic_slice_p.jvp = _dslice_jvp
dynamic_slice_p.transpose = _dslice_transpose


def _index_vectors(starts, dims, n):
    """Start indices (scalars, some batched) as one int32 array of shape [n, len(starts)]."""
    cols = []
    for s, d in zip(starts, dims):
        if _batching.aval_of(s).dtype != np.int32:
            s = convert_element_type_p.bind(s, new_dtype=np.dtype(np.int32), weak_type=False)
        cols.append(
            broadcast_in_dim_p.bind(
                s, shape=(n, 1), broadcast_dimensions=() if d is None else (0,), sharding=None
            )
        )
    return cols[0] if len(cols) == 1 else concatenate_p.bind(*cols, dimension=1)


def _dslice_batch(args, dims, slice_sizes):
    (x, *starts), (dx, *ds) = args, dims
    n = _batching.axis_size(args, dims)
    if all(d is None for d in ds):
        starts.insert(dx, np.int32(0))
        sizes = list(slice_sizes)
        sizes.insert(dx, n)
        return dynamic_slice_p.bind(x, *starts, slice_sizes=tuple(sizes)), dx
    # batched starts: a gather of one window per example (clamped like dynamic_slice)
    idx = _index_vectors(starts, ds, n)
    k = len(starts)
    if dx is None:
        dn = GatherDimensionNumbers(tuple(range(1, k + 1)), (), tuple(range(k)))
        sizes = tuple(slice_sizes)
    else:
        x = _batching.bdim_at_front(x, dx, n)
        dn = GatherDimensionNumbers(tuple(range(1, k + 1)), (), tuple(range(1, k + 1)), (0,), (0,))
        sizes = (1,) + tuple(slice_sizes)
    return gather_p.bind(
        x,
        idx,
        dimension_numbers=dn,
        slice_sizes=sizes,
        mode="clip",
        fill_value=None,
        indices_are_sorted=False,
        unique_indices=False,
    ), 0


dynamic_slice_p.batch = _dslice_batch

dynamic_update_slice_p = Primitive("dynamic_update_slice")


@dynamic_update_slice_p.def_abstract_eval
def _dus_abstract(x, update, *starts):
    _same_dtypes("dynamic_update_slice", [x, update])
    if update.ndim != x.ndim or len(starts) != x.ndim:
        raise TypeError(f"dynamic_update_slice update shape {update.shape} and {len(starts)} start "
                        f"indices must match operand rank for shape {x.shape}")
    if any(u > n for u, n in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice update shape {update.shape} must be smaller than "
                        f"operand shape {x.shape}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


@dynamic_update_slice_p.def_fuse
def _dus_fuse(kb, idx, read, in_avals, out_aval):
    x, u = in_avals[0], in_avals[1]
    if u.size == 0:
        return read[0](idx)
    d = idx.dims()
    inside, src = [], []
    for k, di in enumerate(d):
        s = _clamped_start(kb, read[2 + k], x.shape[k], u.shape[k])
        inside.append(f"{di} >= {s} && {di} < {s} + {_u(u.shape[k])}")
        src.append(f"min({di} - min({di}, {s}), {_u(u.shape[k] - 1)})")
    cond = " && ".join(f"({c})" for c in inside) if inside else "true"
    return f"select({read[0](idx)}, {read[1](Index(kb, u.shape, dims=src))}, {cond})"


def _dus_ref(x, update, *starts):
    st = [int(np.clip(int(s), 0, n - sz)) for s, n, sz in zip(starts, x.shape, update.shape)]
    out = x.copy()
    out[tuple(slice(s, s + sz) for s, sz in zip(st, update.shape))] = update
    return out


dynamic_update_slice_p.reference = _dus_ref


def _dus_jvp(primals, tangents):
    x, u, *starts = primals
    tx, tu = tangents[:2]
    ans = dynamic_update_slice_p.bind(x, u, *starts)
    if isinstance(tx, _ad.Zero) and isinstance(tu, _ad.Zero):
        return ans, _ad.Zero(_ad.aval_of(ans))
    return ans, dynamic_update_slice_p.bind(_ad.instantiate(tx), _ad.instantiate(tu), *starts)


def _dus_transpose(ct, x, u, *starts):
    if any(_ad.is_undefined_primal(s) for s in starts):
        raise TypeError("dynamic_update_slice is not linear in its start indices")
    ua = _ad.aval_of(u)
    t_x = (
        dynamic_update_slice_p.bind(ct, _ad.zeros(ua), *starts)
        if _ad.is_undefined_primal(x)
        else None
    )
    t_u = (dynamic_slice_p.bind(ct, *starts, slice_sizes=ua.shape)
           if _ad.is_undefined_primal(u) else None)
    return [t_x, t_u] + [None] * len(starts)


dynamic_update_slice_p.jvp = _dus_jvp
dynamic_update_slice_p.transpose = _dus_transpose


def _dus_batch(args, dims):
    (x, u, *starts), (dx, du, *ds) = args, dims
    n = _batching.axis_size(args, dims)
    xs, us = _batching.unbatched_shape(x, dx), _batching.unbatched_shape(u, du)
    x = _batching.bdim_at_front(x, dx, n)
    u = _batching.bdim_at_front(u, du, n)
    if all(d is None for d in ds):
        return dynamic_update_slice_p.bind(x, u, np.int32(0), *starts), 0
    # batched starts: a scatter of one window per example, starts clamped as
    # dynamic_update_slice does
    clamped = []
    for s, sx, su in zip(starts, xs, us):
        if _batching.aval_of(s).dtype != np.int32:
            s = convert_element_type_p.bind(s, new_dtype=np.dtype(np.int32), weak_type=False)
        clamped.append(clamp_p.bind(np.int32(0), s, np.int32(max(sx - su, 0))))
    idx = _index_vectors(clamped, ds, n)
    k = len(starts)
    dn = ScatterDimensionNumbers(tuple(range(1, k + 1)), (), tuple(range(1, k + 1)), (0,), (0,))
    return scatter_p.bind(
        x,
        idx,
        u,
        dimension_numbers=dn,
        indices_are_sorted=True,
        unique_indices=True,
        mode="clip",
        update_jaxpr=None,
        update_consts=(),
    ), 0


dynamic_update_slice_p.batch = _dus_batch


# --------------------------------------------------------------------------- optimization_barrier
# The identity on any number of arrays, kept as one equation (lax.optimization_barrier).  It
# has no kernel: eagerly it returns its operands, and lowering expands it to nothing.

optimization_barrier_p = Primitive("optimization_barrier", multiple_results=True)
optimization_barrier_p.abstract_eval = lambda *avals: list(avals)
optimization_barrier_p.reference = lambda *xs: [np.asarray(x) for x in xs]
optimization_barrier_p.impl = lambda *xs: list(xs)
optimization_barrier_p.expand = lambda *xs: list(xs)


def _barrier_jvp(primals, tangents):
    # primals and tangents each behind a barrier of their own (linearize splits them apart)
    outs = optimization_barrier_p.bind(*primals)
    nz = [i for i, t in enumerate(tangents) if not isinstance(t, _ad.Zero)]
    touts = list(tangents)
    if nz:
        for i, t in zip(nz, optimization_barrier_p.bind(*[tangents[i] for i in nz])):
            touts[i] = t
    return list(outs), touts


def _barrier_transpose(cts, *args):
    cts = [_ad.instantiate(c) for c in cts]
    return list(optimization_barrier_p.bind(*cts))


optimization_barrier_p.jvp = _barrier_jvp
optimization_barrier_p.transpose = _barrier_transpose
optimization_barrier_p.batch = lambda args, dims: (
    list(optimization_barrier_p.bind(*args)), list(dims))
