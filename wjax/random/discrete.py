"""The discrete distributions: categorical, choice and permutations (sorting random keys:
Gumbel top-k, or a key per element), and the count samplers ``poisson`` (Knuth's product for
small rates, rejection for large ones), ``binomial`` (inversion, or BTRS) and ``multinomial``
(a binomial per category), as JAX computes them, with loops bounded as JAX bounds them."""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from .. import lax
from .. import numpy as jnp
from .._src.array import Array
from .._src.core import dtypes
from .._src.core.tracing import Tracer, concrete_or_error
from ..numpy._util import _check_arg
from .._src.prims.cumulative import cumsum_p
from .._src.prims.random import lgamma_p
from .._src.prims.sort import sort_p, top_k_p
from .keys import _bits_data, _check_prng_key, _named_jit, _partitionable, _split_data
from .samplers import (_broadcast_shapes, _canon_shape, _check_shape, _const, _float_dtype, _gumbel,
                       _shape_of, _uniform, gumbel, randint, uniform)


# --------------------------------------------------------------------------- categorical, choice

def _sort_key_val(keys, values, axis):
    f = getattr(lax, "sort_key_val", None)
    if f is not None:
        return f(keys, values, axis)
    axis = axis % len(keys.shape)
    return sort_p.bind(keys, values, dimension=axis, is_stable=True, num_keys=1)


def _top_k(x, k):
    f = getattr(lax, "top_k", None)
    if f is not None:
        return f(x, k)
    return top_k_p.bind(x, k=int(k))


def _take(x, ind, axis):
    idx = (slice(None),) * axis + (ind,)
    return x[idx]


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    """Samples category indices from unnormalized log-probabilities (the Gumbel-max trick)."""
    data, _ = _check_prng_key("categorical", key)
    logits = jnp.asarray(logits)
    if axis >= 0:
        axis -= logits.ndim
    batch_shape = tuple(np.delete(logits.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _canon_shape(shape)
        _check_shape("categorical", shape, batch_shape)
    mode = "low" if mode is None else mode
    return _categorical_jit(data, logits, shape, batch_shape, axis, replace, mode, _partitionable())


def _categorical(data, logits, shape, batch_shape, axis, replace, mode):
    shape_prefix = shape[:len(shape) - len(batch_shape)]
    if replace:
        logits_shape = list(shape[len(shape) - len(batch_shape):])
        logits_shape.insert(axis % logits.ndim, logits.shape[axis])
        g = _gumbel(data, (*shape_prefix, *logits_shape), logits.dtype, mode)
        return jnp.argmax(g + jnp.expand_dims(logits, tuple(range(len(shape_prefix)))), axis=axis)
    logits = logits + _gumbel(data, logits.shape, logits.dtype, mode)
    k = int(np.prod(shape_prefix, dtype=np.int64))
    if k > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                         f"categories ({logits.shape[axis]}).")
    _, indices = _top_k(jnp.moveaxis(logits, axis, -1), k)
    dimensions = (indices.ndim - 1, *range(indices.ndim - 1))
    return lax.reshape(indices, shape, dimensions)


_categorical_jit = _named_jit(
    "_categorical",
    lambda data, logits, shape, batch_shape, axis, replace, mode, part: _categorical(
        data, logits, shape, batch_shape, axis, replace, mode
    ),
    static_argnums=(2, 3, 4, 5, 6, 7),
)


def _shuffle(data, x, axis):
    exponent = 3
    uint32max = np.iinfo(np.uint32).max
    num_rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(uint32max)))
    for _ in range(num_rounds):
        keys = _split_data(data, (2,))
        data, subkey = keys[0], keys[1]
        sort_keys = _bits_data(subkey, 32, x.shape)
        _, x = _sort_key_val(sort_keys, x, axis)
    return x


