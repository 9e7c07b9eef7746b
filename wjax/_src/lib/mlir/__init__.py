"""``jax._src.lib.mlir`` (see ``ir.py``): MLIR's Python API as JAX's tutorials use it."""
from . import ir, dialects  # noqa: F401
