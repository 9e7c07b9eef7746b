"""The JAX tutorial's training loop: ``theta = [w, b]`` fitted by a jitted ``update``.

    xs ~ N(0, 1), ys = 3 xs - 1 + noise;  model(theta, x) = w x + b
    update(theta, x, y) = theta - lr * grad(loss_fn)(theta, x, y)     (jax.jit)

After 1000 updates theta is close to (3, -1).  Also shows the jaxpr that jit compiles for
``update`` (the gradient is part of it: grad rewrote the loss's jaxpr before jit lowered it).

    python3 demos/training_loop.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402


def model(theta, x):
    """Computes wx + b on a batch of input x."""
    w, b = theta
    return w * x + b


def loss_fn(theta, x, y):
    prediction = model(theta, x)
    return jnp.mean((prediction - y) ** 2)


@jax.jit
def update(theta, x, y, lr=0.1):
    return theta - lr * jax.grad(loss_fn)(theta, x, y)


def main(steps=1000, seed=0, show_jaxpr=True):
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(100,)).astype(np.float32)
    noise = rng.normal(scale=0.1, size=(100,)).astype(np.float32)
    ys = xs * 3 - 1 + noise
    x, y = jnp.asarray(xs), jnp.asarray(ys)
    theta = jnp.array([1.0, 1.0])
    if show_jaxpr:
        print(jax.make_jaxpr(update)(theta, x, y))
    t0 = time.perf_counter()
    for _ in range(steps):
        theta = update(theta, x, y)
    w, b = (float(v) for v in np.asarray(theta))
    dt = time.perf_counter() - t0
    print(f"w: {w:<.2f}, b: {b:<.2f}   ({steps} jitted updates in {dt:.2f} s, "
          f"{dt / steps * 1e3:.2f} ms each)")
    return w, b


if __name__ == "__main__":
    main()
