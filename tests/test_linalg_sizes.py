"""Decompositions past one workgroup's memory and the driver's loop limit.

``lu``, ``cholesky`` and ``triangular_solve`` (``wjax/_src/prims/decomp.py``) have a one-kernel
form for small matrices and a stepped form (a few dispatches per column) for large ones; here
the stepped form runs on small matrices (``Target.decomp_iters = 0`` forces it) against the
NumPy references, and both forms at a size the one-kernel form could not do on lavapipe
(where an invocation stops silently after 65535 loop iterations: a 256x256 LU came back
wrong before the stepped form).  The Jacobi eigh/svd keep their carries in buffers once
past workgroup memory.  Real sizes (1000x1000, Jacobi at 256) are ``-m slow``.
"""
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax._src.backend import runtime
from wjax._src.prims import decomp as D

RNG = np.random.RandomState(11)


@pytest.fixture
def stepped():
    with runtime.get().options(decomp_iters=0):
        yield


def _ts(a, b, **kw):
    kw = dict(dict(left_side=True, lower=True, transpose_a=False, conjugate_a=False,
                   unit_diagonal=False), **kw)
    return D.triangular_solve_p.bind(jnp.asarray(a), jnp.asarray(b), **kw)


def _rel(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)


def test_stepped_lu_matches_reference(stepped):
    for a in (RNG.randn(5, 5), RNG.randn(3, 6, 4), RNG.randn(4, 7),
              np.array([[0.0, 1, 2], [0, 3, 4], [5, 6, 0]])):
        a = a.astype(np.float32)
        lu, piv, perm = (np.asarray(x) for x in D.lu_p.bind(jnp.asarray(a)))
        rlu, rpiv, rperm = D._lu_ref(a)
        np.testing.assert_array_equal(piv, rpiv)
        np.testing.assert_array_equal(perm, rperm)
        np.testing.assert_allclose(lu, rlu, rtol=1e-5, atol=1e-5)


def test_stepped_cholesky_matches_reference_and_marks_each_bad_matrix(stepped):
    a = RNG.randn(3, 6, 6)
    spd = (a @ np.swapaxes(a, -1, -2) + 6 * np.eye(6)).astype(np.float32)
    spd[1, 2, 2] = -50.0                      # only the second matrix is not positive definite
    got = np.asarray(D.cholesky_p.bind(jnp.asarray(spd)))
    want = D._chol_ref(spd)
    np.testing.assert_allclose(got[[0, 2]], want[[0, 2]], rtol=1e-5, atol=1e-5)
    low = np.tril_indices(6)
    assert np.isnan(got[1][low]).all() and not np.triu(got[1], 1).any()
    assert np.isnan(want[1][low]).all()


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [False, True])
def test_stepped_triangular_solve_every_form(stepped, left_side, lower, transpose_a):
    a = RNG.randn(2, 5, 5) + 4 * np.eye(5)
    a = (np.tril(a) if lower else np.triu(a)).astype(np.float32)
    b = RNG.randn(2, 5, 3) if left_side else RNG.randn(2, 3, 5)
    b = b.astype(np.float32)
    for unit in (False, True):
        kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
                  unit_diagonal=unit)
        want = D._ts_ref(a, b, **kw)
        assert _rel(_ts(a, b, **kw), want) < 1e-5


def test_stepped_public_functions_jit_vmap(stepped):
    a = (RNG.randn(3, 6, 6) + 6 * np.eye(6)).astype(np.float32)
    b = RNG.randn(3, 6, 2).astype(np.float32)
    want = np.linalg.solve(a.astype(np.float64), b)
    assert _rel(jnp.linalg.solve(a, b), want) < 1e-5
    assert _rel(wjax.jit(jnp.linalg.solve)(a, b), want) < 1e-5
    assert _rel(wjax.vmap(jnp.linalg.solve)(a, b), want) < 1e-5
    assert _rel(wjax.vmap(jnp.linalg.det)(a), np.linalg.det(a.astype(np.float64))) < 1e-5
    g = wjax.grad(lambda x: jnp.linalg.slogdet(x)[1])(a[0])
    assert _rel(g, np.linalg.inv(a[0].astype(np.float64)).T) < 1e-5


