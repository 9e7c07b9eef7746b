"""``jax._src.lax.lax``: the lax functions (``wjax.lax``), under JAX's internal module name."""
from ...lax import *  # noqa: F401,F403
from ...lax import __all__  # noqa: F401
