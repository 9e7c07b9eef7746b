"""``jax.extend``: the interfaces for libraries that build on the core -- user primitives
(``jax.extend.core.Primitive``) and the IR's data structures."""
from . import core

__all__ = ["core"]
