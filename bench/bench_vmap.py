"""vmap benchmark: one function over 128 examples, batched by vmap against a
Python loop of 128 calls, counting the kernels dispatched and timing each way.

    .venv/bin/python bench/bench_vmap.py
"""
from __future__ import annotations

import numpy as np
from common import ms, real_jax, table, timeit

import wjax
import wjax.numpy as jnp
from wjax._src.backend import runtime

N_EX, D_IN, D_HID, D_OUT = 128, 64, 32, 10


def predict(params, x):
    """A small per-example MLP: logits normalised by logsumexp."""
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    m = jnp.max(logits)
    return logits - (m + jnp.log(jnp.sum(jnp.exp(logits - m))))


def stack(arrays):
    """jnp.stack in chunks of 16 (a 128-operand concatenate exceeds the storage-buffer limit)."""
    if len(arrays) <= 16:
        return jnp.stack(arrays)
    parts = [jnp.stack(arrays[i:i + 16]) for i in range(0, len(arrays), 16)]
    return jnp.concatenate(parts)


def main():
    rt = runtime.get()
    print(f"adapter: {rt.describe()}")
    rng = np.random.RandomState(0)
    params = tuple(jnp.asarray(a) for a in (rng.randn(D_IN, D_HID).astype(np.float32) * 0.1,
                                            np.zeros(D_HID, np.float32),
                                            rng.randn(D_HID, D_OUT).astype(np.float32) * 0.1,
                                            np.zeros(D_OUT, np.float32)))
    xs_np = rng.randn(N_EX, D_IN).astype(np.float32)
    xs = jnp.asarray(xs_np)
    rows_x = [xs[i] for i in range(N_EX)]       # sliced once, outside the timed loops
    jpredict = wjax.jit(predict)
    vpredict = wjax.vmap(predict, in_axes=(None, 0))
    jvpredict = wjax.jit(vpredict)

    ways = {
        "loop of 128 eager calls": lambda: stack([predict(params, x) for x in rows_x]),
        "loop of 128 jit calls": lambda: stack([jpredict(params, x) for x in rows_x]),
        "vmap (eager)": lambda: vpredict(params, xs),
        "jit(vmap)": lambda: jvpredict(params, xs),
    }
    want = np.asarray(ways["loop of 128 eager calls"]())
    rows = []
    for name, fn in ways.items():
        got = np.asarray(fn())                   # warm: compile and check
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        d0 = rt.stats["dispatches"]
        np.asarray(fn())
        kernels = rt.stats["dispatches"] - d0
        t = timeit(lambda: np.asarray(fn()), warmup=1, reps=5)
        rows.append([name, kernels, ms(t)])
    base = float(rows[0][2].split()[0])
    for r in rows:
        r.append(f"{base / float(r[2].split()[0]):.1f}x")
    jax = real_jax()
    if jax is not None:
        import jax.numpy as rjnp

        def rpredict(p, x):
            w1, b1, w2, b2 = p
            logits = rjnp.tanh(x @ w1 + b1) @ w2 + b2
            return logits - jax.scipy.special.logsumexp(logits)
        rp = tuple(np.asarray(a) for a in params)
        rv = jax.jit(jax.vmap(rpredict, in_axes=(None, 0)))
        np.testing.assert_allclose(np.asarray(rv(rp, xs_np)), want, rtol=1e-4, atol=1e-5)
        t = timeit(lambda: rv(rp, xs_np).block_until_ready(), reps=20)
        rows.append(["real JAX jit(vmap) (CPU)", "-", ms(t), f"{base / (t * 1e3):.1f}x"])
    table(f"MLP forward over {N_EX} examples ({D_IN}->{D_HID}->{D_OUT}), speed relative to the "
          f"eager loop", rows, ["way", "kernels", "median", "speed"])

    if hasattr(wjax, "grad"):
        def loss(p, x, y):
            return -jnp.sum(predict(p, x) * y)
        ys = jnp.asarray(np.eye(D_OUT, dtype=np.float32)[rng.randint(0, D_OUT, N_EX)])
        g = wjax.grad(loss)
        pex = wjax.jit(wjax.vmap(g, in_axes=(None, 0, 0)))
        loop = lambda: [g(params, rows_x[i], ys[i]) for i in range(N_EX)]
        rows = []
        for name, fn in (
            ("loop of 128 grad calls", loop),
            ("jit(vmap(grad))", lambda: pex(params, xs, ys)),
        ):
            wjax.block_until_ready(fn())
            d0 = rt.stats["dispatches"]
            out = fn()
            np.asarray(wjax.tree_util.tree_leaves(out)[0])
            kernels = rt.stats["dispatches"] - d0
            t = timeit(lambda: np.asarray(wjax.tree_util.tree_leaves(fn())[0]), warmup=1, reps=3)
            rows.append([name, kernels, ms(t)])
        table(f"per-example gradients over {N_EX} examples", rows, ["way", "kernels", "median"])
    else:
        print("\n(per-example gradients: wjax.grad is not available yet)")


if __name__ == "__main__":
    main()
