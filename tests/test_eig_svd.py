"""eigh/eigvalsh (two-sided Jacobi) and svd/svdvals (one-sided Jacobi) on the device, with
pinv, matrix_rank, lstsq, cond and the 2/nuclear norms built on them, against NumPy (float64)
and real JAX: values, reconstruction and orthogonality, batches, vmap and jit, JAX's
derivative rules, ill-conditioned and repeated-eigenvalue inputs, and the bad calls."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

RNG = np.random.RandomState(0)


def _sym(n, batch=()):
    a = RNG.randn(*batch, n, n).astype(np.float32)
    return a + np.swapaxes(a, -1, -2)


@pytest.mark.parametrize("n,batch", [(1, ()), (2, ()), (3, ()), (6, ()), (9, ()), (4, (2, 3))])
def test_eigh_values_and_vectors(n, batch):
    a = _sym(n, batch)
    w, v = jnp.linalg.eigh(a)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.astype(np.float64)), rtol=1e-5,
                               atol=2e-5)
    np.testing.assert_allclose(np.asarray(v) @ np.swapaxes(np.asarray(v), -1, -2),
                               np.broadcast_to(np.eye(n), a.shape), atol=2e-5)
    np.testing.assert_allclose(np.asarray(a) @ np.asarray(v), np.asarray(v) * np.asarray(w)[
        ..., None, :], atol=1e-4)


def test_eigh_repeated_and_ill_conditioned():
    np.testing.assert_allclose(jnp.linalg.eigvalsh(np.eye(4, dtype=np.float32) * 3), 3 * np.ones(4))
    hilbert = 1.0 / (np.arange(6)[:, None] + np.arange(6)[None, :] + 1.0)
    w = jnp.linalg.eigvalsh(hilbert.astype(np.float32))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(hilbert), rtol=2e-3, atol=1e-7)
    assert (np.diff(np.asarray(w)) >= 0).all()


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 4, 3), (6, 1), (1, 6), (7, 7)])
def test_svd_matches_numpy_and_jax(shape):
    a = RNG.randn(*shape).astype(np.float32)
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.float64), compute_uv=False),
                               rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s)[..., None, :] @ np.asarray(vh), a,
                               atol=1e-4)
    uf, sf, vhf = jnp.linalg.svd(a)
    ju, js, jvh = jjnp.linalg.svd(a)
    assert uf.shape == ju.shape and vhf.shape == jvh.shape
    k = uf.shape[-1]
    np.testing.assert_allclose(np.swapaxes(np.asarray(uf), -1, -2) @ np.asarray(uf),
                               np.broadcast_to(np.eye(k), uf.shape[:-2] + (k, k)), atol=2e-5)
    np.testing.assert_allclose(jnp.linalg.svdvals(a), js, rtol=1e-5, atol=2e-5)


def test_svd_ill_conditioned_and_rank_deficient():
    hilbert = (1.0 / (np.arange(7)[:, None] + np.arange(7)[None, :] + 1.0)).astype(np.float32)
    s = jnp.linalg.svdvals(hilbert)
    np.testing.assert_allclose(s[:4], np.linalg.svd(hilbert.astype(np.float64),
                                                    compute_uv=False)[:4], rtol=1e-4)
    low = np.outer(np.arange(1.0, 4.0), np.arange(1.0, 5.0)).astype(np.float32)
    assert int(jnp.linalg.matrix_rank(low)) == int(jjnp.linalg.matrix_rank(low)) == 1
    u, s, vh = jnp.linalg.svd(low, full_matrices=False)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s) @ np.asarray(vh), low, atol=1e-4)


def _derived(jx, np_):
    a = np.random.RandomState(3).randn(4, 3).astype(np.float32)
    return [jx.numpy.linalg.pinv(a), jx.numpy.linalg.lstsq(a, np.arange(4.0, dtype=np.float32))[0],
            jx.numpy.linalg.cond(a), jx.numpy.linalg.norm(a, 2), jx.numpy.linalg.norm(a, "nuc"),
            jx.numpy.linalg.norm(a, -2), jx.vmap(jx.numpy.linalg.eigvalsh)(
                np.stack([np.eye(3, dtype=np.float32), 2 * np.eye(3, dtype=np.float32)])),
            jx.jit(jx.numpy.linalg.svdvals)(a)]


def test_derived_functions_match_jax():
    for g, w in zip(_derived(wjax, jnp), _derived(jax, jjnp)):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def _grads(jx, np_):
    r = np.random.RandomState(1)
    a = r.randn(4, 4).astype(np.float32)
    out = [jx.grad(lambda a: jx.numpy.linalg.eigh(a)[0] @ np_.arange(4.0))(a),
           jx.grad(lambda a: (np_.abs(jx.numpy.linalg.eigh(a)[1]) * np_.arange(16.0).reshape(
               4, 4)).sum())(a)]
    for shape in [(5, 3), (3, 5), (4, 4)]:
        b = r.randn(*shape).astype(np.float32)
        out.append(jx.grad(lambda b: jx.numpy.linalg.svd(b, compute_uv=False)[:3]
                           @ np_.arange(1.0, 4.0))(b))
        out.append(jx.grad(lambda b: (jx.numpy.linalg.svd(b, full_matrices=False)[0] ** 2
                                      * np_.arange(b.shape[0] * min(b.shape)).reshape(
                                          b.shape[0], -1)).sum()
                           + np_.abs(jx.numpy.linalg.svd(b, full_matrices=False)[2]).sum())(b))
    out.append(jx.grad(lambda b: jx.numpy.linalg.pinv(b).sum())(r.randn(4, 3).astype(np.float32)))
    return out


def test_gradients_follow_jax_rules():
    for g, w in zip(_grads(wjax, jnp), _grads(jax, jjnp)):
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3)


def test_bad_calls_raise_like_jax():
    for mod in (jnp, jjnp):
        with pytest.raises(TypeError):
            mod.linalg.svd(np.ones(3, np.float32))
        with pytest.raises(TypeError):
            mod.linalg.eigh(np.ones((2, 3), np.float32))
    # eig of a non-square matrix: JAX's ValueError (eig itself: tests/test_scipy_linalg.py)
    for mod in (jnp, jjnp):
        with pytest.raises(ValueError):
            mod.linalg.eig(np.ones((2, 3), np.float32))


def _cplx(*shape, seed=3):
    r = np.random.RandomState(seed)
    return (r.randn(*shape) + 1j * r.randn(*shape)).astype(np.complex64)


def _herm(n, batch=()):
    a = _cplx(*batch, n, n)
    return a + np.conj(np.swapaxes(a, -1, -2))


def _hc(x):
    return np.conj(np.swapaxes(np.asarray(x), -1, -2))


@pytest.mark.parametrize("n,batch", [(1, ()), (3, ()), (6, ()), (4, (2,))])
def test_complex_eigh(n, batch):
    """Hermitian eigh by complex Jacobi rotations: real float32 eigenvalues as NumPy's and
    JAX's, unitary eigenvectors (their phases are free) that diagonalize the matrix."""
    a = _herm(n, batch)
    w, v = jnp.linalg.eigh(a)
    jw, jv = jjnp.linalg.eigh(a)
    assert w.dtype == jw.dtype == np.float32 and v.dtype == jv.dtype == np.complex64
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.astype(np.complex128)), rtol=1e-5,
                               atol=3e-5)
    eye = np.broadcast_to(np.eye(n), a.shape)
    np.testing.assert_allclose(_hc(v) @ np.asarray(v), eye, atol=3e-5)
    np.testing.assert_allclose(a @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :],
                               atol=2e-4)
    # the lower / upper triangle only (the diagonal's imaginary part ignored, as LAPACK)
    h = np.tril(a) + 5j * np.eye(n, dtype=np.complex64)
    for uplo in ("L", "U"):
        t = h if uplo == "L" else _hc(h)
        np.testing.assert_allclose(jnp.linalg.eigh(t, UPLO=uplo, symmetrize_input=False)[0],
                                   jjnp.linalg.eigh(t, UPLO=uplo, symmetrize_input=False)[0],
                                   rtol=1e-5, atol=3e-5)
    np.testing.assert_allclose(jnp.linalg.eigvalsh(np.eye(3, dtype=np.complex64) * 2), [2, 2, 2])


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 3)])
def test_complex_svd(shape):
    a = _cplx(*shape)
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    assert s.dtype == np.float32 and u.dtype == vh.dtype == np.complex64
    np.testing.assert_allclose(s, np.linalg.svd(a.astype(np.complex128), compute_uv=False),
                               rtol=1e-5, atol=3e-5)
    np.testing.assert_allclose(np.asarray(u) * np.asarray(s)[..., None, :] @ np.asarray(vh), a,
                               atol=2e-4)
    uf, sf, vhf = jnp.linalg.svd(a)
    ju, js, jvh = jjnp.linalg.svd(a)
    assert uf.shape == ju.shape and vhf.shape == jvh.shape
    for x in (uf, vhf):
        k = x.shape[-1]
        np.testing.assert_allclose(_hc(x) @ np.asarray(x),
                                   np.broadcast_to(np.eye(k), x.shape[:-2] + (k, k)), atol=3e-5)
    np.testing.assert_allclose(wjax.jit(jnp.linalg.svdvals)(a), js, rtol=1e-5, atol=3e-5)


