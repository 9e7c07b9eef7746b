"""A classifier trained with wjax in Python, then run in the browser on WebGPU.

Two interleaved spirals (200 points, two classes); an MLP 2 -> 32 -> 32 -> 1 trained by
full-batch gradient descent with momentum -- every step inside one jitted ``lax.fori_loop``, so
training is one call (a few seconds on a CPU adapter).  Then ``classify(grid, point)`` -- the
probability of class 1 at each point of a 64 x 64 grid over [-1, 1]^2 and at one point -- is
exported (``jax.export``, the trained weights captured as constants) and written as a web
bundle with the page ``page.html``: it draws the decision boundary the exported program
computes and, where you click, the predicted class and probability.

    python demos/web/decision_boundary.py [-o demos/web/site]
    python -m http.server -d demos/web/site 8000     # then open http://localhost:8000
"""
import argparse
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
GRID = 64                       # the page evaluates a GRID x GRID grid over [-1, 1]^2
SIZES = (2, 32, 32, 1)
TURN = 2 * np.pi               # how far each spiral arm winds
STEPS = 400


def spirals(n=100, seed=0):
    """Two interleaved spirals in [-1, 1]^2: points (2n, 2) and labels (2n,) in {0, 1}."""
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0.05, 1, n)) * TURN
    arm = np.stack([t * np.cos(t), t * np.sin(t)], 1) / TURN * 0.9
    x = np.concatenate([arm, -arm]) + rng.normal(0, 0.03, (2 * n, 2))
    y = np.concatenate([np.zeros(n), np.ones(n)])
    return x.astype(np.float32), y.astype(np.float32)


def init(seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.normal(0, np.sqrt(2 / a), (a, b)).astype(np.float32), np.zeros(b, np.float32))
            for a, b in zip(SIZES[:-1], SIZES[1:])]


def logits(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    return (x @ w + b)[:, 0]


def loss(params, x, y):
    z = logits(params, x)           # binary cross-entropy on the logits
    return jnp.mean(jnp.maximum(z, 0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))


@jax.jit
def train(params, x, y):
    """STEPS steps of gradient descent with momentum, all on the device."""
    def step(i, state):
        p, v = state
        g = jax.grad(loss)(p, x, y)
        v = jax.tree_util.tree_map(lambda v, g: 0.9 * v + g, v, g)
        return jax.tree_util.tree_map(lambda p, v: p - 0.1 * v, p, v), v
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    return jax.lax.fori_loop(0, STEPS, step, (params, zeros))[0]


def grid_points():
    """The page's grid: row-major from the top-left corner (y = 1) of [-1, 1]^2."""
    c = (np.arange(GRID, dtype=np.float32) + 0.5) / GRID * 2 - 1
    gx, gy = np.meshgrid(c, -c)
    return np.stack([gx.ravel(), gy.ravel()], 1).astype(np.float32)


def make_classify(params):
    def classify(grid, point):
        return {"grid": jax.nn.sigmoid(logits(params, grid)),
                "point": jax.nn.sigmoid(logits(params, point[None]))[0]}
    return classify


def build(directory, verbose=True):
    """Trains, exports and writes the site into ``directory``; returns (classify, accuracy)."""
    x, y = spirals()
    t0 = time.perf_counter()
    params = train(init(), x, y)
    acc = float(((logits(params, x) > 0) == (y > 0.5)).mean())
    if verbose:
        print(f"trained in {time.perf_counter() - t0:.1f} s: loss {float(loss(params, x, y)):.4f}"
              f", training accuracy {acc:.1%}")
    classify = make_classify(params)
    exp = jax.export.export(jax.jit(classify))(
        jax.ShapeDtypeStruct((GRID * GRID, 2), jnp.float32),
        jax.ShapeDtypeStruct((2,), jnp.float32))
    exp.to_web(directory, title="decision boundary")
    data = {"grid": GRID, "points": np.round(x, 4).tolist(), "labels": y.astype(int).tolist()}
    page = (HERE / "page.html").read_text().replace("{{DATA}}", json.dumps(data))
    (pathlib.Path(directory) / "index.html").write_text(page)
    if verbose:
        print(f"wrote {directory}/index.html ({len(exp.program['kernels'])} kernels); serve it "
              f"with: python -m http.server -d {directory} 8000")
    return classify, acc


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default=str(HERE / "site"))
    build(ap.parse_args().output)
