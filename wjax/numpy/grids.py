"""Ranges and grids: ``linspace``, ``logspace``, ``geomspace``, ``meshgrid``, ``indices``,
``vander`` and ``ravel_multi_index``.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import lax
from ..core import dtypes
from ._util import _f32, broadcast_shapes
from .creation import _arraylike, _dt, asarray, astype, broadcast_to, ones_like, zeros
from . import ufuncs
from .ufuncs import add, clip, log10, mod, multiply, power
from .shapes import flip, moveaxis, reshape, stack


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    dt = _dt(dtype, np.float32)
    start_a = asarray(start, np.float32)
    stop_a = asarray(stop, np.float32)
    div = (num - 1) if endpoint else num
    i = lax.convert_element_type(lax.iota(np.int32, num), np.float32)
    shape = broadcast_shapes(start_a.shape, stop_a.shape)
    st = broadcast_to(start_a, shape)
    sp = broadcast_to(stop_a, shape)
    step = (sp - st) / builtins.max(div, 1)
    i = reshape(i, (num,) + (1,) * len(shape))
    out = st[None] + i * step[None]
    if endpoint and num > 1:
        out = out.at[-1].set(sp)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    out = astype(out, dt) if dt != np.float32 else out
    return (out, astype(step, dt)) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    return astype(
        power(base, linspace(start, stop, num, endpoint, axis=axis)), _dt(dtype, np.float32)
    )


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    args = [asarray(x) for x in xi]
    if any(a.ndim != 1 for a in args):
        raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                         f"{[a.shape for a in args]}")
    if not args:
        return []
    shape = [a.shape[0] for a in args]
    if indexing == "xy" and len(args) >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(args):
        d = i
        if indexing == "xy" and len(args) >= 2 and i < 2:
            d = 1 - i
        if sparse:
            s = [1] * len(args)
            s[d] = a.shape[0]
            out.append(reshape(a, s))
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (d,)))
    return out


def vander(x, N=None, increasing=False):
    x = _arraylike("vander", x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array")
    N = x.shape[0] if N is None else operator.index(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    if N == 0:
        return zeros((x.shape[0], 0), x.dtype)
    cols = [ones_like(x)]
    for _ in range(1, N):
        cols.append(multiply(cols[-1], x))
    out = stack(cols, axis=1)
    return out if increasing else flip(out, 1)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    start, stop = asarray(start, _f32), asarray(stop, _f32)
    sign = ufuncs.sign(start)
    ls = logspace(
        log10(ufuncs.abs(start)), log10(ufuncs.abs(stop)), num, endpoint=endpoint, axis=axis
    )
    out = multiply(sign, ls)
    if num > 0:
        out = out.at[0].set(start) if axis == 0 else out
        if endpoint and num > 1 and axis == 0:
            out = out.at[-1].set(stop)
    return astype(out, dtype) if dtype is not None else out


def indices(dimensions, dtype=None, sparse=False):
    dt = np.dtype(np.int32) if dtype is None else dtypes.check_supported(dtype)
    dims = tuple(dimensions)
    out = []
    for i, n in enumerate(dims):
        if sparse:
            s = [1] * len(dims)
            s[i] = n
            out.append(reshape(lax.iota(dt, n), s))
        else:
            out.append(lax.broadcasted_iota(dt, dims, i))
    return tuple(out) if sparse else (stack(out) if out else zeros((0,), dt))


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    out = None
    stride = 1
    for i, d in zip(reversed(multi_index), reversed(tuple(dims))):
        i = asarray(i)
        if mode == "clip":
            i = clip(i, 0, d - 1)
        elif mode == "wrap":
            i = mod(i, d)
        t = multiply(i, stride)
        out = t if out is None else add(out, t)
        stride *= d
    return out


__all__ = [
    "linspace", "logspace", "meshgrid", "vander", "geomspace", "indices", "ravel_multi_index",
]
