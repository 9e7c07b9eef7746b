"""Attention as one kernel (``backend/passes.attention_groups``, ``prims/attention.py``):
``softmax(f(Q K^T)) V`` with an online softmax where ``Target.attention`` allows (the GPU
forms, run here on lavapipe through ``runtime.options``), against real JAX and NumPy in
float64: odd sizes (query rows past a workgroup, keys past a block, head dimensions not a
multiple of 4), batch axes and none, transposed layouts, scales and masks (fully masked
rows: NaN as in JAX), special values, fused epilogues, ``grad`` and ``vmap``; the kernel is
asserted to be chosen (the plan's labels), and the programs it must not take keep their
kernels."""
from __future__ import annotations

import numpy as np
import pytest
from checks import rjax

import wjax
import wjax.numpy as jnp
from wjax._src.backend import profiles, runtime

RS = np.random.RandomState(0)


@pytest.fixture(autouse=True)
def _clear():
    yield
    wjax.clear_caches()


def gpu(threads=16):
    """The GPU forms with the kernel on (``attention``: no profile takes it now); ``threads``
    small enough that a few query rows take the kernel."""
    return runtime.get().options(**dict(profiles.GPU_FORMS, threads=threads, attention=64))


def labels(f, *args):
    return [getattr(s, "label", "host") for s in wjax.jit(f).lower(*args).compile().plan.steps]


def is_attention(label) -> bool:
    """The attention kernel's label (its layout copies are ``attention(<their producers>)``)."""
    return label.startswith("attention(dot_general")


def fused(f, *args) -> bool:
    return any(is_attention(lb) for lb in labels(f, *args))


def close(got, want, rtol=2e-5, atol=2e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    wide = np.complex128 if np.iscomplexobj(want) else np.float64
    np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=rtol,
                               atol=atol, equal_nan=True)


def attention(J, q, k, v, scale=None):
    m = J.numpy
    s = m.einsum("...qd,...kd->...qk", q, k)
    s = s / np.float32(np.sqrt(q.shape[-1])) if scale is None else s * scale
    return m.einsum("...qk,...kd->...qd", J.nn.softmax(s, axis=-1), v)


def reference(q, k, v, mask=None):
    """float64 NumPy attention with JAX's scale (None where a row is fully masked)."""
    s = np.einsum("...qd,...kd->...qk", q.astype(np.float64), k) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("...qk,...kd->...qd", e / e.sum(-1, keepdims=True), v)


def qkv(lead, sq, t, d, e, scale=1.0):
    return (RS.randn(*lead, sq, d).astype(np.float32) * scale,
            RS.randn(*lead, t, d).astype(np.float32) * scale,
            RS.randn(*lead, t, e).astype(np.float32))


@pytest.mark.parametrize("lead,sq,t,d,e", [
    ((2, 3), 70, 50, 16, 24),      # one query workgroup and a bit, one key block
    ((2, 2), 129, 200, 64, 64),    # query rows past two workgroups, keys past 3 blocks
    ((1, 2), 5, 7, 3, 5),          # head dimensions not a multiple of 4
    ((), 33, 65, 8, 8),            # no batch axes
    ((3,), 1, 1, 1, 1),            # one query, one key
    ((2, 1, 2), 64, 64, 32, 12),   # three batch axes, exact blocks
])
def test_one_kernel_matches_jax(lead, sq, t, d, e):
    """The program is planned with ONE attention kernel (after any layout copies) and agrees
    with JAX and with NumPy in float64."""
    J = rjax()
    q, k, v = qkv(lead, sq, t, d, e)
    with gpu():
        assert fused(lambda *a: attention(wjax, *a), q, k, v)
        got = wjax.jit(lambda *a: attention(wjax, *a))(q, k, v)
    close(got, J.jit(lambda *a: attention(J, *a))(q, k, v), rtol=2e-5, atol=2e-6)
    close(got, reference(q, k, v).astype(np.float32), rtol=2e-5, atol=2e-6)


