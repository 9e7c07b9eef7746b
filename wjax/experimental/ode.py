"""``jax.experimental.ode.odeint``: an adaptive Dormand-Prince 5(4) solver whose gradient is
the adjoint method.

The forward pass integrates ``dy/dt = func(y, t, *args)`` from ``t[0]`` through each time of
``t`` in turn, inside ``lax.scan`` over the intervals and ``lax.while_loop`` over the steps of
one interval; a step is clipped to end on the interval's end, so no output is interpolated.
A step is accepted when the embedded 4th-order error, relative to ``atol + rtol * |y|``, has
an RMS norm of at most one; the next step is the accepted (or rejected) one scaled by
``0.9 * ratio^(-1/5)`` within [0.2, 10].  The first step is Hairer's estimate from ``f(y0)``.

The derivative (``custom_vjp``, as JAX's) solves the adjoint system backward between
consecutive times: with ``a`` the cotangent of ``y``, ``da/dt = -a^T df/dy`` and the
parameters' cotangent gathers ``-a^T df/dargs``; ``y`` itself is integrated back alongside.
Each output time ``t[i]`` (i > 0) gets ``g[i] . f(y[i], t[i])``, and ``t[0]`` gets
``-a(t[0]) . f(y[0], t[0])``.  Both passes are accurate to the tolerances, as JAX's are, so
values and gradients agree with JAX's to about ``rtol``.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .. import lax
from .. import numpy as jnp
from .._src.api.autodiff import vjp
from .._src.api.vmap import vmap
from .._src.api.custom_derivatives import custom_vjp
from .._src.core import tree_util
from ..flatten_util import ravel_pytree

__all__ = ["odeint"]

# Dormand-Prince 5(4): nodes, stages, the 5th-order weights and the error weights (5th - 4th)
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0)
_A = ((),
      (1 / 5,),
      (3 / 40, 9 / 40),
      (44 / 45, -56 / 15, 32 / 9),
      (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
      (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656))
_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)
_E = tuple(b - b4 for b, b4 in zip(_B, _B4))


def odeint(func: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = np.inf, hmax: float = np.inf) -> Any:
    """``y(t)`` for each time of ``t`` (increasing), where ``dy/dt = func(y, t, *args)`` and
    ``y(t[0]) = y0`` (a pytree of arrays); differentiable in ``y0``, ``t`` and ``args``."""
    for arg in tree_util.tree_leaves(args):
        if not isinstance(arg, (jnp.ndarray, np.ndarray, np.generic, int, float, complex,
                                bool)) or isinstance(arg, str):
            raise TypeError(f"The contents of odeint *args must be arrays or scalars, but got "
                            f"{arg}.")
    return _odeint(func, float(rtol), float(atol), float(mxstep), float(hmax), y0,
                   jnp.asarray(t), *args)


def _norm(x) -> Any:
    return jnp.sqrt(jnp.mean(x * x))


def _first_step(fun, t0, y0, f0, rtol, atol):
    """Hairer's starting step for a 5th-order method."""
    scale = atol + jnp.abs(y0) * rtol
    d0, d1 = _norm(y0 / scale), _norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0 * f0, t0 + h0)
    d2 = _norm((f1 - f0) / scale) / h0
    big = jnp.maximum(d1, d2)
    h1 = jnp.where(big <= 1e-15, jnp.maximum(1e-6, h0 * 1e-3), (0.01 / big) ** (1.0 / 5.0))
    return jnp.minimum(100.0 * h0, h1)


def _step(fun, y, f, t, h):
    """One Dormand-Prince step: (y at t + h, f there, the error estimate)."""
    ks = [f]
    for i in range(1, 6):
        yi = y + h * sum(a * k for a, k in zip(_A[i], ks) if a != 0.0)
        ks.append(fun(yi, t + _C[i] * h))
    y1 = y + h * sum(b * k for b, k in zip(_B, ks) if b != 0.0)
    f1 = fun(y1, t + h)
    ks.append(f1)
    err = h * sum(e * k for e, k in zip(_E, ks) if e != 0.0)
    return y1, f1, err


