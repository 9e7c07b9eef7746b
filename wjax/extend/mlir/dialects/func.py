"""``jax.extend.mlir.dialects.func`` (``wjax/_src/lib/mlir/dialects/func.py``)."""
from ...._src.lib.mlir.dialects.func import *  # noqa: F401,F403
