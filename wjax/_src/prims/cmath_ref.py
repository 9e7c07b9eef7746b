"""NumPy references of complex64 math: the spec the WGSL helpers in backend/wgsl_cmath.py
follow, used by the elementwise primitives' ``reference`` rules.

Finite inputs get the complex128 value (NumPy's, with a float64 log1p near 0 where NumPy's
loses small arguments), rounded to complex64.  Inputs with an inf or NaN component, and the
points on branch cuts, get JAX's (XLA's) values, written here as explicit rules on the input
components; tests/test_ops.py holds these references to real JAX on every pair of components
from 0, -0, +-1, 0.5, -2.5, +-inf, NaN.  (Where JAX loses accuracy on finite inputs, e.g.
``sinh(1e-30 + 0j)`` is 0 there, these keep NumPy's accurate value.)  The sign of a zero
result is not part of the spec where JAX's differs from NumPy's."""
import numpy as np

C64, F32 = np.dtype(np.complex64), np.dtype(np.float32)
NAN, INF = np.float32(np.nan), np.float32(np.inf)
HALF_PI = np.float32(np.pi / 2)


def _parts(x):
    x = np.asarray(x, C64)
    return x.real.astype(F32), x.imag.astype(F32)


def _mk(re, im):
    re, im = np.broadcast_arrays(np.asarray(re, F32), np.asarray(im, F32))
    out = np.empty(re.shape, C64)
    out.real, out.imag = re, im
    return out


def _c128(x):
    return np.asarray(x, C64).astype(np.complex128)


def _round(z):
    with np.errstate(over="ignore", invalid="ignore"):
        return _mk(z.real.astype(F32), z.imag.astype(F32))


def _fin(v):
    return np.isfinite(v)


def _where(c, a, b):
    return np.where(c, np.asarray(a, C64), np.asarray(b, C64))


def _np(f, x, *, pos_zero_imag=False, pos_zero_real=False):
    """f evaluated on complex128 (with -0 components made +0 first where JAX does)."""
    re, im = _parts(x)
    if pos_zero_imag:
        im = np.where(im == 0, np.float32(0), im)
    if pos_zero_real:
        re = np.where(re == 0, np.float32(0), re)
    with np.errstate(all="ignore"):
        return _round(f(_c128(_mk(re, im))))


NANC = _mk(NAN, NAN)


def exp(x):
    a, b = _parts(x)
    out = _np(np.exp, x)
    return _where(np.isinf(a) & ~_fin(b), NANC, out)


def log(x):
    a, b = _parts(x)
    return _where(np.isnan(a) | np.isnan(b), NANC, _np(np.log, x))


def log1p(x):
    """log(1 + x); for |x| < 1/2 in float64 as log1p(a (2 + a) + b^2) / 2 (NumPy's complex
    log1p is log(1 + x), which loses small arguments)."""
    a, b = _parts(x)
    with np.errstate(all="ignore"):
        out = _np(np.log1p, x)
        A, B = a.astype(np.float64), b.astype(np.float64)
        small = np.maximum(np.abs(A), np.abs(B)) < 0.5
        re = 0.5 * np.log1p(A * (2 + A) + B * B)
        im = np.arctan2(B, 1 + A)
    out = _where(small, _mk(re.astype(F32), im.astype(F32)), out)
    return _where(np.isnan(a) | np.isnan(b), NANC, out)


def expm1(x):
    a, b = _parts(x)
    out = _np(np.expm1, x)
    return _where(b == 0, _mk(out.real, b), out)


def sqrt(x):
    a, b = _parts(x)
    return _where(np.isnan(a) | np.isnan(b), NANC, _np(np.sqrt, x, pos_zero_imag=True))


