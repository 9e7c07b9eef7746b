"""wjax.scipy.ndimage: ``map_coordinates`` (``jax.scipy.ndimage``): ``input`` sampled at
fractional ``coordinates`` by nearest-neighbour (order 0) or linear (order 1) interpolation,
with SciPy's boundary modes: constant (``cval`` outside), nearest (edge value), wrap
(periodic), mirror (reflected about the edge pixels) and reflect (about the edges)."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from .. import lax
from .. import numpy as jnp

__all__ = ["map_coordinates"]


def _mirror(i, n):
    if n == 1:
        return jnp.zeros_like(i)
    period = 2 * (n - 1)
    return (n - 1) - jnp.abs(jnp.mod(i, period) - (n - 1))


def _reflect(i, n):
    period = 2 * n
    m = jnp.mod(i, period)
    return jnp.where(m < n, m, period - 1 - m)


_FIX = {"constant": lambda i, n: i, "nearest": lambda i, n: jnp.clip(i, 0, n - 1),
        "wrap": lambda i, n: jnp.mod(i, n), "mirror": _mirror, "reflect": _reflect}


def _round_half_away(x):
    return x if jnp.issubdtype(x.dtype, np.integer) else lax.round(x)


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):
    """``input`` interpolated at ``coordinates`` (one array per input dimension, all of the
    output's shape)."""
    arr = jnp.asarray(input)
    coords = [jnp.asarray(c) for c in coordinates]
    cval = jnp.asarray(cval, arr.dtype)
    if len(coords) != arr.ndim:
        raise ValueError(f"coordinates must be a sequence of length input.ndim, but "
                         f"{len(coords)} != {arr.ndim}")
    fix = _FIX.get(mode)
    if fix is None:
        raise NotImplementedError(f"jax.scipy.ndimage.map_coordinates does not yet support mode "
                                  f"{mode}. Currently supported modes are {set(_FIX)}.")
    if order not in (0, 1):
        raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires "
                                  "order<=1")
    per_dim = []
    for c, n in zip(coords, arr.shape):
        if order == 0:
            nodes = [(_round_half_away(c).astype(np.int32), None)]
        else:
            lo = jnp.floor(c)
            w_hi = c - lo
            i = lo.astype(np.int32)
            nodes = [(i, 1 - w_hi), (i + 1, w_hi)]
        per_dim.append([(fix(i, n), (i >= 0) & (i < n) if mode == "constant" else None, w)
                        for i, w in nodes])
    total = None
    for combo in itertools.product(*per_dim):
        idx = tuple(i for i, _, _ in combo)
        val = arr[idx]
        valids = [v for _, v, _ in combo if v is not None]
        if valids:
            val = jnp.where(functools.reduce(operator.and_, valids), val, cval)
        weights = [w for _, _, w in combo if w is not None]
        if weights:
            val = functools.reduce(operator.mul, weights) * val
        total = val if total is None else total + val
    if jnp.issubdtype(arr.dtype, np.integer):
        total = _round_half_away(total)
    return total.astype(arr.dtype)
