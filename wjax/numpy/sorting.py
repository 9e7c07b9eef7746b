"""Sorting, searching and counting: ``sort``/``argsort``/``partition``, ``searchsorted``,
``nonzero``/``argwhere``/``where(c)``, ``bincount``, histograms, ``interp`` and ``trapezoid``.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from .._src.core.ir import WeakScalar
from .._src.core.tracing import ConcretizationTypeError, Tracer
from .._src.api.jit import jit
from ._util import _aval, _check_arg, _f32, _int, _is_array, _is_float
from .creation import (_arraylike, _promote_dtypes, asarray, astype, full, full_like, ones,
                       ones_like, unravel_index, zeros, zeros_like)
from . import ufuncs
from .ufuncs import (_where_xy, add, clip, equal, greater, greater_equal, isnan, less, less_equal,
                     logical_and, logical_not, minimum, mod, multiply, negative, not_equal,
                     subtract, true_divide)
from .shapes import (_axis, _take_axis, concatenate, diff, flip, moveaxis, put_along_axis, ravel,
                     reshape, stack, take)
from . import reductions
from .reductions import cumsum
from .grids import linspace


def _where(condition, x, y):
    return _where_xy(condition, x, y)


_where_jit = jit(_where)     # as JAX's jnp.where: jaxprs show a jit[name=_where] call


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``where(c, x, y)`` elementwise; ``where(c)`` is ``nonzero(c, size=..., fill_value=...)``."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        return _where_xy(condition, x, y)              # (JAX's ValueError)
    for i, v in enumerate((condition, x, y)):
        _check_arg("where", v, i)
    return _where_jit(condition, x, y)


def _sort_operand(name, a, axis, kind, order):
    """Checks sort/argsort's unsupported options; returns the operand (raveled for
    ``axis=None``) and the normalized axis."""
    if kind is not None:
        raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    if a.ndim == 0:
        raise ValueError(f"Cannot {name} a 0-d array")
    return a, _axis(axis, a.ndim)


def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    a, ax = _sort_operand("sort", a, axis, kind, order)
    if a.shape[ax] == 0:
        return a
    r = lax.sort(a, dimension=ax, is_stable=stable)
    return lax.rev(r, (ax,)) if descending else r


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    a, ax = _sort_operand("argsort", a, axis, kind, order)
    idt = _int if dtype is None else dtypes.check_supported(dtype)
    iota = lax.broadcasted_iota(idt, a.shape, ax)
    if a.shape[ax] == 0:
        return iota
    if descending and stable:
        a, iota = lax.rev(a, (ax,)), lax.rev(iota, (ax,))
    _, idx = lax.sort_key_val(a, iota, dimension=ax, is_stable=stable)
    return lax.rev(idx, (ax,)) if descending else idx


def sort_complex(a):
    """``a`` sorted along its last axis by real part, then imaginary part, as complex64."""
    a = asarray(a)
    return sort(a if a.dtype == np.complex64 else a.astype(np.complex64))


def lexsort(keys, axis=-1):
    keys = [asarray(k) for k in (keys if isinstance(keys, (list, tuple)) else list(keys))]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shapes = {k.shape for k in keys}
    if len(shapes) != 1:
        raise ValueError("all keys need to be the same shape")
    k0 = keys[0]
    if k0.ndim == 0:
        return asarray(0)
    ax = _axis(axis, k0.ndim)
    iota = lax.broadcasted_iota(_int, k0.shape, ax)
    if k0.shape[ax] == 0:
        return iota
    out = lax.sort(tuple(keys[::-1]) + (iota,), dimension=ax, num_keys=len(keys))
    return out[-1]


def _partition_operand(a, kth, axis):
    """partition/argpartition's common start: returns the normalized axis, ``kth`` checked and
    taken modulo the axis size, the operand with that axis moved last, and its negation (so
    that ``top_k`` of it finds the smallest entries)."""
    a = asarray(a)
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    kth = operator.index(kth)
    if not -n <= kth < n:
        raise ValueError(f"kth={kth} out of bounds for axis of size {n}")
    kth %= n
    arr = moveaxis(a, ax, -1)
    neg = negative(arr) if a.dtype != np.bool_ else logical_not(arr)
    return ax, kth, arr, neg


def partition(a, kth, axis=-1):
    ax, kth, arr, neg = _partition_operand(a, kth, axis)
    n = arr.shape[-1]
    bottom = lax.top_k(neg, kth + 1)[0]
    bottom = negative(bottom) if arr.dtype != np.bool_ else logical_not(bottom)
    top = lax.top_k(arr, n - kth - 1)[0]
    return moveaxis(concatenate([bottom, top], axis=-1), -1, ax)


def argpartition(a, kth, axis=-1):
    ax, kth, arr, neg = _partition_operand(a, kth, axis)
    n = arr.shape[-1]
    bottom = lax.top_k(neg, kth + 1)[1]
    # the top indices come from a proxy (ones, zeroed at the bottom indices), as JAX does
    proxy = put_along_axis(ones(arr.shape, _f32), bottom, 0.0, -1, inplace=False)
    top = lax.top_k(proxy, n - kth - 1)[1]
    return moveaxis(concatenate([bottom, top], axis=-1), -1, ax)


def _lt_total(x, y):
    """x < y in sort order (NaN last, -0.0 == 0.0; complex values lexicographically, each part
    in that order, as JAX's sort comparator)."""
    if dtypes.is_complex(_aval(x).dtype):
        xr, yr = lax.real(x), lax.real(y)
        same_re = lax.bitwise_or(lax.eq(xr, yr), lax.bitwise_and(lax.ne(xr, xr), lax.ne(yr, yr)))
        return lax.bitwise_or(_lt_total(xr, yr),
                              lax.bitwise_and(same_re, _lt_total(lax.imag(x), lax.imag(y))))
    if dtypes.is_float(_aval(x).dtype):
        return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(lax.ne(y, y), lax.eq(x, x)))
    return lax.lt(x, y)


