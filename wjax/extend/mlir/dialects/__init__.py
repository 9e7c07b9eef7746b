"""``jax.extend.mlir.dialects``: ``func`` and ``stablehlo`` (``wjax/_src/lib/mlir``)."""
from . import func, stablehlo  # noqa: F401

__all__ = ["func", "stablehlo"]