def test_layouts():
    """Queries, keys and values in the (batch, seq, heads, dim) layout (read in place), keys
    stored transposed (copied), the output returned in the input layout: JAX's values."""
    J = rjax()
    b, s, h, d = 2, 40, 3, 16
    q, k, v = (RS.randn(b, s, h, d).astype(np.float32) for _ in range(3))
    kt = np.ascontiguousarray(np.moveaxis(k, 1, 3))           # b h d s

    def f(M, nn, q, k, v, kt):
        s1 = M.einsum("bqhd,bkhd->bhqk", q, k) * 0.25
        o1 = M.einsum("bhqk,bkhd->bqhd", nn.softmax(s1, axis=-1), v)
        s2 = M.einsum("bqhd,bhdk->bhqk", q, kt) * 0.25
        o2 = M.einsum("bhqk,bkhd->bhqd", nn.softmax(s2, axis=-1), v)
        return o1, o2
    with gpu():
        lb = labels(lambda *a: f(jnp, wjax.nn, *a), q, k, v, kt)
        got = wjax.jit(lambda *a: f(jnp, wjax.nn, *a))(q, k, v, kt)
    assert sum(map(is_attention, lb)) == 2, lb
    # (b, s, h, d) operands are read in place; only the transposed keys take a copy; the
    # output transposed back to (b, s, h, d) is stored there by the kernel itself
    assert sum(x.startswith("attention") and not is_attention(x) for x in lb) == 1, lb
    assert len(lb) == 3, lb
    want = J.jit(lambda *a: f(J.numpy, J.nn, *a))(q, k, v, kt)
    for g, w in zip(got, want):
        close(g, w)


def test_output_transposed_and_read_as_is():
    """The output read through a transpose (flax's (b, s, h, d) layout) and also as is, with
    math on both reads: the kernel stores the output and each root at its own position, in
    one kernel; the transposed root alone: the output itself is not stored."""
    J = rjax()
    b, s, h, d = 2, 33, 3, 8
    q, k, v = (RS.randn(b, s, h, d).astype(np.float32) for _ in range(3))
    r = RS.randn(b, s, h, d).astype(np.float32)

    def core(M, nn, q, k, v):
        s1 = M.einsum("bqhd,bkhd->bhqk", q, k) * 0.3
        return M.einsum("bhqk,bkhd->bhqd", nn.softmax(s1, axis=-1), v)

    def both(M, nn, q, k, v, r):
        o = core(M, nn, q, k, v)
        return o, M.transpose(o, (0, 2, 1, 3)) * 2.0 + r

    def only_t(M, nn, q, k, v, r):
        return nn.relu(M.transpose(core(M, nn, q, k, v), (0, 2, 1, 3)) + r)
    for f in (both, only_t):
        with gpu():
            lb = labels(lambda *a: f(jnp, wjax.nn, *a), q, k, v, r)
            got = wjax.jit(lambda *a: f(jnp, wjax.nn, *a))(q, k, v, r)
        assert len(lb) == 1 and is_attention(lb[0]), (f.__name__, lb)
        want = J.jit(lambda *a: f(J.numpy, J.nn, *a))(q, k, v, r)
        for g, w in zip(*((got, want) if f is both else ((got,), (want,)))):
            close(g, w)


def test_masks_and_scales():
    """The scores' elementwise math joins the kernel: a traced scale, a causal mask from
    iotas, an additive bias read through a broadcast, a boolean mask with a fully masked
    row (NaN, as JAX: exp(-inf - -inf))."""
    J = rjax()
    q, k, v = qkv((2, 2), 37, 37, 8, 8)
    bias = RS.randn(2, 37, 37).astype(np.float32)
    mask = RS.rand(2, 2, 37, 37) > 0.3
    mask[0, 1, 5, :] = False                  # a row with no key left: NaN in JAX

    def f(J, q, k, v, scale, bias, mask):
        M = J.numpy
        causal = M.arange(37)[:, None] >= M.arange(37)[None, :]
        masks = (lambda s: M.where(causal, s, -M.inf), lambda s: s + bias[None],
                 lambda s: M.where(mask, s, -M.inf))
        out = []
        for n, g in enumerate(masks):     # three products (one would be read three times)
            s = M.einsum("bhqd,bhkd->bhqk", q + n, k) * scale
            out.append(M.einsum("bhqk,bhkd->bhqd", J.nn.softmax(g(s), axis=-1), v))
        return out
    args = (q, k, v, np.float32(0.3), bias, mask)
    with gpu():
        lb = labels(lambda *a: f(wjax, *a), *args)
        got = wjax.jit(lambda *a: f(wjax, *a))(*args)
    assert sum(map(is_attention, lb)) == 3, lb
    want = J.jit(lambda *a: f(J, *a))(*args)
    for g, w in zip(got, want):
        close(g, w)
    assert np.isnan(np.asarray(got[2])[0, 1, 5]).all()
    assert not np.isnan(np.delete(np.asarray(got[2]).reshape(-1, 8), 1 * 37 + 5, 0)).any()