def _searchsorted_1d(a, v, side):
    """Binary search of each element of ``v`` in the sorted 1-D ``a`` (one fused kernel)."""
    n = a.shape[0]
    shape = _aval(v).shape
    lo = zeros(shape, np.int32)
    hi = full(shape, n, np.int32)
    if n == 0:
        return lo
    steps = builtins.max(1, int(math.ceil(math.log2(n + 1))))
    one = WeakScalar(np.asarray(1, np.int32))
    for _ in range(steps):
        active = lax.lt(lo, hi)
        mid = lax.shift_right_logical(lax.add(lo, hi), one)
        am = _take_axis(a, lax.min(mid, WeakScalar(np.asarray(n - 1, np.int32))), 0)
        go = _lt_total(am, v) if side == "left" else lax.bitwise_not(_lt_total(v, am))
        go_right = lax.bitwise_and(active, go)
        go_left = lax.bitwise_and(active, lax.bitwise_not(go))
        lo = lax.select(go_right, lax.add(mid, one), lo)
        hi = lax.select(go_left, mid, hi)
    return lo


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    if side not in ("left", "right"):
        raise ValueError(f"{side!r} is an invalid value for keyword 'side'. Expected one of "
                         "['left', 'right'].")
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise ValueError(f"invalid method {method!r} for searchsorted")
    a, v = _arraylike("searchsorted", a), _arraylike("searchsorted", v)
    if a.ndim != 1:
        raise ValueError("a should be 1-dimensional")
    if sorter is not None:
        a = take(a, sorter)
    a, v = _promote_dtypes(a, v)
    return _searchsorted_1d(a, v, side)


