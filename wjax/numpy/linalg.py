"""wjax.numpy.linalg: norms, and small dense solvers on the device.

``inv``, ``solve``, ``det``, ``slogdet`` go through the ``lu`` and
``triangular_solve`` primitives, ``cholesky`` through ``cholesky``
(wjax/prims/decomp.py), all computed by WGSL kernels meant for small
matrices.  Leading dimensions batch, as in JAX.
"""
from __future__ import annotations

import builtins
import operator
from typing import NamedTuple

import numpy as np

from ..core import dtypes
from .. import lax
from ..prims import decomp as D
from . import _core as jnp
from . import extra as X


def _float(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, np.floating):
        x = jnp.astype(x, np.float32)
    return x


def _square(name, a):
    a = _float(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: argument must be a square matrix or a stack of them, got shape {a.shape}")
    return a


# --------------------------------------------------------------------------- norms

def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _float(x)
    if axis is None:
        y = jnp.ravel(x)
        r = vector_norm(y, axis=0, ord=ord)
        return jnp.reshape(r, (1,) * x.ndim) if keepdims else r
    if ord == 2 or ord is None:
        return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(jnp.astype(x != 0, x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm.")
    p = float(ord)
    return jnp.power(jnp.sum(jnp.power(jnp.abs(x), p), axis=axis, keepdims=keepdims), 1.0 / p)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):
    x = _float(x)
    if axis is None:
        if ord is None:
            r = jnp.sqrt(jnp.sum(x * x))
            return jnp.reshape(r, (1,) * x.ndim) if keepdims else r
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
        ax = jnp._axis(operator.index(axis), x.ndim)
        return vector_norm(x, axis=ax, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axis) != 2:
        raise ValueError(f"Improper number of axes for norm: axis={axis}")
    r, c = (jnp._axis(operator.index(a), x.ndim) for a in axis)
    if r == c:
        raise ValueError(f"Duplicate axes given to norm: axis={axis}")
    if ord in (None, "fro", "f"):
        out = jnp.sqrt(jnp.sum(x * x, axis=(r, c), keepdims=keepdims))
    elif ord in (1, -1):
        s = jnp.sum(jnp.abs(x), axis=r, keepdims=True)
        out = (jnp.max if ord == 1 else jnp.min)(s, axis=c, keepdims=True)
        out = out if keepdims else jnp.squeeze(out, (r, c))
    elif ord in (np.inf, -np.inf):
        s = jnp.sum(jnp.abs(x), axis=c, keepdims=True)
        out = (jnp.max if ord == np.inf else jnp.min)(s, axis=r, keepdims=True)
        out = out if keepdims else jnp.squeeze(out, (r, c))
    elif ord in (2, -2, "nuc"):
        raise NotImplementedError(f"wjax: matrix norm ord={ord!r} needs an SVD, which wjax does not have")
    else:
        raise ValueError(f"Invalid order '{ord}' for matrix norm.")
    return out


# --------------------------------------------------------------------------- decompositions

def lu_factor(a):
    """(lu, pivots, permutation) from the device LU kernel (partial pivoting)."""
    a = _float(a)
    if a.ndim < 2:
        raise ValueError(f"Argument to LU decomposition must have ndims >= 2, got shape {a.shape}")
    if 0 in a.shape[-2:]:
        k = builtins.min(a.shape[-2:])
        return a, jnp.zeros(a.shape[:-2] + (k,), np.int32), \
            jnp.broadcast_to(jnp.arange(a.shape[-2], dtype=np.int32), a.shape[:-1])
    return tuple(D.lu_p.bind(a))


def _tri_solve(a, b, *, left_side=True, lower=False, transpose_a=False, unit_diagonal=False):
    return D.triangular_solve_p.bind(a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
                                     conjugate_a=False, unit_diagonal=unit_diagonal)


def _lu_solve(lu, perm, b):
    """Solves a x = b (b: [..., m, n]) from a's LU factors."""
    pb = X.take_along_axis(b, jnp.broadcast_to(jnp.expand_dims(perm, -1), b.shape), -2, mode="clip")
    y = _tri_solve(lu, pb, lower=True, unit_diagonal=True)
    return _tri_solve(lu, y, lower=False)


def solve(a, b):
    a = _square("solve", a)
    b = jnp.asarray(b)
    dt = jnp.result_type(a, b)
    if not jnp.issubdtype(dt, np.floating):
        dt = np.dtype(np.float32)
    a, b = jnp.astype(a, dt), jnp.astype(b, dt)
    m = a.shape[-1]
    vec = b.ndim == 1
    if vec:
        if b.shape[0] != m:
            raise ValueError(f"solve: b of shape {b.shape} does not match a of shape {a.shape}")
        b = b[:, None]
    if b.shape[-2] != m:
        raise ValueError(f"solve: b of shape {b.shape} does not match a of shape {a.shape} (the "
                         f"second-to-last dimension of b must be {m})")
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    if m == 0 or b.shape[-1] == 0:
        x = jnp.zeros(b.shape, dt)
    else:
        lu, _, perm = lu_factor(a)
        x = _lu_solve(lu, perm, b)
    return x[..., 0] if vec else x


def inv(a):
    a = _square("inv", a)
    n = a.shape[-1]
    eye = jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), a.shape)
    return solve(a, eye)


