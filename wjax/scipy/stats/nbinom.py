"""The negative binomial distribution (``jax.scipy.stats.nbinom``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import gammaln, xlogy
from ._common import _c, _inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
    k, n, p, loc = _inexact("nbinom.logpmf", k, n, p, loc)
    y = k - loc
    comb = gammaln(y + n) - gammaln(n) - gammaln(y + 1)
    lp = comb + xlogy(n, p) + xlogy(y, 1 - p)
    return jnp.where(k < loc, _c(lp, -np.inf), lp)


def pmf(k, n, p, loc=0):
    return jnp.exp(logpmf(k, n, p, loc))
