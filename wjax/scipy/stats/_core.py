"""``mode``, ``rankdata`` and ``sem`` (``jax.scipy.stats``)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import lax
from ... import numpy as jnp
from ..._src.core.tracing import Tracer
from ._common import _inexact

__all__ = ["ModeResult", "mode", "rankdata", "sem"]


class ModeResult(NamedTuple):
    mode: object
    count: object


def _check_nan_policy(nan_policy, name):
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                         "{'propagate', 'omit', 'raise'}")
    if nan_policy == "omit":
        raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise NotImplementedError(
            f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
            f"Please check if nans exist in `x` outside of the `{name}` function.")


def _arraylike(name, a):
    if isinstance(a, (list, tuple, str)) or a is None:
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                        f"position 0.")
    return jnp.asarray(a)


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along ``axis`` (the smallest on ties) and its count."""
    x = jnp.atleast_1d(_arraylike("mode", a))
    _check_nan_policy(nan_policy, "mode")
    if axis is not None:
        axis = int(axis) % x.ndim
    shape = x.shape
    if keepdims:
        out_shape = tuple(1 for _ in shape) if axis is None else \
            tuple(1 if i == axis else s for i, s in enumerate(shape))
    else:
        out_shape = () if axis is None else tuple(s for i, s in enumerate(shape) if i != axis)
    if axis is None:
        x, axis = jnp.ravel(x), 0
    x = jnp.moveaxis(x, axis, 0)
    n = x.shape[0]
    x = jnp.reshape(x, (n, -1))
    if n == 0:
        nan = jnp.full(out_shape, np.nan, np.float32)
        return ModeResult(nan, jnp.zeros(out_shape, np.float32))
    # sort each column; runs of equal values: the longest (first) run's value
    s = jnp.sort(x, axis=0)
    same = jnp.concatenate([jnp.zeros((1, s.shape[1]), bool), s[1:] == s[:-1]], axis=0)
    idx = jnp.arange(n)[:, None]
    start = lax.cummax(jnp.where(same, 0, idx), axis=0)
    run = idx - start + 1
    # the count of each run sits at its last element; ties go to the smallest value
    counts = jnp.max(run, axis=0)
    best = jnp.argmax(run == counts[None, :], axis=0)
    vals = jnp.take_along_axis(s, best[None, :], axis=0)[0]
    return ModeResult(vals.reshape(out_shape), counts.astype(np.int32).reshape(out_shape))


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """The ranks of ``a`` (1 for the smallest), ties by ``method``: average, min, max,
    dense or ordinal; NaN everywhere if ``a`` holds a NaN."""
    a = _arraylike("rankdata", a)
    _check_nan_policy(nan_policy, "rankdata")
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"unknown method '{method}'")
    if axis is not None:
        return jnp.apply_along_axis(rankdata, axis, a, method)
    a = jnp.ravel(a)
    n = a.shape[0]
    arr, sorter = lax.sort_key_val(a, jnp.arange(n))
    inv = jnp.zeros(n, sorter.dtype).at[sorter].set(jnp.arange(n, dtype=sorter.dtype))
    if method == "ordinal":
        ranks = (inv + 1).astype(np.float32)
    else:
        obs = jnp.concatenate([jnp.ones((1,), bool), arr[1:] != arr[:-1]])
        dense = jnp.cumsum(obs)[inv]
        if method == "dense":
            ranks = dense.astype(np.float32)
        else:
            count = jnp.nonzero(obs, size=n + 1, fill_value=n)[0].astype(np.float32)
            if method == "max":
                ranks = count[dense]
            elif method == "min":
                ranks = count[dense - 1] + 1
            else:
                ranks = 0.5 * (count[dense] + count[dense - 1] + 1)
    return jnp.where(jnp.any(jnp.isnan(a)), np.nan, ranks) if jnp.issubdtype(
        a.dtype, np.floating) else ranks


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean along ``axis`` (``nan_policy="omit"`` skips NaNs)."""
    b, = _inexact("sem", a)
    if nan_policy == "propagate":
        size = b.size if axis is None else b.shape[axis]
        return b.std(axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(
            jnp.asarray(size, b.dtype))
    if nan_policy == "omit":
        count = (~jnp.isnan(b)).sum(axis, keepdims=keepdims)
        return jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(
            count.astype(b.dtype))
    raise ValueError(f"{nan_policy} is not supported")


del Tracer
