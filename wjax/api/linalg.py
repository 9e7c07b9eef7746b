"""JAX's derivative rules for the Jacobi decompositions of ``wjax/numpy/linalg.py``: ``eigh``
and ``svd`` as ``custom_jvp`` functions (differentiating the rotations themselves would be
slow and, at repeated eigenvalues, wrong).  ``wjax/__init__.py`` installs these into
``wjax.numpy.linalg``, whose ``pinv``, ``lstsq``, ``cond`` and norms then differentiate
through them too."""
from __future__ import annotations

from .. import numpy as jnp
from ..numpy import linalg as _la
from .custom_derivatives import custom_jvp

__all__ = ["eigh", "eigvalsh", "svd", "svdvals"]

_raw_svd = _la.svd


def _t(x):
    return jnp.swapaxes(x, -1, -2)


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
    eye = _eye_like(a, n)
    m = _t(v) @ da @ v
    f = 1.0 / (eye + w[..., None, :] - w[..., :, None]) - eye     # 1 / (w_j - w_i), 0 on diag
    return (w, v), (jnp.diagonal(m, axis1=-2, axis2=-1), v @ (f * m))


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices (Jacobi rotations on
    the device), differentiable as in JAX."""
    a = _la._float(jnp.asarray(a))
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise TypeError(f"eigh: argument must be a square matrix or a stack of them, got "
                        f"shape {a.shape}")
    if symmetrize_input:
        a = (a + _t(a)) / 2.0
    else:
        tri = jnp.tril(a) if UPLO in (None, "L") else jnp.triu(a)
        a = tri + _t(tri) - tri * _eye_like(a, a.shape[-1])
    return _la.EighResult(*_eigh_core(a))


def eigvalsh(a, UPLO=None, *, symmetrize_input: bool = True):
    return eigh(a, UPLO, symmetrize_input).eigenvalues


@custom_jvp
def _svd_thin(a):
    return tuple(_raw_svd(a, full_matrices=False))


@_svd_thin.defjvp
def _svd_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    u, s, vt = _svd_thin(a)
    ut, v = _t(u), _t(vt)
    k = s.shape[-1]
    s_row = s[..., None, :]
    ds_mat = ut @ da @ v
    ds = jnp.diagonal(ds_mat, axis1=-2, axis2=-1)
    eye = _eye_like(a, k)
    diffs = (s_row + _t(s_row)) * (s_row - _t(s_row))
    f = 1.0 / (diffs + eye) - eye
    dss, sds = s_row * ds_mat, _t(s_row) * ds_mat
    s_zero = (s == 0).astype(s.dtype)
    s_inv = 1.0 / (s + s_zero) - s_zero
    du_dv_diag = 0.5 * (ds_mat - _t(ds_mat)) * (eye * s_inv[..., None, :])
    du = u @ (f * (dss + _t(dss)) + du_dv_diag)
    dv = v @ (f * (sds + _t(sds)))
    rows, cols = a.shape[-2:]
    if rows > cols:
        dav = da @ v
        du = du + (dav - u @ (ut @ dav)) / s_row
    if cols > rows:
        dahu = _t(da) @ u
        dv = dv + (dahu - v @ (vt @ dahu)) / s_row
    return (u, s, vt), (du, ds, _t(dv))


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
