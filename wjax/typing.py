"""``jax.typing``: annotations for array-like values and dtype-like values."""
from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from ._src.array import BaseArray as Array


class SupportsDType(Protocol):
    @property
    def dtype(self) -> np.dtype: ...


ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]

__all__ = ["ArrayLike", "DTypeLike"]
