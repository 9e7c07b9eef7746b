"""JAX's custom-derivatives tutorial's print-instrumented functions: each of f, f_jvp, g,
g_fwd and g_bwd is called as often, and in the same order, as under JAX (eager, jvp, grad,
jit of grad, value_and_grad, jacrev)."""
import jax
import jax.numpy as jnp
from jax import custom_jvp, custom_vjp, grad, jvp

@custom_jvp
def f(x, y):
  print("called f!")
  return jnp.sin(x) * y

@f.defjvp
def f_jvp(primals, tangents):
  print("called f_jvp!")
  x, y = primals
  x_dot, y_dot = tangents
  primal_out = f(x, y)
  tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
  return primal_out, tangent_out

print("a")
print(f(2., 3.))
print("b")
y, y_dot = jvp(f, (2., 3.), (1., 0.))
print("c")
print(grad(f)(2., 3.))

@custom_vjp
def g(x, y):
  print("called g!")
  return jnp.sin(x) * y

def g_fwd(x, y):
  print("called g_fwd!")
  return g(x, y), (jnp.cos(x), jnp.sin(x), y)

def g_bwd(res, g_):
  print("called g_bwd!")
  cos_x, sin_x, y = res
  return (cos_x * g_ * y, sin_x * g_)

g.defvjp(g_fwd, g_bwd)
print("d")
print(g(2., 3.))
print("e")
print(grad(g)(2., 3.))
print("f")
print(jax.jit(grad(g))(2., 3.))
print("g")
print(jax.jit(grad(f))(2., 3.))

print("i")
print(jax.value_and_grad(lambda x: f(x, 3.) + g(x, 2.))(1.5))
print("j")
print(jax.jacrev(f)(2., 3.))
try:
    jax.jvp(g, (2., 3.), (1., 0.))
except TypeError as e:
    print("TypeError", "custom_vjp" in str(e))
print("k")
print(jax.vmap(f)(jnp.ones(2), jnp.ones(2)))
print("l")
print(jax.jit(f)(2., 3.))
print("m")
print(jax.vmap(g)(jnp.ones(2), jnp.ones(2)))
print("n")
print(jax.jit(g)(2., 3.))
print("o")
print(jax.grad(jax.jit(f))(2., 3.))
print("p")
print(jax.grad(jax.jit(g))(2., 3.))
