"""wjax.scipy: JAX's ``jax.scipy`` -- ``special``, ``stats``, ``signal`` (direct
convolutions, detrend), ``ndimage`` (map_coordinates), ``optimize`` (BFGS) and
``integrate`` (trapezoid)."""
from . import integrate, ndimage, optimize, signal, special, stats  # noqa: F401
