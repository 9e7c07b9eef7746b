"""``jax.scipy.linalg``: SciPy's linear-algebra API over ``wjax.numpy.linalg`` and the
decomposition primitives (``wjax.lax.linalg``), with JAX's conventions and results.

Everything runs on the device: LU, Cholesky and triangular solves are WGSL kernels
(``wjax/_src/prims/decomp.py``; complex64 ones compositions of array operations, see
``wjax.lax.linalg`` and ``wjax.numpy.linalg``), ``eigh``/``svd`` cyclic Jacobi and ``qr``
Householder compositions (``wjax/numpy/linalg.py``), ``expm`` JAX's Pade scaling and squaring.  The
decompositions JAX itself runs only on the CPU through LAPACK (``schur``, ``sqrtm``,
``hessenberg``, ``rsf2csf``) raise ``NotImplementedError``.
"""
from __future__ import annotations

import functools
import operator
from math import comb
import warnings

import numpy as np

from .. import lax
from .. import numpy as jnp
from .._src.core import dtypes
from .._src.api.autodiff import jvp
from ..numpy.numerics import companion_matrix
from .._src.api.custom_derivatives import custom_jvp
from ..lax import linalg as lax_linalg

__all__ = ["block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "det", "eigh",
           "expm", "expm_frechet", "hankel", "hilbert", "inv", "lu", "lu_factor", "lu_solve",
           "polar", "qr", "schur", "solve", "solve_triangular", "sqrtm", "svd", "toeplitz",
           "hessenberg", "rsf2csf", "companion", "convolution_matrix", "dft", "eigh_tridiagonal",
           "fiedler", "hadamard", "helmert", "leslie", "pascal", "qr_multiply",
           "invhilbert", "invpascal"]


def _inexact(*xs):
    """``xs`` as arrays of their common inexact dtype (integers promote to float32)."""
    xs = [jnp.asarray(x) for x in xs]
    dt = jnp.result_type(*xs)
    if not jnp.issubdtype(dt, np.inexact):
        dt = np.dtype(np.float32)
    return [x.astype(dt) for x in xs]


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a (batched) square matrix, got shape {a.shape}")
    return a


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


# --------------------------------------------------------------------------- Cholesky

