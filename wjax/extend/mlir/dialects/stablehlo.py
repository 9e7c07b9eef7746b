"""``jax.extend.mlir.dialects.stablehlo`` (``wjax/_src/lib/mlir/dialects/hlo.py``)."""
from ...._src.lib.mlir.dialects.hlo import *  # noqa: F401,F403
