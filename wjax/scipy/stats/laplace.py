"""The Laplace distribution (``jax.scipy.stats.laplace``)."""
from __future__ import annotations

from ... import numpy as jnp
from ._common import _inexact

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("laplace.logpdf", x, loc, scale)
    return -(jnp.abs(x - loc) / scale + jnp.log(2 * scale))


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("laplace.cdf", x, loc, scale)
    d = (x - loc) / scale
    return jnp.where(d <= 0, 0.5 * jnp.exp(d), 1 - 0.5 * jnp.exp(-d))
