"""NumPy-style indexing with JAX's semantics, and ``x.at[...]`` updates.

Basic indices (Python ints, slices, None, Ellipsis) become static ``slice``,
``rev`` and ``squeeze``; integer arrays (and traced scalars) become one
``gather`` with JAX's clamping.  Boolean masks are converted to integer
indices outside ``jit`` and raise NonConcreteBooleanIndexError under it.

``x.at[idx].op(v)`` finds the flat positions that ``x[idx]`` reads by indexing
an iota with the same index (out-of-bounds positions become -1), then scatters
``v`` there, dropping out-of-bounds updates as JAX does.
"""
from __future__ import annotations


import numpy as np

from .._src.core import dtypes
from .. import lax
from .._src.array import Array
from .._src.prims.indexing import GatherDimensionNumbers, ScatterDimensionNumbers, _mode
from .._src.core.tracing import NonConcreteBooleanIndexError, Tracer
from ._util import broadcast_shapes
from .creation import asarray, broadcast_to
from .ufuncs import _where_xy, add, less, negative, power, reciprocal
from .shapes import expand_dims, reshape, stack


def _is_int_scalar(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _normalize(x, idx):
    """The index as a tuple with Ellipsis expanded and bool masks made integer."""
    if isinstance(idx, list):
        raise TypeError(
            "Using a non-tuple sequence for multidimensional indexing is not allowed; use "
            "`arr[array(seq)]` instead of `arr[seq]`. See "
            "https://github.com/jax-ml/jax/issues/4564 for more information."
        )
    if not isinstance(idx, tuple):
        idx = (idx,)
    idx = tuple(np.asarray(i) if isinstance(i, list) else i for i in idx)   # as JAX
    _check_bool_shapes(x, idx)
    out = []
    for i in idx:
        if isinstance(i, (str, float, complex)) or (
            isinstance(i, np.ndarray) and dtypes.is_float(i.dtype)
        ):
            raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                            f"{type(i).__name__ if not isinstance(i, np.ndarray) else i.dtype}")
        if isinstance(i, (Array, Tracer)) and not (dtypes.is_int(i.dtype) or i.dtype == np.bool_):
            raise TypeError(
                f"Indexer must have integer or boolean type, got indexer with type {i.dtype}"
            )
        is_bool_arr = (
            isinstance(i, (Array, Tracer, np.ndarray)) and i.dtype == np.bool_
        ) or isinstance(i, (bool, np.bool_))
        if is_bool_arr:
            if isinstance(i, Tracer) and i.to_concrete_value() is not None:
                i = i.to_concrete_value()
            if isinstance(i, Tracer):
                raise NonConcreteBooleanIndexError(
                    f"Array boolean indices must be concrete; got {i.aval.str_short()}\n\n"
                    "See https://docs.jax.dev/en/latest/errors.html"
                    "#jax.errors.NonConcreteBooleanIndexError")
            mask = np.asarray(i)
            if mask.ndim == 0:
                raise IndexError("scalar boolean indices are not supported")
            out.extend(np.nonzero(mask))
            continue
        out.append(i)
    n_ell = sum(1 for i in out if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in out if i is not None and i is not Ellipsis)
    if used > x.ndim:
        raise IndexError(
            f"Too many indices: {x.ndim}-dimensional array indexed with {used} regular indices."
        )
    if n_ell:
        k = next(n for n, i in enumerate(out) if i is Ellipsis)
        out = out[:k] + [slice(None)] * (x.ndim - used) + out[k + 1:]
    else:
        out = out + [slice(None)] * (x.ndim - used)
    return out


def _check_bool_shapes(x, idx):
    """A boolean mask must have the shape of the dimensions it indexes (JAX's IndexError)."""
    def ndims(i):
        if i is None or i is Ellipsis:
            return 0
        if isinstance(i, (Array, Tracer, np.ndarray)) and i.dtype == np.bool_:
            return i.ndim
        return 1
    used = sum(ndims(i) for i in idx)
    pos = 0
    for k, i in enumerate(idx):
        if i is Ellipsis:
            pos += max(x.ndim - used, 0)
            continue
        n = ndims(i)
        if n and isinstance(i, (Array, Tracer, np.ndarray)) and i.dtype == np.bool_ and i.ndim:
            want = x.shape[pos:pos + n]
            if tuple(i.shape) != tuple(want):
                raise IndexError(f"boolean index did not match shape of indexed array in index "
                                 f"{k}: got {tuple(i.shape)}, expected {tuple(want)}")
        pos += n