def rsqrt(x):
    """1 / sqrt(x) on NumPy's branch cut (the sign of a zero imaginary part counts); 0 when a
    component is infinite, else NaN when one is NaN (as JAX)."""
    a, b = _parts(x)
    with np.errstate(all="ignore"):
        out = _round(1 / np.sqrt(_c128(x)))
    out = _where(np.isnan(a) | np.isnan(b), NANC, out)
    return _where(np.isinf(a) | np.isinf(b), _mk(0, 0), out)


def abs(x):
    a, b = _parts(x)
    with np.errstate(all="ignore"):
        r = np.abs(_c128(x)).astype(F32)
    return np.where(np.isnan(a) | np.isnan(b), NAN, r)


def sign(x):
    """x / |x| (0 at 0); non-finite inputs componentwise x / abs(x) as IEEE would."""
    a, b = _parts(x)
    with np.errstate(all="ignore"):
        z = _c128(x)
        m = np.abs(z)
        safe = np.where(m == 0, 1, m)             # each part over |x| (zero signs kept)
        q = np.empty_like(z)
        q.real, q.imag = z.real / safe, z.imag / safe
        out = _round(np.where(m == 0, z, q))
        ab = abs(x)
        special = _mk(a / ab, b / ab)
    fin = _fin(a) & _fin(b)
    return _where(fin, out, special)


def _nan_where(out, bad):
    return _where(bad, NANC, out)


def sinh(x):
    a, b = _parts(x)
    return _nan_where(_np(np.sinh, x), ~_fin(b))


def cosh(x):
    a, b = _parts(x)
    return _nan_where(_np(np.cosh, x), ~_fin(b))


def tanh(x):
    a, b = _parts(x)
    return _nan_where(_np(np.tanh, x), (a == 0) & ~_fin(b))


def _times_i(x):           # i x
    a, b = _parts(x)
    return _mk(-b, a)


def _times_minus_i(x):     # -i x
    a, b = _parts(x)
    return _mk(b, -a)


_T_LOG = np.float32(np.sqrt(np.finfo(np.float32).max) / 8)   # XLA's "safe max"


def _log2x(v):
    with np.errstate(all="ignore"):
        return (np.log(np.abs(v.astype(np.float64))) + np.log(2)).astype(F32)


def _arc(f, x, which):
    """asin/acos/acosh (which: the component whose size JAX keeps when the other is NaN: 're'),
    asinh ('im'): NaN results, except a NaN beside an infinite or huge (>= sqrt(max)/8)
    component: JAX then keeps the log term log(2|v|) (inf for inf)."""
    a, b = _parts(x)
    nan = np.isnan(a) | np.isnan(b)
    out = _where(nan, NANC, _np(f, x, pos_zero_imag=(which == "re"), pos_zero_real=(which == "im")))
    return out, a, b


def sin(x):
    """-i sinh(i x), as JAX."""
    return _times_minus_i(sinh(_times_i(x)))


def cos(x):
    """cosh(i x), as JAX."""
    return cosh(_times_i(x))


def tan(x):
    """-i tanh(i x), as JAX."""
    return _times_minus_i(tanh(_times_i(x)))


def logistic(x):
    """1 / (1 + exp(-x)), as JAX lowers it."""
    return div(_mk(1, 0), (np.asarray(exp(-np.asarray(x, C64)), C64) + np.complex64(1)))


def asin(x):
    out, a, b = _arc(np.arcsin, x, "re")
    big = np.isnan(b) & (np.abs(a) >= _T_LOG)
    out = _where(big, _mk(NAN, _log2x(a)), out)
    inf_im = np.isnan(a) & np.isinf(b)
    return _where(inf_im, _mk(NAN, b), out)


def acos(x):
    out, a, b = _arc(np.arccos, x, "re")
    big = np.isnan(b) & (np.abs(a) >= _T_LOG)
    out = _where(big, _mk(NAN, -_log2x(a)), out)
    inf_im = np.isnan(a) & np.isinf(b)
    return _where(inf_im, _mk(NAN, -b), out)


