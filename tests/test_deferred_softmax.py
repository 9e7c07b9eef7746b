"""``passes.deferred_normalization``: a softmax whose probabilities only a product reads,
contracting the softmax's axes (attention's second product, ``softmax(x) @ v``), is
normalized after the product -- one division per output instead of one per probability --
against real JAX and NumPy: attention in both layouts, masks, rows of -inf, batch axes,
vmap and grad, CPU and GPU forms; and the programs it must leave alone."""
from __future__ import annotations

import numpy as np
import pytest
from checks import rjax

import wjax
import wjax.numpy as jnp
from wjax._src.backend import profiles, runtime
from wjax._src.backend.passes import cse_and_fold, deferred_normalization
from wjax._src.transforms.dce import dce_jaxpr

F = np.float32


@pytest.fixture(params=["cpu", "gpu"])
def forms(request):
    """CPU forms (the pass is not applied: the division after the product would be a kernel
    of its own there) and GPU forms (applied: the product's epilogue)."""
    wjax.clear_caches()
    opts = profiles.CPU_FORMS if request.param == "cpu" else dict(profiles.GPU_FORMS,
                                                                  attention=0)
    with runtime.get().options(**opts):
        yield request.param
    wjax.clear_caches()


def divisions(f, *args):
    """The shapes divided, in the jaxpr as the lowering plans it (after CSE and the pass)."""
    j = deferred_normalization(dce_jaxpr(cse_and_fold(wjax.make_jaxpr(f)(*args).jaxpr))[0])
    return [tuple(e.outvars[0].aval.shape) for e in j.eqns if e.primitive.name == "div"]


def attn(J, q, k, v, mask=None):
    s = J.numpy.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = J.numpy.where(mask, s, -np.inf)
    return J.numpy.einsum("bhqk,bhkd->bhqd", J.nn.softmax(s, axis=-1), v)


def attn_bshd(J, q, k, v):
    s = J.numpy.einsum("bqhd,bkhd->bhqk", q, k)
    return J.numpy.einsum("bhqk,bkhd->bqhd", J.nn.softmax(s, axis=-1), v)


def close(got, want, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def test_attention_divides_its_outputs_against_jax(forms):
    J = rjax()
    rs = np.random.RandomState(0)
    q, k, v = (rs.randn(2, 3, 20, 8).astype(F) for _ in range(3))
    mask = np.tril(np.ones((20, 20), bool))[None, None]
    # the (b, h, q, k) probabilities are no longer divided (the scores still are, by
    # sqrt(d)); the (b, h, q, d) outputs are
    assert divisions(lambda *a: attn(wjax, *a), q, k, v) == [(2, 3, 20, 20), (2, 3, 20, 8)]
    qs, ks, vs = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
    for f, args in ((attn, (q, k, v)),
                    (lambda J, *a: attn(J, *a, mask=mask), (q, k, v)),
                    (attn_bshd, (qs, ks, vs))):
        close(wjax.jit(lambda *a: f(wjax, *a))(*args), J.jit(lambda *a: f(J, *a))(*args))
    # NumPy, float64
    s = np.einsum("bhqd,bhkd->bhqk", q, k).astype(np.float64) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    close(wjax.jit(lambda *a: attn(wjax, *a))(q, k, v),
          np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True), v))


def test_special_values_and_transforms(forms):
    """A row all -inf (NaN in JAX as here), huge scores, vmap of it and grad through it (the
    grad keeps the probabilities for its backward pass: nothing deferred there)."""
    J = rjax()
    rs = np.random.RandomState(1)
    x = rs.randn(4, 6, 10).astype(F)
    x[0, 1] = -np.inf
    x[1, 2, 3] = 80.0
    v = rs.randn(10, 5).astype(F)

    def f(M, nn, x, v):
        return nn.softmax(x, axis=-1) @ v
    assert divisions(lambda x, v: f(jnp, wjax.nn, x, v), x, v) == [(4, 6, 5)]
    got = wjax.jit(lambda x, v: f(jnp, wjax.nn, x, v))(x, v)
    want = J.jit(lambda x, v: f(J.numpy, J.nn, x, v))(x, v)
    assert np.isnan(np.asarray(got)[0, 1]).all() and np.isnan(np.asarray(want)[0, 1]).all()
    ok = ~np.isnan(np.asarray(want))
    close(np.asarray(got)[ok], np.asarray(want)[ok])
    xs = np.where(np.isinf(x), 0, x)
    vm = wjax.jit(wjax.vmap(lambda x: f(jnp, wjax.nn, x, v)))(xs)
    close(vm, J.jit(J.vmap(lambda x: f(J.numpy, J.nn, x, v)))(xs))

    def loss(M, nn, x, v):
        return M.sum(f(M, nn, x, v) ** 2)
    g = wjax.jit(wjax.grad(lambda x, v: loss(jnp, wjax.nn, x, v), argnums=(0, 1)))(xs, v)
    w = J.jit(J.grad(lambda x, v: loss(J.numpy, J.nn, x, v), argnums=(0, 1)))(xs, v)
    for a, b in zip(g, w):
        close(a, b, rtol=1e-4, atol=1e-5)


