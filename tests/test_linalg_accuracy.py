"""Accuracy of the device decompositions on well- and ill-conditioned inputs, against NumPy in
float64 and next to real JAX (LAPACK in float32) on the same float32 inputs.

Bounds are norm-wise, in units of float32's eps = 1.19e-7 (what a backward-stable method
guarantees up to a small factor; JAX measured well under each):

* ``solve``: backward error ``|A x - b| / (|A| |x| + |b|) <= 1 eps`` -- even for Hilbert
  matrices of condition 1e7..1e13, where the forward error is meaningless in float32;
* ``cholesky``: ``max|L L^T - A| <= 1 eps * max|A|``; ``inv``: ``|A X - I| / (|A| |X|) <= 2 eps``;
* ``eigvalsh``/``svdvals``: ``max|w - w64| <= 4 eps * |A|_2`` (Jacobi with Rayleigh-quotient
  values: measured 0.3..1.5 eps on Hilbert matrices, JAX 0.2..0.9);
* repeated eigenvalues (1, 1, 1, 2, 2, 3): values within 8 eps, residual ``|A V - V W|`` and
  orthogonality ``|V^T V - I|`` within 8 eps (measured 4, 3.7, 1.8; JAX 5, 3.9, 6.7);
* ``slogdet``/``det`` of an ill-conditioned matrix: as close to float64 as JAX's (within a factor
  of 4 of JAX's error, plus 1e-3 relative), since both are limited by the input's rounding.
"""
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

EPS = float(np.finfo(np.float32).eps)


def hilbert(n):
    return 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)


@pytest.mark.parametrize("n", [6, 10])
def test_hilbert(n):
    h64 = hilbert(n)
    h = h64.astype(np.float32)
    b = np.ones(n, np.float32)
    x = np.asarray(jnp.linalg.solve(h, b), np.float64)
    be = np.linalg.norm(h64 @ x - b) / (np.linalg.norm(h64, 2) * np.linalg.norm(x) + np.sqrt(n))
    assert be <= EPS
    w64 = np.linalg.eigvalsh(h64)
    assert np.abs(np.asarray(jnp.linalg.eigvalsh(h), np.float64) - w64).max() <= 4 * EPS * w64[-1]
    s64 = np.linalg.svd(h64, compute_uv=False)
    s = np.asarray(jnp.linalg.svd(h, compute_uv=False), np.float64)
    assert np.abs(s - s64).max() <= 4 * EPS * s64[0]
    if n == 6:                 # positive definite in float32 (cond 1.5e7)
        L = np.asarray(jnp.linalg.cholesky(h), np.float64)
        assert np.abs(L @ L.T - h64).max() <= EPS * np.abs(h64).max()
    err = abs(float(jnp.linalg.slogdet(h)[1]) - np.linalg.slogdet(h64)[1])
    jerr = abs(float(jjnp.linalg.slogdet(h)[1]) - np.linalg.slogdet(h64)[1])
    assert err <= 4 * jerr + 1e-3 * abs(np.linalg.slogdet(h64)[1])


def test_near_singular():
    r = np.random.RandomState(0)
    q, _ = np.linalg.qr(r.randn(5, 5))
    a64 = q @ np.diag([1, 0.5, 0.3, 0.1, 1e-6]) @ q.T
    a = a64.astype(np.float32)
    a64 = a.astype(np.float64)                    # the matrix actually factored
    x = np.asarray(jnp.linalg.inv(a), np.float64)
    assert np.linalg.norm(a64 @ x - np.eye(5)) / (np.linalg.norm(a64, 2)
                                                  * np.linalg.norm(x, 2)) <= 2 * EPS
    want = np.linalg.det(a64)
    err = abs(float(jnp.linalg.det(a)) / want - 1)
    jerr = abs(float(jjnp.linalg.det(a)) / want - 1)
    assert err <= 4 * jerr + 1e-3


