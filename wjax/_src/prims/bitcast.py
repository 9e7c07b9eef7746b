"""bitcast_convert_type: reinterpret the bits of an array as another dtype of the same width.

Fusable: a WGSL ``bitcast<T>(x)`` for 32-bit types.  Narrow integers (held
widened in 32-bit lanes) reinterpret by re-wrapping to the new width; bfloat16 (the top half of
an f32 lane) moves its 16 bits to or from the low half of an integer lane.  Casts
between widths (which change the shape in JAX) and float16 are not supported.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..backend import wgsl as W
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from ..transforms.ad import defjvp_zero as _defjvp_zero

bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _check(x_dtype, new_dtype):
    src, dst = np.dtype(x_dtype), np.dtype(new_dtype)
    if src == np.bool_ or dst == np.bool_:
        raise TypeError("bitcast_convert_type does not accept bool operands or results")
    if src.kind == "c" or dst.kind == "c":        # as JAX, unless the dtypes are equal
        if src != dst:
            raise TypeError("lax.bitcast_convert_type does not support bool or complex values "
                            "unless the operand and destination types match.")
        return dst
    if src.itemsize != dst.itemsize:
        raise NotImplementedError(
            f"wjax: bitcast_convert_type between widths ({src.name} -> {dst.name}) is not supported"
        )
    if (src == np.float16) != (dst == np.float16):
        raise NotImplementedError("wjax: bitcast_convert_type to or from float16 is not supported")
    return dst


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract(x, new_dtype):
    return ShapedArray(x.shape, _check(x.dtype, dtypes.check_supported(new_dtype)))


@bitcast_convert_type_p.def_fuse
def _bitcast_fuse(kb, idx, read, in_avals, out_aval, new_dtype):
    src, dst = np.dtype(in_avals[0].dtype), np.dtype(out_aval.dtype)
    e = read[0](idx)
    if src == dst:
        return e
    if src == dtypes.bfloat16:    # a bf16 value is an f32 whose low 16 bits are zero
        return (f"(bitcast<u32>({e}) >> 16u)" if dst == np.uint16
                else f"(bitcast<i32>({e}) >> 16u)")
    if dst == dtypes.bfloat16:
        return f"bitcast<f32>(u32({e}) << 16u)"
    if src.itemsize == 4 or W.storage_type(src) != W.storage_type(dst):
        return W.wrap_narrow(f"bitcast<{W.value_type(dst)}>({e})", dst)
    return W.wrap_narrow(e, dst)


def _bitcast_reference(x, new_dtype):
    """NumPy's ``view`` with JAX's shapes: equal widths keep the shape (0-d included), a
    narrower target adds a last axis, a wider one consumes it."""
    x = np.asarray(x)
    src, dst = x.dtype, np.dtype(new_dtype)
    y = np.ascontiguousarray(x).view(dst)
    if src.itemsize == dst.itemsize:
        return y.reshape(x.shape)
    if src.itemsize > dst.itemsize:
        return y.reshape(x.shape + (src.itemsize // dst.itemsize,))
    return y.reshape(x.shape[:-1])


bitcast_convert_type_p.reference = _bitcast_reference
_batching.defvectorized(bitcast_convert_type_p)


# autodiff: reinterpreting bits is not differentiable (JAX gives a zero tangent too)

_defjvp_zero(bitcast_convert_type_p)
