"""wjax's core: the IR, the primitive contract, tracing, dtypes, pytrees, config, caches, meshes.

Also ``jax.core`` for programs and libraries that reach into it (through the import hook,
``jax.core`` is this package): JAX's names for the core's data structures."""
from .ir import (AbstractValue, Atom, ClosedJaxpr, DropVar, Eqn as JaxprEqn, Jaxpr, Lit as Literal,
                 ShapedArray, Var, abstractify as get_aval, pytype_aval_mappings,
                 raise_to_shaped)
from .primitive import Primitive
from .tracing import (Trace, TraceTag, Tracer, concrete_or_error, ensure_compile_time_eval,
                      eval_jaxpr, set_current_trace, take_current_trace, trace_state_clean)

__all__ = ["AbstractValue", "Atom", "ClosedJaxpr", "DropVar", "Jaxpr", "JaxprEqn", "Literal",
           "Primitive", "ShapedArray", "Trace", "TraceTag", "Tracer", "Var", "concrete_or_error",
           "ensure_compile_time_eval", "eval_jaxpr", "get_aval", "pytype_aval_mappings",
           "raise_to_shaped",
           "set_current_trace", "take_current_trace", "trace_state_clean"]
