"""Loops that run inside one kernel (wjax/_src/backend/loops.py): the per-element form (an
elementwise body, carry in registers) and the single-workgroup form (reductions and
dot_general in the body, carry in workgroup memory).  Values against NumPy loops and real
JAX; the kernel form actually chosen, dispatch and readback counts; chunking over the
per-dispatch iteration bound; transforms on top."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from checks import examples
from hypothesis import strategies as st

import wjax as jax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import profiles, runtime

F = np.float32


def stats():
    return dict(runtime.get().stats)


def counted(f, *args):
    """Runs ``f`` (already compiled once), returning (result, dispatches, readbacks) of the
    call itself — counted before the result is read."""
    s0 = stats()
    out = f(*args)
    s1 = stats()
    return out, s1["dispatches"] - s0["dispatches"], s1["readbacks"] - s0["readbacks"]


def form(f, *args) -> str:
    text = f.lower(*args).as_text()
    if "one kernel loops" not in text:
        return "recorded"
    return "workgroup" if "workgroupUniformLoad" in text else "element"


def real_jax():
    return pytest.importorskip("jax")


# --------------------------------------------------------------------------- per-element form

def test_fori_loop_runs_in_one_kernel():
    f = jax.jit(lambda x: lax.fori_loop(0, 1000, lambda i, c: c * 0.999 + 0.001 * i, x))
    x = np.linspace(-2, 2, 16).astype(F)
    assert form(f, x) == "element"
    f(x).block_until_ready()
    out, nd, nr = counted(f, x)
    want = x.copy()
    for i in range(1000):
        want = want * F(0.999) + F(0.001) * F(i)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
    assert nd <= 2 and nr == 0, (nd, nr)


def test_while_loop_reads_back_once():
    f = jax.jit(
        lambda x: lax.while_loop(
            lambda c: c[1] < 500, lambda c: (jnp.sin(c[0]) + 0.5, c[1] + 1), (x, 0)
        )
    )
    x = np.arange(6, dtype=F)
    assert form(f, x) == "element"
    f(x)[0].block_until_ready()
    (v, n), nd, nr = counted(f, x)
    assert nr <= 1 and nd <= 2, (nd, nr)
    want = x.copy()
    for _ in range(500):
        want = np.sin(want) + F(0.5)
    np.testing.assert_allclose(np.asarray(v), want, rtol=2e-5, atol=2e-6)
    assert int(n) == 500


def test_scan_reverse_xs_ys_and_scalar_ys():
    xs = np.random.RandomState(0).randn(7, 3).astype(F)

    def body(c, x):
        a, k = c
        a = a * 0.5 + x
        return (a, k + 1), (a * 2, k * 1.0)

    def run(L, xs):
        return L.scan(body, (np.zeros(3, F), np.int32(0)), xs, reverse=True)

    f = jax.jit(lambda xs: run(lax, xs))
    assert form(f, xs) == "element"
    got = f(xs)
    rj = real_jax()
    want = rj.jit(lambda xs: run(rj.lax, xs))(xs)
    for g, w in zip(jax.tree_util.tree_leaves(got), rj.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_bool_int_and_swapped_carries():
    def body(i, c):
        a, b, flag, n = c
        return b, a + 1.0, jnp.logical_not(flag), n * 3 + i     # carries swap each step

    f = jax.jit(lambda a, b: lax.fori_loop(0, 5, body, (a, b, True, jnp.int32(1))))
    a, b = np.arange(4, dtype=F), -np.arange(4, dtype=F)
    assert form(f, a, b) == "element"
    ra, rb, flag, n = f(a, b)
    wa, wb, wf, wn = a, b, True, 1
    for i in range(5):
        wa, wb, wf, wn = wb, wa + 1, not wf, wn * 3 + i
    np.testing.assert_array_equal(np.asarray(ra), wa)
    np.testing.assert_array_equal(np.asarray(rb), wb)
    assert bool(flag) == wf and int(n) == wn


@pytest.mark.parametrize("work", [5, 64])
def test_chunks_over_the_per_dispatch_bound(target_options, work):
    """With a tiny per-dispatch bound the loop runs in many chunks (the carry ping-pongs
    between two buffer sets, both parities end in the output)."""
    target_options(loop_work=work)
    f = jax.jit(
        lambda x: lax.while_loop(
            lambda c: c[1] < 37, lambda c: (c[0] * 1.5 - 1.0, c[1] + 1), (x, 0)
        )
    )
    x = np.array([1.0, 2.0], F)
    v, n = f(x)
    want = x.copy()
    for _ in range(37):
        want = want * F(1.5) - F(1.0)
    np.testing.assert_allclose(np.asarray(v), want, rtol=1e-5)
    assert int(n) == 37
    xs = np.arange(23, dtype=F)
    g = jax.jit(lambda xs: lax.scan(lambda c, x: (c + x, c * x), F(0), xs))
    c, ys = g(xs)
    assert float(c) == xs.sum()
    np.testing.assert_array_equal(np.asarray(ys), np.concatenate([[0], np.cumsum(xs)[:-1]]) * xs)


@examples(15)
@given(shape=st.sampled_from([(), (1,), (5,), (3, 4), (300,)]), n=st.integers(0, 40),
       a=st.floats(-1.5, 1.5, width=32), dtype=st.sampled_from(["float32", "int32"]))
def test_fori_loop_matches_numpy(shape, n, a, dtype):
    x = (np.arange(int(np.prod(shape))).reshape(shape) % 7).astype(dtype)
    if dtype == "int32":
        a = int(a * 2)
    f = jax.jit(lambda x: lax.fori_loop(0, n, lambda i, c: c * a + i, x))
    want = x.copy()
    for i in range(n):
        want = (want * np.asarray(a, dtype) + np.asarray(i, dtype)).astype(dtype)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- single-workgroup form

def _rnn(L, N, Wh, Wx, b, xs):
    def cell(h, x):
        h = N.tanh(Wh @ h + Wx @ x + b)
        return h, h.sum()
    return L.scan(cell, N.zeros(Wh.shape[0], N.float32), xs)


RS = np.random.RandomState(3)
WH = (RS.randn(16, 16) * 0.3).astype(F)
WX = RS.randn(16, 3).astype(F)
B = RS.randn(16).astype(F)
XS = RS.randn(30, 3).astype(F)


def test_rnn_scan_in_one_workgroup():
    f = jax.jit(lambda *a: _rnn(lax, jnp, *a))
    assert form(f, WH, WX, B, XS) == "workgroup"
    f(WH, WX, B, XS)[0].block_until_ready()
    (h, ys), nd, nr = counted(f, WH, WX, B, XS)
    assert nd <= 3 and nr == 0, (nd, nr)
    hh, yy = np.zeros(16, F), []
    for t in range(30):
        hh = np.tanh(WH @ hh + WX @ XS[t] + B)
        yy.append(hh.sum())
    np.testing.assert_allclose(np.asarray(h), hh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(ys), np.array(yy), rtol=1e-5, atol=1e-5)
    rj = real_jax()
    import jax.numpy as rjnp
    wh, wys = rj.jit(lambda *a: _rnn(rj.lax, rjnp, *a))(WH, WX, B, XS)
    np.testing.assert_allclose(np.asarray(h), np.asarray(wh), rtol=1e-5, atol=1e-6)


def test_while_with_reduction_predicate():
    """Newton's method for sqrt until the worst residual is small: the predicate reduces."""
    a = np.array([2.0, 9.0, 0.25, 100.0], F)

    def run(L, N, a):
        return L.while_loop(lambda c: N.max(N.abs(c[0] * c[0] - a)) > 1e-4,
                            lambda c: ((c[0] + a / c[0]) * 0.5, c[1] + 1), (a, 0))

    f = jax.jit(lambda a: run(lax, jnp, a))
    assert form(f, a) == "workgroup"
    r, n = f(a)
    np.testing.assert_allclose(np.asarray(r), np.sqrt(a), rtol=1e-6)
    rj = real_jax()
    import jax.numpy as rjnp
    wr, wn = rj.jit(lambda a: run(rj.lax, rjnp, a))(a)
    assert int(n) == int(wn)
    np.testing.assert_allclose(np.asarray(r), np.asarray(wr), rtol=1e-6)


