"""Loops split into blocks of rows (``transforms/row_split.py``; ``backend/loops.py``): an
in-kernel loop whose step keeps its carries' rows apart -- an RNN cell over a batch -- runs one
workgroup per block of rows instead of one workgroup for all of them.

Each program runs three ways: split (``Target.loop_slices`` 4; the plan's label says over
how many workgroups), unsplit (``loop_slices`` 1: the same values -- every row's arithmetic
is the same; bit for bit on lavapipe, to a few ulps where a driver may contract a kernel's
multiply-adds differently), and under real JAX; under the CPU and the GPU kernel forms.
Steps that mix rows (a sum over the batch, a roll or reversal of it, a product contracting
it) and loop arrays holding rows along another axis than the first are not split.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from checks import examples
from hypothesis import given, strategies as st

import wjax
from wjax._src.backend import profiles, runtime

F = np.float32
FORMS = {"cpu": dict(profiles.CPU_STRATEGIES),
         "gpu": dict(profiles.GPU_STRATEGIES, spin_wait_us=0)}
RS = np.random.RandomState(0)


def rand(*shape, scale=1.0):
    return (RS.randn(*shape) * scale).astype(F)


def splits(f, *args) -> list:
    """The number of workgroups each in-kernel loop of ``f``'s plan is split over."""
    text = f.lower(*args).as_text()
    loops = text.count("one kernel loops")
    found = [int(n) for n in re.findall(r"its rows split over (\d+) workgroups", text)]
    return found + [1] * (loops - len(found))


def check(prog, args, want, forms, rtol=2e-5, atol=2e-6, **options):
    """Runs ``prog(jax, jnp, lax)(*args)`` split and unsplit under ``forms`` and with real JAX;
    ``want``: the split of each in-kernel loop of the split run."""
    rj = pytest.importorskip("jax")
    rt = runtime.get()
    fn = prog(wjax, wjax.numpy, wjax.lax)
    with rt.options(**dict(FORMS[forms], loop_slices=4, **options)):
        f = wjax.jit(fn)
        assert splits(f, *args) == want
        got = [np.asarray(x) for x in wjax.tree_util.tree_leaves(f(*args))]
    with rt.options(**dict(FORMS[forms], loop_slices=1, **options)):
        g = wjax.jit(fn)
        assert set(splits(g, *args)) <= {1}
        base = [np.asarray(x) for x in wjax.tree_util.tree_leaves(g(*args))]
    ref = rj.jit(prog(rj, rj.numpy, rj.lax))(*args)
    ref = [np.asarray(x) for x in rj.tree_util.tree_leaves(ref)]
    assert len(got) == len(ref)
    for a, b, r in zip(got, base, ref):
        if max(want) > 1:
            np.testing.assert_allclose(a, b, rtol=4e-7, atol=1e-7)
        np.testing.assert_allclose(a, r, rtol=rtol, atol=atol)


B, H, T = 8, 16, 6
HI = "highest"


def rnn(J, N, L):
    def run(W, U, bias, h0, xs):
        def cell(h, x):
            h = N.tanh(N.dot(h, W, precision=HI) + N.dot(x, U, precision=HI) + bias)
            return h, h
        return L.scan(cell, h0, xs)
    return run


RNN_ARGS = (rand(H, H, scale=0.25), rand(H, H, scale=0.25), rand(H, scale=0.1),
            rand(B, H), rand(T, B, H))


@pytest.mark.parametrize("forms", ["cpu", "gpu"])
def test_rnn_scan_runs_in_blocks_of_rows(forms):
    check(rnn, RNN_ARGS, [4], forms)


@pytest.mark.parametrize("forms", ["cpu", "gpu"])
def test_rnn_grad_runs_in_blocks_of_rows(forms):
    def prog(J, N, L):
        def loss(W, U, bias, h0, xs):
            h, hs = rnn(J, N, L)(W, U, bias, h0, xs)
            return N.sum(hs * hs) + N.sum(h)
        return J.grad(loss, argnums=(0, 1, 2, 3, 4))
    check(prog, RNN_ARGS, [4, 4], forms, rtol=1e-4, atol=1e-5)