def test_special_values():
    """NaN and inf in the queries make their rows NaN; huge scores (every exp but one
    underflows) and equal scores: JAX's values."""
    J = rjax()
    q, k, v = qkv((1, 2), 20, 30, 4, 4)
    q[0, 0, 1, 0] = np.nan
    q[0, 0, 2, 1] = np.inf
    q[0, 1, 3] = 1e4
    q[0, 1, 4] = 0.0
    k[0, 1, 7] = 1e4
    with gpu():
        assert fused(lambda *a: attention(wjax, *a), q, k, v)
        got = wjax.jit(lambda *a: attention(wjax, *a))(q, k, v)
    close(got, J.jit(lambda *a: attention(J, *a))(q, k, v))
    assert np.isnan(np.asarray(got)[0, 0, 1]).all() and np.isnan(np.asarray(got)[0, 0, 2]).all()


def test_epilogue():
    """Elementwise math on the output (a residual, a relu) fuses into the kernel's stores."""
    J = rjax()
    q, k, v = qkv((2,), 30, 20, 8, 12)
    r = RS.randn(2, 30, 12).astype(np.float32)

    def f(J, q, k, v, r):
        return J.nn.relu(attention(J, q, k, v) * 2.0 + r)
    with gpu():
        lb = labels(lambda *a: f(wjax, *a), q, k, v, r)
        got = wjax.jit(lambda *a: f(wjax, *a))(q, k, v, r)
    assert len(lb) == 1 and is_attention(lb[0]), lb
    close(got, J.jit(lambda *a: f(J, *a))(q, k, v, r))


def test_grad_and_vmap():
    """Gradients through attention (the backward keeps the probabilities: three-kernel
    form) and ``vmap`` over another batch axis (still one attention kernel) agree with
    JAX."""
    J = rjax()
    q, k, v = qkv((2,), 17, 23, 8, 8)
    w = RS.randn(2, 17, 8).astype(np.float32)

    def loss(J):
        return lambda q, k, v: (attention(J, q, k, v) * w).sum()
    with gpu():
        got = wjax.jit(wjax.grad(loss(wjax), argnums=(0, 1, 2)))(q, k, v)
    want = J.jit(J.grad(loss(J), argnums=(0, 1, 2)))(q, k, v)
    for g, x in zip(got, want):
        close(g, x, rtol=5e-5, atol=1e-5)
    qs, ks, vs = qkv((3, 2), 9, 11, 4, 4)
    with gpu():
        vf = wjax.vmap(lambda *a: attention(wjax, *a))
        assert fused(vf, qs, ks, vs)
        got = wjax.jit(vf)(qs, ks, vs)
    close(got, J.jit(J.vmap(lambda *a: attention(J, *a)))(qs, ks, vs))


def test_not_taken():
    """Programs that are not (exactly) attention keep their kernels, with the same values:
    the probabilities also returned, a softmax over the queries, a head dimension past
    ``Target.attention``, a CPU profile, too few query rows for the device's threads."""
    J = rjax()
    q, k, v = qkv((2,), 16, 16, 8, 8)

    def both(J, q, k, v):
        p = J.nn.softmax(J.numpy.einsum("bqd,bkd->bqk", q, k), axis=-1)
        return J.numpy.einsum("bqk,bkd->bqd", p, v), p

    def cols(J, q, k, v):
        p = J.nn.softmax(J.numpy.einsum("bqd,bkd->bqk", q, k), axis=-2)
        return J.numpy.einsum("bqk,bkd->bqd", p, v)
    qw, kw, vw = qkv((1,), 8, 8, 72, 8)
    cases = [(both, (q, k, v)), (cols, (q, k, v)),
             (lambda J, *a: attention(J, *a), (qw, kw, vw))]
    for f, args in cases:
        with gpu():
            assert not fused(lambda *a: f(wjax, *a), *args)
            got = wjax.jit(lambda *a: f(wjax, *a))(*args)
        want = J.jit(lambda *a: f(J, *a))(*args)
        for g, w in zip(*(x if isinstance(x, (tuple, list)) else [x] for x in (got, want))):
            close(g, w)
    with runtime.get().options(**profiles.CPU_FORMS):
        assert not fused(lambda *a: attention(wjax, *a), q, k, v)
    # no profile takes the kernel: a thread per query row lost 3x to the three kernels on
    # an H200 (6.7 against 2.25 ms at b8 h16 s1024 d64)
    assert profiles.GPU_FORMS["attention"] == profiles.CPU_FORMS["attention"] == 0
    with runtime.get().options(**dict(profiles.GPU_STRATEGIES, threads=16)):
        assert not fused(lambda *a: attention(wjax, *a), q, k, v)
    # a decoding step: one query row per head, too few threads for a GPU's 2^18 / 16
    qd, kd, vd = qkv((2, 4), 1, 300, 16, 16)
    with gpu(threads=1 << 18):
        assert not fused(lambda *a: attention(wjax, *a), qd, kd, vd)
        got = wjax.jit(lambda *a: attention(wjax, *a))(qd, kd, vd)
    with gpu():
        assert fused(lambda *a: attention(wjax, *a), qd, kd, vd)
    close(got, J.jit(lambda *a: attention(J, *a))(qd, kd, vd))


