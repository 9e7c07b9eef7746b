"""wjax.random: JAX's counter-based PRNG (threefry2x32), with JAX's exact bits.

Keys are either raw ``uint32[2]`` arrays (``PRNGKey``) or typed key arrays
(``key``), whose dtype prints as ``key<fry>``: a :class:`PRNGKeyArray` is a
thin wrapper around its ``uint32[..., 2]`` key data, registered as a pytree
so keys pass through ``jit`` and ``vmap`` (a batch of keys is a batch of key
data along the same leading axes).

Every sampler is written the way JAX writes it (``jax/_src/random/core.py``)
on top of three primitives computed on the device (``wjax/prims/random.py``):
``random_bits``, ``random_split`` and ``random_fold_in``.  Bits, integers and
uniforms are bit-identical to JAX for the same key, shape and dtype in both
of JAX's modes (``jax_threefry_partitionable``, default True); normals and the
other transcendental samplers agree to float32 rounding.  Like JAX, samplers
are jitted (one fused kernel for most of them) with the shape, dtype and the
current threefry mode as static arguments.
"""
from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Sequence

import numpy as np

from .core import dtypes
from . import lax
from . import numpy as jnp
from .numpy import _util as _np_util
from .api.jit import jit
from .array import Array, BaseArray
from .core.config import config
from .prims.random import fma_p, random_bits_p, random_fold_in_p, random_split_p
from .core.tracing import Tracer, concrete_or_error, tracer_repr
from .core import tree as _tree
from .core.tree_util import register_pytree_node
from .core.ir import ShapedArray
from .prims.cumulative import cumsum_p
from .prims.random import lgamma_p, random_gamma_p
from .numpy._util import _check_arg
from .prims.sort import sort_p, top_k_p
from .prims.special import erf_inv_p

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "key_dtype", "clone", "split",
    "fold_in", "bits", "uniform", "normal", "truncated_normal", "randint", "bernoulli",
    "categorical", "choice", "permutation", "shuffle", "gumbel", "exponential", "laplace",
    "logistic", "rademacher", "cauchy", "lognormal", "pareto", "rayleigh", "wald", "geometric",
    "triangular", "maxwell", "weibull_min", "gamma", "loggamma", "beta", "dirichlet",
    "chisquare", "t", "multivariate_normal", "PRNGKeyArray",
]

_IMPL_NAME = "threefry2x32"


def _named_jit(name, fn, static_argnums):
    """jit of ``fn`` under ``name`` (how the nested call prints in a jaxpr, as JAX's
    ``_normal``)."""
    fn.__name__ = fn.__qualname__ = name
    return jit(fn, static_argnums=static_argnums)


def _partitionable() -> bool:
    return bool(config.jax_threefry_partitionable)


# --------------------------------------------------------------------------- typed keys

class KeyDType(dtypes.ExtendedDType):
    """The dtype of typed threefry keys; prints as ``key<fry>``."""

    type = dtypes.prng_key

    is_key = True
    name = "key<fry>"
    short_name = "key<fry>"
    kind = "V"
    itemsize = 8
    impl = _IMPL_NAME

    def __repr__(self):
        return "key<fry>"

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, str):
            return other in ("key<fry>", "fry", _IMPL_NAME)
        return isinstance(other, KeyDType)

    def __hash__(self):
        return hash("key<fry>")


KEY_DTYPE = KeyDType()


