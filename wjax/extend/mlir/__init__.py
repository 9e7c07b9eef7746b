"""``jax.extend.mlir``: MLIR's Python API (``ir``, ``dialects.func``, ``dialects.stablehlo``)
as JAX's tutorials build modules with it; wjax's is ``wjax/_src/lib/mlir`` (modules are graphs
of wjax operations, compiled by ``jax._src.xla_bridge``'s backend)."""
from ..._src.lib.mlir import ir  # noqa: F401
from . import dialects  # noqa: F401
