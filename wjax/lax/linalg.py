"""``jax.lax.linalg``: the decomposition primitives of ``wjax/_src/prims/decomp.py`` with JAX's
signatures (``cholesky``, ``lu``, ``triangular_solve``, ``lu_pivots_to_permutation``), and
the Householder-reflector forms of QR (``geqrf``, ``householder_product``, ``ormqr``, in
LAPACK's storage) as compositions of array operations.  The
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
from .control import fori_loop, scan

__all__ = ["cholesky", "lu", "triangular_solve", "lu_pivots_to_permutation",
           "householder_product", "ormqr", "tridiagonal_solve", "eigh", "qr", "svd"]

# hook: ``wjax.numpy.linalg`` (a layer above, where the Jacobi and Householder algorithms
# live with JAX's derivative rules) fills it with itself; ``eigh``/``qr``/``svd`` call it
_numpy_linalg = None


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


# --------------------------------------------------------------------------- Householder

def _inexact_matrix(name, x):
    av = ops._aval(x)
    if not (dtypes.is_float(av.dtype) or _is_complex(x)):
        raise TypeError(f"{name} requires a floating-point or complex operand, got "
                        f"{np.dtype(av.dtype).name}")
    if av.ndim < 2:
        raise TypeError(f"Input 0 to {name} must have rank at least 2, but got "
                        f"shape={tuple(av.shape)}")
    return av


def _cconj(x):
    return ops.conj(x) if _is_complex(x) else x


def geqrf(a):
    """``(h, taus)``: the QR factorization of ``[..., m, n]`` matrices in LAPACK's ``geqrf``
    storage -- ``R`` on and above the diagonal of ``h``, below it the reflectors ``v_j`` (unit
    entry ``j`` implied) of ``Q = H_0 H_1 ... H_{k-1}``, ``H_j = I - tau_j v_j v_j^H``,
    ``k = min(m, n)``.  Each reflector as LAPACK's ``larfg``: ``H_j^H x = beta e_j`` for the
    column ``x`` with a real ``beta = -sign(Re x_j) |x|``, and no reflection (``tau = 0``)
    where ``x`` is already ``(real, 0, ..., 0)``."""
    av = _inexact_matrix("geqrf", a)
    shape, nd, dt = tuple(av.shape), av.ndim, av.dtype
    m, n = shape[-2:]
    k = min(m, n)
    one = (1,) * (nd - 2)
    rows = ops.broadcasted_iota(np.int32, one + (m, 1), nd - 2)
    cols = ops.broadcasted_iota(np.int32, one + (1, n), nd - 1)
    kidx = ops.broadcasted_iota(np.int32, one + (k,), nd - 2)
    taus0 = ops.broadcast_in_dim(np.zeros((), dt), shape[:-2] + (k,), ())
    if k == 0:
        return a, taus0
    cplx = _is_complex(a)
    zero, one_ = np.zeros((), dt), np.ones((), dt)
    f0 = np.zeros((), np.float32)

    def step(j, carry):
        h, taus = carry
        col = ops.dynamic_index_in_dim(h, j, axis=nd - 1)                     # (..., m, 1)
        alpha = ops.dynamic_index_in_dim(col, j, axis=nd - 2)                 # (..., 1, 1)
        below = ops.where(ops.gt(rows, j), col, zero)
        if cplx:
            re, im = ops.real(alpha), ops.imag(alpha)
            sub2 = ops.reduce_sum(ops.add(ops.mul(ops.real(below), ops.real(below)),
                                          ops.mul(ops.imag(below), ops.imag(below))), (nd - 2,))
            sub2 = ops.expand_dims(sub2, (nd - 2,))
            reflect = ops.bitwise_or(ops.gt(sub2, f0), ops.ne(im, f0))
            norm = ops.sqrt(ops.add(ops.add(ops.mul(re, re), ops.mul(im, im)), sub2))
        else:
            re = alpha
            sub2 = ops.expand_dims(ops.reduce_sum(ops.mul(below, below), (nd - 2,)), (nd - 2,))
            reflect = ops.gt(sub2, f0)
            norm = ops.sqrt(ops.add(ops.mul(alpha, alpha), sub2))
        # -sign(Re alpha) |x|, Fortran's SIGN: a negative zero counts as negative
        beta = ops.select(ops.lt(ops.bitcast_convert_type(re, np.int32), np.int32(0)),
                          norm, ops.neg(norm))
        safe_beta = ops.where(reflect, beta, np.ones((), np.float32))
        beta_c = ops.convert_element_type(beta, dt) if cplx else beta
        tau = ops.div(ops.sub(beta_c, alpha), ops.convert_element_type(safe_beta, dt)
                      if cplx else safe_beta)
        tau = ops.where(reflect, tau, zero)
        scale = ops.sub(alpha, beta_c)
        v_below = ops.div(below, ops.where(reflect, scale, one_))
        v_below = ops.where(reflect, v_below, below)
        v = ops.where(ops.eq(rows, j), one_, v_below)                         # (..., m, 1)
        # H_j^H applied to the trailing columns: h - conj(tau) v (v^H h)
        vh_h = ops.matmul(ops.swapaxes(_cconj(v), -1, -2), h)                 # (..., 1, n)
        upd = ops.sub(h, ops.mul(ops.mul(_cconj(tau), v), vh_h))
        h = ops.where(ops.gt(cols, j), upd, h)
        newcol = ops.where(ops.lt(rows, j), col,
                           ops.where(ops.eq(rows, j), ops.where(reflect, beta_c, alpha), v_below))
        h = ops.where(ops.eq(cols, j), newcol, h)
        taus = ops.where(ops.eq(kidx, j), ops.squeeze(tau, (nd - 2,)), taus)
        return h, taus

    return tuple(fori_loop(0, k, step, (a, taus0)))


def _reflector(a, taus, i, rows, nd):
    """Reflector ``i`` of ``a`` (``[..., m, 1]``: 1 at ``i``, a's column below) and its
    ``tau`` (``[..., 1, 1]``)."""
    col = ops.dynamic_index_in_dim(a, i, axis=nd - 1)
    dt = ops._aval(a).dtype
    v = ops.where(ops.eq(rows, i), np.ones((), dt),
                  ops.where(ops.gt(rows, i), col, np.zeros((), dt)))
    tau = ops.expand_dims(ops.dynamic_index_in_dim(taus, i, axis=nd - 2), (nd - 2,))
    return v, tau


def _reflect_all(a, taus, c, left, conj_tau, forward):
    """``c`` multiplied by the reflectors ``H_i = I - t_i v_i v_i^H`` of ``a`` one at a time
    (``t_i = conj(tau_i)`` with ``conj_tau``), ``i`` ascending (``forward``) or descending;
    from the left (``H_i c``) or the right (``c H_i``)."""
    av, tv = ops._aval(a), ops._aval(taus)
    nd, m, k = av.ndim, av.shape[-2], tv.shape[-1]
    rows = ops.broadcasted_iota(np.int32, (1,) * (nd - 2) + (m, 1), nd - 2)

    def step(s, c):
        i = s if forward else ops.sub(np.int32(k - 1), s)
        v, tau = _reflector(a, taus, i, rows, nd)
        t = _cconj(tau) if conj_tau else tau
        vh = ops.swapaxes(_cconj(v), -1, -2)                                    # (..., 1, m)
        if left:
            return ops.sub(c, ops.mul(ops.mul(t, v), ops.matmul(vh, c)))
        return ops.sub(c, ops.mul(t, ops.matmul(ops.matmul(c, v), vh)))

    return fori_loop(0, k, step, c) if k else c


def _reflectors_args(name, a, taus):
    av = _inexact_matrix(name, a)
    tv = ops._aval(taus)
    m, n = av.shape[-2:]
    if (tv.ndim != av.ndim - 1 or tuple(tv.shape[:-1]) != tuple(av.shape[:-2])
            or tv.shape[-1] > min(m, n)):
        raise ValueError(f"{name}: taus of shape {tuple(tv.shape)} do not match reflectors of "
                         f"shape {tuple(av.shape)} (expected [..., k] with k <= min(m, n))")
    if np.dtype(tv.dtype) != np.dtype(av.dtype):
        raise TypeError(f"{name} requires a and taus of the same dtype, got "
                        f"{np.dtype(av.dtype).name} and {np.dtype(tv.dtype).name}")
    return av


def householder_product(a, taus):
    """The first ``n`` columns of ``Q = H_0 ... H_{k-1}`` for the reflectors stored below the
    diagonal of ``a`` (``[..., m, n]``, m >= n) and their factors ``taus`` (``[..., k]``)."""
    av = _reflectors_args("householder_product", a, taus)
    m, n = av.shape[-2:]
    if m < n:
        raise ValueError(f"householder_product requires m >= n, got shape {tuple(av.shape)}")
    nd = av.ndim
    eye = ops.convert_element_type(ops.eq(ops.broadcasted_iota(np.int32, (m, n), 0),
                                          ops.broadcasted_iota(np.int32, (m, n), 1)), av.dtype)
    eye = ops.broadcast_in_dim(eye, tuple(av.shape), (nd - 2, nd - 1))
    return _reflect_all(a, taus, eye, left=True, conj_tau=False, forward=False)


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
    """``Q c``, ``Q^H c`` (``transpose``), ``c Q`` or ``c Q^H`` (``left=False``) for the
    ``m x m`` ``Q = H_0 ... H_{k-1}`` of the reflectors below the diagonal of ``a``
    (``[..., m, n]``) and their factors ``taus`` (``[..., k]``), without forming ``Q``."""
    av = _reflectors_args("ormqr", a, taus)
    cv = ops._aval(c)
    m = av.shape[-2]
    if cv.ndim != av.ndim or tuple(cv.shape[:-2]) != tuple(av.shape[:-2]):
        raise ValueError(f"ormqr: c of shape {tuple(cv.shape)} does not match a of shape "
                         f"{tuple(av.shape)}")
    if cv.shape[-2 if left else -1] != m:
        raise ValueError(f"ormqr: c of shape {tuple(cv.shape)} cannot be multiplied "
                         f"{'from the left' if left else 'from the right'} by Q of shape "
                         f"({m}, {m})")
    if np.dtype(cv.dtype) != np.dtype(av.dtype):
        raise TypeError(f"ormqr requires a and c of the same dtype, got "
                        f"{np.dtype(av.dtype).name} and {np.dtype(cv.dtype).name}")
    # Q c = H_0 (H_1 (... H_{k-1} c)); Q^H c = H_{k-1}^H (... H_0^H c); c Q = ((c H_0) H_1)...;
    # c Q^H = ((c H_{k-1}^H) ...) H_0^H
    forward = transpose if left else not transpose
    return _reflect_all(a, taus, c, left=bool(left), conj_tau=bool(transpose), forward=forward)


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
    """``X`` with ``A X = b`` for the tridiagonal ``A`` of each batch entry: ``dl[i] =
    A[i, i-1]`` (``dl[0]`` unused), ``d[i] = A[i, i]``, ``du[i] = A[i, i+1]`` (``du[m-1]``
    unused), all ``[..., m]``; ``b`` is ``[..., m, n]``.  The Thomas algorithm (elimination
    without pivoting, one forward and one backward ``scan`` over the rows): stable for the
    diagonally dominant systems splines and implicit schemes make, where LAPACK's ``gtsv``
    (JAX on CPU) pivots.  Differentiable through the scans."""
    if perturb_singular:
        raise NotImplementedError("wjax: tridiagonal_solve(perturb_singular=True) is not "
                                  "implemented (JAX has it on CPU and GPU only)")
    avals = [ops._aval(x) for x in (dl, d, du, b)]
    if not (avals[0].shape == avals[1].shape == avals[2].shape):
        raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                        "shape.")
    if avals[0].shape != avals[3].shape[:-1]:
        raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                        "equal the dimensions of the diagonal arguments.")
    for a in avals:
        if not dtypes.is_float(a.dtype) or a.dtype != avals[3].dtype:
            raise TypeError(f"tridiagonal_solve requires floating-point operands of one dtype, "
                            f"got {', '.join(np.dtype(x.dtype).name for x in avals)}")
    nd = avals[0].ndim

    def rows(x, extra=0):                              # the row axis first
        return ops.transpose(x, (nd - 1,) + tuple(range(nd - 1)) + tuple(
            range(nd, nd + extra)))
    dl, d, du, b = rows(dl), rows(d), rows(du), rows(b, 1)

    def forward(carry, row):                           # eliminate the lower diagonal
        c_prev, y_prev = carry
        l, m, u, r = row
        denom = ops.sub(m, ops.mul(l, c_prev))
        c = ops.div(u, denom)
        y = ops.div(ops.sub(r, ops.mul(ops.expand_dims(l, (-1,)), y_prev)),
                    ops.expand_dims(denom, (-1,)))
        return (c, y), (c, y)

    zero_c = ops.zeros_like(ops.index_in_dim(d, 0, keepdims=False))
    zero_y = ops.zeros_like(ops.index_in_dim(b, 0, keepdims=False))
    _, (cs, ys) = scan(forward, (zero_c, zero_y), (dl, d, du, b))

    def backward(x_next, row):                         # substitute from the last row up
        c, y = row
        x = ops.sub(y, ops.mul(ops.expand_dims(c, (-1,)), x_next))
        return x, x

    _, xs = scan(backward, zero_y, (cs, ys), reverse=True)
    return ops.transpose(xs, tuple(range(1, nd)) + (0, nd))


def _subset(name, subset_by_index, k):
    if subset_by_index is None:
        return slice(None)
    lo, hi = (int(i) for i in subset_by_index)
    if not 0 <= lo <= hi <= k:
        raise ValueError(f"{name}: subset_by_index {tuple(subset_by_index)} out of range for "
                         f"{k} values")
    return slice(lo, hi)


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None):
    """``(v, w)``: the eigenvectors (columns) and ascending eigenvalues of each Hermitian
    ``[..., n, n]`` matrix, from its lower (or upper) triangle or, with
    ``symmetrize_input``, from ``(x + x^H) / 2`` -- JAX's order, vectors first."""
    w, v = _numpy_linalg.eigh(x, UPLO="L" if lower else "U",
                              symmetrize_input=symmetrize_input)
    keep = _subset("eigh", subset_by_index, ops._aval(w).shape[-1])
    return v[..., keep], w[..., keep]


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """``(q, r)`` of each ``[..., m, n]`` matrix (``full_matrices``: ``q`` is m x m)."""
    if pivoting:
        raise NotImplementedError("wjax: lax.linalg.qr(pivoting=True) (column-pivoted QR) is "
                                  "not implemented")
    return tuple(_numpy_linalg.qr(x, mode="complete" if full_matrices else "reduced"))


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
    """``(u, s, vh)`` (or ``s``) of each ``[..., m, n]`` matrix, singular values descending."""
    if subset_by_index is not None and full_matrices and compute_uv:
        raise ValueError("full_matrices and subset_by_index cannot both be set")
    out = _numpy_linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv)
    s_ = out[1] if compute_uv else out
    keep = _subset("svd", subset_by_index, ops._aval(s_).shape[-1])
    if not compute_uv:
        return s_[..., keep]
    u, s_, vh = out
    return u[..., keep], s_[..., keep], vh[..., keep, :]
