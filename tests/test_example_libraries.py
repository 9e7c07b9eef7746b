"""jax.example_libraries (stax, optimizers) against JAX's own, in one process: the same key
gives the same parameters and outputs for every layer and combinator (Dropout's masks too),
and every optimizer and schedule takes the same steps, eagerly and under jit
(tests/programs/stax_mnist.py trains a CNN both ways)."""
import pickle

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

IMG = np.random.RandomState(0).randn(2, 6, 6, 3).astype(np.float32)      # NHWC
IMG_NCHW = np.ascontiguousarray(IMG.transpose(0, 3, 1, 2))
VEC = np.random.RandomState(1).randn(4, 5).astype(np.float32)
NCHW = ("NCHW", "OIHW", "NCHW")

# name -> (layer built from a stax module, input, whether apply gets rng=)
LAYERS = {
    "dense": (lambda s: s.Dense(7), VEC, False),
    "dense_old_initializer_names": (lambda s: s.Dense(3, W_init=s.randn(0.5), b_init=s.zeros),
                                    VEC, False),
    "conv": (lambda s: s.Conv(4, (3, 3), strides=(2, 1), padding="SAME"), IMG, False),
    "general_conv_nchw": (lambda s: s.GeneralConv(NCHW, 3, (2, 2), strides=(1, 2),
                                                  padding=[(1, 0), (0, 1)]), IMG_NCHW, False),
    "conv_transpose": (lambda s: s.ConvTranspose(2, (3, 3), strides=(2, 2)), IMG, False),
    "general_conv_transpose_nchw": (
        lambda s: s.GeneralConvTranspose(("NCHW", "IOHW", "NCHW"), 2, (3, 2), strides=(2, 1),
                                         padding="SAME"), IMG_NCHW, False),
    "conv1d_transpose": (lambda s: s.Conv1DTranspose(2, (3,), padding="SAME"), IMG[:, 0], False),
    "batchnorm": (lambda s: s.BatchNorm(), IMG, False),
    "batchnorm_axis0_no_scale": (lambda s: s.BatchNorm(axis=0, scale=False,
                                                       beta_init=s.normal(1.0)), VEC, False),
    "batchnorm_no_center": (lambda s: s.BatchNorm((0, 1), center=False,
                                                  gamma_init=s.normal(1.0)), IMG, False),
    "batchnorm_plain": (lambda s: s.BatchNorm(center=False, scale=False), IMG, False),
    "maxpool": (lambda s: s.MaxPool((2, 2), strides=(2, 2)), IMG, False),
    "maxpool_nchw_spec": (lambda s: s.MaxPool((2, 3), spec="NCHW"), IMG_NCHW, False),
    "avgpool_same": (lambda s: s.AvgPool((3, 3), padding="SAME"), IMG, False),
    "avgpool_same_nchw_spec": (lambda s: s.AvgPool((3, 2), strides=(2, 1), padding="SAME",
                                                   spec="NCHW"), IMG_NCHW, False),
    "sumpool": (lambda s: s.SumPool((2, 3)), IMG, False),
    "identity": (lambda s: s.Identity, VEC, False),
    "flatten": (lambda s: s.Flatten, IMG, False),
    "serial": (lambda s: s.serial(s.Conv(4, (3, 3)), s.Relu, s.Flatten, s.Dense(3),
                                  s.LogSoftmax), IMG, False),
    "parallel_fan_in_sum": (lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Dense(3)),
                                               s.FanInSum, s.Tanh), VEC, False),
    "fan_in_concat": (lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(2), s.Identity),
                                         s.FanInConcat(), s.Gelu, s.Softmax), VEC, False),
    "fan_in_concat_axis0": (lambda s: s.serial(s.FanOut(3), s.parallel(s.Identity, s.Exp,
                                                                        s.Sigmoid),
                                               s.FanInConcat(0)), VEC, False),
    "elementwise": (lambda s: s.serial(s.Elu, s.LeakyRelu, s.Selu, s.Sigmoid, s.Softplus,
                                       s.Exp), VEC, False),
    "elementwise_custom": (lambda s: s.elementwise(s.leaky_relu, negative_slope=0.3), VEC,
                           False),
    "shape_dependent": (lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1])), VEC,
                        False),
    # the keys serial and parallel split for their layers reach Dropout in JAX's order
    "serial_dropout": (lambda s: s.serial(s.Dense(6), s.Dropout(0.7), s.Relu, s.Dense(4),
                                          s.Dropout(0.5)), VEC, True),
    "parallel_dropout": (lambda s: s.serial(s.FanOut(3), s.parallel(s.Dropout(0.5),
                                                                     s.Dropout(0.8),
                                                                     s.Dropout(0.5, "test")),
                                            s.FanInConcat()), VEC, True),
}


def _tree_leaves(tree):
    return jax.tree_util.tree_leaves(tree)


