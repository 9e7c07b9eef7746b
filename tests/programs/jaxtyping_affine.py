"""jaxtyping + beartype: shape/dtype-checked functions under jit, grad and vmap, and rejections."""
import jax
import jax.numpy as jnp
from beartype import beartype
from jaxtyping import Array, Float, jaxtyped

@jaxtyped(typechecker=beartype)
def affine(w: Float[Array, "m n"], x: Float[Array, "n"],
           b: Float[Array, "m"]) -> Float[Array, "m"]:
    return w @ x + b

@jax.jit
def f(w, x, b):
    return affine(w, x, b).sum()

w, x, b = jnp.ones((3, 4)), jnp.arange(4.0), jnp.ones(3)
batched = jax.vmap(affine, (None, 0, None))(w, jnp.ones((2, 4)), b)
print(float(f(w, x, b)), float(jax.grad(f)(w, x, b).sum()), float(batched.sum()))
try:
    affine(w, jnp.ones(5), b)
    print("no error")
except Exception as e:
    print("rejected", type(e).__name__)
try:
    jax.jit(affine)(w, jnp.ones(4, jnp.int32), b)
    print("no error")
except Exception as e:
    print("rejected", type(e).__name__)
