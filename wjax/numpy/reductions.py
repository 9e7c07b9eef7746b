"""Reductions along axes: sums, products, extrema, means and variances, their NaN-ignoring
forms, cumulative sums and products, quantiles and medians, and comparisons of whole arrays
(``allclose``, ``array_equal``).
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import lax
from .._src.core import dtypes
from .._src.core.ir import WeakScalar
from ._util import (_inexact, _int, _is_complex, _is_float, _select, _wrap_result, broadcast_shapes,
                    promote_args, result_type)
from . import creation
from .creation import (_arraylike, _promote_dtypes, asarray, astype, broadcast_to, full, full_like,
                       zeros_like)
from .ufuncs import (_where_xy, add, ceil, clip, equal, floor, isclose, less_equal, logical_and,
                     logical_not, logical_or, maximum, minimum, multiply, not_equal, sqrt, subtract,
                     true_divide)
from .shapes import (_axes, _axis, concatenate, diagonal, ravel, reshape, squeeze, take_along_axis,
                     transpose)


def _is_half(dt) -> bool:
    """float16 and bfloat16: JAX's sums, products, means and variances of them accumulate in
    float32 and round the result once (``upcast_f16_for_computation``)."""
    return np.dtype(dt) in _HALF


_HALF = (np.dtype(np.float16), np.dtype(dtypes.bfloat16))


def _reduction(name, lax_fn, bool_op=None, promote_int=False, identity=None, upcast=False):
    def red(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        if out is not None:
            raise NotImplementedError("The 'out' argument to jnp.%s is not supported." % name)
        a = _arraylike(name, a)
        axes = _axes(axis, a.ndim)
        dt = a.dtype
        if dtype is not None:
            dt = dtypes.check_supported(dtype)
        elif promote_int and (a.dtype == np.bool_ or dtypes.is_int(a.dtype)):
            dt = np.dtype(np.uint32 if dtypes.is_unsigned(a.dtype) else np.int32)
        x = a if a.dtype == dt else lax.convert_element_type(a, dt)
        if where is not None:
            if identity is None:
                if initial is None:
                    raise ValueError(
                        f"reduction operation {name} does not have an identity, so to use a "
                        "where mask one has to specify 'initial'"
                    )
                fillv = initial
            else:
                fillv = identity(dt)
            x = _where_fill(where, x, fillv)
        if (
            name in ("max", "min")
            and initial is None
            and builtins.any(a.shape[i] == 0 for i in axes)
        ):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        if dt == np.bool_ and bool_op is not None:
            r = bool_op(x, axes)
        elif upcast and _is_half(dt):
            r = lax.convert_element_type(
                lax_fn(lax.convert_element_type(x, np.float32), axes), dt)
        else:
            r = lax_fn(x, axes)
        if initial is not None:
            r = _combine_initial(name, r, initial)
        if keepdims:
            r = lax.expand_dims(r, axes) if axes else r
        if a.weak_type and dtype is None and r.dtype == a.dtype:
            pass
        return r
    red.__name__ = name
    return red


def _where_fill(where, x, fillv):
    w = broadcast_to(asarray(where), x.shape)
    return lax.select(w, x, lax.broadcast_in_dim(np.asarray(fillv, x.dtype), x.shape, ()))


def _combine_initial(name, r, initial):
    f = {"sum": add, "prod": multiply, "max": maximum, "min": minimum}[name]
    return astype(f(r, initial), r.dtype)


def _ident(v):
    return lambda dt: np.asarray(v).astype(dt)


sum = _reduction("sum", lax.reduce_sum, bool_op=lax.reduce_or, promote_int=True, identity=_ident(0),
                 upcast=True)


prod = _reduction(
    "prod", lax.reduce_prod, bool_op=lax.reduce_and, promote_int=True, identity=_ident(1),
    upcast=True)


max = _reduction("max", lax.reduce_max, identity=None)


min = _reduction("min", lax.reduce_min, identity=None)


amax, amin = max, min


def _max_identity(dt):
    return np.asarray(
        -np.inf if dtypes.is_float(dt) else (False if dt == np.bool_ else np.iinfo(dt).min)
    ).astype(dt)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    a = _arraylike("any", a)
    b = a if a.dtype == np.bool_ else not_equal(a, 0)
    if where is not None:
        b = logical_and(b, where)
    r = lax.reduce_or(b, _axes(axis, a.ndim))
    return lax.expand_dims(r, _axes(axis, a.ndim)) if keepdims else r


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    a = _arraylike("all", a)
    b = a if a.dtype == np.bool_ else not_equal(a, 0)
    if where is not None:
        b = logical_or(b, logical_not(where))
    r = lax.reduce_and(b, _axes(axis, a.ndim))
    return lax.expand_dims(r, _axes(axis, a.ndim)) if keepdims else r


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    a = _arraylike("mean", a)
    axes = _axes(axis, a.ndim)
    if where is None:
        n = int(np.prod([a.shape[i] for i in axes]))
        count = n
    else:
        count = sum(
            broadcast_to(asarray(where), a.shape).astype(np.int32), axis=axis, keepdims=keepdims
        )
    dt = dtypes.check_supported(dtype) if dtype is not None else (
        a.dtype if dtypes.is_inexact(a.dtype) else np.dtype(np.float32))
    if _is_half(dt):   # as JAX: in float32, rounded once
        return lax.convert_element_type(
            mean(a, axis=axis, dtype=np.float32, keepdims=keepdims, where=where), dt)
    s = sum(astype(a, dt) if a.dtype != dt else a, axis=axis, keepdims=keepdims, where=where)
    return _wrap_result(true_divide(s, count)).astype(dt) if not isinstance(count, int) else \
        lax.div(s, WeakScalar(np.asarray(count, dt)))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    if correction is not None:
        ddof = correction
    a = _arraylike("var", a)
    dt = dtypes.check_supported(dtype) if dtype is not None else (
        a.dtype if dtypes.is_inexact(a.dtype) else np.dtype(np.float32))
    if dtypes.is_complex(a.dtype) or dtypes.is_complex(dt):
        return _complex_var(a, axis, dt, ddof, keepdims, where)
    if _is_half(dt):   # as JAX: in float32, rounded once
        return lax.convert_element_type(var(a, axis=axis, dtype=np.float32, ddof=ddof,
                                            keepdims=keepdims, where=where), dt)
    a = astype(a, dt) if a.dtype != dt else a
    axes = _axes(axis, a.ndim)
    n = int(np.prod([a.shape[i] for i in axes])) if where is None else None
    if n:
        # One pass, shifted by the first element along the axes: the sum and the sum of
        # squares share one kernel (DESIGN.md: norm-style statistics in one pass), and the
        # shift keeps the subtraction from cancelling when the mean is large.
        first = lax.slice(a, [0] * a.ndim, [1 if i in axes else s for i, s in enumerate(a.shape)])
        d = subtract(a, first)
        s1 = lax.reduce_sum(d, axes)
        s2 = lax.reduce_sum(multiply(d, d), axes)
        v = lax.div(lax.sub(s2, lax.div(lax.mul(s1, s1), WeakScalar(np.asarray(n, dt)))),
                    WeakScalar(np.asarray(builtins.max(n - ddof, 0), dt)))
        v = lax.max(v, WeakScalar(np.asarray(0, dt)))
        return lax.expand_dims(v, axes) if keepdims else v
    m = mean(a, axis=axis, keepdims=True, where=where)
    d = subtract(a, m)
    sq = multiply(d, d)
    s = sum(sq, axis=axis, keepdims=keepdims, where=where)
    if n is not None:
        return lax.div(s, WeakScalar(np.asarray(builtins.max(n - ddof, 0), dt)))
    cnt = sum(broadcast_to(asarray(where), a.shape).astype(np.int32), axis=axis, keepdims=keepdims)
    return true_divide(s, cnt - ddof).astype(dt)


def _abs2(d):
    """|d|^2 of a complex value, as a real one."""
    re, im = lax.real(d), lax.imag(d)
    return lax.add(lax.mul(re, re), lax.mul(im, im))


def _complex_var(a, axis, dt, ddof, keepdims, where):
    """JAX's variance of complex values: the mean of |x - mean|^2, a real (float32) value."""
    a = astype(a, np.complex64) if a.dtype != np.complex64 else a
    rdt = np.dtype(np.float32)
    axes = _axes(axis, a.ndim)
    n = int(np.prod([a.shape[i] for i in axes])) if where is None else None
    if n:   # one pass, shifted by the first element (as the real case)
        first = lax.slice(a, [0] * a.ndim, [1 if i in axes else s for i, s in enumerate(a.shape)])
        d = subtract(a, first)
        s1 = lax.reduce_sum(d, axes)
        s2 = lax.reduce_sum(_abs2(d), axes)
        v = lax.div(lax.sub(s2, lax.div(_abs2(s1), WeakScalar(np.asarray(n, rdt)))),
                    WeakScalar(np.asarray(builtins.max(n - ddof, 0), rdt)))
        v = lax.max(v, WeakScalar(np.asarray(0, rdt)))
        return lax.expand_dims(v, axes) if keepdims else v
    m = mean(a, axis=axis, keepdims=True, where=where)
    s = sum(_abs2(subtract(a, m)), axis=axis, keepdims=keepdims, where=where)
    if n is not None:
        return lax.div(s, WeakScalar(np.asarray(builtins.max(n - ddof, 0), rdt)))
    cnt = sum(broadcast_to(asarray(where), a.shape).astype(np.int32), axis=axis, keepdims=keepdims)
    return true_divide(s, cnt - ddof).astype(rdt)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    return sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                    correction=correction))