class PRNGKeyArray:
    """An array of typed PRNG keys: ``shape`` keys over ``uint32[*shape, 2]`` key data."""

    __slots__ = ("_base_array",)
    __array_priority__ = 2000

    def __init__(self, base):
        self._base_array = base

    # -------------------------------------------------------------- array protocol
    dtype = KEY_DTYPE

    @property
    def shape(self):
        return tuple(self._base_array.shape[:-1])

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def aval(self):
        return ShapedArray(self.shape, KEY_DTYPE)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, idx):
        if not self.shape:
            raise IndexError("Too many indices: 0-dimensional key array indexed")
        idx = idx if isinstance(idx, tuple) else (idx,)
        return PRNGKeyArray(self._base_array[idx + (slice(None),)])

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(int(s) for s in shape)
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
            shape = tuple(self.size // max(known, 1) if s == -1 else s for s in shape)
        return PRNGKeyArray(jnp.reshape(self._base_array, shape + (2,)))

    def ravel(self):
        return self.reshape(self.size)

    flatten = ravel

    def squeeze(self, axis=None):
        if axis is None:
            axis = tuple(i for i, s in enumerate(self.shape) if s == 1)
        return PRNGKeyArray(jnp.squeeze(self._base_array, axis))

    def transpose(self, *axes):
        if not axes or axes == (None,):
            axes = tuple(range(self.ndim))[::-1]
        elif len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return PRNGKeyArray(jnp.transpose(self._base_array, tuple(axes) + (self.ndim,)))

    @property
    def T(self):
        return self.transpose()

    def copy(self):
        return self

    def block_until_ready(self):
        if hasattr(self._base_array, "block_until_ready"):
            self._base_array.block_until_ready()
        return self

    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return jnp.all(self._base_array == other._base_array, axis=-1)

    def __ne__(self, other):
        if not isinstance(other, PRNGKeyArray):
            return NotImplemented
        return jnp.any(self._base_array != other._base_array, axis=-1)

    __hash__ = None

    def __array__(self, dtype=None, copy=None):
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                        "jax.random.key_data(arr) if you wish to extract the underlying integer "
                        "array.")

    def __repr__(self):
        if isinstance(self._base_array, Tracer):
            base = self._base_array
            return tracer_repr(base.builder, base.aval.update(shape=self.shape), lambda: "?",
                               dtype_name="key<fry>")
        return (f"Array({self.shape}, dtype=key<fry>) overlaying:\n"
                f"{np.asarray(self._base_array)}")

    __str__ = __repr__


BaseArray.register(PRNGKeyArray)         # isinstance(key, jax.Array), as in JAX
register_pytree_node(PRNGKeyArray, lambda k: ((k._base_array,), None),
                     lambda _, children: PRNGKeyArray(children[0]))
_tree.ARRAY_NODES.add(PRNGKeyArray)      # a leaf to jax.tree_util, as in JAX


def _is_key_data(x) -> bool:
    try:
        return np.dtype(x.dtype) == np.uint32 and len(x.shape) >= 1 and x.shape[-1] == 2
    except (AttributeError, TypeError):
        return False


def _check_prng_key(name, key, allow_batched=False):
    """(uint32[..., 2] key data, whether the key was typed)."""
    if isinstance(key, PRNGKeyArray):
        data, typed = key._base_array, True
    elif isinstance(key, (Array, Tracer, np.ndarray, list, tuple)):
        data = key if isinstance(key, (Array, Tracer)) else jnp.asarray(np.asarray(key))
        if not _is_key_data(data):
            raise TypeError(
                f"JAX encountered invalid PRNG key data: expected key_data to have uint32 dtype "
                f"and trailing shape (2,) for the threefry2x32 implementation, got "
                f"dtype={np.dtype(data.dtype).name} and shape={tuple(data.shape)}")
        typed = False
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not allow_batched and len(data.shape) > 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{tuple(data.shape[:-1])} != (). Use jax.vmap for batching.")
    return data, typed


def _return_keys(typed, data):
    return PRNGKeyArray(data) if typed else data


# --------------------------------------------------------------------------- seeds

def _seed_data(seed, ctor):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed):
        raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed)} != (). Use jax.vmap for batching")
    if isinstance(seed, (bool, int)) and not isinstance(seed, np.generic):
        np.int64(seed)   # JAX converts Python seeds to int64 first (OverflowError beyond)
        return jnp.asarray(np.array([0, seed & 0xFFFFFFFF], np.uint32))
    if isinstance(seed, (Array, Tracer)):
        if not dtypes.issubdtype(seed.dtype, np.integer):
            raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
        lo = lax.convert_element_type(seed, np.uint32)
        return jnp.stack([jnp.zeros((), np.uint32), lo])
    arr = np.asarray(seed)
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    return jnp.asarray(np.array([0, int(arr) & 0xFFFFFFFF], np.uint32))


def PRNGKey(seed, *, impl=None) -> Array:
    """A legacy (raw) PRNG key, ``uint32[2]``, for an integer seed."""
    _check_impl(impl)
    return _seed_data(seed, "PRNGKey")


def key(seed, *, impl=None, dtype=None) -> PRNGKeyArray:
    """A typed PRNG key (dtype ``key<fry>``) for an integer seed."""
    if impl is not None and dtype is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.key")
    _check_impl(impl if impl is not None else dtype)
    return PRNGKeyArray(_seed_data(seed, "key"))


def _check_impl(impl):
    if impl is None or isinstance(impl, KeyDType):
        return
    if isinstance(impl, str) and impl in (_IMPL_NAME, "fry", "key<fry>"):
        return
    raise ValueError(f'unrecognized PRNG implementation "{impl}". wjax provides only '
                     f'"{_IMPL_NAME}".')


