"""The Pareto distribution (``jax.scipy.stats.pareto``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, b, loc=0, scale=1):
    x, b, loc, scale = _inexact("pareto.logpdf", x, b, loc, scale)
    z = (x - loc) / scale
    lp = -(jnp.log(scale / b) + (b + 1) * jnp.log(z))
    return jnp.where(x < loc + scale, _c(lp, -np.inf), lp)


def pdf(x, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
    x, b, loc, scale = _inexact("pareto.cdf", x, b, loc, scale)
    c = 1 - jnp.power((x - loc) / scale, -b)
    return jnp.where(x < loc + scale, _c(c, 0), c)


def logcdf(x, b, loc=0, scale=1):
    x, b, loc, scale = _inexact("pareto.logcdf", x, b, loc, scale)
    lc = jnp.log1p(-jnp.power((x - loc) / scale, -b))
    return jnp.where(x < loc + scale, _c(lc, -np.inf), lc)


def logsf(x, b, loc=0, scale=1):
    x, b, loc, scale = _inexact("pareto.logsf", x, b, loc, scale)
    ls = -b * jnp.log((x - loc) / scale)
    return jnp.where(x < loc + scale, _c(ls, 0), ls)


def sf(x, b, loc=0, scale=1):
    return jnp.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = _inexact("pareto.ppf", q, b, loc, scale)
    v = loc + scale * jnp.power(1 - q, -1 / b)
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), _c(v, np.nan), v)