def _arg_reduction(name, lax_fn):
    def f(a, axis=None, out=None, keepdims=False):
        a = _arraylike(name, a)
        if axis is None:
            a, axis = ravel(a), 0
        ax = _axis(axis, a.ndim)
        if a.shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        r = lax_fn(a, ax, np.int32)
        return lax.expand_dims(r, (ax,)) if keepdims else r
    f.__name__ = name
    return f


argmax = _arg_reduction("argmax", lax.argmax)


argmin = _arg_reduction("argmin", lax.argmin)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False):
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return asarray(False)
    a1, a2 = promote_args("array_equal", a1, a2)
    eq = lax.eq(a1, a2)
    if equal_nan and dtypes.is_inexact(a1.dtype):
        eq = lax.bitwise_or(eq, lax.bitwise_and(lax.ne(a1, a1), lax.ne(a2, a2)))
    return all(eq)


def array_equiv(a1, a2):
    a1, a2 = asarray(a1), asarray(a2)
    try:
        broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return asarray(False)
    return all(equal(a1, a2))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def ptp(a, axis=None, out=None, keepdims=False):
    return subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    a = _arraylike("count_nonzero", a)
    return sum(not_equal(a, 0) if a.dtype != np.bool_ else a, axis=axis, keepdims=keepdims,
                 dtype=np.int32)