def test_neighbour_reads_and_mixed_shapes():
    """A body reading other elements of its carry (roll, a matrix-vector product, argmax)
    with carries of different shapes."""
    def body(i, c):
        v, m, k = c
        v = jnp.roll(v, 1) * 0.9 + m @ v * 0.01
        return v, m * 0.99, k + jnp.argmax(v).astype(jnp.int32)

    v0 = np.arange(5, dtype=F)
    m0 = np.eye(5, dtype=F) + 0.1
    f = jax.jit(lambda v, m: lax.fori_loop(0, 12, body, (v, m, jnp.int32(0))))
    assert form(f, v0, m0) == "workgroup"
    v, m, k = f(v0, m0)
    wv, wm, wk = v0.copy(), m0.copy(), 0
    for _ in range(12):
        wv = np.roll(wv, 1) * F(0.9) + (wm @ wv) * F(0.01)
        wm = wm * F(0.99)
        wk += int(np.argmax(wv))
    np.testing.assert_allclose(np.asarray(v), wv, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(m), wm, rtol=1e-5)
    assert int(k) == wk


def test_workgroup_form_chunks(target_options):
    target_options(loop_work=200)
    f = jax.jit(lambda *a: _rnn(lax, jnp, *a))
    h, ys = f(WH, WX, B, XS)
    hh = np.zeros(16, F)
    for t in range(30):
        hh = np.tanh(WH @ hh + WX @ XS[t] + B)
    np.testing.assert_allclose(np.asarray(h), hh, rtol=1e-5, atol=1e-6)
    assert np.asarray(ys).shape == (30,)


