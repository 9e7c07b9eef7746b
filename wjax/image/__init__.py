"""wjax.image: ``jax.image`` -- image resampling with separable kernels (``resize``,
``scale_and_translate``).

Each resized dimension gets a weight matrix (input size x output size): output sample ``j``
sits at input coordinate ``(j + 0.5) / scale - translation / scale - 0.5``, the kernel is
evaluated at its distance to every input pixel (stretched by ``1/scale`` when downsampling
with ``antialias``), each column is normalized to sum 1, and samples outside the image get
no weight.  The matrices are contracted with the image in one ``einsum``.  ``nearest``
gathers instead.  Methods: nearest, linear (triangle), cubic (Keys, a = -0.5),
cubic-pytorch (a = -0.75, edge-replicating without antialias), lanczos3, lanczos5, area.
"""
from __future__ import annotations

import enum
import math
import operator
from typing import Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from .._src.core.tracing import Tracer

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """The resampling kernels of ``resize`` and ``scale_and_translate``."""
    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> "ResizeMethod":
        names = {"nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
                 "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
                 "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
                 "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
                 "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
                 "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
                 "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "area": ResizeMethod.AREA}
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return names[s]


# --------------------------------------------------------------------------- kernels (of |x|)

def _triangle(x):
    return jnp.maximum(0, 1 - x)


def _cubic(a):
    def k(x):
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return jnp.where(x >= 2, 0.0, jnp.where(x >= 1, far, near))
    return k


def _lanczos(r):
    def k(x):
        y = r * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / r)
        val = jnp.where(x > 1e-3, y / jnp.where(x != 0, (np.pi * x) ** 2, 1.0), 1.0)
        return jnp.where(x > r, 0.0, val)
    return k


_AREA = object()
_KERNELS = {ResizeMethod.LINEAR: (1, _triangle), ResizeMethod.CUBIC: (2, _cubic(-0.5)),
            ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
            ResizeMethod.LANCZOS3: (3, _lanczos(3.0)), ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
            ResizeMethod.AREA: (1, _AREA)}


def _weights(in_size, out_size, scale, translation, kernel, antialias, edge_pad, radius):
    """The (in_size, out_size) resampling matrix of one dimension."""
    dt = np.float32
    inv = 1.0 / scale
    kscale = jnp.maximum(inv, 1.0) if antialias else 1.0
    sample = (jnp.arange(out_size, dtype=dt) + 0.5) * inv - translation * inv - 0.5
    pad = 0
    if edge_pad:
        if antialias:
            if isinstance(scale, Tracer):
                raise TypeError("Antialiasing with edge padding requires a static scale.")
            pad = math.ceil(radius * max(1.0 / float(scale), 1.0))
        else:
            pad = radius
    pos = jnp.arange(-pad, in_size + pad, dtype=dt)
    if kernel is _AREA:
        lo_out = jnp.arange(out_size, dtype=dt) * inv - translation * inv
        hi_out = lo_out + inv
        lo_in = jnp.arange(in_size, dtype=dt)
        w = jnp.maximum(0.0, jnp.minimum(hi_out[None, :], lo_in[:, None] + 1)
                        - jnp.maximum(lo_out[None, :], lo_in[:, None]))
    else:
        w = kernel(jnp.abs(sample[None, :] - pos[:, None]) / kscale)
    if edge_pad:
        # samples beyond the edges reuse the edge pixels
        rows = jnp.clip(pos.astype(np.int32), 0, in_size - 1)
        w = jnp.zeros((in_size, out_size), dt).at[rows].add(w)
    total = jnp.sum(w, axis=0, keepdims=True)
    ok = jnp.abs(total) > 1000.0 * float(np.finfo(np.float32).eps)
    w = jnp.where(ok, w / jnp.where(total != 0, total, 1.0), 0.0)
    if not edge_pad:
        inside = (sample >= -0.5) & (sample <= in_size - 0.5)
        w = jnp.where(inside[None, :], w, 0.0)
    return w


def _apply(image, shape, dims, scales, translations, method, antialias, precision):
    edge_pad = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    x = image
    if not jnp.issubdtype(x.dtype, np.inexact):
        x = x.astype(np.float32)
    operands = [x, list(range(x.ndim))]
    out_idx = list(range(x.ndim))
    for i, d in enumerate(dims):
        w = _weights(x.shape[d], shape[d], scales[i], translations[i], kernel, antialias,
                     edge_pad, radius).astype(x.dtype)
        operands += [w, [d, x.ndim + i]]
        out_idx[d] = x.ndim + i
    if not dims:
        return x
    return jnp.einsum(*operands, out_idx, precision=precision)


def _canon_shape(shape, image):
    shape = tuple(operator.index(d) for d in shape)
    if len(shape) != image.ndim:
        raise ValueError(f"shape must have length equal to the number of dimensions of x;  "
                         f"{shape} vs {image.shape}")
    return shape


def _resize_nearest(x, shape):
    for d in range(x.ndim):
        m, n = x.shape[d], shape[d]
        if m == n:
            continue
        offsets = jnp.floor((jnp.arange(n, dtype=np.float32) + 0.5) * m / n).astype(np.int32)
        idx = [slice(None)] * x.ndim
        idx[d] = offsets
        x = x[tuple(idx)]
    return x


def resize(image, shape, method, antialias: bool = True, precision=lax.Precision.HIGHEST):
    """``image`` resampled to ``shape`` (every dimension whose size changes), as JAX's
    ``jax.image.resize``; downsampling with ``antialias`` widens the kernel."""
    image = jnp.asarray(image)
    shape = _canon_shape(shape, image)
    if isinstance(method, str):
        method = ResizeMethod.from_string(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    dims = tuple(i for i in range(len(shape)) if image.shape[i] != shape[i])
    scales = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
    return _apply(image, shape, dims, scales, [0.0] * len(dims), method, antialias, precision)


def scale_and_translate(image, shape, spatial_dims: Sequence[int], scale, translation,
                        method, antialias: bool = True, precision=lax.Precision.HIGHEST):
    """Resamples ``image`` to ``shape`` along ``spatial_dims``, output pixel ``j`` taking the
    input at ``(j + 0.5 - translation) / scale - 0.5``."""
    image = jnp.asarray(image)
    shape = _canon_shape(shape, image)
    if isinstance(method, str):
        method = ResizeMethod.from_string(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    dims = [operator.index(d) % image.ndim for d in spatial_dims]
    scale = jnp.asarray(scale, np.float32)
    translation = jnp.asarray(translation, np.float32)
    if scale.shape != (len(dims),) or translation.shape != (len(dims),):
        raise ValueError(f"scale and translation need one entry per spatial dimension "
                         f"({len(dims)}), got shapes {scale.shape} and {translation.shape}")
    scales = [scale[i] for i in range(len(dims))]
    trans = [translation[i] for i in range(len(dims))]
    return _apply(image, shape, dims, scales, trans, method, antialias, precision)
