"""``jax.interpreters``: where libraries register rules for their own primitives --
``ad`` (jvp and transpose), ``batching`` (vmap) and ``mlir`` (lowering).  In wjax these are
tables over the rule slots of :class:`wjax._src.core.primitive.Primitive`."""
from . import ad, batching, mlir, partial_eval, xla

__all__ = ["ad", "batching", "mlir", "partial_eval", "xla"]
