"""More of jax.numpy (issue 3): ufuncs, creation, reductions, shapes, products,
search/sort/cumulative, set-like functions and the array-API aliases.

Everything composes wjax.lax (so primitives computed by WGSL kernels).  Only
functions whose output *shape* depends on values (``nonzero``, ``unique``,
``argwhere``, ``bincount`` without ``length``, ...) read a value back, and only
outside ``jit``; under ``jit`` they need ``size=`` (or ``length=``) like JAX.
"""
from __future__ import annotations

import builtins
import math
import operator
import string

import numpy as np

from ..core import dtypes
from .. import lax
from ..core.ir import WeakScalar
from ..prims.indexing import GatherDimensionNumbers, ScatterDimensionNumbers
from ..core.tracing import ConcretizationTypeError, Tracer
from . import _core as C
from ._core import _aval, _arraylike, _axes, _axis, _is_array, _wrap_result, asarray, promote_args

__array_api_version__ = "2023.12"

_int = np.dtype(np.int32)
_f32 = np.dtype(np.float32)


def _const(x, v):
    """``v`` in ``x``'s dtype (weak only when ``x`` is a weak scalar, as JAX's ``lax._const``)."""
    return lax._const(x, v)


def _is_float(x) -> bool:
    return dtypes.is_float(_aval(x).dtype)


def _inexact(name, *args):
    return promote_args(name, *args, to_inexact=True)


def _promote_dtypes(*xs, inexact=False):
    """Converts to the common dtype without broadcasting shapes."""
    xs = [asarray(x) for x in xs]
    dt = C.result_type(*xs)
    if inexact and not dtypes.is_float(dt):
        dt = _f32
    return [C.astype(x, dt) if x.dtype != dt else x for x in xs]


def _concrete(x, what):
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is not None:
            return v
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: {what}. "
            "The size of the result depends on values; pass a static size (size=/length=) to use "
            "this function under jit.")
    return np.asarray(x)


def _isnan(x):
    return lax.ne(x, x) if _is_float(x) else C.full_like(x, False, dtype=np.bool_)


def _select(c, x, y):
    """where with already-promoted, equal-shape operands (scalars broadcast)."""
    return lax.select(c, x, y)


# =========================================================================== elementwise

def hypot(x1, x2, /):
    x1, x2 = _inexact("hypot", x1, x2)
    a, b = lax.abs(x1), lax.abs(x2)
    inf = lax.bitwise_or(C.isinf(a), C.isinf(b))
    hi, lo = lax.max(a, b), lax.min(a, b)
    zero = lax.eq(hi, _const(hi, 0))
    safe = _select(zero, C.ones_like(hi), hi)
    r = lax.mul(hi, lax.sqrt(lax.add(lax.integer_pow(lax.div(lo, safe), 2), _const(hi, 1))))
    r = _select(zero, hi, r)
    return _select(inf, C.full_like(r, np.inf), r)


def signbit(x, /):
    x, = promote_args("signbit", x)
    dt = _aval(x).dtype
    if dt == np.bool_:
        return C.full_like(x, False, dtype=np.bool_)
    if dtypes.is_unsigned(dt):
        return C.full_like(x, False, dtype=np.bool_)
    if dtypes.is_int(dt):
        return lax.lt(x, _const(x, 0))
    if dt != _f32:
        x = lax.convert_element_type(x, _f32)
    bits = lax.bitcast_convert_type(x, np.int32)
    return lax.lt(bits, WeakScalar(np.asarray(0, np.int32)))


def copysign(x1, x2, /):
    x1, x2 = _inexact("copysign", x1, x2)
    a = lax.abs(x1)
    return _select(signbit(x2), lax.neg(a), a)


def heaviside(x1, x2, /):
    x1, x2 = _inexact("heaviside", x1, x2)
    zero, one = C.zeros_like(x1), C.ones_like(x1)
    return _select(lax.lt(x1, _const(x1, 0)), zero,
                   _select(lax.gt(x1, _const(x1, 0)), one, _select(lax.ne(x1, x1), x1, x2)))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _arraylike("nan_to_num", x)
    if not _is_float(x):
        return x
    info = np.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = _select(C.isnan(x), C.full_like(x, nan), x)
    out = _select(lax.eq(out, _const(out, np.inf)), C.full_like(x, posinf), out)
    return _select(lax.eq(out, _const(out, -np.inf)), C.full_like(x, neginf), out)


def fmax(x1, x2):
    x1, x2 = promote_args("fmax", x1, x2)
    return _wrap_result(_select(lax.bitwise_or(lax.gt(x1, x2), _isnan(x2)), x1, x2))


def fmin(x1, x2):
    x1, x2 = promote_args("fmin", x1, x2)
    return _wrap_result(_select(lax.bitwise_or(lax.lt(x1, x2), _isnan(x2)), x1, x2))


def logaddexp(x1, x2, /):
    x1, x2 = _inexact("logaddexp", x1, x2)
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    return _select(lax.ne(delta, delta), lax.add(x1, x2),
                   lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta))))))


def logaddexp2(x1, x2, /):
    x1, x2 = _inexact("logaddexp2", x1, x2)
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    return _select(lax.ne(delta, delta), lax.add(x1, x2),
                   lax.add(amax, lax.div(lax.log1p(lax.exp2(lax.neg(lax.abs(delta)))),
                                         _const(x1, np.log(2)))))


def sinc(x, /):
    x, = _inexact("sinc", x)
    zero = lax.eq(x, _const(x, 0))
    px = lax.mul(x, _const(x, np.pi))
    safe = _select(zero, C.ones_like(x), px)
    return _select(zero, C.ones_like(x), lax.div(lax.sin(safe), safe))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = promote_args("isclose", a, b)
    if not _is_float(a):
        return _wrap_result(lax.eq(a, b))
    dt = _aval(a).dtype
    rt, at = WeakScalar(np.asarray(rtol, dt)), WeakScalar(np.asarray(atol, dt))
    out = lax.le(lax.abs(lax.sub(a, b)), lax.add(at, lax.mul(rt, lax.abs(b))))
    ai, bi = C.isinf(a), C.isinf(b)
    out = lax.bitwise_and(out, lax.bitwise_not(lax.bitwise_or(ai, bi)))
    out = lax.bitwise_or(out, lax.bitwise_and(lax.bitwise_and(ai, bi), lax.eq(a, b)))
    an, bn = lax.ne(a, a), lax.ne(b, b)
    out = lax.bitwise_and(out, lax.bitwise_not(lax.bitwise_or(an, bn)))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(an, bn))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return C.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False):
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return C.asarray(False)
    a1, a2 = promote_args("array_equal", a1, a2)
    eq = lax.eq(a1, a2)
    if equal_nan and _is_float(a1):
        eq = lax.bitwise_or(eq, lax.bitwise_and(lax.ne(a1, a1), lax.ne(a2, a2)))
    return C.all(eq)


def array_equiv(a1, a2):
    a1, a2 = asarray(a1), asarray(a2)
    try:
        C.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return C.asarray(False)
    return C.all(C.equal(a1, a2))


def fabs(x, /):
    x, = _inexact("fabs", x)
    return lax.abs(x)


def fmod(x1, x2, /):
    x1, x2 = promote_args("fmod", x1, x2)
    if _aval(x1).dtype == np.bool_:
        raise TypeError("fmod does not accept dtype bool")
    return _wrap_result(lax.rem(x1, C._nonzero_divisor(x2)))   # integer fmod(x, 0) is 0


def ldexp(x1, x2, /):
    x2 = _arraylike("ldexp", x2)
    if not dtypes.is_int(x2.dtype):
        raise ValueError(f"ldexp: x2 must be of integer type, got {x2.dtype}")
    x1, = _inexact("ldexp", x1)
    e = C.astype(x2, _aval(x1).dtype)
    h = lax.floor(lax.div(e, _const(e, 2)))
    return C.multiply(C.multiply(x1, lax.exp2(h)), lax.exp2(lax.sub(e, h)))


def frexp(x, /):
    x, = _inexact("frexp", x)
    ax = lax.abs(x)
    special = lax.bitwise_or(lax.eq(x, _const(x, 0)), lax.bitwise_not(lax.is_finite(x)))
    safe = _select(special, C.ones_like(ax), ax)
    e = lax.add(lax.floor(lax.log2(safe) if hasattr(lax, "log2") else
                          lax.div(lax.log(safe), _const(safe, np.log(2)))), _const(safe, 1))
    m = lax.div(x, lax.exp2(e))
    am = lax.abs(m)
    up = lax.ge(am, _const(am, 1))
    down = lax.lt(am, _const(am, 0.5))
    e = _select(up, lax.add(e, _const(e, 1)), _select(down, lax.sub(e, _const(e, 1)), e))
    m = lax.div(x, lax.exp2(e))
    m = _select(special, x, m)
    e = _select(special, C.zeros_like(e), e)
    return m, lax.convert_element_type(e, np.int32)


def modf(x, /, out=None):
    x, = _inexact("modf", x)
    whole = _select(lax.ge(x, _const(x, 0)), lax.floor(x), lax.ceil(x))
    return lax.sub(x, whole), whole


