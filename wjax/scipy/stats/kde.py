"""``gaussian_kde``: a Gaussian kernel density estimate (``jax.scipy.stats.gaussian_kde``),
a pytree whose leaves are its arrays."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp
from ... import random
from ..._src.core.tree_util import register_pytree_node_class
from ..special import logsumexp, ndtr

__all__ = ["gaussian_kde"]


def _check(name, x):
    if isinstance(x, (list, tuple, str)) or x is None:
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x)} at "
                        f"position 0.")
    return jnp.asarray(x)


@register_pytree_node_class
class gaussian_kde:
    """Kernel density estimate of the columns of ``dataset`` (shape (d, n)) with Gaussian
    kernels of covariance ``factor**2 * cov(dataset)`` (``bw_method``: "scott",
    "silverman", a scalar factor or a callable of the estimator)."""

    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = jnp.atleast_2d(_check("gaussian_kde", dataset))
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        if not jnp.issubdtype(dataset.dtype, np.inexact):
            dataset = dataset.astype(np.float32)
        d, n = dataset.shape
        if weights is not None:
            weights = jnp.atleast_1d(_check("gaussian_kde", weights)).astype(dataset.dtype)
            weights = weights / jnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self.dataset, self.weights = dataset, weights
        self.neff = 1 / jnp.sum(weights ** 2)
        bw = "scott" if bw_method is None else bw_method
        if isinstance(bw, str) and bw == "scott":
            factor = jnp.power(self.neff, -1.0 / (d + 4))
        elif isinstance(bw, str) and bw == "silverman":
            factor = jnp.power(self.neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif np.isscalar(bw) and not isinstance(bw, str):
            factor = bw
        elif callable(bw):
            factor = bw(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a "
                             "callable.")
        data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
        self.covariance = data_cov * factor ** 2
        self.inv_cov = jnp.linalg.inv(data_cov) / factor ** 2

    def tree_flatten(self):
        return ((self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.neff, obj.dataset, obj.weights, obj.covariance, obj.inv_cov = children
        return obj

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    def _points(self, points):
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = jnp.reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _kernel_terms(self, points):
        """(log normalization + exponent) of every (point, sample) pair, shape (m, n)."""
        w = jnp.linalg.cholesky(self.inv_cov)                 # whitening: inv_cov = W W^T
        data = self.dataset.T @ w
        xs = points.T.astype(data.dtype) @ w
        log_norm = jnp.sum(jnp.log(jnp.diag(w))) - 0.5 * self.d * np.log(2 * np.pi)
        sq = jnp.sum(jnp.square(xs[:, None, :] - data[None, :, :]), axis=-1)
        return log_norm - 0.5 * sq

    def evaluate(self, points):
        """The density at ``points`` (shape (d, m), or (m,) for d = 1)."""
        points = self._points(_check("evaluate", points))
        return jnp.sum(self.weights[None, :] * jnp.exp(self._kernel_terms(points)), axis=1)

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x):
        x = self._points(_check("logpdf", x))
        return logsumexp(jnp.log(self.weights)[None, :] + self._kernel_terms(x), axis=1)

    def _convolve(self, cov_sum, target, weights, mean):
        chol = jnp.linalg.cholesky(cov_sum)
        norm = 1.0 / (np.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol)))
        diff = target - mean[:, None]
        alpha = jnp.linalg.solve(cov_sum, diff)
        return norm * jnp.sum(jnp.exp(-0.5 * jnp.sum(diff * alpha, axis=0)) * weights)

    def integrate_gaussian(self, mean, cov):
        """The integral of the density times a Gaussian of ``mean`` and ``cov``."""
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean)))
        cov = jnp.atleast_2d(jnp.asarray(cov))
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        return self._convolve(self.covariance + cov, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The probability mass between ``low`` and ``high`` (1-D estimates)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        lo = jnp.squeeze((low - self.dataset) / sigma)
        hi = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (ndtr(hi) - ndtr(lo)))

    def integrate_kde(self, other):
        """The integral of the product of two estimates."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        sm, lg = (self, other) if self.n < other.n else (other, self)
        cov = self.covariance + other.covariance
        vals = jnp.stack([self._convolve(cov, lg.dataset, lg.weights, sm.dataset[:, i])
                          for i in range(sm.n)])
        return jnp.sum(vals * sm.weights)

    def resample(self, key, shape=()):
        """Samples of the estimate, shape ``(d,) + shape``."""
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        eps = random.multivariate_normal(eps_key, jnp.zeros(self.d, self.covariance.dtype),
                                         self.covariance, shape=shape,
                                         dtype=self.dataset.dtype).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError("only 1D box integrations are supported; use "
                                  "`integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")