def _is_advanced(i) -> bool:
    return isinstance(i, (Array, Tracer, np.ndarray))


def _scalar_bool(i) -> bool | None:
    """``True``/``False`` for a scalar boolean index (Python, NumPy or a concrete 0-d array),
    else None."""
    if isinstance(i, (bool, np.bool_)):
        return bool(i)
    if isinstance(i, (Array, Tracer, np.ndarray)) and i.dtype == np.bool_ and i.ndim == 0:
        v = i.to_concrete_value() if isinstance(i, Tracer) else i
        if v is not None and not isinstance(v, Tracer):
            return bool(np.asarray(v))
    return None


def _scalar_bools(x, idx):
    """A scalar boolean index is a 0-d mask, as in NumPy and JAX: a new axis of size 1 indexed
    by ``[0]`` (``True``) or ``[]`` (``False``), an advanced index like any integer array.
    Returns ``(x with those axes, the index with the bools made integer arrays)``, or None when
    the index holds no scalar bool (or also holds an array mask)."""
    items = idx if isinstance(idx, tuple) else (idx,)
    flags = [_scalar_bool(i) for i in items]
    if all(f is None for f in flags):
        return None
    if any(f is None and _is_advanced(i) and i.dtype == np.bool_ for f, i in zip(flags, items)):
        return None
    used = sum(1 for f, i in zip(flags, items)
               if f is None and i is not None and i is not Ellipsis)
    n, new, dim = x.ndim, [], 0
    for f, i in zip(flags, items):
        if f is not None:
            x = expand_dims(x, dim)
            new.append(np.zeros(1 if f else 0, np.int32))
            dim += 1
        elif i is Ellipsis:
            new.append(i)
            dim += n - used         # the original dims the ellipsis stands for
        else:
            new.append(i)
            dim += 0 if i is None else 1
    return x, tuple(new)


def getitem(x, idx, mode=None, fill_value=None):
    x = asarray(x)
    sb = _scalar_bools(x, idx) if not isinstance(idx, list) else None
    if sb is not None:
        return getitem(sb[0], sb[1], mode, fill_value)
    items = _normalize(x, idx)
    advanced = any(_is_advanced(i) for i in items) or mode == "fill"
    # 1. basic indices: slices (with rev for negative steps), None; ints when no arrays
    dim = 0
    starts, limits, strides, revs, squeeze_dims, new_items = [], [], [], [], [], []
    for i in items:
        if i is None:
            new_items.append(None)
            continue
        n = x.shape[dim]
        if isinstance(i, slice):
            st, sp, step = i.indices(n)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step > 0:
                starts.append(st)
                limits.append(max(st, sp))
                strides.append(step)
            else:
                # reversed: elements st, st+step, ... > sp  ->  rev then forward slice
                cnt = len(range(st, sp, step))
                rs = n - 1 - st
                revs.append(dim)
                starts.append(rs)
                limits.append(rs + (cnt - 1) * (-step) + 1 if cnt else rs)
                strides.append(-step)
            new_items.append(slice(None))
        elif _is_int_scalar(i) and not advanced:
            k = int(i)
            k = k + n if k < 0 else k
            k = min(max(k, 0), max(n - 1, 0))
            starts.append(k)
            limits.append(min(k + 1, n))
            strides.append(1)
            squeeze_dims.append(dim)
            new_items.append("squeezed")
        else:
            starts.append(0)
            limits.append(n)
            strides.append(1)
            new_items.append(i)
        dim += 1
    y = x
    if revs:
        y = lax.rev(y, revs)
    if any((s, l, st) != (0, n, 1) for s, l, st, n in zip(starts, limits, strides, x.shape)):
        y = lax.slice(y, starts, limits, strides if any(s != 1 for s in strides) else None)
    if squeeze_dims:
        y = lax.squeeze(y, squeeze_dims)
    items = [i for i in new_items if not (isinstance(i, str) and i == "squeezed")]
    # 2. advanced indices -> one gather
    adv_pos = [
        k for k, i in enumerate([i for i in items if i is not None]) if not isinstance(i, slice)
    ]
    if adv_pos:
        y = _gather(y, [i for i in items if i is not None], adv_pos, mode, fill_value,
                    none_positions=[k for k, i in enumerate(items) if i is None])
        return y
    # 3. None -> new axes
    nones = [k for k, i in enumerate(items) if i is None]
    if nones:
        y = lax.expand_dims(y, nones)
    return y


