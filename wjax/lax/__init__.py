"""``jax.lax``: the functions over primitives (``wjax/_src/core/ops.py``, re-exported here),
control flow (``wjax/lax/control.py``) and convolutions.
"""
from __future__ import annotations

import builtins
import enum
import math as _math
from typing import Sequence as _Sequence

import numpy as np

from .._src.api.sharding import with_sharding_constraint  # noqa: F401
from .._src.core import dtypes, ops
from .._src.core import ops as _ops
from .._src.core.ir import raise_to_shaped
from .._src.core.ops import *  # noqa: F403  (the lax-level functions)
from .._src.core.ops import RoundingMethod, _const, _operands, convert_element_type, rev, transpose
from .._src.core.primitive import REGISTRY
from .._src.prims import conv as _C
from .._src.prims.fft import fft_p
from .._src.prims.conv import (ConvDimensionNumbers, conv_dimension_numbers,
                               conv_general_permutations)
from .._src.prims.indexing import GatherDimensionNumbers, ScatterDimensionNumbers
from .control import cond, fori_loop, map, scan, switch, while_loop
from .windowed import reduce_window, reduce_window_shape_tuple
from . import linalg
from .extras import *  # noqa: F403  (constructors, shape helpers, reduce, associative_scan...)
from .solves import custom_linear_solve, custom_root
from .parallel import (all_gather, all_to_all, axis_index, axis_size, pcast, pmax, pmean, pmin,
                       ppermute, pshuffle, psum, psum_scatter, pswapaxes, pvary)


class Precision(enum.Enum):
    """Matmul/conv precision (``lax.Precision.HIGHEST``, or a name such as ``"float32"``).
    wjax computes in float32 at every level; the parameter is accepted as JAX's is."""
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        names = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT,
                 "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
                 "highest": cls.HIGHEST, "float32": cls.HIGHEST}
        return names.get(value) if isinstance(value, str) else None

    def __str__(self):
        return self.name


def _aval(x):
    return raise_to_shaped(x)


# --------------------------------------------------------------------------- cumulative, sort, conv
# (issue 3: primitives in prims/cumulative.py, prims/sort.py, prims/conv.py, prims/special.py)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    return _C.padtype_to_pads(in_shape, window_shape, window_strides, padding)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    la, ra = _aval(lhs), _aval(rhs)
    dnums = _C.conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    lhs_dilation = (1,) * nsp if lhs_dilation is None else tuple(int(d) for d in lhs_dilation)
    rhs_dilation = (1,) * nsp if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    window_strides = tuple(int(s) for s in window_strides)
    if isinstance(padding, str):
        if builtins.any(d != 1 for d in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution using "
                             "this op. Please either exactly specify the required padding or use "
                             "conv_transpose.")
        k_sp = [ra.shape[d] for d in dnums.rhs_spec[2:]]
        eff = [0 if k == 0 else 1 + r * (k - 1) for k, r in zip(k_sp, rhs_dilation)]
        padding = _C.padtype_to_pads([la.shape[d] for d in dnums.lhs_spec[2:]], eff,
                                     window_strides, padding)
    else:
        try:
            padding = tuple((int(lo), int(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise ValueError("padding argument to conv_general_dilated should be a string or a "
                             f"sequence of (low, high) pairs, got {padding}") from None
    pet = (
        dtypes.check_supported(preferred_element_type)
        if preferred_element_type is not None
        else None
    )
    if pet is not None and la.dtype != ra.dtype:
        lhs, rhs = convert_element_type(lhs, pet), convert_element_type(rhs, pet)
    return _C.conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=None, preferred_element_type=pet, out_sharding=None)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _stride_dim(d: int, w: int, s: int) -> int:
    return builtins.max(0, (d - w) // s + 1)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1) -> tuple:
    """The output shape of a convolution of operands in (N, C, spatial...) order."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if builtins.any(d < 0 for d in padded):
        raise ValueError(f"Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
    space = tuple(_stride_dim(d, w, s) for d, w, s in zip(padded, rhs_shape[2:], strides))
    return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + space


def _permuted(shapes_perms):
    return [tuple(int(shape[i]) for i in perm) for shape, perm in shapes_perms]


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers) -> tuple:
    """The output shape of ``conv_general_dilated`` (no dilation) in ``dimension_numbers``."""
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = _permuted([(lhs_shape, lp), (rhs_shape, rp)])
    out = conv_shape_tuple(lt, rt, window_strides, padding)
    return tuple(out[i] for i in np.argsort(op))


def _conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
    """The padding of the dilated convolution that transposes a forward one padded so."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
    elif padding == "VALID":
        pad_len = k + s - 2 + builtins.max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], builtins.sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return pad_a, pad_len - pad_a


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers) -> tuple:
    """The output shape of ``conv_transpose``."""
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = _permuted([(lhs_shape, lp), (rhs_shape, rp)])
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding)
                   for k, s in zip(rt[2:], window_strides)]
    space = [(i - 1) * s - k + 2 + builtins.sum(p)
             for i, k, s, p in zip(lt[2:], rt[2:], window_strides, padding)]
    out = (lt[0], rt[0]) + tuple(space)
    return tuple(out[i] for i in np.argsort(op))