# ------------------------------------------------------------------------- transforms and fallback


def test_grad_and_vmap_through_in_kernel_loops():
    rj = real_jax()
    import jax.numpy as rjnp

    def loss(L, N, Wh, xs):
        h, ys = _rnn(L, N, Wh, WX, B, xs)
        return (h * h).sum() + ys.sum()

    g = jax.jit(jax.grad(lambda w: loss(lax, jnp, w, XS)))(WH)
    want = rj.jit(rj.grad(lambda w: loss(rj.lax, rjnp, w, XS)))(WH)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=2e-4, atol=2e-5)

    # vmap of a while loop with a batched predicate (its predicate reduces over the batch)
    def count(L, x):
        out = L.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 1.7 + 0.1, c[1] + 1), (x, 0))
        return out[1]

    xs = np.array([0.5, 2.0, 9.0, 11.0, 0.01], F)
    f = jax.jit(jax.vmap(lambda x: count(lax, x)))
    assert form(f, xs) == "workgroup"
    np.testing.assert_array_equal(
        np.asarray(f(xs)), np.asarray(rj.vmap(lambda x: count(rj.lax, x))(xs))
    )


def test_bodies_that_do_not_qualify_still_run():
    """A sort in the body has no sequential element rule: the recorded form runs it."""
    f = jax.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sort(c * -1.0) + 1.0, x))
    x = np.array([3.0, 1.0, 2.0], F)
    assert form(f, x) == "recorded"
    want = x.copy()
    for _ in range(3):
        want = np.sort(want * -1) + 1
    np.testing.assert_array_equal(np.asarray(f(x)), want)


# ------------------------------------------------------------------ fast loops


def _brnn(L, N, Wh, Wx, b, xs, h0):
    """A batched RNN cell (h: batch x hidden): two products per step, as in the issue."""
    def cell(h, x):
        h = N.tanh(h @ Wh + x @ Wx + b)
        return h, h
    return L.scan(cell, h0, xs)


def _brnn_loss(L, N, Wh, Wx, b, xs, h0):
    h, hs = _brnn(L, N, Wh, Wx, b, xs, h0)
    return N.sum(hs ** 2) + N.sum(h)


def _brnn_args(batch, hidden, steps, seed=0):
    rs = np.random.RandomState(seed)
    return [(rs.randn(hidden, hidden) / np.sqrt(hidden)).astype(F),
            (rs.randn(hidden, hidden) / np.sqrt(hidden)).astype(F),
            (rs.randn(hidden) * 0.1).astype(F),
            rs.randn(steps, batch, hidden).astype(F),
            np.zeros((batch, hidden), F)]


