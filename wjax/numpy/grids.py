"""Ranges and grids: ``linspace``, ``logspace``, ``geomspace``, ``meshgrid``, ``indices``,
``vander`` and ``ravel_multi_index``.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from ._util import _f32, broadcast_shapes
from .creation import _arraylike, _dt, asarray, astype, broadcast_to, ones_like, zeros
from . import ufuncs
from .ufuncs import add, clip, log10, mod, multiply, power
from .shapes import flip, reshape, stack


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """JAX's linspace: ``start * (1 - t) + stop * t`` in the computation dtype (the inexact
    form of ``dtype``, by default of the endpoints' dtypes), so bf16 and float16 grids have
    JAX's roundings; integer outputs are floored; ``retstep`` gives the step in the
    computation dtype."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = asarray(start), asarray(stop)
    dt = _inexact_dt(dtypes.result_type(start, stop)) if dtype is None else _dt(dtype)
    cdt = _inexact_dt(dt)
    start, stop = astype(start, cdt), astype(stop, cdt)
    shape = list(broadcast_shapes(start.shape, stop.shape))
    bstart, bstop = broadcast_to(start, shape), broadcast_to(stop, shape)
    axis = len(shape) + axis + 1 if axis < 0 else axis
    bounds = list(shape)
    bounds.insert(axis, 1)
    div = (num - 1) if endpoint else num
    if num > 1:
        delta = lax.div(lax.sub(stop, start), asarray(div, cdt))
        rdt = np.dtype(np.float32) if dtypes.is_complex(cdt) else cdt
        iota_shape = [1] * len(bounds)
        iota_shape[axis] = div
        t = astype(lax.div(reshape(lax.iota(rdt, div), iota_shape), asarray(div, rdt)), cdt)
        out = add(multiply(reshape(bstart, bounds), 1 - t), multiply(reshape(bstop, bounds), t))
        if endpoint:
            out = lax.concatenate([out, reshape(bstop, bounds)], axis)
    elif num == 1:
        delta = asarray(np.nan if endpoint else stop - start, cdt)
        out = reshape(bstart, bounds)
    else:
        delta = asarray(np.nan, cdt)
        out = zeros(shape[:axis] + [0] + shape[axis:], dt)
    if dtypes.is_int(dt) and not dtypes.is_int(out.dtype):
        out = lax.floor(out)
    out = astype(out, dt)
    return (out, delta) if retstep else out


def _inexact_dt(dt):
    """A dtype's inexact form: itself if float or complex, else the default float."""
    return np.dtype(dt) if dtypes.is_inexact(dt) else np.dtype(np.float32)


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
