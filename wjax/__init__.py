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
from . import dtypes, tree, tree_util
from . import lax, numpy
from . import random, nn, scipy
from . import ad_checkpoint, custom_derivatives, errors, flatten_util, sharding, test_util
from . import debug, stages, typing, version
from . import extend, interpreters
from .api.callbacks import pure_callback
from .api import (checkpoint, checkpoint_policies, clear_caches, closure_convert, custom_jvp,
                  custom_vjp, eval_shape, grad, hessian, jacfwd, jacrev, jit, jvp, linearize,
                  pmap, remat, value_and_grad, vjp, vmap)
from .api.autodiff import fwd_and_bwd, linear_transpose
from .api.custom_derivatives import custom_gradient
from . import api_util, custom_batching, dlpack, image, monitoring, ops
from .array import Array as _Array
from .array import BaseArray as Array, Device, default_device, live_arrays
from .backend import runtime
from .core.config import config, disable_jit, numpy_dtype_promotion
from .core.config import (allow_f16_reductions, array_garbage_collection_guard, auto_pcast,
                          check_tracer_leaks, checking_leaks, debug_infs, debug_key_reuse,
                          debug_nans, default_matmul_precision, default_prng_impl, enable_checks,
                          enable_custom_prng, enable_x64, explain_cache_misses,
                          jax2tf_associative_scan_reductions, legacy_prng_key, log_compiles,
                          no_execution, no_tracing, numpy_rank_promotion,
                          remove_size_one_mesh_axis_from_type, softmax_custom_jvp, thread_guard,
                          threefry_partitionable, transfer_guard, transfer_guard_device_to_device,
                          transfer_guard_device_to_host, transfer_guard_host_to_device)
from .core.config import explicit_transfer as _explicit_transfer
from .core.config import make_user_context
from .core.dtypes import float0
from .core.errors import (ConcretizationTypeError, NonConcreteBooleanIndexError,
                          TracerArrayConversionError, TracerBoolConversionError,
                          TracerIntegerConversionError, UnexpectedTracerError)
from .core.ir import ShapedArray, ShapeDtypeStruct
from .core.ir import abstractify as _abstractify
from .core.tracing import ensure_compile_time_eval, make_jaxpr
from .jax_alias import install_as_jax
from .ref import Ref, ds, empty_ref, free_ref, freeze, new_ref
from .api.vectorize import apply_along_axis as _apply_along_axis
from .api.vectorize import frompyfunc as _frompyfunc
from .api.vectorize import vectorize as _vectorize
from .api import linalg as _linalg_rules
from .api.solves import custom_root as _custom_root

# jnp.vectorize is built on vmap (the api layer), so it is installed into wjax.numpy from here
numpy.vectorize = _vectorize
numpy.frompyfunc = _frompyfunc
numpy.apply_along_axis = _apply_along_axis
numpy.__all__ += ["vectorize", "frompyfunc", "apply_along_axis"]
# lax.custom_root is built on custom_jvp and linearize (the api layer), installed likewise
lax.custom_root = _custom_root
lax.__all__.append("custom_root")
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
    """The devices wjax can run on (one WebGPU device)."""
    return [default_device()]


def local_devices(process_index=None, backend=None):
    return devices()


def device_count(backend=None):
    return 1


def local_device_count(backend=None):
    return 1


def typeof(x) -> ShapedArray:
    """The abstract value (shape, dtype, weak type) of an array, tracer or scalar (a ref's:
    an ``AbstractRef``)."""
    return x.aval if isinstance(x, Ref) else _abstractify(x)


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
    runtime.get().synchronize()


def block_until_ready(x):
    runtime.get().synchronize()
    return x


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """``x`` (a pytree) on the device: an explicit transfer for the transfer guards."""
    with _explicit_transfer():
        return tree_util.tree_map(lambda a: a if isinstance(a, _Array) else numpy.asarray(a), x)


def device_get(x):
    """``x`` (a pytree) as host values: an explicit transfer for the transfer guards."""
    with _explicit_transfer():
        return tree_util.tree_map(lambda a: _np.asarray(a) if isinstance(a, _Array) else a, x)


# --------------------------------------------------------------------------- one process

def process_count(backend=None) -> int:
    """The number of processes (wjax runs in one)."""
    return 1


def process_index(backend=None) -> int:
    return 0


def process_indices(backend=None) -> list[int]:
    return [0]


host_count, host_id, host_ids = process_count, process_index, process_indices


def copy_to_host_async(x):
    """Starts copying every array of the pytree ``x`` to the host; returns ``x``."""
    for leaf in tree_util.tree_leaves(x):
        fn = getattr(leaf, "copy_to_host_async", None)
        if fn is not None:
            fn()
    return x


def _check_one_device(sharding, what):
    devs = getattr(sharding, "device_set", None)
    if devs is not None and any(d != default_device() for d in devs):
        raise ValueError(f"{what}: wjax runs on one device ({default_device()}); the sharding "
                         f"{sharding!r} names others")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """The array of ``shape`` whose (single, whole) shard is ``data_callback(index)``, the index
    being a tuple of full slices."""
    _check_one_device(sharding, "make_array_from_callback")
    shape = tuple(int(d) for d in shape)
    data = data_callback(tuple(slice(None) for _ in shape))
    out = data if isinstance(data, _Array) and dtype is None else numpy.asarray(data, dtype)
    if tuple(out.shape) != shape:
        raise ValueError(f"make_array_from_callback: data_callback returned shape "
                         f"{tuple(out.shape)} for the array of shape {shape}")
    return out


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """The array of ``shape`` made of its per-device arrays (one, on wjax's one device)."""
    _check_one_device(sharding, "make_array_from_single_device_arrays")
    arrays = list(arrays)
    if len(arrays) != 1:
        raise ValueError(f"make_array_from_single_device_arrays: wjax has one device, so it "
                         f"takes one array, got {len(arrays)}")
    out = numpy.asarray(arrays[0], dtype)
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"make_array_from_single_device_arrays: the array has shape "
                         f"{tuple(out.shape)}, not {tuple(shape)}")
    return out


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """The global array of one process's data (the whole array, in one process)."""
    _check_one_device(sharding, "make_array_from_process_local_data")
    out = numpy.asarray(local_data)
    if global_shape is not None and tuple(global_shape) != tuple(out.shape):
        raise ValueError(f"make_array_from_process_local_data: global_shape {global_shape} "
                         f"differs from the local data's {tuple(out.shape)} (one process)")
    return out


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
