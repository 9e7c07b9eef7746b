"""wjax's engines, and ``jax._src`` for the libraries that import JAX's private modules.

The engines (docs/DESIGN.md, "Layers"): ``core`` (IR, primitive contract, tracing, dtypes,
pytrees, config), ``transforms`` (jaxpr rewrites), ``backend`` (Target, WGSL lowering, the
runtime that owns wgpu), ``prims`` (one block per primitive), ``array``, ``dispatch``, ``api``
(jit, grad, vmap, custom derivatives), ``spmd`` and ``partition`` (many devices).  The public
modules at the top of ``wjax/`` re-export them under JAX's names.

Beside them, thin modules with the few names libraries import from JAX's internals by path
(``jax._src.dtypes``, ``tree_util``, ``util``, ``checkify``, ``traceback_util``, ``state``):
equinox, chex and flax do."""
from . import core  # noqa: F401  (jax._src.core: the IR and tracing, JAX's names on it)
from .backend import compiler  # noqa: F401  (jax._src.compiler: the compile entry point)
from . import tree_util  # noqa: F401  (jax._src.tree_util: the node registry)
