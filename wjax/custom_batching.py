"""``jax.custom_batching``: ``custom_vmap`` and ``sequential_vmap`` (in ``wjax/api``)."""
from .api.custom_batching import custom_vmap, sequential_vmap  # noqa: F401

__all__ = ["custom_vmap", "sequential_vmap"]
