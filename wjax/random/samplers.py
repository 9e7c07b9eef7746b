"""The continuous and categorical samplers, written as JAX writes them
(``jax/_src/random/core.py``) on ``random_bits``: bits, uniform, integers, the normal family,
the simple transforms of a uniform, gamma/beta/dirichlet, multivariate normal, and the
compositions built on them (the discrete distributions are in ``discrete.py``).  Each is
jitted with its shape, dtype and the threefry mode static."""
from __future__ import annotations

import operator

import numpy as np

from .._src.api.sharding import apply_out_sharding
from .._src.core import dtypes
from .. import lax
from .. import numpy as jnp
from .._src.prims.random import fma_p
from .._src.core.tracing import concrete_or_error
from .._src.prims.random import random_gamma_p
from .._src.prims.special import erf_inv_p
from .keys import _bits_data, _check_prng_key, _named_jit, _partitionable, _split_data, split

# --------------------------------------------------------------------------- checks

def _canon_shape(shape):
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"{shape}.") from None


def _broadcast_shapes(*shapes):
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def _check_shape(name, shape, *param_shapes):
    if param_shapes:
        try:
            shape_ = _broadcast_shapes(shape, *param_shapes)
        except ValueError:
            shape_ = None
        if shape_ != tuple(shape):
            raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                             f"argument, and the result of broadcasting the shapes must equal "
                             f"the shape argument, but got result {shape_} for shape argument "
                             f"{tuple(shape)}.")


def _float_dtype(name, dtype):
    dt = dtypes.check_supported(float if dtype is None else dtype)
    if not dtypes.issubdtype(dt, np.floating):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
    return dt


def _shape_of(x):
    return tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)


def _const(x, dtype):
    return np.asarray(x, dtype)


# --------------------------------------------------------------------------- bits, uniform

def bits(key, shape=(), dtype=None):
    """Uniform random bits as unsigned integers."""
    data, _ = _check_prng_key("bits", key)
    dt = dtypes.default_uint_dtype() if dtype is None else dtypes.check_supported(dtype)
    if not dtypes.issubdtype(dt, np.unsignedinteger):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return _bits_data(data, np.dtype(dt).itemsize * 8, _canon_shape(shape))


def uniform(key, shape=(), dtype=None, minval=0., maxval=1., *, out_sharding=None):
    """Uniform samples (``jax.random.uniform``); ``out_sharding`` lays them out by a
    sharding (the values do not depend on it)."""
    return apply_out_sharding(_uniform_key(key, shape, dtype, minval, maxval), out_sharding)


def _uniform_key(key, shape=(), dtype=None, minval=0., maxval=1.):
    """Uniform floats in ``[minval, maxval)``."""
    data, _ = _check_prng_key("uniform", key)
    dt = _float_dtype("uniform", dtype)
    return _uniform_jit(data, minval, maxval, _canon_shape(shape), dt, _partitionable())


def _uniform(data, minval, maxval, shape, dtype):
    _check_shape("uniform", shape)
    minval = lax.convert_element_type(minval, dtype)
    maxval = lax.convert_element_type(maxval, dtype)
    fi = dtypes.finfo(dtype)
    nbits, nmant = fi.bits, fi.nmant
    # as JAX: fewer than 8 mantissa bits (bfloat16) draw 8 random bits, not 16
    rng_bits = nbits if nmant >= 8 else 8
    rbits = _bits_data(data, rng_bits, shape)
    if nbits == 16:   # float16, bfloat16
        # (bits >> 6) * 2**-10 (bf16: (bits >> 1) * 2**-7) is exactly what the 1.x bit
        # trick gives minus 1
        m = lax.shift_right_logical(
            lax.convert_element_type(rbits, np.uint32), np.uint32(rng_bits - nmant)
        )
        floats = lax.convert_element_type(
            lax.mul(lax.convert_element_type(m, np.float32), np.float32(2.0 ** -nmant)), dtype)
    else:
        fb = lax.shift_right_logical(rbits, np.uint32(nbits - nmant))
        fb = lax.bitwise_or(fb, np.array(1.0, dtype).view(np.uint32))
        floats = lax.sub(lax.bitcast_convert_type(fb, dtype), _const(1.0, dtype))
    floats = jnp.reshape(floats, shape)
    span = jnp.broadcast_to(maxval - minval, shape)
    lo = jnp.broadcast_to(minval, shape)
    if np.dtype(dtype) == dtypes.bfloat16:   # XLA rounds the bf16 product, then the sum
        return jnp.maximum(minval, lax.add(lax.mul(floats, span), lo))
    return jnp.maximum(minval, fma_p.bind(floats, span, lo))