def _nan_fill(a, v):
    a = asarray(a)
    if not dtypes.is_inexact(a.dtype):
        return a
    return _select(lax.ne(a, a), full_like(a, v), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return sum(
        _nan_fill(a, 0), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
    )


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return prod(
        _nan_fill(a, 1), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
    )


def _nan_extreme(name, red, fill):
    def f(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        a = asarray(a)
        if not (_is_float(a) or _is_complex(a)):   # complex: a NaN part is skipped, as JAX
            return red(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
        nan = lax.ne(a, a)
        r = red(_select(nan, full_like(a, fill), a), axis=axis, keepdims=keepdims, initial=initial,
                where=where)
        allnan = all(nan, axis=axis, keepdims=keepdims)
        return _where_xy(allnan, np.nan, r)
    f.__name__ = name
    return f


nanmax = _nan_extreme("nanmax", max, -np.inf)


nanmin = _nan_extreme("nanmin", min, np.inf)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    a = _arraylike("nanmean", a)
    if not dtypes.is_inexact(a.dtype):
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    valid = lax.bitwise_not(lax.ne(a, a))
    if where is not None:
        valid = logical_and(valid, where)
    n = sum(valid, axis=axis, keepdims=keepdims, dtype=dtype or a.dtype)
    s = nansum(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    return true_divide(s, n)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    if correction is not None:
        ddof = correction
    a = _arraylike("nanvar", a)
    if not _is_float(a):
        return var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
    if dtype is not None:
        a = astype(a, dtype)
    if _is_half(a.dtype):   # as JAX: in float32, rounded once
        return lax.convert_element_type(nanvar(astype(a, np.float32), axis=axis, ddof=ddof,
                                               keepdims=keepdims, where=where), a.dtype)
    m = nanmean(a, axis=axis, keepdims=True, where=where)
    nan = lax.ne(a, a)
    d = subtract(a, m)
    d = _select(nan, zeros_like(d), d)
    sq = lax.mul(d, d)
    norm = sum(lax.bitwise_not(nan), axis=axis, keepdims=keepdims, where=where, dtype=np.int32)
    norm = subtract(norm, ddof)
    bad = less_equal(norm, 0)
    s = sum(sq, axis=axis, keepdims=keepdims, where=where)
    s = _where_xy(bad, np.nan, s)
    return true_divide(s, astype(_where_xy(bad, 1, norm), s.dtype))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    return sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                         correction=correction))


def _nanarg(name, f, fill):
    def g(a, axis=None, out=None, keepdims=False):
        a = asarray(a)
        if not _is_float(a):
            return f(a, axis=axis, keepdims=keepdims)
        nan = lax.ne(a, a)
        r = f(_select(nan, full_like(a, fill), a), axis=axis, keepdims=keepdims)
        return _where_xy(all(nan, axis=axis, keepdims=keepdims), -1, r)
    g.__name__ = name
    return g


nanargmax = _nanarg("nanargmax", argmax, -np.inf)


nanargmin = _nanarg("nanargmin", argmin, np.inf)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = _arraylike("average", a)
    if weights is None:
        avg = mean(a, axis=axis, keepdims=keepdims)
        axes = _axes(axis, a.ndim)
        cnt = int(np.prod([a.shape[i] for i in axes]))
        scl = full_like(avg, cnt)
    else:
        w = _arraylike("average", weights)
        a, w = _promote_dtypes(a, w, inexact=True)
        if a.shape != w.shape:
            if axis is None:
                raise ValueError("Axis must be specified when shapes of a and weights differ.")
            if not isinstance(axis, int):
                raise ValueError("Single axis expected when shapes of a and weights differ")
            ax = _axis(axis, a.ndim)
            if w.ndim != 1 or w.shape[0] != a.shape[ax]:
                raise ValueError(f"Length of weights not compatible with specified axis: weights "
                                 f"shape {w.shape}, a shape {a.shape}, axis {axis}.")
            w = lax.broadcast_in_dim(w, a.shape, (ax,))
        dt = result_type(a, w)
        a, w = astype(a, dt), astype(w, dt)
        scl = sum(w, axis=axis, keepdims=keepdims)
        avg = true_divide(sum(multiply(a, w), axis=axis, keepdims=keepdims), scl)
    if returned:
        if scl.shape != avg.shape:
            scl = broadcast_to(scl, avg.shape)
        return avg, astype(scl, avg.dtype)
    return avg


def _quantile(a, q, axis, method, keepdims, squash_nans):
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', or 'nearest'")
    a, = _inexact("quantile", a)
    q = asarray(q)
    if not dtypes.is_float(q.dtype):
        q = astype(q, a.dtype)
    q = astype(q, a.dtype)
    if q.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
    keepdim = []
    if axis is None:
        if keepdims:
            keepdim = [1] * a.ndim
        a = ravel(a)
        axis = 0
    elif isinstance(axis, (tuple, list)):
        nd = a.ndim
        axis = tuple(_axis(x, nd) for x in axis)
        if len(set(axis)) != len(axis):
            raise ValueError("repeated axis")
        keepdim = [1 if i in axis else s for i, s in enumerate(a.shape)]
        keep = [i for i in range(nd) if i not in axis]
        a = transpose(a, keep + list(axis))
        a = reshape(a, tuple(a.shape[:len(keep)]) + (-1,))
        axis = a.ndim - 1
    else:
        axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    qn = q.ndim
    if squash_nans:
        a = lax.sort(a, dimension=axis)
        counts = sum(lax.bitwise_not(lax.ne(a, a)), axis=axis, dtype=a.dtype, keepdims=True)
    else:
        anynan = any(lax.ne(a, a), axis=axis, keepdims=True)
        a = lax.sort(a, dimension=axis)
        counts = creation.full((1,) * a.ndim, n, a.dtype)
    # positions: shape q.shape + a.shape with axis -> 1
    red_shape = tuple(1 if i == axis else s for i, s in enumerate(a.shape))
    qb = reshape(q, q.shape + (1,) * a.ndim)
    cb = reshape(counts, (1,) * qn + counts.shape)
    pos = multiply(qb, subtract(cb, 1))
    low, high = floor(pos), ceil(pos)
    hw = subtract(pos, low)
    lw = subtract(1, hw)
    top = maximum(subtract(cb, 1), 0)
    low = astype(clip(low, 0, top), np.int32)
    high = astype(clip(high, 0, top), np.int32)
    full = q.shape + red_shape
    low, high = broadcast_to(low, full), broadcast_to(high, full)
    ab = broadcast_to(reshape(a, (1,) * qn + a.shape), q.shape + a.shape) if qn else a
    lv = take_along_axis(ab, low, axis + qn, mode="clip")
    hv = take_along_axis(ab, high, axis + qn, mode="clip")
    hw = broadcast_to(hw, full)
    lw = broadcast_to(lw, full)
    if method == "linear":
        r = add(multiply(lv, lw), multiply(hv, hw))
    elif method == "lower":
        r = lv
    elif method == "higher":
        r = hv
    elif method == "nearest":
        r = _where_xy(less_equal(hw, 0.5), lv, hv)
    else:
        r = multiply(add(lv, hv), 0.5)
    if not squash_nans:
        r = _where_xy(broadcast_to(reshape(anynan, (1,) * qn + anynan.shape), full), np.nan, r)
    else:
        r = _where_xy(broadcast_to(equal(cb, 0), full), np.nan, r)
    if not keepdims:
        r = squeeze(r, axis + qn)
    elif keepdim:
        r = reshape(r, q.shape + tuple(keepdim))
    return r


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             interpolation=None):
    if interpolation is not None:
        method = interpolation
    return _quantile(a, q, axis, method, keepdims, False)


def nanquantile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    interpolation=None,
):
    if interpolation is not None:
        method = interpolation
    return _quantile(a, q, axis, method, keepdims, True)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               interpolation=None, out_sharding=None):
    q = true_divide(q, 100.0)
    return quantile(a, q, axis=axis, method=interpolation or method, keepdims=keepdims)


