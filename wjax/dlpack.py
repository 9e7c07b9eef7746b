"""``jax.dlpack``: DLPack import (``from_dlpack``) and the dtypes it carries."""
from __future__ import annotations

import numpy as np

from .numpy.interop import from_dlpack  # noqa: F401

__all__ = ["from_dlpack", "is_supported_dtype"]

_SUPPORTED = {np.dtype(d) for d in ("bool", "int8", "int16", "int32", "uint8", "uint16",
                                    "uint32", "float16", "float32")}


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` can be exchanged through DLPack with wjax."""
    return np.dtype(dtype) in _SUPPORTED
