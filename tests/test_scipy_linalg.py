"""jax.scipy.linalg against real JAX: values (and NumPy/SciPy-style identities), gradients
(jvp and vjp with random directions), vmap and jit, batching, and the bad calls.

Tolerances: float32 on both sides; factorizations of well-conditioned 3x3..5x5 matrices agree
to ~1e-5 relative, derivatives (one more solve or product chain) to ~1e-4.
"""
import jax
import jax.numpy as jjnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
import wjax.scipy.linalg as wsl

RNG = np.random.RandomState(7)
F = np.float32


def _well(n, batch=(), seed=0):
    r = np.random.RandomState(seed)
    return (r.randn(*batch, n, n) + 2 * n ** 0.5 * np.eye(n)).astype(F)


def _spd(n, batch=(), seed=1):
    a = np.random.RandomState(seed).randn(*batch, n, n)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(F)


A4 = _well(4)
S4 = _spd(4)
B42 = RNG.randn(4, 2).astype(F)
B4 = RNG.randn(4).astype(F)
L4 = np.tril(_well(4, seed=3)).astype(F)
U4 = np.triu(_well(4, seed=4)).astype(F)


def close(got, want, rtol=2e-5, atol=2e-5):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        assert np.asarray(g).dtype == np.asarray(w).dtype, (np.asarray(g).dtype,
                                                             np.asarray(w).dtype)
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- values

VALUES = {
    "lu": lambda L: L.lu(A4),
    "lu_permute_l": lambda L: L.lu(A4, permute_l=True),
    "lu_wide": lambda L: L.lu(A4[:3]),
    "lu_tall": lambda L: L.lu(A4[:, 1:]),
    "lu_factor": lambda L: L.lu_factor(A4),
    "lu_solve": lambda L: L.lu_solve(L.lu_factor(A4), B42),
    "lu_solve_vec_T": lambda L: L.lu_solve(L.lu_factor(A4), B4, trans=1),
    "lu_solve_C": lambda L: L.lu_solve(L.lu_factor(A4), B42, trans=2),
    "cholesky_upper": lambda L: L.cholesky(S4),
    "cholesky_lower": lambda L: L.cholesky(S4, lower=True),
    "cho_solve_lower": lambda L: L.cho_solve(L.cho_factor(S4, lower=True), B42),
    "cho_solve_upper_vec": lambda L: L.cho_solve(L.cho_factor(S4), B4),
    "solve_triangular": lambda L: L.solve_triangular(U4, B42),
    "solve_triangular_lower_T": lambda L: L.solve_triangular(L4, B4, trans="T", lower=True),
    "solve_triangular_unit": lambda L: L.solve_triangular(L4, B42, lower=True, trans=1,
                                                          unit_diagonal=True),
    "solve_gen": lambda L: L.solve(A4, B42),
    "solve_pos": lambda L: L.solve(S4, B4, assume_a="pos"),
    "solve_pos_lower": lambda L: L.solve(np.tril(S4), B42, assume_a="pos", lower=True),
    "inv": lambda L: L.inv(A4),
    "det": lambda L: L.det(np.stack([A4, S4])),
    "eigh": lambda L: L.eigh(S4)[0],
    "eigh_upper_only": lambda L: L.eigh(np.triu(S4), lower=False, eigvals_only=True),
    "svd_vals": lambda L: L.svd(A4[:, :3], compute_uv=False),
    "qr_full": lambda L: L.qr(A4[:, :3]),
    "qr_economic": lambda L: L.qr(A4[:, :3], mode="economic"),
    "qr_r": lambda L: L.qr(A4[:3], mode="r"),
    "expm_small": lambda L: L.expm(0.1 * A4 / 4),
    "expm_pade5": lambda L: L.expm(A4 / 8),
    "expm_squarings": lambda L: L.expm(A4),
    "expm_batched": lambda L: L.expm(np.stack([0.01 * A4, 0.5 * S4 / 4])),
    "expm_upper": lambda L: L.expm(U4 / 4, upper_triangular=True),
    "expm_frechet": lambda L: L.expm_frechet(A4 / 8, S4 / 8),
    "block_diag": lambda L: L.block_diag(np.ones((2, 2), F), np.arange(3, dtype=F), F(5)),
    "toeplitz": lambda L: L.toeplitz(np.arange(1, 4, dtype=F), np.arange(5, 10, dtype=F)),
    "toeplitz_sym": lambda L: L.toeplitz(np.arange(1, 4, dtype=F)),
    "hankel": lambda L: L.hankel(np.arange(1, 4, dtype=F), np.arange(5, 9, dtype=F)),
    "circulant": lambda L: L.circulant(np.arange(1, 5, dtype=F)),
    "hilbert": lambda L: L.hilbert(4),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_jax(name):
    close(VALUES[name](wsl), VALUES[name](jsl), rtol=5e-5, atol=5e-5)


def test_identities():
    p, l, u = (np.asarray(x) for x in wsl.lu(A4))
    np.testing.assert_allclose(p @ l @ u, A4, atol=1e-5)
    c = np.asarray(wsl.cholesky(S4))
    np.testing.assert_allclose(c.T @ c, S4, rtol=1e-5, atol=1e-4)
    x = np.asarray(wsl.solve(S4, B42, assume_a="pos"))
    np.testing.assert_allclose(S4 @ x, B42, atol=1e-5)
    u, p = (np.asarray(x) for x in wsl.polar(A4[:, :3]))
    np.testing.assert_allclose(u @ p, A4[:, :3], atol=1e-4)
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-5)
    assert np.all(np.linalg.eigvalsh(p.astype(np.float64)) > -1e-5)
    ul, pl = (np.asarray(x) for x in wsl.polar(A4[:3], side="left"))
    np.testing.assert_allclose(pl @ ul, A4[:3], atol=1e-4)
    # expm(0) = I, expm(diag) = diag(exp), expm(a) expm(-a) = I
    np.testing.assert_allclose(wsl.expm(np.zeros((3, 3), F)), np.eye(3), atol=0)
    d = np.array([-1.0, 0.5, 2.0], F)
    np.testing.assert_allclose(wsl.expm(np.diag(d)), np.diag(np.exp(d)), rtol=1e-6)
    e = np.asarray(wsl.expm(A4 / 2)) @ np.asarray(wsl.expm(-A4 / 2))
    np.testing.assert_allclose(e, np.eye(4), atol=1e-4)


