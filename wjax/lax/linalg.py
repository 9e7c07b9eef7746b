"""``jax.lax.linalg``: the decomposition primitives of ``wjax/_src/prims/decomp.py`` with JAX's
signatures (``cholesky``, ``lu``, ``triangular_solve``, ``lu_pivots_to_permutation``).  The
Jacobi and Householder decompositions are compositions of array operations and live in
``wjax.numpy.linalg`` (``eigh``, ``svd``, ``qr``).

complex64 ``lu`` and ``triangular_solve`` are compositions of array operations here (the
kernel primitives are real): a ``fori_loop`` over the columns (LU with partial pivoting,
LAPACK's pivot: the first largest ``|re| + |im|``) or the unknowns (substitution), each step a
few fused masked updates on the device.  Their derivatives, ``vmap`` and ``jit`` follow from
the operations (the loop is a ``scan``, so it reverse-differentiates)."""
from __future__ import annotations

import numpy as np

from .._src.core import dtypes, ops
from .._src.core.ir import ShapedArray
from .._src.prims import decomp as _D
from .control import fori_loop

__all__ = ["cholesky", "lu", "triangular_solve", "lu_pivots_to_permutation"]


def _float_matrix(name, x):
    if not dtypes.is_float(ops._aval(x).dtype):
        raise TypeError(f"{name} requires a floating-point operand, got "
                        f"{np.dtype(ops._aval(x).dtype).name}")
    return x


def cholesky(x, *, symmetrize_input: bool = True):
    """The lower Cholesky factor of each ``[..., n, n]`` matrix (NaN where not positive
    definite, as JAX)."""
    x = _float_matrix("cholesky", x)
    if symmetrize_input:
        x = ops.mul(ops.add(x, ops.swapaxes(x, -1, -2)), np.asarray(0.5, ops._aval(x).dtype))
    return ops.tril(_D.cholesky_p.bind(x))


def _is_complex(x) -> bool:
    return np.dtype(ops._aval(x).dtype) == np.complex64


