"""``jax.ops``: segment reductions (``segment_sum``, ``segment_max``, ``segment_min``,
``segment_prod``) -- scatters of ``data`` into ``num_segments`` rows by ``segment_ids``."""
from __future__ import annotations

import numpy as np

from . import numpy as jnp
from ._src.core import dtypes
from ._src.core.tracing import ConcretizationTypeError, Tracer

__all__ = ["segment_sum", "segment_max", "segment_min", "segment_prod"]


def _segment(kind, data, segment_ids, num_segments, indices_are_sorted, unique_indices,
             bucket_size, mode):
    data = jnp.asarray(data)
    segment_ids = jnp.asarray(segment_ids)
    if not dtypes.issubdtype(segment_ids.dtype, np.integer):
        raise TypeError(f"segment_ids must be an integer array, got {segment_ids.dtype}")
    if segment_ids.ndim != 1 and segment_ids.shape != data.shape[:segment_ids.ndim]:
        raise ValueError(f"segment_ids shape {segment_ids.shape} must be a prefix of data's "
                         f"{data.shape}")
    if num_segments is None:
        if isinstance(segment_ids, Tracer):
            raise ConcretizationTypeError(
                "segment_ids is traced: pass num_segments (a static int) under jit")
        num_segments = int(np.max(np.asarray(segment_ids))) + 1 if segment_ids.size else 0
    num_segments = int(num_segments)
    if num_segments < 0:
        raise ValueError("num_segments must be non-negative.")
    nidx = segment_ids.ndim
    out_shape = (num_segments,) + data.shape[nidx:]
    dt = data.dtype
    if kind == "sum":
        init = jnp.zeros(out_shape, dt)
    elif kind == "prod":
        init = jnp.ones(out_shape, dt)
    else:
        if dtypes.issubdtype(dt, np.floating):
            ident = -np.inf if kind == "max" else np.inf
        elif dt == np.bool_:
            ident = kind == "min"
        else:
            info = np.iinfo(dt)
            ident = info.min if kind == "max" else info.max
        init = jnp.full(out_shape, ident, dt)
    m = "drop" if mode is None else mode
    at = init.at[segment_ids]
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=m)
    if kind == "sum":
        return at.add(data, **kw)
    if kind == "prod":
        return at.multiply(data, **kw)
    return at.max(data, **kw) if kind == "max" else at.min(data, **kw)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """``out[i] = sum of data[j] where segment_ids[j] == i`` (out-of-range ids dropped)."""
    return _segment("sum", data, segment_ids, num_segments, indices_are_sorted, unique_indices,
                    bucket_size, mode)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None):
    """The product over each segment (1 for an empty one)."""
    return _segment("prod", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """The maximum over each segment (the dtype's lowest value, -inf, for an empty one)."""
    return _segment("max", data, segment_ids, num_segments, indices_are_sorted, unique_indices,
                    bucket_size, mode)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None):
    """The minimum over each segment (the dtype's highest value, inf, for an empty one)."""
    return _segment("min", data, segment_ids, num_segments, indices_are_sorted, unique_indices,
                    bucket_size, mode)
