"""Helpers the distribution modules share: promotion to a common inexact dtype (JAX's
``promote_args_inexact``) and scalar constants of an operand's dtype."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp

from ..special import _inexact

__all__ = ["_inexact", "_c", "_log1mexp"]


def _c(x, v):
    """``v`` as a scalar of ``x``'s dtype."""
    return np.asarray(v, x.dtype)


def _log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate at both ends (Maechler's split at
    log 2)."""
    return jnp.where(x > np.log(2), jnp.log1p(-jnp.exp(-x)), jnp.log(-jnp.expm1(-x)))
