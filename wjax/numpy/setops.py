"""Set routines: ``unique`` and its array-API forms, ``union1d``, ``intersect1d``,
``setdiff1d``, ``setxor1d``, ``isin``.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import lax
from .._src.core.ir import WeakScalar
from ._util import _int
from .creation import _arraylike, asarray, astype, full, zeros
from .ufuncs import equal, less, logical_not, minimum, subtract
from .shapes import _take_axis, concatenate, expand_dims, ravel, reshape
from . import reductions
from .sorting import _nonzero_flat, _sorted_unique_mask, _static_size, _unique_axis, where
from .manipulation import compress


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
    a = _arraylike("unique", ar)
    if axis is not None:
        return _unique_axis(a, axis, return_index, return_inverse, return_counts, size, fill_value)
    shape = a.shape
    a = ravel(a)
    n = a.shape[0]
    iota = lax.iota(_int, n)
    if n:
        s, perm = lax.sort_key_val(a, iota, dimension=0)
    else:
        s, perm = a, iota
    mask = _sorted_unique_mask(s, equal_nan)
    size_ = _static_size("unique", size, lambda: reductions.sum(mask, dtype=np.int32))
    pos = _nonzero_flat(mask, size_)
    valid = lax.lt(pos, WeakScalar(np.asarray(n, np.int32)))
    posc = minimum(pos, builtins.max(n - 1, 0))
    if n:
        vals = _take_axis(s, posc, 0)
        fv = s[0] if fill_value is None else astype(asarray(fill_value), a.dtype)
        vals = where(valid, vals, fv)
    else:
        vals = (
            zeros((size_,), a.dtype) if fill_value is None else full((size_,), fill_value, a.dtype)
        )
    out = [vals]
    if return_index:
        if n:
            ind = _take_axis(perm, posc, 0)
            ind = where(valid, ind, perm[0])
        else:
            ind = zeros((size_,), np.int32)
        out.append(ind)
    if return_inverse:
        if n:
            grp = lax.sub(
                lax.cumsum(astype(mask, np.int32), 0), WeakScalar(np.asarray(1, np.int32))
            )
            inv = zeros((n,), np.int32).at[perm].set(grp)
        else:
            inv = zeros((0,), np.int32)
        out.append(reshape(inv, shape))
    if return_counts:
        if n:
            nxt = concatenate([pos[1:], full((1,), n, np.int32)]) if size_ else pos
            nxt = where(less(nxt, n), nxt, n)
            cnt = where(valid, subtract(nxt, pos), 0)
        else:
            cnt = zeros((size_,), np.int32)
        out.append(cnt)
    return out[0] if len(out) == 1 else tuple(out)


def unique_values(x, /, *, size=None, fill_value=None):
    return unique(x, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    from collections import namedtuple
    vals, counts = unique(x, return_counts=True, size=size, fill_value=fill_value)
    return namedtuple("UniqueCountsResult", ["values", "counts"])(vals, counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
    from collections import namedtuple
    vals, inv = unique(x, return_inverse=True, size=size, fill_value=fill_value)
    return namedtuple("UniqueInverseResult", ["values", "inverse_indices"])(vals, inv)


def unique_all(x, /, *, size=None, fill_value=None):
    from collections import namedtuple
    vals, ind, inv, counts = unique(x, return_index=True, return_inverse=True, return_counts=True,
                                    size=size, fill_value=fill_value)
    return namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])(
        vals, ind, inv, counts)


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    e = _arraylike("isin", element)
    t = ravel(_arraylike("isin", test_elements))
    if t.shape[0] == 0:
        return full(e.shape, bool(invert), dtype=bool)
    eq = equal(expand_dims(e, -1), t)
    r = reductions.any(eq, axis=-1)
    return logical_not(r) if invert else r


def in1d(ar1, ar2, assume_unique=False, invert=False):
    return isin(ravel(_arraylike("in1d", ar1)), ar2, invert=invert)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    a = unique(ar1)
    keep = isin(a, ar2)
    return compress(keep, a, size=size, fill_value=fill_value if fill_value is not None else 0) \
        if size is not None else a[np.asarray(keep)]


def union1d(ar1, ar2, *, size=None, fill_value=None):
    return unique(
        concatenate([ravel(_arraylike("union1d", ar1)), ravel(_arraylike("union1d", ar2))]),
        size=size,
        fill_value=fill_value,
    )


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a = unique(ar1)
    keep = isin(a, ar2, invert=True)
    if size is None:
        return a[np.asarray(keep)]
    return compress(keep, a, size=size, fill_value=fill_value if fill_value is not None else 0)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    a, b = unique(ar1), unique(ar2)
    both = concatenate(
        [a[np.asarray(isin(a, b, invert=True))], b[np.asarray(isin(b, a, invert=True))]]
    )
    return unique(both, size=size, fill_value=fill_value)


__all__ = [
    "unique", "unique_values", "unique_counts", "unique_inverse", "unique_all", "isin", "in1d",
    "intersect1d", "union1d", "setdiff1d", "setxor1d",
]
