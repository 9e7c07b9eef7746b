"""wjax.numpy.linalg: norms, and small dense solvers on the device.

``inv``, ``solve``, ``det``, ``slogdet`` go through the ``lu`` and
``triangular_solve`` primitives, ``cholesky`` through ``cholesky``
(wjax/prims/decomp.py), all computed by WGSL kernels meant for small
matrices.  Leading dimensions batch, as in JAX.  complex64: ``lu_factor``, ``det``,
``slogdet`` and triangular solves use ``wjax.lax.linalg``'s complex compositions; ``solve``
and ``inv`` solve the real embedding on the real LU kernel (see ``solve``).
"""
from __future__ import annotations

import builtins
import operator
from typing import NamedTuple

import numpy as np

from .. import lax
from ..core import dtypes
from ..lax import linalg as _lax_linalg
from ..prims import decomp as D
from ._util import broadcast_shapes, result_type
from . import creation
from .creation import arange, asarray, astype, broadcast_to, ones, zeros
from .scalars import finfo, issubdtype
from . import ufuncs
from .ufuncs import _where_xy, log, power, sqrt
from . import shapes
from .shapes import (
    _axis,
    expand_dims,
    moveaxis,
    ndim,
    ravel,
    reshape,
    squeeze,
    swapaxes,
    take,
    take_along_axis,
)
from . import reductions, sorting
from .reductions import prod
from .products import cross, dot, matmul, matrix_transpose, outer, tensordot, vecdot


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


def _square(name, a):
    a = _float(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"{name}: argument must be a square matrix or a stack of them, got shape {a.shape}"
        )
    return a


# --------------------------------------------------------------------------- norms

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


# --------------------------------------------------------------------------- decompositions

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


def det(a):
    a = _square("det", a)
    n = a.shape[-1]
    if n == 0:
        return ones(a.shape[:-2], a.dtype)
    lu, piv, _ = lu_factor(a)
    d = shapes.diagonal(lu, 0, -2, -1)
    return astype(prod(d, axis=-1) * astype(_parity(piv), a.dtype), a.dtype)


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def slogdet(a, *, method=None):
    """``(sign, log|det|)`` from the LU factors; complex64: ``sign`` is the complex unit
    ``parity * prod(d / |d|)`` over the diagonal of U and ``logabsdet`` float32, as JAX."""
    a = _square("slogdet", a)
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


def _eigh_values_vectors(a):
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


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, by cyclic Jacobi
    rotations on the device (``wjax.api.linalg`` adds JAX's derivative rule)."""
    a = _square("eigh", a)
    return EighResult(*_eigh_values_vectors(_hermitian_input(a, UPLO, symmetrize_input)))


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


class EighResult(NamedTuple):
    eigenvalues: object
    eigenvectors: object


def eigvalsh(a, UPLO=None, *, symmetrize_input: bool = True):
    return eigh(a, UPLO, symmetrize_input).eigenvalues


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
    q, r = _householder_qr(b, "complete")
    diag = shapes.diagonal(r, 0, -2, -1)
    sign = _where_xy((ufuncs.real(diag) if _is_complex(diag) else diag) < 0, -1.0, 1.0)
    return q[..., :, :n] * astype(sign, q.dtype)[..., None, :], s, v, q[..., :, n:]


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """Singular value decomposition by one-sided Jacobi rotations on the device (singular
    values descending; ``wjax.api.linalg`` adds JAX's derivative rule)."""
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


def _cpu_only(name):
    def f(*a, **k):
        raise NotImplementedError(f"wjax: jnp.linalg.{name} (non-symmetric eigenproblems) is "
                                  f"not implemented")
    f.__name__ = name
    return f


eig = _cpu_only("eig")
eigvals = _cpu_only("eigvals")


def _qr_args(a, mode):
    a = _float(asarray(a))
    if a.ndim < 2:
        raise TypeError(f"Input 0 to qr must have rank at least 2, but got shape={a.shape}")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"Unsupported QR decomposition mode '{mode}'" if mode != "raw" else
                         "wjax: qr mode 'raw' (Householder vectors) is not implemented")
    return a


def qr(a, mode: str = "reduced"):
    """QR by Householder reflections (LAPACK's sign conventions: a column already zero below
    the diagonal is left as it is); ``mode`` is ``reduced``, ``complete`` or ``r``
    (``wjax.api.linalg`` adds JAX's derivative rule)."""
    return _householder_qr(_qr_args(a, mode), mode)


def _householder_qr(a, mode):
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


class QRResult(NamedTuple):
    Q: object
    R: object


def _eye_like(n: int, dtype):
    return astype(arange(n)[:, None] == arange(n)[None, :], dtype)

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