def test_rnn_grad_h64_t100_b8():
    """The issue's RNN (batch 8, hidden 64, 100 steps): forward and value_and_grad against
    JAX (the issue reported a KeyError for this gradient).  The backward scan's
    weight-gradient accumulators leave the loop (one product each after it), so neither
    scan is recorded per step: a handful of dispatches in all."""
    rj = real_jax()
    import jax.numpy as rjnp
    args = _brnn_args(8, 64, 100)
    f = jax.jit(lambda *a: _brnn(lax, jnp, *a))
    g = jax.jit(jax.value_and_grad(lambda *a: _brnn_loss(lax, jnp, *a), argnums=(0, 1, 2)))
    assert form(f, *args) == "workgroup" and form(g, *args) == "workgroup"
    got_f, got_g = f(*args), g(*args)
    want_f = rj.jit(lambda *a: _brnn(rj.lax, rjnp, *a))(*args)
    want_g = rj.jit(rj.value_and_grad(lambda *a: _brnn_loss(rj.lax, rjnp, *a),
                                      argnums=(0, 1, 2)))(*args)
    for a, w in zip(jax.tree_util.tree_leaves((got_f, got_g)),
                    rj.tree_util.tree_leaves((want_f, want_g))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=2e-4, atol=2e-4)
    jax.block_until_ready(g(*args))
    _, nd, nr = counted(g, *args)
    assert nd <= 16 and nr == 0, (nd, nr)       # recorded per step it was > 1000


@pytest.mark.parametrize("cpu", [True, False])
def test_scan_restructuring_against_jax(cpu, target_options):
    """Accumulators of every kind leave the loop (a product with the step axis contracted, a
    plain sum), a carry-independent product is hoisted, ys that are xs, repeats or the
    incoming carry are not written by the loop; forward and reverse, odd sizes, both tile
    shapes (CPU and GPU) -- against JAX."""
    target_options(**(profiles.CPU_FORMS if cpu else profiles.GPU_FORMS))
    rj = real_jax()
    import jax.numpy as rjnp
    rs = np.random.RandomState(5)
    A = (rs.randn(7, 5) * 0.4).astype(F)
    C = (rs.randn(3, 5) * 0.4).astype(F)
    xs = rs.randn(60, 3, 7).astype(F)            # 60 steps of a 3 x 7 input

    def prog(L, N, A, C, xs, reverse):
        def body(carry, x):
            h, acc_w, acc_s, n = carry
            u = x @ A                                 # carry-independent: hoisted
            h2 = N.tanh(h * 0.5 + u + h @ C.T @ C * 0.1)
            acc_w = acc_w + x.T @ h2                   # accumulator: a product
            acc_s = acc_s + N.sum(h2 * h2, axis=0)     # accumulator: a sum
            return (h2, acc_w, acc_s, n + 1), (h2, x, h, h2)
        init = (N.zeros((3, 5), F), N.zeros((7, 5), F), N.zeros(5, F), 0)
        return L.scan(body, init, xs, reverse=reverse)

    for reverse in (False, True):
        f = jax.jit(lambda A, C, xs: prog(lax, jnp, A, C, xs, reverse))
        got = f(A, C, xs)
        want = rj.jit(lambda A, C, xs: prog(rj.lax, rjnp, A, C, xs, reverse))(A, C, xs)
        for a, w in zip(jax.tree_util.tree_leaves(got), rj.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=1e-4, atol=1e-4)
        assert "restructured" in f.lower(A, C, xs).as_text()
    # and under grad: the transposed scan's accumulators
    loss = lambda L, N: (lambda A, C, xs: N.sum(prog(L, N, A, C, xs, False)[1][0] ** 2))  # noqa
    gg = jax.jit(jax.grad(loss(lax, jnp), argnums=(0, 1)))(A, C, xs)
    wg = rj.jit(rj.grad(loss(rj.lax, rjnp), argnums=(0, 1)))(A, C, xs)
    for a, w in zip(gg, wg):
        np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=1e-3, atol=1e-4)


def _scan_eqns(closed):
    return [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]


