"""wjax.scipy.integrate: ``trapezoid`` (``jax.scipy.integrate``, the same as
``jnp.trapezoid``)."""
from __future__ import annotations

from .. import numpy as jnp

__all__ = ["trapezoid"]


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule (sample points ``x``, or
    spacing ``dx``)."""
    return jnp.trapezoid(y, x=x, dx=dx, axis=axis)
