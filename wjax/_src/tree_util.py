"""``jax._src.tree_util``: the pytree node registry (``_registry``: node type -> its entry),
which flax reads to tell registered node types from leaves."""
from .core.tree import _registry  # noqa: F401

__all__ = ["_registry"]
