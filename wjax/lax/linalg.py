"""``jax.lax.linalg``: the decomposition primitives of ``wjax/prims/decomp.py`` with JAX's
signatures (``cholesky``, ``lu``, ``triangular_solve``, ``lu_pivots_to_permutation``).  The
Jacobi and Householder decompositions are compositions of array operations and live in
``wjax.numpy.linalg`` (``eigh``, ``svd``, ``qr``)."""
from __future__ import annotations

import numpy as np

from ..core import dtypes, ops
from ..prims import decomp as _D

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


def lu(x):
    """``(lu, pivots, permutation)``: LU with partial pivoting of ``[..., m, n]`` matrices."""
    return tuple(_D.lu_p.bind(_float_matrix("lu", x)))


def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """Solves ``op(a) x = b`` (``left_side``) or ``x op(a) = b`` for triangular ``a``."""
    return _D.triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                      transpose_a=bool(transpose_a),
                                      conjugate_a=bool(conjugate_a),
                                      unit_diagonal=bool(unit_diagonal))


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation that LAPACK-style row swaps ``pivots`` (``[..., k]``) make of
    ``range(permutation_size)``."""
    return _D.lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))