def digitize(x, bins, right=False):
    x, bins = _arraylike("digitize", x), _arraylike("digitize", bins)
    if bins.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
    if bins.shape[0] == 0:
        return zeros(x.shape, np.int32)
    side = "right" if not right else "left"
    inc = searchsorted(bins, x, side=side)
    dec = subtract(bins.shape[0], searchsorted(bins[::-1], x, side=side))
    return where(greater_equal(bins[-1], bins[0]), inc, dec)


def _nonzero_flat(mask, size):
    """Flat positions of the first ``size`` true entries of a 1-D bool mask (N for missing ones)."""
    n = mask.shape[0]
    if n == 0:
        return zeros((size,), np.int32)
    cnt = lax.cumsum(astype(mask, np.int32), 0)
    want = lax.add(lax.iota(np.int32, size), WeakScalar(np.asarray(1, np.int32)))
    return _searchsorted_1d(cnt, want, "left")


def _static_size(name, size, count_fn):
    if size is not None:
        s = operator.index(size)
        if s < 0:
            raise ValueError(f"{name}: size must be nonnegative, got {size}")
        return s
    c = count_fn()
    if isinstance(c, Tracer) and c.to_concrete_value() is not None:
        c = c.to_concrete_value()
    if isinstance(c, Tracer):
        raise ConcretizationTypeError(
            f"The size argument of jnp.{name} must be statically specified to use jnp.{name} "
            f"within "
            "JAX transformations. Abstract tracer value encountered where concrete value is "
            "expected."
        )
    return int(np.asarray(c))


