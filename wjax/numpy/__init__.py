"""wjax.numpy: JAX's ``jax.numpy`` on WebGPU."""
from ._core import *  # noqa: F401,F403
from ._core import (abs, all, any, divmod, max, min, round, sum, bool, bool_,  # noqa: F401
                    ndarray)
from .indexing import getitem as _getitem  # noqa: F401
from .extra import *  # noqa: F401,F403  (issue 3: more ufuncs, reductions, shapes, sort, ...)
from .extra import __array_api_version__  # noqa: F401

from . import linalg  # noqa: E402,F401


def _public(mod):
    return [n for n in dir(mod) if not n.startswith("_")]


from . import _core as __core  # noqa: E402

from . import extra as __extra  # noqa: E402

__all__ = _public(__core) + list(__extra.__all__)


import sys as _sys  # noqa: E402

from . import array_methods as _array_methods  # noqa: E402

_array_methods.install_all(_sys.modules[__name__])   # operators and methods of Array and Tracer
