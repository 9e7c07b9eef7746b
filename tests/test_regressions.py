"""Ordinary programs that once crashed or answered wrongly, each compared with real JAX.

The root causes, so a newcomer can see which class of bug each test guards:

* buffer liveness in plans: a plan step (a control-flow host step) may bind one buffer twice
  (CSE makes ``scan(W, W, ...)`` out of two equal operands); the executor freed it twice;
* transposition through nested calls: the jvp of a call inside a ``checkpoint`` returns primal
  and tangent outputs from one equation; the transpose treated all of them as linear (it now
  splits such equations with their partial-evaluation rule, as ``linearize`` does);
* weak types: ``jnp.logical_*`` promote both operands first and compare with a zero that is
  weak only for a weak scalar (JAX's ``lax._const``);
* constant folding: the NumPy reference of ``bitcast_convert_type`` gave a 1-element array
  for a 0-d operand, so a folded scalar literal reached the kernel generator with shape (1,)
  (a vmapped ``truncated_normal``, as flax's initializers draw, crashed the compile).
"""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from checks import against_jax, close

F = np.float32


def _rnn_loss(J, N, L):
    H, B = 8, 2
    h0 = N.zeros((B, H))

    def loss(W, U, xs):
        def cell(h, x):
            h = N.tanh(h @ W + x @ U)
            return h, h.sum()
        h, ys = L.scan(cell, h0, xs)
        return N.sum(h ** 2) + ys.mean()
    return loss


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("same", [True, False])
def test_grad_of_batched_rnn_scan(jit, same):
    """``W = U`` (one array twice) made CSE bind one buffer twice in the scan's host step."""
    H, T, B = 8, 5, 2
    W = np.ones((H, H), F) * F(0.1)
    U = W if same else (np.arange(H * H, dtype=F).reshape(H, H) / F(200))
    xs = np.linspace(-1, 1, T * B * H, dtype=F).reshape(T, B, H)

    def build(J, N, L):
        g = J.grad(_rnn_loss(J, N, L), argnums=(0, 1))
        return J.jit(g) if jit else g
    against_jax(build, W, U, xs, rtol=1e-5, atol=1e-6)


def _newton_sqrt(J, N, L):
    """JAX's custom-derivative tutorial: a fixed point (``while_loop``) with a custom vjp."""
    @partial(J.custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, a, x_guess):
        def cond_fun(carry):
            x_prev, x = carry
            return N.abs(x_prev - x) > 1e-6

        def body_fun(carry):
            _, x = carry
            return x, f(a, x)
        _, x_star = L.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
        return x_star

    def fixed_point_fwd(f, a, x_init):
        x_star = fixed_point(f, a, x_init)
        return x_star, (a, x_star)

    def rev_iter(f, packed, u):
        a, x_star, x_star_bar = packed
        _, vjp_x = J.vjp(lambda x: f(a, x), x_star)
        return x_star_bar + vjp_x(u)[0]

    def fixed_point_rev(f, res, x_star_bar):
        a, x_star = res
        _, vjp_a = J.vjp(lambda a: f(a, x_star), a)
        a_bar, = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
        return a_bar, N.zeros_like(x_star)

    fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)
    return lambda a: fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)


def test_newton_sqrt_custom_vjp_while_loop():
    against_jax(lambda J, N, L: _newton_sqrt(J, N, L), F(2.0))
    against_jax(lambda J, N, L: J.grad(_newton_sqrt(J, N, L)), F(2.0))
    got = against_jax(lambda J, N, L: J.grad(J.grad(_newton_sqrt(J, N, L))), F(2.0))
    close(got, -0.25 * 2.0 ** -1.5, rtol=1e-5)   # d2/da2 sqrt(a) at 2
    against_jax(lambda J, N, L: J.jit(J.grad(J.grad(_newton_sqrt(J, N, L)))), F(2.0))
    against_jax(lambda J, N, L: J.vmap(J.grad(_newton_sqrt(J, N, L))), np.array([1.0, 4.0, 9.0], F))