def lu(x):
    """``(lu, pivots, permutation)``: LU with partial pivoting of ``[..., m, n]`` matrices
    (complex64: ``_complex_lu``)."""
    if _is_complex(x):
        return _complex_lu(x)
    return tuple(_D.lu_p.bind(_float_matrix("lu", x)))


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solves ``op(a) x = b`` (``left_side``) or ``x op(a) = b`` for triangular ``a``;
    ``op`` transposes with ``transpose_a`` and conjugates with ``conjugate_a`` (complex64:
    ``_complex_triangular_solve``)."""
    kw = dict(left_side=bool(left_side), lower=bool(lower), transpose_a=bool(transpose_a),
              conjugate_a=bool(conjugate_a), unit_diagonal=bool(unit_diagonal))
    if _is_complex(a) or _is_complex(b):
        return _complex_triangular_solve(a, b, **kw)
    return _D.triangular_solve_p.bind(a, b, **kw)


# --------------------------------------------------------------------------- complex64

def _complex_lu(a):
    """LU with partial pivoting of complex ``[..., m, n]`` matrices: one ``fori_loop`` step
    per column ``j`` picks the pivot row ``p >= j`` of the first largest ``|re| + |im|``
    (LAPACK's ``icamax``, which JAX's CPU ``getrf`` uses), swaps rows ``j`` and ``p`` (and the
    permutation), divides the column below the diagonal by the pivot (left as it is where the
    pivot is zero, as the real kernel does) and subtracts the rank-1 product from the
    trailing block -- all as masked selects over the whole matrix, so a step is a few fused
    kernels and vmap/autodiff apply."""
    av = ops._aval(a)
    if av.ndim < 2:
        raise TypeError(f"Input 0 to lu must have rank at least 2, but got shape={av.shape}")
    shape, nd = tuple(av.shape), av.ndim
    batch, (m, n) = shape[:-2], shape[-2:]
    k = min(m, n)
    one = (1,) * (nd - 2)
    rows = ops.broadcasted_iota(np.int32, one + (m, 1), nd - 2)
    cols = ops.broadcasted_iota(np.int32, one + (1, n), nd - 1)
    prow = ops.broadcasted_iota(np.int32, one + (m,), nd - 2)
    kidx = ops.broadcasted_iota(np.int32, one + (k,), nd - 2)
    perm0 = ops.broadcast_in_dim(ops.iota(np.int32, m), batch + (m,), (nd - 2,))
    piv0 = ops.broadcast_in_dim(np.zeros((), np.int32), batch + (k,), ())
    if k == 0:
        return a, piv0, perm0
    c0 = np.zeros((), np.complex64)
    c1 = np.ones((), np.complex64)

    def step(j, carry):
        x, piv, perm = carry
        col = ops.dynamic_index_in_dim(x, j, axis=nd - 1)                     # (..., m, 1)
        mag = ops.add(ops.abs(ops.real(col)), ops.abs(ops.imag(col)))
        mag = ops.where(ops.ge(rows, j), mag, np.float32(-1.0))
        p = ops.argmax(mag, nd - 2, np.int32)                                  # (..., 1)
        p2 = ops.expand_dims(p, (nd - 2,))                                     # (..., 1, 1)
        row_j = ops.dynamic_index_in_dim(x, j, axis=nd - 2)                   # (..., 1, n)
        row_p = ops.take_along_axis(
            x, ops.broadcast_in_dim(p2, batch + (1, n), tuple(range(nd))), nd - 2)
        x = ops.where(ops.eq(rows, j), row_p, ops.where(ops.eq(rows, p2), row_j, x))
        perm_p = ops.take_along_axis(perm, p, nd - 2)
        perm_j = ops.dynamic_index_in_dim(perm, j, axis=nd - 2)
        perm = ops.where(ops.eq(prow, j), perm_p, ops.where(ops.eq(prow, p), perm_j, perm))
        piv = ops.where(ops.eq(kidx, j), p, piv)
        d = ops.dynamic_index_in_dim(row_p, j, axis=nd - 1)                   # (..., 1, 1)
        col = ops.dynamic_index_in_dim(x, j, axis=nd - 1)
        nz = ops.ne(d, c0)
        below = ops.gt(rows, j)
        low = ops.where(below, ops.where(nz, ops.div(col, ops.where(nz, d, c1)), col), c0)
        upd = ops.sub(x, ops.mul(low, ops.where(ops.gt(cols, j), row_p, c0)))
        x = ops.where(ops.bitwise_and(below, ops.gt(cols, j)), upd,
                      ops.where(ops.bitwise_and(below, ops.eq(cols, j)), low, x))
        return x, piv, perm

    x, piv, perm = fori_loop(0, k, step, (a, piv0, perm0))
    return x, piv, perm


def _complex_triangular_solve(a, b, *, left_side, lower, transpose_a, conjugate_a,
                              unit_diagonal):
    """``triangular_solve`` of complex64 operands: ``op(a)`` made explicit (the triangle
    read, unit diagonal, conjugate, transpose), a right-side system turned into a left-side
    one (``x op(a) = b`` is ``op(a)^T x^T = b^T``), then substitution over the unknowns."""
    av, bv = ops._aval(a), ops._aval(b)
    f32 = [ShapedArray(v.shape, np.float32) for v in (av, bv)]
    if np.dtype(av.dtype) != np.dtype(bv.dtype):
        raise TypeError(f"triangular_solve requires operands of the same dtype, got "
                        f"{np.dtype(av.dtype).name} and {np.dtype(bv.dtype).name}")
    _D.triangular_solve_p.abstract_eval(*f32, left_side=left_side, lower=lower,
                                        transpose_a=transpose_a)      # the shape checks
    nd, m = av.ndim, av.shape[-1]
    t = ops.tril(a) if lower else ops.triu(a)
    if unit_diagonal:
        t = ops.where(ops.eq(ops.broadcasted_iota(np.int32, (m, m), 0),
                             ops.broadcasted_iota(np.int32, (m, m), 1)),
                      np.ones((), np.complex64), t)
    if conjugate_a:
        t = ops.conj(t)
    low = lower
    if transpose_a:
        t, low = ops.swapaxes(t, -1, -2), not low
    if not left_side:
        t, b, low = ops.swapaxes(t, -1, -2), ops.swapaxes(b, -1, -2), not low
    x = _substitute(t, b, low, nd, m)
    return x if left_side else ops.swapaxes(x, -1, -2)


def _substitute(t, c, lower, nd, m):
    """``x`` with ``t x = c`` for triangular ``t`` (``[..., m, m]``, zeros outside its
    triangle): step ``s`` solves unknown ``i`` (``s``, or ``m - 1 - s`` for upper) from the
    ones before it -- ``x`` holds zeros at the unknowns not yet solved, so the row's product
    with ``x`` is the sum over the solved ones."""
    rows = ops.broadcasted_iota(np.int32, (1,) * (nd - 2) + (m, 1), nd - 2)

    def step(s, x):
        i = s if lower else ops.sub(np.int32(m - 1), s)
        trow = ops.dynamic_index_in_dim(t, i, axis=nd - 2)                    # (..., 1, m)
        acc = ops.matmul(trow, x)                                              # (..., 1, r)
        ci = ops.dynamic_index_in_dim(c, i, axis=nd - 2)
        tii = ops.dynamic_index_in_dim(trow, i, axis=nd - 1)                  # (..., 1, 1)
        return ops.where(ops.eq(rows, i), ops.div(ops.sub(ci, acc), tii), x)

    return fori_loop(0, m, step, ops.zeros_like(c))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation that LAPACK-style row swaps ``pivots`` (``[..., k]``) make of
    ``range(permutation_size)``."""
    return _D.lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))
