"""wjax's core: the IR, the primitive contract, tracing, dtypes, pytrees, config, caches.

Also ``jax.core`` for programs and libraries that reach into it (through the import hook,
``jax.core`` is this package): JAX's names for the core's data structures."""
from .ir import (ClosedJaxpr, Eqn as JaxprEqn, Jaxpr, Lit as Literal, ShapedArray, Var,
                 abstractify as get_aval, raise_to_shaped)
from .primitive import Primitive
from .tracing import Tracer, concrete_or_error, ensure_compile_time_eval, eval_jaxpr

__all__ = ["ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive", "ShapedArray", "Tracer",
           "Var", "concrete_or_error", "ensure_compile_time_eval", "eval_jaxpr", "get_aval",
           "raise_to_shaped"]
