"""Numerical odds and ends of ``jax.numpy``: window functions, ``cov``/``corrcoef``,
``gradient``, ``histogramdd``/``histogram2d``, ``unwrap``, bit counting and packing,
``nextafter``/``spacing``, the polynomial functions (``poly*``; ``roots`` is complex and left
out), and NumPy's scalar type aliases."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from ._util import _aval, promote_args
from .creation import (_arraylike, _promote_dtypes, arange, asarray, astype, eye, full, ones_like,
                       zeros, zeros_like)
from .grids import linspace
from .products import dot, outer
from .reductions import average, cumsum, max as amax, mean, min as amin, sum
from .shapes import concatenate, expand_dims, moveaxis, ravel, reshape, stack, swapaxes
from .sorting import convolve, searchsorted, where
from .ufuncs import (abs, add, bitwise_and, clip, copysign, cos, equal, isinf, left_shift, mod,
                     right_shift, sqrt)
from .manipulation import pad
from . import linalg

__all__ = ["bartlett", "blackman", "hamming", "hanning", "kaiser", "i0", "bitwise_count", "cov",
           "corrcoef", "gradient", "histogramdd", "histogram2d", "unwrap", "nextafter",
           "spacing", "packbits", "unpackbits", "poly", "roots", "polyadd", "polysub", "polymul",
           "polydiv", "polyder", "polyint", "polyval", "polyfit", "single", "double", "float_",
           "int_", "uint", "character", "flexible", "object_", "iterable"]

single = np.float32
double = np.float64
float_ = np.float64
int_ = np.int64
uint = np.uint64
character = np.character
flexible = np.flexible
object_ = np.object_
iterable = np.iterable


# --------------------------------------------------------------------------- windows

def _window_len(name, M):
    try:
        return operator.index(M)
    except TypeError:
        raise TypeError(f"jax.numpy.{name}: M must be an integer, got {M!r}") from None


def _cosine_window(name, M, coeffs):
    M = _window_len(name, M)
    if M <= 0:
        return zeros((0,), np.float32)
    if M == 1:
        return ones_like(zeros((1,), np.float32))
    n = arange(M, dtype=np.float32)
    out = full((M,), coeffs[0], np.float32)
    for k, c in enumerate(coeffs[1:], 1):
        out = out + c * cos(2 * k * np.pi * n / (M - 1))
    return out


def hanning(M):
    """The Hann window: ``0.5 - 0.5 cos(2 pi n / (M - 1))``."""
    return _cosine_window("hanning", M, (0.5, -0.5))


def hamming(M):
    """The Hamming window: ``0.54 - 0.46 cos(2 pi n / (M - 1))``."""
    return _cosine_window("hamming", M, (0.54, -0.46))


def blackman(M):
    """The Blackman window: ``0.42 - 0.5 cos(2 pi n/(M-1)) + 0.08 cos(4 pi n/(M-1))``."""
    return _cosine_window("blackman", M, (0.42, -0.5, 0.08))


def bartlett(M):
    """The triangular Bartlett window."""
    M = _window_len("bartlett", M)
    if M <= 0:
        return zeros((0,), np.float32)
    if M == 1:
        return ones_like(zeros((1,), np.float32))
    n = arange(M, dtype=np.float32)
    return 1 - abs(2 * n - (M - 1)) / (M - 1)


def kaiser(M, beta):
    """The Kaiser window ``i0(beta sqrt(1 - (2n/(M-1) - 1)^2)) / i0(beta)``."""
    M = _window_len("kaiser", M)
    if M <= 0:
        return zeros((0,), np.float32)
    if M == 1:
        return ones_like(zeros((1,), np.float32))
    beta = asarray(beta, np.float32)
    n = arange(M, dtype=np.float32)
    alpha = (M - 1) / 2.0
    arg = beta * sqrt(1 - ((n - alpha) / alpha) ** 2)
    # i0(a) / i0(b) = exp(|a| - |b|) i0e(a) / i0e(b): no overflow for a large beta
    return (lax.exp(abs(arg) - abs(beta)) * lax.bessel_i0e(arg) / lax.bessel_i0e(beta))


def i0(x):
    """The modified Bessel function of the first kind, order 0 (its derivative is 0 at 0, as
    JAX defines it)."""
    x, = promote_args("i0", x, to_inexact=True)
    ax = abs(x)
    val = lax.exp(ax) * lax.bessel_i0e(ax)
    return where(equal(x, 0), lax.stop_gradient(val), val)


# --------------------------------------------------------------------------- bits

def bitwise_count(x, /):
    """The number of one bits in the magnitude's two's complement of each element (as
    ``uint8``; negative integers count the bits of their absolute value, as NumPy)."""
    x = _arraylike("bitwise_count", x)
    if not (dtypes.is_int(x.dtype) or x.dtype == np.bool_):
        raise TypeError(f"bitwise_count requires integer or bool input, got {x.dtype}")
    if x.dtype == np.bool_:
        return astype(x, np.uint8)
    v = abs(x) if np.dtype(x.dtype).kind == "i" else x
    return astype(lax.population_count(v), np.uint8)


def _bits_axis(a, axis):
    if axis is None:
        return ravel(a), 0
    return a, operator.index(axis) % builtins.max(a.ndim, 1)


def packbits(a, axis=None, bitorder="big"):
    """Packs the truth values of ``a`` into the bits of ``uint8`` along ``axis`` (flattened
    when None), eight per byte, the last byte padded with zeros."""
    a = _arraylike("packbits", a)
    if not (dtypes.is_int(a.dtype) or a.dtype == np.bool_):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a, axis = _bits_axis(astype(a != 0, np.uint8), axis)
    n = a.shape[axis]
    pad_len = -n % 8
    if pad_len:
        a = pad(a, [(0, pad_len) if i == axis else (0, 0) for i in range(a.ndim)])
    a = moveaxis(a, axis, -1)
    a = reshape(a, a.shape[:-1] + (-1, 8))
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1].copy()
    packed = sum(left_shift(a, asarray(shifts)), axis=-1, dtype=np.uint8)
    return moveaxis(packed, -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of the ``uint8`` array ``a`` along ``axis`` (flattened when None), eight per
    byte, cut to ``count`` when given."""
    a = _arraylike("unpackbits", a)
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    a, axis = _bits_axis(a, axis)
    shifts = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        shifts = shifts[::-1].copy()
    bits = bitwise_and(right_shift(expand_dims(a, -1), asarray(shifts)), np.uint8(1))
    bits = reshape(moveaxis(bits, axis, -2), tuple(d for i, d in enumerate(a.shape) if i != axis)
                   + (-1,))
    if count is not None:
        bits = bits[..., :count] if count >= 0 else bits[..., :bits.shape[-1] + count]
    return moveaxis(bits, -1, axis)