_uniform_jit = _named_jit("_uniform", lambda data, minval, maxval, shape, dtype, mode:
                   _uniform(data, minval, maxval, shape, dtype), static_argnums=(3, 4, 5))


# --------------------------------------------------------------------------- integers

def _convert_and_clip_integer(val, dtype):
    dt = np.dtype(dtype)
    vi, di = np.iinfo(val.dtype), np.iinfo(dt)
    lo = _const(max(di.min, vi.min), val.dtype)
    hi = _const(min(di.max, vi.max), val.dtype)
    return lax.convert_element_type(jnp.clip(val, lo, hi), dt)


def randint(key, shape, minval, maxval, dtype=None):
    """Uniform integers in ``[minval, maxval)``."""
    data, _ = _check_prng_key("randint", key)
    dt = dtypes.check_supported(int if dtype is None else dtype)
    if not dtypes.issubdtype(dt, np.integer):
        raise TypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = _canon_shape(shape)
    info = np.iinfo(dt)
    sample_dt = dt
    if info.bits < 32:
        sample_dt = np.dtype(np.int32)
        minval = jnp.clip(jnp.asarray(minval).astype(np.int32), int(info.min), int(info.max))
        maxval = jnp.clip(jnp.asarray(maxval).astype(np.int32), int(info.min), int(info.max) + 1)
    out = _randint_jit(data, minval, maxval, shape, sample_dt, _partitionable())
    return lax.convert_element_type(out, dt)