def test_polar_matches_jax_up_to_method():
    # JAX's default 'qdwh' iteration and its 'svd' method give the same factors
    for side in ("right", "left"):
        a = A4[:, :3] if side == "right" else A4[:3]
        close(wsl.polar(a, side=side), jsl.polar(a, side=side, method="svd"), atol=1e-4)
        close(wsl.polar(a, side=side), jsl.polar(a, side=side), atol=1e-4)


def test_integer_inputs_promote_as_jax():
    ai = np.array([[4, 1], [2, 3]], np.int32)
    for name in ("inv", "det", "lu_factor", "expm", "cholesky"):
        # expm of ai @ ai.T (norm 28) squares its Pade approximant 5 times, doubling the
        # relative error each time: float32 JAX is 3e-3 off the exact value, and a driver that
        # contracts products into fmas (as the WGSL spec allows; an H200 did) lands 4e-5 from
        # JAX's rounding of it.  The others agree to 1e-5.
        rtol = 2e-4 if name == "expm" else 1e-5
        close(getattr(wsl, name)(ai @ ai.T), getattr(jsl, name)(ai @ ai.T), rtol=rtol,
              atol=1e-5)
    close(wsl.solve_triangular(np.triu(ai), np.array([1, 2], np.int32)),
          jsl.solve_triangular(np.triu(ai), np.array([1, 2], np.int32)))


