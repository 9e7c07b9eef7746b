"""jnp.linalg.qr (Householder, LAPACK's signs) and the initializers built on it
(nn.initializers.orthogonal, delta_orthogonal) against real JAX: every mode, tall, wide,
square and batched matrices, an already-triangular input, gradients through R, and the
bad calls."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

RNG = np.random.RandomState(0)
MATS = {f"{s}": RNG.randn(*s).astype(np.float32) for s in [(5, 3), (3, 5), (4, 4), (2, 4, 3)]}
MATS["triangular"] = np.triu(RNG.randn(3, 3)).astype(np.float32)
# a column starting with -0.0: LAPACK's sign(-0) is negative, so R's diagonal is +|x|
MATS["negative zero"] = np.array([[-0.0, 1], [1, 2], [2, 0]], np.float32)


@pytest.mark.parametrize("name", sorted(MATS))
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_jax(name, mode):
    a = MATS[name]
    got, want = jnp.linalg.qr(a, mode=mode), jjnp.linalg.qr(a, mode=mode)
    got = got if mode == "r" else tuple(got)
    want = want if mode == "r" else tuple(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=2e-5)


def test_qr_gradient_matches_jax():
    a = MATS["(5, 3)"]
    g = wjax.grad(lambda x: (jnp.linalg.qr(x)[1] ** 2).sum() + jnp.linalg.qr(x)[0].sum())(a)
    w = jax.grad(lambda x: (jjnp.linalg.qr(x)[1] ** 2).sum() + jjnp.linalg.qr(x)[0].sum())(a)
    np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("make,shape", [
    (lambda m: m.nn.initializers.orthogonal(), (4, 6)),
    (lambda m: m.nn.initializers.orthogonal(scale=2.0, column_axis=0), (5, 3)),
    (lambda m: m.nn.initializers.delta_orthogonal(), (3, 3, 2, 4)),
    (lambda m: m.nn.initializers.delta_orthogonal(), (3, 2, 2)),
])
def test_orthogonal_initializers_match_jax(make, shape):
    got = make(wjax)(wjax.random.PRNGKey(3), shape)
    want = make(jax)(jax.random.PRNGKey(3), shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)


def test_bad_calls_raise_like_jax():
    for mod in (jnp, jjnp):
        with pytest.raises(TypeError, match="rank at least 2"):
            mod.linalg.qr(np.ones(3, np.float32))
        with pytest.raises(ValueError):
            mod.linalg.qr(np.ones((2, 2), np.float32), mode="bogus")
    for mod in (wjax, jax):
        with pytest.raises(ValueError):
            mod.nn.initializers.delta_orthogonal()(mod.random.PRNGKey(0), (3, 4, 2))


@pytest.mark.parametrize("n,shape,m", [(3, (), None), (3, (), 2), (2, (2,), None), (2, (), 4)])
def test_random_orthogonal_matches_jax(n, shape, m):
    got = wjax.random.orthogonal(wjax.random.key(5), n, shape, m=m)
    want = jax.random.orthogonal(jax.random.key(5), n, shape, m=m)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)


CMATS = {s: (RNG.randn(*s) + 1j * RNG.randn(*s)).astype(np.complex64)
         for s in [(5, 3), (3, 5), (2, 4, 4)]}


@pytest.mark.parametrize("shape", sorted(CMATS))
def test_complex_qr_matches_jax(shape):
    """complex64 QR: LAPACK's reflections (a real R diagonal), so Q and R equal JAX's."""
    a = CMATS[shape]
    for mode in ("reduced", "complete"):
        (q, r), (jq, jr) = jnp.linalg.qr(a, mode=mode), jjnp.linalg.qr(a, mode=mode)
        assert q.dtype == jq.dtype == np.complex64 and r.shape == jr.shape
        np.testing.assert_allclose(q, jq, rtol=1e-4, atol=3e-5)
        np.testing.assert_allclose(r, jr, rtol=1e-4, atol=3e-5)
        assert (np.imag(np.diagonal(np.asarray(r), 0, -2, -1)) == 0).all()
    np.testing.assert_allclose(wjax.jit(lambda x: jnp.linalg.qr(x, mode="r"))(a),
                               jjnp.linalg.qr(a, mode="r"), rtol=1e-4, atol=3e-5)


def test_complex_qr_of_imaginary_columns_matches_jax():
    """Purely imaginary entries: a negative one has real part -0.0, which LAPACK's sign
    treats as negative (R's diagonal then +|x|)."""
    a = (np.array([[-1, 1], [1, 2], [2, -3]], np.float32) * 1j).astype(np.complex64)
    for x in (a, a[::-1].copy()):
        (q, r), (jq, jr) = jnp.linalg.qr(x), jjnp.linalg.qr(x)
        np.testing.assert_allclose(r, jr, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(q, jq, rtol=1e-5, atol=1e-6)


def test_complex_qr_gradient_and_vmap_match_jax():
    a = CMATS[(5, 3)]

    def loss(m):
        return lambda x: (m.abs(m.linalg.qr(x)[1]) ** 2).sum() + m.real(m.linalg.qr(x)[0]).sum()
    np.testing.assert_allclose(wjax.grad(loss(jnp))(a), jax.grad(loss(jjnp))(a), rtol=1e-3,
                               atol=1e-4)
    b = CMATS[(2, 4, 4)]
    np.testing.assert_allclose(wjax.vmap(lambda x: jnp.linalg.qr(x)[1])(b),
                               jax.vmap(lambda x: jjnp.linalg.qr(x)[1])(b), rtol=1e-4, atol=3e-5)


def test_random_orthogonal_complex_is_jaxs_unitary():
    """A complex dtype samples the unitary group: JAX's matrix (its complex normals, QR and
    phases), unitary rows or columns; an integer dtype is normal's ValueError in both."""
    for n, shape, m in ((3, (), None), (2, (2,), 4), (4, (), 2)):
        got = wjax.random.orthogonal(wjax.random.key(6), n, shape, jnp.complex64, m=m)
        want = jax.random.orthogonal(jax.random.key(6), n, shape, jjnp.complex64, m=m)
        assert got.dtype == want.dtype == np.complex64 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)
        g = np.asarray(got)
        gram = g @ np.conj(np.swapaxes(g, -1, -2)) if n <= (m or n) else \
            np.conj(np.swapaxes(g, -1, -2)) @ g
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(gram.shape[-1]), gram.shape),
                                   atol=2e-6)
    for mod in (wjax, jax):
        with pytest.raises(ValueError, match="float or complex"):
            mod.random.orthogonal(mod.random.key(0), 3, dtype=np.int32)


