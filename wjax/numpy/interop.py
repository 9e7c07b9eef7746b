"""The array API's inspection namespace (``jnp.__array_namespace_info__()``) and DLPack
import (``jnp.from_dlpack``); exports are ``Array.__dlpack__`` (a host copy: WebGPU memory has
no DLPack device type) and ``Array.to_device``."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._src.array import Array, default_device
from .creation import array, asarray

__all__ = ["from_dlpack"]

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32"),
    "unsigned integer": ("uint8", "uint16", "uint32"),
    "integral": ("int8", "int16", "int32", "uint8", "uint16", "uint32"),
    "real floating": ("float32",),
    "complex floating": ("complex64",),
    "numeric": ("int8", "int16", "int32", "uint8", "uint16", "uint32", "float32", "complex64"),
}


class ArrayNamespaceInfo:
    """What ``wjax.numpy`` supports, as the array API standard asks."""

    def capabilities(self) -> dict:
        # boolean masks work eagerly but not under jit (data-dependent shapes), as in JAX
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 32}

    def default_device(self) -> Any:
        return None

    def devices(self) -> list:
        return [None, default_device()]

    def default_dtypes(self, *, device: Any = None) -> dict:
        return {"real floating": np.dtype("float32"), "complex floating": np.dtype("complex64"),
                "integral": np.dtype("int32"), "indexing": np.dtype("int32")}

    def dtypes(self, *, device: Any = None, kind: str | tuple | None = None) -> dict:
        """The dtypes of ``kind`` (a kind name or a tuple of them; every dtype when None)."""
        if kind is None:
            names = _KINDS["numeric"] + _KINDS["bool"]
        else:
            names = ()
            for k in (kind if isinstance(kind, tuple) else (kind,)):
                names += _KINDS[k]        # KeyError for an unknown kind, as in JAX
        return {n: np.dtype(n) for n in dict.fromkeys(names)}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    return ArrayNamespaceInfo()


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """An array from any object exporting DLPack (NumPy arrays, torch tensors, ...), read
    through the host."""
    if isinstance(x, Array):
        return array(x) if copy else x
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not support the DLPack protocol "
                        "(no __dlpack__)")
    host = np.from_dlpack(x)
    out = asarray(host)
    return out.to_device(device) if device is not None else out
