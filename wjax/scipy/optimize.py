"""wjax.scipy.optimize: ``minimize`` with BFGS (``jax.scipy.optimize``), jittable and
differentiable-free (the search is a ``lax.while_loop``).

BFGS keeps an inverse-Hessian estimate ``H`` (the identity at first), steps along
``-H g`` with a line search meeting the strong Wolfe conditions (c1 = 1e-4, c2 = 0.9:
bracketing by doubling, then zooming with safeguarded cubic interpolation), and updates
``H`` with the BFGS formula (skipped when the curvature ``y.s`` is not positive-finite).
It stops when the gradient's ``norm`` falls below ``gtol``, the line search fails, or after
``maxiter`` steps.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from .. import lax
from .. import numpy as jnp
from .._src.api.autodiff import value_and_grad

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """The result of ``minimize``: the solution ``x``, whether it ``success``-fully converged,
    ``status`` (0 converged, 1 too many iterations, 3 the line search failed), the value
    ``fun`` and gradient ``jac`` there, the inverse-Hessian estimate ``hess_inv``, and the
    numbers of function/gradient evaluations and iterations."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


class _LineSearch(NamedTuple):
    a: Any
    f: Any
    g: Any
    failed: Any
    nfev: Any


def _line_search(vg, xk, pk, f0, g0, old_old_fval, maxiter, c1=1e-4, c2=0.9):
    """A step length ``a`` along ``pk`` with ``f(a) <= f0 + c1 a f'(0)`` and
    ``|f'(a)| <= c2 |f'(0)|``: one function evaluation per loop iteration, first doubling the
    step until the minimum is bracketed, then shrinking the bracket."""
    dt = xk.dtype
    dphi0 = jnp.dot(g0, pk, precision=lax.Precision.HIGHEST)
    guess = 1.01 * 2 * (f0 - old_old_fval) / dphi0
    a1 = jnp.where(jnp.isfinite(guess) & (guess > 0), jnp.minimum(1.0, guess), 1.0).astype(dt)
    zero = jnp.zeros((), dt)

    def cond(st):
        return ~st["done"] & (st["i"] < 3 * maxiter)

    def body(st):
        a = st["a"]
        f, g = vg(xk + a * pk)
        d = jnp.dot(g, pk, precision=lax.Precision.HIGHEST)
        armijo_bad = f > f0 + c1 * a * dphi0
        curv_ok = jnp.abs(d) <= -c2 * dphi0
        zoom = st["zoom"]
        # --- bracketing
        b_hi = armijo_bad | ((st["i"] > 0) & (f >= st["f_prev"]))
        b_done = ~b_hi & curv_ok
        b_rev = ~b_hi & ~b_done & (d >= 0)
        # --- zooming
        z_hi = armijo_bad | (f >= st["f_lo"])
        z_done = ~z_hi & curv_ok
        z_swap = ~z_hi & ~z_done & (d * (st["a_hi"] - st["a_lo"]) >= 0)
        done = jnp.where(zoom, z_done, b_done)
        new = dict(st)
        new["i"] = st["i"] + 1
        new["done"] = done
        new["res_a"] = jnp.where(done, a, st["res_a"])
        new["res_f"] = jnp.where(done, f, st["res_f"])
        new["res_g"] = jnp.where(done, g, st["res_g"])
        # bracket ends after this step
        lo_a = jnp.where(zoom, jnp.where(z_hi, st["a_lo"], a),
                         jnp.where(b_hi, st["a_prev"], a))
        lo_f = jnp.where(zoom, jnp.where(z_hi, st["f_lo"], f),
                         jnp.where(b_hi, st["f_prev"], f))
        lo_d = jnp.where(zoom, jnp.where(z_hi, st["d_lo"], d),
                         jnp.where(b_hi, st["d_prev"], d))
        lo_g = jnp.where(zoom, jnp.where(z_hi, st["g_lo"], g),
                         jnp.where(b_hi, st["g_prev"], g))
        hi_a = jnp.where(zoom, jnp.where(z_hi, a, jnp.where(z_swap, st["a_lo"], st["a_hi"])),
                         jnp.where(b_hi, a, st["a_prev"]))
        hi_f = jnp.where(zoom, jnp.where(z_hi, f, jnp.where(z_swap, st["f_lo"], st["f_hi"])),
                         jnp.where(b_hi, f, st["f_prev"]))
        hi_d = jnp.where(zoom, jnp.where(z_hi, d, jnp.where(z_swap, st["d_lo"], st["d_hi"])),
                         jnp.where(b_hi, d, st["d_prev"]))
        start_zoom = ~zoom & (b_hi | b_rev)
        now_zoom = zoom | start_zoom
        for k, v in (("a_lo", lo_a), ("f_lo", lo_f), ("d_lo", lo_d), ("g_lo", lo_g),
                     ("a_hi", hi_a), ("f_hi", hi_f), ("d_hi", hi_d)):
            new[k] = jnp.where(now_zoom, v, st[k])
        new["zoom"] = now_zoom
        # the previous point of the bracketing phase
        keep_b = ~now_zoom
        new["a_prev"] = jnp.where(keep_b, a, st["a_prev"])
        new["f_prev"] = jnp.where(keep_b, f, st["f_prev"])
        new["d_prev"] = jnp.where(keep_b, d, st["d_prev"])
        new["g_prev"] = jnp.where(keep_b, g, st["g_prev"])
        # next trial: double while bracketing; a safeguarded cubic step while zooming
        al, ah = new["a_lo"], new["a_hi"]
        fl, fh, dl, dh = new["f_lo"], new["f_hi"], new["d_lo"], new["d_hi"]
        d1 = dl + dh - 3 * (fl - fh) / (al - ah)
        d2 = jnp.sign(ah - al) * jnp.sqrt(jnp.maximum(d1 * d1 - dl * dh, 0.0))
        cubic = ah - (ah - al) * (dh + d2 - d1) / (dh - dl + 2 * d2)
        lo_b, hi_b = jnp.minimum(al, ah), jnp.maximum(al, ah)
        margin = 0.1 * (hi_b - lo_b)
        ok = jnp.isfinite(cubic) & (cubic > lo_b + margin) & (cubic < hi_b - margin)
        zoom_next = jnp.where(ok, cubic, 0.5 * (al + ah))
        new["a"] = jnp.where(now_zoom, zoom_next, 2 * a)
        return new

    st = dict(i=jnp.zeros((), np.int32), done=jnp.zeros((), bool), zoom=jnp.zeros((), bool),
              a=a1, a_prev=zero, f_prev=f0, d_prev=dphi0, g_prev=g0,
              a_lo=zero, f_lo=f0, d_lo=dphi0, g_lo=g0, a_hi=zero, f_hi=f0, d_hi=dphi0,
              res_a=zero, res_f=f0, res_g=g0)
    st = lax.while_loop(cond, body, st)
    failed = ~st["done"]
    # on failure, the best point found (it met the sufficient decrease condition)
    a = jnp.where(failed, st["a_lo"], st["res_a"])
    f = jnp.where(failed, st["f_lo"], st["res_f"])
    g = jnp.where(failed, st["g_lo"], st["res_g"])
    return _LineSearch(a, f, g, failed, st["i"])


