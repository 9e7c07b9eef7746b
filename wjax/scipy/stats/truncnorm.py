"""The truncated normal distribution on ``[a, b]`` (in units of ``scale`` around ``loc``)
(``jax.scipy.stats.truncnorm``): the normal mass between the bounds computed in log space on
the left tail (the right tail by symmetry), ``log1p(-...)`` in the centre."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import log_ndtr, logsumexp, ndtr
from . import norm
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf"]


def _log_diff(x, y):
    """``log(exp(x) - exp(y))``."""
    return logsumexp(jnp.stack([x, y]), b=jnp.stack([jnp.ones_like(x), -jnp.ones_like(y)]),
                     axis=0)


def _log_gauss_mass(a, b):
    """``log(Phi(b) - Phi(a))``."""
    a, b = jnp.broadcast_arrays(a, b)
    left = b <= 0
    right = a > 0
    central = ~(left | right)
    a_t = jnp.where(right, -b, a)
    b_t = jnp.where(right, -a, b)
    tail = _log_diff(log_ndtr(b_t), log_ndtr(a_t))
    mid = jnp.log1p(-ndtr(a) - ndtr(-b))
    return jnp.where(central, mid, tail)


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _inexact("truncnorm.logpdf", x, a, b, loc, scale)
    val = norm.logpdf(x, loc, scale) - _log_gauss_mass(a, b)
    z = (x - loc) / scale
    val = jnp.where((z < a) | (z > b), _c(val, -np.inf), val)
    return jnp.where(a >= b, _c(val, np.nan), val)


def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _inexact("truncnorm.logcdf", x, a, b, loc, scale)
    x, a, b = jnp.broadcast_arrays(x, a, b)
    z = (x - loc) / scale
    mass = _log_gauss_mass(a, b)
    lc = _log_gauss_mass(a, z) - mass
    ls = _log_gauss_mass(z, b) - mass
    out = jnp.where(z >= b, _c(lc, 0),
                    jnp.where(z <= a, _c(lc, -np.inf),
                              jnp.where(lc > -0.1, jnp.log1p(-jnp.exp(ls)), lc)))
    return jnp.where(a >= b, _c(out, np.nan), out)


def cdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logcdf(x, a, b, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _inexact("truncnorm.logsf", x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


def sf(x, a, b, loc=0, scale=1):
    return jnp.exp(logsf(x, a, b, loc, scale))
