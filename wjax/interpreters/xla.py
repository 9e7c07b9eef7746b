"""``jax.interpreters.xla``: what is left of it in JAX -- ``canonicalize_dtype_handlers``, the
registry of how host values of each type take the dtypes the device holds (libraries add
their own array types; wjax/_src/core/dtypes.py)."""
from .._src.core.dtypes import canonicalize_value_handlers as canonicalize_dtype_handlers

__all__ = ["canonicalize_dtype_handlers"]
