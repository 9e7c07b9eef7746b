"""Recurrent flax.linen models (nn.RNN over LSTM, GRU and simple cells, nn.scan of a cell)
trained a few jitted optax steps: the losses, a gradient norm and the final carries."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import flax.linen as nn

rs = np.random.RandomState(0)
x = jnp.asarray(rs.randn(6, 12, 5).astype(np.float32))        # (batch, time, features)
y = jnp.asarray(rs.randn(6, 3).astype(np.float32))


class Model(nn.Module):
    cell: type

    @nn.compact
    def __call__(self, x):
        h = nn.RNN(self.cell(features=8))(x)                    # (batch, time, 8)
        return nn.Dense(3)(h[:, -1])


class Scanned(nn.Module):
    """nn.scan over the time axis of a GRU cell, the carry returned too."""

    @nn.compact
    def __call__(self, x):
        scan = nn.scan(nn.GRUCell, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=1, out_axes=1)
        carry = jnp.zeros((x.shape[0], 8))
        carry, hs = scan(features=8)(carry, x)
        return nn.Dense(3)(hs.mean(1)), carry


for name, model in [("lstm", Model(nn.LSTMCell)), ("gru", Model(nn.GRUCell)),
                    ("simple", Model(nn.SimpleCell))]:
    params = model.init(jax.random.PRNGKey(1), x)
    opt = optax.adam(1e-2)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        loss, g = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
        updates, state = opt.update(g, state)
        return optax.apply_updates(params, updates), state, loss, optax.global_norm(g)

    for i in range(3):
        params, state, loss, gnorm = step(params, state)
        print(name, i, f"{float(loss):.6f}", f"{float(gnorm):.6f}")

model = Scanned()
params = model.init(jax.random.PRNGKey(2), x)
out, carry = jax.jit(model.apply)(params, x)
print("scanned", np.round(np.asarray(out), 5).tolist())
print("carry", np.round(np.asarray(carry[0]), 5).tolist())
g = jax.jit(jax.grad(lambda p: jnp.sum(model.apply(p, x)[0] ** 2)))(params)
print("grad norm", f"{float(optax.global_norm(g)):.6f}")