def test_repeated_eigenvalues_and_singular_values():
    r = np.random.RandomState(0)
    q, _ = np.linalg.qr(r.randn(6, 6))
    lam = np.array([1, 1, 1, 2, 2, 3.0])
    a = (q @ np.diag(lam) @ q.T).astype(np.float32)
    a64 = a.astype(np.float64)
    w, v = (np.asarray(x, np.float64) for x in jnp.linalg.eigh(a))
    assert np.abs(w - lam).max() <= 8 * EPS * 3
    assert np.abs(a64 @ v - v * w).max() <= 8 * EPS * 3
    assert np.abs(v.T @ v - np.eye(6)).max() <= 8 * EPS
    u, s, vt = (np.asarray(x, np.float64) for x in jnp.linalg.svd(a))
    assert np.abs(s - lam[::-1]).max() <= 8 * EPS * 3
    assert np.abs((u * s) @ vt - a64).max() <= 8 * EPS * 3
    assert np.abs(u.T @ u - np.eye(6)).max() <= 8 * EPS
    # a rank-deficient matrix: zero singular values, and U still orthogonal
    low = (r.randn(6, 2) @ r.randn(2, 5)).astype(np.float32)
    u, s, vt = (np.asarray(x, np.float64) for x in jnp.linalg.svd(low))
    assert np.abs(s[2:]).max() <= 8 * EPS * s[0]
    assert np.abs(u.T @ u - np.eye(6)).max() <= 8 * EPS
    q, rr = (np.asarray(x, np.float64) for x in jnp.linalg.qr(low))
    assert np.abs(q @ rr - low).max() <= 8 * EPS * np.abs(low).max()
    assert np.abs(q.T @ q - np.eye(5)).max() <= 8 * EPS


def test_complex_n40_moderately_ill_conditioned():
    """complex64, n = 40, cond 1e4 (A = U diag(s) V^H, s log-spaced 1..1e-4), against NumPy in
    complex128 on the rounded input and next to real JAX: the solve's backward error (the real
    embedding's LU) and inverse residual within a few eps, the forward error within
    ``cond * eps`` (times a small factor), the complex LU's factors reproduce ``P A`` within
    ``n eps |A|``, and log|det| as close as JAX's."""
    import jax
    n = 40
    r = np.random.RandomState(7)

    def unitary():
        q, _ = np.linalg.qr(r.randn(n, n) + 1j * r.randn(n, n))
        return q

    s = np.logspace(0, -4, n)
    a = ((unitary() * s) @ unitary().conj().T).astype(np.complex64)
    a64 = a.astype(np.complex128)
    cond = np.linalg.cond(a64)
    b = (r.randn(n) + 1j * r.randn(n)).astype(np.complex64)
    x = np.asarray(jnp.linalg.solve(a, b), np.complex128)
    x64 = np.linalg.solve(a64, b)
    nrm = np.linalg.norm(a64, 2)
    assert np.linalg.norm(a64 @ x - b) / (nrm * np.linalg.norm(x) + np.linalg.norm(b)) <= 2 * EPS
    assert np.linalg.norm(x - x64) / np.linalg.norm(x64) <= 4 * cond * EPS
    xi = np.asarray(jnp.linalg.inv(a), np.complex128)
    assert np.linalg.norm(a64 @ xi - np.eye(n)) / (nrm * np.linalg.norm(xi, 2)) <= 4 * EPS
    lu, piv, perm = (np.asarray(v) for v in wjax.lax.linalg.lu(a))
    _, jpiv, jperm = jax.lax.linalg.lu(a)
    assert (perm == np.asarray(jperm)).all() and (piv == np.asarray(jpiv)).all()
    lo = np.tril(lu.astype(np.complex128), -1) + np.eye(n)
    up = np.triu(lu.astype(np.complex128))
    assert np.abs(lo @ up - a64[perm]).max() <= n * EPS * np.abs(a64).max()
    want = np.linalg.slogdet(a64)
    sign, logdet = jnp.linalg.slogdet(a)
    jsign, jlogdet = jax.numpy.linalg.slogdet(a)
    assert abs(float(logdet) - want[1]) <= 4 * abs(float(jlogdet) - want[1]) + n * EPS
    assert abs(complex(sign) - want[0]) <= 4 * abs(complex(jsign) - want[0]) + n * EPS