def cholesky(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """The Cholesky factor of a symmetric positive-definite matrix: lower (``L L^T = a``) or,
    by default as SciPy, upper (``U^T U = a``).  Reads only the ``lower``/upper triangle."""
    a, = _inexact(a)
    _square("cholesky", a)
    if jnp.iscomplexobj(a):      # Hermitian: L L^H = a, or U^H U = a with U = L^H of a^H
        if lower:
            return jnp.linalg.cholesky(a, symmetrize_input=False)
        return jnp.conj(_mT(jnp.linalg.cholesky(jnp.conj(_mT(a)), symmetrize_input=False)))
    if lower:
        return lax_linalg.cholesky(a, symmetrize_input=False)
    return _mT(lax_linalg.cholesky(_mT(a), symmetrize_input=False))


def cho_factor(a, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(c, lower)`` for ``cho_solve``."""
    return cholesky(a, lower=lower), lower


def _rhs(name, a, b):
    """``b`` as a batch of matrices ``[..., n, k]`` and whether it was a vector (JAX's rule:
    a 1-D ``b``, or -- deprecated -- a batch of vectors matching ``a``'s batch)."""
    if b.ndim == 1:
        return b[:, None], True
    if a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]:
        warnings.warn(f"jax.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are "
                      f"deprecated, and in the future will be treated as a batched 2D solve. "
                      f"Use {name}(..., b[..., None]).squeeze(-1) to avoid this warning.",
                      category=FutureWarning, stacklevel=3)
        return b[..., None], True
    return b, False


def _broadcast_system(a, b):
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return jnp.broadcast_to(a, batch + a.shape[-2:]), jnp.broadcast_to(b, batch + b.shape[-2:])


def _check_rhs(name, a, b):
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"{name}: incompatible shapes {a.shape} and {b.shape}: b's "
                         f"second-to-last dimension must be {a.shape[-1]}")


def cho_solve(c_and_lower, b, overwrite_b: bool = False, check_finite: bool = True):
    """Solves ``a x = b`` from ``cho_factor(a)``."""
    c, lower = c_and_lower
    c, b = _inexact(c, b)
    _square("cho_solve", c)
    b, vec = _rhs("cho_solve", c, b)
    _check_rhs("cho_solve", c, b)
    c, b = _broadcast_system(c, b)
    # lower: L L^H x = b; upper: U^H U x = b (^H is ^T for real factors)
    y = lax_linalg.triangular_solve(c, b, left_side=True, lower=lower, transpose_a=not lower,
                                    conjugate_a=not lower)
    x = lax_linalg.triangular_solve(c, y, left_side=True, lower=lower, transpose_a=lower,
                                    conjugate_a=lower)
    return x[..., 0] if vec else x


# --------------------------------------------------------------------------- LU

def lu_factor(a, overwrite_a: bool = False, check_finite: bool = True):
    """``(lu, piv)``: L (unit diagonal, below) and U packed in one matrix, and LAPACK's row
    swaps (row ``i`` was swapped with row ``piv[i]``)."""
    a, = _inexact(a)
    lu_, piv, _ = jnp.linalg.lu_factor(a)
    return lu_, piv


def lu_solve(lu_and_piv, b, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True):
    """Solves ``a x = b`` (``trans=0``), ``a^T x = b`` (1) or ``a^H x = b`` (2) from
    ``lu_factor(a)``."""
    lu_, piv = lu_and_piv
    lu_, b = _inexact(lu_, b)
    _square("lu_solve", lu_)
    if trans not in (0, 1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    perm = lax_linalg.lu_pivots_to_permutation(jnp.asarray(piv, np.int32), lu_.shape[-1])
    b, vec = _rhs("lu_solve", lu_, b)
    _check_rhs("lu_solve", lu_, b)
    lu_, b = _broadcast_system(lu_, b)
    perm = jnp.broadcast_to(perm, b.shape[:-1])
    idx = jnp.broadcast_to(perm[..., None], b.shape)
    if trans == 0:                # P a = L U: x = U^-1 L^-1 (P b)
        x = jnp.take_along_axis(b, idx, axis=-2)
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=False)
    else:                         # a^T = U^T L^T P: x = P^T L^-T U^-T b (^H: conjugated)
        conj = trans == 2
        x = lax_linalg.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                                        conjugate_a=conj)
        x = lax_linalg.triangular_solve(lu_, x, left_side=True, lower=True, transpose_a=True,
                                        conjugate_a=conj, unit_diagonal=True)
        inverse = jnp.argsort(perm, axis=-1)
        x = jnp.take_along_axis(x, jnp.broadcast_to(inverse[..., None], x.shape), axis=-2)
    return x[..., 0] if vec else x


def lu(a, permute_l: bool = False, overwrite_a: bool = False, check_finite: bool = True):
    """``(p, l, u)`` with ``a = p @ l @ u`` (``l`` unit lower trapezoidal, ``u`` upper), or
    ``(p @ l, u)`` with ``permute_l``."""
    a, = _inexact(a)
    if a.ndim < 2:
        raise TypeError(f"Input 0 to lu must have rank at least 2, but got shape={a.shape}")
    if a.ndim != 2:
        raise ValueError(f"jax.scipy.linalg.lu takes one matrix (2-D, as in JAX), got shape "
                         f"{a.shape}; use lu_factor for batches")
    lu_, _, perm = jnp.linalg.lu_factor(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    # the permutation matrix has a's real dtype (float32 for complex64), as JAX's
    p = (perm[..., None, :] == jnp.arange(m, dtype=perm.dtype)[:, None]).astype(
        dtypes.real_dtype(a.dtype))
    l = jnp.tril(lu_, -1)[..., :, :k] + jnp.eye(m, k, dtype=a.dtype)
    u = jnp.triu(lu_)[..., :k, :]
    if permute_l:
        return jnp.matmul(p, l), u
    return p, l, u


# --------------------------------------------------------------------------- solves

def solve_triangular(a, b, trans=0, lower: bool = False, unit_diagonal: bool = False,
                     overwrite_b: bool = False, debug=None, check_finite: bool = True):
    """Solves ``op(a) x = b`` for triangular ``a``: ``trans`` 0/'N' (a), 1/'T' (a^T) or
    2/'C' (a^H); only the ``lower``/upper triangle is read, its diagonal taken as ones with
    ``unit_diagonal``."""
    if trans in (0, "N"):
        transpose_a = False
    elif trans in (1, "T", 2, "C"):
        transpose_a = True       # 2/'C': conjugated too
    else:
        raise ValueError(f"Invalid 'trans' value {trans}")
    a, b = _inexact(a, b)
    _square("solve_triangular", a)
    b, vec = _rhs("solve_triangular", a, b)
    _check_rhs("solve_triangular", a, b)
    a, b = _broadcast_system(a, b)
    x = lax_linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose_a,
                                    conjugate_a=trans in (2, "C"), unit_diagonal=unit_diagonal)
    return x[..., 0] if vec else x


