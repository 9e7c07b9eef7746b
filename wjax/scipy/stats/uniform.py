"""The uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("uniform.logpdf", x, loc, scale)
    lp = -jnp.log(scale)
    return jnp.where((x > loc + scale) | (x < loc), _c(x, -np.inf), lp)


def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    x, loc, scale = _inexact("uniform.cdf", x, loc, scale)
    inside = (x - loc) / scale
    out = jnp.where(x < loc, _c(inside, 0), jnp.where(x > loc + scale, _c(inside, 1), inside))
    return jnp.where(jnp.isnan(x) | jnp.isnan(loc) | jnp.isnan(scale), _c(out, 0), out)


def ppf(q, loc=0, scale=1):
    q, loc, scale = _inexact("uniform.ppf", q, loc, scale)
    v = loc + scale * q
    return jnp.where(jnp.isnan(q) | (q < 0) | (q > 1), _c(v, np.nan), v)
