"""wjax.scipy.special: JAX's ``jax.scipy.special`` functions, written the way JAX writes them.

Everything is elementwise lax operations (fused into one kernel under jit) except
``logsumexp`` (a max and a sum reduction).  ``gammaln`` and ``digamma`` use
XLA's Lanczos approximations (WGSL helpers in ``wjax/prims/random.py``),
``erfinv`` Giles' approximation (``lax.erf_inv``).
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..array import asarray_device
from ..api.custom_derivatives import custom_jvp
from ..core.ir import WeakScalar
from ..numpy._util import promote_args
from ..numpy.shapes import _axes
from ..prims.random import digamma_p, lgamma_p

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