_ASSUME = ("gen", "sym", "her", "pos", "general", "symmetric", "hermitian",
           "positive definite", "diagonal", "tridiagonal", "banded", "upper triangular",
           "lower triangular")


def solve(a, b, lower: bool = False, overwrite_a: bool = False, overwrite_b: bool = False,
          debug: bool = False, check_finite: bool = True, assume_a: str = "gen"):
    """Solves ``a x = b``: by Cholesky for ``assume_a='pos'`` (reading the ``lower``/upper
    triangle), else by LU with partial pivoting (``jnp.linalg.solve``)."""
    if assume_a not in _ASSUME:
        raise ValueError(f"Expected assume_a to be one of {_ASSUME}; got {assume_a!r}")
    if assume_a not in ("pos", "positive definite"):
        return jnp.linalg.solve(a, b)
    a, b = _inexact(a, b)
    _square("solve", a)
    b, vec = _rhs("solve", a, b)
    _check_rhs("solve", a, b)
    a, b = _broadcast_system(a, b)
    x = _pos_solve(a, b, bool(lower))
    return x[..., 0] if vec else x


@functools.partial(custom_jvp, nondiff_argnums=(2,))
def _pos_solve(a, b, lower):
    return cho_solve(cho_factor(a, lower=lower), b)


@_pos_solve.defjvp
def _pos_solve_jvp(lower, primals, tangents):
    """As JAX's ``custom_linear_solve`` for ``a x = b``: ``dx = a^-1 (db - da x)`` with the
    whole ``da`` (not only the triangle the factorization reads), reusing the factors."""
    (a, b), (da, db) = primals, tangents
    factors = cho_factor(a, lower=lower)
    x = cho_solve(factors, b)
    return x, cho_solve(factors, db - da @ x)


def inv(a, overwrite_a: bool = False, check_finite: bool = True):
    """The inverse of a square matrix (``jnp.linalg.inv``)."""
    return jnp.linalg.inv(a)


def det(a, overwrite_a: bool = False, check_finite: bool = True):
    """The determinant (``jnp.linalg.det``: differentiable at singular matrices too)."""
    return jnp.linalg.det(a)


# --------------------------------------------------------------------------- decompositions

def eigh(a, b=None, lower: bool = True, eigvals_only: bool = False, overwrite_a: bool = False,
         overwrite_b: bool = False, turbo: bool = True, eigvals=None, type: int = 1,
         check_finite: bool = True):
    """``(w, v)`` (or ``w`` with ``eigvals_only``) of a symmetric matrix from its ``lower``
    (default) or upper triangle: Jacobi on the device, JAX's derivative rule."""
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    a, = _inexact(a)
    w, v = jnp.linalg.eigh(a, UPLO="L" if lower else "U")
    return w if eigvals_only else (w, v)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd"):
    """``(u, s, vh)`` (or ``s``): one-sided Jacobi on the device, JAX's derivative rule."""
    a, = _inexact(a)
    out = jnp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


