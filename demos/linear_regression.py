"""Linear regression by gradient descent (the JAX tutorial's example), on wjax.

Data y = 2 x + 10 + noise; the model is ``w * x + b`` with a mean squared error loss;
50 steps of gradient descent with learning rate 0.1 from (w, b) = (0, 0) end near
slope 2 and offset 10.  The gradient is ``jax.grad`` (a jvp -> partial eval -> transpose
rewrite of the loss's jaxpr) and each step is one ``jax.jit`` call.  A plot of the data and
the fitted line is saved as ``linear_regression.png`` when matplotlib is installed.

    python3 demos/linear_regression.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402


def model(params, x):
    return params["w"] * x + params["b"]


def loss(params, x, y):
    return jnp.mean((model(params, x) - y) ** 2)


@jax.jit
def step(params, x, y, lr=0.1):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), value


def main(steps=50, seed=0, plot=True):
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(100,)).astype(np.float32)
    ys = (2.0 * xs + 10.0 + rng.normal(scale=0.1, size=(100,))).astype(np.float32)
    x, y = jnp.asarray(xs), jnp.asarray(ys)
    params = {"w": jnp.asarray(0.0), "b": jnp.asarray(0.0)}
    for i in range(steps):
        params, value = step(params, x, y)
        if i % 10 == 0 or i == steps - 1:
            print(
                f"step {i:3d}  loss {float(value):10.5f}  "
                f"w {float(params['w']):.4f}  b {float(params['b']):.4f}"
            )
    w, b = float(params["w"]), float(params["b"])
    print(f"fitted: slope {w:.3f} (true 2), offset {b:.3f} (true 10)")
    if plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot")
        else:
            out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "linear_regression.png")
            plt.scatter(xs, ys, s=8, label="data")
            grid = np.linspace(xs.min(), xs.max(), 2)
            plt.plot(grid, w * grid + b, "r", label=f"fit: {w:.2f} x + {b:.2f}")
            plt.legend()
            plt.savefig(out, dpi=100)
            print(f"saved {out}")
    return w, b


if __name__ == "__main__":
    main()
