"""wjax: JAX's programming model on any GPU, through WebGPU.

    import wjax as jax
    import wjax.numpy as jnp

The public namespace, assembled from the layers (docs/DESIGN.md): importing ``prims`` registers
every primitive, importing ``dispatch`` installs the eager path.
"""
from __future__ import annotations

import contextlib as _contextlib

import numpy as _np

from ._src import prims as _prims
from ._src import dispatch as _dispatch
from ._src import spmd as _spmd
from ._src import partition as _partition    # sharded programs: fills dispatch's hooks
from . import dtypes, tree, tree_util
from . import lax, numpy
from . import random, nn, scipy
from . import ad_checkpoint, custom_derivatives, errors, flatten_util, sharding, test_util
from . import debug, export, profiler, stages, typing, version
from . import api_util, core, extend, interpreters
from ._src.api.callbacks import pure_callback
from ._src.api.sharding import reshard
from ._src.api import (checkpoint, checkpoint_policies, clear_caches, closure_convert, custom_jvp,
                       custom_vjp, eval_shape, grad, hessian, jacfwd, jacrev, jit, jvp, linearize,
                       remat, value_and_grad, vjp, vmap)
from ._src import array as _array
from ._src.api.autodiff import fwd_and_bwd, linear_transpose
from ._src.api.custom_derivatives import custom_gradient
from . import custom_batching, dlpack, image, monitoring, ops
from ._src.array import Array as _Array
from ._src.array import BaseArray as Array, Device, Shard, default_device, live_arrays
from ._src.backend import runtime
from ._src.core.config import config, disable_jit, numpy_dtype_promotion
from ._src.core.config import (allow_f16_reductions, array_garbage_collection_guard, auto_pcast,
                               check_tracer_leaks, checking_leaks, debug_infs, debug_key_reuse,
                               debug_nans, default_matmul_precision, default_prng_impl,
                               enable_checks, enable_custom_prng, enable_x64, explain_cache_misses,
                               jax2tf_associative_scan_reductions, legacy_prng_key, log_compiles,
                               no_execution, no_tracing, numpy_rank_promotion,
                               remove_size_one_mesh_axis_from_type, softmax_custom_jvp,
                               thread_guard, threefry_partitionable, transfer_guard,
                               transfer_guard_device_to_device, transfer_guard_device_to_host,
                               transfer_guard_host_to_device)
from ._src.core.config import explicit_transfer as _explicit_transfer
from ._src.core.config import make_user_context
from ._src.core.dtypes import float0
from ._src.core.errors import (ConcretizationTypeError, NonConcreteBooleanIndexError,
                               TracerArrayConversionError, TracerBoolConversionError,
                               TracerIntegerConversionError, UnexpectedTracerError)