def qr(a, overwrite_a: bool = False, lwork=None, mode: str = "full", pivoting: bool = False,
       check_finite: bool = True):
    """``(q, r)`` (``mode`` 'full' or 'economic') or ``(r,)`` ('r'), by Householder
    reflections (LAPACK's signs), with JAX's derivative rule."""
    if pivoting:
        raise NotImplementedError("wjax: qr(pivoting=True) (column-pivoted QR) is not "
                                  "implemented")
    if mode in ("full", "r"):
        np_mode = "complete"
    elif mode == "economic":
        np_mode = "reduced"
    else:
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    a, = _inexact(a)
    q, r = jnp.linalg.qr(a, mode=np_mode)
    return (r,) if mode == "r" else (q, r)


def polar(a, side: str = "right", *, method: str = "qdwh", eps=None, max_iterations=None):
    """``(u, p)``: ``a = u p`` (right) or ``p u`` (left) with ``u`` having orthonormal columns
    and ``p`` symmetric positive semi-definite.  Computed from the SVD for both ``method``s
    (JAX's 'qdwh' iteration and 'svd' converge to the same factors)."""
    if side not in ("left", "right"):
        raise ValueError(f"side={side!r} was not recognised; must be 'left' or 'right'")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"Unknown polar decomposition method {method}.")
    a, = _inexact(a)
    if a.ndim != 2:
        raise ValueError("The input `a` must be a 2-D array.")
    m, n = a.shape
    if side == "right" and m < n or side == "left" and m > n:
        raise ValueError(f"The input matrix of shape {a.shape} must have "
                         f"{'rows >= columns' if side == 'right' else 'rows <= columns'} for "
                         f"side={side!r}")
    w, s, vh = jnp.linalg.svd(a, full_matrices=False)
    u = w @ vh
    if side == "right":
        p = (_mT(vh) * s) @ vh
    else:
        p = (w * s) @ _mT(w)
    return u, p


def _cpu_only(name):
    def f(*args, **kwargs):
        raise NotImplementedError(
            f"jax.scipy.linalg.{name} is not implemented in wjax: JAX computes it only on the "
            f"CPU with LAPACK, on complex results (eigh/svd/qr/lu cover the symmetric and "
            f"triangular cases on the device)")
    f.__name__ = f.__qualname__ = name
    return f


schur = _cpu_only("schur")
sqrtm = _cpu_only("sqrtm")
hessenberg = _cpu_only("hessenberg")
rsf2csf = _cpu_only("rsf2csf")


# --------------------------------------------------------------------------- expm

# Pade approximant coefficients b_0..b_m of exp (Higham 2005, "The scaling and squaring
# method for the matrix exponential revisited"), and the 1-norm bounds theta_m under which
# degree m is accurate to float32 / float64 rounding.
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
_THETA32 = ((3, 4.258730016922831e-001), (5, 1.880152677804762e+000))
_MAXNORM32 = 3.925724783138660
_THETA64 = ((3, 1.495585217958292e-002), (5, 2.539398330063230e-001),
            (7, 9.504178996162932e-001), (9, 2.097847961257068e+000))
_MAXNORM64 = 5.371920351148152