def _randint(data, minval, maxval, shape, dtype):
    _check_shape("randint", shape, _shape_of(minval), _shape_of(maxval))
    minval = jnp.asarray(minval)
    maxval = jnp.asarray(maxval)
    if not dtypes.issubdtype(minval.dtype, np.integer):
        minval = minval.astype(int)
    if not dtypes.issubdtype(maxval.dtype, np.integer):
        maxval = maxval.astype(int)
    maxval_out_of_range = lax.gt(
        maxval, _convert_and_clip_integer(jnp.asarray(np.iinfo(dtype).max, dtype), maxval.dtype))
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    nbits = np.iinfo(dtype).bits
    keys = _split_data(data, (2,))
    higher = _bits_data(keys[0], nbits, shape)
    lower = _bits_data(keys[1], nbits, shape)
    udt = np.dtype(f"uint{nbits}")
    span = lax.convert_element_type(maxval - minval, udt)
    span = jnp.where(maxval <= minval, _const(1, udt), span)
    span = jnp.where(maxval_out_of_range & (maxval > minval), span + _const(1, udt), span)
    span = jnp.broadcast_to(span, shape)
    minval = jnp.broadcast_to(minval, shape)
    multiplier = lax.rem(_const(2 ** (nbits // 2), udt), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return lax.add(minval, lax.convert_element_type(offset, dtype))


_randint_jit = _named_jit("_randint", lambda data, minval, maxval, shape, dtype, mode:
                   _randint(data, minval, maxval, shape, dtype), static_argnums=(3, 4, 5))


# --------------------------------------------------------------------------- normal family

def _erf_inv(x):
    f = getattr(lax, "erf_inv", None)
    if f is not None:
        return f(x)
    return erf_inv_p.bind(x)


def _erf(x):
    return lax.erf(x)


def normal(key, shape=(), dtype=None, *, out_sharding=None):
    """Normal samples (``jax.random.normal``); ``out_sharding`` lays them out by a
    sharding (the values do not depend on it)."""
    return apply_out_sharding(_normal_key(key, shape, dtype), out_sharding)


def _opaque(x):
    """float32 ``x`` xor a zero the kernel compiler cannot see (1 only for a NaN ``x``, tested by
    the bits), so ``sqrt(2) * e * (1 / sqrt(2))`` keeps its two roundings (a driver may otherwise
    fold the constants into one product, see backend/wgsl_math.py)."""
    z = lax.convert_element_type(lax.ne(x, x), np.uint32)
    b = lax.bitwise_xor(lax.bitcast_convert_type(x, np.uint32), z)
    return lax.bitcast_convert_type(b, np.float32)


def _float_or_complex_dtype(name, dtype):
    """A float or complex dtype (the samplers JAX lets make complex values: normal, lognormal)."""
    dt = dtypes.check_supported(float if dtype is None else dtype)
    if not dtypes.issubdtype(dt, np.inexact):
        raise ValueError(f"dtype argument to `{name}` must be a float or complex dtype, got {dt}")
    return dt


def _normal_key(key, shape=(), dtype=None):
    """Standard normal floats (``sqrt(2) * erf_inv(u)`` for ``u`` uniform in (-1, 1))."""
    data, _ = _check_prng_key("normal", key)
    dt = _float_or_complex_dtype("normal", dtype)
    return _normal_jit(data, _canon_shape(shape), dt, _partitionable())


def _normal(data, shape, dtype):
    """Complex: as JAX, ``(re + 1j im) / sqrt(2)`` with re and im standard normals from the
    two halves of a split key (each part has variance 1/2); XLA divides by the constant as a
    product by its float32 reciprocal, so each part is multiplied by ``1 / sqrt(2)`` here."""
    if dtypes.issubdtype(dtype, np.complexfloating):
        keys = _split_data(data, (2,))
        r = np.float32(1) / np.float32(np.sqrt(2))
        re, im = (lax.mul(_opaque(_normal(k, shape, np.dtype(np.float32))), r)
                  for k in (keys[0], keys[1]))
        return lax.complex(re, im)
    _check_shape("normal", shape)
    lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
    hi = np.array(1., dtype)
    u = _uniform(data, lo, hi, shape, dtype)
    return lax.mul(np.array(np.sqrt(2), dtype), _erf_inv(u))


_normal_jit = _named_jit("_normal", lambda data, shape, dtype, mode: _normal(data, shape, dtype),
                  static_argnums=(1, 2, 3))


def _nextafter(x, toward_pos: bool):
    """``nextafter(x, +-inf)`` for float32 by stepping the bit pattern."""
    x = jnp.asarray(x)
    if x.dtype != np.float32:
        f = getattr(lax, "nextafter", None)
        if f is None:
            return x
        return f(x, jnp.full_like(x, np.inf if toward_pos else -np.inf))
    b = lax.bitcast_convert_type(x, np.int32)
    pos = jnp.where(x == 0, toward_pos, x > 0)
    step = jnp.where(pos == toward_pos, np.int32(1), np.int32(-1))
    zero_b = jnp.where(x == 0, np.int32(0 if toward_pos else -(2 ** 31)), b)
    nb = zero_b + step
    out = lax.bitcast_convert_type(nb, np.float32)
    return jnp.where(jnp.isnan(x) | (x == (np.inf if toward_pos else -np.inf)), x, out)


def truncated_normal(key, lower, upper, shape=None, dtype=None):
    """Standard normals truncated to the open interval ``(lower, upper)``."""
    shape = _canon_shape(shape)
    data, _ = _check_prng_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    return _truncated_normal_jit(data, lower, upper, shape, dt, _partitionable())


def _truncated_normal(data, lower, upper, shape, dtype):
    if shape is None:
        shape = _broadcast_shapes(_shape_of(lower), _shape_of(upper))
    else:
        _check_shape("truncated_normal", shape, _shape_of(lower), _shape_of(upper))
    sqrt2 = np.array(np.sqrt(2), dtype)
    lower = lax.convert_element_type(lower, dtype)
    upper = lax.convert_element_type(upper, dtype)
    a = _erf(lower / sqrt2)
    b = _erf(upper / sqrt2)
    u = _uniform(data, a, b, shape, dtype)
    out = sqrt2 * _erf_inv(u)
    return jnp.clip(out, _nextafter(lower, True), _nextafter(upper, False))


_truncated_normal_jit = _named_jit(
    "_truncated_normal",
    lambda data, lower, upper, shape, dtype, mode: _truncated_normal(
        data, lower, upper, shape, dtype
    ),
    static_argnums=(3, 4, 5),
)


def lognormal(key, sigma=1., shape=None, dtype=None):
    data, _ = _check_prng_key("lognormal", key)
    dt = _float_or_complex_dtype("lognormal", dtype)
    shape = _shape_of(sigma) if shape is None else _canon_shape(shape)
    _check_shape("lognormal", shape, _shape_of(sigma))
    return _lognormal_jit(data, sigma, shape, dt, _partitionable())


_lognormal_jit = _named_jit("_lognormal", lambda data, sigma, shape, dtype, mode: lax.exp(
    _normal(data, shape, dtype) * lax.convert_element_type(sigma, dtype)), static_argnums=(2, 3, 4))


# --------------------------------------------------------------------------- bernoulli, rademacher

def bernoulli(key, p=0.5, shape=None, mode="low"):
    """Booleans that are True with probability ``p``."""
    shape = _canon_shape(shape)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    data, _ = _check_prng_key("bernoulli", key)
    dt = dtypes.dtype(p)
    if not dtypes.issubdtype(dt, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
    return _bernoulli_jit(data, p, shape, mode, _partitionable())


def _bernoulli(data, p, shape, mode):
    dt = dtypes.dtype(p)
    p = lax.convert_element_type(p, dt)
    if shape is None:
        shape = _shape_of(p)
    else:
        _check_shape("bernoulli", shape, _shape_of(p))
    if mode == "high":
        u = _uniform(data, 0., 1., (2,) + tuple(shape), dt)
        u1, u2 = u[0], u[1]
        u2 = u2 * _const(2.0 ** -dtypes.finfo(dt).nmant, dt)
        return u2 < p - u1
    return _uniform(data, 0., 1., shape, dt) < p


_bernoulli_jit = _named_jit(
    "_bernoulli",
    lambda data, p, shape, mode, part: _bernoulli(data, p, shape, mode),
    static_argnums=(2, 3, 4),
)


def rademacher(key, shape=(), dtype=None):
    """-1 or +1 with equal probability."""
    data, _ = _check_prng_key("rademacher", key)
    dt = dtypes.check_supported(int if dtype is None else dtype)
    return _rademacher_jit(data, _canon_shape(shape), dt, _partitionable())


def _rademacher(data, shape, dtype):
    b = _bernoulli(data, 0.5, shape, "low").astype(dtype)
    return (2 * b - 1).astype(dtype)


_rademacher_jit = _named_jit(
    "_rademacher",
    lambda data, shape, dtype, mode: _rademacher(data, shape, dtype),
    static_argnums=(1, 2, 3),
)


# --------------------------------------------------------------------------- simple transforms of u

def _simple(name, body):
    """A sampler ``name(key, shape=(), dtype=None)`` computing ``body(data, shape, dtype)``."""
    jitted = _named_jit("_" + name, lambda data, shape, dtype, mode: body(data, shape, dtype),
                        static_argnums=(1, 2, 3))

    def sampler(key, shape=(), dtype=None):
        data, _ = _check_prng_key(name, key)
        dt = _float_dtype(name, dtype)
        return jitted(data, _canon_shape(shape), dt, _partitionable())
    sampler.__name__ = name
    return sampler


def _exponential(data, shape, dtype):
    u = _uniform(data, 0., 1., shape, dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


def _laplace(data, shape, dtype):
    u = _uniform(data, -1. + float(dtypes.finfo(dtype).epsneg), 1., shape, dtype)
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic(data, shape, dtype):
    x = _uniform(data, float(dtypes.finfo(dtype).tiny), 1., shape, dtype)
    return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


def _cauchy(data, shape, dtype):
    u = _uniform(data, float(dtypes.finfo(dtype).eps), 1., shape, dtype)
    return lax.tan(lax.mul(_const(np.pi, dtype), lax.sub(u, _const(0.5, dtype))))


def _gumbel(data, shape, dtype, mode="low"):
    info = dtypes.finfo(dtype)
    if mode in ("high", "highest"):
        u = _uniform(data, 0., 1., (2,) + tuple(shape), dtype)
        high, low = u[0], u[1]
        x = jnp.where(high >= 0.5, high, high + _const(2.0 ** -info.nmant, dtype) * low
                      + _const(info.tiny, dtype))
        return -jnp.log(-jnp.log1p(-x))
    return -jnp.log(-jnp.log(_uniform(data, float(info.tiny), 1., shape, dtype)))


exponential = _simple("exponential", _exponential)
exponential.__doc__ = "Exponential(1) floats: ``-log1p(-u)``."
laplace = _simple("laplace", _laplace)
laplace.__doc__ = "Laplace(0, 1) floats."
logistic = _simple("logistic", _logistic)
logistic.__doc__ = "Standard logistic floats."
cauchy = _simple("cauchy", _cauchy)
cauchy.__doc__ = "Standard Cauchy floats."


def gumbel(key, shape=(), dtype=None, mode=None):
    """Standard Gumbel floats (``mode='low'`` by default, as JAX)."""
    data, _ = _check_prng_key("gumbel", key)
    dt = _float_dtype("gumbel", dtype)
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise ValueError("Must provide valid mode for gumbel got: %s" % mode)
    return _gumbel_jit(data, _canon_shape(shape), dt, mode, _partitionable())


_gumbel_jit = _named_jit(
    "_gumbel",
    lambda data, shape, dtype, mode, part: _gumbel(data, shape, dtype, mode),
    static_argnums=(1, 2, 3, 4),
)


def _param_sampler(name, nparams, body, shape_from_params=True):
    """A sampler ``name(key, *params, shape=None, dtype=None)``."""
    jitted = _named_jit("_" + name, lambda data, params, shape, dtype, mode:
                        body(data, *params, shape=shape, dtype=dtype), static_argnums=(2, 3, 4))

    def sampler(key, *args, shape=None, dtype=None, **kw):
        params, rest = list(args[:nparams]), list(args[nparams:])
        if rest:
            shape = rest.pop(0)
        if rest:
            dtype = rest.pop(0)
        data, _ = _check_prng_key(name, key)
        dt = _float_dtype(name, dtype)
        shape = _canon_shape(shape)
        pshapes = [_shape_of(p) for p in params]
        if shape is None:
            shape = _broadcast_shapes(*pshapes) if pshapes else ()
        else:
            _check_shape(name, shape, *pshapes)
        return jitted(data, tuple(params), shape, dt, _partitionable())
    sampler.__name__ = name
    return sampler


def _pareto(data, b, shape, dtype):
    b = lax.convert_element_type(b, dtype)
    return lax.exp(_exponential(data, shape, dtype) / b)


def _rayleigh(data, scale, shape, dtype):
    u = _uniform(data, 0., 1., shape, dtype)
    scale = jnp.broadcast_to(lax.convert_element_type(scale, dtype), shape)
    return lax.mul(scale, lax.sqrt(lax.mul(lax.log(u), _const(-2, dtype))))


def _wald(data, mean, shape, dtype):
    keys = _split_data(data, (2,))
    mean = jnp.broadcast_to(lax.convert_element_type(mean, dtype), shape)
    v = _normal(keys[0], shape, dtype)
    z = _uniform(keys[1], 0., 1., shape, dtype)
    y = lax.integer_pow(v, 2)
    y_sq = lax.integer_pow(y, 2)
    mean_sq = lax.integer_pow(mean, 2)
    sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
    x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
    return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


def _geometric(data, p, shape, dtype):
    p = jnp.asarray(p)
    if not dtypes.issubdtype(p.dtype, np.floating):
        p = p.astype(np.float32)
    u = _uniform(data, 0., 1., shape, p.dtype)
    u = jnp.where(u == 0, _const(1, p.dtype), u)
    log_u = lax.log(u)
    log_one_minus_p = jnp.broadcast_to(lax.log1p(-p), shape)
    g = lax.floor(lax.div(log_u, log_one_minus_p)) + 1
    return g.astype(dtype)


pareto = _param_sampler("pareto", 1, _pareto)
pareto.__doc__ = "Pareto(b) floats: ``exp(exponential / b)``."
rayleigh = _param_sampler("rayleigh", 1, _rayleigh)
wald = _param_sampler("wald", 1, _wald)


def geometric(key, p, shape=None, dtype=None):
    """Geometric(p) integers (number of trials to the first success)."""
    data, _ = _check_prng_key("geometric", key)
    dt = dtypes.check_supported(int if dtype is None else dtype)
    shape = _shape_of(p) if shape is None else _canon_shape(shape)
    _check_shape("geometric", shape, _shape_of(p))
    return _geometric_jit(data, p, shape, dt, _partitionable())


_geometric_jit = _named_jit(
    "_geometric",
    lambda data, p, shape, dtype, mode: _geometric(data, p, shape, dtype),
    static_argnums=(2, 3, 4),
)


def triangular(key, left, mode, right, shape=None, dtype=None):
    data, _ = _check_prng_key("triangular", key)
    dt = _float_dtype("triangular", dtype)
    pshapes = [_shape_of(left), _shape_of(mode), _shape_of(right)]
    shape = _broadcast_shapes(*pshapes) if shape is None else _canon_shape(shape)
    _check_shape("triangular", shape, *pshapes)
    return _triangular_jit(data, left, mode, right, shape, dt, _partitionable())


def _triangular(data, left, mode, right, shape, dtype):
    left = jnp.broadcast_to(lax.convert_element_type(left, dtype), shape)
    right = jnp.broadcast_to(lax.convert_element_type(right, dtype), shape)
    mode = jnp.broadcast_to(lax.convert_element_type(mode, dtype), shape)
    fc = (mode - left) / (right - left)
    u = _uniform(data, 0., 1., shape, dtype)
    out1 = left + lax.sqrt(u * (right - left) * (mode - left))
    out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
    return lax.select(u < fc, out1, out2)


_triangular_jit = _named_jit("_triangular", lambda data, left, mode, right, shape, dtype, part:
                      _triangular(data, left, mode, right, shape, dtype), static_argnums=(4, 5, 6))


def maxwell(key, shape=(), dtype=None):
    data, _ = _check_prng_key("maxwell", key)
    dt = _float_dtype("maxwell", dtype)
    return _maxwell_jit(data, _canon_shape(shape), dt, _partitionable())


_maxwell_jit = _named_jit("_maxwell", lambda data, shape, dtype, mode: jnp.sqrt(jnp.sum(
    jnp.square(_normal(data, tuple(shape) + (3,), dtype)), axis=-1)), static_argnums=(1, 2, 3))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
    data, _ = _check_prng_key("weibull_min", key)
    dt = _float_dtype("weibull_min", dtype)
    return _weibull_jit(data, scale, concentration, _canon_shape(shape), dt, _partitionable())


def _weibull_min(data, scale, concentration, shape, dtype):
    u = _uniform(data, 0., 1., shape, dtype)
    # inverse weibull CDF
    return jnp.power(-jnp.log1p(-u), 1.0 / concentration) * scale


_weibull_jit = _named_jit("_weibull", lambda data, scale, conc, shape, dtype, mode:
                   _weibull_min(data, scale, conc, shape, dtype), static_argnums=(3, 4, 5))


# --------------------------------------------------------------------------- gamma family

def _gamma_prim(keys, a, log_space):
    return random_gamma_p.bind(keys, a, log_space=bool(log_space), _partitionable=_partitionable())


def _gamma(data, a, shape, dtype, log_space=False):
    if shape is None:
        shape = _shape_of(a)
    else:
        _check_shape("gamma", shape, _shape_of(a))
    a = lax.convert_element_type(a, dtype)
    if _shape_of(a) != tuple(shape):
        a = jnp.broadcast_to(a, shape)
    keys = _split_data(data, shape)   # one key per element, as JAX's vmapped split
    return _gamma_prim(keys, a, log_space)


_gamma_jit = _named_jit(
    "_gamma",
    lambda data, a, shape, dtype, log_space, mode: _gamma(data, a, shape, dtype, log_space),
    static_argnums=(2, 3, 4, 5),
)


def gamma(key, a, shape=None, dtype=None):
    """Gamma(a, 1) floats (Marsaglia-Tsang, one rejection loop per element on the device)."""
    data, _ = _check_prng_key("gamma", key)
    dt = _float_dtype("gamma", dtype)
    return _gamma_jit(data, a, _canon_shape(shape), dt, False, _partitionable())


def loggamma(key, a, shape=None, dtype=None):
    """log of Gamma(a, 1) floats, computed in log space (accurate for small ``a``)."""
    data, _ = _check_prng_key("loggamma", key)
    dt = _float_dtype("loggamma", dtype)
    return _gamma_jit(data, a, _canon_shape(shape), dt, True, _partitionable())


def beta(key, a, b, shape=None, dtype=None):
    """Beta(a, b) floats from two log-gammas."""
    data, _ = _check_prng_key("beta", key)
    dt = _float_dtype("beta", dtype)
    shape = _canon_shape(shape)
    if shape is None:
        shape = _broadcast_shapes(_shape_of(a), _shape_of(b))
    else:
        _check_shape("beta", shape, _shape_of(a), _shape_of(b))
    return _beta_jit(data, a, b, shape, dt, _partitionable())


def _beta(data, a, b, shape, dtype):
    a = jnp.broadcast_to(lax.convert_element_type(a, dtype), shape)
    b = jnp.broadcast_to(lax.convert_element_type(b, dtype), shape)
    keys = _split_data(data, (2,))
    log_gamma_a = _gamma(keys[0], a, shape, dtype, True)
    log_gamma_b = _gamma(keys[1], b, shape, dtype, True)
    log_max = lax.max(log_gamma_a, log_gamma_b)
    ga = jnp.exp(log_gamma_a - log_max)
    gb = jnp.exp(log_gamma_b - log_max)
    return ga / (ga + gb)


_beta_jit = _named_jit(
    "_beta",
    lambda data, a, b, shape, dtype, mode: _beta(data, a, b, shape, dtype),
    static_argnums=(3, 4, 5),
)


def dirichlet(key, alpha, shape=None, dtype=None):
    """Dirichlet(alpha) floats over the last axis of ``alpha``."""
    data, _ = _check_prng_key("dirichlet", key)
    dt = _float_dtype("dirichlet", dtype)
    return _dirichlet_jit(data, alpha, _canon_shape(shape), dt, _partitionable())


def _dirichlet(data, alpha, shape, dtype):
    if not np.ndim(alpha) >= 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
    ashape = _shape_of(alpha)
    if shape is None:
        shape = ashape[:-1]
    else:
        _check_shape("dirichlet", shape, ashape[:-1])
    alpha = lax.convert_element_type(alpha, dtype)
    log_gamma = _gamma(data, alpha, tuple(shape) + ashape[-1:], dtype, True)
    m = jnp.max(log_gamma, axis=-1, keepdims=True)
    e = jnp.exp(log_gamma - m)
    return e / jnp.sum(e, axis=-1, keepdims=True)


_dirichlet_jit = _named_jit(
    "_dirichlet",
    lambda data, alpha, shape, dtype, mode: _dirichlet(data, alpha, shape, dtype),
    static_argnums=(2, 3, 4),
)


def chisquare(key, df, shape=None, dtype=None):
    data, _ = _check_prng_key("chisquare", key)
    dt = _float_dtype("chisquare", dtype)
    shape = _shape_of(df) if shape is None else _canon_shape(shape)
    _check_shape("chisquare", shape, _shape_of(df))
    return _chisquare_jit(data, df, shape, dt, _partitionable())


def _chisquare(data, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    log_g = _gamma(data, lax.div(df, _const(2, dtype)), shape, dtype, True)
    return lax.mul(jnp.exp(log_g), _const(2, dtype))


_chisquare_jit = _named_jit(
    "_chisquare",
    lambda data, df, shape, dtype, mode: _chisquare(data, df, shape, dtype),
    static_argnums=(2, 3, 4),
)


def t(key, df, shape=(), dtype=None):
    data, _ = _check_prng_key("t", key)
    dt = _float_dtype("t", dtype)
    shape = _shape_of(df) if shape is None else _canon_shape(shape)
    _check_shape("t", shape, _shape_of(df))
    return _t_jit(data, df, shape, dt, _partitionable())


def _t(data, df, shape, dtype):
    df = lax.convert_element_type(df, dtype)
    keys = _split_data(data, (2,))
    n = _normal(keys[0], shape, dtype)
    two = _const(2, dtype)
    half_df = lax.div(df, two)
    g = _gamma(keys[1], half_df, shape, dtype, False)
    return n * jnp.sqrt(half_df / g)


_t_jit = _named_jit("_t", lambda data, df, shape, dtype, mode: _t(data, df, shape, dtype),
             static_argnums=(2, 3, 4))


# --------------------------------------------------------------------------- multivariate normal

def _cholesky(a):
    f = getattr(getattr(jnp, "linalg", None), "cholesky", None)
    if f is not None:
        return f(a)
    # column-by-column Cholesky with static n (small covariance matrices)
    n = a.shape[-1]
    cols = []
    for j in range(n):
        s = a[..., :, j]
        for k in range(j):
            s = s - cols[k] * cols[k][..., j:j + 1]
        d = jnp.sqrt(s[..., j:j + 1])
        col = jnp.where(jnp.arange(n) >= j, s / d, 0.0)
        cols.append(col)
    return jnp.stack(cols, axis=-1)


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Multivariate normals ``mean + L @ z`` with ``L`` the Cholesky factor of ``cov``."""
    data, _ = _check_prng_key("multivariate_normal", key)
    if method not in {"svd", "eigh", "cholesky"}:
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    if method != "cholesky":
        raise NotImplementedError(f"wjax: multivariate_normal(method={method!r}); use 'cholesky'")
    mean = jnp.asarray(mean)
    cov = jnp.asarray(cov)
    if not dtypes.issubdtype(mean.dtype, np.floating):
        mean = mean.astype(np.float32)
    if not dtypes.issubdtype(cov.dtype, np.floating):
        cov = cov.astype(np.float32)
    dt = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    return _mvn_jit(data, mean, cov, _canon_shape(shape), dt, _partitionable())


def _mvn(data, mean, cov, shape, dtype):
    if not mean.ndim >= 1:
        raise ValueError(
            f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}"
        )
    if not cov.ndim >= 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but "
                         f"got cov.shape == {tuple(cov.shape)}.")
    if shape is None:
        shape = _broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    else:
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    factor = _cholesky(cov)
    z = _normal(data, tuple(shape) + (n,), dtype)
    return mean + jnp.sum(factor * jnp.expand_dims(z, -2), axis=-1)


_mvn_jit = _named_jit(
    "_mvn",
    lambda data, mean, cov, shape, dtype, mode: _mvn(data, mean, cov, shape, dtype),
    static_argnums=(3, 4, 5),
)


# --------------------------------------------------------------------------- compositions
# Distributions JAX builds from the samplers above, composed in JAX's order (the same keys
# give the same values).

def f(key, dfnum, dfden, shape=(), dtype=None):
    """F(dfnum, dfden): a ratio of scaled chi-squares."""
    _check_prng_key("f", key)
    dt = _float_dtype("f", dtype)
    dfnum, dfden = jnp.asarray(dfnum, dt), jnp.asarray(dfden, dt)
    key_dfd, key_dfn = split(key)
    chi2_dfn = chisquare(key_dfn, dfnum, shape, dt)
    chi2_dfd = chisquare(key_dfd, dfden, shape, dt)
    return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    """A Maxwell variate with a random sign, scaled and shifted."""
    _check_prng_key("double_sided_maxwell", key)
    dt = _float_dtype("double_sided_maxwell", dtype)
    params_shape = np.broadcast_shapes(np.shape(loc), np.shape(scale))
    shape = tuple(_canon_shape(shape)) or params_shape
    shape = shape + params_shape
    maxwell_key, rademacher_key = split(key)
    rvs = maxwell(maxwell_key, shape=shape, dtype=dt)
    sign = rademacher(rademacher_key, shape=shape, dtype=dt)
    return sign * rvs * scale + loc


def generalized_normal(key, p, shape=(), dtype=None):
    """The generalized normal of power ``p``: a signed gamma(1/p) variate to the 1/p."""
    _check_prng_key("generalized_normal", key)
    dt = _float_dtype("generalized_normal", dtype)
    shape = tuple(_canon_shape(shape))
    keys = split(key)
    g = gamma(keys[0], 1 / p, shape, dt)
    r = rademacher(keys[1], shape, dt)
    return r * g ** (1 / p)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the unit ``p``-norm ball of dimension ``d`` (shape ``(*shape, d)``)."""
    _check_prng_key("ball", key)
    d = int(concrete_or_error(d, "The d argument of ball must be static"))
    dt = _float_dtype("ball", dtype)
    shape = tuple(_canon_shape(shape))
    k1, k2 = split(key)
    g = generalized_normal(k1, p, (*shape, d), dt)
    e = exponential(k2, shape, dt)
    return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
    """A Haar-random ``(n, m)`` matrix with orthonormal columns (or rows, when ``n < m``):
    the Q of a Gaussian matrix's QR, signs fixed by R's diagonal (shape ``(*shape, n, m)``)."""
    _check_prng_key("orthogonal", key)
    n = int(concrete_or_error(n, "The error occurred in jax.random.orthogonal()"))
    m = n if m is None else int(concrete_or_error(m, "The error occurred in "
                                                     "jax.random.orthogonal()"))
    shape = tuple(_canon_shape(shape))
    z = normal(key, (*shape, max(n, m), min(n, m)), dtype)       # checks it; complex: unitary
    q, r = jnp.linalg.qr(z)
    x = q * jnp.expand_dims(jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1)), -2)
    return jnp.swapaxes(x, -1, -2) if n < m else x




