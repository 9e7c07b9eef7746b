"""JAX's typed PRNG keys: the key dtype ``key<fry>``, :class:`PRNGKeyArray` (a pytree over its
``uint32[..., 2]`` key data), seeds (``PRNGKey``, ``key``, ``wrap_key_data``) and the key
operations ``split`` and ``fold_in`` on the ``random_split``/``random_fold_in`` primitives."""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from .._src.core import dtypes
from .. import lax
from .. import numpy as jnp
from .._src.api.jit import jit
from .._src.array import Array, BaseArray
from .._src.core.config import config
from .._src.prims.random import random_bits_p, random_fold_in_p, random_split_p
from .._src.core.tracing import Tracer, tracer_repr
from .._src.core import tree as _tree
from .._src.core.tree_util import register_pytree_node
from .._src.core.ir import ShapedArray
from .._src.export.serialization import register_pytree_node_serialization

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

    # placement: the key data's (a key array lives where its data does)
    sharding = property(lambda self: getattr(self._base_array, "sharding", None))
    committed = property(lambda self: getattr(self._base_array, "committed", False))

    def devices(self):
        return self._base_array.devices()

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
# an exported program takes and returns typed keys as their key data (uint32[..., 2])
register_pytree_node_serialization(PRNGKeyArray, serialized_name="wjax.PRNGKeyArray",
                                   serialize_auxdata=lambda aux: b"",
                                   deserialize_auxdata=lambda data: None)


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


