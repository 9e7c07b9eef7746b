"""The beta distribution (``jax.scipy.stats.beta``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import betainc, betaln, xlog1py, xlogy
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _inexact("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    lp = -betaln(a, b) + xlogy(a - 1, y) + xlog1py(b - 1, -y) - jnp.log(scale)
    lp = jnp.where((x > loc + scale) | (x < loc), _c(lp, -np.inf), lp)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), _c(lp, np.nan), lp)


def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _inexact("beta.cdf", x, a, b, loc, scale)
    return betainc(a, b, jnp.clip((x - loc) / scale, 0, 1))


def logcdf(x, a, b, loc=0, scale=1):
    return jnp.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = _inexact("beta.sf", x, a, b, loc, scale)
    return betainc(b, a, 1 - jnp.clip((x - loc) / scale, 0, 1))


def logsf(x, a, b, loc=0, scale=1):
    return jnp.log(sf(x, a, b, loc, scale))
