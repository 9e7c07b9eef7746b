"""Shape manipulation: reshape, transpose and axis moves, expand/squeeze, broadcasting,
joining and splitting, flips and rolls, tiling, diagonals, ``take`` and its relatives.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from .._src.core.ir import WeakScalar
from .._src.core.tracing import ConcretizationTypeError, Tracer
from .._src.prims.indexing import GatherDimensionNumbers
from ._util import _aval, _concrete, _int, _is_array, _wrap_result, broadcast_shapes, promote_args
from .creation import _arraylike, asarray, astype, broadcast_to, full, zeros, zeros_like
from .ufuncs import _where_xy, add, clip, less, mod, negative, not_equal, subtract


def shape(a):
    return np.shape(a) if not _is_array(a) else a.shape


def ndim(a):
    return len(shape(a))


def size(a, axis=None):
    s = shape(a)
    return int(np.prod(s)) if axis is None else s[axis]


def _axis(axis, nd, name="axis"):
    if not -nd <= axis < builtins.max(nd, 1) or (nd == 0 and axis not in (0, -1)):
        from numpy.exceptions import AxisError
        raise AxisError(f"{name} {axis} is out of bounds for array of dimension {nd}")
    return axis % builtins.max(nd, 1)


def _axes(axis, nd):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        out = tuple(_axis(operator.index(a), nd) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"repeated axis in {tuple(axis)}")
        return out
    return (_axis(operator.index(axis), nd),)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None, out_sharding=None):
    if shape is None:
        shape = newshape
    a = _arraylike("reshape", a)
    if order != "C":
        raise NotImplementedError("reshape only supports order='C'")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for s in shape:
        if isinstance(s, Tracer) and s.to_concrete_value() is None:
            raise TypeError(
                f"Shapes must be 1D sequences of concrete values of integer type, got {shape}. "
                "If using `jit`, try using `static_argnums` or applying `jit` to smaller "
                "subfunctions."
            )
    shape = tuple(operator.index(s) for s in shape)
    if shape.count(-1) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {shape}")
    if builtins.any(s < -1 for s in shape):
        raise TypeError(f"reshape new_sizes must all be positive, got {shape}.")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        if known == 0 or a.size % known:
            raise TypeError(
                f"cannot reshape array of shape {a.shape} (size {a.size}) into shape {shape}"
            )
        shape = tuple(a.size // known if s == -1 else s for s in shape)
    if int(np.prod(shape)) != a.size:
        raise TypeError(
            f"cannot reshape array of shape {a.shape} (size {a.size}) into shape {shape} "
            f"(size {int(np.prod(shape))})"
        )
    return lax.reshape(a, shape)


def ravel(a, order="C", *, out_sharding=None):
    return reshape(a, (-1,))


def transpose(a, axes=None):
    a = _arraylike("transpose", a)
    if axes is None:
        axes = tuple(range(a.ndim))[::-1]
    axes = tuple(_axis(operator.index(x), a.ndim) for x in axes)
    if sorted(axes) != list(range(a.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {axes} for operand shape {a.shape}.")
    return lax.transpose(a, axes)


def permute_dims(a, axes):
    return transpose(a, axes)


def swapaxes(a, axis1, axis2):
    a = _arraylike("swapaxes", a)
    p = list(range(a.ndim))
    i, j = _axis(axis1, a.ndim), _axis(axis2, a.ndim)
    p[i], p[j] = p[j], p[i]
    return lax.transpose(a, p)


def moveaxis(a, source, destination):
    a = _arraylike("moveaxis", a)
    src = _axes(source, a.ndim) if not isinstance(source, int) else (_axis(source, a.ndim),)
    dst = (
        _axes(destination, a.ndim)
        if not isinstance(destination, int)
        else (_axis(destination, a.ndim),)
    )
    if len(src) != len(dst):
        raise ValueError(
            "`source` and `destination` arguments must have the same number of elements"
        )
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


def expand_dims(a, axis):
    a = _arraylike("expand_dims", a)
    # an int or any sequence of ints (a range, a NumPy array), as JAX's
    try:
        axes = (operator.index(axis),)
    except TypeError:
        axes = tuple(axis)
    nd = a.ndim + len(axes)
    axes = tuple(_axis(x, nd) for x in axes)
    return lax.expand_dims(a, axes)


def squeeze(a, axis=None):
    a = _arraylike("squeeze", a)
    if axis is None:
        axes = tuple(i for i, s in enumerate(a.shape) if s == 1)
    else:
        axes = _axes(axis, a.ndim)
        for ax in axes:
            if a.shape[ax] != 1:
                raise ValueError(
                    f"cannot select an axis to squeeze out which has size not equal to "
                    f"one, got shape={a.shape} and dimensions={axes}"
                )
    return lax.squeeze(a, axes)


def broadcast_arrays(*args):
    shape = broadcast_shapes(*[np.shape(a) if not _is_array(a) else a.shape for a in args])
    return [broadcast_to(a, shape) for a in args]


def atleast_1d(*arys):
    out = [reshape(asarray(a), (1,)) if asarray(a).ndim == 0 else asarray(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = asarray(a)
        out.append(reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis=0, dtype=None):
    if _is_array(arrays) or isinstance(arrays, np.ndarray):
        arrays = list(arrays)
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = [asarray(a) for a in arrays]
    if builtins.any(a.ndim == 0 for a in arrays):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    dt = dtypes.result_type(*arrays) if dtype is None else dtypes.check_supported(dtype)
    nd = arrays[0].ndim
    if builtins.any(a.ndim != nd for a in arrays):
        raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                        + ", ".join(str(a.shape) for a in arrays) + ".")
    ax = _axis(axis, nd)
    for a in arrays:
        if builtins.any(
            s != t for i, (s, t) in enumerate(zip(a.shape, arrays[0].shape)) if i != ax
        ):
            raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                            f"than the one being concatenated: concatenating along dimension {ax} "
                            "for shapes " + ", ".join(str(a.shape) for a in arrays) + ".")
    arrays = [astype(a, dt) if a.dtype != dt else a for a in arrays]
    return lax.concatenate(arrays, ax)


concat = concatenate


def stack(arrays, axis=0, dtype=None):
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError(
            "All input arrays must have the same shape, got "
            + ", ".join(str(a.shape) for a in arrays)
        )
    ax = _axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, ax) for a in arrays], axis=ax, dtype=dtype)


def hstack(tup, dtype=None):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = _arraylike("diagonal", a)
    if a.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    ax1, ax2 = _axis(axis1, a.ndim, "axis1"), _axis(axis2, a.ndim, "axis2")
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 must be different")
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    n, m = a.shape[-2], a.shape[-1]
    offset = operator.index(offset)
    L = builtins.max(0, builtins.min(n + builtins.min(offset, 0), m - builtins.max(offset, 0)))
    if L == 0:
        return zeros(a.shape[:-2] + (0,), a.dtype)
    i = np.arange(L, dtype=np.int32) + builtins.max(-offset, 0)
    j = np.arange(L, dtype=np.int32) + builtins.max(offset, 0)
    flat = reshape(a, a.shape[:-2] + (n * m,))
    return _take_axis(flat, i * m + j, flat.ndim - 1)


def diag(v, k=0):
    v = _arraylike("diag", v)
    if v.ndim == 1:
        n = v.shape[0] + builtins.abs(k)
        r = lax.broadcasted_iota(np.int32, (n, n), 0)
        c = lax.broadcasted_iota(np.int32, (n, n), 1)
        on = lax.eq(lax.sub(c, r), WeakScalar(np.asarray(k, np.int32)))
        src = clip(lax.sub(r, WeakScalar(np.asarray(builtins.max(-k, 0), np.int32))), 0,
                     builtins.max(v.shape[0] - 1, 0)) if v.shape[0] else None
        if src is None:
            return zeros((n, n), v.dtype)
        vals = _take_axis(v, src, 0)
        return lax.select(on, vals, zeros_like(vals))
    if v.ndim == 2:
        return diagonal(v, k)
    raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k=0):
    return diag(ravel(_arraylike("diagflat", v)), k)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    if inplace:
        raise ValueError("JAX arrays are immutable; use fill_diagonal(..., inplace=False)")
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    n = builtins.min(a.shape)
    idx = tuple(np.arange(n) for _ in range(a.ndim))
    return a.at[idx].set(ravel(broadcast_to(asarray(val, a.dtype), (n,))) if np.ndim(val) else val)


def _take_axis(a, idx, axis, mode="clip", fill_value=None):
    """a.take(idx, axis) as one gather; ``idx`` (any shape) replaces ``axis``."""
    idx = asarray(idx) if not isinstance(idx, np.ndarray) else idx.astype(np.int32)
    if isinstance(idx, np.ndarray):
        nd = idx.ndim
    else:
        if idx.dtype != _int:
            idx = lax.convert_element_type(idx, _int)
        nd = idx.ndim
    offset_dims = tuple(range(axis)) + tuple(range(axis + nd, a.ndim - 1 + nd))
    slice_sizes = list(a.shape)
    slice_sizes[axis] = 1
    dn = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(axis,),
                                start_index_map=(axis,))
    ind = idx[..., None] if isinstance(idx, np.ndarray) else lax.expand_dims(idx, (nd,))
    return lax.gather(a, ind, dn, slice_sizes, mode=mode, fill_value=fill_value)


def _split_points(name, n, indices_or_sections, even):
    if isinstance(indices_or_sections, Tracer):
        indices_or_sections = indices_or_sections.to_concrete_value()
        if indices_or_sections is None:
            raise ConcretizationTypeError(f"{name}: indices_or_sections must be concrete")
    if isinstance(indices_or_sections, (int, np.integer)) or (
            _is_array(indices_or_sections) and indices_or_sections.ndim == 0):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        if even and n % k:
            raise ValueError(f"array split does not result in an equal division: axis of size {n} "
                             f"cannot be split into {k} equal sections")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        return list(np.cumsum([0] + sizes))
    pts = [int(i) for i in np.asarray(indices_or_sections).ravel()]
    return [0] + pts + [n]


def _split(name, ary, indices_or_sections, axis, even):
    a = asarray(ary)
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    pts = _split_points(name, n, indices_or_sections, even)
    out = []
    for s, e in zip(pts[:-1], pts[1:]):
        s = builtins.min(builtins.max(s + n if s < 0 else s, 0), n)
        e = builtins.min(builtins.max(e + n if e < 0 else e, 0), n)
        e = builtins.max(e, s)
        out.append(lax.slice_in_dim(a, s, e, 1, ax))
    return out


def split(ary, indices_or_sections, axis=0):
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary, indices_or_sections):
    a = _arraylike("hsplit", ary)
    return split(a, indices_or_sections, axis=1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    a = _arraylike("vsplit", ary)
    if a.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return split(a, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    a = _arraylike("dsplit", ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return split(a, indices_or_sections, axis=2)


def unstack(x, /, *, axis=0):
    x = _arraylike("unstack", x)
    if x.ndim == 0:
        raise ValueError(
            "Unstack requires arrays with rank > 0, however a scalar array was passed."
        )
    ax = _axis(axis, x.ndim)
    return tuple(lax.index_in_dim(x, i, ax, keepdims=False) for i in range(x.shape[ax]))


def tile(A, reps):
    a = _arraylike("tile", A)
    reps = (
        (operator.index(reps),)
        if not isinstance(reps, (tuple, list))
        else tuple(operator.index(r) for r in reps)
    )
    nd = builtins.max(len(reps), a.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - a.ndim) + a.shape
    a = reshape(a, shape)
    big = []
    dims = []
    for i, (r, s) in enumerate(zip(reps, shape)):
        big += [r, s]
        dims.append(2 * i + 1)
    b = lax.broadcast_in_dim(a, tuple(big), tuple(dims))
    return reshape(b, tuple(r * s for r, s in zip(reps, shape)))


def _fit_length(x, ax, length):
    n = x.shape[ax]
    if length <= n:
        return lax.slice_in_dim(x, 0, length, 1, ax)
    extra = list(x.shape)
    extra[ax] = length - n
    last = lax.slice_in_dim(x, n - 1, n, 1, ax)
    return concatenate([x, broadcast_to(last, tuple(extra))], axis=ax)


def flip(m, axis=None):
    m = _arraylike("flip", m)
    axes = _axes(axis, m.ndim)
    return lax.rev(m, axes) if axes else m


def fliplr(m):
    m = _arraylike("fliplr", m)
    if m.ndim < 2:
        raise ValueError("fliplr requires an array of at least two dimensions, got shape "
                         f"{m.shape}")
    return flip(m, 1)


def flipud(m):
    m = _arraylike("flipud", m)
    if m.ndim < 1:
        raise ValueError("flipud requires an array of at least one dimension, got shape ()")
    return flip(m, 0)


def roll(a, shift, axis=None):
    a = _arraylike("roll", a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), a.shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if isinstance(shift, (int, np.integer)) or (not _is_array(shift) and np.ndim(shift) == 0):
        shifts = (shift,) * len(axes) if len(axes) > 1 else (shift,)
    elif _is_array(shift) and shift.ndim == 0:
        shifts = (shift,) * len(axes)
    else:
        shifts = (
            tuple(shift) if not _is_array(shift) else tuple(shift[i] for i in range(shift.shape[0]))
        )
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"len(shift) ({len(shifts)}) must equal len(axis) ({len(axes)})")
    for s, ax in zip(shifts, axes):
        ax = _axis(ax, a.ndim)
        n = a.shape[ax]
        if n == 0:
            continue
        if isinstance(s, (Tracer,)) or _is_array(s):
            s = astype(asarray(s), np.int32)
            k = mod(negative(s), n)
            both = concatenate([a, a], axis=ax)
            a = lax.dynamic_slice(
                both, [np.int32(0) if i != ax else k for i in range(a.ndim)], a.shape
            )
        else:
            k = int(s) % n
            if k:
                a = concatenate(
                    [lax.slice_in_dim(a, n - k, n, 1, ax), lax.slice_in_dim(a, 0, n - k, 1, ax)],
                    axis=ax,
                )
    return a


def rollaxis(a, axis, start=0):
    a = _arraylike("rollaxis", a)
    ax = _axis(axis, a.ndim)
    start = operator.index(start)
    if not -a.ndim <= start <= a.ndim:
        raise ValueError(f"start={start} must satisfy {-a.ndim}<=start<={a.ndim}")
    if start < 0:
        start += a.ndim
    if ax < start:
        start -= 1
    return moveaxis(a, ax, start)


def rot90(m, k=1, axes=(0, 1)):
    m = _arraylike("rot90", m)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if m.ndim < 2:
        raise ValueError(f"rot90 requires an array of at least 2 dimensions, got shape {m.shape}")
    a0, a1 = _axis(axes[0], m.ndim), _axis(axes[1], m.ndim)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def column_stack(tup):
    arrs = []
    for a in tup:
        a = asarray(a)
        arrs.append(reshape(a, (a.shape[0] if a.ndim else 1, 1)) if a.ndim < 2 else a)
    return concatenate(arrs, axis=1)


def dstack(tup, dtype=None):
    return concatenate([atleast_3d(a) for a in tup], axis=2, dtype=dtype)


row_stack = vstack


def append(arr, values, axis=None):
    if axis is None:
        return concatenate(
            [ravel(_arraylike("append", arr)), ravel(_arraylike("append", values))], axis=0
        )
    return concatenate([arr, values], axis=axis)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    a = _arraylike("delete", arr)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    if isinstance(obj, slice):
        drop = np.arange(n)[obj]
    else:
        drop = np.asarray(_concrete(obj, "jnp.delete indices")).astype(np.int64)
        if drop.dtype == bool:
            drop = np.nonzero(drop)[0]
        if ((drop < -n) | (drop >= n)).any():
            raise IndexError(f"index out of bounds for axis {axis} with size {n}")
        drop = np.where(drop < 0, drop + n, drop)
    keep = np.setdiff1d(np.arange(n), drop)
    return (
        _take_axis(a, keep.astype(np.int32), ax) if keep.size else lax.slice_in_dim(a, 0, 0, 1, ax)
    )


def insert(arr, obj, values, axis=None):
    a = _arraylike("insert", arr)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    idx = (
        np.arange(n)[obj]
        if isinstance(obj, slice)
        else np.asarray(_concrete(obj, "jnp.insert indices"))
    )
    if idx.dtype == bool or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError("jnp.insert: index array must be integer typed")
    scalar = idx.ndim == 0
    idx = np.atleast_1d(idx).astype(np.int64).ravel()
    idx = np.where(idx < 0, idx + n, idx)
    if ((idx < 0) | (idx > n)).any():
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
    v = astype(_arraylike("insert", values), a.dtype)
    if scalar:
        v = reshape(v, (1,) * (a.ndim - v.ndim) + v.shape) if v.ndim < a.ndim else v
        v = moveaxis(v, 0, ax)
        m = v.shape[ax]
        idx = np.full(m, idx[0])
    else:
        m = len(idx)
    shape = tuple(m if i == ax else s for i, s in enumerate(a.shape))
    v = broadcast_to(v, shape)
    keys = np.concatenate([2 * np.arange(n) + 1, 2 * idx])
    order = np.argsort(keys, kind="stable")
    both = concatenate([a, v], axis=ax)
    return _take_axis(both, order.astype(np.int32), ax)


def resize(a, new_shape):
    a = ravel(_arraylike("resize", a))
    new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    total = int(np.prod(new_shape))
    if a.size == 0:
        return zeros(new_shape, a.dtype)
    reps = -(-total // a.size)
    return reshape(tile(a, reps)[:total], new_shape)


def trim_zeros(filt, trim="fb"):
    f = np.asarray(_concrete(filt, "jnp.trim_zeros"))
    nz = np.nonzero(f)[0]
    if nz.size == 0:
        return _arraylike("trim_zeros", filt)[:0]
    s = nz[0] if "f" in trim.lower() else 0
    e = nz[-1] + 1 if "b" in trim.lower() else f.shape[0]
    return _arraylike("trim_zeros", filt)[int(s):int(e)]


def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = _arraylike("diff", a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    if n == 0:
        return a
    ax = _axis(axis, a.ndim)
    parts = []
    for v, at_front in ((prepend, True), (append, False)):
        if v is None:
            continue
        v = asarray(v)
        if v.ndim == 0:
            shape = list(a.shape)
            shape[ax] = 1
            v = broadcast_to(v, tuple(shape))
        parts.append((at_front, v))
    if parts:
        a = concatenate([v for f, v in parts if f] + [a] + [v for f, v in parts if not f], axis=ax)
    for _ in range(n):
        m = a.shape[ax]
        if m == 0:
            break
        hi = lax.slice_in_dim(a, 1, m, 1, ax)
        lo = lax.slice_in_dim(a, 0, m - 1, 1, ax)
        a = not_equal(hi, lo) if a.dtype == np.bool_ else subtract(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    a = ravel(_arraylike("ediff1d", ary))
    r = diff(a) if a.shape[0] else a
    parts = []
    if to_begin is not None:
        parts.append(ravel(astype(_arraylike("ediff1d", to_begin), r.dtype)))
    parts.append(r)
    if to_end is not None:
        parts.append(ravel(astype(_arraylike("ediff1d", to_end), r.dtype)))
    return concatenate(parts) if len(parts) > 1 else r


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    a = _arraylike("take", a)
    idx = _arraylike("take", indices)
    if not dtypes.is_int(idx.dtype):
        raise ValueError("indices must have an integer type")
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    idx = astype(idx, np.int32)
    if mode is None or mode == "fill":
        gmode = "fill"
        idx = _where_xy(less(idx, 0), add(idx, n), idx)
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    elif mode == "wrap":
        gmode = "clip"
        idx = mod(idx, builtins.max(n, 1))
    elif mode == "clip":
        gmode = "clip"
    else:
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    if n == 0:
        if idx.size:
            if gmode != "fill":
                raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
            shape = a.shape[:ax] + idx.shape + a.shape[ax + 1:]
            return full(
                shape, _default_fill(a.dtype) if fill_value is None else fill_value, a.dtype
            )
        return zeros(a.shape[:ax] + idx.shape + a.shape[ax + 1:], a.dtype)
    return _take_axis(a, idx, ax, mode=gmode, fill_value=fill_value)


def _default_fill(dt):
    dt = np.dtype(dt)
    if dtypes.is_float(dt):
        return np.nan
    if dt == np.bool_:
        return True
    return np.iinfo(dt).min if dt.kind == "i" else np.iinfo(dt).max


def take_along_axis(arr, indices, axis, mode=None, fill_value=None):
    a = _arraylike("take_along_axis", arr)
    idx = _arraylike("take_along_axis", indices)
    if not dtypes.is_int(idx.dtype):
        raise TypeError(f"take_along_axis indices must be of integer type, got {idx.dtype}")
    if axis is None:
        if idx.ndim != 1:
            raise ValueError(
                f"when axis=None, `indices` must have a single dimension, got shape {idx.shape}"
            )
        a, axis = ravel(a), 0
    if idx.ndim != a.ndim:
        raise ValueError(
            f"indices and arr must have the same number of dimensions; {idx.ndim} vs. {a.ndim}"
        )
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    idx = astype(idx, np.int32)
    out_shape = []
    for i, (s, t) in enumerate(zip(a.shape, idx.shape)):
        if i == ax:
            out_shape.append(t)
        else:
            try:
                out_shape.append(broadcast_shapes((s,), (t,))[0])
            except ValueError:
                raise ValueError(
                    f"take_along_axis: indices shape {idx.shape} is not broadcast-compatible "
                    f"with arr shape {a.shape} outside axis {ax}"
                ) from None
    out_shape = tuple(out_shape)
    idx = broadcast_to(idx, out_shape)
    if mode is None or mode == "fill":
        gmode = "fill"
        idx = _where_xy(less(idx, 0), add(idx, n), idx)
    elif mode == "clip":
        gmode = "clip"
    elif mode == "wrap":
        gmode = "clip"
        idx = mod(idx, builtins.max(n, 1))
    else:
        raise ValueError(f"take_along_axis: unsupported mode {mode!r}")
    a = broadcast_to(a, tuple(s if i == ax else out_shape[i] for i, s in enumerate(a.shape)))
    if builtins.any(s == 0 for s in out_shape):
        return zeros(out_shape, a.dtype)
    if n == 0:
        return full(
            out_shape, _default_fill(a.dtype) if fill_value is None else fill_value, a.dtype
        )
    # one index vector per output element: iotas for the other dims, idx for ``axis``
    coords = [
        lax.broadcasted_iota(np.int32, out_shape, d) if d != ax else idx for d in range(a.ndim)
    ]
    ind = stack(coords, axis=-1)
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(a.ndim)),
                                start_index_map=tuple(range(a.ndim)))
    return lax.gather(a, ind, dn, (1,) * a.ndim, mode=gmode, fill_value=fill_value)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    if inplace:
        raise ValueError(
            "jax.numpy.put_along_axis cannot modify arrays in-place; use inplace=False"
        )
    a = _arraylike("put_along_axis", arr)
    idx = astype(_arraylike("put_along_axis", indices), np.int32)
    ax = _axis(axis, a.ndim)
    shape = broadcast_shapes(tuple(1 if i == ax else s for i, s in enumerate(a.shape)), idx.shape)
    idx = broadcast_to(idx, shape)
    n = a.shape[ax]
    idx = _where_xy(less(idx, 0), add(idx, n), idx)
    coords = [lax.broadcasted_iota(np.int32, shape, d) if d != ax else idx for d in range(a.ndim)]
    return a.at[tuple(coords)].set(values, mode=mode)


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                         f"{len(choicelist)})")
    if not condlist:
        raise ValueError("condlist must be non-empty")
    out = default
    for c, v in zip(reversed(condlist), reversed(choicelist)):
        c = asarray(c)
        if c.dtype != np.bool_:
            raise TypeError(f"condlist must be boolean, got {c.dtype}")
        out = _where_xy(c, v, out)
    return asarray(out)


def piecewise(x, condlist, funclist, *args, **kw):
    x = asarray(x)
    conds = [asarray(c) for c in (condlist if isinstance(condlist, (list, tuple)) else [condlist])]
    n = len(conds)
    if len(funclist) == n + 1:
        other = funclist[-1]
        funclist = funclist[:-1]
    elif len(funclist) == n:
        other = 0
    else:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    out = _apply_piece(other, x, args, kw)
    for c, f in zip(conds, funclist):
        out = _where_xy(c, _apply_piece(f, x, args, kw), out)
    return astype(out, x.dtype)


def _apply_piece(f, x, args, kw):
    v = f(x, *args, **kw) if callable(f) else f
    return broadcast_to(astype(asarray(v), x.dtype), x.shape)


def choose(a, choices, out=None, mode="raise"):
    a = astype(asarray(a), np.int32)
    n = len(choices)
    if mode == "raise":
        av = _concrete(a, "jnp.choose with mode='raise' (use mode='wrap' or 'clip' under jit)")
        if ((av < 0) | (av >= n)).any():
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = mod(a, n)
    elif mode == "clip":
        a = clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    chs = promote_args("choose", *choices)
    shape = broadcast_shapes(a.shape, *[_aval(c).shape for c in chs])
    a = broadcast_to(a, shape)
    chs = [broadcast_to(_wrap_result(c), shape) for c in chs]
    return lax.select_n(a, *chs) if n > 1 else chs[0]


__all__ = [
    "shape", "ndim", "size", "reshape", "ravel", "transpose", "permute_dims", "swapaxes",
    "moveaxis", "expand_dims", "squeeze", "broadcast_arrays", "atleast_1d", "atleast_2d",
    "concatenate", "concat", "stack", "hstack", "vstack", "diagonal", "diag", "diagflat",
    "fill_diagonal", "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack", "tile",
    "flip", "fliplr", "flipud", "roll", "rollaxis", "rot90", "atleast_3d", "column_stack",
    "dstack", "row_stack", "append", "delete", "insert", "resize", "trim_zeros", "diff",
    "ediff1d", "take", "take_along_axis", "put_along_axis", "select", "piecewise", "choose",
]
