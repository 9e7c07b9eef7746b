"""The Bernoulli distribution (``jax.scipy.stats.bernoulli``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import xlog1py, xlogy
from ._common import _c, _inexact

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    k, p, loc = _inexact("bernoulli.logpmf", k, p, loc)
    x = k - loc
    lp = xlogy(x, p) + xlog1py(1 - x, -p)
    return jnp.where((x < 0) | (x > 1), _c(lp, -np.inf), lp)


def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
    k, p = _inexact("bernoulli.cdf", k, p)
    bad = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
    val = jnp.where(k < 0, _c(k, 0), jnp.where(k < 1, 1 - p, _c(k, 1)))
    return jnp.where(bad, _c(val, np.nan), val)


def ppf(q, p):
    q, p = _inexact("bernoulli.ppf", q, p)
    bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return jnp.where(bad, _c(q, np.nan), jnp.where(q <= 1 - p, _c(q, 0), _c(q, 1)))
