"""The geometric distribution (``jax.scipy.stats.geom``): trials until the first success."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import xlog1py
from ._common import _c, _inexact

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
    k, p, loc = _inexact("geom.logpmf", k, p, loc)
    x = k - loc
    lp = xlog1py(x - 1, -p) + jnp.log(p)
    return jnp.where(x <= 0, _c(lp, -np.inf), lp)


def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))