def isneginf(x, /, out=None):
    x = _arraylike("isneginf", x)
    return C.logical_and(C.isinf(x), signbit(x)) if _is_float(x) else C.full_like(x, False, dtype=bool)


def isposinf(x, /, out=None):
    x = _arraylike("isposinf", x)
    return C.logical_and(C.isinf(x), C.logical_not(signbit(x))) if _is_float(x) else \
        C.full_like(x, False, dtype=bool)


def isreal(x):
    return C.full_like(x, True, dtype=bool)


def iscomplex(x):
    return C.full_like(x, False, dtype=bool)


def isrealobj(x):
    return True


def iscomplexobj(x):
    return False


def isscalar(element):
    if _is_array(element):
        return element.ndim == 0
    return np.isscalar(element)


def real(x, /):
    return _arraylike("real", x)


def imag(x, /):
    return C.zeros_like(x)


def conjugate(x, /):
    return _arraylike("conjugate", x)


conj = conjugate


def angle(z, deg=False):
    z, = _inexact("angle", z)
    r = lax.atan2(C.zeros_like(z), z)
    return C.rad2deg(r) if deg else r


def gcd(x1, x2, /):
    x1, x2 = promote_args("gcd", x1, x2)
    if not dtypes.is_int(_aval(x1).dtype):
        raise ValueError("Arguments to jax.numpy.gcd must be integers.")
    a, b = lax.abs(x1), lax.abs(x2)
    for _ in range(48):   # Euclid converges within 47 steps for 32-bit integers
        nz = lax.ne(b, _const(b, 0))
        safe = _select(nz, b, C.ones_like(b))
        a, b = _select(nz, b, a), _select(nz, lax.rem(a, safe), b)
    return a


def lcm(x1, x2, /):
    x1, x2 = promote_args("lcm", x1, x2)
    d = gcd(x1, x2)
    zero = lax.eq(d, _const(d, 0))
    safe = _select(zero, C.ones_like(d), d)
    return _select(zero, C.zeros_like(d), lax.abs(lax.mul(x1, lax.div(x2, safe))))


def float_power_(x1, x2):
    return C.float_power(x1, x2)


# array-API spellings
acos, acosh, asin, asinh, atan, atanh = C.arccos, C.arccosh, C.arcsin, C.arcsinh, C.arctan, C.arctanh
atan2 = C.arctan2
bitwise_left_shift, bitwise_right_shift = C.left_shift, C.right_shift
pow = C.power


def isdtype(dtype, kind):
    dt = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            ok = {"bool": dt == np.bool_, "signed integer": dt.kind == "i",
                  "unsigned integer": dt.kind == "u", "integral": dt.kind in "iu",
                  "real floating": dt.kind == "f", "complex floating": dt.kind == "c",
                  "numeric": dt.kind in "iufc"}.get(k)
            if ok is None:
                raise ValueError(f"Unrecognized kind: {k!r}")
            if ok:
                return True
        elif np.dtype(k) == dt:
            return True
    return False


def can_cast(from_, to, casting="safe"):
    return np.can_cast(from_ if not _is_array(from_) else from_.dtype, to, casting=casting)


# =========================================================================== creation

def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    args = [asarray(x) for x in xi]
    if any(a.ndim != 1 for a in args):
        raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                         f"{[a.shape for a in args]}")
    if not args:
        return []
    shape = [a.shape[0] for a in args]
    if indexing == "xy" and len(args) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(args):
        d = i
        if indexing == "xy" and len(args) >= 2 and i < 2:
            d = 1 - i
        if sparse:
            s = [1] * len(args)
            s[d] = a.shape[0]
            out.append(C.reshape(a, s))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (d,)))
    return out


def _tri_mask(shape, k, lower):
    n, m = shape[-2], shape[-1]
    r = lax.broadcasted_iota(np.int32, (n, m), 0)
    c = lax.broadcasted_iota(np.int32, (n, m), 1)
    k = WeakScalar(np.asarray(int(k), np.int32))
    return lax.le(c, lax.add(r, k)) if lower else lax.ge(c, lax.add(r, k))


def _tri_part(name, m, k, lower):
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    mask = lax.broadcast_in_dim(_tri_mask(m.shape, k, lower), m.shape, (m.ndim - 2, m.ndim - 1))
    return lax.select(mask, m, C.zeros_like(m))


def tril(m, k=0):
    return _tri_part("tril", m, k, True)


def triu(m, k=0):
    return _tri_part("triu", m, k, False)


def tril_indices(n, k=0, m=None):
    r, c = np.tril_indices(n, k, m)
    return asarray(r.astype(np.int32)), asarray(c.astype(np.int32))


def triu_indices(n, k=0, m=None):
    r, c = np.triu_indices(n, k, m)
    return asarray(r.astype(np.int32)), asarray(c.astype(np.int32))


def diag_indices(n, ndim=2):
    return tuple(C.arange(n) for _ in range(ndim))


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = _arraylike("diagonal", a)
    if a.ndim < 2:
        raise ValueError("diagonal requires an array of at least two dimensions.")
    ax1, ax2 = _axis(axis1, a.ndim, "axis1"), _axis(axis2, a.ndim, "axis2")
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 must be different")
    a = C.moveaxis(a, (ax1, ax2), (-2, -1))
    n, m = a.shape[-2], a.shape[-1]
    offset = operator.index(offset)
    L = builtins.max(0, builtins.min(n + builtins.min(offset, 0), m - builtins.max(offset, 0)))
    if L == 0:
        return C.zeros(a.shape[:-2] + (0,), a.dtype)
    i = np.arange(L, dtype=np.int32) + builtins.max(-offset, 0)
    j = np.arange(L, dtype=np.int32) + builtins.max(offset, 0)
    flat = C.reshape(a, a.shape[:-2] + (n * m,))
    return _take_axis(flat, i * m + j, flat.ndim - 1)