from ._src.core.ir import ShapedArray, ShapeDtypeStruct
from ._src.core.ir import abstractify as _abstractify
from ._src.core.tracing import ensure_compile_time_eval, make_jaxpr
from .jax_alias import install_as_jax
from .experimental.shard_map import jax_shard_map as shard_map, pmap
from . import distributed
from .ref import Ref, ds, empty_ref, free_ref, freeze, new_ref

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
    ``x``.  Copies between devices go through host memory; an explicit transfer for the
    transfer guards."""
    def one(a, where):
        where = _placement(where)
        if not isinstance(a, _Array):
            a = numpy.asarray(a)
        if isinstance(where, sharding.NamedSharding):
            where.check_shape(a.shape)
        return _array.put(a, where)
    with _explicit_transfer():
        if _is_placement(device):
            return tree_util.tree_map(lambda a: one(a, device), x)
        return tree_util.tree_map(one, x, device)


def device_get(x):
    """The host (NumPy) value of every array in the pytree ``x`` (an explicit transfer for the
    transfer guards)."""
    with _explicit_transfer():
        return tree_util.tree_map(lambda a: _np.asarray(a) if isinstance(a, _Array) else a, x)


def process_indices(backend=None) -> list[int]:
    return list(range(process_count()))


host_ids = process_indices


def copy_to_host_async(x):
    """Starts copying every array of the pytree ``x`` to the host; returns ``x``."""
    for leaf in tree_util.tree_leaves(x):
        fn = getattr(leaf, "copy_to_host_async", None)
        if fn is not None:
            fn()
    return x


def _from_pieces(shape, where, pieces: dict, dtype, what: str):
    """The global array of ``shape`` laid out by ``where`` from its addressable pieces
    (device -> host value or Array): a host piece is uploaded straight to its device, an
    Array moved there (nothing to do when it is already there)."""
    shape = tuple(int(d) for d in shape)
    want = tuple(where.shard_shape(shape))
    shards, dt = {}, None
    for d, piece in pieces.items():
        if isinstance(piece, _Array):
            piece = _array.on_device(numpy.asarray(piece, dtype), d)
        else:
            piece = _array.asarray_device(piece, dtype, device=d)
        if tuple(piece.shape) != want:
            raise ValueError(f"{what}: the piece for {d} has shape {tuple(piece.shape)}; the "
                             f"sharding {where!r} gives each device shape {want} of {shape}")
        dt = piece.dtype if dt is None else dt
        shards[d.id] = piece
    if len(where.device_set) == 1:
        return next(iter(shards.values()))
    return _Array.sharded(ShapedArray(shape, dt), where, shards)


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """The array of ``shape`` laid out by ``sharding``, each addressable device's piece being
    ``data_callback(index)`` (index: the tuple of slices it holds)."""
    shape = tuple(int(d) for d in shape)
    pieces = {d: data_callback(i)
              for d, i in sharding.addressable_devices_indices_map(shape).items()}
    return _from_pieces(shape, sharding, pieces, dtype, "make_array_from_callback")


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """The array of ``shape`` made of its per-device arrays, in the order of
    ``sharding.addressable_devices_indices_map``."""
    arrays = list(arrays)
    devs = list(sharding.addressable_devices_indices_map(tuple(shape)))
    if len(arrays) != len(devs):
        raise ValueError(f"make_array_from_single_device_arrays: the sharding has "
                         f"{len(devs)} addressable devices, got {len(arrays)} arrays")
    return _from_pieces(shape, sharding, dict(zip(devs, arrays)), dtype,
                        "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """The global array of one process's data: this process's devices' pieces cut from
    ``local_data`` (the whole array when there is one process)."""
    local = _np.asarray(local_data)
    if global_shape is None:
        global_shape = local.shape
    if process_count() == 1 and tuple(global_shape) != tuple(local.shape):
        raise ValueError(f"make_array_from_process_local_data: global_shape {global_shape} "
                         f"differs from the local data's {tuple(local.shape)} (one process)")
    if process_count() != 1:
        raise NotImplementedError("make_array_from_process_local_data across processes: build "
                                  "the array with make_array_from_callback")
    return make_array_from_callback(global_shape, sharding, lambda i: local[i])


def print_environment_info(return_string: bool = False):
    """wjax's, NumPy's, Python's and the adapter's versions (as ``jax.print_environment_info``)."""
    import platform
    import sys
    try:
        import wgpu
        wgpu_version = wgpu.__version__
    except Exception:                     # noqa: BLE001 - reported, not raised
        wgpu_version = "unavailable"
    rt = runtime.peek()
    adapter = rt.describe() if rt is not None else "not initialized (no array created yet)"
    info = "\n".join([
        f"jax:    {__version__} (API level; wjax {__wjax_version__})",
        "jaxlib: none (wjax runs through WebGPU)",
        f"numpy:  {_np.__version__}",
        f"python: {sys.version}",
        f"wgpu:   {wgpu_version}",
        f"device info: {adapter}, {device_count()} local devices\"",
        f"process_count: {process_count()}",
        f"platform: {platform.uname()}",
    ]) + "\n"
    if return_string:
        return info
    print(info)
    return None


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
    return sharding.make_mesh(axis_shapes, axis_names, axis_types, devices=devices)


make_mesh.__doc__ = sharding.make_mesh.__doc__
get_mesh = sharding.get_mesh
NamedSharding = sharding.NamedSharding
