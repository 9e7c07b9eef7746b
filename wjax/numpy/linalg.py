"""wjax.numpy.linalg: norms, and small dense solvers on the device.

``inv``, ``solve``, ``det``, ``slogdet`` go through the ``lu`` and
``triangular_solve`` primitives, ``cholesky`` through ``cholesky``
(wjax/_src/prims/decomp.py), all computed by WGSL kernels meant for small
matrices.  Leading dimensions batch, as in JAX.  complex64: ``lu_factor``, ``det``,
``slogdet`` and triangular solves use ``wjax.lax.linalg``'s complex compositions; ``solve``
and ``inv`` solve the real embedding on the real LU kernel (see ``solve``).
"""
from __future__ import annotations

import builtins
import functools
import operator
from typing import NamedTuple

import numpy as np

from .. import lax
from .._src.core import dtypes
from ..lax import linalg as _lax_linalg
from .._src.prims import decomp as D
from ._util import broadcast_shapes, result_type
from . import creation
from .creation import arange, asarray, astype, broadcast_to, ones, zeros
from .scalars import finfo, issubdtype
from . import ufuncs
from .ufuncs import _where_xy, log, power, sqrt
from . import shapes
from .shapes import (_axis, expand_dims, moveaxis, ndim, ravel, reshape, squeeze, swapaxes,
                     take_along_axis)
from . import reductions, sorting
from .reductions import prod
from .products import cross, dot, matmul, matrix_transpose, outer, tensordot, vecdot
from .._src.api.callbacks import pure_callback
from .._src.api.custom_derivatives import custom_jvp
from .._src.core.ir import ShapeDtypeStruct
from .decompositions import (EighResult, QRResult, SVDResult, _abs2, _eye_like, _float, _H,
                             _is_complex, eigh_jacobi, householder_qr, svd_jacobi)