@pytest.mark.parametrize("cpu", [True, False])
def test_loop_invariant_operands_read_contraction_first(cpu, target_options):
    """A loop-invariant right operand of a product in a scan body read with its last axis
    contracted (``h @ W.T``; the transposed scan's ``dz @ Wh.T`` of an RNN's gradient) is
    transposed once before the loop, and the loop's product contracts the copy's first
    axis (neighbouring threads read neighbouring elements: the H200 ran the RNN's backward
    loop 4x slower than its forward one before); operands read contraction-first already,
    a carry and a product with batch axes keep their form.  Values against JAX, forward and
    grad, rows split and not, CPU and GPU forms."""
    from wjax._src.prims.control_rewrites import restructure_scan
    target_options(**(profiles.CPU_FORMS if cpu else profiles.GPU_FORMS))
    rj = real_jax()
    rs = np.random.RandomState(11)
    W = (rs.randn(24, 24) * 0.2).astype(F)
    V = (rs.randn(24, 24) * 0.2).astype(F)
    T3 = (rs.randn(2, 24, 24) * 0.2).astype(F)
    B3 = (rs.randn(8, 24, 24) * 0.2).astype(F)
    xs = rs.randn(30, 8, 24).astype(F)

    def prog(L, N, W, V, T3, B3, xs):
        def cell(c, x):
            h, m = c
            h = N.tanh(h @ W.T + x @ V + N.einsum("bi,kji->bj", h, T3) * 0.1
                       + N.einsum("bi,bji->bj", h, B3) * 0.1      # batch axes
                       + N.einsum("bi,ji->bj", h, V.T) * 0.1)     # two transposes cancel
            m = m @ m.T * 0.01 + m                     # a carry contracted on its last axis
            return (h, m), h
        (h, m), hs = L.scan(cell, (N.zeros((8, 24), F), N.eye(24, dtype=F)), xs)
        return N.sum(hs ** 2) + N.sum(m)

    args = (W, V, T3, B3, xs)
    jx = jax.make_jaxpr(lambda *a: prog(lax, jnp, *a))(*args)
    (e,) = _scan_eqns(jx)
    p = e.params
    whole = restructure_scan(p["jaxpr"], p["length"], p["reverse"], p["num_consts"],
                             p["num_carry"], p["unroll"])
    # before the loop: W.T as an array (the body read it through a transposed view), and
    # the sum of T3 over k (hoisted) transposed, as einsum contracts its last axis; V.T read
    # with its last axis contracted is V read contraction-first: no copy, no view
    flips = [q for q in whole.jaxpr.eqns if q.primitive.name == "transpose"]
    assert [q.params["permutation"] for q in flips] == [(1, 0), (1, 0)]
    (inner,) = _scan_eqns(whole)
    body = inner.params["jaxpr"].jaxpr
    dots = [q for q in body.eqns if q.primitive.name == "dot_general"]
    dns = sorted(str(q.params["dimension_numbers"]) for q in dots)
    assert dns == sorted([str((((1,), (0,)), ((), ())))] * 3         # W.T, T3's sum, V (x @ V:
                         + [str((((1,), (0,)), ((), ()))),           # hoisted); m @ m.T
                            str((((1,), (2,)), ((0,), (0,))))]), dns  # batch axes: as they were
    assert sum(q.primitive.name == "transpose" for q in body.eqns) == 1   # m.T (V.T: gone)
    loss = lambda L, N: (lambda *a: prog(L, N, *a))           # noqa: E731
    for slices in (1, 4):
        with runtime.get().options(loop_slices=slices):
            got = jax.jit(jax.value_and_grad(loss(lax, jnp), argnums=(0, 1, 2, 3)))(*args)
        want = rj.jit(rj.value_and_grad(loss(rj.lax, rj.numpy), argnums=(0, 1, 2, 3)))(*args)
        for a, w in zip(jax.tree_util.tree_leaves(got), rj.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("cpu", [True, False])
def test_products_in_workgroup_loops(cpu, target_options):
    """dot_general inside a single-workgroup loop (register blocks per thread): sizes that are
    not multiples of the block, 1-sized and batch dimensions, transposed operands, integer
    dtypes, a scalar and a big (> 64 KiB, storage-bound) constant -- against NumPy."""
    target_options(**(profiles.CPU_FORMS if cpu else profiles.GPU_FORMS))
    rs = np.random.RandomState(7)
    M = (rs.randn(2, 5, 9) * 0.3).astype(F)       # batch 2: (5 x 9) per batch
    Wt = (rs.randn(9, 5) * 0.3).astype(F)          # used transposed
    big = (rs.randn(130, 130) * 0.01).astype(F)    # 66 KiB: never a uniform buffer
    Ki = rs.randint(-3, 4, size=(1, 5)).astype(np.int32)

    def body(i, c):
        v, w, k = c                                 # v: 2 x 9, w: 130, k: int32 1 x 5
        p = jnp.einsum("bi,bij->bj", v, M.transpose(0, 2, 1))      # batch dims, 2 x 5
        v2 = jnp.tanh(v * 0.5 + p @ Wt.T)                          # contraction on Wt's 1
        w2 = w * 0.9 + big.T @ w * 0.1
        k2 = (k @ (Ki.T @ Ki)) % 7 + k
        return v2, w2, k2

    v0 = rs.randn(2, 9).astype(F)
    w0 = rs.randn(130).astype(F)
    k0 = np.arange(5, dtype=np.int32)[None]
    f = jax.jit(lambda v, w, k: lax.fori_loop(0, 9, body, (v, w, k)))
    assert form(f, v0, w0, k0) == "workgroup"
    v, w, k = f(v0, w0, k0)
    wv, ww, wk = v0.astype(np.float64), w0.astype(np.float64), k0.copy()
    for _ in range(9):
        p = np.einsum("bi,bji->bj", wv, M)
        wv, ww, wk = (np.tanh(wv * 0.5 + p @ Wt.T), ww * 0.9 + big.T @ ww * 0.1,
                      (wk @ (Ki.T @ Ki)) % 7 + wk)
    np.testing.assert_allclose(np.asarray(v), wv, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(w), ww, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(k), wk)


def test_carries_past_workgroup_memory_stay_in_one_kernel():
    """Carries of 2 x 36 KiB (two slots each past lavapipe's 32 KiB of workgroup memory) live
    in storage buffers inside the single-workgroup loop."""
    x0 = np.random.RandomState(0).randn(96, 96).astype(F)

    def run(L, N, x):
        return L.fori_loop(0, 20, lambda i, c: (c[0] * 0.9 + N.mean(c[0], axis=0) * 0.1
                                                + N.roll(c[1], 1), c[1] * 0.5), (x, x))
    f = jax.jit(lambda x: run(lax, jnp, x))
    text = f.lower(x0).as_text()
    assert form(f, x0) == "workgroup" and "storageBarrier" in text
    a, b = f(x0)
    wa, wb = x0.copy(), x0.copy()
    for _ in range(20):
        wa, wb = wa * F(0.9) + wa.mean(0) * F(0.1) + np.roll(wb, 1), wb * F(0.5)
    np.testing.assert_allclose(np.asarray(a), wa, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(b), wb)
    f(x0)[0].block_until_ready()
    _, nd, nr = counted(f, x0)
    assert nd <= 3 and nr == 0, (nd, nr)


def test_long_rnn_scan_respects_the_loop_limit():
    """3000 steps of a small RNN: each dispatch runs a bounded chunk of steps, so the product's
    inner loops never reach lavapipe's 65535 iterations per invocation."""
    rj = real_jax()
    import jax.numpy as rjnp
    args = _brnn_args(3, 16, 3000, seed=2)
    f = jax.jit(lambda *a: _brnn(lax, jnp, *a))
    h, hs = f(*args)
    wh, whs = rj.jit(lambda *a: _brnn(rj.lax, rjnp, *a))(*args)
    np.testing.assert_allclose(np.asarray(h), np.asarray(wh), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(hs)[::97], np.asarray(whs)[::97], rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("reverse,unroll", [(False, 1), (True, 1), (False, 2)])
def test_recorded_scan_reads_and_writes_slices_in_place(reverse, unroll):
    """A scan stepped from the host (``host_steps._RecordedScan``) under the GPU strategies:
    each step reads its ``xs`` slices and writes its own ``ys`` slices through windows of the
    scan's buffers (``runtime.View``), so the copies per step go: a ``ys`` that is also the
    carry is still copied (one dispatch may not read and write one buffer), an unaligned
    slice (3 floats) is copied.  Against real JAX, with the gradient."""
    J = pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    T, B, H = 40, 4, 16
    W = (rng.standard_normal((H, H)) * 0.3).astype(np.float32)
    xs = rng.standard_normal((T, B, H)).astype(np.float32)
    zs = rng.standard_normal((T, 3)).astype(np.float32)

    def prog(np_, lax_, W, xs, zs):
        def cell(c, xz):
            h, s = c
            x, z = xz
            h = np_.tanh(np_.dot(h, W, precision="highest") + x)
            return (h, s + z.sum()), (h * 2.0, h, z * s)
        (h, s), (a, b, c) = lax_.scan(cell, (np_.zeros((B, H), np_.float32), np_.float32(0)),
                                      (xs, zs), reverse=reverse, unroll=unroll)
        return h, s, a, b, c

    def loss(np_, lax_, W, xs, zs):
        h, s, a, b, c = prog(np_, lax_, W, xs, zs)
        return (a * b).sum() + c.sum() + s

    rt = runtime.get()
    copies = []
    real_copy = rt.copy
    with rt.options(**dict(profiles.GPU_STRATEGIES), in_kernel_loops=False):
        f = jax.jit(lambda *a: prog(jnp, lax, *a))
        f(W, xs, zs)
        rt.copy = lambda *a, **k: (copies.append(a[2]), real_copy(*a, **k))
        try:
            got = f(W, xs, zs)
            jax.block_until_ready(got)
        finally:
            rt.copy = real_copy
        g = jax.jit(jax.grad(lambda *a: loss(jnp, lax, *a)))(W, xs, zs)
    jax.clear_caches()
    want = J.jit(lambda *a: prog(J.numpy, J.lax, *a))(W, xs, zs)
    for x, y in zip(got, want):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-5, atol=2e-5)
    gw = J.jit(J.grad(lambda *a: loss(J.numpy, J.lax, *a)))(W, xs, zs)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gw), rtol=1e-4, atol=1e-4)
    # per step: the carry-as-ys copy (B*H floats) and the two unaligned z slices; no copy of
    # the xs slice or of the ys slice h * 2 (each step copied all five before).  Unrolled
    # steps copy as before (two steps' slices of one ys would be bound by one kernel).
    if unroll == 1:
        assert copies.count(B * H * 4) <= T + 4, copies[:20]
        assert len(copies) <= 3 * T + 4, len(copies)
    else:
        assert copies.count(B * H * 4) >= 3 * T