# --------------------------------------------------------------------------- float steps

def nextafter(x1, x2, /):
    """The next float after ``x1`` towards ``x2``."""
    x1, x2 = promote_args("nextafter", x1, x2, to_inexact=True)
    return lax.nextafter(*_same_shape(x1, x2))


def _same_shape(*xs):
    shape = np.broadcast_shapes(*[_aval(x).shape for x in xs])
    return [x if _aval(x).shape == shape else
            lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - _aval(x).ndim, len(shape))))
            for x in xs]


def spacing(x, /):
    """The distance from ``x`` to the next float away from zero (negative for negative x)."""
    x, = promote_args("spacing", x, to_inexact=True)
    dt = np.dtype(_aval(x).dtype)
    inf = full(_aval(x).shape, np.inf, dt)
    nxt = lax.nextafter(x, copysign(inf, x))
    far = where(isinf(x), np.nan, nxt - x)
    if dt.name not in ("float32", "bfloat16"):      # float16's subnormals are normal in f32
        return far
    # where the spacing is subnormal (|x| below 2^nmant smallest normals), its bits: the
    # difference nxt - x would be flushed to zero by a driver that flushes subnormal results
    nm = {"float32": 23, "bfloat16": 7}[dt.name]
    ut = np.dtype(f"uint{8 * dt.itemsize}")
    sign = ut.type(1 << (8 * dt.itemsize - 1))
    bits = lax.bitcast_convert_type(x, ut)
    e = lax.shift_right_logical(lax.bitwise_and(bits, ut.type(sign - 1)), ut.type(nm))
    one = full(e.shape, 1, ut)
    step = lax.shift_left(one, lax.sub(lax.max(e, one), one))       # 2^(e-1): the ulp's bits
    near = lax.bitcast_convert_type(lax.bitwise_or(step, lax.bitwise_and(bits, sign)), dt)
    return where(e <= ut.type(nm), near, far)


# --------------------------------------------------------------------------- statistics