def _gather(y, items, adv_pos, mode, fill_value, none_positions):
    arrays = []
    for k in adv_pos:
        a = items[k]
        a = asarray(a) if not isinstance(a, (Array, Tracer)) else a
        if not dtypes.is_int(a.dtype):
            raise TypeError(f"Indexer must have integer or boolean type, got {a.dtype}")
        a = lax.convert_element_type(a, np.int32) if a.dtype != np.int32 else a
        n = y.shape[k]
        a = _where_xy(less(a, 0), add(a, n), a)
        arrays.append(a)
    bshape = broadcast_shapes(*[a.shape for a in arrays])
    arrays = [broadcast_to(a, bshape) for a in arrays]
    indices = stack(arrays, axis=-1) if len(arrays) > 1 else expand_dims(arrays[0], -1)
    rest = [d for d in range(y.ndim) if d not in adv_pos]
    contiguous = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    nb = len(bshape)
    if contiguous:
        first = adv_pos[0]
        offset_dims = tuple(list(range(first)) + list(range(first + nb, nb + len(rest))))
    else:
        offset_dims = tuple(range(nb, nb + len(rest)))
    slice_sizes = [1 if d in adv_pos else y.shape[d] for d in range(y.ndim)]
    dn = GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(adv_pos),
                                start_index_map=tuple(adv_pos))
    out = lax.gather(y, indices, dn, slice_sizes, mode="fill" if mode == "fill" else "clip",
                     fill_value=fill_value)
    if none_positions:
        # NumPy puts new axes where the Nones stood relative to the remaining dims
        out = lax.expand_dims(
            out, [p if p < out.ndim + len(none_positions) else -1 for p in none_positions]
        )
    return out


# --------------------------------------------------------------------------- .at

class _IndexUpdateHelper:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, index):
        return _IndexUpdateRef(self.array, index)

    def __repr__(self):
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array, self.index = array, index

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None):
        m = None if mode is None or _mode(mode) == "clip" else "fill"
        return getitem(self.array, self.index, mode=m, fill_value=fill_value)

    def set(self, values, **kw):
        return _update(self.array, self.index, values, lax.scatter, kw)

    def add(self, values, **kw):
        return _update(self.array, self.index, values, lax.scatter_add, kw)

    def subtract(self, values, **kw):
        return _update(self.array, self.index, negative(values), lax.scatter_add, kw)

    def mul(self, values, **kw):
        return _update(self.array, self.index, values, lax.scatter_mul, kw)

    multiply = mul

    def divide(self, values, **kw):
        x = self.array
        return _update(
            x, self.index, reciprocal(asarray(values, dtype=x.dtype)), lax.scatter_mul, kw
        )

    def power(self, values, **kw):
        x = self.array
        cur = getitem(x, self.index)
        return _update(x, self.index, power(cur, values), lax.scatter, kw)

    def min(self, values, **kw):
        return _update(self.array, self.index, values, lax.scatter_min, kw)

    def max(self, values, **kw):
        return _update(self.array, self.index, values, lax.scatter_max, kw)


def _update(x, index, values, scatter_fn, kw):
    x = asarray(x)
    mode = kw.get("mode")
    if mode is not None:
        _mode(mode)                     # JAX's ValueError for an unknown mode
    if mode is not None and str(getattr(mode, "name", mode)).lower() in ("clip",):
        pos = getitem(reshape(lax.iota(np.int32, x.size), x.shape), index)
    else:
        pos = getitem(
            reshape(lax.iota(np.int32, x.size), x.shape), index, mode="fill", fill_value=-1
        )
    if isinstance(values, (Array, Tracer)) and values.dtype != x.dtype:
        values = lax.convert_element_type(values, x.dtype)
    elif not isinstance(values, (Array, Tracer)):
        v = np.asarray(values)
        if v.dtype.kind in "OSU" or (v.dtype.kind == "c" and x.dtype.kind != "c"):
            raise TypeError(
                f"cannot update an array of dtype {x.dtype} with values of dtype {v.dtype}"
            )
        values = asarray(v.astype(x.dtype))
    try:
        values = broadcast_to(values, pos.shape)
    except ValueError:
        raise ValueError(
            f"shape mismatch: value array of shape {values.shape} could not be broadcast "
            f"to indexing result of shape {pos.shape}"
        ) from None
    flat = reshape(x, (-1,))
    dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                 scatter_dims_to_operand_dims=(0,))
    out = scatter_fn(flat, expand_dims(pos, -1), values, dn, mode="fill")
    return reshape(out, x.shape)