def _recursive_checkpoint(J, funs):
    """JAX's gradient-checkpointing tutorial."""
    if len(funs) == 1:
        return funs[0]
    if len(funs) == 2:
        f1, f2 = funs
        return lambda x: f1(f2(x))
    f1 = _recursive_checkpoint(J, funs[:len(funs) // 2])
    f2 = _recursive_checkpoint(J, funs[len(funs) // 2:])
    return lambda x: f1(J.checkpoint(f2)(x))


@pytest.mark.parametrize("n", [3, 4, 8, 16])
def test_nested_checkpoints(n):
    f = lambda J, N: _recursive_checkpoint(J, [N.sin] * n)
    against_jax(lambda J, N, L: J.grad(f(J, N)), F(3.0))
    against_jax(lambda J, N, L: J.jit(J.grad(f(J, N))), F(3.0))
    against_jax(lambda J, N, L: J.grad(J.grad(f(J, N))), F(0.5), rtol=1e-4)
    against_jax(lambda J, N, L: J.vmap(J.grad(f(J, N))), np.linspace(0, 2, 5, dtype=F))


def test_checkpoint_around_jit_and_scan():
    """Mixed primal/tangent equations inside a checkpoint: a jit call and a scan."""
    def build(J, N, L):
        inner = J.jit(lambda x: N.sin(x) * x)

        @J.checkpoint
        def body(x):
            y = inner(x)
            c, ys = L.scan(lambda c, z: (N.cos(c) * z, c * z), y, N.arange(1.0, 4.0))
            return c + ys.sum()
        return J.grad(lambda x: body(J.checkpoint(body)(x)))
    against_jax(build, F(0.7), rtol=1e-5)


@pytest.mark.parametrize("f", ["logical_and", "logical_or", "logical_xor"])
def test_logical_weak_types(f):
    rjnp = pytest.importorskip("jax.numpy")
    cases = [(np.array(False), -3), (-3, np.array(False)), (np.array(True), 2.5),
             (np.array([True, False]), 0), (True, -3), (np.array(0), True),
             (np.float32(1), 0), (np.array([1, 0], np.int32), 2.0)]
    for a, b in cases:
        want = getattr(rjnp, f)(a, b)
        got = getattr(jnp, f)(a, b)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (a, b)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_folded_scalar_bitcast_in_vmapped_truncated_normal():
    def build(J, N, L):
        def f(key):
            bits = L.bitcast_convert_type(N.float32(-2.0), N.int32)     # folded at lowering
            draw = J.random.truncated_normal(key, -2.0, 2.0, (3, 2))
            return draw, L.select(draw > 0, N.full((3, 2), bits), N.zeros((3, 2), N.int32))
        return lambda k: J.vmap(f)(J.random.split(k, 4))
    import jax
    import wjax
    got = build(wjax, jnp, wjax.lax)(wjax.random.key(5))
    want = build(jax, jax.numpy, jax.lax)(jax.random.key(5))
    close(got, want, rtol=2e-6)
    assert np.asarray(got[1]).dtype == np.int32 and (np.asarray(got[1]) <= 0).all()


def test_var_method_on_tracers():
    """``x.var(axis)`` inside jit and grad: the tracer's own slot named ``var`` (its jaxpr
    variable) once hid the array method ("'Var' object is not callable")."""
    J = pytest.importorskip("jax")
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4) ** 1.5
    for f in (lambda a: a.var(0), lambda a: a.var(axis=1, ddof=1), lambda a: a.var()):
        np.testing.assert_allclose(np.asarray(wjax.jit(f)(x)), np.asarray(J.jit(f)(x)),
                                   rtol=1e-5)
    np.testing.assert_allclose(np.asarray(wjax.grad(lambda a: a.var())(x)),
                               np.asarray(J.grad(lambda a: a.var())(x)), rtol=1e-5)