def _build(stax_mod, lib, name):
    make, x, with_rng = LAYERS[name]
    init, apply = make(stax_mod)
    shape, params = init(lib.random.PRNGKey(1), x.shape)
    kwargs = {"rng": lib.random.PRNGKey(7)} if with_rng else {}
    return shape, params, apply(params, x, **kwargs)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_jax(name):
    ws, wp, wo = _build(wstax, wjax, name)
    js, jp, jo = _build(jstax, jax, name)
    assert tuple(ws) == tuple(js)
    assert tuple(wo.shape) == tuple(js) == tuple(jo.shape)
    assert jax.tree_util.tree_structure(wp) == jax.tree_util.tree_structure(jp)
    for a, b in zip(_tree_leaves(wp), _tree_leaves(jp)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(wo), np.asarray(jo), rtol=1e-5, atol=1e-6)


def test_parallel_alone_gives_lists_like_jax():
    def run(s, lib):
        init, apply = s.parallel(s.Dense(2), s.Relu, s.BatchNorm(axis=0))
        shapes, params = init(lib.random.PRNGKey(3), [VEC.shape] * 3)
        return list(shapes), list(params), apply(params, [VEC, VEC, VEC])
    (ws, wp, wo), (js, jp, jo) = run(wstax, wjax), run(jstax, jax)
    assert ws == js and len(wo) == len(jo) == 3
    for a, b in zip(_tree_leaves((wp, wo)), _tree_leaves((jp, jo))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_jit_grad_through_a_network_matches_jax():
    def grads(s, lib, np_):
        init, apply = s.serial(s.Conv(3, (2, 2)), s.BatchNorm(), s.Relu, s.AvgPool((2, 2)),
                               s.Flatten, s.Dense(4), s.LogSoftmax)
        _, params = init(lib.random.PRNGKey(0), IMG.shape)
        loss = lambda p, x: -np_.mean(apply(p, x)[:, 1])
        return lib.jit(lib.value_and_grad(loss))(params, IMG)
    (wl, wg), (jl, jg) = grads(wstax, wjax, jnp), grads(jstax, jax, jjnp)
    np.testing.assert_allclose(float(wl), float(jl), rtol=1e-5)
    leaves = list(zip(_tree_leaves(wg), _tree_leaves(jg)))
    assert len(leaves) == 6     # conv, batchnorm, dense: two each
    for a, b in leaves:
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)


def test_dropout_needs_a_key_and_keeps_jax_mask():
    x = np.ones((3, 4), np.float32)
    got = wstax.Dropout(0.5)[1]((), x, rng=wjax.random.PRNGKey(2))
    want = jstax.Dropout(0.5)[1]((), x, rng=jax.random.PRNGKey(2))
    np.testing.assert_allclose(got, want)
    assert 0 < int(np.sum(np.asarray(got) == 0)) < x.size
    np.testing.assert_array_equal(
        wstax.Dropout(0.5, mode="test")[1]((), x, rng=wjax.random.PRNGKey(2)), x)
    for mode in ("train", "test"):    # as in JAX, even the test mode wants a key
        with pytest.raises(ValueError, match="PRNG key"):
            wstax.Dropout(0.5, mode)[1]((), x)


@pytest.mark.parametrize("mod", ["stax", "optimizers"])
def test_public_names_are_jax(mod):
    theirs, ours = getattr(jax.example_libraries, mod), getattr(wjax.example_libraries, mod)
    # JAX's optimizers also shows the modules and helpers it imports (jax, safe_map, ...)
    helpers = {"jax", "map", "zip", "partial", "safe_map", "safe_zip", "unzip2"}
    want = {n for n in dir(theirs) if not n.startswith("_")} - helpers
    have = {n for n in dir(ours) if not n.startswith("_")}
    assert want <= have, sorted(want - have)


def _quadratic_run(opt_mod, lib, make, jit):
    np_ = lib.numpy
    init, update, get_params = make(opt_mod)
    if jit:
        update = lib.jit(update)
    params = {"w": np_.array([1.0, -2.0, 3.0]), "b": np_.array([[0.5, 0.25], [1.0, 2.0]]),
              "s": np_.float32(0.75)}
    state = init(params)
    for i in range(5):
        p = get_params(state)
        grads = {k: 2 * v + 0.1 * (i + 1) for k, v in p.items()}
        state = update(i, grads, state)
    # the state survives unpack/pack (JAX's way to serialize it), through pickle too
    unpacked = pickle.loads(pickle.dumps(opt_mod.unpack_optimizer_state(state)))
    repacked = opt_mod.pack_optimizer_state(unpacked)
    return state, get_params(state), get_params(repacked)


