"""wjax.nn: JAX's activation functions and friends, written the way ``jax.nn`` writes them.

Gradients follow JAX's definitions: ``relu`` and ``relu6`` have custom jvps
(the derivative at the kinks is 0), ``softmax``/``log_softmax``/``logsumexp``
subtract a stop-gradient max so they stay finite for large inputs.
"""
from __future__ import annotations

import operator

import numpy as np

from ..core import dtypes
from .. import lax
from .. import numpy as jnp
from ..api.custom_derivatives import custom_jvp
from ..scipy import special as _special
from ..scipy.special import _erfc, _inexact, logsumexp
from . import initializers  # noqa: F401

__all__ = ["relu", "relu6", "sigmoid", "softplus", "silu", "swish", "gelu", "elu", "leaky_relu",
           "celu", "selu", "glu", "log_sigmoid", "softmax", "log_softmax", "logsumexp",
           "logmeanexp", "standardize", "one_hot", "hard_tanh", "hard_sigmoid", "hard_silu",
           "hard_swish", "soft_sign", "squareplus", "sparse_plus", "sparse_sigmoid", "mish",
           "identity", "initializers"]


def _arr(x):
    return x if hasattr(x, "aval") else jnp.asarray(x)


def _stop_gradient(x):
    f = getattr(lax, "stop_gradient", None)
    return f(x) if f is not None else x


def identity(x):
    return _arr(x)


@custom_jvp
def relu(x):
    """``max(x, 0)``; its derivative at 0 is 0."""
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, jnp.zeros_like(g)))


@custom_jvp
def relu6(x):
    """``min(max(x, 0), 6)``; its derivative at 0 and 6 is 0."""
    return jnp.minimum(jnp.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, jnp.zeros_like(g)))


def sigmoid(x):
    return lax.logistic(_arr(x))


def softplus(x):
    """``log(1 + exp(x))``, as ``logaddexp(x, 0)``."""
    return jnp.logaddexp(x, 0)


def soft_sign(x):
    x = _arr(x)
    return x / (jnp.abs(x) + 1)


def silu(x):
    x = _arr(x)
    return x * sigmoid(x)


swish = silu


def mish(x):
    x = _arr(x)
    return x * jnp.tanh(softplus(x))


def log_sigmoid(x):
    x = _arr(x)
    return -softplus(-x)


def elu(x, alpha=1.0):
    x = _arr(x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


def leaky_relu(x, negative_slope=1e-2):
    x = _arr(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def hard_tanh(x):
    x = _arr(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


def celu(x, alpha=1.0):
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x):
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


def gelu(x, approximate=True):
    """Gaussian error linear unit: the tanh approximation, or exactly ``x * ndtr(x)``."""
    x, = _inexact("gelu", x)
    if approximate:
        sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
        cdf = 0.5 * (1.0 + jnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
        return x * cdf
    sqrt_half = np.sqrt(0.5).astype(x.dtype)
    erfc = getattr(lax, "erfc", None) or _erfc
    return jnp.array(0.5 * x * erfc(-x * sqrt_half), dtype=x.dtype)


def glu(x, axis=-1):
    """``x1 * sigmoid(x2)`` for the two halves of ``x`` along ``axis``."""
    x = _arr(x)
    size = x.shape[axis]
    assert size % 2 == 0, "axis size must be divisible by 2"
    x1, x2 = jnp.split(x, 2, axis)
    return x1 * sigmoid(x2)


def squareplus(x, b=4):
    x = _arr(x)
    y = x + jnp.sqrt(jnp.square(x) + b)
    return y / 2


def sparse_plus(x):
    x = _arr(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    return 0.5 * jnp.clip(_arr(x) + 1.0, 0.0, 2.0)


def hard_sigmoid(x):
    return relu6(_arr(x) + 3.) / 6.


def hard_silu(x):
    x = _arr(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


# --------------------------------------------------------------------------- normalizers

def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x)`` along ``axis``, shifted by a stop-gradient max."""
    return _special.log_softmax(x, axis, where)


def softmax(x, axis=-1, where=None):
    """``exp(x) / sum(exp(x))`` along ``axis``, shifted by a stop-gradient max."""
    return _special.softmax(x, axis, where)


def logmeanexp(x, axis=None, where=None, keepdims=False):
    x = _arr(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    if where is None:
        axes = range(x.ndim) if axis is None else ((axis,) if isinstance(axis, int) else axis)
        count = float(np.prod([x.shape[a] for a in axes]))
    else:
        count = jnp.sum(jnp.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims).astype(
            lse.dtype
        )
    return lse - jnp.log(count)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm="fast"):
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``."""
    x = _arr(x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
            variance = jnp.clip(variance, 0)
        else:
            raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    """One-hot vectors along ``axis``; labels outside ``[0, num_classes)`` give a zero row."""
    num_classes = operator.index(num_classes)
    x = _arr(x)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.check_supported(dtype)
    axis = operator.index(axis)
    out_axis = axis % (x.ndim + 1)
    lhs = lax.expand_dims(x, (axis,))
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(x.dtype, rhs_shape, out_axis)
    return (lhs == rhs).astype(dt)