def acosh(x):
    out, a, b = _arc(np.arccosh, x, "re")
    big = np.isnan(b) & (np.abs(a) >= _T_LOG)
    out = _where(big, _mk(_log2x(a), NAN), out)
    inf_im = np.isnan(a) & np.isinf(b)
    return _where(inf_im, _mk(INF, NAN), out)


def asinh(x):
    out, a, b = _arc(np.arcsinh, x, "im")
    big = np.isnan(a) & (np.abs(b) >= _T_LOG)
    out = _where(big, _mk(_log2x(b), NAN), out)
    inf_re = np.isnan(b) & np.isinf(a)
    return _where(inf_re, _mk(a, NAN), out)


_T_ATANH = np.float32(2.0 ** 48)


def atanh(x):
    """JAX's values with a NaN component: the real part NaN (0 for an infinite real part), the
    imaginary part pi/2 with the sign of the imaginary part (of -1 when that is NaN); on the real
    axis beyond 2**48 the imaginary part is +pi/2 whatever the signs of the zeros."""
    a, b = _parts(x)
    out = _np(np.arctanh, x)
    big = (np.abs(a) >= _T_ATANH) & (b == 0)
    out = _where(big, _mk(out.real, HALF_PI), out)
    sb = np.where(np.isnan(b), np.float32(-1), np.where(b == 0, np.float32(1), np.sign(b)))
    nan_re = np.where(np.isinf(a), np.copysign(np.float32(0), a),
                      np.where(np.isinf(b), np.float32(0), NAN))
    special = _mk(nan_re, sb * HALF_PI)
    return _where(np.isnan(a) | np.isnan(b), special, out)


def atan(x):
    """-i atanh(i x), as JAX (its branch cuts and NaN rules follow)."""
    return _times_minus_i(atanh(_times_i(x)))


def div(x, y):
    """XLA's complex division: Smith's algorithm (in float64 here, rounded), with C99's recovery
    of infinities and zeros where it gives (NaN, NaN)."""
    a, b = _parts(x)
    c, d = _parts(y)
    with np.errstate(all="ignore"):
        A, B, C, D = (v.astype(np.float64) for v in (a, b, c, d))
        small = np.abs(C) < np.abs(D)
        r1 = C / D
        den1 = D + C * r1
        r2 = D / C
        den2 = C + D * r2
        qr = np.where(small, (A * r1 + B) / den1, (A + B * r2) / den2).astype(F32)
        qi = np.where(small, (B * r1 - A) / den1, (B - A * r2) / den2).astype(F32)
        q = _mk(qr, qi)
        both_nan = np.isnan(qr) & np.isnan(qi)
        # 1: zero denominator, numerator not NaN: copysign(inf, c) * (a, b)
        zden = (c == 0) & (d == 0) & (~np.isnan(a) | ~np.isnan(b))
        s = np.copysign(INF, c)
        o1 = _mk(s * a, s * b)
        # 2: infinite numerator, finite denominator
        inum = (np.isinf(a) | np.isinf(b)) & _fin(c) & _fin(d)
        a2 = np.copysign(np.where(np.isinf(a), np.float32(1), np.float32(0)), a)
        b2 = np.copysign(np.where(np.isinf(b), np.float32(1), np.float32(0)), b)
        o2 = _mk(INF * (a2 * c + b2 * d), INF * (b2 * c - a2 * d))
        # 3: finite numerator, infinite denominator
        iden = (np.isinf(c) | np.isinf(d)) & _fin(a) & _fin(b)
        c3 = np.copysign(np.where(np.isinf(c), np.float32(1), np.float32(0)), c)
        d3 = np.copysign(np.where(np.isinf(d), np.float32(1), np.float32(0)), d)
        o3 = _mk(np.float32(0) * (a * c3 + b * d3), np.float32(0) * (b * c3 - a * d3))
    out = _where(both_nan & iden, o3, q)
    out = _where(both_nan & inum, o2, out)
    return _where(both_nan & zden, o1, out)


