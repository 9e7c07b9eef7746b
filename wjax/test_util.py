"""``jax.test_util.check_grads``: autodiff checked against finite differences.

Derivatives are checked along one random direction per call (cheap for any input size; the
directions are drawn as JAX draws them, so both reach the same verdicts):
forward mode compares ``jvp`` with a central difference ``(f(x + eps t) - f(x - eps t)) / 2eps``;
reverse mode checks ``<ct, J t>`` from ``vjp`` against the same difference.  ``order > 1``
repeats the checks on the derivative functions themselves.  Tolerances default per dtype
(float32: 2e-3, float16: 1e-2), scaled by the size of the compared arrays as JAX does."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from ._src.api.autodiff import jvp, linearize, vjp
from ._src.core import tree_util

EPS = 1e-4
_GRAD_TOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}


def _np(x) -> np.ndarray:
    return np.asarray(x)


def _tol(tol, dtype) -> float:
    if tol is None:
        return _GRAD_TOL.get(np.dtype(dtype), 0.0)
    if isinstance(tol, dict):
        return {np.dtype(k): v for k, v in tol.items()}.get(np.dtype(dtype),
                                                            _GRAD_TOL.get(np.dtype(dtype), 0.0))
    return float(tol)


def _close(xs, ys, atol, rtol, what: str) -> None:
    for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys)):
        x, y = _np(x), _np(y)
        a = max(_tol(atol, x.dtype), _tol(atol, y.dtype)) * max(x.size, 1)
        r = max(_tol(rtol, x.dtype), _tol(rtol, y.dtype)) * max(y.size, 1)
        np.testing.assert_allclose(x.astype(np.float64), y.astype(np.float64), atol=a, rtol=r,
                                   err_msg=what)


def _random_like(rng, x):
    x = _np(x)
    return np.asarray(rng.standard_normal(x.shape), dtype=x.dtype)


def _axpy(a: float, ts, xs, sign: float):
    """``xs + sign * a * ts`` leaf by leaf, in each leaf's dtype."""
    def one(x, t):
        x = _np(x)
        return (x + np.asarray(sign * a, x.dtype) * _np(t)).astype(x.dtype)
    return tree_util.tree_map(one, xs, ts)


def _numerical_jvp(f, args, tangents, eps):
    hi = f(*_axpy(eps, tangents, args, 1.0))
    lo = f(*_axpy(eps, tangents, args, -1.0))

    def diff(a, b):
        a, b = _np(a), _np(b)
        with np.errstate(invalid="ignore"):
            d = np.where(a == b, 0, a.astype(np.float64) - b.astype(np.float64))
        return (d / (2 * eps)).astype(a.dtype)
    return tree_util.tree_map(diff, hi, lo)


def _inner(xs, ys) -> float:
    return float(sum(np.vdot(_np(x).astype(np.float64).ravel(), _np(y).astype(np.float64).ravel())
                     for x, y in zip(tree_util.tree_leaves(xs), tree_util.tree_leaves(ys))))


def check_jvp(f, f_jvp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    rng = np.random.RandomState(0)
    tangents = tree_util.tree_map(functools.partial(_random_like, rng), args)
    out, t_out = f_jvp(args, tangents)
    _close(out, f(*args), atol, rtol, f"{err_msg} primal")
    _close(t_out, _numerical_jvp(f, args, tangents, eps), atol, rtol, f"{err_msg} tangent")


def check_vjp(f, f_vjp, args, atol=None, rtol=None, eps=EPS, err_msg=""):
    rng = np.random.RandomState(0)
    out, pullback = f_vjp(*args)
    _close(out, f(*args), atol, rtol, f"{err_msg} primal")
    tangents = tree_util.tree_map(functools.partial(_random_like, rng), args)
    t_out = _numerical_jvp(f, args, tangents, eps)
    ct = tree_util.tree_map(functools.partial(_random_like, rng), out)
    cts_in = pullback(ct)
    ip, ip_want = _inner(tangents, cts_in), _inner(t_out, ct)
    dtype = np.result_type(*[_np(x).dtype for x in tree_util.tree_leaves(args)])
    np.testing.assert_allclose(ip, ip_want, atol=_tol(atol, dtype), rtol=_tol(rtol, dtype),
                               err_msg=f"{err_msg} cotangent projection")


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol=None, rtol=None,
                eps: float | None = None) -> None:
    """Checks ``f``'s derivatives at ``args`` up to ``order`` against finite differences.

    Raises ``AssertionError`` when they disagree."""
    args, eps = tuple(args), eps or EPS

    def check(f, args, order, msg):
        if "fwd" in modes:
            m = f"JVP of {msg}" if msg else "JVP"
            check_jvp(f, functools.partial(jvp, f), args, atol, rtol, eps, m)
            if order > 1:
                check(functools.partial(jvp, f), (args, args), order - 1, m)
        if "rev" in modes:
            m = f"VJP of {msg}" if msg else "VJP"
            check_vjp(f, functools.partial(vjp, f), args, atol, rtol, eps, m)
            if order > 1:
                def f_vjp(*primals):
                    out, pullback = vjp(f, *primals)
                    return pullback(out)
                check(f_vjp, args, order - 1, m)
        if "lin" in modes:
            m = f"LIN of {msg}" if msg else "LIN"

            def f_lin(primals, tangents):
                out, lin = linearize(f, *primals)
                return out, lin(*tangents)
            check_jvp(f, f_lin, args, atol, rtol, eps, m)

    check(f, args, order, "")
