"""The multivariate normal distribution (``jax.scipy.stats.multivariate_normal``): the
covariance factored by Cholesky, the quadratic form by a triangular solve."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp

__all__ = ["logpdf", "pdf"]


def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = (jnp.asarray(v) for v in (x, mean, cov))
    dt = jnp.result_type(x, mean, cov, np.float32)
    x, mean, cov = x.astype(dt), mean.astype(dt), cov.astype(dt)
    if not mean.shape:
        return -0.5 * jnp.square(x - mean) / cov - 0.5 * (np.log(2 * np.pi) + jnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not cov.shape:
        return (-0.5 * jnp.einsum("...i,...i->...", y, y) / cov
                - n / 2 * (np.log(2 * np.pi) + jnp.log(cov)))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise ValueError("multivariate_normal.logpdf got incompatible shapes")
    L = jnp.linalg.cholesky(cov)
    shape = np.broadcast_shapes(L.shape[:-2], y.shape[:-1])
    Lb = jnp.broadcast_to(L, shape + (n, n))
    yb = jnp.broadcast_to(y, shape + (n,))
    z = jnp.linalg.solve_triangular(Lb, yb[..., None], lower=True)[..., 0]
    return (-0.5 * jnp.einsum("...i,...i->...", z, z) - n / 2 * np.log(2 * np.pi)
            - jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)).sum(-1))


def pdf(x, mean, cov):
    return jnp.exp(logpdf(x, mean, cov))
