"""``jax.scipy.sparse.linalg``: matrix-free iterative solvers -- conjugate gradients (``cg``),
BiCGSTAB (``bicgstab``) and restarted GMRES (``gmres``).  ``A`` (and the preconditioner
``M``) is a square matrix or a function of a pytree of arrays; each solve runs in one
``lax.while_loop`` and is wrapped in ``lax.custom_linear_solve``, so it is differentiated
implicitly (in ``b`` and in values ``A`` closes over), never through the iterations."""
from __future__ import annotations

import functools
import operator

import numpy as np

from ... import lax
from ... import numpy as jnp
from ..._src.core import tree_util

__all__ = ["cg", "bicgstab", "gmres"]


def _vdot(a, b):
    return sum(jnp.vdot(x, y) for x, y in zip(tree_util.tree_leaves(a),
                                                tree_util.tree_leaves(b)))


def _add(a, b):
    return tree_util.tree_map(operator.add, a, b)


def _sub(a, b):
    return tree_util.tree_map(operator.sub, a, b)


def _scale(s, a):
    return tree_util.tree_map(lambda x: s * x, a)


def _axpy(alpha, x, y):                 # alpha x + y
    return tree_util.tree_map(lambda u, v: alpha * u + v, x, y)


def _identity(x):
    return x


def _matvec(f, name="linear operator"):
    if callable(f):
        return f
    a = jnp.asarray(f)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be a square matrix, but has shape: {a.shape}")
    return functools.partial(jnp.dot, a)


def _prepare(A, b, x0, maxiter, M):
    if x0 is None:
        x0 = tree_util.tree_map(jnp.zeros_like, b)
    b = tree_util.tree_map(jnp.asarray, b)
    x0 = tree_util.tree_map(jnp.asarray, x0)
    if tree_util.tree_structure(x0) != tree_util.tree_structure(b):
        raise ValueError(f"x0 and b must have matching tree structure: "
                         f"{tree_util.tree_structure(x0)} vs {tree_util.tree_structure(b)}")
    shapes = [np.shape(v) for v in tree_util.tree_leaves(b)]
    if [np.shape(v) for v in tree_util.tree_leaves(x0)] != shapes:
        raise ValueError(f"arrays in x0 and b must have matching shapes: "
                         f"{[np.shape(v) for v in tree_util.tree_leaves(x0)]} vs {shapes}")
    size = sum(int(np.prod(s)) for s in shapes)
    if maxiter is None:
        maxiter = 10 * size
    return _matvec(A), b, x0, maxiter, (_identity if M is None else _matvec(M, "M")), size


def _cg_solve(A, b, x0, tol, atol, maxiter, M):
    bs = _vdot(b, b)
    atol2 = jnp.maximum(tol ** 2 * bs, atol ** 2)
    r0 = _sub(b, A(x0))
    z0 = M(r0)
    init = (x0, r0, z0, _vdot(r0, z0), np.int32(0))

    def cond(st):
        _, r, _, _, k = st
        return (_vdot(r, r) > atol2) & (k < maxiter)

    def body(st):
        x, r, p, gamma, k = st
        ap = A(p)
        alpha = gamma / _vdot(p, ap)
        x = _axpy(alpha, p, x)
        r = _axpy(-alpha, ap, r)
        z = M(r)
        gamma_new = _vdot(r, z)
        p = _axpy(gamma_new / gamma, p, z)
        return x, r, p, gamma_new, k + 1

    return lax.while_loop(cond, body, init)[0]


def _bicgstab_solve(A, b, x0, tol, atol, maxiter, M):
    bs = _vdot(b, b)
    atol2 = jnp.maximum(tol ** 2 * bs, atol ** 2)
    r0 = _sub(b, A(x0))
    one = jnp.ones((), jnp.result_type(*tree_util.tree_leaves(b)))
    zeros = tree_util.tree_map(jnp.zeros_like, b)
    init = (x0, r0, r0, one, one, one, zeros, zeros, np.int32(0))

    def cond(st):
        x, r, _, _, _, omega, _, _, k = st
        rs = _vdot(r, r)
        return (rs > atol2) & (k < maxiter) & (omega != 0) & ~jnp.isnan(rs)

    def body(st):
        x, r, rhat, alpha, rho_old, omega, p, v, k = st
        rho = _vdot(rhat, r)
        beta = rho / rho_old * alpha / omega
        p = _add(r, _scale(beta, _sub(p, _scale(omega, v))))
        phat = M(p)
        v = A(phat)
        alpha = rho / _vdot(rhat, v)
        s = _sub(r, _scale(alpha, v))
        shat = M(s)
        t = A(shat)
        omega = _vdot(t, s) / _vdot(t, t)
        x = _add(x, _add(_scale(alpha, phat), _scale(omega, shat)))
        r = _sub(s, _scale(omega, t))
        return x, r, rhat, alpha, rho, omega, p, v, k + 1

    return lax.while_loop(cond, body, init)[0]