def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows (``rowvar``) of ``m`` (and ``y``),
    with frequency and analytic weights (NumPy's ``cov``)."""
    if y is not None:
        m, y = promote_args("cov", m, y, to_inexact=True)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    else:
        m, = promote_args("cov", m, to_inexact=True)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    X = reshape(m, (1, -1)) if m.ndim < 2 else m
    if not rowvar and X.shape[0] != 1:
        X = X.T
    if X.shape[0] == 0:
        return zeros((0, 0), X.dtype)
    if y is not None:
        Y = reshape(y, (1, -1)) if y.ndim < 2 else y
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        f = asarray(fweights)
        if f.ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if f.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and fweights")
        if not dtypes.is_int(f.dtype):
            raise TypeError("fweights must be integer.")
        w = astype(f, X.dtype)
    if aweights is not None:
        a = asarray(aweights)
        if a.ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if a.shape[0] != X.shape[1]:
            raise RuntimeError("incompatible numbers of samples and aweights")
        a = astype(a, X.dtype)
        w = a if w is None else w * a
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = X.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * sum(w * a) / w_sum
    X = X - avg[:, None]
    X_T = X.T if w is None else (X * w).T
    out = dot(X, X_T) / fact
    return out[0, 0] if out.shape == (1, 1) else out


def corrcoef(x, y=None, rowvar=True):
    """The correlation coefficients ``cov / sqrt(var_i var_j)``, clipped to [-1, 1]."""
    c = cov(x, y, rowvar)
    if _aval(c).ndim == 0:
        return c / c
    d = lax.sqrt(c.diagonal())
    c = c / d[:, None]
    c = c / d[None, :]
    return clip(c, -1, 1)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of ``f`` by second-order central differences inside and one-sided first
    differences at the edges; spacings are scalars or coordinate arrays per axis."""
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    f, = promote_args("gradient", f, to_inexact=True)
    if axis is None:
        axes = tuple(range(f.ndim))
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(a % f.ndim for a in axes)
    if f.ndim == 0:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "(edge_order + 1) elements are required.")
    if len(varargs) == 0:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError("Invalid number of spacing arguments")
    out = []
    for ax, h in zip(axes, spacings):
        n = f.shape[ax]
        if n < 2:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")

        def sl(lo, hi):
            return lax.slice_in_dim(f, lo, hi, 1, ax)

        if np.ndim(h) == 0:
            interior = (sl(2, n) - sl(0, n - 2)) / (2.0 * h) if n > 2 else None
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        else:
            x = asarray(h, f.dtype)
            if x.ndim != 1 or x.shape[0] != n:
                raise ValueError("Spacing must either be a single scalar, or an array whose "
                                 "length is the length of its axis")
            dx = x[1:] - x[:-1]
            shape = [1] * f.ndim
            shape[ax] = -1
            if n > 2:
                h1 = reshape(dx[:-1], shape)
                h2 = reshape(dx[1:], shape)
                interior = (-(h2 / (h1 * (h1 + h2))) * sl(0, n - 2)
                            + ((h2 - h1) / (h1 * h2)) * sl(1, n - 1)
                            + (h1 / (h2 * (h1 + h2))) * sl(2, n))
            else:
                interior = None
            first = (sl(1, 2) - sl(0, 1)) / dx[0]
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / dx[-1]
        parts = [first] + ([interior] if interior is not None else []) + [last]
        out.append(concatenate(parts, axis=ax))
    return out[0] if len(out) == 1 else out


def histogramdd(sample, bins=10, range=None, weights=None, density=None):
    """The D-dimensional histogram of ``sample`` (shape (N, D)): counts (or the density) per
    bin and the bin edges per dimension."""
    sample = _arraylike("histogramdd", sample)
    if sample.ndim != 2:
        raise ValueError(f"sample must be a 2-dimensional array (N, D), got shape "
                         f"{sample.shape}")
    N, D = sample.shape
    if isinstance(bins, int):
        bins = [bins] * D
    elif len(bins) != D:
        raise ValueError("should be a bin for each dimension.")
    if range is not None and (len(range) != D):
        raise ValueError("should be a range for each dimension.")
    if weights is not None:
        w = ravel(asarray(weights))
        if w.shape != (N,):
            raise ValueError("should have one weight for each sample.")
    else:
        w = ones_like(zeros((N,), np.int32))
    edges, idxs, nbins = [], [], []
    for d in builtins.range(D):
        col = sample[:, d]
        b = bins[d]
        if np.ndim(b) == 0:
            r = None if range is None else range[d]
            lo, hi = (amin(col), amax(col)) if r is None else (r[0], r[1])
            e = linspace(lo, hi, operator.index(b) + 1)
            if r is None:
                e = where(equal(lo, hi), linspace(lo - 0.5, hi + 0.5, operator.index(b) + 1), e)
        else:
            e = asarray(b)
        e = astype(e, col.dtype if dtypes.is_float(col.dtype) else np.float32)
        k = e.shape[0]
        i = searchsorted(e, col, side="right")
        i = where(equal(col, e[-1]), k - 1, i)
        edges.append(e)
        idxs.append(i)
        nbins.append(k + 1)
    flat = zeros((), np.int32)
    for i, nb in zip(idxs, nbins):
        flat = flat * nb + i
    total = int(np.prod(nbins))
    counts = zeros((total,), w.dtype).at[flat].add(w, mode="drop")
    counts = reshape(counts, tuple(nbins))
    counts = counts[tuple(slice(1, -1) for _ in builtins.range(D))]
    if density:
        counts = counts / sum(counts)
        for d, e in enumerate(edges):
            shape = [1] * D
            shape[d] = -1
            counts = counts / reshape(e[1:] - e[:-1], shape)
    return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):
    """The 2-D histogram of the points ``(x, y)``: (counts, x edges, y edges)."""
    x, y = _arraylike("histogram2d", x), _arraylike("histogram2d", y, 1)
    if np.ndim(bins) == 1 and len(bins) != 2 or (not isinstance(bins, (int, np.integer))
                                                   and np.ndim(bins) == 1
                                                   and _aval(asarray(bins)).shape[0] != 2):
        bins = [bins, bins]
    elif isinstance(bins, (int, np.integer)):
        bins = [bins, bins]
    counts, (ex, ey) = histogramdd(stack([x, y], axis=1), bins, range, weights, density)
    return counts, ex, ey


def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
    """``p`` with jumps larger than ``discont`` (half the period by default) along ``axis``
    replaced by their complement modulo ``period``."""
    p, = promote_args("unwrap", p, to_inexact=True)
    axis = operator.index(axis) % p.ndim
    if discont is None:
        discont = period / 2
    interval = period / 2
    n = p.shape[axis]
    if n < 2:
        return p
    dd = lax.slice_in_dim(p, 1, n, 1, axis) - lax.slice_in_dim(p, 0, n - 1, 1, axis)
    ddmod = mod(dd + interval, period) - interval
    ddmod = where((ddmod == -interval) & (dd > 0), interval, ddmod)
    ph_correct = where(abs(dd) < discont, 0, ddmod - dd)
    up = concatenate([lax.slice_in_dim(p, 0, 1, 1, axis),
                      lax.slice_in_dim(p, 1, n, 1, axis) + cumsum(ph_correct, axis=axis)],
                     axis=axis)
    return up


# --------------------------------------------------------------------------- polynomials

def _poly1d(name, p):
    p = _arraylike(name, p)
    if p.ndim != 1:
        raise ValueError(f"jax.numpy.{name}: coefficients must be 1-dimensional, got shape "
                         f"{p.shape}")
    return p


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given (real) roots."""
    z = _arraylike("poly", seq_of_zeros)
    if z.ndim != 1:
        raise NotImplementedError("jnp.poly of a matrix (its eigenvalues, complex in general) "
                                  "is not supported by wjax")
    z, = promote_args("poly", z, to_inexact=True)
    a = asarray([1.0], z.dtype)
    for k in builtins.range(z.shape[0]):
        a = convolve(a, stack([asarray(1.0, z.dtype), -z[k]]), mode="full")
    return a


def roots(p, *, strip_zeros: bool = True):
    """The roots of the polynomial with coefficients ``p`` (highest first), as complex64:
    the eigenvalues of its companion matrix.  ``strip_zeros`` drops leading zero
    coefficients first (which needs their values: not under ``jit``)."""
    p = _arraylike("roots", p)
    if p.ndim != 1:
        raise ValueError("Input must be a rank-1 array.")
    if strip_zeros:
        nz = np.flatnonzero(np.asarray(p))
        p = p[int(nz[0]):] if nz.size else p[:0]
    if p.shape[0] < 2:
        return zeros((0,), np.complex64)
    p, = promote_args("roots", p, to_inexact=True)
    return astype(linalg.eigvals(companion_matrix(p)), np.complex64)


def companion_matrix(p):
    """The companion matrix of inexact coefficients ``p`` (highest first, two or more;
    leading dimensions batch): its first row ``-p[1:] / p[0]``, ones below the diagonal
    (``roots``, and ``jax.scipy.linalg.companion`` after its checks)."""
    n = p.shape[-1] - 1
    first = -p[..., 1:] / p[..., :1]
    return where(arange(n)[:, None] == 0, first[..., None, :], eye(n, k=-1, dtype=p.dtype))


def _pad_to(a, n):
    return pad(a, [(n - a.shape[0], 0)]) if a.shape[0] < n else a


def polyadd(a1, a2):
    """The sum of two polynomials (highest degree first)."""
    a1, a2 = _promote_dtypes(_poly1d("polyadd", a1), _poly1d("polyadd", a2))
    n = builtins.max(a1.shape[0], a2.shape[0])
    return add(_pad_to(a1, n), _pad_to(a2, n))


def polysub(a1, a2):
    """The difference of two polynomials."""
    a1, a2 = _promote_dtypes(_poly1d("polysub", a1), _poly1d("polysub", a2))
    n = builtins.max(a1.shape[0], a2.shape[0])
    return _pad_to(a1, n) - _pad_to(a2, n)


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (their coefficients' convolution)."""
    a1, a2 = _promote_dtypes(_poly1d("polymul", a1), _poly1d("polymul", a2), inexact=True)
    if a1.shape[0] == 0:
        a1 = asarray([0.0], a1.dtype)
    if a2.shape[0] == 0:
        a2 = asarray([0.0], a2.dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
    """The quotient and remainder of ``u / v`` (polynomial long division)."""
    u, v = _promote_dtypes(_poly1d("polydiv", u), _poly1d("polydiv", v), inexact=True)
    m, n = u.shape[0] - 1, v.shape[0] - 1
    scale = 1.0 / v[0]
    q = zeros((builtins.max(m - n + 1, 1),), u.dtype)
    r = u
    for k in builtins.range(0, m - n + 1):
        d = scale * r[k]
        q = q.at[k].set(d)
        r = r.at[k:k + n + 1].add(-d * v)
    if trim_leading_zeros:
        raise NotImplementedError("polydiv(trim_leading_zeros=True) needs concrete values")
    return q, r


def polyder(p, m=1):
    """The ``m``-th derivative of the polynomial ``p``."""
    p = _poly1d("polyder", p)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive")
    if m == 0:
        return p
    n = p.shape[0]
    coeff = np.ones(builtins.max(n - m, 0), np.float64)
    for j in builtins.range(m):
        coeff = coeff * np.arange(n - 1 - j, m - 1 - j, -1)
    out, = promote_args("polyder", p)
    if n - m <= 0:
        return zeros((0,), out.dtype)
    return out[:n - m] * asarray(coeff, out.dtype)


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of ``p`` with integration constants ``k``."""
    p = _poly1d("polyint", p)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if k is None:
        k = zeros((m,), np.float32)
    k = asarray(k)
    if k.ndim == 0:
        k = full((m,), k)
    if k.shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    p, k = _promote_dtypes(p, k, inexact=True)
    for i in builtins.range(m):
        n = p.shape[0]
        p = concatenate([p / asarray(np.arange(n, 0, -1), p.dtype), k[i:i + 1]])
    return p


def polyval(p, x, *, unroll=16):
    """``p[0] x^(n-1) + ... + p[n-1]`` by Horner's rule; coefficients of more dimensions
    are polynomials along their first axis, broadcast against ``x`` (diffrax's
    interpolation evaluates a polynomial per state component so)."""
    p = _arraylike("polyval", p)
    if p.ndim == 0:
        raise IndexError("jax.numpy.polyval: coefficients must be at least 1-dimensional, "
                         "got a scalar")
    p, x = _promote_dtypes(p, _arraylike("polyval", x, 1))
    y = zeros_like(x)
    for i in builtins.range(p.shape[0]):
        y = y * x + p[i]
    return y


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial fit of degree ``deg`` (columns of ``y`` fitted
    separately); ``full`` adds the residuals, rank, singular values and rcond; ``cov`` the
    covariance of the coefficients."""
    x, y = _promote_dtypes(_arraylike("polyfit", x), _arraylike("polyfit", y, 1), inexact=True)
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    order = deg + 1
    if rcond is None:
        rcond = len(x) * float(dtypes.finfo(x.dtype).eps)
    lhs = stack([x ** (deg - i) for i in builtins.range(order)], axis=1)
    rhs = y
    if w is not None:
        w = asarray(w, x.dtype)
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if rhs.ndim == 1 else w[:, None])
    scale = sqrt(sum(lhs * lhs, axis=0))
    lhs = lhs / scale[None, :]
    c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if y.ndim == 1:
        resids = reshape(resids, (-1,))
    if full:
        return c, resids, rank, s, asarray(rcond, x.dtype)
    if cov:
        Vbase = linalg.inv(dot(lhs.T, lhs))
        Vbase = Vbase / outer(scale, scale)
        if cov == "unscaled":
            fac = 1.0
        else:
            if len(x) <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            fac = resids / (len(x) - order)
            fac = ravel(fac)[0] if y.ndim == 1 else fac
        if y.ndim == 1:
            return c, Vbase * fac
        return c, Vbase[:, :, None] * fac
    return c


del swapaxes, mean