def nonzero(a, *, size=None, fill_value=None):
    a = _arraylike("nonzero", a)
    if a.ndim == 0:
        raise ValueError(
            "Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() "
            "instead."
        )
    mask = ravel(a if a.dtype == np.bool_ else not_equal(a, 0))
    size = _static_size("nonzero", size, lambda: reductions.sum(mask, dtype=np.int32))
    pos = _nonzero_flat(mask, size)
    valid = lax.lt(pos, WeakScalar(np.asarray(mask.shape[0], np.int32)))
    coords = (
        unravel_index(minimum(pos, builtins.max(mask.shape[0] - 1, 0)), a.shape)
        if mask.shape[0]
        else tuple(zeros((size,), np.int32) for _ in a.shape)
    )
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * a.ndim
    if len(fills) != a.ndim:
        raise ValueError(
            f"fill_value must be a scalar or a tuple of length {a.ndim}; got {fill_value}"
        )
    out = []
    for c, fv in zip(coords, fills):
        c = astype(c, np.int32)
        fvv = full_like(c, 0 if fv is None else fv)
        out.append(lax.select(valid, c, fvv))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(ravel(_arraylike("flatnonzero", a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    a = _arraylike("argwhere", a)
    if a.ndim == 0:
        r = argwhere(reshape(a, (1,)), size=size, fill_value=fill_value)
        return r[:, :0]
    cols = nonzero(a, size=size, fill_value=fill_value)
    return stack(cols, axis=1)


def _sorted_unique_mask(s, equal_nan):
    n = s.shape[0]
    if n == 0:
        return zeros((0,), bool)
    diff_ = not_equal(s[1:], s[:-1])
    if equal_nan and dtypes.is_inexact(s.dtype):
        diff_ = logical_and(diff_, logical_not(logical_and(isnan(s[1:]), isnan(s[:-1]))))
    return concatenate([full((1,), True), diff_])


def _unique_axis(a, axis, return_index, return_inverse, return_counts, size, fill_value):
    ax = _axis(axis, a.ndim)
    m = moveaxis(a, ax, 0)
    n = m.shape[0]
    rows = reshape(m, (n, -1))
    keys = [rows[:, j] for j in range(rows.shape[1])]
    iota = lax.iota(_int, n)
    if n == 0 or not keys:
        raise NotImplementedError("jnp.unique along an axis of an empty array")
    srt = lax.sort(tuple(keys) + (iota,), dimension=0, num_keys=len(keys))
    perm = srt[-1]
    srows = stack(srt[:-1], axis=1)
    diff_ = reductions.any(not_equal(srows[1:], srows[:-1]), axis=1)
    mask = concatenate([full((1,), True), diff_])
    size_ = _static_size("unique", size, lambda: reductions.sum(mask, dtype=np.int32))
    pos = _nonzero_flat(mask, size_)
    valid = lax.lt(pos, WeakScalar(np.asarray(n, np.int32)))
    posc = minimum(pos, n - 1)
    sel = _take_axis(perm, posc, 0)
    sel = where(valid, sel, perm[0])
    vals = _take_axis(m, sel, 0)
    if fill_value is not None:
        vals = where(
            reshape(valid, (-1,) + (1,) * (m.ndim - 1)), vals, astype(asarray(fill_value), a.dtype)
        )
    out = [moveaxis(vals, 0, ax)]
    if return_index:
        out.append(sel)
    if return_inverse:
        grp = subtract(cumsum(astype(mask, np.int32)), 1)
        out.append(zeros((n,), np.int32).at[perm].set(grp))
    if return_counts:
        nxt = concatenate([pos[1:], full((1,), n, np.int32)]) if size_ else pos
        nxt = where(less(nxt, n), nxt, n)
        out.append(where(valid, subtract(nxt, pos), 0))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    x = _arraylike("bincount", x)
    if not dtypes.is_int(x.dtype):
        raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
    if x.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError(f"minlength must be nonnegative, got {minlength}")
    if length is None:
        if isinstance(x, Tracer) and x.to_concrete_value() is None:
            raise ConcretizationTypeError(
                "The error occurred because jnp.bincount was jit-compiled without specifying the "
                "length argument: the output shape depends on the values of x. Pass length= to use "
                "jnp.bincount under jit.")
        mx = int(np.asarray(reductions.max(x))) if x.shape[0] else -1
        length = builtins.max(minlength, mx + 1)
    length = operator.index(length)
    if weights is None:
        w = ones(x.shape, np.int32)
    else:
        w = _arraylike("bincount", weights)
        if w.shape != x.shape:
            raise ValueError("shape of weights must match shape of x.")
        if w.dtype == np.bool_:
            w = astype(w, np.int32)
    idx = clip(astype(x, np.int32), 0)
    return zeros((length,), w.dtype).at[idx].add(w, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    a = ravel(_arraylike("histogram_bin_edges", a))
    if np.ndim(bins) == 1 or (_is_array(bins) and bins.ndim == 1):
        return _arraylike("histogram_bin_edges", bins)
    bins = operator.index(bins)
    dt = a.dtype if _is_float(a) else _f32
    if range is None:
        lo, hi = reductions.min(a), reductions.max(a)
    else:
        lo, hi = asarray(range[0], dt), asarray(range[1], dt)
        if not isinstance(lo, Tracer) and not isinstance(hi, Tracer) and float(lo) > float(hi):
            raise ValueError(f"max must be larger than min in range parameter, got range={range}")
    lo, hi = astype(lo, dt), astype(hi, dt)
    same = equal(lo, hi)
    lo = where(same, subtract(lo, 0.5), lo)
    hi = where(same, add(hi, 0.5), hi)
    return linspace(lo, hi, bins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
    a = ravel(_arraylike("histogram", a))
    if weights is not None:
        w = ravel(asarray(weights))
        if w.shape != a.shape:
            raise ValueError("weights should have the same shape as a.")
    else:
        w = ones_like(a)
    edges = histogram_bin_edges(a, bins, range, weights)
    nb = edges.shape[0]
    idx = searchsorted(edges, a, side="right")
    idx = where(equal(a, edges[-1]), nb - 1, idx)
    counts = zeros((nb,), w.dtype).at[idx].add(w, mode="drop")[1:]
    if density:
        widths = diff(edges)
        counts = true_divide(true_divide(counts, widths), reductions.sum(counts))
    return counts, edges


def _conv1d(name, x, y, mode, precision, preferred_element_type):
    x, y = asarray(x), asarray(y)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    x, y = _promote_dtypes(x, y, inexact=preferred_element_type is None)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
    rev_out = False
    if name == "correlate":
        if dtypes.is_complex(y.dtype):    # the second argument conjugated, as NumPy's
            y = ufuncs.conj(y)
        if x.shape[0] < y.shape[0]:
            x, y = y, x
            rev_out = True
    elif x.shape[0] < y.shape[0]:
        x, y = y, x
    if name == "convolve":
        y = flip(y)
    m = y.shape[0]
    if mode == "valid":
        padding = [(0, 0)]
    elif mode == "same":
        padding = [(m // 2, m - m // 2 - 1)]
    elif mode == "full":
        padding = [(m - 1, m - 1)]
    else:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    r = lax.conv_general_dilated(reshape(x, (1, 1, -1)), reshape(y, (1, 1, -1)), (1,), padding,
                                 preferred_element_type=preferred_element_type)
    r = reshape(r, (-1,))
    return flip(r) if rev_out else r


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


def interp(x, xp, fp, left=None, right=None, period=None):
    x, xp, fp = _arraylike("interp", x), _arraylike("interp", xp), _arraylike("interp", fp)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("xp and fp must be one-dimensional")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("xp and fp must have the same length")
    if xp.shape[0] == 0:
        raise ValueError("xp and fp must be non-empty")
    if dtypes.is_complex(x.dtype) or dtypes.is_complex(xp.dtype):
        raise ValueError("jnp.interp: complex x values not supported.")
    x, xp, fp = _promote_dtypes(x, xp, fp, inexact=True)
    if period is not None:
        period = ufuncs.abs(asarray(period, x.dtype))
        x = mod(x, period)
        xp = mod(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([subtract(xp[-1:], period), xp, add(xp[:1], period)])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    i = clip(searchsorted(xp, x, side="right"), 1, builtins.max(n - 1, 1))
    if n == 1:
        r = full_like(x, 0) + fp[0]
    else:
        xl, xr = take(xp, subtract(i, 1), mode="clip"), take(xp, i, mode="clip")
        fl, fr = take(fp, subtract(i, 1), mode="clip"), take(fp, i, mode="clip")
        dx = subtract(xr, xl)
        eps = float(np.spacing(dtypes.finfo(x.dtype).eps))
        dx0 = less_equal(ufuncs.abs(dx), eps)
        r = where(dx0, fl, add(fl, multiply(true_divide(subtract(x, xl), where(dx0, 1, dx)),
                                                  subtract(fr, fl))))
    if period is None:
        r = where(less(x, xp[0]), fp[0] if left is None else left, r)
        r = where(greater(x, xp[-1]), fp[-1] if right is None else right, r)
    return r


def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = _arraylike("trapezoid", y)
    ax = _axis(axis, y.ndim)
    n = y.shape[ax]
    if n < 2:
        return reductions.sum(zeros_like(y), axis=ax)
    lo = lax.slice_in_dim(y, 0, n - 1, 1, ax)
    hi = lax.slice_in_dim(y, 1, n, 1, ax)
    if x is None:
        d = dx
    else:
        x = _arraylike("trapezoid", x)
        d = diff(x) if x.ndim == 1 else diff(x, axis=ax)
        if x.ndim == 1:
            d = reshape(d, [n - 1 if i == ax else 1 for i in range(y.ndim)])
    return reductions.sum(multiply(multiply(add(lo, hi), 0.5), d), axis=ax)


__all__ = [
    "where", "sort", "sort_complex", "argsort", "lexsort", "partition", "argpartition",
    "searchsorted", "digitize", "nonzero", "flatnonzero", "argwhere", "bincount",
    "histogram_bin_edges", "histogram", "convolve", "correlate", "interp", "trapezoid",
]
