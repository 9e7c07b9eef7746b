"""wjax.nn.initializers: JAX's parameter initializers (same keys give the same values).

An initializer is a function ``init(key, shape, dtype=float32) -> Array``; the
builders here (``normal(stddev)``, ``glorot_uniform()``, ...) return one, exactly
as ``jax.nn.initializers`` defines them.
"""
from __future__ import annotations

import math
from typing import Any, Protocol, Sequence

import numpy as np

from .._src.core import dtypes
from .. import numpy as jnp
from .. import random

__all__ = ["delta_orthogonal", "zeros", "ones", "constant", "uniform", "normal", "truncated_normal",
           "variance_scaling", "glorot_uniform", "glorot_normal", "xavier_uniform",
           "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform", "he_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "Initializer"]


class Initializer(Protocol):
    """The type of an initializer (for annotations): ``init(key, shape, dtype) -> Array``."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = ...) -> Any:
        ...


def _float(dtype):
    return dtypes.default_float_dtype() if dtype is None else dtypes.check_supported(dtype)


def _shape(shape):
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def zeros(key, shape, dtype=None):
    """Zeros (the key is ignored)."""
    return jnp.zeros(_shape(shape), _float(dtype))


def ones(key, shape, dtype=None):
    """Ones (the key is ignored)."""
    return jnp.ones(_shape(shape), _float(dtype))


def constant(value, dtype=None):
    def init(key, shape, dtype=dtype):
        return jnp.full(_shape(shape), value, dtype=_float(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform in ``[0, scale)``."""
    def init(key, shape, dtype=dtype):
        dt = _float(dtype)
        return random.uniform(key, _shape(shape), dt) * jnp.array(scale, dt)
    return init


def normal(stddev=1e-2, dtype=None):
    """Normal with mean 0 and standard deviation ``stddev``."""
    def init(key, shape, dtype=dtype):
        dt = _float(dtype)
        return random.normal(key, _shape(shape), dt) * jnp.array(stddev, dt)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """``stddev`` times a standard normal truncated to ``(lower, upper)``."""
    def init(key, shape, dtype=dtype):
        dt = _float(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), dt) * jnp.array(stddev, dt)
    return init


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")
    size = lambda ax: shape[ax] if isinstance(ax, int) else math.prod([shape[i] for i in ax])  # noqa: E731
    in_size, out_size, batch_size = size(in_axis), size(out_axis), size(batch_axis)
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
    """Samples with standard deviation ``sqrt(scale / n)``, ``n`` from ``mode``: ``fan_in``,
    ``fan_out``, ``fan_avg`` or ``fan_geo_avg``; ``distribution`` is ``truncated_normal``
    (truncated at 2 standard deviations), ``normal`` or ``uniform``."""
    def init(key, shape, dtype=dtype):
        shape = _shape(shape)
        dt = _float(dtype)
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / denominator, dtype=dt)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, dt)
            return random.truncated_normal(key, -2, 2, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.sqrt(variance)
        if distribution == "uniform":
            return random.uniform(key, shape, dt, -1) * jnp.sqrt(3 * variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(
        1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype
    )


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A (semi-)orthogonal matrix along ``column_axis``: the Q of a Gaussian matrix's QR,
    signs fixed by R's diagonal (so any correct QR gives the same matrix)."""
    def init(key, shape, dtype=dtype):
        qr = jnp.linalg.qr
        dt = _float(dtype)
        shape = _shape(shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        matrix_shape = (n_cols, n_rows) if n_rows < n_cols else (n_rows, n_cols)
        A = random.normal(key, matrix_shape, dt)
        Q, R = qr(A)
        diag_sign = jnp.sign(jnp.diagonal(R))
        Q = Q * diag_sign
        if n_rows < n_cols:
            Q = Q.T
        Q = jnp.reshape(Q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        Q = jnp.moveaxis(Q, -1, column_axis)
        return jnp.array(scale, dt) * Q
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A convolution kernel (3-D to 5-D shape) that is zero but at the window's centre, which
    holds an orthogonal ``(fan_in, fan_out)`` matrix (``fan_in <= fan_out``)."""
    def init(key, shape, dtype=dtype):
        dt = _float(dtype)
        shape = _shape(shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dt).at[centre].set(ortho)
    return init
