"""wjax.scipy.special: JAX's ``jax.scipy.special`` functions, written the way JAX writes them.

Everything is elementwise lax operations (fused into one kernel under jit) except
``logsumexp`` (a max and a sum reduction).  ``gammaln`` and ``digamma`` use
XLA's Lanczos approximations (WGSL helpers in ``wjax/_src/prims/random.py``),
``erfinv`` Giles' approximation (``lax.erf_inv``).
"""
from __future__ import annotations

import math
import operator
from fractions import Fraction

import numpy as np

from .. import lax
from .. import numpy as jnp
from .._src.array import asarray_device
from .._src.api.autodiff import jvp as _jvp
from .._src.api.custom_derivatives import custom_jvp
from .._src.core.ir import WeakScalar
from .._src.core.tracing import ConcretizationTypeError as ConcretizationTypeError_
from .._src.core.tracing import Tracer as Tracer_
from ..numpy._util import promote_args
from ..numpy.shapes import _axes
from .._src.prims.random import digamma_p, lgamma_p

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "expit", "logit", "gammaln", "digamma",
           "xlogy", "xlog1py", "ndtr", "ndtri", "log_ndtr", "entr", "softmax", "log_softmax",
           "betaln"]


def _inexact(name, *args):
    """JAX's ``promote_args_inexact``: a common inexact dtype and a broadcast shape, as arrays."""
    out = []
    for o in promote_args(name, *args, to_inexact=True):
        if isinstance(o, WeakScalar):
            o = asarray_device(o.val, weak_type=True)
        elif not hasattr(o, "aval"):
            o = jnp.asarray(o)
        out.append(o)
    return out


def _const(x, v):
    return np.asarray(v, x.dtype)


def _stop_gradient(x):
    f = getattr(lax, "stop_gradient", None)
    return f(x) if f is not None else x


# --------------------------------------------------------------------------- logsumexp

