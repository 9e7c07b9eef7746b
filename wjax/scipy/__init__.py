"""wjax.scipy: JAX's ``jax.scipy`` -- ``special``, ``stats``, ``signal`` (direct
convolutions, detrend), ``ndimage`` (map_coordinates), ``optimize`` (BFGS), ``integrate``
(trapezoid), ``interpolate`` (RegularGridInterpolator), ``sparse.linalg`` (cg, bicgstab,
gmres), ``cluster.vq`` and ``linalg``."""
from . import (cluster, integrate, interpolate, linalg, ndimage, optimize, signal, sparse,  # noqa: F401
               special, stats)
