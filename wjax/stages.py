"""``jax.stages``: the stages of a jitted call (``jit(f)`` -> ``.trace`` -> ``.lower`` ->
``.compile``)."""
from ._src.api.jit import JitWrapped as Wrapped, Lowered, Traced
from ._src.dispatch import Compiled

__all__ = ["Compiled", "Lowered", "Traced", "Wrapped"]
