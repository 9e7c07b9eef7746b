"""A linear model whose parameters are a pytree (a dict), fitted by gradient descent on data
drawn with ``wjax.random`` -- the pytree example of JAX's tutorials, on wjax.

The data: 256 points x ~ N(0, I) in 3 dimensions, y = x . w_true + b_true + 0.1 * noise, every
random number drawn from its own key split off one seed.  The parameters start from
``jax.nn.initializers`` and are the dict ``{"w": f32[3], "b": f32[]}``; ``jax.grad`` returns a
dict of the same structure, and ``jax.tree_util.tree_map`` applies the update to every leaf.
Each step is one ``jax.jit`` call.

    python3 demos/pytree_linear_model.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402
from wjax import random  # noqa: E402

W_TRUE = np.array([2.0, -1.0, 0.5], np.float32)
B_TRUE = 0.3


def make_data(key, n=256):
    kx, knoise = random.split(key)
    x = random.normal(kx, (n, 3))
    y = x @ jnp.asarray(W_TRUE) + B_TRUE + 0.1 * random.normal(knoise, (n,))
    return x, y


def init_params(key):
    kw, _ = random.split(key)
    return {"w": jax.nn.initializers.normal(0.1)(kw, (3,)), "b": jnp.zeros(())}


def predict(params, x):
    return x @ params["w"] + params["b"]


def loss(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@jax.jit
def update(params, x, y, lr=0.1):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    new = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return new, value


def main(steps=100):
    key = random.key(0)
    data_key, init_key = random.split(key)
    x, y = make_data(data_key)
    params = init_params(init_key)
    print("parameter tree:", jax.tree_util.tree_structure(params))
    for step in range(steps):
        params, value = update(params, x, y)
        if step % 20 == 0 or step == steps - 1:
            print(f"step {step:3d}  loss {float(value):.5f}")
    w, b = np.asarray(params["w"]), float(params["b"])
    print("fitted w:", np.round(w, 3), " true:", W_TRUE)
    print(f"fitted b: {b:.3f}  true: {B_TRUE}")
    assert np.allclose(w, W_TRUE, atol=0.05) and abs(b - B_TRUE) < 0.05
    return params


if __name__ == "__main__":
    main()
