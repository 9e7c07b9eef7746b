"""``jax._src.state.types``: ``AbstractRef``, the abstract value of a ref."""
from ...ref import AbstractRef  # noqa: F401

__all__ = ["AbstractRef"]
