"""``jax.scipy.interpolate.RegularGridInterpolator``: linear or nearest-neighbour
interpolation on a rectilinear grid (a pytree, so it can cross ``jit``)."""
from __future__ import annotations

import itertools

import numpy as np

from .. import numpy as jnp
from .._src.core.tree_util import register_pytree_node

__all__ = ["RegularGridInterpolator"]


def _check(name, x):
    if isinstance(x, (list, str)) or x is None:
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x)} at "
                        f"position 0.")
    return jnp.asarray(x)


class RegularGridInterpolator:
    """Interpolates ``values`` given on the grid ``points`` (one ascending 1-D array per
    dimension); outside the grid the result is ``fill_value`` (NaN), or extrapolated when
    ``fill_value`` is None.  ``bounds_error=True`` is refused, as in JAX (it cannot work
    under jit)."""

    def __init__(self, points, values, method="linear", bounds_error=False,
                 fill_value=np.nan):
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        if bounds_error:
            raise NotImplementedError("`bounds_error` takes no effect under JIT")
        values = _check("RegularGridInterpolator", values)
        if len(points) > values.ndim:
            raise ValueError(f"there are {len(points)} point arrays, but values has "
                             f"{values.ndim} dimensions")
        if not jnp.issubdtype(values.dtype, np.inexact):
            values = values.astype(np.float32)
        if fill_value is not None:
            fill_value = jnp.asarray(fill_value)
            if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError("fill_value must be either 'None' or of a type compatible "
                                 "with values")
        self.method, self.bounds_error, self.fill_value = method, bounds_error, fill_value
        self.grid = tuple(_check("RegularGridInterpolator", p) for p in points)
        self.values = values

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"method {method!r} is not defined")
        nd = len(self.grid)
        if isinstance(xi, tuple):
            xs = jnp.broadcast_arrays(*[jnp.asarray(v) for v in xi])
            xi = jnp.stack(xs, axis=-1)
        else:
            xi = jnp.asarray(xi)
            if xi.ndim == 1:
                xi = xi.reshape(-1, nd)
        if xi.shape[-1] != nd:
            raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, "
                             f"but this RegularGridInterpolator has dimension {nd}")
        shape = xi.shape
        pts = xi.reshape(-1, nd).T
        idx, frac, outside = [], [], jnp.zeros((pts.shape[1],), bool)
        for x, g in zip(pts, self.grid):
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
            idx.append(i)
            frac.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        extra = (slice(None),) + (None,) * (self.values.ndim - nd)
        if method == "linear":
            out = 0.0
            for corner in itertools.product((0, 1), repeat=nd):
                w = 1.0
                for c, t in zip(corner, frac):
                    w = w * (t if c else 1 - t)
                out = out + self.values[tuple(i + c for i, c in zip(idx, corner))] * w[extra]
        else:
            out = self.values[tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(idx, frac))]
        if self.fill_value is not None:
            out = jnp.where(outside.reshape(out.shape[:1] + (1,) * (out.ndim - 1)),
                            self.fill_value, out)
        return out.reshape(shape[:-1] + self.values.shape[nd:])


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, ch: RegularGridInterpolator(ch[0], ch[1], aux[0], aux[1], ch[2]))
