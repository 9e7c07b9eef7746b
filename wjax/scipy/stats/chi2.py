"""The chi-squared distribution (``jax.scipy.stats.chi2``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import gammainc, gammaincc, gammaln
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _inexact("chi2.logpdf", x, df, loc, scale)
    y = (x - loc) / scale
    half = df / 2
    lp = (half - 1) * jnp.log(y) - y / 2 - (gammaln(half) + half * np.log(2)) - jnp.log(scale)
    return jnp.where(x < loc, _c(lp, -np.inf), lp)


def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _inexact("chi2.cdf", x, df, loc, scale)
    return gammainc(df / 2, jnp.clip((x - loc) / (2 * scale), 0, np.inf))


def logcdf(x, df, loc=0, scale=1):
    return jnp.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
    x, df, loc, scale = _inexact("chi2.sf", x, df, loc, scale)
    return gammaincc(df / 2, jnp.clip((x - loc) / (2 * scale), 0, np.inf))


def logsf(x, df, loc=0, scale=1):
    return jnp.log(sf(x, df, loc, scale))
