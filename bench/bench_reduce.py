"""Reductions next to hand-written WGSL: sum, mean/std over leading,
trailing and middle axes, norm(X) = (X - mean) / std, softmax and logsumexp, each run by
wjax (jit), by the hand kernels of ``bench/hand_wgsl.py`` on the same adapter, by NumPy and
by real JAX on the CPU, in one run.  Times are the minimum over interleaved repetitions (wall
clock, and process CPU time, which on lavapipe includes its shader threads); the ratio
columns are speed relative to each hand kernel (above 1: wjax faster).

Softmax and logsumexp have two hand kernels: ``hand`` (online: one pass keeps a running max
and rescales the running sum, the fastest by hand) and ``hand exact`` (the max first, then
the sum of exp(x - max): the algorithm JAX defines, which wjax keeps, with wjax's accurate
exp); norm has ``hand`` (one pass for the sum and sum of squares of X, the obvious
fast kernel) and ``hand exact`` (the mean first, then the centered sum of squares of X - mean:
what the program computes).

    .venv/bin/python bench/bench_reduce.py [--reps N] [--only NAME]
"""
from __future__ import annotations

import argparse

import numpy as np
from common import interleaved, ms, ratio, real_jax, table

import hand_wgsl as H
import wjax
import wjax.numpy as jnp
from wjax._src.backend import runtime
from wjax.scipy.special import logsumexp


def norm(np_, X):
    X = X - X.mean(0)
    return X / X.std(0)


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_lse(x, axis):
    m = x.max(axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis, keepdims=True))).squeeze(axis)


def view(shape, axis):
    """(A, R, B) of ``shape`` reduced over ``axis``."""
    A = int(np.prod(shape[:axis]))
    B = int(np.prod(shape[axis + 1:]))
    return A, shape[axis], B


def workloads():
    """name -> (shape, wjax fn, numpy fn, jax fn maker, hand kernels {label: (Kernel, out
    elements)})."""
    w = {}
    N = 2 ** 23
    w["sum 2^23"] = ((N,), lambda x: jnp.sum(x), lambda x: x.sum(),
                     lambda J: (lambda x: J.numpy.sum(x)), {"hand": (H.sum_all(N), 1)})
    for R, B in ((10000, 10), (1000000, 16)):
        w[f"norm {R}x{B}"] = ((R, B), lambda X: norm(jnp, X), lambda X: norm(np, X),
                              lambda J: (lambda X: norm(J.numpy, X)),
                              {"hand": (H.norm(R, B), R * B),
                               "hand exact": (H.norm_exact(R, B), R * B)})
    for shape, ax, lbl in (((4096, 1024), 1, "trailing"), ((1024, 4096), 0, "leading"),
                           ((64, 1024, 64), 1, "middle")):
        A, R, B = view(shape, ax)
        w[f"std {lbl} {'x'.join(map(str, shape))} axis {ax}"] = (
            shape, lambda x, ax=ax: jnp.std(x, axis=ax), lambda x, ax=ax: x.std(axis=ax),
            lambda J, ax=ax: (lambda x: J.numpy.std(x, axis=ax)),
            {"hand": (H.std(A, R, B), A * B)})
    A, R, B = view((4096, 1024), 1)
    w["mean trailing 4096x1024 axis 1"] = (
        (4096, 1024), lambda x: jnp.mean(x, axis=1), lambda x: x.mean(axis=1),
        lambda J: (lambda x: J.numpy.mean(x, axis=1)),
        {"hand": (H.moments(A, R, B, "  y[o] = s / n;"), A * B)})
    for shape, ax, lbl in (((4096, 1024), 1, "trailing"), ((1024, 4096), 0, "leading")):
        A, R, B = view(shape, ax)
        w[f"softmax {lbl} {'x'.join(map(str, shape))} axis {ax}"] = (
            shape, lambda x, ax=ax: wjax.nn.softmax(x, axis=ax),
            lambda x, ax=ax: np_softmax(x, ax),
            lambda J, ax=ax: (lambda x: J.nn.softmax(x, axis=ax)),
            {"hand": (H.online(A, R, B, "softmax"), A * R * B),
             "hand exact": (H.exact(A, R, B, "softmax"), A * R * B)})
    for shape, ax, lbl in (((4096, 1024), 1, "trailing"), ((64, 1024, 64), 1, "middle")):
        A, R, B = view(shape, ax)
        w[f"logsumexp {lbl} {'x'.join(map(str, shape))} axis {ax}"] = (
            shape, lambda x, ax=ax: logsumexp(x, axis=ax), lambda x, ax=ax: np_lse(x, ax),
            lambda J, ax=ax: (lambda x: __import__("jax.scipy.special").scipy.special
                              .logsumexp(x, axis=ax)),
            {"hand": (H.online(A, R, B, "logsumexp"), A * B),
             "hand exact": (H.exact(A, R, B, "logsumexp"), A * B)})
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    rt = runtime.get()
    print(f"adapter: {rt.describe()}")
    jax = real_jax()
    hand = H.Hand(rt)
    rows = []
    for name, (shape, fw, fn, fj, hands) in workloads().items():
        if args.only and args.only not in name:
            continue
        xn = np.random.RandomState(0).randn(*shape).astype(np.float32)
        x = jnp.asarray(xn)
        jf = wjax.jit(fw)
        want = np.asarray(jf(x))
        fns = {"wjax": lambda: jf(x).block_until_ready()}
        for label, (kern, n_out) in hands.items():
            y = rt.alloc(n_out * 4)
            run = hand.prepare(kern, {"x": x.buffer, "y": y})
            run()
            got = np.frombuffer(rt.read(y, n_out * 4), np.float32).reshape(want.shape)
            np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4,
                                       err_msg=f"{name}: {label} disagrees with wjax")
            fns[label] = run
        fns["NumPy"] = lambda: fn(xn)
        if jax is not None:
            jj = jax.jit(fj(jax))
            xj = jax.numpy.asarray(xn)
            fns["JAX (CPU)"] = lambda: jj(xj).block_until_ready()
        t = interleaved(fns, reps=args.reps)
        w, h = t["wjax"], t["hand"]
        e = t.get("hand exact")
        row = [name, ms(w[0]), ms(h[0]), ms(e[0]) if e else "-", ms(t["NumPy"][0]),
               ms(t["JAX (CPU)"][0]) if jax else "-",
               ratio(h[0], w[0]), ratio(h[1], w[1]),
               ratio(e[0], w[0]) if e else "-", ratio(e[1], w[1]) if e else "-",
               ratio(t["JAX (CPU)"][0], w[0]) if jax else "-"]
        rows.append(row)
        print("  " + "  ".join(str(c) for c in row), flush=True)
    table("reductions (min of interleaved repetitions; ratios: speed of wjax relative to the "
          "other, above 1 = wjax faster; 'hand': one-pass statistics / online softmax and "
          "logsumexp; 'hand exact': the program's own algorithm)", rows,
          ["workload", "wjax jit", "hand", "hand exact", "NumPy", "JAX CPU",
           "vs hand", "vs hand (CPU time)", "vs hand exact", "vs hand exact (CPU time)",
           "vs JAX"])


if __name__ == "__main__":
    main()
