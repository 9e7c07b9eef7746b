"""Array manipulation built on reductions and searching: ``pad`` (its statistic modes
reduce), ``repeat`` (``total_repeat_length`` searches), ``compress`` and ``extract``.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from ._util import _concrete, _f32, _is_array
from .creation import _arraylike, arange, asarray, astype, broadcast_to, zeros
from . import ufuncs
from .ufuncs import add, minimum, multiply, subtract
from .shapes import _axis, _fit_length, _take_axis, concatenate, ravel, reshape, take
from . import reductions
from .reductions import mean, median
from .sorting import _searchsorted_1d, nonzero


def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
    a = _arraylike("repeat", a)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a.ndim)
    n = a.shape[ax]
    if isinstance(repeats, (int, np.integer)) or (not _is_array(repeats) and np.ndim(repeats) == 0):
        r = int(repeats)
        if r < 0:   # JAX's class (its broadcast_in_dim rejects the shape)
            raise TypeError(f"repeats may not contain negative values, got {r}.")
        shape = a.shape[:ax + 1] + (r,) + a.shape[ax + 1:]
        b = lax.broadcast_in_dim(a, shape, tuple(i for i in range(len(shape)) if i != ax + 1))
        out = reshape(b, a.shape[:ax] + (n * r,) + a.shape[ax + 1:])
        if total_repeat_length is not None:
            out = _fit_length(out, ax, total_repeat_length)
        return out
    reps = _arraylike("repeat", repeats)
    if reps.ndim == 0:
        reps = broadcast_to(reps, (n,))
    if reps.shape != (n,):
        raise ValueError(f"repeats shape {reps.shape} does not match the size {n} of axis {axis}")
    if total_repeat_length is None:
        total = int(
            _concrete(
                reductions.sum(reps),
                "jnp.repeat with array repeats needs total_repeat_length under jit",
            )
        )
    else:
        total = operator.index(total_repeat_length)
    if total == 0 or n == 0:
        return (
            zeros(a.shape[:ax] + (total,) + a.shape[ax + 1 :], a.dtype)
            if n == 0 or total == 0
            else a
        )
    ends = lax.cumsum(astype(reps, np.int32), 0)
    pos = lax.iota(np.int32, total)
    src = minimum(_searchsorted_1d(ends, pos, "right"), n - 1)
    return _take_axis(a, src, ax)


def _pad_widths(pad_width, nd):
    pw = np.asarray(pad_width.tolist() if _is_array(pad_width) else pad_width, dtype=object)
    try:
        pw = np.broadcast_to(np.asarray(pw, dtype=np.int64), (nd, 2))
    except (ValueError, TypeError):
        raise ValueError(f"jnp.pad: pad_width {pad_width!r} cannot be broadcast to the array of "
                         f"rank {nd}, which needs shape ({nd}, 2)") from None
    if (pw < 0).any():
        raise ValueError(f"index can't contain negative values: pad_width={pad_width!r}")
    return [(int(lo), int(hi)) for lo, hi in pw]


_PAD_KWARGS = {
    "constant": {"constant_values"},
    "edge": set(),
    "wrap": set(),
    "empty": set(),
    "reflect": {"reflect_type"},
    "symmetric": {"reflect_type"},
    "linear_ramp": {"end_values"},
    "maximum": {"stat_length"},
    "minimum": {"stat_length"},
    "mean": {"stat_length"},
    "median": {"stat_length"},
}


def pad(array, pad_width, mode="constant", **kwargs):
    a = _arraylike("pad", array)
    if callable(mode):
        raise NotImplementedError("jnp.pad with a callable mode is not supported")
    widths = _pad_widths(pad_width, a.ndim)
    if mode not in _PAD_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    bad = set(kwargs) - _PAD_KWARGS[mode]
    if bad:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {sorted(bad)}")
    if mode in ("constant", "empty"):
        return _pad_constant(a, widths, kwargs.get("constant_values", 0))
    for ax, (lo, hi) in enumerate(widths):
        if lo == hi == 0:
            continue
        n = a.shape[ax]
        if n == 0:
            raise ValueError(
                f"can't extend empty axis {ax} using modes other than 'constant' or 'empty'")
        if mode in ("edge", "wrap", "reflect", "symmetric"):
            rt = kwargs.get("reflect_type", "even")
            if rt not in ("even", "odd"):
                raise ValueError(f"reflect_type must be 'even' or 'odd', got {rt!r}")
            src = np.pad(np.arange(n), (lo, hi), mode=mode)
            out = _take_axis(a, src.astype(np.int32), ax)
            if rt == "odd" and mode in ("reflect", "symmetric"):
                out = _odd_reflect(a, out, ax, n, lo, hi, mode)
            a = out
        elif mode == "linear_ramp":
            ev = np.broadcast_to(np.asarray(kwargs.get("end_values", 0)), (a.ndim, 2))[ax]
            a = _pad_linear_ramp(a, ax, lo, hi, ev)
        else:
            sl = kwargs.get("stat_length", None)
            sls = np.broadcast_to(np.asarray(n if sl is None else sl, dtype=object), (a.ndim, 2))
            a = _pad_statistic(a, ax, lo, hi, mode, sls[ax])
    return a


def _pad_constant(a, widths, cv):
    if _is_array(cv) and cv.ndim == 0 or np.ndim(cv) == 0:
        v = astype(asarray(cv), a.dtype) if _is_array(cv) else np.asarray(cv).astype(a.dtype)
        return lax.pad(a, v, [(lo, hi, 0) for lo, hi in widths])
    cvs = np.broadcast_to(np.asarray(cv.tolist() if _is_array(cv) else cv), (a.ndim, 2))
    for ax, (lo, hi) in enumerate(widths):
        for side, w in ((0, lo), (1, hi)):
            if w:
                cfg = [(0, 0, 0)] * a.ndim
                cfg[ax] = (w, 0, 0) if side == 0 else (0, w, 0)
                a = lax.pad(a, np.asarray(cvs[ax][side]).astype(a.dtype), cfg)
    return a


def _pad_linear_ramp(a, ax, lo, hi, ev):
    """Ramps from the end values ``ev`` to the edge values along axis ``ax``."""
    n = a.shape[ax]
    edge_lo = lax.slice_in_dim(a, 0, 1, 1, ax)
    edge_hi = lax.slice_in_dim(a, n - 1, n, 1, ax)
    parts = []
    if lo:
        t = reshape(arange(lo, dtype=_f32) / lo, [lo if i == ax else 1 for i in range(a.ndim)])
        parts.append(astype(add(ev[0], multiply(t, subtract(edge_lo, ev[0]))), a.dtype))
    parts.append(a)
    if hi:
        t = reshape(arange(hi - 1, -1, -1, dtype=_f32) / hi,
                    [hi if i == ax else 1 for i in range(a.ndim)])
        parts.append(astype(add(ev[1], multiply(t, subtract(edge_hi, ev[1]))), a.dtype))
    return concatenate(parts, axis=ax)


def _pad_statistic(a, ax, lo, hi, mode, stat_lengths):
    """Pads with a statistic (max, min, mean, median) of the ``stat_length`` values nearest
    each edge along axis ``ax``."""
    n = a.shape[ax]
    red = {"maximum": reductions.max, "minimum": reductions.min, "mean": mean,
           "median": median}[mode]
    parts = []
    for side, w in ((0, lo), (1, hi)):
        if not w:
            continue
        L = builtins.min(int(stat_lengths[side] if stat_lengths[side] is not None else n), n)
        if L <= 0:
            raise ValueError("stat_length of 0 yields no value for padding")
        win = (lax.slice_in_dim(a, 0, L, 1, ax) if side == 0
               else lax.slice_in_dim(a, n - L, n, 1, ax))
        v = red(win, axis=ax, keepdims=True)
        if mode in ("mean", "median") and dtypes.is_int(a.dtype):
            v = ufuncs.round(v)
        v = astype(v, a.dtype)
        shape = list(a.shape)
        shape[ax] = w
        parts.append((side, broadcast_to(v, tuple(shape))))
    pre = [p for s, p in parts if s == 0]
    post = [p for s, p in parts if s == 1]
    return concatenate(pre + [a] + post, axis=ax)


def _odd_reflect(a, even, ax, n, lo, hi, mode):
    # odd reflection: 2 * edge - mirrored value, applied once per period as NumPy does
    if lo > n - 1 or hi > n - 1:
        raise NotImplementedError(
            "jnp.pad reflect_type='odd' with pad widths beyond one reflection"
        )
    parts = []
    first = lax.slice_in_dim(a, 0, 1, 1, ax)
    last = lax.slice_in_dim(a, n - 1, n, 1, ax)
    if lo:
        seg = lax.slice_in_dim(even, 0, lo, 1, ax)
        parts.append(subtract(multiply(2, first), seg))
    parts.append(a)
    if hi:
        seg = lax.slice_in_dim(even, lo + n, lo + n + hi, 1, ax)
        parts.append(subtract(multiply(2, last), seg))
    return concatenate(parts, axis=ax)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    cond = _arraylike("compress", condition)
    if cond.ndim != 1:
        raise ValueError("condition must be a 1D array")
    a = _arraylike("compress", a)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axis(axis, a.ndim)
    cond = cond[:a.shape[ax]] if cond.shape[0] > a.shape[ax] else cond
    idx, = nonzero(cond, size=size, fill_value=a.shape[ax] if size is not None else None)
    r = take(a, idx, axis=ax, mode="fill", fill_value=fill_value)
    return r


def extract(condition, arr, *, size=None, fill_value=0):
    return compress(
        ravel(_arraylike("extract", condition)),
        ravel(_arraylike("extract", arr)),
        size=size,
        fill_value=fill_value,
    )


__all__ = [
    "repeat", "pad", "compress", "extract",
]
