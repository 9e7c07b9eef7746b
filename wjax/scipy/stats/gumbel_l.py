"""The left-skewed Gumbel distribution (``jax.scipy.stats.gumbel_l``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf", "ppf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("gumbel_l.logpdf", x, loc, scale)
    z = (x - loc) / scale
    lp = -jnp.log(scale) + z - jnp.exp(z)
    return jnp.where(scale > 0, lp, _c(lp, np.nan))


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("gumbel_l.logcdf", x, loc, scale)
    z = (x - loc) / scale
    lc = jnp.log(-jnp.expm1(-jnp.exp(z)))
    return jnp.where(scale > 0, lc, _c(lc, np.nan))


def cdf(x, loc=0, scale=1):
    return jnp.exp(logcdf(x, loc, scale))


def logsf(x, loc=0, scale=1):
    x, loc, scale = _inexact("gumbel_l.logsf", x, loc, scale)
    ls = -jnp.exp((x - loc) / scale)
    return jnp.where(scale > 0, ls, _c(ls, np.nan))


def sf(x, loc=0, scale=1):
    return jnp.exp(logsf(x, loc, scale))


def ppf(p, loc=0, scale=1):
    p, loc, scale = _inexact("gumbel_l.ppf", p, loc, scale)
    q = loc + scale * jnp.log(-jnp.log1p(-p))
    return jnp.where((p > 0) & (p < 1), q, _c(q, np.nan))
