"""wjax.numpy.linalg."""
from __future__ import annotations

import numpy as np

from . import _core as jnp


def norm(x, ord=None, axis=None, keepdims=False):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, np.floating):
        x = jnp.astype(x, np.float32)
    if ord is None or ord == 2 and (axis is None and x.ndim == 1 or isinstance(axis, int)):
        return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))
    if ord in ("fro", "f"):
        return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(jnp.astype(x != 0, x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1 and (axis is None and x.ndim == 1 or isinstance(axis, int)):
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and (axis is None and x.ndim == 1 or isinstance(axis, int)):
        return jnp.power(jnp.sum(jnp.power(jnp.abs(x), ord), axis=axis, keepdims=keepdims), 1.0 / ord)
    raise NotImplementedError(f"norm with ord={ord!r} and axis={axis!r}")
