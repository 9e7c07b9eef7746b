"""``jax._src``: the few private JAX modules that libraries import by name (equinox, chex).
Each is a thin module over wjax's own parts, holding only the names those libraries use."""
from .. import core  # noqa: F401  (jax._src.core: the IR and tracing, JAX's names on it)
from ..backend import compiler  # noqa: F401  (jax._src.compiler: the compile entry point)
from . import tree_util  # noqa: F401  (jax._src.tree_util: the node registry)
