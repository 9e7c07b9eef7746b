"""``jax._src.lib.mlir.dialects`` (see ``wjax/_src/lib/__init__.py``)."""
from . import hlo  # noqa: F401
