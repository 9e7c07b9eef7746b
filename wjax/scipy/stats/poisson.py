"""The Poisson distribution (``jax.scipy.stats.poisson``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ..special import entr, gammaincc, gammaln, xlogy
from ._common import _c, _inexact

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k, mu, loc=0):
    k, mu, loc = _inexact("poisson.logpmf", k, mu, loc)
    x = k - loc
    lp = xlogy(x, mu) - gammaln(x + 1) - mu
    return jnp.where((x < 0) | (jnp.round(k) != k), _c(lp, -np.inf), lp)


def pmf(k, mu, loc=0):
    return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    k, mu, loc = _inexact("poisson.cdf", k, mu, loc)
    x = k - loc
    p = gammaincc(jnp.floor(1 + x), mu)
    return jnp.where(x < 0, _c(p, 0), p)


def _entropy_sum(mu, kmax, upper):
    k = jnp.arange(kmax, dtype=mu.dtype)[:, None]
    probs = pmf(k, mu[None, :], 0)
    return jnp.sum(entr(jnp.where(k < upper[None, :], probs, 0.0)), axis=0)


def entropy(mu, loc=0):
    """The entropy ``-sum p log p``: the sum over the support for mu < 100, the asymptotic
    ``log(2 pi e mu)/2 - 1/(12 mu)`` beyond (loc does not change it)."""
    mu, loc = _inexact("poisson.entropy", mu, loc)
    shape = np.broadcast_shapes(mu.shape, loc.shape)
    flat = jnp.ravel(mu)
    small = _entropy_sum(flat, 35, jnp.ceil(flat + 20))
    medium = _entropy_sum(flat, 250, jnp.ceil(flat + 10 * jnp.sqrt(flat) + 20))
    large = 0.5 * jnp.log(2 * np.pi * np.e * flat) - 1.0 / (12 * flat)
    out = jnp.where(flat == 0, 0.0, jnp.where(flat < 10, small,
                                              jnp.where(flat < 100, medium, large)))
    return jnp.broadcast_to(jnp.reshape(out, mu.shape), shape)