def _isolve(solver, A, b, x0, tol, atol, maxiter, M, symmetric):
    A, b, x0, maxiter, M, _ = _prepare(A, b, x0, maxiter, M)
    solve = functools.partial(solver, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solves ``A x = b`` for a symmetric positive-definite ``A`` by conjugate gradients.
    Returns ``(x, None)``."""
    return _isolve(_cg_solve, A, b, x0, tol, atol, maxiter, M, symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solves ``A x = b`` (any nonsingular ``A``) by BiCGSTAB.  Returns ``(x, None)``."""
    return _isolve(_bicgstab_solve, A, b, x0, tol, atol, maxiter, M, symmetric=False)


# --------------------------------------------------------------------------- GMRES

def _flatten(tree):
    leaves, td = tree_util.tree_flatten(tree)
    shapes = [jnp.shape(v) for v in leaves]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = jnp.concatenate([jnp.ravel(v) for v in leaves]) if leaves else jnp.zeros(0)

    def unflatten(v):
        out, i = [], 0
        for s, n in zip(shapes, sizes):
            out.append(jnp.reshape(v[i:i + n], s))
            i += n
        return tree_util.tree_unflatten(td, out)
    return flat, unflatten


def _gmres_cycle(Af, Mf, x, b, restart):
    """One GMRES(restart) cycle from ``x`` on flat vectors: Arnoldi with modified
    Gram-Schmidt on the preconditioned residual, Givens rotations for the least squares."""
    r = Mf(b - Af(x))
    beta = jnp.linalg.norm(r)
    n = r.shape[0]
    safe = jnp.where(beta == 0, 1.0, beta)
    V = jnp.zeros((restart + 1, n), r.dtype).at[0].set(r / safe)
    Hm = jnp.zeros((restart + 1, restart), r.dtype)
    for j in range(restart):
        w = Mf(Af(V[j]))
        for i in range(j + 1):
            h = jnp.vdot(V[i], w)
            Hm = Hm.at[i, j].set(h)
            w = w - h * V[i]
        hn = jnp.linalg.norm(w)
        Hm = Hm.at[j + 1, j].set(hn)
        V = V.at[j + 1].set(w / jnp.where(hn == 0, 1.0, hn))
    # least squares min || beta e1 - Hm y || by Givens rotations
    g = jnp.zeros(restart + 1, r.dtype).at[0].set(beta)
    R = Hm
    for j in range(restart):
        a, c = R[j, j], R[j + 1, j]
        den = jnp.sqrt(a * a + c * c)
        cs = jnp.where(den == 0, 1.0, a / jnp.where(den == 0, 1.0, den))
        sn = jnp.where(den == 0, 0.0, c / jnp.where(den == 0, 1.0, den))
        rj, rj1 = R[j], R[j + 1]
        R = R.at[j].set(cs * rj + sn * rj1).at[j + 1].set(-sn * rj + cs * rj1)
        gj, gj1 = g[j], g[j + 1]
        g = g.at[j].set(cs * gj + sn * gj1).at[j + 1].set(-sn * gj + cs * gj1)
    Rt = R[:restart]
    diag = jnp.diagonal(Rt)
    Rt = Rt + jnp.diag(jnp.where(diag == 0, 1.0, 0.0))      # a breakdown column: y_j = 0
    y = jnp.linalg.solve_triangular(Rt, g[:restart], lower=False)
    return x + V[:restart].T @ y, jnp.abs(g[restart])


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):
    """Solves ``A x = b`` by GMRES restarted every ``restart`` steps (at most ``maxiter``
    restarts), preconditioned on the left by ``M``.  Returns ``(x, info)``: info 0, or -1 if
    the iteration broke down into NaN."""
    if solve_method not in ("batched", "incremental"):
        raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' "
                         f"or 'batched'")
    A, b, x0, maxiter, M, size = _prepare(A, b, x0, maxiter, M)
    restart = min(int(restart), size)
    bf, unflat = _flatten(b)
    b_norm = jnp.linalg.norm(bf)
    atol_ = jnp.maximum(tol * b_norm, atol)

    def solve(op, rhs):
        rf, _ = _flatten(rhs)
        xf, _ = _flatten(x0)

        def Af(v):
            return _flatten(op(unflat(v)))[0]

        def Mf(v):
            return _flatten(M(unflat(v)))[0]

        ptol = jnp.linalg.norm(Mf(rf)) * jnp.minimum(1.0, atol_ / jnp.where(
            b_norm == 0, 1.0, b_norm))

        def cond(st):
            x, res, k = st
            return (res > ptol) & (k < maxiter)

        def body(st):
            x, _, k = st
            x, res = _gmres_cycle(Af, Mf, x, rf, restart)
            return x, res, k + 1

        init = (xf, jnp.linalg.norm(Mf(rf - Af(xf))), np.int32(0))
        return unflat(lax.while_loop(cond, body, init)[0])

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    failed = jnp.isnan(jnp.linalg.norm(_flatten(x)[0]))
    return x, jnp.where(failed, -1, 0)