# --------------------------------------------------------------------------- replayed steps

def _rnn_prog(np_, lax_, Wh, Wx, xs, reverse=False):
    B, H = xs.shape[1], Wh.shape[0]
    kw = {} if np_ is np else {"precision": "highest"}

    def cell(h, x):
        h = np_.tanh(np_.dot(h, Wh, **kw) + np_.dot(x, Wx, **kw))
        return h, (h, h * 0.5)
    h, (hs, gs) = lax_.scan(cell, np_.zeros((B, H), np_.float32), xs, reverse=reverse)
    return h, hs, gs


def _rnn_loss(np_, lax_, Wh, Wx, xs):
    h, hs, gs = _rnn_prog(np_, lax_, Wh, Wx, xs)
    return (hs * gs).sum() + h.sum()


def _rnn_data(seed, T=24, B=4, H=16):
    rng = np.random.default_rng(seed)
    return ((rng.standard_normal((H, H)) * 0.3).astype(F),
            (rng.standard_normal((H, H)) * 0.3).astype(F),
            rng.standard_normal((T, B, H)).astype(F))


@pytest.mark.parametrize("reverse", [False, True])
def test_replayed_scan_steps_match_jax_across_calls(reverse):
    """Under the GPU strategies a kernels-only body is replayed (``_RecordedScan.
    _record_replay``): bind groups made once for a ring of buffer sets, the xs/ys slices
    bound as views at dynamic offsets.  Repeated calls with new inputs (and new input
    buffers: the old ones freed between calls) give real JAX's values, the gradient too, and
    a call repeated with the same arguments makes bind groups per ring set at most, not per
    step."""
    J = pytest.importorskip("jax")
    rt = runtime.get()
    made = []
    real = rt._new_bind_group
    with rt.options(**dict(profiles.GPU_STRATEGIES), in_kernel_loops=False):
        f = jax.jit(lambda *a: _rnn_prog(jnp, lax, *a, reverse=reverse))
        g = jax.jit(jax.grad(lambda *a: _rnn_loss(jnp, lax, *a), argnums=(0, 1)))
        got = []
        for seed in range(3):
            args = [jax.device_put(a) for a in _rnn_data(seed)]
            if seed == 2:       # the same arguments again: every bind group is found
                jax.block_until_ready((f(*args), g(*args)))
                rt._new_bind_group = lambda *a: (made.append(1), real(*a))[1]
            try:
                got.append(([np.asarray(v) for v in f(*args)],
                            [np.asarray(v) for v in g(*args)]))
            finally:
                rt._new_bind_group = real
            del args
    want_f = J.jit(lambda *a: _rnn_prog(J.numpy, J.lax, *a, reverse=reverse))
    want_g = J.jit(J.grad(lambda *a: _rnn_loss(J.numpy, J.lax, *a), argnums=(0, 1)))
    for seed, (fv, gv) in enumerate(got):
        data = _rnn_data(seed)
        for x, y in zip(fv, want_f(*data)):
            np.testing.assert_allclose(x, np.asarray(y), rtol=2e-5, atol=2e-5)
        for x, y in zip(gv, want_g(*data)):
            np.testing.assert_allclose(x, np.asarray(y), rtol=1e-4, atol=1e-4)
    # per kernel binding a ys buffer, one per ring set (17) when the pool hands the outputs
    # out in another order; per step (the static windows) it was > 5 x 24
    assert len(made) <= 48, len(made)


