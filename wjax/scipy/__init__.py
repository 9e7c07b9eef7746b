"""wjax.scipy: JAX's ``jax.scipy`` -- ``special``, ``stats``, ``signal`` (direct
convolutions, detrend), ``ndimage`` (map_coordinates), ``optimize`` (BFGS), ``integrate``
(trapezoid), ``interpolate`` (RegularGridInterpolator), ``sparse.linalg`` (cg, bicgstab,
gmres), ``cluster.vq``, ``fft`` (the type-2 DCT and its inverse) and ``linalg``."""
from . import (cluster, fft, integrate, interpolate, linalg, ndimage, optimize, signal, sparse,  # noqa: F401
               special, stats)
