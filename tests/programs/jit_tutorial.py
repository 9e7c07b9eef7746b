"""JAX's "Just-in-time compilation" tutorial's steps: side effects seen at trace time, tracer
prints, static arguments, the concretization errors, Python loops unrolled under jit."""
import jax
import jax.numpy as jnp
import numpy as np
from functools import partial

global_list = []

def log2(x):
    global_list.append(x)
    ln_x = jnp.log(x)
    ln_2 = jnp.log(2.0)
    return ln_x / ln_2

print(jax.make_jaxpr(log2)(3.0) is not None, len(global_list))

def f(x, y):
    print("Running f():")
    print(f"  x = {x}")
    print(f"  y = {y}")
    result = jnp.dot(x + 1, y + 1)
    print(f"  result = {result}")
    return result

x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
y = np.random.RandomState(1).randn(4).astype(np.float32)
print(np.round(np.asarray(jax.jit(f)(x, y)), 5))
print(np.round(np.asarray(jax.jit(f)(x, y)), 5))

def g(x, neg):
    return -x if neg else x
try:
    jax.jit(g)(1.0, True)
except Exception as e:
    print(type(e).__name__)
print(jax.jit(g, static_argnums=1)(1.0, True))
print(jax.jit(g, static_argnames=["neg"])(1.0, neg=True))

@partial(jax.jit, static_argnums=(1,))
def h(x, n):
    i = 0
    while i < n:
        x = x * 2
        i += 1
    return x
print(h(1.0, 5))

def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
xs = jnp.arange(5.0)
print(np.round(np.asarray(jax.jit(selu)(xs)), 5))

@jax.jit
def k(x):
    print(x)
    jax.debug.print("value {}", x)
    return x.reshape(jnp.array(x.shape).prod())
try:
    k(jnp.ones((2, 3)))
except Exception as e:
    print(type(e).__name__)

@jax.jit
def k2(x):
    return x.reshape((np.prod(x.shape),))
print(k2(jnp.ones((2, 3))).shape)
