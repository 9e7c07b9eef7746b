"""``jax.extend.mlir.ir`` (``wjax/_src/lib/mlir/ir.py``)."""
from ..._src.lib.mlir.ir import *  # noqa: F401,F403
from ..._src.lib.mlir.ir import evaluate  # noqa: F401
