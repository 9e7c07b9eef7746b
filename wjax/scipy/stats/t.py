"""Student's t distribution (``jax.scipy.stats.t``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import gammaln
from ._common import _inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = _inexact("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    half = df / 2
    norm = gammaln(half) + 0.5 * jnp.log(scale * scale * np.pi * df) - gammaln(half + 0.5)
    return -(norm + (half + 0.5) * jnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))