def _complex_derived(jx, m):
    a, b = _cplx(5, 3, seed=4), _cplx(5, 2, seed=5)
    sq = _cplx(4, 4, seed=6)
    x, resid, rank, sv = m.linalg.lstsq(a, b)
    return [m.linalg.pinv(a), x, resid, rank, sv, m.linalg.matrix_rank(sq),
            m.linalg.cond(sq), m.linalg.norm(sq, 2), m.linalg.norm(sq, "nuc"),
            m.linalg.norm(sq, -2), jx.vmap(m.linalg.eigvalsh)(_herm(3, (2,))),
            jx.vmap(lambda t: m.linalg.svd(t, compute_uv=False))(_cplx(2, 3, 4))]


def test_complex_derived_functions_match_jax():
    for g, w in zip(_complex_derived(wjax, jnp), _complex_derived(jax, jjnp)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=3e-5)


def _complex_grads(jx, m):
    """Gradients of real functions invariant under the eigen/singular vectors' phases."""
    h, a = _herm(4), _cplx(4, 3, seed=7)
    wts = m.arange(12.0).reshape(4, 3)
    return [jx.grad(lambda x: m.linalg.eigh(x)[0] @ m.arange(4.0))(h),
            jx.grad(lambda x: (m.abs(m.linalg.eigh(x)[1]) ** 2 * wts[:, :1]).sum())(h),
            jx.grad(lambda x: m.linalg.svd(x, compute_uv=False) @ m.arange(1.0, 4.0))(a),
            jx.grad(lambda x: (m.abs(m.linalg.svd(x, full_matrices=False)[0]) ** 2
                               * wts).sum())(a),
            jx.grad(lambda x: m.real(m.linalg.pinv(x)).sum())(a)]


def test_complex_gradients_follow_jax_rules():
    for g, w in zip(_complex_grads(wjax, jnp), _complex_grads(jax, jjnp)):
        np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3)
