"""``jax._src.dtypes``: the promotion error class (wjax's dtype rules: ``wjax/core/dtypes.py``)."""
from ..core.dtypes import TypePromotionError, canonicalize_dtype

__all__ = ["TypePromotionError", "canonicalize_dtype"]
