"""``jax.core``: JAX's names for the core's data structures, for programs and libraries that
reach into it (the IR, the primitive contract and tracing live in ``wjax/_src/core/``)."""
from ._src.core import *  # noqa: F403
from ._src.core import __all__  # noqa: F401
