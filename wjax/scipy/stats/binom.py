"""The binomial distribution (``jax.scipy.stats.binom``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import gammaln, xlog1py, xlogy
from ._common import _c, _inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    k, n, p, loc = _inexact("binom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(n + 1) - (gammaln(y + 1) + gammaln(n - y + 1))
    lin = xlogy(y, p) + xlog1py(n - y, -p)
    lp = comb + lin
    lp = jnp.where(((y == 0) & (n == 0)) | (lin == 0), _c(lp, 0), lp)
    return jnp.where((k >= loc) & (k < loc + n + 1), lp, _c(lp, -np.inf))


def pmf(k, n, p, loc=0):
    return jnp.exp(logpmf(k, n, p, loc))