def _raw_cases():
    rng = np.random.RandomState(7)
    out = {name: a for name, a in MATS.items()}
    out["complex (4, 3)"] = (rng.randn(4, 3) + 1j * rng.randn(4, 3)).astype(np.complex64)
    out["complex (2, 3, 3)"] = (rng.randn(2, 3, 3) + 1j * rng.randn(2, 3, 3)).astype(np.complex64)
    # an already-reduced column: no reflection (tau 0), as LAPACK's larfg
    out["zero subcolumn"] = np.array([[2.0, 1.0], [0.0, 3.0], [0.0, 4.0]], np.float32)
    return out


RAW = _raw_cases()


@pytest.mark.parametrize("name", sorted(RAW))
def test_qr_raw_and_householder_forms_match_jax(name):
    # mode="raw" (NumPy's transposed LAPACK storage) and the lax.linalg functions that read
    # the reflectors: householder_product and ormqr from either side, with and without Q^H
    a = RAW[name]
    (h, t), (hj, tj) = jnp.linalg.qr(a, mode="raw"), jjnp.linalg.qr(a, mode="raw")
    assert h.shape == hj.shape and t.shape == tj.shape
    np.testing.assert_allclose(h, hj, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(t, tj, rtol=1e-4, atol=2e-5)
    m, n = a.shape[-2:]
    if m >= n:
        np.testing.assert_allclose(wjax.lax.linalg.householder_product(h.mT, t),
                                   jax.lax.linalg.householder_product(hj.mT, tj),
                                   rtol=1e-4, atol=2e-5)
    rng = np.random.RandomState(1)
    for left in (True, False):
        for transpose in (False, True):
            c = rng.randn(*a.shape[:-2], *((m, 2) if left else (2, m))).astype(a.dtype)
            np.testing.assert_allclose(
                wjax.lax.linalg.ormqr(h.mT, t, c, left=left, transpose=transpose),
                jax.lax.linalg.ormqr(hj.mT, tj, c, left=left, transpose=transpose),
                rtol=1e-4, atol=2e-5)


def test_ormqr_under_jit_and_vmap_matches_jax():
    a = MATS["(2, 4, 3)"]
    c = RNG.randn(2, 4, 1).astype(np.float32)

    def f(mod, numpy):
        def g(a, c):
            h, t = numpy.linalg.qr(a, mode="raw")
            return mod.lax.linalg.ormqr(h.mT, t, c, transpose=True)
        return mod.jit(mod.vmap(g))(a, c)
    np.testing.assert_allclose(f(wjax, jnp), f(jax, jjnp), rtol=1e-4, atol=2e-5)


def test_householder_forms_bad_calls_raise():
    h, t = jnp.linalg.qr(MATS["(5, 3)"], mode="raw")
    with pytest.raises(ValueError):
        wjax.lax.linalg.ormqr(h.mT, t, jnp.ones((4, 2)))          # Q is 5 x 5
    with pytest.raises(ValueError):
        wjax.lax.linalg.householder_product(h, t)                  # wide: m < n
    with pytest.raises(TypeError):
        wjax.lax.linalg.householder_product(jnp.ones((3, 2), jnp.int32), jnp.ones(2, jnp.int32))
