"""``jax._src.dtypes``: JAX's private dtype module, as libraries use it (wjax's dtype rules:
``wjax/_src/core/dtypes.py``)."""
import numpy as np

from .core.dtypes import (DType, ExtendedDType, TypePromotionError, canonicalize_dtype, extended,
                          finfo, iinfo, issubdtype, prng_key)

__all__ = ["DType", "ExtendedDType", "TypePromotionError", "canonicalize_dtype", "extended",
           "finfo", "iinfo", "issubdtype", "prng_key", "supports_inf"]


def supports_inf(dtype) -> bool:
    """Whether a floating dtype has infinities (every float dtype wjax has)."""
    return bool(issubdtype(dtype, np.floating))