def test_other_literals_after_a_product():
    """The matcher reads every literal after a product to find a softmax's -inf: complex,
    integer and boolean ones are not -inf (a complex one raised numpy's TypeError from the
    pass, so a complex program did not compile on a GPU profile: the grad of ``vdot``)."""
    J = rjax()
    a, b = RS.randn(2, 8, 4).astype(np.float32), RS.randn(2, 4, 8).astype(np.float32)
    z = (RS.randn(5) + 1j * RS.randn(5)).astype(np.complex64)
    i = np.arange(5, dtype=np.int32)

    def f(J, a, b, z, i):
        s = J.numpy.einsum("bqd,bdk->bqk", a, b)
        w, n = z * (1 - 2j) + 3j, i * 3 + (i > 2)       # between the product and the softmax
        return J.nn.softmax(s, axis=-1), w, n, J.numpy.vdot(z, z * 2j)
    with gpu():
        got = wjax.jit(lambda *x: f(wjax, *x))(a, b, z, i)
        g = wjax.grad(lambda z: J_real(wjax, z))(z)
    want = J.jit(lambda *x: f(J, *x))(a, b, z, i)
    for x, y in zip(got, want):
        close(x, y)
    close(g, J.grad(lambda z: J_real(J, z))(z))


def J_real(J, z):
    return J.numpy.real(J.numpy.vdot(z, z * (1 + 1j)))


def test_two_layers():
    """Attention whose output is the next attention's queries and keys (and read once more):
    two attention kernels, JAX's values."""
    J = rjax()
    q, k, v = (RS.randn(32, 16).astype(np.float32) for _ in range(3))

    def f(J, q, k, v):
        o = J.nn.softmax(q @ k.T / 4.0, axis=-1) @ v
        return J.nn.softmax(o @ o.T, axis=-1) @ v, o.sum(-1)
    with gpu():
        lb = labels(lambda *a: f(wjax, *a), q, k, v)
        got = wjax.jit(lambda *a: f(wjax, *a))(q, k, v)
    assert sum(map(is_attention, lb)) == 2, lb
    for g, w in zip(got, J.jit(lambda *a: f(J, *a))(q, k, v)):
        close(g, w, rtol=1e-4, atol=1e-5)


def test_rising_scores():
    """Scores that rise along the keys (a position bias, as ALiBi's): the online softmax's
    reference moves up again and again; the result stays as close to float64 as the three
    kernels' (absolute error below 1e-6 on outputs of size ~0.1-1) and to JAX."""
    J = rjax()
    T = 2000
    q = RS.randn(2, 64, 8).astype(np.float32) * 0.1
    k = RS.randn(2, T, 8).astype(np.float32) * 0.1
    v = RS.randn(2, T, 8).astype(np.float32)
    bias = (np.arange(T, dtype=np.float32) * 0.01)[None, None, :]

    def f(J, q, k, v, bias):
        s = J.numpy.einsum("bqd,bkd->bqk", q, k) + bias
        return J.numpy.einsum("bqk,bkd->bqd", J.nn.softmax(s, axis=-1), v)
    s = np.einsum("bqd,bkd->bqk", q.astype(np.float64), k) + bias
    e = np.exp(s - s.max(-1, keepdims=True))
    want = np.einsum("bqk,bkd->bqd", e / e.sum(-1, keepdims=True), v).astype(np.float32)
    with gpu():
        assert fused(lambda *a: f(wjax, *a), q, k, v, bias)
        got = wjax.jit(lambda *a: f(wjax, *a))(q, k, v, bias)
    close(got, want, rtol=0, atol=1e-6)
    close(got, J.jit(lambda *a: f(J, *a))(q, k, v, bias), rtol=0, atol=1e-6)
