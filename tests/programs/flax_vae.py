"""A flax.linen VAE with dropout and a stop_gradient classifier head, trained by a jitted lax.scan
over optax.adamw steps with keys folded per step; optax losses, the evaluation pass."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn

rs = np.random.RandomState(0)
X = jnp.asarray((rs.rand(64, 12) > 0.5).astype(np.float32))
labels = jnp.asarray(rs.randint(0, 4, 64))

class VAE(nn.Module):
    @nn.compact
    def __call__(self, x, key, train=True):
        h = nn.relu(nn.Dense(16)(x))
        h = nn.Dropout(0.2, deterministic=not train)(h)
        mu, logvar = nn.Dense(3)(h), nn.Dense(3)(h)
        z = mu + jnp.exp(0.5 * logvar) * jax.random.normal(key, mu.shape)
        logits = nn.Dense(12)(nn.relu(nn.Dense(16)(z)))
        cls = nn.Dense(4)(jax.lax.stop_gradient(z))
        return logits, mu, logvar, cls

m = VAE()
k0, k1, k2 = jax.random.split(jax.random.key(0), 3)
params = m.init({"params": k0, "dropout": k1}, X, k2)
opt = optax.adamw(3e-3)
st = opt.init(params)

def loss_fn(p, key):
    kz, kd = jax.random.split(key)
    logits, mu, logvar, cls = m.apply(p, X, kz, rngs={"dropout": kd})
    rec = optax.sigmoid_binary_cross_entropy(logits, X).sum(-1).mean()
    kl = -0.5 * jnp.mean(jnp.sum(1 + logvar - mu ** 2 - jnp.exp(logvar), -1))
    ce = optax.softmax_cross_entropy_with_integer_labels(cls, labels).mean()
    return rec + kl + ce, (rec, kl, ce)

@jax.jit
def step(p, st, key):
    (l, aux), g = jax.value_and_grad(loss_fn, has_aux=True)(p, key)
    u, st = opt.update(g, st, p)
    return optax.apply_updates(p, u), st, l, aux

def train(p, st, key, n):
    def body(carry, i):
        p, st = carry
        p, st, l, aux = step(p, st, jax.random.fold_in(key, i))
        return (p, st), l
    return jax.lax.scan(body, (p, st), jnp.arange(n))

(params, st), ls = jax.jit(train, static_argnums=3)(params, st, jax.random.key(7), 5)
print("losses", np.round(np.asarray(ls), 4).tolist())
logits, mu, _, cls = m.apply(params, X[:2], jax.random.key(3), train=False)
print("eval", np.round(np.asarray(mu), 4).tolist(), np.asarray(jnp.argmax(cls, -1)).tolist())
