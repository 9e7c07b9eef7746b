"""The gamma distribution (``jax.scipy.stats.gamma``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import gammainc, gammaincc, gammaln, xlogy
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _inexact("gamma.logpdf", x, a, loc, scale)
    ok = x >= loc
    y = jnp.where(ok, (x - loc) / scale, 1.0)
    lp = xlogy(a - 1, y) - y - (gammaln(a) + jnp.log(scale))
    return jnp.where(ok, lp, _c(lp, -np.inf))


def pdf(x, a, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = _inexact("gamma.cdf", x, a, loc, scale)
    return gammainc(a, jnp.clip((x - loc) / scale, 0, np.inf))


def logcdf(x, a, loc=0, scale=1):
    return jnp.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
    x, a, loc, scale = _inexact("gamma.sf", x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < 0, _c(y, 1), gammaincc(a, jnp.maximum(y, 0)))


def logsf(x, a, loc=0, scale=1):
    return jnp.log(sf(x, a, loc, scale))
