"""The wrapped Cauchy distribution on ``[0, 2 pi]`` (``jax.scipy.stats.wrapcauchy``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
    x, c = _inexact("wrapcauchy.logpdf", x, c)
    lp = jnp.log(1 - c * c) - np.log(2 * np.pi) - jnp.log(1 + c * c - 2 * c * jnp.cos(x))
    lp = jnp.where((x >= 0) & (x <= 2 * np.pi), lp, _c(lp, -np.inf))
    return jnp.where((c > 0) & (c < 1), lp, _c(lp, np.nan))


def pdf(x, c):
    return jnp.exp(logpdf(x, c))
