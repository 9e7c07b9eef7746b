"""flax.linen as its users write it: a CNN (Conv, BatchNorm with mutable batch_stats,
avg_pool, Dropout with an rng stream, Dense, LayerNorm) initialized with model.init and
trained for 5 steps of optax SGD with momentum under jax.jit(jax.value_and_grad(...)); then
evaluation with the running averages, and nn.scan over an LSTM cell."""
import jax
import jax.numpy as jnp
import flax.linen as nn
import optax


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool):
        x = nn.Conv(8, (3, 3))(x)
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.relu(x)
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.Dropout(0.2, deterministic=not train)(x)
        x = nn.Dense(10)(x)
        return nn.LayerNorm()(x)


model = CNN()
x = jax.random.normal(jax.random.PRNGKey(0), (4, 8, 8, 1))
y = jnp.arange(4) % 10
variables = model.init({"params": jax.random.PRNGKey(1), "dropout": jax.random.PRNGKey(2)}, x,
                       train=False)
params, stats = variables["params"], variables["batch_stats"]
tx = optax.sgd(0.1, momentum=0.9)
opt_state = tx.init(params)


@jax.jit
def step(params, stats, opt_state, key):
    def loss_fn(p):
        logits, upd = model.apply({"params": p, "batch_stats": stats}, x, train=True,
                                  rngs={"dropout": key}, mutable=["batch_stats"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), upd
    (loss, upd), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = tx.update(g, opt_state, params)
    return optax.apply_updates(params, updates), upd["batch_stats"], opt_state, loss


key = jax.random.PRNGKey(3)
for i in range(5):
    key, sub = jax.random.split(key)
    params, stats, opt_state, loss = step(params, stats, opt_state, sub)
    print("loss", f"{float(loss):.5f}")
logits = model.apply({"params": params, "batch_stats": stats}, x, train=False)
print("eval", f"{float(logits.sum()):.5f}", logits.shape)
print("shapes", jax.tree.map(jnp.shape, params)["Dense_0"])


class Seq(nn.Module):
    @nn.compact
    def __call__(self, xs):
        lstm = nn.scan(nn.OptimizedLSTMCell, variable_broadcast="params",
                       split_rngs={"params": False}, in_axes=1, out_axes=1)(features=5)
        carry = lstm.initialize_carry(jax.random.PRNGKey(0), xs[:, 0].shape)
        return lstm(carry, xs)[1]


seq = Seq()
xs = jnp.linspace(-1, 1, 2 * 6 * 3).reshape(2, 6, 3)
out, seq_params = seq.init_with_output(jax.random.PRNGKey(4), xs)
print("lstm", f"{float(out.sum()):.5f}", out.shape)
