"""The right-skewed Gumbel distribution (``jax.scipy.stats.gumbel_r``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._common import _c, _inexact, _log1mexp

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("gumbel_r.logpdf", x, loc, scale)
    z = (x - loc) / scale
    lp = -jnp.log(scale) - (z + jnp.exp(-z))
    return jnp.where(scale > 0, lp, _c(lp, np.nan))


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("gumbel_r.logcdf", x, loc, scale)
    lc = -jnp.exp(-(x - loc) / scale)
    return jnp.where(scale > 0, lc, _c(lc, np.nan))


def cdf(x, loc=0, scale=1):
    return jnp.exp(logcdf(x, loc, scale))


def sf(x, loc=0, scale=1):
    x, loc, scale = _inexact("gumbel_r.sf", x, loc, scale)
    s = 1 - jnp.exp(-jnp.exp((loc - x) / scale))
    return jnp.where(scale > 0, s, _c(s, np.nan))


def logsf(x, loc=0, scale=1):
    x, loc, scale = _inexact("gumbel_r.logsf", x, loc, scale)
    ls = _log1mexp(jnp.exp((loc - x) / scale))
    return jnp.where(scale > 0, ls, _c(ls, np.nan))


def ppf(p, loc=0, scale=1):
    p, loc, scale = _inexact("gumbel_r.ppf", p, loc, scale)
    q = loc - scale * jnp.log(-jnp.log(p))
    return jnp.where((p > 0) & (p < 1), q, _c(q, np.nan))