def test_a_bias_gradient_through_reshapes_leaves_the_loop():
    """flax's Dense adds its bias as ``b.reshape(1, H)``: the backward step's bias term is
    a sum over the rows read through reshapes, which scan restructuring sums after the loop
    from the stacked cotangents, so the backward step splits too."""
    def prog(J, N, L):
        def loss(W, bias, h0, xs):
            def cell(h, x):
                h = N.tanh(N.dot(h, W, precision=HI) + x + bias.reshape(1, H))
                return h, h
            return N.sum(L.scan(cell, h0, xs)[1] ** 2)
        return J.grad(loss, argnums=(0, 1, 2))
    check(prog, (RNN_ARGS[0], RNN_ARGS[2], RNN_ARGS[3], RNN_ARGS[4]), [4, 4], "cpu",
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("forms", ["cpu", "gpu"])
def test_lstm_gates_concatenated_and_sliced(forms):
    """An LSTM cell: the input and hidden rows concatenated along the features, one product
    for the four gates, the gates sliced out; two carries. 6 rows: 3 blocks of 2."""
    Hl = 8

    def prog(J, N, L):
        def run(W, h0, c0, xs):
            def cell(carry, x):
                h, c = carry
                z = N.dot(N.concatenate([x, h], axis=1), W, precision=HI)
                i, f, g, o = (z[:, k * Hl:(k + 1) * Hl] for k in range(4))
                c = J.nn.sigmoid(f) * c + J.nn.sigmoid(i) * N.tanh(g)
                h = J.nn.sigmoid(o) * N.tanh(c)
                return (h, c), h.sum(axis=1)
            return L.scan(cell, (h0, c0), xs)
        return run
    check(prog, (rand(2 * Hl, 4 * Hl, scale=0.3), rand(6, Hl), rand(6, Hl), rand(5, 6, Hl)),
          [3], forms)


@pytest.mark.parametrize("forms", ["cpu", "gpu"])
def test_unsplit_carries_and_ys_beside_split_ones(forms):
    """A step counter and a value computed from the constants alone ride along: every
    workgroup computes them, the first stores them; a mask over the rows is a constant split
    with them; a column index (iota) is the same for every row."""
    mask = (RS.rand(B, H) > 0.3).astype(F)

    def prog(J, N, L):
        def run(W, h0, xs):
            def cell(carry, x):
                h, t, s = carry
                cols = L.broadcasted_iota(F, (B, H), 1) / H
                h = N.tanh(N.dot(h, W, precision=HI) * mask + x + cols)
                return (h, t + 1, s * 0.5 + W[0, 0]), (h, t, s)
            return L.scan(cell, (h0, N.int32(0), F(1)), xs)
        return run
    check(prog, (rand(H, H, scale=0.25), rand(B, H), rand(T, B, H)), [4], forms)


@pytest.mark.parametrize("forms", ["cpu", "gpu"])
def test_while_loop_and_reshaped_rows(forms):
    def prog(J, N, L):
        def run(W, h0):
            def body(c):
                h, i = c
                h = N.tanh(N.dot(h, W, precision=HI))
                h = (h.reshape(B, H // 2, 2) * N.array([1.0, -0.5], F)).reshape(B, H)
                return h, i + 1
            return L.while_loop(lambda c: c[1] < 7, body, (h0, 0))
        return run
    check(prog, (rand(H, H, scale=0.3), rand(B, H)), [4], forms)


def test_vmapped_scan_splits_the_mapped_axis():
    def prog(J, N, L):
        def one(W, h0, xs):          # one sequence: a vector carry
            return L.scan(lambda h, x: (N.tanh(N.dot(W, h, precision=HI) + x),) * 2, h0, xs)
        return J.vmap(one, in_axes=(None, 0, 1))
    check(prog, (rand(H, H, scale=0.25), rand(B, H), rand(T, B, H)), [4], "cpu")


def test_split_loop_runs_in_chunks():
    """A small per-dispatch bound: the split loop runs in many chunks, the carries
    ping-ponging between buffer sets block by block."""
    check(rnn, RNN_ARGS, [4], "cpu", loop_work=300)


def test_blocks_divide_the_rows():
    """6 rows and at most 4 blocks: 3 blocks of 2; 7 rows: no split."""
    args6 = (RNN_ARGS[0], RNN_ARGS[1], RNN_ARGS[2], rand(6, H), rand(T, 6, H))
    check(rnn, args6, [3], "cpu")
    args7 = (RNN_ARGS[0], RNN_ARGS[1], RNN_ARGS[2], rand(7, H), rand(T, 7, H))
    check(rnn, args7, [1], "cpu")


MIXING = {
    "sum over the rows": lambda N, L, h, W: N.tanh(N.dot(h, W, precision=HI)) + h.sum(0) * 0.1,
    "roll of the rows": lambda N, L, h, W: N.tanh(N.dot(h, W, precision=HI)) + N.roll(h, 1, 0),
    "rows reversed": lambda N, L, h, W: N.tanh(N.dot(h, W, precision=HI)) + h[::-1] * 0.5,
    "rows contracted": lambda N, L, h, W: N.tanh(N.dot(N.dot(h, h.T, precision=HI) * 0.01, h,
                                                     precision=HI)),
    "a row picked": lambda N, L, h, W: N.tanh(N.dot(h, W, precision=HI)) + h[2] * 0.5,
}


@pytest.mark.parametrize("kind", sorted(MIXING))
def test_steps_that_mix_rows_are_not_split(kind):
    def prog(J, N, L):
        def run(W, h0):
            return L.fori_loop(0, 5, lambda i, h: MIXING[kind](N, L, h, W), h0)
        return run
    check(prog, (rand(H, H, scale=0.25), rand(B, H, scale=0.5)), [1], "cpu",
          rtol=1e-4, atol=1e-5)


def test_rows_along_another_axis_of_xs_are_not_split():
    """xs of (T, H, B): each step's slice holds the rows along its second axis, which a
    block of the first axis does not cut out."""
    def prog(J, N, L):
        def run(W, h0, xs):
            return L.scan(lambda h, x: (N.tanh(N.dot(h, W, precision=HI) + x.T),) * 2, h0, xs)
        return run
    check(prog, (rand(H, H, scale=0.25), rand(B, H), rand(T, H, B)), [1], "cpu")


def test_a_block_that_fits_a_workgroup_where_the_whole_does_not():
    """GPU forms, 16 rows of 128: one iteration is past the single-workgroup budget, so the
    unsplit loop is recorded step by step (its products on the matmul kernel); in 4 blocks of
    4 rows each fits one workgroup, and the loop is one kernel."""
    Hb = 128

    def prog(J, N, L):
        def run(W, h0, xs):
            return L.scan(lambda h, x: (N.tanh(N.dot(h, W, precision=HI) + x),) * 2, h0, xs)
        return run
    args = (rand(Hb, Hb, scale=0.09), rand(16, Hb), rand(4, 16, Hb))
    rj = pytest.importorskip("jax")
    rt = runtime.get()
    fn = prog(wjax, wjax.numpy, wjax.lax)
    with rt.options(**dict(FORMS["gpu"], loop_slices=4)):
        f = wjax.jit(fn)
        assert splits(f, *args) == [4]
        got = f(*args)
    with rt.options(**dict(FORMS["gpu"], loop_slices=1)):
        assert splits(wjax.jit(fn), *args) == []      # recorded: no in-kernel loop
    want = rj.jit(prog(rj, rj.numpy, rj.lax))(*args)
    for a, b in zip(wjax.tree_util.tree_leaves(got), rj.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)


# A step drawn from row-keeping pieces (elementwise math, products with a shared weight, sums
# over the features broadcast back, reshapes and slices of the features, a bias, a column
# count) and, sometimes, one piece that mixes rows; split where nothing mixes, never where
# something does, and the same values either way.
KEEP = {
    "tanh": lambda N, L, h, W: N.tanh(h),
    "dot": lambda N, L, h, W: N.dot(h, W, precision=HI) * 0.5,
    "dotT": lambda N, L, h, W: N.dot(h, W.T, precision=HI) * 0.5,
    "center": lambda N, L, h, W: h - h.mean(axis=1, keepdims=True),
    "norm": lambda N, L, h, W: h / (1.0 + N.sqrt((h * h).sum(axis=1, keepdims=True))),
    "max": lambda N, L, h, W: h - N.max(h, axis=1, keepdims=True) * 0.1,
    "swap": lambda N, L, h, W: N.concatenate([h[:, H // 2:], h[:, :H // 2]], axis=1),
    "pairs": lambda N, L, h, W: (h.reshape(h.shape[0], H // 2, 2)[:, :, ::-1]).reshape(
        h.shape[0], H),
    "twice_t": lambda N, L, h, W: (h.T * 0.9).T,
    "bias": lambda N, L, h, W: h + W[0] * 0.1,
    "cols": lambda N, L, h, W: h + L.broadcasted_iota(np.float32, h.shape, 1) * 0.01,
}
MIX = {
    "rowsum": lambda N, L, h, W: h + h.sum(axis=0) * 0.01,
    "roll": lambda N, L, h, W: h + N.roll(h, 1, axis=0) * 0.1,
    "first": lambda N, L, h, W: h + h[0] * 0.1,
    "gram": lambda N, L, h, W: h + N.dot(N.dot(h, h.T, precision=HI), h, precision=HI) * 1e-3,
    "rows": lambda N, L, h, W: h + L.broadcasted_iota(np.float32, h.shape, 0) * 0.01,
}


@examples(25)
@given(st.lists(st.sampled_from(sorted(KEEP)), min_size=1, max_size=4),
       st.one_of(st.none(), st.sampled_from(sorted(MIX))), st.integers(0, 3),
       st.sampled_from([2, 4, 6, 8]), st.sampled_from(["cpu", "gpu"]))
def test_random_steps_split_only_when_rows_stay_apart(keep, mix, where, rows, forms):
    pieces = [KEEP[k] for k in keep]
    if mix is not None:
        pieces.insert(min(where, len(pieces)), MIX[mix])

    def prog(J, N, L):
        def run(W, h0, xs):
            def cell(h, x):
                for p in pieces:
                    h = p(N, L, h, W)
                return N.tanh(h + x), h.sum(axis=1)
            return L.scan(cell, h0, xs)
        return run
    rs = np.random.RandomState(len(keep) * 7 + where)
    args = (rand(H, H, scale=0.2), (rs.randn(rows, H) * 0.5).astype(F), rand(3, rows, H))
    blocks = max(d for d in range(1, 5) if rows % d == 0)
    check(prog, args, [1 if mix is not None else blocks], forms, rtol=1e-4, atol=1e-5)