def test_replay_is_used_and_falls_back_without_dynamic_offsets(monkeypatch):
    """The replay runs where every slice binding takes a dynamic offset; on an adapter
    without dynamic storage offsets (``max_dynamic = 0``) the steps are recorded one by one
    with a bind group per window -- the same values."""
    from wjax._src.backend import host_steps
    rt = runtime.get()
    used = []
    orig = host_steps._RecordedScan._record_replay
    monkeypatch.setattr(host_steps._RecordedScan, "_record_replay",
                        lambda self, *a: (used.append(1), orig(self, *a))[1])
    data = _rnn_data(5, T=30, H=8)
    outs = {}
    for name, max_dyn in [("replay", rt.max_dynamic), ("fallback", 0)]:
        jax.clear_caches()      # pipelines compiled afresh with (or without) dynamic offsets
        monkeypatch.setattr(rt, "_dynamic", {})
        monkeypatch.setattr(rt, "max_dynamic", max_dyn)
        used.clear()
        with rt.options(**dict(profiles.GPU_STRATEGIES), in_kernel_loops=False):
            f = jax.jit(lambda *a: _rnn_prog(jnp, lax, *a))
            outs[name] = [np.asarray(v) for v in f(*data)]
            outs[name] += [np.asarray(v) for v in f(*data)]
        assert bool(used) == (name == "replay"), (name, used)
    jax.clear_caches()
    monkeypatch.undo()
    jax.clear_caches()      # the pipelines of the fallback had no dynamic bindings
    for a, b in zip(outs["replay"], outs["fallback"]):
        np.testing.assert_array_equal(a, b)
    want = _rnn_prog(np, _NumpyLax, *data)
    for a, b in zip(outs["replay"], want):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


