"""JAX's derivative rules for the decompositions of ``wjax/numpy/linalg.py``, as
``custom_jvp`` functions: ``eigh`` and ``svd`` (differentiating the Jacobi rotations
themselves would be slow and, at repeated eigenvalues, wrong), ``qr`` (rather than the
Householder loop), ``det`` (through the adjugate, so it is defined at singular matrices) and
``slogdet`` (``trace(solve(a, da))``); and ``eig``/``eigvals``, computed on the host (see
``eig``).  ``wjax/__init__.py`` installs these into ``wjax.numpy.linalg``, whose ``pinv``,
``lstsq``, ``cond`` and norms then differentiate through them too."""
from __future__ import annotations

import functools

import numpy as np

from .. import numpy as jnp
from ..core import dtypes
from ..core.ir import ShapeDtypeStruct
from ..numpy import linalg as _la
from .callbacks import pure_callback
from .custom_derivatives import custom_jvp

__all__ = ["eigh", "eigvalsh", "svd", "svdvals", "qr", "det", "slogdet", "eig", "eigvals"]

_raw_svd = _la.svd
_raw_slogdet = _la.slogdet      # the LU one (this module's replaces it in jnp.linalg)


def _t(x):
    return jnp.swapaxes(x, -1, -2)


_H = _la._H       # the conjugate transpose (the transpose of a real matrix)


def _real(x):
    return jnp.real(x) if jnp.iscomplexobj(x) else x


def _eye_like(x, n):
    return jnp.eye(n, dtype=x.dtype)


@custom_jvp
def _eigh_core(a):
    return tuple(_la._eigh_values_vectors(a))


@_eigh_core.defjvp
def _eigh_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = _eigh_core(a)
    n = a.shape[-1]
    eye = _eye_like(w, n)
    m = _H(v) @ da @ v
    f = 1.0 / (eye + w[..., None, :] - w[..., :, None]) - eye     # 1 / (w_j - w_i), 0 on diag
    return (w, v), (_real(jnp.diagonal(m, axis1=-2, axis2=-1)), v @ (f.astype(v.dtype) * m))


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of symmetric (Hermitian) matrices (Jacobi
    rotations on the device), differentiable as in JAX."""
    a = _la._float(jnp.asarray(a))
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise TypeError(f"eigh: argument must be a square matrix or a stack of them, got "
                        f"shape {a.shape}")
    return _la.EighResult(*_eigh_core(_la._hermitian_input(a, UPLO, symmetrize_input)))


def eigvalsh(a, UPLO=None, *, symmetrize_input: bool = True):
    return eigh(a, UPLO, symmetrize_input).eigenvalues


@custom_jvp
def _svd_thin(a):
    return tuple(_raw_svd(a, full_matrices=False))


@_svd_thin.defjvp
def _svd_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    u, s, vt = _svd_thin(a)
    ut, v = _H(u), _H(vt)
    k = s.shape[-1]
    dt = a.dtype
    s_row = s[..., None, :]
    ds_mat = ut @ da @ v
    ds = _real(jnp.diagonal(ds_mat, axis1=-2, axis2=-1))
    eye = _eye_like(s, k)
    diffs = (s_row + _t(s_row)) * (s_row - _t(s_row))
    f = (1.0 / (diffs + eye) - eye).astype(dt)
    dss, sds = s_row.astype(dt) * ds_mat, _t(s_row).astype(dt) * ds_mat
    s_zero = (s == 0).astype(s.dtype)
    s_inv = 1.0 / (s + s_zero) - s_zero
    du_dv_diag = 0.5 * (ds_mat - _H(ds_mat)) * (eye * s_inv[..., None, :]).astype(dt)
    du = u @ (f * (dss + _H(dss)) + du_dv_diag)
    dv = v @ (f * (sds + _H(sds)))
    rows, cols = a.shape[-2:]
    if rows > cols:
        dav = da @ v
        du = du + (dav - u @ (ut @ dav)) / s_row.astype(dt)
    if cols > rows:
        dahu = _H(da) @ u
        dv = dv + (dahu - v @ (vt @ dahu)) / s_row.astype(dt)
    return (u, s, vt), (du, ds, _H(dv))


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition (one-sided Jacobi on the device), differentiable as in
    JAX (the thin factors and the singular values)."""
    a = _la._float(jnp.asarray(a))
    if a.ndim < 2:
        raise TypeError(f"Input 0 to svd must have rank at least 2, but got shape={a.shape}")
    rows, cols = a.shape[-2:]
    if min(rows, cols) == 0 or (full_matrices and compute_uv and rows != cols):
        return _raw_svd(a, full_matrices, compute_uv)
    u, s, vt = _svd_thin(a)
    return s if not compute_uv else _la.SVDResult(u, s, vt)


def svdvals(x, /):
    return svd(x, compute_uv=False)


# --------------------------------------------------------------------------- qr

@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _qr_core(a, complete):
    return tuple(_la._householder_qr(a, "complete" if complete else "reduced"))


