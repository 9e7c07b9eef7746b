"""``jax._src.lib.mlir`` (see ``wjax/_src/lib/__init__.py``)."""
from . import dialects  # noqa: F401
