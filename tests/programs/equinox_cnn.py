"""equinox: a small conv net (Conv1d, LayerNorm, MLP) as an eqx.Module, trained 5 steps with
optax.adam under eqx.filter_jit / eqx.filter_value_and_grad, with eqx.error_if (equinox's own
primitives) on the way; prints the losses and the final model's output."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax


class Net(eqx.Module):
    conv: eqx.nn.Conv1d
    norm: eqx.nn.LayerNorm
    mlp: eqx.nn.MLP

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.conv = eqx.nn.Conv1d(2, 4, kernel_size=3, padding=1, key=k1)
        self.norm = eqx.nn.LayerNorm((4, 8))
        self.mlp = eqx.nn.MLP(32, 1, 16, 2, activation=jax.nn.gelu, key=k2)

    def __call__(self, x):
        h = jax.nn.relu(self.conv(x))
        h = self.norm(h)
        h = eqx.error_if(h, jnp.any(jnp.isnan(h)), "nan in the activations")
        return self.mlp(h.reshape(-1))[0]


kx, ky, km = jax.random.split(jax.random.PRNGKey(0), 3)
x = jax.random.normal(kx, (16, 2, 8))
y = jnp.sin(x.sum(axis=(1, 2))) + 0.1 * jax.random.normal(ky, (16,))
model = Net(km)
opt = optax.adam(3e-3)
state = opt.init(eqx.filter(model, eqx.is_array))


@eqx.filter_value_and_grad
def loss_fn(m, x, y):
    return jnp.mean((jax.vmap(m)(x) - y) ** 2)


@eqx.filter_jit
def step(m, s, x, y):
    loss, grads = loss_fn(m, x, y)
    updates, s = opt.update(grads, s, eqx.filter(m, eqx.is_array))
    return eqx.apply_updates(m, updates), s, loss


for _ in range(5):
    model, state, loss = step(model, state, x, y)
    print(f"{float(loss):.7f}")
print(" ".join(f"{float(v):.6f}" for v in jax.vmap(model)(x[:4])))
try:
    eqx.filter_jit(lambda m, x: m(x))(model, x[0] * jnp.nan)
except Exception as e:     # equinox's runtime error: the class name and the message's first line
    print(type(e).__name__, "nan in the activations" in str(e))