def _thin_qr_tangents(q, r, dx):
    """JAX's rule for ``x = q r`` with ``q`` (m, n), m >= n: ``dx r^-1`` split into the
    skew-symmetric part that rotates ``q`` and the upper-triangular part that changes ``r``."""
    dx_rinv = _la._tri_solve(r, dx, left_side=False, lower=False)
    m = _H(q) @ dx_rinv
    low = jnp.tril(m, -1)
    omega = low - _H(low)
    if jnp.iscomplexobj(m):   # the diagonal's imaginary part also rotates q (R stays real)
        eye = _eye_like(m, m.shape[-1])
        omega = omega + eye * (m - jnp.real(m).astype(m.dtype))
    return q @ (omega - m) + dx_rinv, (m - omega) @ r


@_qr_core.defjvp
def _qr_jvp(complete, primals, tangents):
    (x,), (dx,) = primals, tangents
    q, r = _qr_core(x, complete)
    m, n = x.shape[-2:]
    if m < n:                 # x = q [r1 r2]: the square part's rule, then r2 = q^T x2
        dq, dr1 = _thin_qr_tangents(q, r[..., :, :m], dx[..., :, :m])
        dr2 = _H(dq) @ x[..., :, m:] + _H(q) @ dx[..., :, m:]
        return (q, r), (dq, jnp.concatenate([dr1, dr2], axis=-1))
    q_mn, r_nn = q[..., :, :n], r[..., :n, :]
    dq_mn, dr_nn = _thin_qr_tangents(q_mn, r_nn, dx)
    if not complete or m == n:
        return (q, r), (dq_mn, dr_nn)
    # the complement's tangent (Roberts & Roberts, arXiv:2409.13374, eqs. 32-33):
    # z = q_pn (q_nn - I)^-1, dq_mp = dq_mn z^T - (q_mn + q_mp z)(dq_pn - z dq_nn)^T
    q_nn, q_pn, q_mp = q_mn[..., :n, :], q_mn[..., n:, :], q[..., :, n:]
    z = _H(jnp.linalg.solve(_H(q_nn - _eye_like(q, n)), _H(q_pn)))
    dq_nn, dq_pn = dq_mn[..., :n, :], dq_mn[..., n:, :]
    dq_mp = dq_mn @ _H(z) - (q_mn + q_mp @ z) @ _H(dq_pn - z @ dq_nn)
    dr = jnp.concatenate([dr_nn, jnp.zeros(r.shape[:-2] + (m - n, n), r.dtype)], axis=-2)
    return (q, r), (jnp.concatenate([dq_mn, dq_mp], axis=-1), dr)


def qr(a, mode: str = "reduced"):
    """QR by Householder reflections on the device (LAPACK's signs), differentiable with
    JAX's rule; ``mode`` is ``reduced``, ``complete`` or ``r``."""
    a = _la._qr_args(a, mode)
    q, r = _qr_core(a, mode == "complete")
    if mode == "r":
        return r
    return _la.QRResult(q, r)


# --------------------------------------------------------------------------- det, slogdet

def _square_float(name, a):
    """``a`` as an inexact square matrix (stack); complex64 stays complex."""
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, np.inexact):
        a = a.astype(np.float32)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: argument must be a square matrix or a stack of them, got "
                         f"shape {a.shape}")
    return a


def _adjugate_solve(a, b):
    """``(det(a), adj(a) @ b)`` for square ``a`` and ``b`` of a's shape, defined at singular
    ``a`` too (JAX's construction, the same complex arithmetic for complex64 -- no
    conjugates): from ``P a = L U``, ``adj(a) b = det(a) U^-1 L^-1 P b``;
    the last diagonal entry of U is replaced by ``1 / prod(u_ii, i < n)`` and the other rows
    of ``L^-1 P b`` scaled by det(a), so a zero ``u_nn`` (rank n - 1) gives the rank-one
    adjugate instead of 0 * inf; where that still fails (rank < n - 1), the result is 0."""
    n = a.shape[-1]
    if n == 1:
        return a[..., 0, 0], b
    lu, piv, perm = _la.lu_factor(a)
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    swaps = jnp.sum(piv != jnp.arange(n, dtype=piv.dtype), axis=-1)
    sign = jnp.where(swaps % 2 == 1, -1.0, 1.0).astype(a.dtype)
    partial = jnp.cumprod(diag, axis=-1) * sign[..., None]
    lu = lu.at[..., -1, -1].set(1.0 / partial[..., -2])
    probe = _la._tri_solve(lu, jnp.ones(lu.shape[:-1] + (1,), a.dtype), lower=False)
    bad = jnp.any(~jnp.isfinite(probe), axis=(-2, -1))[..., None, None]
    x = jnp.where(bad, 0.0, b)
    x = jnp.take_along_axis(x, jnp.broadcast_to(perm[..., :, None], x.shape), axis=-2)
    x = _la._tri_solve(lu, x, lower=True, unit_diagonal=True)
    x = jnp.concatenate([x[..., :-1, :] * partial[..., -1, None, None], x[..., -1:, :]],
                        axis=-2)
    x = _la._tri_solve(lu, x, lower=False)
    return partial[..., -1], jnp.where(bad, 0.0, x)