def test_left_alone():
    """Kept as written: probabilities also returned or read twice, a product contracting
    other axes than the softmax's, batch axes after free ones; a softmax over the axis the
    product contracts, wherever it is, is deferred."""
    rs = np.random.RandomState(2)
    x = rs.randn(3, 6, 6).astype(F)
    v = rs.randn(6, 4).astype(F)
    b = rs.randn(6, 3, 4).astype(F)
    cases = [
        lambda x, v: (wjax.nn.softmax(x, -1) @ v, wjax.nn.softmax(x, -1)),
        lambda x, v: wjax.nn.softmax(x, -1) @ v + wjax.nn.softmax(x, -1)[..., :4],
        lambda x, v: jnp.einsum("bqk,qd->bkd", wjax.nn.softmax(x, -1), v),
    ]
    for f in cases:
        assert (3, 6, 6) in divisions(f, x, v), f
        close(wjax.jit(f)(x, v)[0] if isinstance(f(x, v), tuple) else wjax.jit(f)(x, v),
              f(x, v)[0] if isinstance(f(x, v), tuple) else f(x, v))
    # batch axis 1 of the probabilities, a free axis before it: the sums would not line up
    g = lambda x, b: jnp.einsum("qbk,kbd->bqd", wjax.nn.softmax(x, -1), b)  # noqa: E731
    xt = x.transpose(1, 0, 2)
    assert any(s == (6, 3, 6) for s in divisions(g, xt, b))
    p = np.exp(xt - xt.max(-1, keepdims=True))
    close(wjax.jit(g)(xt, b), np.einsum("qbk,kbd->bqd", p / p.sum(-1, keepdims=True), b))


def test_a_softmax_over_the_contracted_middle_axis(forms):
    """softmax over axis 1 of (b, q, k) contracted over q: the sums (b, k) line up with the
    product's (b, k, d) result."""
    J = rjax()
    rs = np.random.RandomState(3)
    x = rs.randn(3, 7, 5).astype(F)
    v = rs.randn(7, 4).astype(F)

    def f(M, nn, x, v):
        return M.einsum("bqk,qd->bkd", nn.softmax(x, axis=1), v)
    assert divisions(lambda x, v: f(jnp, wjax.nn, x, v), x, v) == [(3, 5, 4)]
    close(wjax.jit(lambda x, v: f(jnp, wjax.nn, x, v))(x, v),
          J.jit(lambda x, v: f(J.numpy, J.nn, x, v))(x, v))


def test_taken_where_rows_are_resident():
    """The plan: under the GPU forms attention is a product, the row-resident softmax (no
    division of the probabilities) and a product dividing its outputs in its own kernel;
    the CPU forms keep their plan."""
    rs = np.random.RandomState(4)
    q, k, v = (rs.randn(1, 2, 64, 16).astype(F) for _ in range(3))

    def labels():
        wjax.clear_caches()
        return [getattr(s, "label", "host") for s in
                wjax.jit(lambda *a: attn(wjax, *a)).lower(q, k, v).compile().plan.steps]
    with runtime.get().options(**dict(profiles.GPU_STRATEGIES, spin_wait_us=0, threads=16)):
        assert labels() == ["dot_general", "row_group(div,exp,sub,max,reduce_max,reduce_sum)",
                            "dot_general(div)"]
    with runtime.get().options(**profiles.CPU_FORMS):
        assert "fused(div)" not in labels()
