"""The beta-binomial distribution (``jax.scipy.stats.betabinom``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import betaln
from ._common import _c, _inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = _inexact("betabinom.logpmf", k, n, a, b, loc)
    y = jnp.floor(k) - loc
    comb = -(jnp.log1p(n) + betaln(n - y + 1, y + 1))
    lp = comb + betaln(y + a, n - y + b) - betaln(a, b)
    lp = jnp.where((y == 0) & (n == 0), _c(lp, 0), lp)
    lp = jnp.where((y < -loc) | (y > n) | (y + a <= 0), _c(lp, -np.inf), lp)
    return jnp.where((n < 0) | (a <= 0) | (b <= 0), _c(lp, np.nan), lp)


def pmf(k, n, a, b, loc=0):
    return jnp.exp(logpmf(k, n, a, b, loc))