def _reduction_dims(a, axis):
    if axis is None:
        return tuple(range(a.ndim)), tuple(range(a.ndim))
    dims = tuple(sorted(_axes(axis, a.ndim)))       # out-of-bounds axes raise, as in JAX
    return dims, dims


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` along ``axis``, computed stably (JAX's algorithm)."""
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a_arr, b_arr = _inexact("logsumexp", a, b)
        a_arr = jnp.where(b_arr != 0, a_arr, -np.inf)
    else:
        a_arr, = _inexact("logsumexp", a)
        b_arr = a_arr
    pos_dims, dims = _reduction_dims(a_arr, axis)
    amax = jnp.max(a_arr, axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
    amax = _stop_gradient(lax.select(jnp.isfinite(amax), amax, jnp.zeros_like(amax)))
    amax_with_dims = amax if keepdims else lax.expand_dims(amax, pos_dims)
    exp_a = lax.exp(jnp.subtract(a_arr, amax_with_dims))
    if b is not None:
        exp_a = jnp.multiply(exp_a, b_arr)
    sumexp = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = lax.sign(sumexp)
    sumexp = jnp.abs(sumexp)
    out = lax.add(lax.log(sumexp), amax)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, _const(out, np.nan), out)
    return out


def log_softmax(x, axis=None, where=None):
    """``x - logsumexp(x)`` along ``axis``, shifted by a stop-gradient max."""
    x = x if hasattr(x, "aval") else jnp.asarray(x)
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_logsumexp
    if where is not None:
        return jnp.where(where, result, -np.inf)
    return result


def softmax(x, axis=None, where=None):
    """``exp(x) / sum(exp(x))`` along ``axis``, shifted by a stop-gradient max."""
    x = x if hasattr(x, "aval") else jnp.asarray(x)
    x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    unnormalized = jnp.exp(x_safe - lax.stop_gradient(x_max))
    result = unnormalized / jnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        return jnp.where(where, result, 0)
    return result


# --------------------------------------------------------------------------- error functions

def erf(x):
    x, = _inexact("erf", x)
    return lax.erf(x)


def _erfc(x):
    # erfc(|x|) = t * exp(-x^2 + P(t)), t = 1 / (1 + |x| / 2) (relative error < 1.2e-7 for all x);
    # near 0, 1 - erf(x) is as accurate.
    z = lax.min(lax.abs(x), np.float32(10.5))   # erfc(10.5) underflows: the tail ends there
    t = 1.0 / (1.0 + 0.5 * z)
    poly = (-1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    # exp(-z^2 + P) as exp(-s^2) exp(-(z - s)(z + s) + P), s = z with its low 12 significand
    # bits cleared: s^2 is exact, so no rounding of the large argument -z^2 enters the exp
    s = lax.bitcast_convert_type(
        lax.bitwise_and(lax.bitcast_convert_type(z, np.uint32), np.uint32(0xfffff000)), np.float32)
    r = t * lax.exp(-(s * s)) * lax.exp(-(z - s) * (z + s) + poly)
    tail = jnp.where(x < 0, 2.0 - r, r)
    return jnp.where(lax.abs(x) < 0.5, 1.0 - lax.erf(x), tail)


def erfc(x):
    x, = _inexact("erfc", x)
    f = getattr(lax, "erfc", None)
    return f(x) if f is not None else _erfc(x)


def erfinv(x):
    x, = _inexact("erfinv", x)
    return lax.erf_inv(x)


# --------------------------------------------------------------------------- logistic

def expit(x):
    x, = _inexact("expit", x)
    return lax.logistic(x)


@custom_jvp
def logit(x):
    x, = _inexact("logit", x)
    return lax.log(lax.div(x, lax.sub(_const(x, 1), x)))


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(_const(x, 1), x))))


# --------------------------------------------------------------------------- gamma family

def gammaln(x):
    """``log|Gamma(x)|`` (XLA's Lanczos approximation)."""
    x, = _inexact("gammaln", x)
    f = getattr(lax, "lgamma", None)
    return f(x) if f is not None else lgamma_p.bind(x)


def digamma(x):
    x, = _inexact("digamma", x)
    f = getattr(lax, "digamma", None)
    return f(x) if f is not None else digamma_p.bind(x)


def betaln(a, b):
    a, b = _inexact("betaln", a, b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


# --------------------------------------------------------------------------- x log y

@custom_jvp
def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (NaN in ``y`` propagates)."""
    x, y = _inexact("xlogy", x, y)
    x_ok = x != 0.
    return jnp.where(x_ok | jnp.isnan(y), lax.mul(x, lax.log(y)), jnp.zeros_like(x))


def _xlogy_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    result = xlogy(x, y)
    return result, (x_dot * lax.log(y) + y_dot * x / y).astype(result.dtype)


xlogy.defjvp(_xlogy_jvp)


@custom_jvp
def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0``."""
    x, y = _inexact("xlog1py", x, y)
    x_ok = x != 0.
    return jnp.where(x_ok | jnp.isnan(y), lax.mul(x, lax.log1p(y)), jnp.zeros_like(x))


def _xlog1py_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    result = xlog1py(x, y)
    return result, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(result.dtype)


xlog1py.defjvp(_xlog1py_jvp)


def entr(x):
    """``-x log x`` for ``x > 0``, 0 at 0, ``-inf`` below."""
    x, = _inexact("entr", x)
    return jnp.where(x > 0, -x * lax.log(jnp.where(x > 0, x, 1.0)),
                     jnp.where(x == 0, _const(x, 0), _const(x, -np.inf)))


# --------------------------------------------------------------------------- normal distribution

def ndtr(x):
    """The standard normal CDF (JAX's erf/erfc split)."""
    x, = _inexact("ndtr", x)
    dt = np.dtype(x.dtype).type
    half_sqrt_2 = dt(0.5) * np.sqrt(2., dtype=dt)
    w = x * half_sqrt_2
    z = lax.abs(w)
    y = jnp.where(z < half_sqrt_2, dt(1.) + lax.erf(w),
                  jnp.where(w > dt(0.), dt(2.) - erfc(z), erfc(z)))
    return dt(0.5) * y


def _polyval(coeffs, x):
    acc = jnp.zeros_like(x)
    for c in coeffs:
        acc = acc * x + c
    return acc


_P0 = [-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
       1.39312609387279679503E1, -1.23916583867381258016E0]
_Q0 = [1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
       -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
       1.59056225126211695515E1, -1.18331621121330003142E0]
_P1 = [4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
       4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
       -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4]
_Q1 = [1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
       1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
       -3.80806407691578277194E-2, -9.33259480895457427372E-4]
_P2 = [3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
       1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
       3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9]
_Q2 = [1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
       2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
       2.89247864745380683936E-6, 6.79019408009981274425E-9]


def ndtri(p):
    """The inverse standard normal CDF (Cephes' piecewise rational approximation, as JAX)."""
    p, = _inexact("ndtri", p)
    dt = np.dtype(p.dtype).type
    cf = lambda cs: [dt(c) for c in cs]   # noqa: E731
    maybe_complement_p = jnp.where(p > dt(-np.expm1(-2.)), dt(1.) - p, p)
    sanitized = jnp.where(maybe_complement_p == dt(0.), dt(0.5), maybe_complement_p)
    w = sanitized - dt(0.5)
    ww = lax.square(w)
    x_big = w + w * ww * (_polyval(cf(_P0), ww) / _polyval(cf(_Q0), ww))
    x_big = x_big * -dt(np.sqrt(2. * np.pi))
    z = lax.sqrt(dt(-2.) * lax.log(sanitized))
    first = z - lax.log(z) / z
    inv_z = 1 / z
    small = _polyval(cf(_P2), inv_z) / _polyval(cf(_Q2), inv_z) / z
    other = _polyval(cf(_P1), inv_z) / _polyval(cf(_Q1), inv_z) / z
    x = jnp.where(sanitized > dt(np.exp(-2.)), x_big,
                  jnp.where(z >= dt(8.0), first - small, first - other))
    x = jnp.where(p > dt(1. - np.exp(-2.)), x, -x)
    return jnp.where(p == dt(0.0), dt(-np.inf), jnp.where(p == dt(1.0), dt(np.inf), x))


def log_ndtr(x, series_order=3):
    """``log(ndtr(x))``, accurate in both tails (JAX's three-segment algorithm)."""
    if not isinstance(series_order, int):
        raise TypeError("series_order must be a Python integer.")
    if series_order < 0 or series_order > 30:
        raise ValueError("series_order must be in [0, 30].")
    x, = _inexact("log_ndtr", x)
    dt = np.dtype(x.dtype).type
    lower, upper = dt(-10.), dt(5.)
    gt_upper = x > upper
    ndtr_res = ndtr(jnp.where(gt_upper, -x, jnp.maximum(x, lower)))
    xl = jnp.minimum(x, lower)
    x2 = lax.square(xl)
    log_scale = -dt(0.5) * x2 - lax.log(-xl) - dt(0.5 * np.log(2. * np.pi))
    even, odd = jnp.zeros_like(xl), jnp.zeros_like(xl)
    x_2n = x2
    for n in range(1, series_order + 1):
        y = dt(float(np.prod(np.arange(2 * n - 1, 0, -2)))) / x_2n
        if n % 2:
            odd = odd + y
        else:
            even = even + y
        x_2n = x_2n * x2
    lo = log_scale + lax.log(dt(1.) + even - odd)
    return jnp.where(gt_upper, -ndtr_res, jnp.where(x > lower, lax.log(ndtr_res), lo))


# ================================================================ more of jax.scipy.special
# gamma family, combinatorics, Bessel, zeta/polygamma, exponential/trigonometric integrals,
# hypergeometric 1F1, entropies -- with JAX's edge conventions and derivative rules.

from . import _integrals as _I  # noqa: E402


def gammasgn(x):
    """The sign of the gamma function (NaN at the poles, -1 at -0.0)."""
    x, = _inexact("gammasgn", x)
    floor_x = lax.floor(x)
    neg = x < 0
    nan_case = (neg & (x == floor_x)) | jnp.isnan(x)
    minus = (neg & (jnp.fmod(floor_x, 2) != 0)) | ((x == 0) & jnp.signbit(x))
    return jnp.where(nan_case, _const(x, np.nan), jnp.where(minus, _const(x, -1), _const(x, 1)))


def gamma(x):
    """The gamma function (real arguments)."""
    x, = _inexact("gamma", x)
    return gammasgn(x) * lax.exp(gammaln(x))


def loggamma(x):
    """``log(gamma(x))`` for real ``x > 0`` (NaN elsewhere, as JAX's real loggamma)."""
    x, = _inexact("loggamma", x)
    return jnp.where(x > 0, gammaln(x), _const(x, np.nan))


def factorial(n, exact=False):
    """``gamma(n + 1)`` (0 for negative n); ``exact=True`` is not supported, as in JAX."""
    if exact:
        raise NotImplementedError("factorial with exact=True")
    n, = _inexact("factorial", n)
    return jnp.where(n < 0, _const(n, 0), lax.exp(gammaln(n + 1)))


def comb(N, k, *, repetition=False):
    """The number of combinations of ``N`` things taken ``k`` at a time (0 outside
    ``0 <= k <= N``)."""
    N, k = _inexact("comb", N, k)
    if repetition:
        return jnp.where((k == 0) & (N >= 0), _const(N, 1), comb(N + k - 1, k))
    ok = (k <= N) & (N >= 0) & (k >= 0)
    sN, sk = jnp.where(ok, N, 0.0), jnp.where(ok, k, 0.0)
    res = lax.exp(gammaln(sN + 1) - gammaln(sk + 1) - gammaln(sN + 1 - sk))
    return jnp.where(ok, res, _const(res, 0))


def beta(a, b):
    """The beta function ``gamma(a) gamma(b) / gamma(a + b)``."""
    a, b = _inexact("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * lax.exp(betaln(a, b))


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (differentiable in ``x``)."""
    a, b, x = _inexact("betainc", a, b, x)
    return lax.betainc(*_bcast(a, b, x))


def _bcast(*xs):
    shape = np.broadcast_shapes(*[x.shape for x in xs])
    return [x if x.shape == shape else jnp.broadcast_to(x, shape) for x in xs]


def gammainc(a, x):
    """The regularized lower incomplete gamma function ``P(a, x)``."""
    a, x = _inexact("gammainc", a, x)
    return lax.igamma(*_bcast(a, x))


def gammaincc(a, x):
    """The regularized upper incomplete gamma function ``Q(a, x)``."""
    a, x = _inexact("gammaincc", a, x)
    return lax.igammac(*_bcast(a, x))


@custom_jvp
def poch(z, m):
    """The Pochhammer symbol ``gamma(z + m) / gamma(z)`` (1 for m = 0)."""
    z, m = _inexact("poch", z, m)
    return jnp.where(m == 0., _const(z, 1), gamma(z + m) / gamma(z))


poch.defjvps(lambda z_dot, ans, z, m: (digamma(z + m) - digamma(z)) * ans * z_dot,
             lambda m_dot, ans, z, m: digamma(z + m) * ans * m_dot)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d`` (a Python int)."""
    if isinstance(d, Tracer_):
        raise ConcretizationTypeError_(
            "The d argument of multigammaln must be concrete (a Python int), got a tracer")
    d = int(d)
    a, = _inexact("multigammaln", a)
    const = 0.25 * d * (d - 1) * np.log(np.pi)
    b = np.arange(d, dtype=np.float64) / 2
    res = jnp.sum(gammaln(jnp.expand_dims(a, -1) - jnp.asarray(b, a.dtype)), axis=-1)
    return res + _const(res, const)


# --------------------------------------------------------------------------- entropies

@custom_jvp
def _xlogx(x):
    return jnp.where(x == 0, _const(x, 0), x * lax.log(jnp.where(x == 0, 1.0, x)))


_xlogx.defjvp(lambda p, t: (_xlogx(p[0]), t[0] * (lax.log(p[0]) + 1)))


def rel_entr(p, q):
    """``p log(p / q)`` elementwise (0 where p = 0 <= q, inf where q <= 0 < p)."""
    p, q = _inexact("rel_entr", p, q)
    both = (p > 0) & (q > 0)
    one_zero = (p == 0) & (q >= 0)
    sp_, sq = jnp.where(both, p, 1.0), jnp.where(both, q, 1.0)
    val = _xlogx(sp_) - xlogy(sp_, sq)
    return jnp.where(both, val, jnp.where(one_zero, _const(val, 0), _const(val, np.inf)))


def kl_div(p, q):
    """``p log(p / q) - p + q`` elementwise."""
    p, q = _inexact("kl_div", p, q)
    return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
    """The Box-Cox transform ``(x^lmbda - 1) / lmbda`` (``log x`` at lmbda = 0)."""
    x, lmbda = _inexact("boxcox", x, lmbda)
    zero = lmbda == 0
    safe = jnp.where(zero, 1.0, lmbda)
    lx = lax.log(x)
    return jnp.where(zero, lx, jnp.expm1(safe * lx) / safe)


def boxcox1p(x, lmbda):
    """The Box-Cox transform of ``1 + x``."""
    x, lmbda = _inexact("boxcox1p", x, lmbda)
    zero = lmbda == 0
    safe = jnp.where(zero, 1.0, lmbda)
    lx = lax.log1p(x)
    return jnp.where(zero, lx, jnp.expm1(safe * lx) / safe)


# --------------------------------------------------------------------------- Bessel

def i0e(x):
    """``exp(-|x|) I0(x)``."""
    x, = _inexact("i0e", x)
    return lax.bessel_i0e(x)


def i0(x):
    """The modified Bessel function of the first kind, order 0."""
    x, = _inexact("i0", x)
    return lax.exp(lax.abs(x)) * lax.bessel_i0e(x)


def i1e(x):
    """``exp(-|x|) I1(x)``."""
    x, = _inexact("i1e", x)
    return lax.bessel_i1e(x)


def i1(x):
    """The modified Bessel function of the first kind, order 1."""
    x, = _inexact("i1", x)
    return lax.exp(lax.abs(x)) * lax.bessel_i1e(x)


def bessel_jn(z, *, v, n_iter=50):
    """``J_0(z) ... J_v(z)`` (stacked on a new leading axis) by Miller's backward recurrence
    from order ``n_iter``, normalized with ``J_0 + 2 sum J_2k = 1``."""
    if isinstance(v, Tracer_) or isinstance(n_iter, Tracer_):
        raise ConcretizationTypeError_("Argument v of bessel_jn must be a concrete int")
    v, n_iter = int(v), int(n_iter)
    z, = _inexact("bessel_jn", jnp.asarray(z))

    def body(carry, k):
        f0, f1, bs = carry
        f = 2.0 * (k + 1.0) * f1 / z - f0
        bs = jnp.where(jnp.mod(k, 2) == 0, bs + 2.0 * f, bs)
        return (f1, f, bs), f

    init = (jnp.zeros_like(z), jnp.full_like(z, 1e-16), jnp.zeros_like(z))
    (_, _, bs), vals = lax.scan(body, init, jnp.arange(n_iter + 1, dtype=z.dtype),
                                reverse=True)
    f = vals[0]
    return vals[:v + 1] / (bs - f)


# --------------------------------------------------------------------------- zeta, polygamma

_BERNOULLI_2J_OVER_FACT = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6,
                           -3617 / 510, 43867 / 798]


def _zeta_euler_maclaurin(s, q):
    """The Hurwitz zeta function as a differentiable composition (Euler-Maclaurin with N = 8
    direct terms and 8 Bernoulli corrections): the jvp of ``zeta`` in both arguments."""
    N = 8
    k = jnp.arange(N, dtype=s.dtype)
    S = jnp.sum((jnp.expand_dims(q, -1) + k) ** -jnp.expand_dims(s, -1), -1)
    a = q + N
    total = S + a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    fact = 1.0
    rising = s
    for j, b in enumerate(_BERNOULLI_2J_OVER_FACT, start=1):
        fact *= (2 * j - 1) * (2 * j) if j > 1 else 2
        total = total + (b / fact) * rising * a ** (-s - 2 * j + 1)
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
    return total


@custom_jvp
def zeta(x, q=None):
    """The Hurwitz zeta function ``sum_k (k + q)^-x`` (``q`` is required, as in JAX)."""
    if q is None:
        raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                                  "compute the Hurwitz Zeta function.")
    x, q = _inexact("zeta", x, q)
    return lax.zeta(*_bcast(x, q))


@zeta.defjvp
def _zeta_jvp(primals, tangents):
    x, q = primals
    x, q = _inexact("zeta", x, q)
    tx, tq = [jnp.asarray(t, x.dtype) for t in tangents]
    return zeta(x, q), _jvp(_zeta_euler_maclaurin, (x, q), (tx, tq))[1]


def polygamma(n, x):
    """The ``n``-th derivative of the digamma function (``n`` of an integer dtype)."""
    ndt = np.dtype(jnp.asarray(n).dtype) if not isinstance(n, int) else np.dtype(np.int32)
    if ndt.kind not in "iu":
        raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                         f"{ndt}.")
    n, x = _inexact("polygamma", n, x)
    return lax.polygamma(*_bcast(n, x))


# --------------------------------------------------------------------------- integrals

@custom_jvp
def expi(x):
    """The exponential integral ``Ei(x)`` (``-E1(-x)`` for negative x)."""
    x, = _inexact("expi", x)
    neg = x < 0
    pos = _I.expi_pos(jnp.where(neg | (x == 0), 1.0, x))
    negv = -_I.exp1_pos(jnp.where(neg, -x, 1.0))
    out = jnp.where(neg, negv, pos)
    return jnp.where(x == 0, _const(x, -np.inf), out)


expi.defjvp(lambda p, t: (expi(p[0]), jnp.exp(p[0]) / p[0] * t[0]))


def _expn(n, x):
    nan_case = (n < 0) | (x < 0) | jnp.isnan(x) | jnp.isnan(n)
    xz = x == 0
    safe_x = jnp.where(xz | nan_case, 1.0, x)
    safe_n = jnp.where(nan_case, 1.0, n)
    gen = _I.expn_impl(jnp.maximum(safe_n, 1.0), safe_x)
    n0 = jnp.exp(-safe_x) / safe_x
    out = jnp.where(safe_n == 0, n0, gen)
    at0 = jnp.where(n < 2, _const(x, np.inf), 1 / jnp.where(n < 2, 2.0, n - 1))
    out = jnp.where(xz, at0, out)
    return jnp.where(nan_case, _const(x, np.nan), out)


def expn(n, x):
    """The generalized exponential integral ``E_n(x)`` (integer ``n >= 0``, ``x >= 0``)."""
    n, x = _inexact("expn", n, x)
    n, x = _bcast(n, x)
    return _expn_cj(n, x)


@custom_jvp
def _expn_cj(n, x):
    return _expn(n, x)


_expn_cj.defjvps(None, lambda t, ans, n, x: -_expn(n - 1, x) * t)


def exp1(x):
    """The exponential integral ``E1(x)`` (NaN for negative x)."""
    x, = _inexact("exp1", x)
    return expn(jnp.ones_like(x), x)


@custom_jvp
def sici(x):
    """The sine and cosine integrals ``(Si(x), Ci(x))`` (Ci of negative x is Ci(|x|), its
    real part)."""
    x, = _inexact("sici", x)
    ax = jnp.abs(x)
    safe = jnp.where(ax == 0, 1.0, ax)
    si, ci = _I.sici_pos(safe)
    si = jnp.where(ax == 0, _const(x, 0), si)
    ci = jnp.where(ax == 0, _const(x, -np.inf), ci)
    inf = jnp.isinf(x)
    si = jnp.where(inf, _const(x, np.pi / 2), si)
    ci = jnp.where(inf, _const(x, 0), ci)
    si = jnp.sign(x) * si
    ci = jnp.where(jnp.isneginf(x) | jnp.isnan(x), _const(x, np.nan), ci)
    return si, ci


@sici.defjvp
def _sici_jvp(primals, tangents):
    (p,), (t,) = primals, tangents
    return sici(p), (jnp.sinc(p / np.pi) * t, jnp.cos(p) / p * t)


@custom_jvp
def fresnel(x):
    """The Fresnel integrals ``(S(x), C(x))``."""
    x, = _inexact("fresnel", x)
    ax = jnp.abs(x)
    s, c = _I.fresnel_pos(jnp.where(jnp.isinf(ax), 1.0, ax))
    s = jnp.where(jnp.isinf(ax), _const(x, 0.5), s)
    c = jnp.where(jnp.isinf(ax), _const(x, 0.5), c)
    sg = jnp.sign(x)
    return sg * s, sg * c


@fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    arg = _const(jnp.asarray(x), np.pi / 2) * x * x
    return fresnel(x), (jnp.sin(arg) * t, jnp.cos(arg) * t)


@custom_jvp
def dawsn(x):
    """Dawson's integral ``exp(-x^2) int_0^x exp(t^2) dt``."""
    x, = _inexact("dawsn", x)
    return _I.dawsn_impl(x)


dawsn.defjvps(lambda t, ans, x: (1 - 2 * x * ans) * t)


@custom_jvp
def erfcx(x):
    """The scaled complementary error function ``exp(x^2) erfc(x)``."""
    x, = _inexact("erfcx", x)
    return _I.erfcx_impl(x)


erfcx.defjvps(lambda t, ans, x: (2 * x * ans - _const(jnp.asarray(x), 2 / np.sqrt(np.pi))) * t)


def spence(x):
    """SciPy's Spence function ``int_1^x log(t) / (1 - t) dt`` = Li2(1 - x) (x >= 0; NaN
    below); float32 only, as JAX."""
    x = jnp.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"x.dtype={x.dtype} is not supported, see docstring for supported "
                        f"types.")
    return _I.spence_impl(x)


@custom_jvp
def _owens_t(h, a):
    return _I.owens_t_impl(h, a)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    h, a = primals
    dh, da = tangents
    sq2 = _const(h, np.sqrt(2.0))
    d_h = -lax.exp(-0.5 * h * h) * lax.erf(a * h / sq2) / (2 * _const(h, np.sqrt(2 * np.pi)))
    d_a = lax.exp(-0.5 * (a * a + 1) * h * h) / (2 * np.pi * (a * a + 1))
    return _owens_t(h, a), d_h * dh + d_a * da


def owens_t(h, a):
    """Owen's T function ``1/(2 pi) int_0^a exp(-h^2 (1 + t^2)/2) / (1 + t^2) dt``."""
    h, a = _inexact("owens_t", h, a)
    return _owens_t(*_bcast(h, a))


# --------------------------------------------------------------------------- hypergeometric

def _hyp1f1_series(a, b, x):
    def body(k, st):
        acc, term = st
        kf = k.astype(x.dtype)
        term = term * (a + kf) / (b + kf) * x / (kf + 1)
        return acc + term, term

    acc, _ = lax.fori_loop(0, 250, body, (jnp.ones_like(x), jnp.ones_like(x)))
    return acc


def _hyp1f1_asymptotic(a, b, x):
    # Kummer: 1F1(a; b; x) ~ gamma(b)/gamma(a) e^x x^(a-b) sum (b-a)_k (1-a)_k / (k! x^k)
    # (+ the exponentially smaller branch for x > 0; the leading one alone for x < 0 via the
    # Kummer transformation e^x 1F1(b-a; b; -x))
    def body(k, st):
        acc, term = st
        kf = k.astype(x.dtype)
        term = term * (b - a + kf) * (1 - a + kf) / ((kf + 1) * x)
        return acc + term, term

    acc, _ = lax.fori_loop(0, 30, body, (jnp.ones_like(x), jnp.ones_like(x)))
    lg = gammaln(b) - gammaln(a) + x + (a - b) * lax.log(x)
    return gammasgn(b) * gammasgn(a) * lax.exp(lg) * acc


def hyp1f1(a, b, x):
    """Kummer's confluent hypergeometric function ``1F1(a; b; x)`` for real arguments (its
    power series for |x| < 100, the asymptotic expansion beyond; 1 at a = b = 0)."""
    a, b, x = _inexact("hyp1f1", a, b, x)
    a, b, x = _bcast(a, b, x)
    near = jnp.abs(x) < 100
    xs = jnp.where(near, x, 1.0)
    xl = jnp.where(near, 1000.0, x)
    # negative x: Kummer's transformation keeps the series terms positive
    neg = xs < 0
    a_s = jnp.where(neg, b - a, a)
    series = _hyp1f1_series(a_s, b, jnp.abs(xs))
    series = jnp.where(neg, lax.exp(xs) * series, series)
    res = jnp.where(near, series, _hyp1f1_asymptotic(a, b, xl))
    idx = ((a == 0) * 1 + ((a == b) & (a != 0)) * 2 + ((b == 0) & (a != 0)) * 3).astype(
        np.int32)
    return lax.select_n(idx, res, jnp.ones_like(res), lax.exp(x), jnp.full_like(res, np.inf))


def bernoulli(n: int):
    """The Bernoulli numbers ``B_0 ... B_n`` (``B_1 = -1/2``)."""
    if isinstance(n, Tracer_):
        raise ConcretizationTypeError_("Argument n of bernoulli must be a concrete int")
    n = operator.index(n)
    if n < 0:
        raise ValueError("n must be a non-negative integer.")
    B = [Fraction(1)]
    for m in range(1, n + 1):
        B.append(-sum(math.comb(m + 1, k) * B[k] for k in range(m)) / (m + 1))
    return jnp.asarray(np.array([float(b) for b in B], np.float64).astype(np.float32))


__all__ += ["gammasgn", "gamma", "loggamma", "factorial", "comb", "beta", "betainc",
            "gammainc", "gammaincc", "poch", "multigammaln", "rel_entr", "kl_div", "boxcox",
            "boxcox1p", "i0e", "i0", "i1e", "i1", "bessel_jn", "zeta", "polygamma", "expi",
            "expn", "exp1", "sici", "fresnel", "dawsn", "erfcx", "spence", "owens_t", "hyp1f1",
            "bernoulli"]