def mul(x, y):
    with np.errstate(all="ignore"):
        return _round(_c128(x) * _c128(y))


def exp2(x):
    a, b = _parts(x)
    with np.errstate(all="ignore"):
        out = _round(np.exp2(_c128(x)))
    return _where(_fin(a) & _fin(b), out, NANC)


def pow(x, y):
    """exp(y log x), as XLA: x ** 0 is 1; 0 ** y is 0 for a positive real y, else NaN."""
    a, b = _parts(x)
    c, d = _parts(y)
    with np.errstate(all="ignore"):
        out = exp(mul(y, log(x)))
    out = _where((a == 1) & (b == 0), _mk(1, 0), out)
    # +inf ** (real y): inf for y > 0, 0 for y < 0
    xinf = (a == INF) & (b == 0) & (d == 0) & ~np.isnan(c)
    out = _where(xinf & (c > 0), _mk(INF, 0), _where(xinf & (c < 0), _mk(0, 0), out))
    x0 = (a == 0) & (b == 0)
    out = _where(x0, _where((d == 0) & (c > 0), _mk(0, 0), NANC), out)
    return _where((c == 0) & (d == 0), _mk(1, 0), out)


def integer_pow(x, y):
    """x ** y by repeated squaring with the plain complex product (as XLA), in complex128;
    a negative power is 1 / x**|y| with XLA's division."""
    if y == 0:
        return np.ones(np.shape(x), C64)
    n, acc, base = -y if y < 0 else y, None, _c128(x)
    with np.errstate(all="ignore"):
        while n:
            if n & 1:
                acc = base if acc is None else acc * base
            n >>= 1
            if n:
                base = base * base
    acc = _round(acc)
    return div(np.ones(np.shape(x), C64), acc) if y < 0 else acc



def _plain_mul(x, y):
    """XLA's complex product, the plain formula in float32 (NaN from inf * 0 included)."""
    a, b = _parts(x)
    c, d = _parts(y)
    with np.errstate(all="ignore"):
        return _mk(a * c - b * d, a * d + b * c)


def _polar_sqrt(x):
    """XLA's complex sqrt inside its expansions: sqrt|z| (cos(t/2), sin(t/2)), t = arg z, in
    float32 for finite z (so sqrt(-1 + 0j) is (-4.4e-8, 1) as there); 0 at 0, and JAX's sqrt
    where a component is not finite."""
    a, b = _parts(x)
    with np.errstate(all="ignore"):
        r = np.sqrt(abs(x))
        t = np.float32(0.5) * np.arctan2(b, a).astype(F32)
        out = _mk(r * np.cos(t).astype(F32), r * np.sin(t).astype(F32))
    out = _where(_fin(a) & _fin(b), out, sqrt(x))
    return _where((a == 0) & (b == 0), _mk(0, 0), out)


def atan2(y, x):
    """XLA's complex atan2: -i log(q), q = (x + i y) / sqrt(x^2 + y^2), each step as XLA (plain
    products, its division, the polar sqrt).  Where q is a negative real number (log's cut) the
    rounding of the steps decides the sign of its imaginary part, so of the pi in the result
    (JAX's sign there comes from its fused multiply-adds and its sin/cos): a nonzero imaginary
    part within 2^-21 |q| of 0 is taken as +0 here, giving +pi as real arctan2(0, -1) does."""
    y, x = np.broadcast_arrays(np.asarray(y, C64), np.asarray(x, C64))
    s = _polar_sqrt(_plain_mul(x, x) + _plain_mul(y, y))
    with np.errstate(all="ignore"):
        iy = _plain_mul(np.full(y.shape, 1j, C64), y)
        q = div(x + iy, s)
        qr, qi = _parts(q)
        near = (qr < 0) & (qi != 0) & (np.abs(qi) <= np.float32(2.0**-21) * -qr)
        q = _where(near, _mk(qr, 0), q)
        return _plain_mul(np.full(y.shape, -1j, C64), log(q))
