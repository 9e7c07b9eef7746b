"""The logistic distribution (``jax.scipy.stats.logistic``)."""
from __future__ import annotations

from ... import numpy as jnp
from ..special import expit, logit
from ._common import _inexact

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("logistic.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -2 * jnp.logaddexp(z / 2, -z / 2) - jnp.log(scale)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("logistic.cdf", x, loc, scale)
    return expit((x - loc) / scale)


def sf(x, loc=0, scale=1):
    x, loc, scale = _inexact("logistic.sf", x, loc, scale)
    return expit(-(x - loc) / scale)


def ppf(x, loc=0, scale=1):
    x, loc, scale = _inexact("logistic.ppf", x, loc, scale)
    return logit(x) * scale + loc


def isf(x, loc=0, scale=1):
    x, loc, scale = _inexact("logistic.isf", x, loc, scale)
    return -logit(x) * scale + loc