def _pade(a, m):
    """``(u, v)``: the odd and even parts of the degree-``m`` Pade numerator, so that
    ``r_m(a) = (v - u)^-1 (v + u)``."""
    b = _PADE[m]
    n = a.shape[-1]
    eye = jnp.eye(n, dtype=a.dtype)
    a2 = a @ a
    if m == 13:
        a4 = a2 @ a2
        a6 = a4 @ a2
        u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2)
                 + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
        v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
            + b[0] * eye
        return u, v
    powers = [eye, a2]
    while len(powers) <= m // 2:
        powers.append(powers[-1] @ a2)
    odd = sum(b[2 * k + 1] * powers[k] for k in range(m // 2 + 1))
    even = sum(b[2 * k] * powers[k] for k in range(m // 2 + 1))
    return a @ odd, even


def _expm_one(a, upper_triangular, max_squarings):
    norm1 = jnp.max(jnp.sum(jnp.abs(a), axis=-2))
    f64 = a.dtype == np.float64
    thetas, maxnorm = (_THETA64, _MAXNORM64) if f64 else (_THETA32, _MAXNORM32)
    degrees = [d for d, _ in thetas] + [13 if f64 else 7]
    squarings = jnp.maximum(0.0, jnp.floor(jnp.log2(norm1 / maxnorm)))
    scaled = a / (2.0 ** squarings).astype(a.dtype)
    which = jnp.digitize(norm1, jnp.asarray([t for _, t in thetas], norm1.dtype))
    u, v = lax.switch(which, [lambda x, d=d: _pade(x, d) for d in degrees], scaled)
    p, q = u + v, v - u
    if upper_triangular:
        r = solve_triangular(q, p)
    else:
        r = jnp.linalg.solve(q, p)

    def square(c, i):
        return lax.cond(i < squarings, lambda x: x @ x, lambda x: x, c), None
    r, _ = lax.scan(square, r, jnp.arange(max_squarings, dtype=squarings.dtype))
    return lax.cond(squarings > max_squarings, lambda x: jnp.full_like(x, np.nan),
                    lambda x: x, r)


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential by scaling and squaring with Pade approximants (Higham 2005), as
    JAX computes it: degree 3/5/7 in float32 (3..13 in float64) chosen by the 1-norm, at most
    ``max_squarings`` squarings (NaN beyond).  Batched over leading dimensions; differentiable
    through the composition, as in JAX."""
    A, = _inexact(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={A.shape}.")
    if A.ndim > 2:
        return jnp.vectorize(lambda x: _expm_one(x, upper_triangular, max_squarings),
                             signature="(n,n)->(n,n)")(A)
    return _expm_one(A, upper_triangular, max_squarings)


def expm_frechet(A, E, *, method=None, compute_expm: bool = True):
    """``(expm(A), L(A, E))``, the Frechet derivative of ``expm`` at ``A`` in direction ``E``
    (JAX's definition: the ``jvp`` of ``expm``)."""
    A, E = _inexact(A, E)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"expected A to be a square matrix, got {A.shape}")
    if E.shape != A.shape:
        raise ValueError(f"expected E to be the same shape as A, got {E.shape} and {A.shape}")
    if method is not None and method != "SPS":
        raise ValueError(f"method='{method}' is not supported; use 'SPS' or None")
    expm_a, frechet = jvp(expm, (A,), (E,))
    return (expm_a, frechet) if compute_expm else frechet


# --------------------------------------------------------------------------- special matrices

def block_diag(*arrs):
    """The block-diagonal matrix of ``arrs`` (scalars and vectors are 1 x n blocks)."""
    if not arrs:
        return jnp.zeros((1, 0))
    arrs = [jnp.atleast_2d(jnp.asarray(a)) for a in arrs]
    bad = [i for i, a in enumerate(arrs) if a.ndim > 2]
    if bad:
        raise ValueError(f"arguments in the following positions have dimension greater than "
                         f"2: {bad}")
    dt = jnp.result_type(*arrs)
    cols = sum(a.shape[1] for a in arrs)
    rows, at = [], 0
    for a in arrs:
        c = a.shape[1]
        rows.append(jnp.pad(a.astype(dt), ((0, 0), (at, cols - at - c))))
        at += c
    return jnp.concatenate(rows, axis=0)


def hilbert(n: int):
    """The ``n x n`` Hilbert matrix ``1 / (i + j + 1)``."""
    n = operator.index(n)
    i = jnp.arange(n, dtype=np.float32)
    return 1.0 / (i[:, None] + i[None, :] + 1.0)


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (``c`` when None: then
    Hermitian); leading dimensions batch."""
    c = jnp.asarray(c)
    if r is None:
        r = c
    else:
        r = jnp.asarray(r)
    c, r = jnp.atleast_1d(c), jnp.atleast_1d(r)
    dt = jnp.result_type(c, r)
    m, n = c.shape[-1], r.shape[-1]
    # element (i, j) is c[i - j] on and below the diagonal, r[j - i] above it
    line = jnp.concatenate([jnp.flip(c, -1).astype(dt), r[..., 1:].astype(dt)], axis=-1)
    i = jnp.arange(m)[:, None]
    j = jnp.arange(n)[None, :]
    return jnp.take(line, (m - 1) + j - i, axis=-1)


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r`` (zeros when None)."""
    c = jnp.atleast_1d(jnp.asarray(c))
    r = jnp.zeros_like(c) if r is None else jnp.atleast_1d(jnp.asarray(r))
    dt = jnp.result_type(c, r)
    m, n = c.shape[-1], r.shape[-1]
    line = jnp.concatenate([c.astype(dt), r[..., 1:].astype(dt)], axis=-1)
    return jnp.take(line, jnp.arange(m)[:, None] + jnp.arange(n)[None, :], axis=-1)


def circulant(c):
    """The circulant matrix whose first column is ``c``."""
    c = jnp.atleast_1d(jnp.asarray(c))
    n = c.shape[-1]
    return jnp.take(c, (jnp.arange(n)[:, None] - jnp.arange(n)[None, :]) % n, axis=-1)


# --------------------------------------------------------------------------- special matrices

def companion(a):
    """The companion matrix of the polynomial with coefficients ``a`` (highest first): its
    first row ``-a[1:] / a[0]``, ones below the diagonal; leading dimensions batch."""
    a = jnp.atleast_1d(jnp.asarray(a))
    if a.shape[-1] < 2:
        raise ValueError("Incorrect shape for `a`. `a` must be at least one-dimensional with "
                         "at least two elements.")
    (a,) = _inexact(a)
    return companion_matrix(a)


def fiedler(a):
    """The symmetric matrix ``|a[i] - a[j]|``; leading dimensions batch."""
    a = jnp.atleast_1d(jnp.asarray(a))
    return jnp.abs(a[..., :, None] - a[..., None, :])


def leslie(f, s):
    """The Leslie matrix: fecundities ``f`` (n) in the first row, survival rates ``s``
    (n - 1) below the diagonal."""
    f, s = jnp.atleast_1d(jnp.asarray(f)), jnp.atleast_1d(jnp.asarray(s))
    if f.shape[-1] != s.shape[-1] + 1:
        raise ValueError("Incorrect lengths for f and s. The length of s must be one less "
                         "than the length of f.")
    dt = jnp.result_type(f, s)
    n = f.shape[-1]
    below = jnp.pad(s, [(0, 0)] * (s.ndim - 1) + [(1, 0)]).astype(dt)[..., :, None] * \
        jnp.eye(n, dtype=dt, k=-1)
    return jnp.where(jnp.arange(n)[:, None] == 0, f.astype(dt)[..., None, :], below)


def hadamard(n: int, dtype=int):
    """The ``n x n`` Hadamard matrix of Sylvester's construction (``n`` a power of 2)."""
    n = operator.index(n)
    if n < 1 or n & (n - 1):
        raise ValueError(f"n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h, dtype=dtype)


def helmert(n: int, full: bool = False):
    """The Helmert matrix: row ``i`` (from 1) holds ``1/sqrt(i(i+1))`` ``i`` times, then
    ``-i/sqrt(i(i+1))``; with ``full`` a first row of ``1/sqrt(n)``."""
    n = operator.index(n)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n))
    h = h / np.sqrt(np.arange(n) * np.arange(1, n + 1))[:, None].clip(1)
    h[0] = 1 / np.sqrt(n)
    return jnp.asarray(h if full else h[1:], np.float32)


def _pascal(n: int, kind, sign: bool):
    """``pascal(n, kind)`` (or, with ``sign``, its inverse) from the lower factor
    ``binomial(i, j)`` (inverse: ``(-1)^(i+j) binomial(i, j)``): "lower", its transpose
    "upper", and "symmetric" (the default) lower times upper (inverse: upper times lower)."""
    n = operator.index(n)
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"Expected kind to be 'symmetric', 'lower', or 'upper'; got {kind!r}")
    low = np.array([[comb(i, j) * (-1.0) ** ((i + j) * sign) for j in range(n)]
                    for i in range(n)]).reshape(n, n)
    sym = low.T @ low if sign else low @ low.T
    return jnp.asarray({"lower": low, "upper": low.T, "symmetric": sym}[kind], np.float32)


def pascal(n: int, kind: str | None = None):
    """The ``n x n`` Pascal matrix: ``kind`` "symmetric" (the default: binomial(i + j, i)),
    "lower" (binomial(i, j)) or "upper" (its transpose)."""
    return _pascal(n, kind, False)


def invpascal(n: int, kind: str | None = None):
    """The inverse of ``pascal(n, kind)``."""
    return _pascal(n, kind, True)


def invhilbert(n: int):
    """The exact inverse of the ``n x n`` Hilbert matrix, rounded to float32."""
    n = operator.index(n)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = ((-1) ** (i + j) * (i + j + 1) * comb(n + i, n - j - 1)
                         * comb(n + j, n - i - 1) * comb(i + j, i) ** 2)
    return jnp.asarray(out, np.float32)


def dft(n: int, scale: str | None = None, *, dtype=None):
    """The ``n``-point discrete Fourier transform matrix ``exp(-2 pi i j k / n)``, scaled by
    ``1/sqrt(n)`` ("sqrtn") or ``1/n`` ("n")."""
    n = operator.index(n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}")
    jk = np.outer(np.arange(n), np.arange(n)) % n
    w = np.exp(-2j * np.pi * jk / n)
    w = w / {None: 1, "sqrtn": np.sqrt(n), "n": n}[scale]
    return jnp.asarray(w, np.complex64 if dtype is None else dtype)


def convolution_matrix(a, n: int, mode: str = "full"):
    """The matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for ``v`` of length ``n``."""
    a = jnp.asarray(a)
    if a.ndim != 1:
        raise ValueError("convolution_matrix expects a one-dimensional a")
    n = operator.index(n)
    m = a.shape[0]
    if n < 1 or m < 1:
        raise ValueError("n and the length of a must be positive")
    full = toeplitz(jnp.concatenate([a, jnp.zeros(n - 1, a.dtype)]),
                    jnp.concatenate([a[:1], jnp.zeros(n - 1, a.dtype)]))
    if mode == "full":
        return full
    if mode == "same":
        start = (min(n, m) - 1) // 2
        return full[start:start + max(n, m)]
    if mode == "valid":
        start = min(n, m) - 1
        return full[start:start + max(n, m) - min(n, m) + 1]
    raise ValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}")


def eigh_tridiagonal(d, e, *, eigvals_only: bool = False, select: str = "a",
                     select_range=None, tol=None, key=None):
    """Eigenvalues (ascending; and with ``eigvals_only=False`` eigenvectors) of the symmetric
    tridiagonal matrix with diagonal ``d`` and off-diagonal ``e``; ``select="i"`` keeps the
    indices ``select_range`` (inclusive)."""
    d, e = _inexact(d, e)
    if select not in ("a", "i", "v"):
        raise ValueError(f"'select' must be 'a', 'i' or 'v'; got {select!r}")
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    m = jnp.diag(d) + jnp.diag(e, 1) + jnp.diag(e, -1)
    w, v = jnp.linalg.eigh(m)
    if select == "i":
        lo, hi = (operator.index(i) for i in select_range)
        w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    return w if eigvals_only else (w, v)


def qr_multiply(a, c, mode: str = "right", pivoting: bool = False, conjugate: bool = False,
                overwrite_a: bool = False, overwrite_c: bool = False):
    """``(c @ Q, R)`` (``mode="right"``) or ``(Q @ c, R)`` (``"left"``) with ``Q``, ``R`` the
    economic QR of ``a``; ``conjugate`` uses ``conj(Q)``."""
    if mode not in ("right", "left"):
        raise ValueError(f"Invalid mode argument {mode!r}")
    if pivoting:
        raise NotImplementedError("wjax: qr_multiply(pivoting=True) is not implemented")
    q, r = qr(a, mode="economic")
    if conjugate:
        q = jnp.conj(q)
    c = jnp.asarray(c)
    out = (c @ q) if mode == "right" else (q @ c)
    return out, r
