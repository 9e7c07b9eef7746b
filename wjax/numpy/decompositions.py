"""The decompositions' algorithms on the device, without derivative rules (``linalg.py``
gives them JAX's): symmetric/Hermitian eigenvectors and the SVD by cyclic (one-sided) Jacobi
rotations in rounds of disjoint pairs, and QR by Householder reflections with LAPACK's signs.
Each is a ``fori_loop``/``while_loop`` of array operations, so it runs on any adapter and
batches over leading dimensions."""
from __future__ import annotations

import builtins
from typing import NamedTuple

import numpy as np

from .. import lax
from .._src.core import dtypes
from . import creation
from .creation import arange, asarray, astype, broadcast_to, zeros
from .scalars import finfo, issubdtype
from . import ufuncs
from .ufuncs import _where_xy, sqrt
from . import shapes
from .shapes import swapaxes, take, take_along_axis
from . import reductions, sorting
from .products import matmul


def _float(x):
    """``x`` as an inexact array: integers and booleans become float32; float and complex64
    arrays are kept (every decomposition here takes both)."""
    x = asarray(x)
    if not issubdtype(x.dtype, np.inexact):
        x = astype(x, np.float32)
    return x


def _abs2(x):
    """|x|^2 elementwise (real for a complex x)."""
    if issubdtype(x.dtype, np.complexfloating):
        return ufuncs.real(x * ufuncs.conj(x))
    return x * x


def _is_complex(x) -> bool:
    return issubdtype(x.dtype, np.complexfloating)


def _H(x):
    """The conjugate transpose of the last two axes (the transpose for real ``x``)."""
    x = swapaxes(x, -1, -2)
    return ufuncs.conj(x) if _is_complex(x) else x


def _eye_like(n: int, dtype):
    return astype(arange(n)[:, None] == arange(n)[None, :], dtype)


# --------------------------------------------------------------------------- Jacobi

def _max_sweeps(m: int) -> int:
    """Cyclic Jacobi converges quadratically once the off-diagonal is small; from random
    starts float32 needs about log2(m) + 4 sweeps (6 at m = 64, 8-10 at 256).  The loop stops
    early after a sweep without a significant rotation, so this is only a bound."""
    return 8 + 2 * max(m - 1, 1).bit_length()


