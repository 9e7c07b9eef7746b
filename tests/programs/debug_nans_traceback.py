"""The debugging/flags doc's jax_debug_nans cells: eagerly and under jit, the error names the
operation, after JAX's de-optimized re-run message(s); tracebacks without the library's frames
(only the user's, JAX's note after the error)."""
import jax
import jax.numpy as jnp
import traceback
jax.config.update("jax_debug_nans", True)

def f(x):
  w = 3 * jnp.square(x)
  return jnp.log(-w)

try:
  f(5.)
except FloatingPointError:
  print(traceback.format_exc(limit=2).replace(__file__, "PROGRAM"))
print("=====")
try:
  jax.jit(f)(5.)
except FloatingPointError:
  print(traceback.format_exc(limit=2).replace(__file__, "PROGRAM"))
