"""Control-flow benchmarks: a ``fori_loop`` of 1000 small iterations (time per
iteration; plain and with ``unroll=8``), a ``while_loop`` of 1000 iterations and a ``scan``
RNN cell (hidden 64, 100 steps; forward and gradient), next to real JAX on the CPU, to the
same loops with the in-kernel forms switched off
(``runtime.options(in_kernel_loops=False)``: the body is
recorded once per iteration), and to a hand-written WGSL kernel of the fori_loop.

    .venv/bin/python bench/bench_control.py
"""
from __future__ import annotations

import numpy as np
from common import ms, real_jax, table, timeit, us

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import runtime

N_ITER = 1000
HIDDEN, STEPS, IN = 64, 100, 32
BATCH = 8          # the batched RNN: two 8 x 64 by 64 x 64 products per step


def fori(L, x, unroll=None):
    return L.fori_loop(0, N_ITER, lambda i, c: c * 0.999 + 0.001 * i, x, unroll=unroll)


def while_(L, x):
    return L.while_loop(
        lambda c: c[0] < N_ITER, lambda c: (c[0] + 1, c[1] * 0.999 + 0.001), (0, x)
    )[1]


def rnn(N, L, Wh, Wx, b, xs):
    def cell(h, x):
        h = N.tanh(Wh @ h + Wx @ x + b)
        return h, h
    return L.scan(cell, N.zeros(HIDDEN, np.float32), xs)


def rnn_loss(N, L, Wh, Wx, b, xs):
    h, hs = rnn(N, L, Wh, Wx, b, xs)
    return N.sum(hs ** 2) + N.sum(h)


def brnn(N, L, Wh, Wx, b, xs):
    def cell(h, x):
        h = N.tanh(h @ Wh + x @ Wx + b)
        return h, h
    return L.scan(cell, N.zeros((BATCH, HIDDEN), np.float32), xs)


def brnn_loss(N, L, Wh, Wx, b, xs):
    h, hs = brnn(N, L, Wh, Wx, b, xs)
    return N.sum(hs ** 2) + N.sum(h)


