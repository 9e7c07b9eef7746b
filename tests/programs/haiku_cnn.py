"""haiku: a small CNN (Conv2D, BatchNorm with state, max_pool, Linear) and an LSTM unrolled
with hk.dynamic_unroll, under hk.transform_with_state; 5 steps of optax.adam under jax.jit;
prints the losses."""
import haiku as hk
import jax
import jax.numpy as jnp
import optax


def forward(x, seq, is_training):
    h = hk.Conv2D(4, kernel_shape=3, with_bias=False)(x)    # BatchNorm follows
    h = hk.BatchNorm(create_scale=True, create_offset=True, decay_rate=0.9)(h, is_training)
    h = jax.nn.relu(h)
    h = hk.max_pool(h, window_shape=2, strides=2, padding="VALID")
    h = hk.Flatten()(h)
    core = hk.LSTM(5)
    outs, _ = hk.dynamic_unroll(core, seq, core.initial_state(seq.shape[1]))
    h = jnp.concatenate([h, outs[-1]], axis=-1)
    return hk.nets.MLP([16, 1])(h)[:, 0]


f = hk.transform_with_state(forward)
k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
x = jax.random.normal(k1, (8, 6, 6, 2))
seq = jax.random.normal(k2, (4, 8, 3))          # time-major
y = jnp.sin(x.sum(axis=(1, 2, 3)))
params, state = f.init(k3, x, seq, True)
opt = optax.adam(1e-2)
opt_state = opt.init(params)


@jax.jit
def step(params, state, opt_state):
    def loss(p, s):
        pred, s = f.apply(p, s, None, x, seq, True)
        return jnp.mean((pred - y) ** 2), s
    (value, state), grads = jax.value_and_grad(loss, has_aux=True)(params, state)
    updates, opt_state = opt.update(grads, opt_state)
    return optax.apply_updates(params, updates), state, opt_state, value


for _ in range(5):
    params, state, opt_state, value = step(params, state, opt_state)
    print(f"{float(value):.7f}")
pred, _ = f.apply(params, state, None, x, seq, False)
print(" ".join(f"{float(v):.6f}" for v in pred[:4]))
