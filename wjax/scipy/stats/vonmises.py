"""The von Mises distribution (``jax.scipy.stats.vonmises``)."""
from __future__ import annotations

import numpy as np

from ... import lax
from ... import numpy as jnp
from ._common import _c, _inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
    x, kappa = _inexact("vonmises.logpdf", x, kappa)
    lp = kappa * (jnp.cos(x) - 1) - jnp.log(2 * np.pi * lax.bessel_i0e(kappa))
    return jnp.where(kappa > 0, lp, _c(lp, np.nan))


def pdf(x, kappa):
    return jnp.exp(logpdf(x, kappa))
