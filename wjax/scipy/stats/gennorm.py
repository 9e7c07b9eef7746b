"""The generalized normal distribution (``jax.scipy.stats.gennorm``)."""
from __future__ import annotations

from ... import lax
from ... import numpy as jnp
from ..special import gammaln
from ._common import _inexact

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
    x, beta = _inexact("gennorm.logpdf", x, beta)
    return jnp.log(0.5 * beta) - gammaln(1 / beta) - jnp.abs(x) ** beta


def pdf(x, beta):
    return jnp.exp(logpdf(x, beta))


def cdf(x, beta):
    x, beta = _inexact("gennorm.cdf", x, beta)
    a, y = jnp.broadcast_arrays(1 / beta, jnp.abs(x) ** beta)
    return 0.5 * (1 + jnp.sign(x) * lax.igamma(a, y))
