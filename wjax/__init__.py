"""wjax: JAX's programming model on any GPU, through WebGPU.

    import wjax as jax
    import wjax.numpy as jnp

The public namespace, assembled from the layers (docs/DESIGN.md): importing ``prims`` registers
every primitive, importing ``dispatch`` installs the eager path.
"""
from __future__ import annotations

import contextlib as _contextlib

import numpy as _np

from . import prims as _prims
from . import dispatch as _dispatch
from . import spmd as _spmd
from . import partition as _partition
from . import dtypes, tree, tree_util
from . import lax, numpy
from . import random, nn, scipy
from . import ad_checkpoint, custom_derivatives, errors, flatten_util, sharding, test_util
from . import debug, stages, typing, version
from . import api_util, extend, interpreters
from .api.callbacks import pure_callback
from .api import (checkpoint, checkpoint_policies, clear_caches, closure_convert, custom_jvp,
                  custom_vjp, eval_shape, grad, hessian, jacfwd, jacrev, jit, jvp, linearize,
                  remat, value_and_grad, vjp, vmap)
from . import array as _array
from .array import Array as _Array
from .array import BaseArray as Array, Device, default_device, live_arrays
from .backend import runtime
from .core.config import config, disable_jit, numpy_dtype_promotion
from .core.errors import (ConcretizationTypeError, NonConcreteBooleanIndexError,
                          TracerArrayConversionError, TracerBoolConversionError,
                          TracerIntegerConversionError, UnexpectedTracerError)
from .core.ir import ShapedArray, ShapeDtypeStruct
from .core.ir import abstractify as _abstractify
from .core.tracing import ensure_compile_time_eval, make_jaxpr
from .jax_alias import install_as_jax
from .experimental.shard_map import jax_shard_map as shard_map, pmap
from . import distributed
from .ref import Ref, freeze, new_ref
from .api.vectorize import vectorize as _vectorize
from .api import linalg as _linalg_rules

# with_sharding_constraint is the partitioner's (wjax/partition.py), installed into lax here
lax.with_sharding_constraint = _partition.with_sharding_constraint
sharding.auto_axes, sharding.explicit_axes = _partition.auto_axes, _partition.explicit_axes


def reshard(x, out_shardings):
    """``x`` laid out by ``out_shardings`` (``device_put`` outside ``jit``, a sharding
    constraint inside)."""
    return _partition.with_sharding_constraint(x, out_shardings)


# jnp.vectorize is built on vmap (the api layer), so it is installed into wjax.numpy from here
numpy.vectorize = _vectorize
numpy.__all__.append("vectorize")
# so are eigh and svd with JAX's derivative rules (custom_jvp, the api layer)
for _name in _linalg_rules.__all__:
    setattr(numpy.linalg, _name, getattr(_linalg_rules, _name))

__version__ = version.__version__               # the JAX API level (libraries branch on it)
__version_info__ = version._version_as_tuple
__wjax_version__ = version.wjax_version          # wjax's own release
jacobian = jacrev
P = sharding.PartitionSpec
set_mesh = sharding.set_mesh


def devices(backend=None):
    """Every device of every process (``jax_num_cpu_devices`` / ``WJAX_NUM_DEVICES`` logical
    devices on one adapter, or every GPU adapter), by id."""
    return list(_array.all_devices())


def local_devices(process_index=None, backend=None, host_id=None):
    if process_index is None:
        process_index = host_id
    if process_index is None:
        return _array.local_devices()
    return [d for d in _array.all_devices() if d.process_index == process_index]


def device_count(backend=None):
    return len(_array.all_devices())


def local_device_count(backend=None):
    return len(_array.local_devices())


def process_index(backend=None):
    return _array._process[0]


def process_count(backend=None):
    return _array._process[1]


host_id = process_index
host_count = process_count


def typeof(x) -> ShapedArray:
    """The abstract value (shape, dtype, weak type; a sharded array's sharding) of an array,
    tracer or scalar (a ref's: an ``AbstractRef``)."""
    if isinstance(x, Ref):
        return x.aval
    t = _spmd.vma_typeof(x) if hasattr(x, "builder") else None
    return t if t is not None else _abstractify(x)


@_contextlib.contextmanager
def named_scope(name: str):
    """Names the operations traced inside (JAX shows them in profiles; wjax accepts the name)."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    yield


def named_call(fun, *, name: str | None = None):
    """``fun`` under a name in profiles (wjax runs it unchanged)."""
    return fun


def default_backend() -> str:
    return "webgpu"


def effects_barrier() -> None:
    """Waits until every dispatched program, host callbacks included, has run."""
    runtime.synchronize_all()


def block_until_ready(x):
    runtime.synchronize_all()
    return x


def _placement(where):
    if isinstance(where, sharding.PartitionSpec):
        return sharding.current_sharding(where)
    return where


def _is_placement(where) -> bool:
    return where is None or isinstance(where, (sharding.PartitionSpec, sharding.Sharding,
                                               Device))


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """``x`` (a pytree) on ``device``: a Device, a Sharding (``NamedSharding``: an Array of
    per-device shards), a ``jax.P`` over the current mesh, or a pytree of those matching
    ``x``.  Copies between devices go through host memory."""
    def one(a, where):
        where = _placement(where)
        if not isinstance(a, _Array):
            a = numpy.asarray(a)
        if isinstance(where, sharding.NamedSharding):
            where.check_shape(a.shape)
        return _array.put(a, where)
    if _is_placement(device):
        return tree_util.tree_map(lambda a: one(a, device), x)
    return tree_util.tree_map(one, x, device)


def device_get(x):
    """The host (NumPy) value of every array in the pytree ``x``."""
    return tree_util.tree_map(lambda a: _np.asarray(a) if isinstance(a, _Array) else a, x)


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
    return sharding.make_mesh(axis_shapes, axis_names, axis_types, devices=devices)


make_mesh.__doc__ = sharding.make_mesh.__doc__
get_mesh = sharding.get_mesh
NamedSharding = sharding.NamedSharding
