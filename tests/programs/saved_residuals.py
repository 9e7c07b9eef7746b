"""JAX's gradient-checkpointing tutorial's first steps: print_saved_residuals of a two-layer
function, plain, under jax.checkpoint, and with the dots_saveable policy (each residual with
the argument or the source line that computes it)."""
import jax
import jax.numpy as jnp
from jax.ad_checkpoint import print_saved_residuals


def g(W, x):
    y = jnp.dot(W, x)
    return jnp.sin(y)


def f(W1, W2, W3, x):
    x = g(W1, x)
    x = g(W2, x)
    x = g(W3, x)
    return x


W1 = jnp.ones((5, 4))
W2 = jnp.ones((6, 5))
W3 = jnp.ones((7, 6))
x = jnp.ones(4)
print_saved_residuals(f, W1, W2, W3, x)
print("--")
print_saved_residuals(jax.checkpoint(f), W1, W2, W3, x)
print("--")
print_saved_residuals(jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable),
                      W1, W2, W3, x)
print("--")
f3 = jax.checkpoint(g)
print_saved_residuals(lambda W1, W2, x: f3(W2, f3(W1, x)), W1, W2, x)
print("--")
# a named value (checkpoint_name) prints by its name; functions by their qualified names


def chain(fs):
    def composed(x):
        for f in fs:
            x = f(x)
        return x
    return composed


def f4(W1, W2, W3, x):
    x = g(W1, x)
    x = jax.ad_checkpoint.checkpoint_name(x, name="a")
    return chain([jnp.cos, jnp.sin])(g(W3, g(W2, x)))


print_saved_residuals(f4, W1, W2, W3, x)