def main():
    rt = runtime.get()
    print(f"adapter: {rt.describe()}")
    rs = np.random.RandomState(0)
    x16 = np.ones(16, np.float32)
    Wh = (rs.randn(HIDDEN, HIDDEN) / np.sqrt(HIDDEN)).astype(np.float32)
    Wx = (rs.randn(HIDDEN, IN) / np.sqrt(IN)).astype(np.float32)
    b = (rs.randn(HIDDEN) * 0.1).astype(np.float32)
    xs = rs.randn(STEPS, IN).astype(np.float32)
    Wh8 = (rs.randn(HIDDEN, HIDDEN) / np.sqrt(HIDDEN)).astype(np.float32)
    Wx8 = (rs.randn(HIDDEN, HIDDEN) / np.sqrt(HIDDEN)).astype(np.float32)
    xs8 = rs.randn(STEPS, BATCH, HIDDEN).astype(np.float32)

    cases = {
        f"fori_loop {N_ITER} (f32[16])": (
            lambda J, N, L: J.jit(lambda x: fori(L, x)),
            (x16,),
            N_ITER,
        ),
        f"fori_loop {N_ITER}, unroll=8": (
            lambda J, N, L: J.jit(lambda x: fori(L, x, 8)),
            (x16,),
            N_ITER,
        ),
        f"while_loop {N_ITER} (f32[16])": (
            lambda J, N, L: J.jit(lambda x: while_(L, x)),
            (x16,),
            N_ITER,
        ),
        f"scan RNN h={HIDDEN}, {STEPS} steps": (
            lambda J, N, L: J.jit(lambda *a: rnn(N, L, *a)),
            (Wh, Wx, b, xs),
            STEPS,
        ),
        f"grad of scan RNN ({STEPS} steps)": (
            lambda J, N, L: J.jit(J.grad(lambda *a: rnn_loss(N, L, *a), argnums=(0, 1, 2))),
            (Wh, Wx, b, xs),
            STEPS,
        ),
        f"scan RNN b{BATCH} h={HIDDEN}, {STEPS} steps": (
            lambda J, N, L: J.jit(lambda *a: brnn(N, L, *a)),
            (Wh8, Wx8, b, xs8),
            STEPS,
        ),
        f"value_and_grad, RNN b{BATCH} h={HIDDEN}": (
            lambda J, N, L: J.jit(J.value_and_grad(lambda *a: brnn_loss(N, L, *a),
                                                   argnums=(0, 1, 2))),
            (Wh8, Wx8, b, xs8),
            STEPS,
        ),
    }
    jax = real_jax()
    rows, times = [], {}
    for name, (build, host_args, iters) in cases.items():
        f = build(wjax, jnp, lax)
        dev_args = [jnp.asarray(a) for a in host_args]

        def run():
            wjax.block_until_ready(wjax.tree_util.tree_leaves(f(*dev_args))[0])

        run()
        s0 = dict(rt.stats)
        run()
        disp = rt.stats["dispatches"] - s0["dispatches"]
        rb = rt.stats["readbacks"] - s0["readbacks"]
        t = timeit(run, warmup=1, reps=7)
        times[name] = t
        with rt.options(in_kernel_loops=False):     # the same loop, recorded per iteration
            f_rec = build(wjax, jnp, lax)
            t_rec = timeit(
                lambda: wjax.block_until_ready(wjax.tree_util.tree_leaves(f_rec(*dev_args))[0]),
                warmup=1,
                reps=3,
            )
        row = [name, ms(t), us(t / iters), str(disp), str(rb), ms(t_rec), f"{t_rec / t:.1f}x"]
        if jax is not None:
            import jax.numpy as rjnp
            g = build(jax, rjnp, jax.lax)
            ra = [rjnp.asarray(a) for a in host_args]
            want = g(*ra)
            got = f(*dev_args)
            for a, w in zip(wjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=2e-3, atol=2e-4)
            tj = timeit(lambda: jax.block_until_ready(g(*ra)), warmup=1, reps=7)
            row += [ms(tj), us(tj / iters)]
        else:
            row += ["-", "-"]
        rows.append(row)
    table("control flow (wjax jit vs real JAX jit on the CPU)", rows,
          ["case", "wjax", "per iter", "dispatches", "readbacks", "recorded", "speedup",
           "JAX", "JAX per iter"])
    names = list(times)
    for fwd, grad in ((names[3], names[4]), (names[5], names[6])):
        print(f"{grad}: {times[grad] / times[fwd]:.2f}x its forward ({fwd})")
    t_hand = hand_fori(rt, x16)
    fori_jit, x_dev = wjax.jit(lambda x: fori(lax, x)), jnp.asarray(x16)
    t_ours = timeit(lambda: wjax.block_until_ready(fori_jit(x_dev)), warmup=1, reps=7)
    print(
        f"\nfori_loop {N_ITER} (f32[16]): wjax {ms(t_ours)}, "
        f"hand-written WGSL loop kernel {ms(t_hand)} "
        f"(wjax/hand = {t_ours / t_hand:.2f})"
    )
    print(
        "\nElementwise bodies run as one per-element kernel loop; the RNN cells run in one"
        " workgroup\n(carries in workgroup memory, or storage buffers when they do not fit;"
        " products in register\nblocks).  'recorded' is the fallback form: one recorded body"
        " per step.  A scan's weight-gradient\naccumulators leave the loop (one product after"
        " it) and its carry-independent products\nrun before it, batched over the steps."
    )


HAND_FORI = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x;
  if (i >= arrayLength(&x)) { return; }
  var c = x[i];
  for (var k = 0u; k < 1000u; k = k + 1u) { c = c * 0.999 + 0.001 * f32(k); }
  y[i] = c;
}
"""


def hand_fori(rt, x):
    """The fori_loop as one hand-written WGSL kernel: dispatch and wait."""
    xb, yb = rt.upload(x), rt.alloc(x.nbytes)

    def run():
        rt.dispatch(HAND_FORI, [xb, yb], (1, 1, 1))
        rt.synchronize()
    run()
    got = np.frombuffer(rt.read(yb, x.nbytes), np.float32)
    want = x.copy()
    for k in range(N_ITER):
        want = want * np.float32(0.999) + np.float32(0.001) * np.float32(k)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    return timeit(run, warmup=1, reps=7)


if __name__ == "__main__":
    main()