class _NumpyLax:
    @staticmethod
    def scan(f, init, xs, reverse=False):
        c, ys = init, []
        order = range(len(xs))[::-1] if reverse else range(len(xs))
        for t in order:
            c, y = f(c, xs[t])
            ys.append(y)
        if reverse:
            ys = ys[::-1]
        return c, tuple(np.stack(v) for v in zip(*ys))


def test_dynamic_offsets_bind_windows_of_one_bind_group():
    """``Runtime.dynamic_offsets``: a kernel compiled before is compiled again with a binding
    taking a dynamic offset; dispatches binding windows (``View``) of one buffer at
    different offsets then share one bind group, and each reads its own window."""
    from wjax._src.backend.execute import upload
    from wjax._src.backend.runtime import View
    rt = runtime.get()
    f = jax.jit(lambda x: x * 2.0 + 1.0)
    x = np.arange(8, dtype=F)
    np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)
    (d,) = next(iter(f._cache.values()))[2].bound.exe.plan.steps   # binds (x, out)
    assert rt.dynamic_offsets(d.wgsl, [0]) == ((0,) if rt.max_dynamic else ())
    step = int(rt.target()["min-storage-buffer-offset-alignment"]) // 4   # floats
    src = upload(rt, np.arange(4 * step + 8, dtype=F))
    out = rt.alloc(32)
    made = []
    real = rt._new_bind_group
    rt._new_bind_group = lambda *a: (made.append(1), real(*a))[1]
    try:
        for k in range(4):
            rt.dispatch(d.wgsl, [View(src, 4 * k * step, 32), out], d.grid, d.ranges)
            v = np.frombuffer(rt.read(out, 32), F)
            np.testing.assert_array_equal(v, np.arange(k * step, k * step + 8) * 2 + 1)
    finally:
        rt._new_bind_group = real
    assert len(made) == (1 if rt.max_dynamic else 4), made
    np.testing.assert_array_equal(np.asarray(f(x + 1)), x * 2 + 3)   # whole buffers still
    jax.clear_caches()
