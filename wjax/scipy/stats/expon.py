"""The exponential distribution (``jax.scipy.stats.expon``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("expon.logpdf", x, loc, scale)
    lp = -((x - loc) / scale + jnp.log(scale))
    return jnp.where(x < loc, _c(lp, -np.inf), lp)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("expon.cdf", x, loc, scale)
    z = (loc - x) / scale
    return jnp.where(x < loc, jnp.zeros_like(z), -jnp.expm1(z))


def logsf(x, loc=0, scale=1):
    x, loc, scale = _inexact("expon.logsf", x, loc, scale)
    z = (loc - x) / scale
    return jnp.where(x < loc, jnp.zeros_like(z), z)


def sf(x, loc=0, scale=1):
    return jnp.exp(logsf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    return jnp.log1p(-sf(x, loc, scale))


def ppf(q, loc=0, scale=1):
    q, loc, scale = _inexact("expon.ppf", q, loc, scale)
    out = loc - scale * jnp.log1p(-q)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), _c(out, np.nan), out)
