"""``jax._src.lib.mlir.dialects`` (see ``wjax/_src/lib/mlir/ir.py``): ``func`` and ``hlo``
(stablehlo)."""
from . import func, hlo  # noqa: F401

stablehlo = hlo
