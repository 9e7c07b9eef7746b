"""optax.adam on bfloat16 parameters for a few steps (a mixed-precision training loop):
losses, gradients, updated parameters and the optimizer state's dtypes."""
import jax
import jax.numpy as jnp
import numpy as np
import optax

rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(16, 4)), jnp.bfloat16)
y = jnp.asarray(rng.normal(size=(16, 2)), jnp.bfloat16)
params = {"w": jnp.asarray(rng.normal(size=(4, 2)) * 0.5, jnp.bfloat16),
          "b": jnp.zeros((2,), jnp.bfloat16)}


def loss(p):
    pred = jnp.tanh(x @ p["w"] + p["b"])
    return jnp.mean((pred - y) ** 2)


opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-1))
state = opt.init(params)


@jax.jit
def step(p, s):
    l, g = jax.value_and_grad(loss)(p)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l, g


for i in range(3):
    params, state, l, g = step(params, state)
    print("step", i, "loss", l.dtype, float(l))
    print("grad w", g["w"].dtype, np.asarray(g["w"], np.float32).ravel().tolist())
print("w", params["w"].dtype, np.asarray(params["w"], np.float32).ravel().tolist())
print("b", params["b"].dtype, np.asarray(params["b"], np.float32).ravel().tolist())
print("state", [str(getattr(leaf, "dtype", type(leaf).__name__))
                for leaf in jax.tree_util.tree_leaves(state)])