_shuffle_jit = _named_jit(
    "_shuffle", lambda data, x, axis, mode: _shuffle(data, x, axis), static_argnums=(2, 3)
)


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``."""
    data, _ = _check_prng_key("permutation", key)
    if not np.ndim(x):
        if isinstance(x, (Array, Tracer)) and not dtypes.issubdtype(x.dtype, np.integer) or \
                isinstance(x, float):
            raise TypeError("x must be an integer or at least 1-dimensional")
        r = int(concrete_or_error(x, "argument x of jax.random.permutation()"))
        return _shuffle_jit(data, jnp.arange(r), 0, _partitionable())
    x = jnp.asarray(x)
    axis = axis % x.ndim
    if independent or x.ndim == 1:
        return _shuffle_jit(data, x, axis, _partitionable())
    ind = _shuffle_jit(data, jnp.arange(x.shape[axis]), 0, _partitionable())
    return _take(x, ind, axis)


def shuffle(key, x, axis=0):
    """Shuffles ``x`` along ``axis`` (JAX's removed ``random.shuffle``: each slice along
    ``axis`` independently); prefer :func:`permutation`."""
    data, _ = _check_prng_key("shuffle", key)
    x = jnp.asarray(x)
    return _shuffle_jit(data, x, axis % max(x.ndim, 1), _partitionable())


def _cumsum(x):
    f = getattr(jnp, "cumsum", None)
    if f is not None:
        return f(x)
    return cumsum_p.bind(x, axis=0, reverse=False)


def _searchsorted_left(sorted_1d, v):
    # the left insertion point into a sorted vector: how many entries are < v
    return jnp.sum((sorted_1d < jnp.expand_dims(v, -1)).astype(np.int32), axis=-1)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Random samples from ``a`` (or ``arange(a)``), with or without replacement, optionally
    weighted by ``p``."""
    data, _ = _check_prng_key("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(concrete_or_error(a, "The error occurred in jax.random.choice()"))
    else:
        axis = axis % arr.ndim
        n_inputs = arr.shape[axis]
    shape = tuple(shape)
    n_draws = int(np.prod(shape, dtype=np.int64))
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(data, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else _take(arr, ind, axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(data, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        p_arr = jnp.asarray(p)
        if not dtypes.issubdtype(p_arr.dtype, np.floating):
            p_arr = p_arr.astype(np.float32)
        if tuple(p_arr.shape) != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {tuple(p_arr.shape)} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = _cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(data, shape, dtype=p_cuml.dtype))
            ind = _searchsorted_left(p_cuml, r).astype(np.int32)
        else:
            g = gumbel(data, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
            ind = _top_k(g, n_draws)[1].astype(np.int32)
        result = ind if arr.ndim == 0 else _take(arr, ind, axis)
    return jnp.reshape(result, shape if arr.ndim == 0 else
                       tuple(arr.shape[0:axis]) + shape + tuple(arr.shape[axis + 1:]))


# --------------------------------------------------------------------------- discrete counts
# poisson, binomial and multinomial as JAX 0.10.2 writes them: each loop draws the same
# uniforms from the same key splits and does the same float32 arithmetic, so a key gives
# JAX's counts (an accept/reject decision next to a transcendental's rounding can flip).

def _lgamma(x):
    f = getattr(lax, "lgamma", None)
    return f(x) if f is not None else lgamma_p.bind(x)


def _loop_cap(limit) -> int:
    """JAX's ``i < max_iters`` bound (the dtype's max) as an int32 count."""
    return int(min(float(limit), 2 ** 31 - 1))


def _poisson_knuth(data, lam, shape, dtype):
    """Knuth: multiply uniforms until the product drops below ``exp(-lam)`` (in logs)."""
    cap = _loop_cap(np.iinfo(dtype).max)
    neg_lam = -lam

    def cond(carry):
        i, _, _, log_prod = carry
        return jnp.any(log_prod > neg_lam) & (i < cap)

    def body(carry):
        i, k, kd, log_prod = carry
        pair = _split_data(kd, (2,))
        k = lax.select(log_prod > neg_lam, k + 1, k)
        u = _uniform(pair[1], 0., 1., shape, np.float32)
        return i + 1, k, pair[0], log_prod + jnp.log(u)

    init = (np.int32(0), jnp.zeros(shape, dtype), data, jnp.zeros(shape, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return (k - 1).astype(dtype)


def _poisson_rejection(data, lam, shape, dtype):
    """Hörmann's transformed rejection (PTRS), for ``lam >= 10``."""
    cap = _loop_cap(np.iinfo(dtype).max)
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < cap)

    def body(carry):
        i, k_out, accepted, kd = carry
        three = _split_data(kd, (3,))
        u = _uniform(three[1], 0., 1., shape, lam.dtype) - 0.5
        v = _uniform(three[2], 0., 1., shape, lam.dtype)
        us = 0.5 - jnp.abs(u)
        k = lax.floor((2 * a / us + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (us * us) + b))
        t = -lam + k * log_lam - _lgamma(k + 1)
        fast = (us >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((us < 0.013) & (v > us))
        accept = fast | (~reject & (s <= t))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, three[0]

    init = (np.int32(0), jnp.full(shape, -1, lam.dtype), jnp.zeros(shape, np.bool_), data)
    k = lax.while_loop(cond, body, init)[1]
    return k.astype(dtype)


def _poisson(data, lam, shape, dtype):
    lam = lax.convert_element_type(jnp.broadcast_to(lam, shape), np.float32)
    small = jnp.isnan(lam) | (lam < 10)
    lam_knuth = lax.select(small, lam, jnp.zeros_like(lam))
    lam_rejection = lax.select(small, jnp.full_like(lam, 1e5), lam)
    out = lax.select(small, _poisson_knuth(data, lam_knuth, shape, dtype),
                     _poisson_rejection(data, lam_rejection, shape, dtype))
    return lax.select(lam == 0, jnp.zeros_like(out), out)


_poisson_jit = _named_jit(
    "_poisson",
    lambda data, lam, shape, dtype, mode: _poisson(data, lam, shape, dtype),
    static_argnums=(2, 3, 4),
)


def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
    """Poisson(lam) integers: Knuth's method below ``lam = 10``, transformed rejection above."""
    data, _ = _check_prng_key("poisson", key)
    dt = dtypes.check_supported(int if dtype is None else dtype)
    np.iinfo(dt)   # JAX's ValueError for a non-integer dtype ("Invalid integer data type")
    _check_arg("broadcast_to", lam)
    lam_shape = _shape_of(lam)
    shape = lam_shape if shape is None else _canon_shape(shape)
    if len(lam_shape) > len(shape):
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: "
                         f"arr_shape={lam_shape} shape={shape}")
    try:
        ok = _broadcast_shapes(lam_shape, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"Incompatible shapes for broadcasting: {lam_shape} and requested "
                         f"shape {tuple(shape)}")
    return _poisson_jit(data, lam, tuple(shape), dt, _partitionable())


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_tail(k):
    """``log k! - Stirling(k)``: tabulated for ``k <= 9``; past it JAX evaluates the series at
    the clamped ``k`` (so at 9), which is kept here for the same bits."""
    table = jnp.asarray(np.array(_STIRLING_TAIL, k.dtype))
    tabulated = k <= 9
    kc = lax.clamp(_const(0.0, k.dtype), k, _const(9.0, k.dtype))
    kp1sq = (kc + 1) * (kc + 1)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (kc + 1)
    return lax.select(tabulated, table[jnp.floor(kc).astype(np.int32)], series)


def _binomial_inversion(data, count, prob, shape, dtype, cap):
    """Counts geometric waiting times until they pass ``count`` (for ``count * p <= 10``)."""
    log1m_p = jnp.log1p(-prob)

    def cond(carry):
        i, _, geom_sum, _ = carry
        return jnp.any(geom_sum <= count) & (i < cap)

    def body(carry):
        i, num_geom, geom_sum, kd = carry
        pair = _split_data(kd, (2,))
        num_geom = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _uniform(pair[0], 0., 1., shape, prob.dtype)
        geom = jnp.ceil(jnp.log(u) / log1m_p)
        return i + 1, num_geom, geom_sum + geom, pair[1]

    zeros = jnp.zeros(shape, prob.dtype)
    k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, data))[1]
    return (k - 1).astype(dtype)


def _btrs(data, count, prob, shape, dtype, cap):
    """Hörmann's BTRS transformed rejection (for ``count * p > 10``)."""
    stddev = jnp.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = jnp.floor((count + 1) * prob)

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < cap)

    def body(carry):
        i, k_out, accepted, kd = carry
        three = _split_data(kd, (3,))
        u = _uniform(three[1], 0., 1., shape, prob.dtype)
        v = _uniform(three[2], 0., 1., shape, prob.dtype)
        u = u - 0.5
        us = 0.5 - jnp.abs(u)
        fast = (us >= 0.07) & (v <= v_r)
        k = jnp.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        log_v = jnp.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
                 + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
                 + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(count - m)
                 - _stirling_tail(k) - _stirling_tail(count - k))
        accept = fast | (~reject & (log_v <= bound))
        return i + 1, lax.select(accept, k, k_out), accepted | accept, three[0]

    init = (np.int32(0), jnp.full(shape, -1, prob.dtype), jnp.zeros(shape, np.bool_), data)
    return lax.while_loop(cond, body, init)[1].astype(dtype)


def _inexact_dtype(*xs):
    """The dtype JAX's ``promote_dtypes_inexact`` converts ``xs`` to."""
    dt = dtypes.result_type(*xs)
    return np.dtype(dt if dtypes.issubdtype(dt, np.inexact) else dtypes.default_float_dtype())


def _binomial(data, count, prob, shape, dtype):
    if shape is None:
        shape = _broadcast_shapes(_shape_of(count), _shape_of(prob))
    else:
        _check_shape("binomial", shape, _shape_of(count), _shape_of(prob))
    pdt = _inexact_dtype(prob)
    count = jnp.broadcast_to(lax.convert_element_type(count, pdt), shape)
    prob = jnp.broadcast_to(lax.convert_element_type(prob, pdt), shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
    count_inf = jnp.isinf(count)
    q_is_nan = jnp.isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, jnp.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count = jnp.floor(count)   # a float count is floored, as np.random.binomial
    count_inv = lax.select(use_inversion, count, jnp.zeros_like(count))
    count_btrs = lax.select(use_inversion, jnp.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, jnp.full_like(q, 0.5), q)
    cap = _loop_cap(dtypes.finfo(dtype).max)
    samples = lax.select(use_inversion,
                         _binomial_inversion(data, count_inv, q, shape, dtype, cap),
                         _btrs(data, count_btrs, q_btrs, shape, dtype, cap))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, jnp.full_like(samples, np.nan, dtype), samples)
    samples = lax.select(count_inf & ~invalid, jnp.full_like(samples, np.inf, dtype), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count.astype(dtype) - samples)


_binomial_jit = _named_jit(
    "_binomial",
    lambda data, n, p, shape, dtype, mode: _binomial(data, n, p, shape, dtype),
    static_argnums=(3, 4, 5),
)


def binomial(key, n, p, shape=None, dtype=None):
    """Binomial(n, p) counts as floats: inversion for ``n * min(p, 1-p) <= 10``, BTRS above."""
    data, _ = _check_prng_key("binomial", key)
    _check_arg("binomial", n, 0)
    _check_arg("binomial", p, 1)
    dt = _float_dtype("binomial", dtype)
    return _binomial_jit(data, n, p, _canon_shape(shape), dt, _partitionable())


def _seq_tail_sums(x):
    """``out[i] = ((x[i] + x[i+1]) + ...) + x[-1]`` along axis 0: XLA's reduce-window order."""
    n = x.shape[0]
    pos = lax.broadcasted_iota(np.int32, x.shape, 0)
    acc = jnp.zeros_like(x)
    for j in range(n):
        acc = acc + jnp.where(pos <= j, x[j], _const(0, x.dtype))
    return acc


def _reverse_cumsum(x, base=16):
    """A reverse cumulative sum along axis 0 in XLA's order (its reduce-window rewrite):
    windows of ``base`` summed in order, plus the tail sums of the blocks that follow."""
    n = x.shape[0]
    if n <= base:
        return _seq_tail_sums(x)
    nb = -(-n // base)
    padded = jnp.concatenate([x, jnp.zeros((nb * base - n,) + x.shape[1:], x.dtype)])
    blocks = jnp.reshape(padded, (nb, base) + x.shape[1:])
    inner = jnp.moveaxis(_seq_tail_sums(jnp.moveaxis(blocks, 1, 0)), 0, 1)
    after = _reverse_cumsum(inner[:, 0], base)
    after = jnp.concatenate([after[1:], jnp.zeros_like(after[:1])])
    out = inner + jnp.expand_dims(after, 1)
    return jnp.reshape(out, (nb * base,) + x.shape[1:])[:n]


def _multinomial(data, n, p, shape, dtype, out_dtype, unroll):
    n = jnp.broadcast_to(lax.convert_element_type(n, dtype), shape[:-1])
    p = jnp.broadcast_to(lax.convert_element_type(p, dtype), shape)
    p = jnp.moveaxis(p, -1, 0)
    remaining = _reverse_cumsum(p)
    ratios = p / jnp.where(remaining == 0, 1, remaining)
    keys = _split_data(data, (ratios.shape[0],))

    def step(remainder, xs):
        ratio, kd = xs
        count = _binomial(kd, remainder, jnp.clip(ratio, 0, 1), None, np.dtype(remainder.dtype))
        return remainder - count, count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(out_dtype)


_multinomial_jit = _named_jit(
    "_multinomial",
    lambda data, n, p, shape, dtype, out_dtype, unroll, mode:
        _multinomial(data, n, p, shape, dtype, out_dtype, unroll),
    static_argnums=(3, 4, 5, 6, 7),
)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    """Multinomial(n, p) counts over the last axis of ``p``: a binomial per outcome on what the
    outcomes before it left over (``shape`` is the full result shape, as JAX's code has it)."""
    data, _ = _check_prng_key("multinomial", key)
    _check_arg("multinomial", n, 0)
    _check_arg("multinomial", p, 1)
    if not isinstance(unroll, bool):
        unroll = operator.index(concrete_or_error(
            unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value."))
        if unroll < 0:
            raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
        unroll = max(unroll, 1)
    dt = _inexact_dtype(n, p)
    out_dt = dtypes.check_supported(float if dtype is None else dtype)
    shape = _shape_of(p) if shape is None else _canon_shape(shape)
    if not shape:
        raise ValueError("axis -1 is out of bounds for array of dimension 0")
    for arr, target in ((n, shape[:-1]), (p, shape)):
        ashape = _shape_of(arr)
        try:
            ok = len(ashape) <= len(target) and _broadcast_shapes(ashape, target) == target
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"Incompatible shapes for broadcasting: {ashape} and requested "
                             f"shape {target}")
    return _multinomial_jit(data, n, p, tuple(shape), dt, out_dt, unroll,
                            _partitionable())




