"""jax.example_libraries (stax, optimizers) against JAX's own: the same key gives the same
parameters and outputs for every layer and combinator, and every optimizer and schedule
takes the same steps (tests/programs/stax_mnist.py trains a CNN both ways)."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.example_libraries import optimizers as jopt
from jax.example_libraries import stax as jstax

import wjax
import wjax.numpy as jnp
from wjax.example_libraries import optimizers as wopt
from wjax.example_libraries import stax as wstax

IMG = np.random.RandomState(0).randn(2, 6, 6, 3).astype(np.float32)
VEC = np.random.RandomState(1).randn(4, 5).astype(np.float32)

LAYERS = {
    "dense": (lambda s: s.Dense(7), VEC),
    "conv": (lambda s: s.Conv(4, (3, 3), strides=(2, 1), padding="SAME"), IMG),
    "conv_transpose": (lambda s: s.ConvTranspose(2, (3, 3), strides=(2, 2)), IMG),
    "conv1d_transpose": (lambda s: s.Conv1DTranspose(2, (3,), padding="SAME"), IMG[:, 0]),
    "batchnorm": (lambda s: s.BatchNorm(), IMG),
    "maxpool": (lambda s: s.MaxPool((2, 2), strides=(2, 2)), IMG),
    "avgpool_same": (lambda s: s.AvgPool((3, 3), padding="SAME"), IMG),
    "sumpool": (lambda s: s.SumPool((2, 3)), IMG),
    "serial": (lambda s: s.serial(s.Conv(4, (3, 3)), s.Relu, s.Flatten, s.Dense(3),
                                  s.LogSoftmax), IMG),
    "parallel_fan": (lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Dense(3)),
                                        s.FanInSum, s.Tanh), VEC),
    "fan_concat": (lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(2), s.Identity),
                                      s.FanInConcat(), s.Gelu, s.Softmax), VEC),
    "elementwise": (lambda s: s.serial(s.Elu, s.LeakyRelu, s.Selu, s.Sigmoid, s.Softplus,
                                       s.Exp), VEC),
    "shape_dependent": (lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1])), VEC),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_jax(name):
    make, x = LAYERS[name]
    outs = []
    for s, jx in ((wstax, wjax), (jstax, jax)):
        init, apply = make(s)
        shape, params = init(jx.random.PRNGKey(1), x.shape)
        outs.append((tuple(shape), params, apply(params, x)))
    (ws, wp, wo), (js, jp, jo) = outs
    assert ws == js
    for a, b in zip(jax.tree_util.tree_leaves((wp, wo)), jax.tree_util.tree_leaves((jp, jo))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5)


def test_dropout_needs_a_key_and_keeps_jax_mask():
    x = np.ones((3, 4), np.float32)
    got = wstax.Dropout(0.5)[1]((), x, rng=wjax.random.PRNGKey(2))
    want = jstax.Dropout(0.5)[1]((), x, rng=jax.random.PRNGKey(2))
    np.testing.assert_allclose(got, want)
    with pytest.raises(ValueError, match="PRNG key"):
        wstax.Dropout(0.5)[1]((), x)


def _quadratic_run(opt_mod, np_, make):
    init, update, get_params = make(opt_mod)
    params = {"w": np_.array([1.0, -2.0, 3.0]), "b": np_.array([[0.5, 0.25], [1.0, 2.0]])}
    state = init(params)
    for i in range(4):
        p = get_params(state)
        grads = {k: 2 * v + 0.1 * (i + 1) for k, v in p.items()}
        state = update(i, grads, state)
    # the state survives unpack/pack (JAX's way to pickle it)
    repacked = opt_mod.pack_optimizer_state(opt_mod.unpack_optimizer_state(state))
    return get_params(state), get_params(repacked)


OPTS = {
    "sgd": lambda o: o.sgd(0.1),
    "momentum": lambda o: o.momentum(0.1, 0.9),
    "nesterov": lambda o: o.nesterov(o.exponential_decay(0.1, 2, 0.5), 0.9),
    "adagrad": lambda o: o.adagrad(0.1),
    "rmsprop": lambda o: o.rmsprop(o.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.05),
    "adam": lambda o: o.adam(o.polynomial_decay(0.1, 3, 0.01)),
    "adamax": lambda o: o.adamax(o.piecewise_constant([1, 2], [0.1, 0.05, 0.01])),
    "sm3": lambda o: o.sm3(0.1),
}


@pytest.mark.parametrize("name", sorted(OPTS))
def test_optimizer_matches_jax(name):
    (wp, wr), (jp, _) = (_quadratic_run(wopt, jnp, OPTS[name]),
                         _quadratic_run(jopt, jjnp, OPTS[name]))
    for a, b, c in zip(jax.tree_util.tree_leaves(wp), jax.tree_util.tree_leaves(jp),
                       jax.tree_util.tree_leaves(wr)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))


def test_clip_grads_and_l2_norm_match_jax():
    g = {"a": np.array([3.0, 4.0], np.float32), "b": np.array([12.0], np.float32)}
    np.testing.assert_allclose(wopt.l2_norm(g), jopt.l2_norm(g))
    for a, b in zip(jax.tree_util.tree_leaves(wopt.clip_grads(g, 5.0)),
                    jax.tree_util.tree_leaves(jopt.clip_grads(g, 5.0))):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_optimizer_state_through_jit_and_bad_trees():
    init, update, get_params = wopt.adam(0.1)
    state = init({"w": jnp.ones(3)})
    state = wjax.jit(update)(0, {"w": jnp.ones(3)}, state)
    np.testing.assert_allclose(get_params(state)["w"], np.full(3, 0.9), rtol=1e-5)
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        update(1, {"v": jnp.ones(3)}, state)
    with pytest.raises(ValueError, match="one shorter"):
        wopt.piecewise_constant([1, 2], [0.1])