def key_data(keys) -> Array:
    """The ``uint32[..., 2]`` data underlying a key array."""
    data, _ = _check_prng_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None) -> PRNGKeyArray:
    """Wraps ``uint32[..., 2]`` key data into a typed key array."""
    if impl is not None and dtype is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                         "jax.random.wrap_key_data")
    _check_impl(impl if impl is not None else dtype)
    data = key_bits_array
    if not isinstance(data, (Array, Tracer)):
        data = jnp.asarray(np.asarray(data))
    if not _is_key_data(data):
        raise TypeError(f"wrap_key_data expects uint32 key data with trailing shape (2,), got "
                        f"dtype={np.dtype(data.dtype).name} and shape={tuple(data.shape)}")
    return PRNGKeyArray(data)


def key_impl(keys) -> str:
    _check_prng_key("key_impl", keys, allow_batched=True)
    return _IMPL_NAME


def key_dtype(impl=None) -> KeyDType:
    _check_impl(impl)
    return KEY_DTYPE


def clone(key):
    """Keys are immutable values here, so a clone is the key itself (as in JAX)."""
    return key


# --------------------------------------------------------------------------- key operations

def _split_data(data, shape):
    return random_split_p.bind(data, shape=tuple(shape), _partitionable=_partitionable())


def _bits_data(data, bit_width, shape):
    return random_bits_p.bind(data, bit_width=int(bit_width), shape=tuple(shape),
                              _partitionable=_partitionable())


def split(key, num=2):
    """Splits a key into ``num`` (an int or a shape) new keys along a leading axis."""
    data, typed = _check_prng_key("split", key)
    shape = tuple(num) if isinstance(num, Sequence) else (operator.index(num),)
    return _return_keys(typed, _split_data(data, shape))


def fold_in(key, data):
    """A new key, a deterministic function of ``key`` and the 32-bit integer ``data``."""
    kdata, typed = _check_prng_key("fold_in", key)
    if np.ndim(data):
        raise TypeError("fold_in accepts a scalar, but was given an array of"
                        f"shape {np.shape(data)} != (). Use jax.vmap for batching.")
    if isinstance(data, (Array, Tracer)):
        if not dtypes.issubdtype(data.dtype, np.integer) and data.dtype != np.bool_:
            data = lax.convert_element_type(data, np.int32)
        msg = lax.convert_element_type(data, np.uint32)
    else:
        d = int(data)
        if not 0 <= d < 2 ** 32:
            raise OverflowError(f"Python integer {d} out of bounds for uint32")
        msg = np.uint32(d)
    return _return_keys(typed, random_fold_in_p.bind(kdata, msg))


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
    return _np_util.apply_out_sharding(_uniform_key(key, shape, dtype, minval, maxval),
                                       out_sharding)


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
    return _np_util.apply_out_sharding(_normal_key(key, shape, dtype), out_sharding)


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


__all__ += ["f", "double_sided_maxwell", "generalized_normal", "ball", "orthogonal"]


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


__all__ += ["poisson", "binomial", "multinomial"]


# ------------------------------------------------------------------- out_sharding
# JAX's samplers take ``out_sharding=`` (where the result is placed); with one device every
# result is on it, so the argument is checked and the result is the same.
_OUT_SHARDING_SAMPLERS = (
    "ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare", "dirichlet",
    "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel", "laplace",
    "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal", "normal",
    "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh", "t",
    "triangular", "truncated_normal", "uniform", "wald")


def _check_out_sharding(name, out_sharding):
    devices = getattr(out_sharding, "device_set", None)
    if devices is not None and len(devices) > 1:
        raise ValueError(f"{name}: out_sharding {out_sharding} spans {len(devices)} devices; "
                         f"this wjax runtime has one device")


def _with_out_sharding(fn):
    @functools.wraps(fn)
    def sampler(*args, out_sharding=None, **kwargs):
        _check_out_sharding(fn.__name__, out_sharding)
        return fn(*args, **kwargs)
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    at = len(params) - (params and params[-1].kind == inspect.Parameter.VAR_KEYWORD)
    params.insert(at, inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                        default=None))
    sampler.__signature__ = sig.replace(parameters=params)
    return sampler


for _name in _OUT_SHARDING_SAMPLERS:
    if "out_sharding" not in inspect.signature(globals()[_name]).parameters:
        globals()[_name] = _with_out_sharding(globals()[_name])
del _name
