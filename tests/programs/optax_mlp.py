"""optax: an MLP trained 5 steps with clip_by_global_norm + adamw under jit; prints the losses."""
import numpy as np
import jax
import jax.numpy as jnp
import optax

rng = np.random.RandomState(0)
X = rng.randn(64, 8).astype(np.float32)
Y = (X @ rng.randn(8, 3)).argmax(1)
params = {"w1": rng.randn(8, 16).astype(np.float32) * 0.3, "b1": np.zeros(16, np.float32),
          "w2": rng.randn(16, 3).astype(np.float32) * 0.3, "b2": np.zeros(3, np.float32)}
params = jax.tree_util.tree_map(jnp.asarray, params)

def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-2, weight_decay=1e-3))
state = opt.init(params)

@jax.jit
def step(p, s, x, y):
    l, g = jax.value_and_grad(loss_fn)(p, x, y)
    u, s = opt.update(g, s, p)
    return optax.apply_updates(p, u), s, l

losses = []
for i in range(5):
    params, state, l = step(params, state, jnp.asarray(X), jnp.asarray(Y))
    losses.append(float(l))
print(" ".join(f"{v:.7f}" for v in losses))