def _norm(g, ord):
    if ord == np.inf:
        return jnp.max(jnp.abs(g))
    return jnp.linalg.norm(g, ord=ord)


def _minimize_bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"BFGS needs a one-dimensional x0, got shape {x0.shape}")
    if maxiter is None:
        maxiter = x0.shape[0] * 200
    d = x0.shape[0]
    vg = value_and_grad(fun)
    f0, g0 = vg(x0)
    eye = jnp.eye(d, dtype=x0.dtype)
    st = dict(converged=_norm(g0, norm) < gtol, failed=jnp.zeros((), bool),
              k=jnp.zeros((), np.int32), nfev=jnp.ones((), np.int32),
              x=x0, f=f0, g=g0, H=eye, old=f0 + jnp.linalg.norm(g0) / 2)

    def cond(st):
        return ~st["converged"] & ~st["failed"] & (st["k"] < maxiter)

    def body(st):
        p = -jnp.dot(st["H"], st["g"], precision=lax.Precision.HIGHEST)
        ls = _line_search(vg, st["x"], p, st["f"], st["g"], st["old"], line_search_maxiter)
        s = ls.a * p
        x1 = st["x"] + s
        y = ls.g - st["g"]
        rho = 1.0 / jnp.dot(y, s, precision=lax.Precision.HIGHEST)
        w = eye - rho * s[:, None] * y[None, :]
        H1 = jnp.einsum("ij,jk,lk", w, st["H"], w, precision=lax.Precision.HIGHEST) + \
            rho * s[:, None] * s[None, :]
        H1 = jnp.where(jnp.isfinite(rho), H1, st["H"])
        return dict(converged=_norm(ls.g, norm) < gtol, failed=ls.failed, k=st["k"] + 1,
                    nfev=st["nfev"] + ls.nfev, x=x1, f=ls.f, g=ls.g, H=H1, old=st["f"])

    st = lax.while_loop(cond, body, st)
    status = jnp.where(st["converged"], 0, jnp.where(st["k"] == maxiter, 1,
                                                      jnp.where(st["failed"], 3, -1)))
    return OptimizeResults(x=st["x"], success=st["converged"] & ~st["failed"], status=status,
                           fun=st["f"], jac=st["g"], hess_inv=st["H"], nfev=st["nfev"],
                           njev=st["nfev"], nit=st["k"])


def minimize(fun: Callable, x0, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimizes ``fun(x, *args)`` from ``x0`` (a 1-D array) with ``method="BFGS"``;
    ``options``: ``maxiter``, ``norm``, ``gtol``, ``line_search_maxiter``."""
    if options is None:
        options = {}
    if not isinstance(args, tuple):
        raise TypeError(f"args argument to jax.scipy.optimize.minimize must be a tuple, got "
                        f"{args}")
    if method.lower() == "bfgs":
        return _minimize_bfgs(lambda x: fun(x, *args), x0, **options)
    raise ValueError(f"Method {method} not recognized")
