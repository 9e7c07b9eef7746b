"""jax.debug.breakpoint under jit, vmap and grad: the debugger reads its commands from
standard input (tests/test_libraries.py feeds them) and prints the values it is asked for."""
import jax
import jax.numpy as jnp


def layer(w, x):
    y = w * x + 1.0
    jax.debug.breakpoint()
    return y.sum()


w = jnp.array([0.5, -1.0, 2.0])
x = jnp.array([1.0, 2.0, 3.0])
print("eager", layer(w, x))
print("jit", jax.jit(layer)(w, x))
print("vmap", jax.vmap(layer, (None, 0))(w, jnp.stack([x, 2 * x])))
print("token", jax.jit(lambda v: jax.debug.breakpoint(token=v * 2) + 1)(x))