def test_eig_is_host_side_and_complex():
    # a real matrix with real eigenvalues, one with a complex pair, and a complex matrix
    r = np.random.RandomState(3)
    for a in (np.array([[0.0, 1.0], [-2.0, -3.0]], F), np.array([[0.0, -2.0], [1.0, 0.0]], F),
              (r.randn(4, 4) + 1j * r.randn(4, 4)).astype(np.complex64)):
        w, v = jnp.linalg.eig(a)
        jw, jv = jjnp.linalg.eig(a)
        assert w.dtype == jw.dtype and v.dtype == jv.dtype
        np.testing.assert_allclose(np.sort_complex(np.asarray(w)),
                                   np.sort_complex(np.asarray(jw)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-5)
        np.testing.assert_allclose(np.sort_complex(np.asarray(wjax.jit(jnp.linalg.eigvals)(a))),
                                   np.sort_complex(np.asarray(jw)), rtol=1e-5, atol=1e-6)
    batch = r.randn(3, 3, 3).astype(F)
    got = np.sort_complex(np.asarray(wjax.vmap(jnp.linalg.eigvals)(batch)))
    want = np.sort_complex(np.asarray(jjnp.linalg.eigvals(batch)))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- derivatives

def _sym(x):
    return (x + np.swapaxes(x, -1, -2)) / 2


def _jvp_vjp(fw, fj, args, rtol=2e-4, atol=2e-4, seed=0, sym=()):
    """jvp and vjp against JAX.  ``sym``: the arguments that are symmetric matrices, for a
    function defined only on them (cholesky): their tangents are symmetric, and their
    cotangents are compared by their symmetric parts (what pairs with a symmetric tangent) --
    off that subspace JAX's versions differ (0.10 differentiates the whole matrix, 0.11 only
    the triangle LAPACK reads); wjax follows 0.10, checked where the oracle does
    (``_whole_matrix_cholesky``)."""
    r = np.random.RandomState(seed)
    tangents = [np.asarray(r.randn(*np.shape(a)), F) for a in args]
    tangents = [_sym(t) if i in sym else t for i, t in enumerate(tangents)]
    yw, tw = wjax.jvp(fw, tuple(args), tuple(tangents))
    yj, tj = jax.jvp(fj, tuple(args), tuple(tangents))
    close(yw, yj, rtol=rtol, atol=atol)
    close(tw, tj, rtol=rtol, atol=atol)
    cts = jax.tree_util.tree_map(lambda y: np.asarray(r.randn(*np.shape(y)), F), yj)
    gw = wjax.vjp(fw, *args)[1](cts)
    gj = jax.vjp(fj, *args)[1](cts)
    if sym:
        gw = tuple(_sym(np.asarray(g)) if i in sym else g for i, g in enumerate(gw))
        gj = tuple(_sym(np.asarray(g)) if i in sym else g for i, g in enumerate(gj))
    close(gw, gj, rtol=rtol, atol=atol)


def _whole_matrix_cholesky():
    """Whether the oracle's cholesky differentiates the whole input matrix (JAX 0.10: a
    tangent in the triangle it does not read moves the factor) or only the triangle it reads
    (0.11: the lower one for lower=True, the upper one for cho_factor's default)."""
    ones = np.ones((4, 4), F)
    return all(np.abs(np.asarray(jax.jvp(lambda a: jsl.cholesky(a, lower=lower), (S4,),
                                         (t,))[1])).max() > 0
               for lower, t in ((True, np.triu(ones, 1)), (False, np.tril(ones, -1))))


GRADS = {
    "expm": (lambda L, a: L.expm(a), [A4 / 8]),
    "expm_squarings": (lambda L, a: L.expm(a), [A4 / 2]),
    "lu": (lambda L, a: L.lu(a), [A4]),
    "lu_solve": (lambda L, a, b: L.lu_solve(L.lu_factor(a), b), [A4, B42]),
    "solve_gen": (lambda L, a, b: L.solve(a, b), [A4, B42]),
    "solve_pos": (lambda L, a, b: L.solve(a, b, assume_a="pos"), [S4, B42]),
    "cho_solve": (lambda L, a, b: L.cho_solve(L.cho_factor(a), b), [S4, B4]),
    "cholesky": (lambda L, a: L.cholesky(a, lower=True), [S4]),
    "solve_triangular": (lambda L, a, b: L.solve_triangular(a, b, lower=True, trans=1),
                         [L4, B42]),
    "inv": (lambda L, a: L.inv(a), [A4]),
    "det": (lambda L, a: L.det(a), [A4]),
    "eigh": (lambda L, a: L.eigh(a, eigvals_only=True), [S4]),
}
SYMMETRIC = {"cho_solve": (0,), "cholesky": (0,)}     # defined on symmetric matrices


@pytest.mark.parametrize("name", sorted(GRADS))
def test_derivatives_match_jax(name):
    f, args = GRADS[name]
    _jvp_vjp(lambda *a: f(wsl, *a), lambda *a: f(jsl, *a), args, sym=SYMMETRIC.get(name, ()))
    if name in SYMMETRIC and _whole_matrix_cholesky():
        _jvp_vjp(lambda *a: f(wsl, *a), lambda *a: f(jsl, *a), args)


@pytest.mark.parametrize("name", sorted(SYMMETRIC))
def test_derivatives_under_the_gpu_kernel_forms(name):
    """The same derivatives with the GPU targets' kernels (strided reductions, tiled matmul,
    flat elementwise) on this adapter: an H200 run's mismatch here was the oracle's (JAX 0.11
    differentiates one triangle), not the kernels'."""
    from wjax._src.backend import profiles, runtime
    f, args = GRADS[name]
    with runtime.get().options(**dict(profiles.GPU_STRATEGIES)):
        _jvp_vjp(lambda *a: f(wsl, *a), lambda *a: f(jsl, *a), args, sym=SYMMETRIC[name])
    wjax.clear_caches()


def test_numpy_linalg_derivatives_match_jax():
    """det/slogdet (custom rules: adjugate, trace of a solve) at every size class JAX
    special-cases, and at a singular matrix of rank n - 1, where det's gradient is the
    (rank-one) adjugate rather than NaN."""
    lower = np.array([[1, 0, 0, 0], [.5, 1, 0, 0], [-.3, .2, 1, 0], [.4, -.6, .1, 1]])
    upper = np.array([[2, 1, -1, .5], [0, 1.5, .3, 1], [0, 0, -1.2, .7], [0, 0, 0, 0]])
    sing = (lower @ upper).astype(F)       # rank 3; partial pivoting keeps the rows in order
    for a in (A4[:1, :1], A4[:2, :2], A4[:3, :3], A4, _well(5), sing):
        _jvp_vjp(jnp.linalg.det, jjnp.linalg.det, [a], rtol=5e-4, atol=5e-4)
    g = np.asarray(wjax.grad(jnp.linalg.det)(sing))
    assert np.abs(g).max() > 0.5 and np.all(np.isfinite(g))
    for a in (A4[:1, :1], A4[:2, :2], _well(5), np.stack([A4, -A4])):
        _jvp_vjp(lambda x: jnp.linalg.slogdet(x)[1], lambda x: jjnp.linalg.slogdet(x)[1], [a])
        close(jnp.linalg.slogdet(a), jjnp.linalg.slogdet(a), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- vmap and jit

BATCHED = {
    "lu": lambda L, a: L.lu(a),
    "cho_solve": lambda L, a: L.cho_solve(L.cho_factor(a @ a.T + 4 * np.eye(4, dtype=F)), B42),
    "solve_triangular": lambda L, a: L.solve_triangular(a, B4, lower=True, trans=1),
    "expm": lambda L, a: L.expm(a / 8),
    "det": lambda L, a: L.det(a),
    "lu_solve": lambda L, a: L.lu_solve(L.lu_factor(a), B42, trans=1),
    "eigh": lambda L, a: L.eigh(a + a.T, eigvals_only=True),
    "svd": lambda L, a: L.svd(a, compute_uv=False),
    "qr": lambda L, a: L.qr(a),
    "inv": lambda L, a: L.inv(a),
}


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_vmap_and_jit_match_jax(name):
    f = BATCHED[name]
    x = np.stack([_well(4, seed=s) for s in range(3)])
    want = jax.vmap(lambda a: f(jsl, a))(x)
    close(wjax.vmap(lambda a: f(wsl, a))(x), want, rtol=1e-4, atol=1e-4)
    close(wjax.jit(wjax.vmap(lambda a: f(wsl, a)))(x), want, rtol=1e-4, atol=1e-4)


def test_leading_dimensions_batch_like_jax():
    a = np.stack([_well(4, (3,), seed=s) for s in range(2)])          # (2, 3, 4, 4)
    spd = a @ np.swapaxes(a, -1, -2)
    b = RNG.randn(2, 3, 4, 2).astype(F)
    for name, f in [("inv", lambda M: M.linalg.inv(a)), ("solve", lambda M: M.linalg.solve(a, b)),
                    ("det", lambda M: M.linalg.det(a)), ("slogdet", lambda M: M.linalg.slogdet(a)),
                    ("cholesky", lambda M: M.linalg.cholesky(spd)),
                    ("eigvalsh", lambda M: M.linalg.eigvalsh(spd)),
                    ("svdvals", lambda M: M.linalg.svd(a[..., :3], compute_uv=False)),
                    ("qr_r", lambda M: M.linalg.qr(a, mode="r")),
                    ("pinv", lambda M: M.linalg.pinv(a[..., :3]))]:
        close(f(jnp), f(jjnp), rtol=2e-4, atol=2e-4)


def test_jit_of_derivatives():
    f = lambda L: lambda a: L.expm(a).sum() + L.det(a) + L.cho_solve(  # noqa: E731
        L.cho_factor(a @ a.T), B4).sum()
    x = A4 / 4
    close(wjax.jit(wjax.grad(f(wsl)))(x), jax.grad(f(jsl))(x), rtol=2e-4, atol=2e-4)
    close(wjax.jit(wjax.vmap(wjax.grad(f(wsl))))(np.stack([x, -x])),
          jax.vmap(jax.grad(f(jsl)))(np.stack([x, -x])), rtol=2e-4, atol=2e-4)


# --------------------------------------------------------------------------- bad calls

BAD = [
    ("cholesky", lambda L: L.cholesky(np.ones((2, 3), F))),
    ("lu_rank1", lambda L: L.lu(np.ones(3, F))),
    ("lu_batched", lambda L: L.lu(np.ones((2, 3, 3), F))),     # JAX's scipy lu is 2-D only
    ("lu_solve_trans", lambda L: L.lu_solve(L.lu_factor(A4), B4, trans=3)),
    ("solve_triangular_trans", lambda L: L.solve_triangular(U4, B4, trans="X")),
    ("solve_assume", lambda L: L.solve(A4, B4, assume_a="nonsense")),
    ("qr_mode", lambda L: L.qr(A4, mode="nonsense")),
    ("expm_nonsquare", lambda L: L.expm(np.ones((2, 3), F))),
    ("eigh_b", lambda L: L.eigh(S4, b=S4)),
    ("eigh_type", lambda L: L.eigh(S4, type=2)),
    ("block_diag_3d", lambda L: L.block_diag(np.ones((2, 2, 2), F))),
    ("polar_side", lambda L: L.polar(A4, side="up")),
]


@pytest.mark.parametrize("name,call", BAD, ids=[b[0] for b in BAD])
def test_bad_calls_raise_like_jax(name, call):
    with pytest.raises(Exception) as want:
        call(jsl)
    with pytest.raises(want.type):
        call(wsl)


def test_shape_mismatch_raises():
    for L in (wsl, jsl):
        with pytest.raises((ValueError, TypeError)):
            L.solve_triangular(U4, np.ones(3, F))
        with pytest.raises((ValueError, TypeError)):
            L.cho_solve(L.cho_factor(S4), np.ones((3, 2), F))


def _special_matrices(L, N):
    a = N.arange(12.0).reshape(4, 3) + N.eye(4, 3)
    out = [L.companion(N.array([1.0, 2.0, 3.0, 4.0])),
           L.companion(N.array([[2.0, 1.0, 3.0], [1.0, 0.0, 1.0]])), L.hadamard(8),
           L.hadamard(2, dtype=N.float32), L.helmert(5), L.helmert(3, full=True), L.pascal(5),
           L.pascal(4, "lower"), L.pascal(4, "upper"),
           L.leslie(N.array([0.1, 2.0, 1.0]), N.array([0.2, 0.8])), L.dft(4), L.dft(3, "sqrtn"),
           L.dft(5, "n"), L.fiedler(N.array([1.0, 4.0, 2.0, 7.0])), L.invhilbert(4),
           L.invpascal(4), L.invpascal(4, "lower"), L.invpascal(3, "upper"),
           L.eigh_tridiagonal(N.array([2.0, 3.0, 4.0]), N.array([1.0, 0.5]), eigvals_only=True),
           L.eigh_tridiagonal(N.array([2.0, 3.0, 4.0]), N.array([1.0, 0.5]), eigvals_only=True,
                              select="i", select_range=(1, 2)),
           N.abs(L.eigh_tridiagonal(N.array([2.0, 3.0, 4.0]), N.array([1.0, 0.5]))[1])]
    for m in (1, 2, 3, 5):
        for n in (1, 2, 4):
            for mode in ("full", "same", "valid"):
                out.append(L.convolution_matrix(N.arange(1.0, m + 1), n, mode))
    for mode, c in (("right", N.ones((2, 4))), ("left", N.ones((3, 2))),
                    ("right", N.arange(4.0)), ("left", N.arange(3.0))):
        out.extend(N.abs(o) for o in L.qr_multiply(a, c, mode=mode))   # signs: Q's columns
    return out


def test_special_matrices_like_jax():
    """companion, hadamard, helmert, pascal, leslie, dft, fiedler, invhilbert, invpascal,
    convolution_matrix, eigh_tridiagonal and qr_multiply: JAX's shapes, dtypes and values;
    JAX's errors."""
    for g, w in zip(_special_matrices(wsl, jnp), _special_matrices(jsl, jjnp)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    for L in (wsl, jsl):
        with pytest.raises(ValueError, match="power of 2"):
            L.hadamard(6)
        with pytest.raises(NotImplementedError, match="select='v'"):
            L.eigh_tridiagonal(np.ones(3, F), np.ones(2, F), eigvals_only=True, select="v",
                               select_range=(0.0, 1.0))
