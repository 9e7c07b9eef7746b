"""The Dirichlet distribution (``jax.scipy.stats.dirichlet``): ``x`` along axis 0."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import gammaln, xlogy
from ._common import _c

__all__ = ["logpdf", "pdf"]


def logpdf(x, alpha):
    x, alpha = jnp.asarray(x), jnp.asarray(alpha)
    dt = jnp.result_type(x, alpha, np.float32)
    x, alpha = x.astype(dt), alpha.astype(dt)
    if alpha.ndim != 1:
        raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
    if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                         f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
    if x.shape[0] != alpha.shape[0]:
        x = jnp.concatenate([x, 1 - x.sum(0, keepdims=True)], axis=0)
    norm = jnp.sum(gammaln(alpha)) - gammaln(jnp.sum(alpha))
    a = jnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
    lp = jnp.sum(xlogy(a - 1, x), axis=0) - norm
    simplex = jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)
    return jnp.where(simplex, lp, _c(lp, -np.inf))


def pdf(x, alpha):
    return jnp.exp(logpdf(x, alpha))