def diag(v, k=0):
    v = _arraylike("diag", v)
    if v.ndim == 1:
        n = v.shape[0] + builtins.abs(k)
        r = lax.broadcasted_iota(np.int32, (n, n), 0)
        c = lax.broadcasted_iota(np.int32, (n, n), 1)
        on = lax.eq(lax.sub(c, r), WeakScalar(np.asarray(k, np.int32)))
        src = C.clip(lax.sub(r, WeakScalar(np.asarray(builtins.max(-k, 0), np.int32))), 0,
                     builtins.max(v.shape[0] - 1, 0)) if v.shape[0] else None
        if src is None:
            return C.zeros((n, n), v.dtype)
        vals = _take_axis(v, src, 0)
        return lax.select(on, vals, C.zeros_like(vals))
    if v.ndim == 2:
        return diagonal(v, k)
    raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k=0):
    return diag(C.ravel(_arraylike("diagflat", v)), k)


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
    return a.at[idx].set(C.ravel(C.broadcast_to(asarray(val, a.dtype), (n,))) if np.ndim(val) else val)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return C.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def vander(x, N=None, increasing=False):
    x = _arraylike("vander", x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = x.shape[0] if N is None else operator.index(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    if N == 0:
        return C.zeros((x.shape[0], 0), x.dtype)
    cols = [C.ones_like(x)]
    for _ in range(1, N):
        cols.append(C.multiply(cols[-1], x))
    out = C.stack(cols, axis=1)
    return out if increasing else flip(out, 1)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    start, stop = asarray(start, _f32), asarray(stop, _f32)
    sign = C.sign(start)
    ls = C.logspace(C.log10(C.abs(start)), C.log10(C.abs(stop)), num, endpoint=endpoint, axis=axis)
    out = C.multiply(sign, ls)
    if num > 0:
        out = out.at[0].set(start) if axis == 0 else out
        if endpoint and num > 1 and axis == 0:
            out = out.at[-1].set(stop)
    return C.astype(out, dtype) if dtype is not None else out


def indices(dimensions, dtype=None, sparse=False):
    dt = np.dtype(np.int32) if dtype is None else dtypes.check_supported(dtype)
    dims = tuple(dimensions)
    out = []
    for i, n in enumerate(dims):
        if sparse:
            s = [1] * len(dims)
            s[i] = n
            out.append(C.reshape(lax.iota(dt, n), s))
        else:
            out.append(lax.broadcasted_iota(dt, dims, i))
    return tuple(out) if sparse else (C.stack(out) if out else C.zeros((0,), dt))


def unravel_index(indices, shape):
    idx = asarray(indices)
    shape = tuple(int(s) for s in shape)
    total = int(np.prod(shape))
    idx = _select(lax.lt(idx, _const(idx, 0)), lax.add(idx, _const(idx, total)), idx)
    out = []
    for s in reversed(shape):
        out.append(lax.rem(idx, _const(idx, s)) if s else C.zeros_like(idx))
        idx = lax.div(idx, _const(idx, s)) if s else idx
    return tuple(reversed(out))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    out = None
    stride = 1
    for i, d in zip(reversed(multi_index), reversed(tuple(dims))):
        i = asarray(i)
        if mode == "clip":
            i = C.clip(i, 0, d - 1)
        elif mode == "wrap":
            i = C.mod(i, d)
        t = C.multiply(i, stride)
        out = t if out is None else C.add(out, t)
        stride *= d
    return out


# =========================================================================== reductions

def ptp(a, axis=None, out=None, keepdims=False):
    return C.subtract(C.max(a, axis=axis, keepdims=keepdims), C.min(a, axis=axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    a = _arraylike("count_nonzero", a)
    return C.sum(C.not_equal(a, 0) if a.dtype != np.bool_ else a, axis=axis, keepdims=keepdims,
                 dtype=np.int32)


def _nan_fill(a, v):
    a = asarray(a)
    if not _is_float(a):
        return a
    return _select(lax.ne(a, a), C.full_like(a, v), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return C.sum(_nan_fill(a, 0), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return C.prod(_nan_fill(a, 1), axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)


def _nan_extreme(name, red, fill):
    def f(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        a = asarray(a)
        if not _is_float(a):
            return red(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
        nan = lax.ne(a, a)
        r = red(_select(nan, C.full_like(a, fill), a), axis=axis, keepdims=keepdims, initial=initial,
                where=where)
        allnan = C.all(nan, axis=axis, keepdims=keepdims)
        return C.where(allnan, np.nan, r)
    f.__name__ = name
    return f


nanmax = _nan_extreme("nanmax", C.max, -np.inf)
nanmin = _nan_extreme("nanmin", C.min, np.inf)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    a = _arraylike("nanmean", a)
    if not _is_float(a):
        return C.mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    valid = lax.bitwise_not(lax.ne(a, a))
    if where is not None:
        valid = C.logical_and(valid, where)
    n = C.sum(valid, axis=axis, keepdims=keepdims, dtype=dtype or a.dtype)
    s = nansum(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    return C.true_divide(s, n)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    if correction is not None:
        ddof = correction
    a = _arraylike("nanvar", a)
    if not _is_float(a):
        return C.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
    if dtype is not None:
        a = C.astype(a, dtype)
    m = nanmean(a, axis=axis, keepdims=True, where=where)
    nan = lax.ne(a, a)
    d = C.subtract(a, m)
    d = _select(nan, C.zeros_like(d), d)
    sq = lax.mul(d, d)
    norm = C.sum(lax.bitwise_not(nan), axis=axis, keepdims=keepdims, where=where, dtype=np.int32)
    norm = C.subtract(norm, ddof)
    bad = C.less_equal(norm, 0)
    s = C.sum(sq, axis=axis, keepdims=keepdims, where=where)
    s = C.where(bad, np.nan, s)
    return C.true_divide(s, C.astype(C.where(bad, 1, norm), s.dtype))


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, correction=None):
    return C.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                         correction=correction))


def _nanarg(name, f, fill):
    def g(a, axis=None, out=None, keepdims=False):
        a = asarray(a)
        if not _is_float(a):
            return f(a, axis=axis, keepdims=keepdims)
        nan = lax.ne(a, a)
        r = f(_select(nan, C.full_like(a, fill), a), axis=axis, keepdims=keepdims)
        return C.where(C.all(nan, axis=axis, keepdims=keepdims), -1, r)
    g.__name__ = name
    return g


nanargmax = _nanarg("nanargmax", C.argmax, -np.inf)
nanargmin = _nanarg("nanargmin", C.argmin, np.inf)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    a = _arraylike("average", a)
    if weights is None:
        avg = C.mean(a, axis=axis, keepdims=keepdims)
        axes = _axes(axis, a.ndim)
        cnt = int(np.prod([a.shape[i] for i in axes]))
        scl = C.full_like(avg, cnt)
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
        dt = C.result_type(a, w)
        a, w = C.astype(a, dt), C.astype(w, dt)
        scl = C.sum(w, axis=axis, keepdims=keepdims)
        avg = C.true_divide(C.sum(C.multiply(a, w), axis=axis, keepdims=keepdims), scl)
    if returned:
        if scl.shape != avg.shape:
            scl = C.broadcast_to(scl, avg.shape)
        return avg, C.astype(scl, avg.dtype)
    return avg


def _quantile(a, q, axis, method, keepdims, squash_nans):
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', or 'nearest'")
    a, = _inexact("quantile", a)
    q = asarray(q)
    if not dtypes.is_float(q.dtype):
        q = C.astype(q, a.dtype)
    q = C.astype(q, a.dtype)
    if q.ndim > 1:
        raise ValueError(f"q must be have rank <= 1, got shape {q.shape}")
    keepdim = []
    if axis is None:
        if keepdims:
            keepdim = [1] * a.ndim
        a = C.ravel(a)
        axis = 0
    elif isinstance(axis, (tuple, list)):
        nd = a.ndim
        axis = tuple(_axis(x, nd) for x in axis)
        if len(set(axis)) != len(axis):
            raise ValueError("repeated axis")
        keepdim = [1 if i in axis else s for i, s in enumerate(a.shape)]
        keep = [i for i in range(nd) if i not in axis]
        a = C.transpose(a, keep + list(axis))
        a = C.reshape(a, tuple(a.shape[:len(keep)]) + (-1,))
        axis = a.ndim - 1
    else:
        axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    qn = q.ndim
    if squash_nans:
        a = lax.sort(a, dimension=axis)
        counts = C.sum(lax.bitwise_not(lax.ne(a, a)), axis=axis, dtype=a.dtype, keepdims=True)
    else:
        anynan = C.any(lax.ne(a, a), axis=axis, keepdims=True)
        a = lax.sort(a, dimension=axis)
        counts = C.full((1,) * a.ndim, n, a.dtype)
    # positions: shape q.shape + a.shape with axis -> 1
    red_shape = tuple(1 if i == axis else s for i, s in enumerate(a.shape))
    qb = C.reshape(q, q.shape + (1,) * a.ndim)
    cb = C.reshape(counts, (1,) * qn + counts.shape)
    pos = C.multiply(qb, C.subtract(cb, 1))
    low, high = C.floor(pos), C.ceil(pos)
    hw = C.subtract(pos, low)
    lw = C.subtract(1, hw)
    top = C.maximum(C.subtract(cb, 1), 0)
    low = C.astype(C.clip(low, 0, top), np.int32)
    high = C.astype(C.clip(high, 0, top), np.int32)
    full = q.shape + red_shape
    low, high = C.broadcast_to(low, full), C.broadcast_to(high, full)
    ab = C.broadcast_to(C.reshape(a, (1,) * qn + a.shape), q.shape + a.shape) if qn else a
    lv = take_along_axis(ab, low, axis + qn, mode="clip")
    hv = take_along_axis(ab, high, axis + qn, mode="clip")
    hw = C.broadcast_to(hw, full)
    lw = C.broadcast_to(lw, full)
    if method == "linear":
        r = C.add(C.multiply(lv, lw), C.multiply(hv, hw))
    elif method == "lower":
        r = lv
    elif method == "higher":
        r = hv
    elif method == "nearest":
        r = C.where(C.less_equal(hw, 0.5), lv, hv)
    else:
        r = C.multiply(C.add(lv, hv), 0.5)
    if not squash_nans:
        r = C.where(C.broadcast_to(C.reshape(anynan, (1,) * qn + anynan.shape), full), np.nan, r)
    else:
        r = C.where(C.broadcast_to(C.equal(cb, 0), full), np.nan, r)
    if not keepdims:
        r = C.squeeze(r, axis + qn)
    elif keepdim:
        r = C.reshape(r, q.shape + tuple(keepdim))
    return r


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             interpolation=None):
    if interpolation is not None:
        method = interpolation
    return _quantile(a, q, axis, method, keepdims, False)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                interpolation=None):
    if interpolation is not None:
        method = interpolation
    return _quantile(a, q, axis, method, keepdims, True)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               interpolation=None):
    q = C.true_divide(q, 100.0)
    return quantile(a, q, axis=axis, method=interpolation or method, keepdims=keepdims)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  interpolation=None):
    q = C.true_divide(q, 100.0)
    return nanquantile(a, q, axis=axis, method=interpolation or method, keepdims=keepdims)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile(a, 0.5, axis=axis, method="midpoint", keepdims=keepdims)


# --------------------------------------------------------------------------- cumulative

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
            a, axis = C.ravel(a), 0
        ax = _axis(axis, a.ndim)
        if nan_fill is not None:
            a = _nan_fill(a, nan_fill)
        dt = _cum_dtype(a, dtype)
        a = C.astype(a, dt) if a.dtype != dt or a.weak_type else a
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
                raise ValueError(f"{name}: axis must be specified for arrays of more than one dimension")
            axis = 0
        ax = _axis(axis, builtins.max(x.ndim, 1))
        if x.ndim == 0:
            raise ValueError(f"{name} does not accept 0-d arrays")
        out = fn(x, axis=ax, dtype=dtype)
        if include_initial:
            shape = list(out.shape)
            shape[ax] = 1
            out = C.concatenate([C.full(shape, ident, out.dtype), out], axis=ax)
        return out
    f.__name__ = name
    return f


cumulative_sum = _cumulative_api("cumulative_sum", cumsum, 0)
cumulative_prod = _cumulative_api("cumulative_prod", cumprod, 1)


# =========================================================================== shapes

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
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was passed.")
    ax = _axis(axis, x.ndim)
    return tuple(lax.index_in_dim(x, i, ax, keepdims=False) for i in range(x.shape[ax]))


def tile(A, reps):
    a = _arraylike("tile", A)
    reps = (operator.index(reps),) if not isinstance(reps, (tuple, list)) else tuple(operator.index(r) for r in reps)
    nd = builtins.max(len(reps), a.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - a.ndim) + a.shape
    a = C.reshape(a, shape)
    big = []
    dims = []
    for i, (r, s) in enumerate(zip(reps, shape)):
        big += [r, s]
        dims.append(2 * i + 1)
    b = lax.broadcast_in_dim(a, tuple(big), tuple(dims))
    return C.reshape(b, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    a = _arraylike("repeat", a)
    if axis is None:
        a, axis = C.ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    if isinstance(repeats, (int, np.integer)) or (not _is_array(repeats) and np.ndim(repeats) == 0):
        r = int(repeats)
        if r < 0:   # JAX's class (its broadcast_in_dim rejects the shape)
            raise TypeError(f"repeats may not contain negative values, got {r}.")
        shape = a.shape[:ax + 1] + (r,) + a.shape[ax + 1:]
        b = lax.broadcast_in_dim(a, shape, tuple(i for i in range(len(shape)) if i != ax + 1))
        out = C.reshape(b, a.shape[:ax] + (n * r,) + a.shape[ax + 1:])
        if total_repeat_length is not None:
            out = _fit_length(out, ax, total_repeat_length)
        return out
    reps = _arraylike("repeat", repeats)
    if reps.ndim == 0:
        reps = C.broadcast_to(reps, (n,))
    if reps.shape != (n,):
        raise ValueError(f"repeats shape {reps.shape} does not match the size {n} of axis {axis}")
    if total_repeat_length is None:
        total = int(_concrete(C.sum(reps), "jnp.repeat with array repeats needs total_repeat_length under jit"))
    else:
        total = operator.index(total_repeat_length)
    if total == 0 or n == 0:
        return C.zeros(a.shape[:ax] + (total,) + a.shape[ax + 1:], a.dtype) if n == 0 or total == 0 else a
    ends = lax.cumsum(C.astype(reps, np.int32), 0)
    pos = lax.iota(np.int32, total)
    src = C.minimum(_searchsorted_1d(ends, pos, "right"), n - 1)
    return _take_axis(a, src, ax)


def _fit_length(x, ax, length):
    n = x.shape[ax]
    if length <= n:
        return lax.slice_in_dim(x, 0, length, 1, ax)
    extra = list(x.shape)
    extra[ax] = length - n
    last = lax.slice_in_dim(x, n - 1, n, 1, ax)
    return C.concatenate([x, C.broadcast_to(last, tuple(extra))], axis=ax)


def _pad_widths(pad_width, nd):
    pw = np.asarray(pad_width.tolist() if _is_array(pad_width) else pad_width, dtype=object)
    try:
        pw = np.broadcast_to(np.asarray(pw, dtype=np.int64), (nd, 2))
    except (ValueError, TypeError):
        raise ValueError(f"jnp.pad: pad_width {pad_width!r} cannot be broadcast to the array of "
                         f"rank {nd}, which needs shape ({nd}, 2)") from None
    if (pw < 0).any():
        raise ValueError(f"index can't contain negative values: pad_width={pad_width!r}")
    return [(int(lo), int(hi)) for lo, hi in pw]


def pad(array, pad_width, mode="constant", **kwargs):
    a = _arraylike("pad", array)
    if callable(mode):
        raise NotImplementedError("jnp.pad with a callable mode is not supported")
    widths = _pad_widths(pad_width, a.ndim)
    allowed = {"constant": {"constant_values"}, "edge": set(), "wrap": set(), "empty": set(),
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "linear_ramp": {"end_values"}, "maximum": {"stat_length"}, "minimum": {"stat_length"},
               "mean": {"stat_length"}, "median": {"stat_length"}}
    if mode not in allowed:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    bad = set(kwargs) - allowed[mode]
    if bad:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {sorted(bad)}")
    if mode in ("constant", "empty"):
        cv = kwargs.get("constant_values", 0)
        if _is_array(cv) and cv.ndim == 0 or np.ndim(cv) == 0:
            v = C.astype(asarray(cv), a.dtype) if _is_array(cv) else np.asarray(cv).astype(a.dtype)
            return lax.pad(a, v, [(lo, hi, 0) for lo, hi in widths])
        cvs = np.broadcast_to(np.asarray(cv.tolist() if _is_array(cv) else cv), (a.ndim, 2))
        for ax, (lo, hi) in enumerate(widths):
            for side, w in ((0, lo), (1, hi)):
                if w:
                    cfg = [(0, 0, 0)] * a.ndim
                    cfg[ax] = (w, 0, 0) if side == 0 else (0, w, 0)
                    a = lax.pad(a, np.asarray(cvs[ax][side]).astype(a.dtype), cfg)
        return a
    for ax, (lo, hi) in enumerate(widths):
        if lo == hi == 0:
            continue
        n = a.shape[ax]
        if n == 0:
            raise ValueError(f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        if mode in ("edge", "wrap", "reflect", "symmetric"):
            rt = kwargs.get("reflect_type", "even")
            if rt not in ("even", "odd"):
                raise ValueError(f"reflect_type must be 'even' or 'odd', got {rt!r}")
            src = np.pad(np.arange(n), (lo, hi), mode=mode)
            out = _take_axis(a, src.astype(np.int32), ax)
            if rt == "odd" and mode in ("reflect", "symmetric"):
                out = _odd_reflect(a, out, ax, n, lo, hi, mode)
            a = out
        elif mode == "linear_ramp":
            ev = np.broadcast_to(np.asarray(kwargs.get("end_values", 0)), (a.ndim, 2))[ax]
            edge_lo = lax.slice_in_dim(a, 0, 1, 1, ax)
            edge_hi = lax.slice_in_dim(a, n - 1, n, 1, ax)
            parts = []
            if lo:
                t = C.reshape(C.arange(lo, dtype=_f32) / lo, [lo if i == ax else 1 for i in range(a.ndim)])
                parts.append(C.astype(C.add(ev[0], C.multiply(t, C.subtract(edge_lo, ev[0]))), a.dtype))
            parts.append(a)
            if hi:
                t = C.reshape(C.arange(hi - 1, -1, -1, dtype=_f32) / hi, [hi if i == ax else 1 for i in range(a.ndim)])
                parts.append(C.astype(C.add(ev[1], C.multiply(t, C.subtract(edge_hi, ev[1]))), a.dtype))
            a = C.concatenate(parts, axis=ax)
        else:
            sl = kwargs.get("stat_length", None)
            sls = np.broadcast_to(np.asarray(n if sl is None else sl, dtype=object), (a.ndim, 2))[ax]
            red = {"maximum": C.max, "minimum": C.min, "mean": C.mean, "median": median}[mode]
            parts = []
            for side, w in ((0, lo), (1, hi)):
                if not w:
                    continue
                L = builtins.min(int(sls[side] if sls[side] is not None else n), n)
                if L <= 0:
                    raise ValueError("stat_length of 0 yields no value for padding")
                win = lax.slice_in_dim(a, 0, L, 1, ax) if side == 0 else lax.slice_in_dim(a, n - L, n, 1, ax)
                v = red(win, axis=ax, keepdims=True)
                if mode in ("mean", "median") and dtypes.is_int(a.dtype):
                    v = C.round(v)
                v = C.astype(v, a.dtype)
                shape = list(a.shape)
                shape[ax] = w
                parts.append((side, C.broadcast_to(v, tuple(shape))))
            pre = [p for s, p in parts if s == 0]
            post = [p for s, p in parts if s == 1]
            a = C.concatenate(pre + [a] + post, axis=ax)
    return a


def _odd_reflect(a, even, ax, n, lo, hi, mode):
    # odd reflection: 2 * edge - mirrored value, applied once per period as NumPy does
    if lo > n - 1 or hi > n - 1:
        raise NotImplementedError("jnp.pad reflect_type='odd' with pad widths beyond one reflection")
    parts = []
    first = lax.slice_in_dim(a, 0, 1, 1, ax)
    last = lax.slice_in_dim(a, n - 1, n, 1, ax)
    if lo:
        seg = lax.slice_in_dim(even, 0, lo, 1, ax)
        parts.append(C.subtract(C.multiply(2, first), seg))
    parts.append(a)
    if hi:
        seg = lax.slice_in_dim(even, lo + n, lo + n + hi, 1, ax)
        parts.append(C.subtract(C.multiply(2, last), seg))
    return C.concatenate(parts, axis=ax)


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
        return C.reshape(roll(C.ravel(a), shift, 0), a.shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if isinstance(shift, (int, np.integer)) or (not _is_array(shift) and np.ndim(shift) == 0):
        shifts = (shift,) * len(axes) if len(axes) > 1 else (shift,)
    elif _is_array(shift) and shift.ndim == 0:
        shifts = (shift,) * len(axes)
    else:
        shifts = tuple(shift) if not _is_array(shift) else tuple(shift[i] for i in range(shift.shape[0]))
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
            s = C.astype(asarray(s), np.int32)
            k = C.mod(C.negative(s), n)
            both = C.concatenate([a, a], axis=ax)
            a = lax.dynamic_slice(both, [np.int32(0) if i != ax else k for i in range(a.ndim)], a.shape)
        else:
            k = int(s) % n
            if k:
                a = C.concatenate([lax.slice_in_dim(a, n - k, n, 1, ax), lax.slice_in_dim(a, 0, n - k, 1, ax)],
                                  axis=ax)
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
    return C.moveaxis(a, ax, start)


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
        return C.transpose(flip(m, a1), perm)
    return flip(C.transpose(m, perm), a1)


def atleast_3d(*arys):
    out = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = C.reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = C.reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = C.reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def column_stack(tup):
    arrs = []
    for a in tup:
        a = asarray(a)
        arrs.append(C.reshape(a, (a.shape[0] if a.ndim else 1, 1)) if a.ndim < 2 else a)
    return C.concatenate(arrs, axis=1)


def dstack(tup, dtype=None):
    return C.concatenate([atleast_3d(a) for a in tup], axis=2, dtype=dtype)


row_stack = C.vstack


def append(arr, values, axis=None):
    if axis is None:
        return C.concatenate([C.ravel(_arraylike("append", arr)), C.ravel(_arraylike("append", values))], axis=0)
    return C.concatenate([arr, values], axis=axis)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    a = _arraylike("delete", arr)
    if axis is None:
        a, axis = C.ravel(a), 0
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
    return _take_axis(a, keep.astype(np.int32), ax) if keep.size else lax.slice_in_dim(a, 0, 0, 1, ax)


def insert(arr, obj, values, axis=None):
    a = _arraylike("insert", arr)
    if axis is None:
        a, axis = C.ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    idx = np.arange(n)[obj] if isinstance(obj, slice) else np.asarray(_concrete(obj, "jnp.insert indices"))
    if idx.dtype == bool or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError("jnp.insert: index array must be integer typed")
    scalar = idx.ndim == 0
    idx = np.atleast_1d(idx).astype(np.int64).ravel()
    idx = np.where(idx < 0, idx + n, idx)
    if ((idx < 0) | (idx > n)).any():
        raise IndexError(f"index out of bounds for axis {axis} with size {n}")
    v = C.astype(_arraylike("insert", values), a.dtype)
    if scalar:
        v = C.reshape(v, (1,) * (a.ndim - v.ndim) + v.shape) if v.ndim < a.ndim else v
        v = C.moveaxis(v, 0, ax)
        m = v.shape[ax]
        idx = np.full(m, idx[0])
    else:
        m = len(idx)
    shape = tuple(m if i == ax else s for i, s in enumerate(a.shape))
    v = C.broadcast_to(v, shape)
    keys = np.concatenate([2 * np.arange(n) + 1, 2 * idx])
    order = np.argsort(keys, kind="stable")
    both = C.concatenate([a, v], axis=ax)
    return _take_axis(both, order.astype(np.int32), ax)


def resize(a, new_shape):
    a = C.ravel(_arraylike("resize", a))
    new_shape = (new_shape,) if isinstance(new_shape, int) else tuple(new_shape)
    total = int(np.prod(new_shape))
    if a.size == 0:
        return C.zeros(new_shape, a.dtype)
    reps = -(-total // a.size)
    return C.reshape(tile(a, reps)[:total], new_shape)


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
            v = C.broadcast_to(v, tuple(shape))
        parts.append((at_front, v))
    if parts:
        a = C.concatenate([v for f, v in parts if f] + [a] + [v for f, v in parts if not f], axis=ax)
    for _ in range(n):
        m = a.shape[ax]
        if m == 0:
            break
        hi = lax.slice_in_dim(a, 1, m, 1, ax)
        lo = lax.slice_in_dim(a, 0, m - 1, 1, ax)
        a = C.not_equal(hi, lo) if a.dtype == np.bool_ else C.subtract(hi, lo)
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    a = C.ravel(_arraylike("ediff1d", ary))
    r = diff(a) if a.shape[0] else a
    parts = []
    if to_begin is not None:
        parts.append(C.ravel(C.astype(_arraylike("ediff1d", to_begin), r.dtype)))
    parts.append(r)
    if to_end is not None:
        parts.append(C.ravel(C.astype(_arraylike("ediff1d", to_end), r.dtype)))
    return C.concatenate(parts) if len(parts) > 1 else r


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False, indices_are_sorted=False,
         fill_value=None):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.take is not supported.")
    a = _arraylike("take", a)
    idx = _arraylike("take", indices)
    if not dtypes.is_int(idx.dtype):
        raise TypeError(f"jnp.take: indices must be integers, got {idx.dtype}")
    if axis is None:
        a, axis = C.ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    idx = C.astype(idx, np.int32)
    if mode is None or mode == "fill":
        gmode = "fill"
        idx = C.where(C.less(idx, 0), C.add(idx, n), idx)
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    elif mode == "wrap":
        gmode = "clip"
        idx = C.mod(idx, builtins.max(n, 1))
    elif mode == "clip":
        gmode = "clip"
    else:
        raise ValueError(f"Invalid mode '{mode}' for np.take")
    if n == 0:
        if idx.size:
            if gmode != "fill":
                raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
            shape = a.shape[:ax] + idx.shape + a.shape[ax + 1:]
            return C.full(shape, _default_fill(a.dtype) if fill_value is None else fill_value, a.dtype)
        return C.zeros(a.shape[:ax] + idx.shape + a.shape[ax + 1:], a.dtype)
    return _take_axis(a, idx, ax, mode=gmode, fill_value=fill_value)


def _default_fill(dt):
    dt = np.dtype(dt)
    if dt.kind == "f":
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
            raise ValueError(f"when axis=None, `indices` must have a single dimension, got shape {idx.shape}")
        a, axis = C.ravel(a), 0
    if idx.ndim != a.ndim:
        raise ValueError(f"indices and arr must have the same number of dimensions; {idx.ndim} vs. {a.ndim}")
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    idx = C.astype(idx, np.int32)
    out_shape = []
    for i, (s, t) in enumerate(zip(a.shape, idx.shape)):
        if i == ax:
            out_shape.append(t)
        else:
            try:
                out_shape.append(C.broadcast_shapes((s,), (t,))[0])
            except ValueError:
                raise ValueError(f"take_along_axis: indices shape {idx.shape} is not broadcast-compatible "
                                 f"with arr shape {a.shape} outside axis {ax}") from None
    out_shape = tuple(out_shape)
    idx = C.broadcast_to(idx, out_shape)
    if mode is None or mode == "fill":
        gmode = "fill"
        idx = C.where(C.less(idx, 0), C.add(idx, n), idx)
    elif mode == "clip":
        gmode = "clip"
    elif mode == "wrap":
        gmode = "clip"
        idx = C.mod(idx, builtins.max(n, 1))
    else:
        raise ValueError(f"take_along_axis: unsupported mode {mode!r}")
    a = C.broadcast_to(a, tuple(s if i == ax else out_shape[i] for i, s in enumerate(a.shape)))
    if builtins.any(s == 0 for s in out_shape):
        return C.zeros(out_shape, a.dtype)
    if n == 0:
        return C.full(out_shape, _default_fill(a.dtype) if fill_value is None else fill_value, a.dtype)
    # one index vector per output element: iotas for the other dims, idx for ``axis``
    coords = [lax.broadcasted_iota(np.int32, out_shape, d) if d != ax else idx for d in range(a.ndim)]
    ind = C.stack(coords, axis=-1)
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(a.ndim)),
                                start_index_map=tuple(range(a.ndim)))
    return lax.gather(a, ind, dn, (1,) * a.ndim, mode=gmode, fill_value=fill_value)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    if inplace:
        raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place; use inplace=False")
    a = _arraylike("put_along_axis", arr)
    idx = C.astype(_arraylike("put_along_axis", indices), np.int32)
    ax = _axis(axis, a.ndim)
    shape = C.broadcast_shapes(tuple(1 if i == ax else s for i, s in enumerate(a.shape)), idx.shape)
    idx = C.broadcast_to(idx, shape)
    n = a.shape[ax]
    idx = C.where(C.less(idx, 0), C.add(idx, n), idx)
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
        out = C.where(c, v, out)
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
        out = C.where(c, _apply_piece(f, x, args, kw), out)
    return C.astype(out, x.dtype)


def _apply_piece(f, x, args, kw):
    v = f(x, *args, **kw) if callable(f) else f
    return C.broadcast_to(C.astype(asarray(v), x.dtype), x.shape)


def choose(a, choices, out=None, mode="raise"):
    a = C.astype(asarray(a), np.int32)
    n = len(choices)
    if mode == "raise":
        av = _concrete(a, "jnp.choose with mode='raise' (use mode='wrap' or 'clip' under jit)")
        if ((av < 0) | (av >= n)).any():
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = C.mod(a, n)
    elif mode == "clip":
        a = C.clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    chs = promote_args("choose", *choices)
    shape = C.broadcast_shapes(a.shape, *[_aval(c).shape for c in chs])
    a = C.broadcast_to(a, shape)
    chs = [C.broadcast_to(_wrap_result(c), shape) for c in chs]
    return lax.select_n(a, *chs) if n > 1 else chs[0]


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    cond = _arraylike("compress", condition)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1D array")
    a = _arraylike("compress", a)
    if axis is None:
        a, axis = C.ravel(a), 0
    ax = _axis(axis, a.ndim)
    cond = cond[:a.shape[ax]] if cond.shape[0] > a.shape[ax] else cond
    idx, = nonzero(cond, size=size, fill_value=a.shape[ax] if size is not None else None)
    r = take(a, idx, axis=ax, mode="fill", fill_value=fill_value)
    return r


def extract(condition, arr, *, size=None, fill_value=0):
    return compress(C.ravel(_arraylike("extract", condition)), C.ravel(_arraylike("extract", arr)), size=size, fill_value=fill_value)


# =========================================================================== products

def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    a, b = _arraylike("tensordot", a), _arraylike("tensordot", b)
    if isinstance(axes, (int, np.integer)):
        k = int(axes)
        if k < 0 or k > builtins.min(a.ndim, b.ndim):
            raise TypeError(f"Number of tensordot axes (axes {k}) exceeds input ranks ({a.shape} and {b.shape})")
        ca, cb = tuple(range(a.ndim - k, a.ndim)), tuple(range(k))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        xa, xb = axes
        xa = (xa,) if isinstance(xa, (int, np.integer)) else tuple(xa)
        xb = (xb,) if isinstance(xb, (int, np.integer)) else tuple(xb)
        if len(xa) != len(xb):
            raise TypeError(f"tensordot requires axes lists to have equal length, got {xa} and {xb}.")
        ca = tuple(_axis(i, a.ndim) for i in xa)
        cb = tuple(_axis(i, b.ndim) for i in xb)
    else:
        raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of lists/tuples "
                        f"of ints; got {axes}")
    for i, j in zip(ca, cb):
        if a.shape[i] != b.shape[j]:
            raise TypeError(f"tensordot: shape mismatch on contracted axes: a.shape[{i}]={a.shape[i]} vs "
                            f"b.shape[{j}]={b.shape[j]} (shapes {a.shape} and {b.shape})")
    dt = C.result_type(a, b)
    a, b = C.astype(a, dt), C.astype(b, dt)
    return lax.dot_general(a, b, ((ca, cb), ((), ())), preferred_element_type=preferred_element_type)


def kron(a, b):
    a, b = _arraylike("kron", a), _arraylike("kron", b)
    dt = C.result_type(a, b)
    a, b = C.astype(a, dt), C.astype(b, dt)
    nd = builtins.max(a.ndim, b.ndim)
    a = C.reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = C.reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ae = C.reshape(a, tuple(x for s in a.shape for x in (s, 1)))
    be = C.reshape(b, tuple(x for s in b.shape for x in (1, s)))
    return C.reshape(C.multiply(ae, be), tuple(s * t for s, t in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a = C.moveaxis(_arraylike("cross", a), axisa, -1)
    b = C.moveaxis(_arraylike("cross", b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return C.subtract(C.multiply(a[..., 0], b[..., 1]), C.multiply(a[..., 1], b[..., 0]))
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else C.zeros_like(a0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if b.shape[-1] == 3 else C.zeros_like(b0)
    c = C.stack([C.subtract(C.multiply(a1, b2), C.multiply(a2, b1)),
                 C.subtract(C.multiply(a2, b0), C.multiply(a0, b2)),
                 C.subtract(C.multiply(a0, b1), C.multiply(a1, b0))], axis=-1)
    return C.moveaxis(c, -1, axisc)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    x1, x2 = _arraylike("vecdot", x1), _arraylike("vecdot", x2)
    a1, a2 = _axis(axis, x1.ndim), _axis(axis, x2.ndim)
    if x1.shape[a1] != x2.shape[a2]:
        raise ValueError(f"axes must match; got shapes {x1.shape} and {x2.shape} with axis={axis}")
    return C.sum(C.multiply(C.moveaxis(x1, a1, -1), C.moveaxis(x2, a2, -1)), axis=-1)


def matrix_transpose(x, /):
    x = _arraylike("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={x.ndim}")
    return C.swapaxes(x, -1, -2)


def matvec(x1, x2, /):
    return C.matmul(x1, C.expand_dims(_arraylike("matvec", x2), -1))[..., 0]


def vecmat(x1, x2, /):
    return C.matmul(C.expand_dims(_arraylike("vecmat", x1), -2), x2)[..., 0, :]


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    if not isinstance(subscripts, str):
        subscripts, operands = _einsum_interleaved(subscripts, operands)
    ops = [asarray(o) for o in operands]
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        ins, outspec = spec.split("->")
        explicit = True
    else:
        ins, outspec, explicit = spec, None, False
    in_specs = ins.split(",")
    if len(in_specs) != len(ops):
        raise ValueError(f"einsum: {len(in_specs)} operand specs in {subscripts!r} for {len(ops)} operands")
    # expand ellipses into digit labels, right-aligned across operands
    ell_n = 0
    parsed = []
    for s, o in zip(in_specs, ops):
        if "..." in s:
            named = len(s) - 3
            k = o.ndim - named
            if k < 0:
                raise ValueError(f"einsum: operand of shape {o.shape} has too few dims for {s!r}")
            ell_n = builtins.max(ell_n, k)
            parsed.append((s, k))
        else:
            if len(s) != o.ndim:
                raise ValueError(f"einsum: operand spec {s!r} does not match operand of shape {o.shape}")
            parsed.append((s, 0))
    ell = [chr(0x3b1 + i) for i in range(ell_n)]   # greek letters stand for ellipsis dims
    labels = []
    for (s, k), o in zip(parsed, ops):
        if "..." in s:
            pre, post = s.split("...")
            labels.append(list(pre) + ell[ell_n - k:] + list(post))
        else:
            labels.append(list(s))
    for lab in labels:
        for c in lab:
            if not (c.isalpha()):
                raise ValueError(f"einsum: invalid subscript {c!r} in {subscripts!r}")
    if explicit:
        if "..." in outspec:
            pre, post = outspec.split("...")
            out_labels = list(pre) + ell + list(post)
        else:
            out_labels = list(outspec)
        all_labels = {c for lab in labels for c in lab}
        for c in out_labels:
            if c not in all_labels:
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs")
    else:
        counts = {}
        for lab in labels:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        out_labels = ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    # sizes (size-1 broadcasting allowed)
    sizes = {}
    for lab, o in zip(labels, ops):
        for c, n in zip(lab, o.shape):
            if c in sizes and sizes[c] != n and n != 1 and sizes[c] != 1:
                raise ValueError(f"einsum: size of label {c!r} is {sizes[c]} in one operand and {n} in "
                                 f"another (operand shapes {[x.shape for x in ops]})")
            sizes[c] = n if c not in sizes or sizes[c] == 1 else sizes[c]
    dt = C.result_type(*ops) if ops else _f32
    ops = [C.astype(o, dt) for o in ops]
    # per operand: diagonals for repeated labels, broadcast size-1 dims
    terms = []
    for lab, o in zip(labels, ops):
        lab = list(lab)
        while len(set(lab)) != len(lab):
            c = next(c for c in lab if lab.count(c) > 1)
            i = lab.index(c)
            j = lab.index(c, i + 1)
            o = diagonal(o, 0, i, j)
            lab = [x for k, x in enumerate(lab) if k not in (i, j)] + [c]
        tgt = tuple(sizes[c] for c in lab)
        if o.shape != tgt:
            o = C.broadcast_to(o, tgt)
        terms.append((o, lab))

    def needed(exclude):
        s = set(out_labels)
        for k, (_, lab) in enumerate(terms):
            if k not in exclude:
                s.update(lab)
        return s

    def sum_private(k):
        o, lab = terms[k]
        keep = needed({k})
        red = [i for i, c in enumerate(lab) if c not in keep]
        if red:
            o = C.sum(o, axis=tuple(red)) if o.dtype != np.bool_ else C.any(o, axis=tuple(red))
            lab = [c for c in lab if c in keep]
        terms[k] = (o, lab)

    for k in range(len(terms)):
        sum_private(k)
    while len(terms) > 1:
        (a, la), (b, lb) = terms[0], terms[1]
        rest = needed({0, 1})
        shared = [c for c in la if c in lb]
        batch = [c for c in shared if c in rest]
        contract = [c for c in shared if c not in rest]
        if dt == np.bool_:
            a, b = C.astype(a, np.int32), C.astype(b, np.int32)
        r = lax.dot_general(a, b, ((tuple(la.index(c) for c in contract), tuple(lb.index(c) for c in contract)),
                                   (tuple(la.index(c) for c in batch), tuple(lb.index(c) for c in batch))),
                            preferred_element_type=preferred_element_type)
        if dt == np.bool_:
            r = C.not_equal(r, 0)
        lr = batch + [c for c in la if c not in shared] + [c for c in lb if c not in shared]
        terms = [(r, lr)] + terms[2:]
        sum_private(0)
    o, lab = terms[0]
    red = [i for i, c in enumerate(lab) if c not in out_labels]
    if red:
        o = C.sum(o, axis=tuple(red))
        lab = [c for c in lab if c in out_labels]
    perm = [lab.index(c) for c in out_labels]
    o = C.transpose(o, perm) if perm != list(range(len(perm))) else o
    if preferred_element_type is not None:
        o = C.astype(o, preferred_element_type)
    return o


def _einsum_interleaved(first, rest):
    args = [first] + list(rest)
    ops, subs = [], []
    out = None
    letters = string.ascii_letters

    def conv(sub):
        return "".join("..." if s is Ellipsis else letters[s] for s in sub)

    while len(args) >= 2:
        ops.append(args.pop(0))
        subs.append(conv(args.pop(0)))
    if args:
        out = conv(args.pop(0))
    spec = ",".join(subs) + ("->" + out if out is not None else "")
    return spec, ops


def einsum_path(subscripts, *operands, optimize="greedy"):
    return [("einsum_path", (0, 1))], f"  Complete contraction:  {subscripts}"


# =========================================================================== search & sort

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
        a, axis = C.ravel(a), 0
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


def lexsort(keys, axis=-1):
    keys = [asarray(k) for k in (keys if isinstance(keys, (list, tuple)) else list(keys))]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    shapes = {k.shape for k in keys}
    if len(shapes) != 1:
        raise ValueError("all keys need to be the same shape")
    k0 = keys[0]
    if k0.ndim == 0:
        return C.asarray(0)
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
    arr = C.moveaxis(a, ax, -1)
    neg = C.negative(arr) if a.dtype != np.bool_ else C.logical_not(arr)
    return ax, kth, arr, neg


def partition(a, kth, axis=-1):
    ax, kth, arr, neg = _partition_operand(a, kth, axis)
    n = arr.shape[-1]
    bottom = lax.top_k(neg, kth + 1)[0]
    bottom = C.negative(bottom) if arr.dtype != np.bool_ else C.logical_not(bottom)
    top = lax.top_k(arr, n - kth - 1)[0]
    return C.moveaxis(C.concatenate([bottom, top], axis=-1), -1, ax)


def argpartition(a, kth, axis=-1):
    ax, kth, arr, neg = _partition_operand(a, kth, axis)
    n = arr.shape[-1]
    bottom = lax.top_k(neg, kth + 1)[1]
    # the top indices come from a proxy (ones, zeroed at the bottom indices), as JAX does
    proxy = put_along_axis(C.ones(arr.shape, _f32), bottom, 0.0, -1, inplace=False)
    top = lax.top_k(proxy, n - kth - 1)[1]
    return C.moveaxis(C.concatenate([bottom, top], axis=-1), -1, ax)


def _lt_total(x, y):
    """x < y in sort order (NaN last, -0.0 == 0.0)."""
    if dtypes.is_float(_aval(x).dtype):
        return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(lax.ne(y, y), lax.eq(x, x)))
    return lax.lt(x, y)


def _searchsorted_1d(a, v, side):
    """Binary search of each element of ``v`` in the sorted 1-D ``a`` (one fused kernel)."""
    n = a.shape[0]
    shape = _aval(v).shape
    lo = C.zeros(shape, np.int32)
    hi = C.full(shape, n, np.int32)
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
        return C.zeros(x.shape, np.int32)
    side = "right" if not right else "left"
    inc = searchsorted(bins, x, side=side)
    dec = C.subtract(bins.shape[0], searchsorted(bins[::-1], x, side=side))
    return C.where(C.greater_equal(bins[-1], bins[0]), inc, dec)


def _nonzero_flat(mask, size):
    """Flat positions of the first ``size`` true entries of a 1-D bool mask (N for missing ones)."""
    n = mask.shape[0]
    if n == 0:
        return C.zeros((size,), np.int32)
    cnt = lax.cumsum(C.astype(mask, np.int32), 0)
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
            f"The size argument of jnp.{name} must be statically specified to use jnp.{name} within "
            "JAX transformations. Abstract tracer value encountered where concrete value is expected.")
    return int(np.asarray(c))


def nonzero(a, *, size=None, fill_value=None):
    a = _arraylike("nonzero", a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() instead.")
    mask = C.ravel(a if a.dtype == np.bool_ else C.not_equal(a, 0))
    size = _static_size("nonzero", size, lambda: C.sum(mask, dtype=np.int32))
    pos = _nonzero_flat(mask, size)
    valid = lax.lt(pos, WeakScalar(np.asarray(mask.shape[0], np.int32)))
    coords = unravel_index(C.minimum(pos, builtins.max(mask.shape[0] - 1, 0)), a.shape) if mask.shape[0] else \
        tuple(C.zeros((size,), np.int32) for _ in a.shape)
    fills = fill_value if isinstance(fill_value, (tuple, list)) else (fill_value,) * a.ndim
    if len(fills) != a.ndim:
        raise ValueError(f"fill_value must be a scalar or a tuple of length {a.ndim}; got {fill_value}")
    out = []
    for c, fv in zip(coords, fills):
        c = C.astype(c, np.int32)
        fvv = C.full_like(c, 0 if fv is None else fv)
        out.append(lax.select(valid, c, fvv))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(C.ravel(_arraylike("flatnonzero", a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    a = _arraylike("argwhere", a)
    if a.ndim == 0:
        r = argwhere(C.reshape(a, (1,)), size=size, fill_value=fill_value)
        return r[:, :0]
    cols = nonzero(a, size=size, fill_value=fill_value)
    return C.stack(cols, axis=1)


def _sorted_unique_mask(s, equal_nan):
    n = s.shape[0]
    if n == 0:
        return C.zeros((0,), bool)
    diff_ = C.not_equal(s[1:], s[:-1])
    if equal_nan and _is_float(s):
        diff_ = C.logical_and(diff_, C.logical_not(C.logical_and(C.isnan(s[1:]), C.isnan(s[:-1]))))
    return C.concatenate([C.full((1,), True), diff_])


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    a = _arraylike("unique", ar)
    if axis is not None:
        return _unique_axis(a, axis, return_index, return_inverse, return_counts, size, fill_value)
    shape = a.shape
    a = C.ravel(a)
    n = a.shape[0]
    iota = lax.iota(_int, n)
    if n:
        s, perm = lax.sort_key_val(a, iota, dimension=0)
    else:
        s, perm = a, iota
    mask = _sorted_unique_mask(s, equal_nan)
    size_ = _static_size("unique", size, lambda: C.sum(mask, dtype=np.int32))
    pos = _nonzero_flat(mask, size_)
    valid = lax.lt(pos, WeakScalar(np.asarray(n, np.int32)))
    posc = C.minimum(pos, builtins.max(n - 1, 0))
    if n:
        vals = _take_axis(s, posc, 0)
        fv = s[0] if fill_value is None else C.astype(asarray(fill_value), a.dtype)
        vals = C.where(valid, vals, fv)
    else:
        vals = C.zeros((size_,), a.dtype) if fill_value is None else C.full((size_,), fill_value, a.dtype)
    out = [vals]
    if return_index:
        if n:
            ind = _take_axis(perm, posc, 0)
            ind = C.where(valid, ind, perm[0])
        else:
            ind = C.zeros((size_,), np.int32)
        out.append(ind)
    if return_inverse:
        if n:
            grp = lax.sub(lax.cumsum(C.astype(mask, np.int32), 0), WeakScalar(np.asarray(1, np.int32)))
            inv = C.zeros((n,), np.int32).at[perm].set(grp)
        else:
            inv = C.zeros((0,), np.int32)
        out.append(C.reshape(inv, shape))
    if return_counts:
        if n:
            nxt = C.concatenate([pos[1:], C.full((1,), n, np.int32)]) if size_ else pos
            nxt = C.where(C.less(nxt, n), nxt, n)
            cnt = C.where(valid, C.subtract(nxt, pos), 0)
        else:
            cnt = C.zeros((size_,), np.int32)
        out.append(cnt)
    return out[0] if len(out) == 1 else tuple(out)


def _unique_axis(a, axis, return_index, return_inverse, return_counts, size, fill_value):
    ax = _axis(axis, a.ndim)
    m = C.moveaxis(a, ax, 0)
    n = m.shape[0]
    rows = C.reshape(m, (n, -1))
    keys = [rows[:, j] for j in range(rows.shape[1])]
    iota = lax.iota(_int, n)
    if n == 0 or not keys:
        raise NotImplementedError("jnp.unique along an axis of an empty array")
    srt = lax.sort(tuple(keys) + (iota,), dimension=0, num_keys=len(keys))
    perm = srt[-1]
    srows = C.stack(srt[:-1], axis=1)
    diff_ = C.any(C.not_equal(srows[1:], srows[:-1]), axis=1)
    mask = C.concatenate([C.full((1,), True), diff_])
    size_ = _static_size("unique", size, lambda: C.sum(mask, dtype=np.int32))
    pos = _nonzero_flat(mask, size_)
    valid = lax.lt(pos, WeakScalar(np.asarray(n, np.int32)))
    posc = C.minimum(pos, n - 1)
    sel = _take_axis(perm, posc, 0)
    sel = C.where(valid, sel, perm[0])
    vals = _take_axis(m, sel, 0)
    if fill_value is not None:
        vals = C.where(C.reshape(valid, (-1,) + (1,) * (m.ndim - 1)), vals, C.astype(asarray(fill_value), a.dtype))
    out = [C.moveaxis(vals, 0, ax)]
    if return_index:
        out.append(sel)
    if return_inverse:
        grp = C.subtract(cumsum(C.astype(mask, np.int32)), 1)
        out.append(C.zeros((n,), np.int32).at[perm].set(grp))
    if return_counts:
        nxt = C.concatenate([pos[1:], C.full((1,), n, np.int32)]) if size_ else pos
        nxt = C.where(C.less(nxt, n), nxt, n)
        out.append(C.where(valid, C.subtract(nxt, pos), 0))
    return out[0] if len(out) == 1 else tuple(out)


def unique_values(x, /, *, size=None, fill_value=None):
    return unique(x, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    from collections import namedtuple
    vals, counts = unique(x, return_counts=True, size=size, fill_value=fill_value)
    return namedtuple("UniqueCountsResult", ["values", "counts"])(vals, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    from collections import namedtuple
    vals, inv = unique(x, return_inverse=True, size=size, fill_value=fill_value)
    return namedtuple("UniqueInverseResult", ["values", "inverse_indices"])(vals, inv)


def unique_all(x, /, *, size=None, fill_value=None):
    from collections import namedtuple
    vals, ind, inv, counts = unique(x, return_index=True, return_inverse=True, return_counts=True,
                                    size=size, fill_value=fill_value)
    return namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])(
        vals, ind, inv, counts)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    e = _arraylike("isin", element)
    t = C.ravel(_arraylike("isin", test_elements))
    if t.shape[0] == 0:
        return C.full(e.shape, bool(invert), dtype=bool)
    eq = C.equal(C.expand_dims(e, -1), t)
    r = C.any(eq, axis=-1)
    return C.logical_not(r) if invert else r


def in1d(ar1, ar2, assume_unique=False, invert=False):
    return isin(C.ravel(_arraylike("in1d", ar1)), ar2, invert=invert)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    a = unique(ar1)
    keep = isin(a, ar2)
    return compress(keep, a, size=size, fill_value=fill_value if fill_value is not None else 0) \
        if size is not None else a[np.asarray(keep)]


def union1d(ar1, ar2, *, size=None, fill_value=None):
    return unique(C.concatenate([C.ravel(_arraylike("union1d", ar1)), C.ravel(_arraylike("union1d", ar2))]), size=size,
                  fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a = unique(ar1)
    keep = isin(a, ar2, invert=True)
    if size is None:
        return a[np.asarray(keep)]
    return compress(keep, a, size=size, fill_value=fill_value if fill_value is not None else 0)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a, b = unique(ar1), unique(ar2)
    both = C.concatenate([a[np.asarray(isin(a, b, invert=True))], b[np.asarray(isin(b, a, invert=True))]])
    return unique(both, size=size, fill_value=fill_value)


def bincount(x, weights=None, minlength=0, *, length=None):
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
        mx = int(np.asarray(C.max(x))) if x.shape[0] else -1
        length = builtins.max(minlength, mx + 1)
    length = operator.index(length)
    if weights is None:
        w = C.ones(x.shape, np.int32)
    else:
        w = _arraylike("bincount", weights)
        if w.shape != x.shape:
            raise ValueError("shape of weights must match shape of x.")
        if w.dtype == np.bool_:
            w = C.astype(w, np.int32)
    idx = C.clip(C.astype(x, np.int32), 0)
    return C.zeros((length,), w.dtype).at[idx].add(w, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    a = C.ravel(_arraylike("histogram_bin_edges", a))
    if np.ndim(bins) == 1 or (_is_array(bins) and bins.ndim == 1):
        return _arraylike("histogram_bin_edges", bins)
    bins = operator.index(bins)
    dt = a.dtype if _is_float(a) else _f32
    if range is None:
        lo, hi = C.min(a), C.max(a)
    else:
        lo, hi = asarray(range[0], dt), asarray(range[1], dt)
        if not isinstance(lo, Tracer) and not isinstance(hi, Tracer) and float(lo) > float(hi):
            raise ValueError(f"max must be larger than min in range parameter, got range={range}")
    lo, hi = C.astype(lo, dt), C.astype(hi, dt)
    same = C.equal(lo, hi)
    lo = C.where(same, C.subtract(lo, 0.5), lo)
    hi = C.where(same, C.add(hi, 0.5), hi)
    return C.linspace(lo, hi, bins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
    a = C.ravel(_arraylike("histogram", a))
    if weights is not None:
        w = C.ravel(asarray(weights))
        if w.shape != a.shape:
            raise ValueError("weights should have the same shape as a.")
    else:
        w = C.ones_like(a)
    edges = histogram_bin_edges(a, bins, range, weights)
    nb = edges.shape[0]
    idx = searchsorted(edges, a, side="right")
    idx = C.where(C.equal(a, edges[-1]), nb - 1, idx)
    counts = C.zeros((nb,), w.dtype).at[idx].add(w, mode="drop")[1:]
    if density:
        widths = diff(edges)
        counts = C.true_divide(C.true_divide(counts, widths), C.sum(counts))
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    raise NotImplementedError("jnp.histogram2d")


def _conv1d(name, x, y, mode, precision, preferred_element_type):
    x, y = asarray(x), asarray(y)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"{name}() only support 1-dimensional inputs.")
    x, y = _promote_dtypes(x, y, inexact=preferred_element_type is None)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {x.shape} and {y.shape}.")
    rev_out = False
    if name == "correlate":
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
    r = lax.conv_general_dilated(C.reshape(x, (1, 1, -1)), C.reshape(y, (1, 1, -1)), (1,), padding,
                                 preferred_element_type=preferred_element_type)
    r = C.reshape(r, (-1,))
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
    x, xp, fp = _promote_dtypes(x, xp, fp, inexact=True)
    if period is not None:
        period = C.abs(asarray(period, x.dtype))
        x = C.mod(x, period)
        xp = C.mod(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = C.concatenate([C.subtract(xp[-1:], period), xp, C.add(xp[:1], period)])
        fp = C.concatenate([fp[-1:], fp, fp[:1]])
    n = xp.shape[0]
    i = C.clip(searchsorted(xp, x, side="right"), 1, builtins.max(n - 1, 1))
    if n == 1:
        r = C.full_like(x, 0) + fp[0]
    else:
        xl, xr = take(xp, C.subtract(i, 1), mode="clip"), take(xp, i, mode="clip")
        fl, fr = take(fp, C.subtract(i, 1), mode="clip"), take(fp, i, mode="clip")
        dx = C.subtract(xr, xl)
        eps = float(np.spacing(np.finfo(x.dtype).eps))
        dx0 = C.less_equal(C.abs(dx), eps)
        r = C.where(dx0, fl, C.add(fl, C.multiply(C.true_divide(C.subtract(x, xl), C.where(dx0, 1, dx)),
                                                  C.subtract(fr, fl))))
    if period is None:
        r = C.where(C.less(x, xp[0]), fp[0] if left is None else left, r)
        r = C.where(C.greater(x, xp[-1]), fp[-1] if right is None else right, r)
    return r


def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = _arraylike("trapezoid", y)
    ax = _axis(axis, y.ndim)
    n = y.shape[ax]
    if n < 2:
        return C.sum(C.zeros_like(y), axis=ax)
    lo = lax.slice_in_dim(y, 0, n - 1, 1, ax)
    hi = lax.slice_in_dim(y, 1, n, 1, ax)
    if x is None:
        d = dx
    else:
        x = _arraylike("trapezoid", x)
        d = diff(x) if x.ndim == 1 else diff(x, axis=ax)
        if x.ndim == 1:
            d = C.reshape(d, [n - 1 if i == ax else 1 for i in range(y.ndim)])
    return C.sum(C.multiply(C.multiply(C.add(lo, hi), 0.5), d), axis=ax)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    raise NotImplementedError("jnp.apply_along_axis needs vmap")


# =========================================================================== exports

__all__ = [n for n in dir() if not n.startswith("_") and n not in {
    "annotations", "builtins", "math", "operator", "string", "np", "dtypes", "lax", "C",
    "WeakScalar", "GatherDimensionNumbers", "ScatterDimensionNumbers", "ConcretizationTypeError",
    "Tracer", "asarray", "promote_args", "float_power_"}] + ["__array_api_version__"]