def test_beyond_the_one_kernel_budget():
    """n = 192: the default choice is the stepped form for lu, cholesky and a one-column
    triangular solve (each past half of lavapipe's loop limit in one invocation)."""
    n = 192
    budget = wjax._src.backend.target.Target({}).decomp_iters
    assert D._lu_iters(n, n) > budget and D._chol_iters(n) > budget
    assert n * (n + 1) // 2 + n > budget
    a = (RNG.randn(n, n) + 3 * np.sqrt(n) * np.eye(n)).astype(np.float32)
    b = RNG.randn(n).astype(np.float32)
    a64 = a.astype(np.float64)
    assert _rel(jnp.linalg.solve(a, b), np.linalg.solve(a64, b)) < 1e-5
    assert _rel(jnp.linalg.slogdet(a)[1], np.linalg.slogdet(a64)[1]) < 1e-6
    spd = (a @ a.T / n).astype(np.float32)
    assert _rel(jnp.linalg.cholesky(spd), np.linalg.cholesky(spd.astype(np.float64))) < 1e-4
    low = np.tril(a)
    assert _rel(_ts(low, b[:, None]), np.linalg.solve(low.astype(np.float64), b[:, None])) < 1e-5


def test_jacobi_past_workgroup_memory():
    """n = 64: the Jacobi carries (two 64x64 float32 matrices, and more) are past lavapipe's
    32 KiB of workgroup memory, so the loop runs recorded, its convergence test read back."""
    n = 64
    x = RNG.randn(n, n).astype(np.float32)
    s = x + x.T
    w, v = jnp.linalg.eigh(s)
    ref = np.linalg.eigvalsh(s.astype(np.float64))
    assert np.abs(np.asarray(w) - ref).max() < 3e-6 * np.abs(ref).max()
    v = np.asarray(v, np.float64)
    assert np.abs(v.T @ v - np.eye(n)).max() < 1e-4
    sv = jnp.linalg.svd(x[:, :48], compute_uv=False)
    ref = np.linalg.svd(x[:, :48].astype(np.float64), compute_uv=False)
    assert np.abs(np.asarray(sv) - ref).max() < 3e-6 * ref.max()


@pytest.mark.slow
def test_real_sizes():
    """1000x1000 LU/solve, Cholesky and triangular solves; eigh, svd and qr at 256."""
    n = 1000
    a = (RNG.randn(n, n) + 3 * np.sqrt(n) * np.eye(n)).astype(np.float32)
    b = RNG.randn(n, 4).astype(np.float32)
    a64 = a.astype(np.float64)
    assert _rel(jnp.linalg.solve(a, b), np.linalg.solve(a64, b)) < 2e-5
    spd = (a @ a.T / n).astype(np.float32)
    assert _rel(jnp.linalg.cholesky(spd), np.linalg.cholesky(spd.astype(np.float64))) < 2e-4
    assert _rel(_ts(np.tril(a), a[:, :300], lower=True),
                np.linalg.solve(np.tril(a64), a64[:, :300])) < 2e-5
    m = 256
    x = RNG.randn(m, m).astype(np.float32)
    s = x + x.T
    w = jnp.linalg.eigvalsh(s)
    ref = np.linalg.eigvalsh(s.astype(np.float64))
    assert np.abs(np.asarray(w) - ref).max() < 1e-5 * np.abs(ref).max()
    sv = jnp.linalg.svd(x, compute_uv=False)
    ref = np.linalg.svd(x.astype(np.float64), compute_uv=False)
    assert np.abs(np.asarray(sv) - ref).max() < 1e-5 * ref.max()
    q, r = jnp.linalg.qr(x)
    q, r = np.asarray(q, np.float64), np.asarray(r, np.float64)
    assert np.abs(q @ r - x).max() < 1e-4 * np.abs(x).max()
    assert np.abs(q.T @ q - np.eye(m)).max() < 1e-4
