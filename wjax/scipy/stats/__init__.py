"""wjax.scipy.stats: JAX's ``jax.scipy.stats`` -- one module per distribution (its
``logpdf``/``pdf``/``cdf``/``logcdf``/``sf``/``logsf``/``ppf``/``isf`` as JAX has each),
``mode``, ``rankdata``, ``sem`` and ``gaussian_kde``."""
from . import (bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma,
               gennorm, geom, gumbel_l, gumbel_r, laplace, logistic, multinomial,
               multivariate_normal, nbinom, norm, pareto, poisson, t, truncnorm, uniform,
               vonmises, wrapcauchy)
from ._core import ModeResult, mode, rankdata, sem
from .kde import gaussian_kde
