"""jax.experimental.ode.odeint against real JAX: values at the requested times, gradients in
the initial state, the times and the parameters (the adjoint method), pytree states, jit and
vmap, and the error for a non-array argument.  Both solvers are adaptive to the tolerances,
so they agree to about them."""
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax.experimental.ode import odeint

jax = pytest.importorskip("jax")
jnp_ = jax.numpy
from jax.experimental.ode import odeint as jodeint  # noqa: E402

TS = np.linspace(0.0, 2.0, 5).astype(np.float32)


def decay(N):
    def f(y, t, k):
        return -k * y + N.sin(t)
    return f


def _close(got, want, rtol):
    for g, w in zip(wjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=rtol)


def test_values_and_gradients_like_jax():
    y0 = np.array([1.0, 2.0], np.float32)
    _close(odeint(decay(jnp), y0, TS, 0.7), jodeint(decay(jnp_), y0, TS, 0.7), 1e-5)

    def loss(M, ode):
        return lambda y0, t, k: ode(decay(M), y0, t, k)[-1].sum() + ode(decay(M), y0, t, k)[
            2, 0] ** 2
    got = wjax.grad(loss(jnp, odeint), argnums=(0, 1, 2))(y0, TS, np.float32(0.7))
    want = jax.grad(loss(jnp_, jodeint), argnums=(0, 1, 2))(y0, TS, np.float32(0.7))
    _close(got, want, 1e-4)


def test_pytree_state_several_parameters_and_jit():
    def lotka(state, t, a, b, c, d):
        x, y = state["x"], state["y"]
        return {"x": a * x - b * x * y, "y": -c * y + d * x * y}
    ts = np.linspace(0.0, 5.0, 6).astype(np.float32)
    p = (np.float32(1.1), np.float32(0.1), np.float32(1.5), np.float32(0.075))
    s0 = {"x": np.float32(10.0), "y": np.float32(5.0)}
    got = wjax.jit(lambda *p: odeint(lotka, s0, ts, *p))(*p)
    _close(got, jodeint(lotka, s0, ts, *p), 1e-4)
    got = wjax.grad(lambda p: odeint(lotka, s0, ts, *p)["x"][-1])(p)
    _close(got, jax.grad(lambda p: jodeint(lotka, s0, ts, *p)["x"][-1])(p), 1e-4)


def test_a_neural_ode_at_looser_tolerances():
    W = np.array([[0.0, 1.0], [-2.0, -0.3]], np.float32)
    b = np.array([0.1, -0.1], np.float32)
    ts = np.array([0.0, 0.5, 1.5], np.float32)

    def loss(M, ode):
        def mlp(y, t, W, b):
            return M.tanh(W @ y + b)
        return lambda W, b: M.sum(ode(mlp, M.ones(2), ts, W, b, rtol=1e-5, atol=1e-5) ** 2)
    _close(wjax.value_and_grad(loss(jnp, odeint), argnums=(0, 1))(W, b),
           jax.value_and_grad(loss(jnp_, jodeint), argnums=(0, 1))(W, b), 2e-3)


def test_vmap_one_time_and_bad_arguments():
    y0s = np.arange(3.0, dtype=np.float32)
    got = wjax.vmap(lambda y0: odeint(decay(jnp), y0, TS, 0.3)[-1])(y0s)
    _close(got, jax.vmap(lambda y0: jodeint(decay(jnp_), y0, TS, 0.3)[-1])(y0s), 1e-5)
    one = odeint(decay(jnp), np.float32(1.0), TS[:1], 0.3)
    assert one.shape == (1,) and float(one[0]) == 1.0
    for ode, N in ((odeint, jnp), (jodeint, jnp_)):
        with pytest.raises(TypeError, match="must be arrays or scalars"):
            ode(decay(N), np.float32(1.0), TS, "k")
