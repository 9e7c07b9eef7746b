"""A data-parallel MLP training step over every device: the batch split over a 'batch' mesh
axis, parameters replicated, the loss and gradients averaged by collectives (shard_map +
pmean).  Run with real JAX (any number of CPU devices), with wjax, or with wjax across
processes: `mpiexec -n 2 python -m wjax run data_parallel_step.py --distributed`."""
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

if "--distributed" in sys.argv:
    jax.distributed.initialize()

mesh = Mesh(np.array(jax.devices()), ("batch",))
rng = np.random.default_rng(0)
sizes = [16, 32, 32, 4]
params = [(rng.normal(size=(a, b)).astype(np.float32) / np.sqrt(a),
           rng.normal(size=(b,)).astype(np.float32) * 0.1) for a, b in zip(sizes, sizes[1:])]
inputs = rng.normal(size=(32, sizes[0])).astype(np.float32)
targets = rng.normal(size=(32, sizes[-1])).astype(np.float32)

params = jax.device_put(params, NamedSharding(mesh, P()))
batch = jax.device_put((inputs, targets), NamedSharding(mesh, P("batch")))


def predict(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


@jax.shard_map(mesh=mesh, in_specs=(P(), P("batch")), out_specs=P())
def loss_dp(params, local_batch):
    x, y = local_batch
    local = jnp.mean(jnp.sum((predict(params, x) - y) ** 2, axis=-1))
    return jax.lax.pmean(local, "batch")


@jax.jit
def step(params, batch):
    loss, grads = jax.value_and_grad(loss_dp)(params, batch)
    return loss, jax.tree.map(lambda p, g: p - 0.05 * g, params, grads)


for i in range(4):
    loss, params = step(params, batch)
    if jax.process_index() == 0:
        print(f"step {i} loss {float(loss):.6f}")