def _square(name, a):
    a = _float(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{name}: argument must be a square matrix or a stack of them, got shape {a.shape}"
        )
    return a


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _float(x)
    if axis is None:
        y = ravel(x)
        r = vector_norm(y, axis=0, ord=ord)
        return reshape(r, (1,) * x.ndim) if keepdims else r
    if ord == 2 or ord is None:
        return sqrt(reductions.sum(_abs2(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return reductions.max(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return reductions.min(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return reductions.sum(astype(x != 0, dtypes.real_dtype(x.dtype)), axis=axis,
                              keepdims=keepdims)
    if ord == 1:
        return reductions.sum(ufuncs.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    p = float(ord)
    return power(reductions.sum(power(ufuncs.abs(x), p), axis=axis, keepdims=keepdims), 1.0 / p)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):
    x = _float(x)
    if axis is None:
        if ord is None:
            r = sqrt(reductions.sum(_abs2(x)))
            return reshape(r, (1,) * x.ndim) if keepdims else r
        if x.ndim == 1:
            axis = 0
        elif x.ndim == 2:
            axis = (0, 1)
        else:
            raise ValueError("Improper number of axes for norm: ord given for an array of rank "
                             f"{x.ndim} without axis")
    if isinstance(axis, (tuple, list)) and len(axis) == 1:
        axis = axis[0]
    if not isinstance(axis, (tuple, list)):
        ax = _axis(operator.index(axis), x.ndim)
        return vector_norm(x, axis=ax, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError(f"Improper number of axes for norm: axis={axis}")
    r, c = (_axis(operator.index(a), x.ndim) for a in axis)
    if r == c:
        raise ValueError(f"Duplicate axes given to norm: axis={axis}")
    if ord in (None, "fro", "f"):
        out = sqrt(reductions.sum(_abs2(x), axis=(r, c), keepdims=keepdims))
    elif ord in (1, -1):
        s = reductions.sum(ufuncs.abs(x), axis=r, keepdims=True)
        out = (reductions.max if ord == 1 else reductions.min)(s, axis=c, keepdims=True)
        out = out if keepdims else squeeze(out, (r, c))
    elif ord in (np.inf, -np.inf):
        s = reductions.sum(ufuncs.abs(x), axis=c, keepdims=True)
        out = (reductions.max if ord == np.inf else reductions.min)(s, axis=r, keepdims=True)
        out = out if keepdims else squeeze(out, (r, c))
    elif ord in (2, -2, "nuc"):
        sv = svd(moveaxis(x, (r, c), (-2, -1)), compute_uv=False)
        out = (reductions.max(sv, axis=-1) if ord == 2 else reductions.min(sv, axis=-1)
               if ord == -2 else reductions.sum(sv, axis=-1))
        if keepdims:
            out = expand_dims(expand_dims(out, builtins.min(r, c)), builtins.max(r, c))
    else:
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    return out


def lu_factor(a):
    """(lu, pivots, permutation) from the device LU kernel (partial pivoting); complex64
    through ``lax.linalg.lu``'s composition (LAPACK's pivots)."""
    a = _float(a)
    if a.ndim < 2:
        raise TypeError(f"Input 0 to lu must have rank at least 2, but got shape={a.shape}")
    if 0 in a.shape[-2:]:
        k = builtins.min(a.shape[-2:])
        return a, zeros(a.shape[:-2] + (k,), np.int32), \
            broadcast_to(arange(a.shape[-2], dtype=np.int32), a.shape[:-1])
    return tuple(_lax_linalg.lu(a))


def _tri_solve(a, b, *, left_side=True, lower=False, transpose_a=False, unit_diagonal=False,
               conjugate_a=False):
    return _lax_linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                        transpose_a=transpose_a, conjugate_a=conjugate_a,
                                        unit_diagonal=unit_diagonal)


def _lu_solve(lu, perm, b):
    """Solves a x = b (b: [..., m, n]) from a's LU factors."""
    pb = take_along_axis(b, broadcast_to(expand_dims(perm, -1), b.shape), -2, mode="clip")
    y = _tri_solve(lu, pb, lower=True, unit_diagonal=True)
    return _tri_solve(lu, y, lower=False)


def solve(a, b):
    """``x`` with ``a x = b`` by LU with partial pivoting on the device.  complex64 systems
    are solved as their real embedding ``[[X, -Y], [Y, X]] [u; v] = [Re b; Im b]`` (``a = X +
    iY``, ``x = u + iv``) by the real LU kernel: the embedding's singular values are a's
    (each twice), so the condition number and LU's backward stability carry over, and its
    derivatives, vmap and jit are the real primitives' rules."""
    a = _square("solve", a)
    b = asarray(b)
    dt = result_type(a, b)
    if not issubdtype(dt, np.inexact):
        dt = np.dtype(np.float32)
    a, b = astype(a, dt), astype(b, dt)
    m = a.shape[-1]
    vec = b.ndim == 1
    if vec:
        if b.shape[0] != m:
            raise ValueError(f"solve: b of shape {b.shape} does not match a of shape {a.shape}")
        b = b[:, None]
    if b.shape[-2] != m:
        raise ValueError(f"solve: b of shape {b.shape} does not match a of shape {a.shape} (the "
                         f"second-to-last dimension of b must be {m})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    if m == 0 or b.shape[-1] == 0:
        x = zeros(b.shape, dt)
    elif issubdtype(dt, np.complexfloating):
        re, im = ufuncs.real(a), ufuncs.imag(a)
        big = shapes.concatenate([shapes.concatenate([re, -im], axis=-1),
                                  shapes.concatenate([im, re], axis=-1)], axis=-2)
        rhs = shapes.concatenate([ufuncs.real(b), ufuncs.imag(b)], axis=-2)
        lu, _, perm = lu_factor(big)
        y = _lu_solve(lu, perm, rhs)
        x = lax.complex(y[..., :m, :], y[..., m:, :])
    else:
        lu, _, perm = lu_factor(a)
        x = _lu_solve(lu, perm, b)
    return x[..., 0] if vec else x


def inv(a):
    a = _square("inv", a)
    n = a.shape[-1]
    eye = broadcast_to(creation.eye(n, dtype=a.dtype), a.shape)
    return solve(a, eye)


def _parity(pivots):
    k = pivots.shape[-1]
    swaps = reductions.sum(pivots != arange(k, dtype=np.int32), axis=-1)
    return _where_xy(swaps % 2 == 1, -1.0, 1.0)


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def _slogdet_lu_values(a):
    """``(sign, log|det|)`` from the LU factors; complex64: ``sign`` is the complex unit
    ``parity * prod(d / |d|)`` over the diagonal of U and ``logabsdet`` float32, as JAX."""
    n = a.shape[-1]
    real_dt = dtypes.real_dtype(a.dtype)
    if n == 0:
        return SlogdetResult(ones(a.shape[:-2], a.dtype), zeros(a.shape[:-2], real_dt))
    lu, piv, _ = lu_factor(a)
    d = shapes.diagonal(lu, 0, -2, -1)
    zero = reductions.any(d == 0, axis=-1)
    if _is_complex(a):
        mag = ufuncs.abs(d)
        unit = d / astype(_where_xy(mag == 0, 1.0, mag), a.dtype)
        sign = prod(unit, axis=-1) * astype(_parity(piv), a.dtype)
        logdet = reductions.sum(log(mag), axis=-1)
        return SlogdetResult(_where_xy(zero, zeros((), a.dtype), sign),
                             _where_xy(zero, -np.inf, logdet))
    neg = reductions.sum(astype(d < 0, np.int32), axis=-1)
    sign = astype(_parity(piv), a.dtype) * _where_xy(neg % 2 == 1, -1.0, 1.0)
    logdet = reductions.sum(log(ufuncs.abs(d)), axis=-1)
    sign = _where_xy(zero, 0.0, sign)
    logdet = _where_xy(zero, -np.inf, logdet)
    return SlogdetResult(astype(sign, a.dtype), astype(logdet, a.dtype))


def cholesky(a, *, upper=False, symmetrize_input=True):
    a = _float(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:     # JAX's class (from its transpose/add)
        raise TypeError(f"cholesky: argument must be a square matrix or a stack of them, got "
                        f"shape {a.shape}")
    if issubdtype(a.dtype, np.complexfloating):
        return _complex_cholesky(a, upper, symmetrize_input)
    if symmetrize_input:
        a = (a + swapaxes(a, -1, -2)) * 0.5
    if a.shape[-1] == 0:
        return a
    L = D.cholesky_p.bind(a)
    return swapaxes(L, -1, -2) if upper else L


def _complex_cholesky(a, upper, symmetrize_input):
    """The Cholesky factor of a Hermitian positive definite complex matrix (NaN where it is
    not), column by column in jnp operations: ``L[j:, j] = (a[j:, j] - L[j:, :j] conj(L[j, :j]))
    / sqrt(the real diagonal entry)``.  One step per column (the jaxpr grows with n), and
    autodiff, vmap and jit follow from the operations; the input is made Hermitian first
    (``(a + a^H) / 2``) as JAX does."""
    if symmetrize_input:
        a = (a + ufuncs.conj(swapaxes(a, -1, -2))) * 0.5
    n = a.shape[-1]
    L = creation.zeros_like(a)
    for j in range(n):
        v = a[..., j:, j]
        if j:
            v = v - matmul(L[..., j:, :j], ufuncs.conj(L[..., j, :j])[..., None])[..., 0]
        d = sqrt(ufuncs.real(v[..., :1]))
        L = L.at[..., j:, j].set(v / d)
    return ufuncs.conj(swapaxes(L, -1, -2)) if upper else L


def solve_triangular(a, b, lower=False, unit_diagonal=False, trans=0):
    a, b = _float(a), _float(b)
    if _is_complex(a) != _is_complex(b):
        dt = result_type(a, b)
        a, b = astype(a, dt), astype(b, dt)
    vec = b.ndim == a.ndim - 1
    if vec:
        b = b[..., None]
    tr = trans in (1, 2, "T", "C")
    x = _tri_solve(a, b, lower=lower, transpose_a=tr, unit_diagonal=unit_diagonal,
                   conjugate_a=trans in (2, "C"))
    return x[..., 0] if vec else x


def matrix_power(a, n):
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise TypeError(
            f"matrix_power requires a square matrix or a stack of them, got shape {a.shape}"
        )
    n = operator.index(n)
    if n == 0:
        return broadcast_to(creation.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result, z = None, a
    while n:
        if n & 1:
            result = z if result is None else matmul(result, z)
        n >>= 1
        if n:
            z = matmul(z, z)
    return result


def multi_dot(arrays, *, precision=None):
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    out = arrays[0]
    for b in arrays[1:]:
        out = matmul(out, b) if ndim(out) and ndim(b) else dot(out, b)
    return out


def tensorsolve(a, b, axes=None):
    a, b = asarray(a), asarray(b)
    if axes is not None:
        a = moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    out_shape = a.shape[b.ndim:]
    n = int(np.prod(out_shape))
    x = solve(reshape(a, (-1, n)), ravel(b))
    return reshape(x, out_shape)


def tensorinv(a, ind=2):
    a = asarray(a)
    out_shape = a.shape[ind:] + a.shape[:ind]
    n = int(np.prod(a.shape[:ind]))
    return reshape(inv(reshape(a, (n, -1))), out_shape)


def cond(x, p=None):
    """The condition number in the ``p`` norm (singular values for ``None``/2/-2); NaN from
    a singular matrix becomes inf, as JAX."""
    x = _float(x)
    if x.ndim < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                         f"arr.shape={x.shape}")
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got "
                         f"arr.shape={x.shape}")
    if p is None or p == 2:
        s = svd(x, compute_uv=False)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svd(x, compute_uv=False)
        r = s[..., -1] / s[..., 0]
    else:
        if x.shape[-2] != x.shape[-1]:
            raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got "
                             f"arr.shape={x.shape}")
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    nan_in = reductions.any(ufuncs.isnan(x), axis=(-2, -1))
    return _where_xy(ufuncs.isnan(r) & ~nan_in, np.inf, r)


# --------------------------------------------------------------------------- eigh, svd
# JAX's derivative rules: differentiating the Jacobi rotations themselves would be slow and,
# at repeated eigenvalues, wrong.

def _t(x):
    return swapaxes(x, -1, -2)


def _real(x):
    return ufuncs.real(x) if _is_complex(x) else x


@custom_jvp
def _eigh_core(a):
    return tuple(eigh_jacobi(a))


@_eigh_core.defjvp
def _eigh_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = _eigh_core(a)
    n = a.shape[-1]
    eye = _eye_like(n, w.dtype)
    m = _H(v) @ da @ v
    f = 1.0 / (eye + w[..., None, :] - w[..., :, None]) - eye     # 1 / (w_j - w_i), 0 on diag
    return (w, v), (_real(shapes.diagonal(m, 0, -2, -1)), v @ (f.astype(v.dtype) * m))


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of symmetric (Hermitian) matrices (Jacobi
    rotations on the device), differentiable as in JAX."""
    a = _float(asarray(a))
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise TypeError(f"eigh: argument must be a square matrix or a stack of them, got "
                        f"shape {a.shape}")
    return EighResult(*_eigh_core(_hermitian_input(a, UPLO, symmetrize_input)))


def _hermitian_input(a, UPLO, symmetrize_input):
    """``(a + a^H) / 2``, or (``symmetrize_input=False``) the Hermitian matrix of ``a``'s
    lower (``UPLO='L'``, the default) or upper triangle, its diagonal's imaginary part
    ignored as LAPACK does."""
    if symmetrize_input:
        return (a + _H(a)) / 2.0
    lower = UPLO is None or UPLO == "L"
    tri = creation.tril(a) if lower else creation.triu(a)
    eye = _eye_like(a.shape[-1], a.dtype)
    diag = astype(ufuncs.real(tri), a.dtype) if _is_complex(a) else tri
    return tri + _H(tri) - diag * eye


def eigvalsh(a, UPLO=None, *, symmetrize_input: bool = True):
    return eigh(a, UPLO, symmetrize_input).eigenvalues


@custom_jvp
def _svd_thin(a):
    return tuple(svd_jacobi(a, full_matrices=False))


@_svd_thin.defjvp
def _svd_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    u, s, vt = _svd_thin(a)
    ut, v = _H(u), _H(vt)
    k = s.shape[-1]
    dt = a.dtype
    s_row = s[..., None, :]
    ds_mat = ut @ da @ v
    ds = _real(shapes.diagonal(ds_mat, 0, -2, -1))
    eye = _eye_like(k, s.dtype)
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
    a = _float(asarray(a))
    if a.ndim < 2:
        raise TypeError(f"Input 0 to svd must have rank at least 2, but got shape={a.shape}")
    rows, cols = a.shape[-2:]
    if min(rows, cols) == 0 or (full_matrices and compute_uv and rows != cols):
        return svd_jacobi(a, full_matrices, compute_uv)
    u, s, vt = _svd_thin(a)
    return s if not compute_uv else SVDResult(u, s, vt)


def svdvals(x, /):
    return svd(x, compute_uv=False)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse (singular values below ``rtol * max`` dropped)."""
    a = _float(asarray(a))
    m, n = a.shape[-2:]
    cutoff = rtol if rtol is not None else rcond
    if cutoff is None:
        cutoff = 10 * builtins.max(m, n) * float(np.finfo(np.float32).eps)
    u, s, vh = svd(a, full_matrices=False)
    keep = s > asarray(cutoff, s.dtype) * reductions.max(s, axis=-1, keepdims=True)
    s_inv = _where_xy(keep, 1.0 / _where_xy(keep, s, 1.0), 0.0)
    return matmul(_H(vh) * astype(s_inv, a.dtype)[..., None, :], _H(u))


def matrix_rank(M, rtol=None, *, tol=None):
    """The number of singular values above ``tol`` (default: JAX's ``max * max(m, n) * eps``)."""
    M = _float(asarray(M))
    if M.ndim < 2:
        return reductions.sum(M != 0, dtype=np.int32)
    s = svd(M, compute_uv=False)
    if tol is None:
        r = rtol if rtol is not None else builtins.max(M.shape[-2:]) * float(
            np.finfo(np.float32).eps)
        tol = reductions.max(s, axis=-1, keepdims=True) * asarray(r, s.dtype)
    return reductions.sum(s > tol, axis=-1, dtype=np.int32)


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """Least squares ``argmin |a x - b|`` through the SVD: ``(x, residuals, rank, s)``;
    singular values below ``rcond * s_max`` (default ``eps * max(m, n)``) are dropped."""
    a, b = asarray(a), asarray(b)
    dt = result_type(a, b)
    if not issubdtype(dt, np.inexact):
        dt = np.dtype(np.float32)
    a, b = astype(a, dt), astype(b, dt)
    rdt = dtypes.real_dtype(dt)
    if a.shape[:1] != b.shape[:1]:
        raise ValueError("Leading dimensions of input arrays must match")
    vec = b.ndim == 1
    b2 = b[:, None] if vec else b
    if a.ndim != 2:
        raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
    if b2.ndim != 2:
        raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or "
                        f"two-dimensional")
    m, n = a.shape
    eps = float(finfo(rdt).eps)
    if a.size == 0:
        s = zeros((0,), rdt)
        rank = asarray(0, np.int32)
        x = zeros((n,) + b2.shape[1:], dt)
    else:
        if rcond is None:
            rcond = eps * builtins.max(m, n)
        else:
            rcond = _where_xy(asarray(rcond) < 0, eps, rcond)
        u, s, vh = svd(a, full_matrices=False)
        keep = (s > 0) & (s >= astype(asarray(rcond), rdt) * s[0])
        rank = reductions.sum(keep, dtype=np.int32)
        s_inv = _where_xy(keep, 1.0 / _where_xy(keep, s, 1.0), 0.0)
        x = matmul(_H(vh), astype(s_inv, dt)[:, None] * matmul(_H(u), b2))
    if numpy_resid and (int(rank) < n or m <= n):
        resid = zeros((0,), rdt)
    else:
        resid = norm(b2 - matmul(a, x), axis=0) ** 2
    return (ravel(x) if vec else x), resid, rank, s


# --------------------------------------------------------------------------- qr

def _qr_args(a, mode):
    a = _float(asarray(a))
    if a.ndim < 2:
        raise TypeError(f"Input 0 to qr must have rank at least 2, but got shape={a.shape}")
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
    return a


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _qr_core(a, complete):
    return tuple(householder_qr(a, "complete" if complete else "reduced"))


def _thin_qr_tangents(q, r, dx):
    """JAX's rule for ``x = q r`` with ``q`` (m, n), m >= n: ``dx r^-1`` split into the
    skew-symmetric part that rotates ``q`` and the upper-triangular part that changes ``r``."""
    dx_rinv = _tri_solve(r, dx, left_side=False, lower=False)
    m = _H(q) @ dx_rinv
    low = creation.tril(m, -1)
    omega = low - _H(low)
    if _is_complex(m):   # the diagonal's imaginary part also rotates q (R stays real)
        eye = _eye_like(m.shape[-1], m.dtype)
        omega = omega + eye * (m - ufuncs.real(m).astype(m.dtype))
    return q @ (omega - m) + dx_rinv, (m - omega) @ r


@_qr_core.defjvp
def _qr_jvp(complete, primals, tangents):
    (x,), (dx,) = primals, tangents
    q, r = _qr_core(x, complete)
    m, n = x.shape[-2:]
    if m < n:                 # x = q [r1 r2]: the square part's rule, then r2 = q^T x2
        dq, dr1 = _thin_qr_tangents(q, r[..., :, :m], dx[..., :, :m])
        dr2 = _H(dq) @ x[..., :, m:] + _H(q) @ dx[..., :, m:]
        return (q, r), (dq, shapes.concatenate([dr1, dr2], axis=-1))
    q_mn, r_nn = q[..., :, :n], r[..., :n, :]
    dq_mn, dr_nn = _thin_qr_tangents(q_mn, r_nn, dx)
    if not complete or m == n:
        return (q, r), (dq_mn, dr_nn)
    # the complement's tangent (Roberts & Roberts, arXiv:2409.13374, eqs. 32-33):
    # z = q_pn (q_nn - I)^-1, dq_mp = dq_mn z^T - (q_mn + q_mp z)(dq_pn - z dq_nn)^T
    q_nn, q_pn, q_mp = q_mn[..., :n, :], q_mn[..., n:, :], q[..., :, n:]
    z = _H(solve(_H(q_nn - _eye_like(n, q.dtype)), _H(q_pn)))
    dq_nn, dq_pn = dq_mn[..., :n, :], dq_mn[..., n:, :]
    dq_mp = dq_mn @ _H(z) - (q_mn + q_mp @ z) @ _H(dq_pn - z @ dq_nn)
    dr = shapes.concatenate([dr_nn, zeros(r.shape[:-2] + (m - n, n), r.dtype)], axis=-2)
    return (q, r), (shapes.concatenate([dq_mn, dq_mp], axis=-1), dr)


def qr(a, mode: str = "reduced"):
    """QR by Householder reflections on the device (LAPACK's signs), differentiable with
    JAX's rule; ``mode`` is ``reduced``, ``complete``, ``r`` or ``raw`` (NumPy's: LAPACK's
    reflectors and R, transposed, and the reflectors' factors; ``lax.linalg.ormqr`` and
    ``householder_product`` take ``h.mT``)."""
    a = _qr_args(a, mode)
    if mode == "raw":
        h, taus = _lax_linalg.geqrf(a)
        return QRResult(swapaxes(h, -1, -2), taus)
    q, r = _qr_core(a, mode == "complete")
    if mode == "r":
        return r
    return QRResult(q, r)


# --------------------------------------------------------------------------- det, slogdet

def _square_float(name, a):
    """``a`` as an inexact square matrix (stack); complex64 stays complex."""
    a = asarray(a)
    if not issubdtype(a.dtype, np.inexact):
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
    lu, piv, perm = lu_factor(a)
    diag = shapes.diagonal(lu, 0, -2, -1)
    swaps = reductions.sum(piv != arange(n, dtype=piv.dtype), axis=-1)
    sign = sorting.where(swaps % 2 == 1, -1.0, 1.0).astype(a.dtype)
    partial = reductions.cumprod(diag, axis=-1) * sign[..., None]
    lu = lu.at[..., -1, -1].set(1.0 / partial[..., -2])
    probe = _tri_solve(lu, ones(lu.shape[:-1] + (1,), a.dtype), lower=False)
    bad = reductions.any(~ufuncs.isfinite(probe), axis=(-2, -1))[..., None, None]
    x = sorting.where(bad, 0.0, b)
    x = take_along_axis(x, broadcast_to(perm[..., :, None], x.shape), axis=-2)
    x = _tri_solve(lu, x, lower=True, unit_diagonal=True)
    x = shapes.concatenate([x[..., :-1, :] * partial[..., -1, None, None], x[..., -1:, :]],
                        axis=-2)
    x = _tri_solve(lu, x, lower=False)
    return partial[..., -1], sorting.where(bad, 0.0, x)


@custom_jvp
def _det_lu(a):
    sign, logdet = _slogdet_lu(a)
    return sign * ufuncs.exp(logdet)


@_det_lu.defjvp
def _det_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    d, z = _adjugate_solve(a, da)
    return d, reductions.trace(z, 0, -2, -1)


def det(a):
    """The determinant: closed forms for 2x2 and 3x3 (as JAX), else from the LU factors;
    differentiable through the adjugate, also at singular matrices."""
    a = _square_float("det", a)
    n = a.shape[-1]
    if n == 0:
        return ones(a.shape[:-2], a.dtype)
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
    return tuple(_slogdet_lu_values(a))


@custom_jvp
def _slogdet_small(a):
    d = a[..., 0, 0] if a.shape[-1] == 1 else \
        a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]
    return ufuncs.sign(d), log(ufuncs.abs(d))


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
        dl = reductions.trace(solve(a, da), 0, -2, -1)
    if _is_complex(a):
        re = ufuncs.real(dl)
        return (sign, logdet), ((dl - re.astype(dl.dtype)) * sign, re)
    return (sign, logdet), (creation.zeros_like(sign), dl)


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
        return SlogdetResult(ones(a.shape[:-2], a.dtype),
                                 zeros(a.shape[:-2], dtypes.real_dtype(a.dtype)))
    return SlogdetResult(*(_slogdet_small(a) if n <= 2 else _slogdet_lu(a)))


# --------------------------------------------------------------------------- eig (host)

def _eig_host(a, vectors: bool):
    w, v = np.linalg.eig(np.asarray(a))
    w = w.astype(np.complex64)
    return (w, v.astype(np.complex64)) if vectors else w


def _eig_call(name, a, vectors):
    a = asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to {name} must have shape [..., n, n], got shape {a.shape}")
    if not issubdtype(a.dtype, np.inexact):
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


# array-API linalg re-exports
cross = cross


def diagonal(x, /, *, offset=0):
    return shapes.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    return reductions.trace(x, offset, -2, -1, dtype=dtype)


matmul = matmul
matrix_transpose = matrix_transpose
outer = outer
tensordot = tensordot
vecdot = vecdot

_lax_linalg._numpy_linalg = __import__("sys").modules[__name__]    # the hook (lax/linalg.py)
