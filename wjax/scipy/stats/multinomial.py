"""The multinomial distribution (``jax.scipy.stats.multinomial``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import gammaln, xlogy
from ._common import _c, _inexact

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
    p, = _inexact("multinomial.logpmf", p)
    x, n = jnp.asarray(x), jnp.asarray(n)
    if not (jnp.issubdtype(x.dtype, np.integer) and jnp.issubdtype(n.dtype, np.integer)):
        raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                         f"n.dtype={n.dtype}")
    xf, nf = x.astype(p.dtype), n.astype(p.dtype)
    lp = gammaln(nf + 1) + jnp.sum(xlogy(xf, p) - gammaln(xf + 1), axis=-1)
    return jnp.where(jnp.sum(xf) == nf, lp, _c(lp, -np.inf))


def pmf(x, n, p):
    return jnp.exp(logpmf(x, n, p))