_TRANSPOSE_DEFAULT_DN = {3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                         5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel: bool = False, precision=None, preferred_element_type=None):
    """A transposed convolution (the gradient of a strided convolution with respect to its
    input): ``conv_general_dilated`` with the input dilated by ``strides``."""
    la, ra = _aval(lhs), _aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise TypeError(f"conv_transpose: operands must have one rank >= 2, got {la.shape} and "
                        f"{ra.shape}")
    nd = la.ndim
    if dimension_numbers is None:
        if nd not in _TRANSPOSE_DEFAULT_DN:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DN[nd]
    dn = _C.conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    k_sp = [ra.shape[i] for i in dn.rhs_spec[2:]]
    rhs_dilation = (1,) * (nd - 2) if rhs_dilation is None else tuple(rhs_dilation)
    eff = [(k - 1) * r + 1 for k, r in zip(k_sp, rhs_dilation)]
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            raise ValueError(f"Invalid padding mode: {padding}")
        pads = [_conv_transpose_padding(k, s, padding) for k, s in zip(eff, strides)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose(rhs, tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, lhs_dilation=tuple(strides),
                                rhs_dilation=rhs_dilation, dimension_numbers=dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# --------------------------------------------------------------------------- patch convolutions

def conv_general_dilated_patches(lhs, filter_shape: _Sequence[int], window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                                 precision=None, preferred_element_type=None):
    """The patches a convolution with ``filter_shape`` would see, flattened into the output's
    feature dimension in the order (input channel, filter positions): a grouped convolution
    with a one-hot kernel."""
    la = _aval(lhs)
    filter_shape = tuple(int(f) for f in filter_shape)
    dn = _C.conv_dimension_numbers(la.shape, (1, 1) + filter_shape, dimension_numbers)
    k = _math.prod(filter_shape)
    c = la.shape[dn.lhs_spec[1]]
    eye = _ops.eye(k, la.dtype)                                      # (K, K)
    kern = _ops.broadcast_in_dim(eye, (c, k, k), (1, 2))
    kern = _ops.reshape(kern, (c * k, 1) + filter_shape)            # O I spatial...
    # place O, I and the spatial axes where the rhs spec puts them
    perm = [0] * (2 + len(filter_shape))
    for src, dst in enumerate(dn.rhs_spec):
        perm[dst] = src
    kern = _ops.transpose(kern, tuple(perm))
    return conv_general_dilated(lhs, kern, window_strides, padding, lhs_dilation, rhs_dilation,
                                dn, feature_group_count=c, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """An unshared (locally connected) convolution: a separate kernel at every output
    position; ``rhs``'s spatial axes are the output's, its ``I`` axis the flattened patch."""
    la = _aval(lhs)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers)
    dn = _C.conv_dimension_numbers(la.shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    lhs_b = list(dn.out_spec[2:])
    rhs_b = list(dn.rhs_spec[2:])
    order = sorted(range(len(lhs_b)), key=lambda i: lhs_b[i])
    rhs_b = [rhs_b[i] for i in order]
    lhs_b = sorted(lhs_b)
    out = _ops.dot_general(patches, rhs, (((dn.out_spec[1],), (dn.rhs_spec[1],)),
                                         (tuple(lhs_b), tuple(rhs_b))), precision)
    # out: (spatial..., N, O) -> the output layout
    nd = _aval(out).ndim
    src = list(range(nd - 2)) + [nd - 2, nd - 1]
    dst_pos = [None] * nd
    spatial_slots = [i for i in range(nd) if i not in (dn.out_spec[0], dn.out_spec[1])]
    for s, slot in zip(src[:nd - 2], spatial_slots):
        dst_pos[slot] = s
    dst_pos[dn.out_spec[0]] = nd - 2
    dst_pos[dn.out_spec[1]] = nd - 1
    return _ops.transpose(out, tuple(dst_pos))



__all__ = [n for n in dir() if not n.startswith("_")]


linear_solve_p = REGISTRY["custom_linear_solve"]     # JAX's name for it

# every primitive as ``lax.<name>_p`` (``lax.add_p``, ``lax.dot_general_p``), as JAX exports them
for _name, _prim in REGISTRY.items():
    globals().setdefault(f"{_name}_p", _prim)
del _name, _prim
