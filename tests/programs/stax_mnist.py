"""JAX's example_libraries as in its mnist_classifier example, on random data: a stax CNN
(Conv, BatchNorm, Relu, MaxPool, AvgPool, Flatten, Dense, LogSoftmax) initialized from one
key, trained 5 steps with optimizers.adam under jax.jit; prints the losses and accuracy."""
import numpy as np
import jax
import jax.numpy as jnp
from jax.example_libraries import optimizers, stax

rng = np.random.RandomState(0)
images = rng.randn(64, 8, 8, 1).astype(np.float32)
labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, 64)]

init_random_params, predict = stax.serial(
    stax.Conv(4, (3, 3), padding="SAME"), stax.BatchNorm(), stax.Relu,
    stax.MaxPool((2, 2), strides=(2, 2)),
    stax.Conv(8, (3, 3)), stax.Relu, stax.AvgPool((2, 2)),
    stax.Flatten, stax.Dense(16), stax.Relu, stax.Dense(10), stax.LogSoftmax)
_, params = init_random_params(jax.random.PRNGKey(0), (-1, 8, 8, 1))


def loss(params, batch):
    inputs, targets = batch
    return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    return jnp.mean(jnp.argmax(predict(params, inputs), 1) == jnp.argmax(targets, 1))


opt_init, opt_update, get_params = optimizers.adam(optimizers.exponential_decay(1e-2, 10, 0.5))
opt_state = opt_init(params)


@jax.jit
def update(i, opt_state, batch):
    value, grads = jax.value_and_grad(loss)(get_params(opt_state), batch)
    return opt_update(i, optimizers.clip_grads(grads, 5.0), opt_state), value


for i in range(5):
    opt_state, value = update(i, opt_state, (images, labels))
    print(f"{float(value):.7f}")
print(f"{float(accuracy(get_params(opt_state), (images, labels))):.4f}")