def _tournament(m: int) -> tuple[np.ndarray, np.ndarray]:
    """A round-robin schedule of ``m`` (even) indices: ``m - 1`` rounds, each pairing every
    index with one partner.  Returns ``(partner, is_first)``, both ``(m - 1, m)``."""
    partner = np.zeros((m - 1, m), np.int32)
    first = np.zeros((m - 1, m), bool)
    others = list(range(1, m))
    for r in range(m - 1):
        ring = [0] + others[r:] + others[:r]
        for i in range(m // 2):
            p, q = sorted((ring[i], ring[m - 1 - i]))
            partner[r, p], partner[r, q] = q, p
            first[r, p] = True
    return partner, first


def _jacobi(x, gram):
    """Cyclic Jacobi rotations over column pairs, in rounds of disjoint pairs (a round-robin
    tournament: every pair once per sweep of ``m - 1`` rounds).

    With ``gram=False`` ``x`` is symmetric and each round applies ``J^T x J`` (two-sided:
    eigh); with ``gram=True`` each round applies ``x J``, orthogonalizing the columns (one-sided,
    Hestenes: svd).  Each rotation zeroes the pair's entry of ``x`` (resp. of ``x^T x``).  A
    round's ``J`` pairs index ``i`` with ``partner(i)``, so ``x J`` is ``x * c + x[:, partner] *
    e`` -- two gathers and a fused elementwise kernel, O(rows * m) per round, no matmul.  A
    rotation is skipped when its pair is already decoupled to working precision
    (``|x_pq| <= tol * sqrt(|x_pp x_qq|)``, x_pq of ``x^T x`` one-sided), and the loop stops
    after a sweep without a rotation, or after ``_max_sweeps``.
    Returns the rotated ``x`` and the accumulated rotations ``V`` (``(..., m, m)``)."""
    *batch, rows, m = x.shape
    partner_t, first_t = _tournament(m)
    partner_t, first_t = asarray(partner_t), asarray(first_t)
    cols = arange(m, dtype=np.int32)
    eye_m = astype(cols[:, None] == cols[None, :], x.dtype)
    v0 = broadcast_to(eye_m, (*batch, m, m))
    eps = float(finfo(x.dtype).eps)
    tol = eps * (8.0 * float(np.sqrt(rows)) if gram else 1.0)
    rounds = m - 1
    limit = _max_sweeps(m) * rounds
    cplx = _is_complex(x)

    def cond(carry):
        _, _, k, _, done = carry
        return (k < limit) & ~reductions.all(done)

    def step(carry):
        a, v, k, active, done = carry
        r = k % rounds
        partner = lax.dynamic_index_in_dim(partner_t, r, keepdims=False)
        first = lax.dynamic_index_in_dim(first_t, r, keepdims=False)
        if gram:
            d = reductions.sum(_abs2(a), axis=-2)                       # column norms^2
            a_c = ufuncs.conj(a) if cplx else a
            off = reductions.sum(a_c * take(a, partner, axis=-1), axis=-2)
        else:
            d = shapes.diagonal(a, 0, -2, -1)
            d = ufuncs.real(d) if cplx else d
            off = take_along_axis(a, broadcast_to(partner[:, None], a.shape[:-1] + (1,)),
                                  -1)[..., 0]                          # a[i, partner(i)]
        size = ufuncs.abs(off)
        d_partner = take(d, partner, axis=-1)
        rotate = size > tol * sqrt(ufuncs.abs(d * d_partner))
        rotate = rotate & ~done[..., None]
        pivot = size if cplx else off        # the (made real) entry the rotation zeroes
        gap = _where_xy(first, d_partner - d, d - d_partner)           # the pair's a_qq - a_pp
        theta = gap / (2.0 * _where_xy(rotate, pivot, 1.0))
        t = _where_xy(theta >= 0, 1.0, -1.0) / (ufuncs.abs(theta) + sqrt(theta * theta + 1.0))
        t = _where_xy(rotate, t, 0.0)
        c = 1.0 / sqrt(t * t + 1.0)
        s = t * c
        if cplx:
            # J = diag(1, conj(phase)) R on the pair, phase = a_pq / |a_pq|: the phase
            # makes a_pq real, R is the real rotation of the 2x2 it leaves
            phase = off / astype(_where_xy(rotate, size, 1.0), off.dtype)
            phase = _where_xy(rotate, phase, 1.0)
            c = _where_xy(first, astype(c, off.dtype), c * phase)       # J[i, i]
            sgn = _where_xy(first, astype(s, off.dtype), -(s * phase))  # J[i, partner(i)]
        else:
            sgn = _where_xy(first, s, -s)                              # J[i, partner(i)]
        e = take(sgn, partner, axis=-1)                                 # J[partner(k), k]
        if gram:
            a = a * c[..., None, :] + take(a, partner, axis=-1) * e[..., None, :]
        elif cplx:
            a = _rotate_hermitian(a, partner, rotate, c, e, d - _where_xy(first, t, -t) * size)
        else:
            a = _rotate_symmetric(a, partner, rotate, c, e, t, first, off)
        v = v * c[..., None, :] + take(v, partner, axis=-1) * e[..., None, :]
        active = active | reductions.any(rotate, axis=-1)
        end = r == rounds - 1                                           # a sweep ends
        done = done | (end & ~active)
        active = active & ~end
        return a, v, k + 1, active, done

    flags = zeros(tuple(batch), bool)
    a, v, *_ = lax.while_loop(cond, step, (x, v0, asarray(0, np.int32), flags, flags))
    return a, v


def _rotate_symmetric(a, partner, rotate, c, e, t, first, off):
    """``J^T a J`` for symmetric ``a``, kept exactly symmetric: entry ``(i, j)`` is computed
    from ``(min, max)`` of the two, so both halves evaluate one expression on the same inputs
    (drivers may reassociate, but never differently for equal code and data); each rotated
    pair's diagonal gets ``a_pp - t a_pq`` / ``a_qq + t a_pq`` and its ``a_pq`` an exact zero."""
    m = a.shape[-1]
    idx = np.arange(m)
    lo, hi = (asarray(f(idx[:, None], idx[None, :]).astype(np.int32))
              for f in (np.minimum, np.maximum))
    p_lo, p_hi = take(partner, lo), take(partner, hi)
    c_lo, c_hi, e_lo, e_hi = take(c, lo, axis=-1), take(c, hi, axis=-1), take(e, lo, axis=-1), \
        take(e, hi, axis=-1)
    out = (c_lo * c_hi * a[..., lo, hi] + c_lo * e_hi * a[..., lo, p_hi]
           + e_lo * c_hi * a[..., p_lo, hi] + e_lo * e_hi * a[..., p_lo, p_hi])
    d = shapes.diagonal(a, 0, -2, -1) - _where_xy(first, t, -t) * off     # rotated diagonal
    out = _where_xy(lo == hi, d[..., :, None], out)
    pair = (hi == p_lo) & take(rotate, lo, axis=-1)
    return _where_xy(pair, 0.0, out)


def _rotate_hermitian(a, partner, rotate, c, e, diag):
    """``J^H a J`` for Hermitian ``a`` (complex Jacobi): the column rotation, then the row
    one; the result is made exactly Hermitian (the lower triangle is the conjugate of the
    upper), its diagonal real (``diag``: ``a_pp - t |a_pq|`` / ``a_qq + t |a_pq|``) and each
    rotated pair's entries exact zeros."""
    m = a.shape[-1]
    aj = a * c[..., None, :] + take(a, partner, axis=-1) * e[..., None, :]
    out = (ufuncs.conj(c)[..., :, None] * aj
           + ufuncs.conj(e)[..., :, None] * take(aj, partner, axis=-2))
    idx = arange(m, dtype=np.int32)
    i, j = idx[:, None], idx[None, :]
    out = _where_xy(i < j, out, ufuncs.conj(swapaxes(out, -1, -2)))
    out = _where_xy(i == j, astype(diag, a.dtype)[..., :, None], out)
    pair = (j == take(partner, i)) & take(rotate, i, axis=-1)
    return _where_xy(pair, 0.0, out)


def _pad_even(a, gram):
    """Pads the last axis (and, two-sided, the one before) to an even length with zeros: the
    padded index stays decoupled (its rotations are identities)."""
    n = a.shape[-1]
    if n % 2 == 0:
        return a
    cfg = [(0, 0, 0)] * (a.ndim - 2) + [(0, 0 if gram else 1, 0), (0, 1, 0)]
    return lax.pad(a, np.zeros((), a.dtype), cfg)


def _unit_columns(v):
    """``v`` with each column scaled to unit length (the rotations' rounding drifts them)."""
    return v / astype(sqrt(reductions.sum(_abs2(v), axis=-2, keepdims=True)), v.dtype)


def eigh_jacobi(a):
    """Jacobi eigenvectors ``V``, then each eigenvalue as the Rayleigh quotient
    ``v^T A v`` of its unit eigenvector with the original ``A``: the quotient is stationary at
    an eigenvector, so its error is quadratic in the vectors' and only the matmul's rounding
    is left -- the rotated diagonal itself carries every rotation's rounding (about
    ``sqrt(sweeps * n) * eps``)."""
    n = a.shape[-1]
    if n == 0:
        return zeros(a.shape[:-1], dtypes.real_dtype(a.dtype)), a
    _, v = _jacobi(_pad_even(a, False), gram=False)
    v = _unit_columns(v[..., :n, :n])
    w = reductions.sum((ufuncs.conj(v) if _is_complex(v) else v) * matmul(a, v), axis=-2)
    w = ufuncs.real(w) if _is_complex(w) else w
    order = sorting.argsort(w, axis=-1)
    return take_along_axis(w, order, -1), take_along_axis(v, order[..., None, :], -1)


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


class SVDResult(NamedTuple):
    U: object
    S: object
    Vh: object


def _svd_tall(a):
    """``(u, s, vt)`` of ``a`` (..., m, n) with m >= n: one-sided Jacobi on the columns gives
    ``V``; the singular values are the norms of ``A v`` for the unit columns ``v`` of ``V`` (as
    for eigh, stationary at a singular vector, so free of the rotations' accumulated rounding),
    and U comes from the QR of ``A V`` (orthogonal columns already), which also completes U
    where a singular value is zero."""
    n = a.shape[-1]
    _, v = _jacobi(_pad_even(a, True), gram=True)
    v = _unit_columns(v[..., :n, :n])
    b = matmul(a, v)
    s = sqrt(reductions.sum(_abs2(b), axis=-2))
    # columns by decreasing norm, so that zero columns (rank deficiency) come last and the QR
    # of these orthogonal columns is diagonal
    order = sorting.argsort(-s, axis=-1)
    b = take_along_axis(b, order[..., None, :], -1)
    v = take_along_axis(v, order[..., None, :], -1)
    s = take_along_axis(s, order, -1)
    q, r = householder_qr(b, "complete")
    diag = shapes.diagonal(r, 0, -2, -1)
    sign = _where_xy((ufuncs.real(diag) if _is_complex(diag) else diag) < 0, -1.0, 1.0)
    return q[..., :, :n] * astype(sign, q.dtype)[..., None, :], s, v, q[..., :, n:]


def svd_jacobi(a, full_matrices: bool = True, compute_uv: bool = True):
    """Singular value decomposition by one-sided Jacobi rotations on the device (singular
    values descending)."""
    a = _float(asarray(a))
    if a.ndim < 2:
        raise TypeError(f"Input 0 to svd must have rank at least 2, but got shape={a.shape}")
    m, n = a.shape[-2:]
    wide = m < n
    if wide:
        a = _H(a)
    if min(m, n) == 0:
        s = zeros(a.shape[:-2] + (0,), dtypes.real_dtype(a.dtype))
        if not compute_uv:
            return s
        eye_m, eye_n = (astype(arange(k)[:, None] == arange(k)[None, :], a.dtype)
                        for k in (m, n))
        return SVDResult(broadcast_to(eye_m, a.shape[:-2] + (m, m)), s,
                         broadcast_to(eye_n, a.shape[:-2] + (n, n)))
    u, s, v, rest = _svd_tall(a)
    if not compute_uv:
        return s
    if full_matrices:
        u = creation.asarray(shapes.concatenate([u, rest], axis=-1))
    if wide:
        u, v = v, u
    return SVDResult(u, s, _H(v))


# --------------------------------------------------------------------------- Householder

class QRResult(NamedTuple):
    Q: object
    R: object


def householder_qr(a, mode):
    """One Householder reflection per column, in a ``fori_loop`` of array operations; the
    column is read with a dynamic index (a gather), so a step is O(m * (m + n))."""
    *batch, m, n = a.shape
    k = builtins.min(m, n)
    rows = arange(m)
    cols = arange(n)
    q0 = broadcast_to(_eye_like(m, a.dtype), (*batch, m, m))

    def step(j, carry):
        r, q = carry
        col = lax.dynamic_index_in_dim(r, j, axis=r.ndim - 1, keepdims=False)  # r[..., :, j]
        x_j = lax.dynamic_index_in_dim(col, j, axis=col.ndim - 1, keepdims=False)  # its sign
        if _is_complex(a):                                                # of zero too
            return _complex_householder_step(r, q, col, x_j, rows == j, rows > j)
        below = _where_xy(rows > j, col, 0.0)
        sub2 = reductions.sum(below * below, axis=-1)
        norm = sqrt(x_j * x_j + sub2)
        alpha = _where_xy(ufuncs.signbit(x_j), norm, -norm)    # -sign(x_j) norm; -0 is negative
        v = below + _where_xy(rows == j, (x_j - alpha)[..., None], 0.0)
        v2 = reductions.sum(v * v, axis=-1)
        beta = _where_xy(sub2 > 0, 2.0 / _where_xy(v2 > 0, v2, 1.0), 0.0)[..., None, None]
        r = r - beta * v[..., :, None] * matmul(v[..., None, :], r)
        q = q - beta * matmul(q, v[..., :, None]) * v[..., None, :]
        return r, q
    r, q = lax.fori_loop(0, k, step, (a, q0))
    r = _where_xy(rows[:, None] <= cols[None, :], r, 0.0)
    if _is_complex(r):            # R's diagonal is real (beta), as LAPACK stores it
        r = _where_xy(rows[:, None] == cols[None, :], astype(ufuncs.real(r), r.dtype), r)
    if mode == "complete":
        return QRResult(q, r)
    r = r[..., :k, :]
    return r if mode == "r" else QRResult(q[..., :, :k], r)


def _complex_householder_step(r, q, col, x_j, at_j, below_j):
    """One complex reflection as LAPACK's zlarfg: ``H = I - tau w w^H`` with ``H^H x = beta
    e_j`` for the column ``x`` and a *real* ``beta = -sign(Re x_j) |x|``, so R's diagonal is
    real as JAX's; with ``u = x - beta e_j`` (``w`` scaled so ``w_j = 1``) ``tau w w^H`` is
    ``kappa u u^H``, ``kappa = 1 / (beta (beta - conj(x_j)))``.  No reflection (``H = I``)
    where the column is already ``(real, 0, ..., 0)``."""
    below = _where_xy(below_j, col, 0.0)
    sub2 = reductions.sum(_abs2(below), axis=-1)
    re, im = ufuncs.real(x_j), ufuncs.imag(x_j)
    norm = sqrt(re * re + im * im + sub2)
    beta = _where_xy(ufuncs.signbit(re), norm, -norm)          # Fortran's SIGN: -0 negative
    reflect = (sub2 > 0) | (im != 0)
    u = below + _where_xy(at_j, (x_j - astype(beta, col.dtype))[..., None], 0.0)
    denom = astype(beta, col.dtype) * (astype(beta, col.dtype) - ufuncs.conj(x_j))
    kappa = _where_xy(reflect, 1.0 / _where_xy(reflect, denom, 1.0), 0.0)[..., None, None]
    uh = ufuncs.conj(u)
    r = r - ufuncs.conj(kappa) * u[..., :, None] * matmul(uh[..., None, :], r)
    q = q - kappa * matmul(q, u[..., :, None]) * uh[..., None, :]
    return r, q
