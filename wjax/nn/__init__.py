"""wjax.nn: JAX's activation functions and friends, written the way ``jax.nn`` writes them.

Gradients follow JAX's definitions: ``relu`` and ``relu6`` have custom jvps
(the derivative at the kinks is 0), ``softmax``/``log_softmax``/``logsumexp``
subtract a stop-gradient max so they stay finite for large inputs.  The elementwise
activations are ``jit``-wrapped as JAX's are, so jaxprs show the same ``jit[name=relu]`` calls.
"""
from __future__ import annotations

import operator

import numpy as np

from .._src.core import dtypes
from .. import lax
from .. import numpy as jnp
from .._src.api.custom_derivatives import custom_jvp
from .._src.api.jit import jit
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


@jit
def identity(x):
    return _arr(x)


@custom_jvp
@jit
def relu(x):
    """``max(x, 0)``; its derivative at 0 is 0."""
    return jnp.maximum(x, 0)


relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, jnp.zeros_like(g)))


@custom_jvp
@jit
def relu6(x):
    """``min(max(x, 0), 6)``; its derivative at 0 and 6 is 0."""
    return jnp.minimum(jnp.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, jnp.zeros_like(g)))


def sigmoid(x):
    return lax.logistic(_arr(x))


@jit
def softplus(x):
    """``log(1 + exp(x))``, as ``logaddexp(x, 0)``."""
    return jnp.logaddexp(x, 0)


@jit
def soft_sign(x):
    x = _arr(x)
    return x / (jnp.abs(x) + 1)


@jit
def silu(x):
    x = _arr(x)
    return x * sigmoid(x)


swish = silu


@jit
def mish(x):
    x = _arr(x)
    return x * jnp.tanh(softplus(x))


@jit
def log_sigmoid(x):
    x = _arr(x)
    return -softplus(-x)


@jit
def elu(x, alpha=1.0):
    x = _arr(x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


@jit
def leaky_relu(x, negative_slope=1e-2):
    x = _arr(x)
    return jnp.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
    x = _arr(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@jit
def celu(x, alpha=1.0):
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


@jit
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


@jit
def squareplus(x, b=4):
    x = _arr(x)
    y = x + jnp.sqrt(jnp.square(x) + b)
    return y / 2


@jit
def sparse_plus(x):
    x = _arr(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@jit
def sparse_sigmoid(x):
    return 0.5 * jnp.clip(_arr(x) + 1.0, 0.0, 2.0)


@jit
def hard_sigmoid(x):
    return relu6(_arr(x) + 3.) / 6.


@jit
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


def tanh(x):
    """The hyperbolic tangent (``jax.nn.tanh`` is ``jnp.tanh``)."""
    return jnp.tanh(x)


def log1mexp(x):
    """``log(1 - exp(-x))``, accurate for small and large ``x`` (Maechler's split at log 2;
    undefined for negative x)."""
    x = jnp.asarray(x) if not hasattr(x, "aval") else x
    if isinstance(x, (list, tuple)):
        raise TypeError("log1mexp requires ndarray or scalar arguments")
    return jnp.where(x < np.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


# --------------------------------------------------------------------------- attention

def _ensure_4d(t):
    t = jnp.asarray(t)
    return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check(t, shape, dtype, name):
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
    for i in range(t.ndim):
        if shape[i] != -1 and t.shape[i] != shape[i]:
            raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual=False):
    """Scaled dot-product attention ``softmax(q k^T * scale + bias, masked) v`` over
    ``(B)TNH`` queries and ``(B)SKH`` keys/values (grouped-query attention when N is a
    multiple of K), with JAX's ``xla`` semantics: masked logits are set to a large negative
    number (not -inf), the softmax runs in float32, and padded query rows are zeroed.
    ``return_residual`` also returns the logsumexp of the logits, ``(B)TN``."""
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("dot_product_attention: the 'cudnn' implementation needs "
                                      "cuDNN; wjax implements 'xla'")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    out_shape = jnp.asarray(query).shape
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = _ensure_4d(bias) if bias is not None else None
    mask = _ensure_4d(mask) if mask is not None else None
    qlen = jnp.asarray(query_seq_lengths) if query_seq_lengths is not None else None
    kvlen = jnp.asarray(key_value_seq_lengths) if key_value_seq_lengths is not None else None
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = k.shape
    _check(v, [B, S, K, H], k.dtype, "value")
    _check(q, [B, -1, -1, H], k.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(qlen, [B], np.dtype("int32"), "query_seq_lengths")
    _check(kvlen, [B], np.dtype("int32"), "key_value_seq_lengths")
    T, N = q.shape[1], q.shape[2]
    if N % K != 0:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                         f"but got {N} vs {K}")
    G = N // K
    scale_val = (1.0 / np.sqrt(H)) if scale is None else scale
    # query head n attends with key/value head n // G
    if G > 1:
        k = jnp.repeat(k, G, axis=2)
        v = jnp.repeat(v, G, axis=2)
    logits_dtype = jnp.promote_types(q.dtype, np.float32)
    logits = jnp.einsum("BTNH,BSNH->BNTS", q, k, preferred_element_type=logits_dtype)
    logits = logits * jnp.asarray(scale_val, logits.dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits.dtype)
    keep = None
    if mask is not None:
        keep = jnp.broadcast_to(mask, logits.shape)
    t_pos = jnp.arange(T)[:, None]
    s_pos = jnp.arange(S)[None, :]
    if is_causal:
        c = (s_pos <= t_pos)[None, None]
        keep = c if keep is None else keep & c
    if local_window_size is not None:
        left, right = local_window_size
        w = ((t_pos <= s_pos + left) & (t_pos >= s_pos - right))[None, None]
        keep = w if keep is None else keep & w
    if qlen is not None or kvlen is not None:
        pm = jnp.ones((B, 1, T, S), bool)
        if qlen is not None:
            pm = pm & (jnp.arange(T)[None, None, :, None] < qlen[:, None, None, None])
        if kvlen is not None:
            pm = pm & (jnp.arange(S)[None, None, None, :] < kvlen[:, None, None, None])
        keep = pm if keep is None else keep & pm
    if keep is not None:
        big_neg = -0.7 * min(float(jnp.finfo(logits.dtype).max), float(np.finfo(np.float32).max))
        logits = jnp.where(keep, logits, jnp.asarray(big_neg, logits.dtype))
    logits32 = logits.astype(np.float32)
    probs = softmax(logits32, axis=-1).astype(k.dtype)
    encoded = jnp.einsum("BNTS,BSNH->BTNH", probs, v)
    if qlen is not None:
        encoded = encoded * (jnp.arange(T)[None, :] < qlen[:, None])[:, :, None, None].astype(
            encoded.dtype)
    encoded = jnp.reshape(encoded, out_shape)
    if return_residual:
        lse = jnp.transpose(logsumexp(logits32, axis=-1).astype(k.dtype), (0, 2, 1))
        return encoded, jnp.reshape(lax.stop_gradient(lse), out_shape[:-1])
    return encoded


__all__ += ["tanh", "log1mexp", "dot_product_attention"]