OPTS = {
    "sgd": lambda o: o.sgd(0.1),
    "sgd_constant": lambda o: o.sgd(o.constant(0.2)),
    "momentum": lambda o: o.momentum(0.1, 0.9),
    "nesterov": lambda o: o.nesterov(o.exponential_decay(0.1, 2, 0.5), 0.9),
    "adagrad": lambda o: o.adagrad(0.1),
    "adagrad_inverse_time": lambda o: o.adagrad(o.inverse_time_decay(0.1, 2, 0.5), 0.5),
    "rmsprop": lambda o: o.rmsprop(o.inverse_time_decay(0.1, 2, 0.5, staircase=True)),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.05, gamma=0.8, momentum=0.7),
    "adam": lambda o: o.adam(o.polynomial_decay(0.1, 3, 0.01)),
    "adam_poly_power": lambda o: o.adam(o.polynomial_decay(0.1, 4, 0.01, power=2.0), b1=0.8),
    "adamax": lambda o: o.adamax(o.piecewise_constant([1, 2], [0.1, 0.05, 0.01])),
    "sm3": lambda o: o.sm3(0.1),
}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(OPTS))
def test_optimizer_matches_jax(name, jit):
    wstate, wp, wr = _quadratic_run(wopt, wjax, OPTS[name], jit)
    jstate, jp, _ = _quadratic_run(jopt, jax, OPTS[name], jit)
    assert sorted(wp) == sorted(jp) == ["b", "s", "w"]
    for k in wp:
        assert np.shape(wp[k]) == np.shape(jp[k])
        np.testing.assert_allclose(np.asarray(wp[k]), np.asarray(jp[k]), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(wp[k]), np.asarray(wr[k]))
    # the whole state (moments, accumulators), leaf by leaf, is JAX's
    wl, jl = wjax.tree_util.tree_leaves(wstate), _tree_leaves(jstate)
    assert len(wl) == len(jl)
    for a, b in zip(wl, jl):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,make", [
    ("constant", lambda o: o.constant(0.3)),
    ("exponential_decay", lambda o: o.exponential_decay(0.3, 4, 0.2)),
    ("inverse_time_decay", lambda o: o.inverse_time_decay(0.3, 3, 0.7)),
    ("inverse_time_decay_staircase", lambda o: o.inverse_time_decay(0.3, 3, 0.7, True)),
    ("polynomial_decay", lambda o: o.polynomial_decay(0.3, 5, 0.05, power=0.5)),
    ("piecewise_constant", lambda o: o.piecewise_constant([2, 5], [0.3, 0.1, 0.02])),
    ("make_schedule", lambda o: o.make_schedule(0.25)),
])
def test_schedules_match_jax(name, make):
    ws, js = make(wopt), make(jopt)
    steps = [0, 1, 2, 3, 5, 6, 9]
    want = [float(js(i)) for i in steps]
    np.testing.assert_allclose([float(ws(i)) for i in steps], want, rtol=1e-6)
    # and with the step traced, as inside a jitted update
    np.testing.assert_allclose([float(wjax.jit(ws)(i)) for i in steps], want, rtol=1e-6)


def test_clip_grads_and_l2_norm_match_jax():
    g = {"a": np.array([3.0, 4.0], np.float32), "b": np.array([[12.0]], np.float32)}
    np.testing.assert_allclose(wopt.l2_norm(g), jopt.l2_norm(g), rtol=1e-6)
    np.testing.assert_allclose(wopt.l2_norm(g), 13.0, rtol=1e-6)
    for max_norm in (5.0, 100.0):
        for a, b in zip(_tree_leaves(wopt.clip_grads(g, max_norm)),
                        _tree_leaves(jopt.clip_grads(g, max_norm))):
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(a, b, rtol=1e-6)


def test_unpacked_state_is_shaped_like_params():
    init, update, get_params = wopt.momentum(0.1, 0.9)
    state = init({"w": jnp.ones(2), "v": [jnp.zeros(3)]})
    unpacked = wopt.unpack_optimizer_state(state)
    assert sorted(unpacked) == ["v", "w"] and isinstance(unpacked["v"][0], wopt.JoinPoint)
    x, velocity = unpacked["w"].subtree
    np.testing.assert_array_equal(x, np.ones(2))
    np.testing.assert_array_equal(velocity, np.zeros(2))
    with pytest.raises(AssertionError):
        wopt.pack_optimizer_state({"w": 1.0})


def test_optimizer_state_through_jit_and_bad_trees():
    init, update, get_params = wopt.adam(0.1)
    state = init({"w": jnp.ones(3)})
    state = wjax.jit(update)(0, {"w": jnp.ones(3)}, state)
    assert isinstance(state, wopt.OptimizerState)
    np.testing.assert_allclose(get_params(state)["w"], np.full(3, 0.9), rtol=1e-5)
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        update(1, {"v": jnp.ones(3)}, state)
    with pytest.raises(ValueError, match="one shorter"):
        wopt.piecewise_constant([1, 2], [0.1])
    with pytest.raises(ValueError, match="sequences"):
        wopt.piecewise_constant(1, [0.1, 0.2])
    with pytest.raises(TypeError):
        wopt.sgd([0.1, 0.2])


def test_custom_optimizer_decorator_checks_update_structure():
    @wopt.optimizer
    def broken(step_size):
        return (lambda x0: (x0, x0), lambda i, g, s: (s[0] - step_size * g,), lambda s: s[0])
    init, update, get_params = broken(0.1)
    state = init([jnp.ones(2)])
    with pytest.raises(TypeError, match="did not match its input structure"):
        update(0, [jnp.ones(2)], state)