@custom_jvp
def _det_lu(a):
    sign, logdet = _slogdet_lu(a)
    return sign * jnp.exp(logdet)


@_det_lu.defjvp
def _det_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    d, z = _adjugate_solve(a, da)
    return d, jnp.trace(z, axis1=-2, axis2=-1)


def det(a):
    """The determinant: closed forms for 2x2 and 3x3 (as JAX), else from the LU factors;
    differentiable through the adjugate, also at singular matrices."""
    a = _square_float("det", a)
    n = a.shape[-1]
    if n == 0:
        return jnp.ones(a.shape[:-2], a.dtype)
    if n == 1:
        return a[..., 0, 0]
    if n == 2:
        return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    if n == 3:
        x = [[a[..., i, j] for j in range(3)] for i in range(3)]
        return (x[0][0] * x[1][1] * x[2][2] + x[0][1] * x[1][2] * x[2][0]
                + x[0][2] * x[1][0] * x[2][1] - x[0][2] * x[1][1] * x[2][0]
                - x[0][0] * x[1][2] * x[2][1] - x[0][1] * x[1][0] * x[2][2])
    return _det_lu(a)


@custom_jvp
def _slogdet_lu(a):
    return tuple(_raw_slogdet(a))


@custom_jvp
def _slogdet_small(a):
    d = a[..., 0, 0] if a.shape[-1] == 1 else \
        a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    return jnp.sign(d), jnp.log(jnp.abs(d))


def _slogdet_jvp(primals, tangents):
    """``d log|det| = Re tr(a^-1 da)``; the sign's tangent is zero for real ``a`` and
    ``i Im(tr(a^-1 da)) sign`` for complex (the rotation of the unit sign), as JAX."""
    (a,), (da,) = primals, tangents
    sign, logdet = slogdet(a)
    if a.shape[-1] <= 2:      # the small cases' closed forms, as JAX
        if a.shape[-1] == 1:
            dl = da[..., 0, 0] / a[..., 0, 0]
        else:
            d = a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
            dl = (da[..., 0, 0] * a[..., 1, 1] - da[..., 0, 1] * a[..., 1, 0]
                  - da[..., 1, 0] * a[..., 0, 1] + da[..., 1, 1] * a[..., 0, 0]) / d
    else:
        dl = jnp.trace(jnp.linalg.solve(a, da), axis1=-2, axis2=-1)
    if jnp.iscomplexobj(a):
        re = jnp.real(dl)
        return (sign, logdet), ((dl - re.astype(dl.dtype)) * sign, re)
    return (sign, logdet), (jnp.zeros_like(sign), dl)


_slogdet_lu.defjvp(_slogdet_jvp)
_slogdet_small.defjvp(_slogdet_jvp)


def slogdet(a, *, method=None):
    """``(sign, log|det|)`` from the LU factors (closed forms for 1x1 and 2x2, as JAX); the
    derivative of ``log|det|`` is ``trace(solve(a, da))``, the sign's is zero."""
    a = _square_float("slogdet", a)
    if method not in (None, "lu"):
        raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                         f"(`None`), and 'qr'." if method != "qr" else
                         "wjax: slogdet method='qr' is not implemented (use the default 'lu')")
    n = a.shape[-1]
    if n == 0:
        return _la.SlogdetResult(jnp.ones(a.shape[:-2], a.dtype),
                                 jnp.zeros(a.shape[:-2], dtypes.real_dtype(a.dtype)))
    return _la.SlogdetResult(*(_slogdet_small(a) if n <= 2 else _slogdet_lu(a)))


# --------------------------------------------------------------------------- eig (host)

def _eig_host(a, vectors: bool):
    w, v = np.linalg.eig(np.asarray(a))
    w = w.astype(np.complex64)
    return (w, v.astype(np.complex64)) if vectors else w


def _eig_call(name, a, vectors):
    a = jnp.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to {name} must have shape [..., n, n], got shape {a.shape}")
    if not jnp.issubdtype(a.dtype, np.inexact):
        a = a.astype(np.float32)
    w = ShapeDtypeStruct(a.shape[:-1], np.complex64)
    v = ShapeDtypeStruct(a.shape, np.complex64)
    return pure_callback(functools.partial(_eig_host, vectors=vectors), (w, v) if vectors else w,
                         a, vmap_method="expand_dims")


def eig(a):
    """Eigenvalues and right eigenvectors of a general square matrix (complex64), computed
    **on the host** by NumPy's LAPACK (``geev``) through a ``pure_callback`` step.  JAX itself
    runs this decomposition only on the CPU: a non-symmetric eigensolver (Hessenberg
    reduction, shifted QR with deflation, complex conjugate pairs, back-substitution for
    the vectors) is inherently sequential and branchy, and a WebGPU port would be slow and
    hard to make robust.  Works under ``jit`` and ``vmap``; not differentiable (as a
    ``pure_callback``)."""
    return tuple(_eig_call("eig", a, True))


def eigvals(a):
    """Eigenvalues of a general square matrix (complex64), on the host as ``eig``."""
    return _eig_call("eigvals", a, False)