def nanpercentile(
    a,
    q,
    axis=None,
    out=None,
    overwrite_input=False,
    method="linear",
    keepdims=False,
    *,
    interpolation=None,
):
    q = true_divide(q, 100.0)
    return nanquantile(a, q, axis=axis, method=interpolation or method, keepdims=keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


def _cum_dtype(a, dtype):
    if dtype is not None:
        return dtypes.check_supported(dtype)
    if a.dtype == np.bool_:
        return _int
    return a.dtype


def _cumulative(name, lax_fn, nan_fill=None):
    def f(a, axis=None, dtype=None, out=None):
        a = asarray(a)
        if axis is None:
            a, axis = ravel(a), 0
        ax = _axis(axis, a.ndim)
        if nan_fill is not None:
            a = _nan_fill(a, nan_fill)
        dt = _cum_dtype(a, dtype)
        a = astype(a, dt) if a.dtype != dt or a.weak_type else a
        if a.shape[ax] == 0:
            return a
        return lax_fn(a, ax)
    f.__name__ = name
    return f


cumsum = _cumulative("cumsum", lax.cumsum)


cumprod = _cumulative("cumprod", lax.cumprod)


nancumsum = _cumulative("nancumsum", lax.cumsum, 0)


nancumprod = _cumulative("nancumprod", lax.cumprod, 1)


cumproduct = cumprod


def _cumulative_api(name, fn, ident):
    def f(x, /, *, axis=None, dtype=None, include_initial=False):
        x = asarray(x)
        if axis is None:
            if x.ndim > 1:
                raise ValueError(
                    f"{name}: axis must be specified for arrays of more than one dimension"
                )
            axis = 0
        ax = _axis(axis, builtins.max(x.ndim, 1))
        if x.ndim == 0:
            raise ValueError(f"{name} does not accept 0-d arrays")
        out = fn(x, axis=ax, dtype=dtype)
        if include_initial:
            shape = list(out.shape)
            shape[ax] = 1
            out = concatenate([full(shape, ident, out.dtype), out], axis=ax)
        return out
    f.__name__ = name
    return f


cumulative_sum = _cumulative_api("cumulative_sum", cumsum, 0)


cumulative_prod = _cumulative_api("cumulative_prod", cumprod, 1)


__all__ = [
    "sum", "prod", "max", "min", "amax", "amin", "any", "all", "mean", "var", "std", "argmax",
    "argmin", "allclose", "array_equal", "array_equiv", "trace", "ptp", "count_nonzero",
    "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax",
    "nanargmin", "average", "quantile", "nanquantile", "percentile", "nanpercentile", "median",
    "nanmedian", "cumsum", "cumprod", "nancumsum", "nancumprod", "cumproduct", "cumulative_sum",
    "cumulative_prod",
]
