"""``jax.flatten_util.ravel_pytree``: a pytree of arrays as one flat vector, and back."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import numpy as jnp
from ._src.core import dtypes, ops, tree_util


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: ``flat`` concatenates the raveled leaves in the dtype they promote
    to; ``unravel(flat)`` rebuilds the pytree with each leaf's shape and dtype.  Works under
    ``jit``, ``grad`` and ``vmap`` (both directions are traced array operations)."""
    leaves, treedef = tree_util.tree_flatten(pytree)
    arrays = [jnp.asarray(x) for x in leaves]
    shapes = [a.shape for a in arrays]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    leaf_dtypes = [a.dtype for a in arrays]
    if arrays:
        flat_dtype = dtypes.result_type(*leaves)
        flat = jnp.concatenate([jnp.ravel(a).astype(flat_dtype) for a in arrays])
    else:
        flat_dtype = np.dtype(np.float32)
        flat = jnp.zeros((0,), flat_dtype)
    total = sum(sizes)

    def unravel(vector: Any) -> Any:
        vector = jnp.asarray(vector)
        if vector.shape != (total,):
            raise ValueError(f"The unravel function of ravel_pytree expects a vector of shape "
                             f"({total},), the size of the flattened pytree; got shape "
                             f"{vector.shape}")
        out, start = [], 0
        for shape, size, dt in zip(shapes, sizes, leaf_dtypes):
            piece = ops.reshape(vector[start:start + size], shape)
            out.append(piece if piece.dtype == dt else ops.convert_element_type(piece, dt))
            start += size
        return tree_util.tree_unflatten(treedef, out)

    return flat, unravel


__all__ = ["ravel_pytree"]
