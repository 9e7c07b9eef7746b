"""wjax: JAX's programming model on any GPU, through WebGPU.

    import wjax as jax
    import wjax.numpy as jnp
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import dtypes, tree, tree_util  # noqa: F401
from . import prims as _prims  # noqa: F401  (registers every primitive)
from . import dispatch as _dispatch  # noqa: F401  (runs primitives eagerly)
from .core.config import config, disable_jit  # noqa: F401
from .array import Array, Device, live_arrays  # noqa: F401
from .core.ir import ShapedArray, ShapeDtypeStruct  # noqa: F401
from .core.tracing import make_jaxpr  # noqa: F401
from . import lax, numpy  # noqa: F401
from .api import (checkpoint, checkpoint_policies, clear_caches, closure_convert,  # noqa: F401
                  custom_jvp, custom_vjp, eval_shape, grad, hessian, jacfwd, jacrev, jit, jvp,
                  linearize, remat, value_and_grad, vjp, vmap)
from . import ad_checkpoint, custom_derivatives  # noqa: F401
from .core.errors import (ConcretizationTypeError, NonConcreteBooleanIndexError,  # noqa: F401
                          TracerArrayConversionError, TracerBoolConversionError,
                          TracerIntegerConversionError, UnexpectedTracerError)
from . import errors  # noqa: F401


def devices(backend=None):
    """The devices wjax can run on (one WebGPU device)."""
    return [default_device()]


def local_devices(process_index=None, backend=None):
    return devices()


def device_count(backend=None):
    return 1


def local_device_count(backend=None):
    return 1


def default_backend() -> str:
    return "webgpu"


def block_until_ready(x):
    runtime.get().synchronize()
    return x


def device_put(x, device=None):
    return tree_util.tree_map(lambda a: a if isinstance(a, Array) else numpy.asarray(a), x)


def device_get(x):
    import numpy as _np
    return tree_util.tree_map(lambda a: _np.asarray(a) if isinstance(a, Array) else a, x)
from . import random, nn, scipy  # noqa: E402,F401  (jax.random, jax.nn, jax.scipy)

from .array import default_device
from .backend import runtime