def _solve(fun, y0, ts, rtol, atol, mxstep, hmax):
    """The flat state at every time of ``ts``, ``fun(y, t) -> dy/dt`` on flat vectors."""
    f0 = fun(y0, ts[0])
    dt0 = _first_step(fun, ts[0], y0, f0, rtol, atol)

    def interval(carry, target):
        def more(s):
            _, _, t, _, n = s
            return (t < target) & (n < mxstep)

        def advance(s):
            y, f, t, dt, n = s
            last = dt >= target - t
            h = jnp.minimum(jnp.where(last, target - t, dt), hmax)
            last = last & (h >= target - t)
            y1, f1, err = _step(fun, y, f, t, h)
            scale = atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(y1))
            ratio = _norm(err / scale)
            ok = ratio <= 1.0
            grow = jnp.where(ratio == 0.0, 10.0,
                             jnp.clip(0.9 * ratio ** -0.2, 0.2, 10.0))
            t1 = jnp.where(last, target, t + h)
            return (jnp.where(ok, y1, y), jnp.where(ok, f1, f), jnp.where(ok, t1, t),
                    h * grow, n + 1)

        y, f, _, dt, _ = lax.while_loop(more, advance, (*carry, jnp.float32(0)))
        return (y, f, target, dt), y

    _, ys = lax.scan(interval, (y0, f0, ts[0], dt0), ts[1:])
    return jnp.concatenate([y0[None], ys], 0)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    flat0, unravel = ravel_pytree(y0)

    def fun(y, t):
        return ravel_pytree(func(unravel(y), t, *args))[0]
    return lax.map(unravel, _solve(fun, flat0, ts, rtol, atol, mxstep, hmax))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_bwd(func, rtol, atol, mxstep, hmax, res, g):
    ys, ts, args = res
    ys_flat = vmap(lambda y: ravel_pytree(y)[0])(ys)        # (times, state size)
    g_flat = vmap(lambda y: ravel_pytree(y)[0])(g)
    _, unravel = ravel_pytree(tree_util.tree_map(lambda x: x[0], ys))
    args_flat, unravel_args = ravel_pytree(args)
    n, m = ys_flat.shape[1], args_flat.shape[0]

    def f_flat(y, t, p=args_flat):
        return ravel_pytree(func(unravel(y), t, *unravel_args(p)))[0]

    def adjoint(state, s):
        """The state (y, a, args cotangent) in reversed time s = -t."""
        y, a = state[:n], state[n:2 * n]
        dy, pull = vjp(lambda y, p: f_flat(y, -s, p), y, args_flat)
        ay, ap = pull(a)
        return jnp.concatenate([-dy, ay, ap])

    def back(carry, i):
        a, p_bar = carry
        t_bar = jnp.dot(f_flat(ys_flat[i], ts[i]), g_flat[i])
        state = jnp.concatenate([ys_flat[i], a, p_bar])
        out = _solve(adjoint, state, jnp.stack([-ts[i], -ts[i - 1]]), rtol, atol, mxstep,
                     hmax)[-1]
        a, p_bar = out[n:2 * n], out[2 * n:]
        return (a + g_flat[i - 1], p_bar), t_bar

    count = ts.shape[0]
    a, p_bar = g_flat[-1], jnp.zeros(m, args_flat.dtype)
    if count > 1:
        (a, p_bar), t_bars = lax.scan(back, (a, p_bar), jnp.arange(count - 1, 0, -1))
        t0_bar = -jnp.dot(f_flat(ys_flat[0], ts[0]), a - g_flat[0])
        ts_bar = jnp.concatenate([t0_bar[None], t_bars[::-1]])
    else:
        ts_bar = jnp.zeros_like(ts)
    return (unravel(a), ts_bar.astype(ts.dtype), *unravel_args(p_bar))


_odeint.defvjp(_odeint_fwd, _odeint_bwd)
