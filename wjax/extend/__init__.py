"""``jax.extend``: the interfaces for libraries that build on the core -- user primitives
(``jax.extend.core.Primitive``) and the IR's data structures."""
from . import core, linear_util, source_info_util

__all__ = ["core", "linear_util", "source_info_util"]
