"""Scalar types and dtype names (``jnp.float32(x)`` makes a 0-d array), constants (``pi``,
``inf``, ``newaxis``) and dtype functions (``promote_types``, ``issubdtype``, ``finfo``).
"""
from __future__ import annotations

import numpy as np

from .._src.array import BaseArray
from .._src.core import dtypes
from .creation import asarray


ndarray = BaseArray          # jax.Array: device arrays and tracers


# dtypes, as in jax.numpy
class _ScalarMeta(type):
    """``jnp.float32`` and friends, as in JAX: a dtype-like object (``np.dtype(jnp.float32)``
    works, and it compares equal to ``np.float32``) whose call makes a wjax Array, so
    ``jnp.float32(x)`` also works on traced values."""

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x):
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'wjax.numpy.{cls.__name__}'>"


def _scalar_type(np_type):
    return _ScalarMeta(np.dtype(np_type).name, (object,), {"dtype": np.dtype(np_type)})


bool_ = _scalar_type(np.bool_)


int8, int16, int32, int64 = (_scalar_type(t) for t in (np.int8, np.int16, np.int32, np.int64))


uint8, uint16, uint32, uint64 = (
    _scalar_type(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)
)


float16, float32, float64 = (_scalar_type(t) for t in (np.float16, np.float32, np.float64))


complex64, complex128 = (_scalar_type(t) for t in (np.complex64, np.complex128))
csingle, cdouble, complex_ = complex64, complex128, complex128     # NumPy's other names
ComplexWarning = np.exceptions.ComplexWarning


bfloat16 = _scalar_type(dtypes.bfloat16)   # ml_dtypes' bfloat16, as in JAX

# the narrow formats (ml_dtypes' scalar types, as JAX names them): usable as dtype names, but
# WGSL has no such types, so an array of one is refused (dtypes.check_supported)
_NARROW = ("float4_e2m1fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
           "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
           "float8_e8m0fnu", "int2", "int4", "uint2", "uint4", "int1", "uint1",
           "float6_e2m3fn", "float6_e3m2fn")
for _n in _NARROW:
    if getattr(dtypes._ml_dtypes, _n, None) is not None:
        globals()[_n] = getattr(dtypes._ml_dtypes, _n)


inf, nan, pi, e, euler_gamma = np.inf, np.nan, np.pi, np.e, np.euler_gamma


newaxis = None


dtype = np.dtype


generic, number, integer, signedinteger, unsignedinteger = (
    np.generic,
    np.number,
    np.integer,
    np.signedinteger,
    np.unsignedinteger,
)


inexact, floating, complexfloating, bool = np.inexact, np.floating, np.complexfloating, bool_


promote_types = dtypes.promote_types


issubdtype = dtypes.issubdtype


finfo, iinfo = dtypes.finfo, dtypes.iinfo


__all__ = [
    "ndarray", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "float32", "float64", "complex64", "complex128", "bfloat16",
    "csingle", "cdouble", "complex_", "ComplexWarning",
    *[_n for _n in _NARROW if _n in globals()], "inf",
    "nan", "pi", "e", "euler_gamma", "newaxis", "dtype", "generic", "number", "integer",
    "signedinteger", "unsignedinteger", "inexact", "floating", "complexfloating", "bool",
    "promote_types", "issubdtype", "finfo", "iinfo",
]
