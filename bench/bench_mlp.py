"""MLP training step: ``jit(value_and_grad)`` of softmax cross-entropy, wjax next to real JAX.

784-512-10 MLP (tanh hidden layer), batch 128, plain SGD.  Two timings per library, in one
run on the same data and initial parameters:

    value_and_grad   jit(value_and_grad(loss))(params, x, y)
    sgd step         jit(update)(params, x, y): value_and_grad + the SGD update

Each number is the median wall time of one call including the wait for its result
(wjax: the device sync of a read back; JAX: block_until_ready).

    python3 bench/bench_mlp.py [--steps N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from common import ms, real_jax, table, timeit  # noqa: E402

import wjax  # noqa: E402

SIZES = (784, 512, 10)
BATCH = 128
LR = 0.1


def init(rng):
    p = []
    for m, n in zip(SIZES[:-1], SIZES[1:]):
        p.append((rng.normal(size=(m, n)).astype(np.float32) / np.sqrt(m), np.zeros(n, np.float32)))
    return p


def make(jax):
    jnp = jax.numpy

    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jnp.tanh(x @ w1 + b1)
        logits = h @ w2 + b2
        logits = logits - jnp.max(logits, axis=1, keepdims=True)
        logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=1, keepdims=True))
        return -jnp.mean(jnp.sum(y * logp, axis=1))

    vg = jax.jit(jax.value_and_grad(loss))

    @jax.jit
    def update(params, x, y):
        v, g = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, d: p - LR * d, params, g), v

    return vg, update


def run(jax, params, x, y, steps, sync):
    vg, update = make(jax)
    conv = lambda a: jax.numpy.asarray(a)  # noqa: E731
    params = jax.tree_util.tree_map(conv, params)
    x, y = conv(x), conv(y)
    t_vg = timeit(lambda: sync(vg(params, x, y)), warmup=2, reps=steps)
    state = {"p": params}

    def one():
        state["p"], v = update(state["p"], x, y)
        sync(v)

    t_up = timeit(one, warmup=2, reps=steps)
    # the loss goes down
    losses = []
    for _ in range(5):
        state["p"], v = update(state["p"], x, y)
        losses.append(float(v))
    v0 = float(vg(params, x, y)[0])
    return t_vg, t_up, v0, losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    params = init(rng)
    x = rng.normal(size=(BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]

    rows = []
    ours = run(
        wjax,
        params,
        x,
        y,
        args.steps,
        lambda v: np.asarray(v if not isinstance(v, tuple) else v[0]),
    )
    rows.append(
        [
            "wjax (" + wjax.devices()[0].device_kind + ")"
            if hasattr(wjax.devices()[0], "device_kind")
            else "wjax",
            ms(ours[0]),
            ms(ours[1]),
            f"{ours[2]:.5f}",
        ]
    )
    jax = real_jax()
    if jax is not None:
        theirs = run(jax, params, x, y, args.steps, lambda v: jax.block_until_ready(v))
        rows.append(
            ["jax " + jax.__version__ + " (cpu)", ms(theirs[0]), ms(theirs[1]), f"{theirs[2]:.5f}"]
        )
    table(
        f"MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, softmax cross-entropy, SGD (lr {LR})",
        rows,
        ["library", "jit(value_and_grad)", "jit(sgd step)", "initial loss"],
    )
    print(f"\nwjax loss over 5 more steps: {' '.join(f'{v:.4f}' for v in ours[3])}")
    if jax is not None:
        print(f"jax  loss over 5 more steps: {' '.join(f'{v:.4f}' for v in theirs[3])}")
        print(
            f"\nratio wjax / jax: value_and_grad {ours[0] / theirs[0]:.2f}x, "
            f"sgd step {ours[1] / theirs[1]:.2f}x "
            "(> 1: wjax slower)"
        )


if __name__ == "__main__":
    main()
