"""``jax.scipy.cluster.vq``: vector quantization (``vq``)."""
from __future__ import annotations

import numpy as np

from ... import numpy as jnp

__all__ = ["vq"]


def vq(obs, code_book, check_finite: bool = True):
    """The index of the nearest code (Euclidean) for each observation and its distance."""
    obs, code_book = jnp.asarray(obs), jnp.asarray(code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[..., None], code_book[..., None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dt = jnp.result_type(obs, code_book, np.float32)
    obs, code_book = obs.astype(dt), code_book.astype(dt)
    dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = jnp.argmin(dist, axis=-1)
    return code, jnp.min(dist, axis=-1)