def _parity(pivots):
    k = pivots.shape[-1]
    swaps = jnp.sum(pivots != jnp.arange(k, dtype=np.int32), axis=-1)
    return jnp.where(swaps % 2 == 1, -1.0, 1.0)


def det(a):
    a = _square("det", a)
    n = a.shape[-1]
    if n == 0:
        return jnp.ones(a.shape[:-2], a.dtype)
    lu, piv, _ = lu_factor(a)
    d = X.diagonal(lu, 0, -2, -1)
    return jnp.astype(jnp.prod(d, axis=-1) * jnp.astype(_parity(piv), a.dtype), a.dtype)


class SlogdetResult(NamedTuple):
    sign: object
    logabsdet: object


def slogdet(a, *, method=None):
    a = _square("slogdet", a)
    n = a.shape[-1]
    if n == 0:
        return SlogdetResult(jnp.ones(a.shape[:-2], a.dtype), jnp.zeros(a.shape[:-2], a.dtype))
    lu, piv, _ = lu_factor(a)
    d = X.diagonal(lu, 0, -2, -1)
    zero = jnp.any(d == 0, axis=-1)
    neg = jnp.sum(jnp.astype(d < 0, np.int32), axis=-1)
    sign = jnp.astype(_parity(piv), a.dtype) * jnp.where(neg % 2 == 1, -1.0, 1.0)
    logdet = jnp.sum(jnp.log(jnp.abs(d)), axis=-1)
    sign = jnp.where(zero, 0.0, sign)
    logdet = jnp.where(zero, -np.inf, logdet)
    return SlogdetResult(jnp.astype(sign, a.dtype), jnp.astype(logdet, a.dtype))


def cholesky(a, *, upper=False, symmetrize_input=True):
    a = _square("cholesky", a)
    if symmetrize_input:
        a = (a + jnp.swapaxes(a, -1, -2)) * 0.5
    if a.shape[-1] == 0:
        return a
    L = D.cholesky_p.bind(a)
    return jnp.swapaxes(L, -1, -2) if upper else L


def solve_triangular(a, b, lower=False, unit_diagonal=False, trans=0):
    a, b = _float(a), _float(b)
    vec = b.ndim == a.ndim - 1
    if vec:
        b = b[..., None]
    tr = trans in (1, 2, "T", "C")
    x = _tri_solve(a, b, lower=lower, transpose_a=tr, unit_diagonal=unit_diagonal)
    return x[..., 0] if vec else x


def matrix_power(a, n):
    a = jnp.asarray(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise TypeError(f"matrix_power requires a square matrix or a stack of them, got shape {a.shape}")
    n = operator.index(n)
    if n == 0:
        return jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if n < 0:
        a, n = inv(a), -n
    result, z = None, a
    while n:
        if n & 1:
            result = z if result is None else jnp.matmul(result, z)
        n >>= 1
        if n:
            z = jnp.matmul(z, z)
    return result


def multi_dot(arrays, *, precision=None):
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    out = arrays[0]
    for b in arrays[1:]:
        out = jnp.matmul(out, b) if jnp.ndim(out) and jnp.ndim(b) else jnp.dot(out, b)
    return out


def tensorsolve(a, b, axes=None):
    a, b = jnp.asarray(a), jnp.asarray(b)
    if axes is not None:
        a = jnp.moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    out_shape = a.shape[b.ndim:]
    n = int(np.prod(out_shape))
    x = solve(jnp.reshape(a, (-1, n)), jnp.ravel(b))
    return jnp.reshape(x, out_shape)


def tensorinv(a, ind=2):
    a = jnp.asarray(a)
    out_shape = a.shape[ind:] + a.shape[:ind]
    n = int(np.prod(a.shape[:ind]))
    return jnp.reshape(inv(jnp.reshape(a, (n, -1))), out_shape)


def cond(x, p=None):
    if p in (None, 2, -2):
        raise NotImplementedError("wjax: cond with p=None/2/-2 needs an SVD")
    return norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))


def _no_svd(name):
    def f(*a, **k):
        raise NotImplementedError(f"wjax: jnp.linalg.{name} is not implemented (no SVD/eigen solver)")
    f.__name__ = name
    return f


svd = _no_svd("svd")
svdvals = _no_svd("svdvals")
eig = _no_svd("eig")
eigh = _no_svd("eigh")
eigvals = _no_svd("eigvals")
eigvalsh = _no_svd("eigvalsh")
pinv = _no_svd("pinv")
lstsq = _no_svd("lstsq")
matrix_rank = _no_svd("matrix_rank")
qr = _no_svd("qr")

# array-API linalg re-exports
cross = X.cross


def diagonal(x, /, *, offset=0):
    return X.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    return X.trace(x, offset, -2, -1, dtype=dtype)


matmul = jnp.matmul
matrix_transpose = X.matrix_transpose
outer = jnp.outer
tensordot = X.tensordot
vecdot = X.vecdot
