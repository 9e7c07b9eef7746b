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
from . import debug, profiler, stages, typing, version
from . import extend, interpreters
from .api.callbacks import pure_callback
from .api import (checkpoint, checkpoint_policies, clear_caches, closure_convert, custom_jvp,
                  custom_vjp, eval_shape, grad, hessian, jacfwd, jacrev, jit, jvp, linearize,
                  pmap, remat, value_and_grad, vjp, vmap)
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
from .ref import Ref, freeze, new_ref
from .api.vectorize import vectorize as _vectorize
from .api import linalg as _linalg_rules

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


def device_put(x, device=None):
    return tree_util.tree_map(lambda a: a if isinstance(a, _Array) else numpy.asarray(a), x)


def device_get(x):
    return tree_util.tree_map(lambda a: _np.asarray(a) if isinstance(a, _Array) else a, x)
