"""wjax.scipy.stats.norm: the normal distribution, as ``jax.scipy.stats.norm``."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from .. import special
from ..special import _inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "ppf", "sf", "logsf", "isf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("norm.logpdf", x, loc, scale)
    scale_sqrd = lax.square(scale)
    log_normalizer = lax.log(lax.mul(np.asarray(2 * np.pi, x.dtype), scale_sqrd))
    quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_sqrd)
    return lax.div(lax.add(log_normalizer, quadratic), np.asarray(-2, x.dtype))


def pdf(x, loc=0, scale=1):
    return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("norm.cdf", x, loc, scale)
    return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def ppf(q, loc=0, scale=1):
    return jnp.asarray(special.ndtri(q) * scale + loc, float)


def sf(x, loc=0, scale=1):
    x, loc, scale = _inexact("norm.sf", x, loc, scale)
    return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
    x, loc, scale = _inexact("norm.logsf", x, loc, scale)
    return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
    return ppf(lax.sub(np.asarray(1, jnp.asarray(q).dtype), q), loc, scale)
