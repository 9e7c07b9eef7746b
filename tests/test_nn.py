"""wjax.nn against JAX (and NumPy): activations, normalizers, one_hot, initializers, gradients.

Fixed expected values come from JAX 0.10.2, so CI checks them without JAX.
"""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import nn, random

X = np.array([-3., -0.5, 0., 0.5, 2., 8.], np.float32)


def close(a, b, rtol=2e-6, atol=2e-6):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_fixed_values():
    x = jnp.asarray(X)
    want = {
        "gelu": [
            -0.003637343645095825,
            -0.1542859971523285,
            0.0,
            0.3457140028476715,
            1.9545977115631104,
            8.0,
        ],
        "selu": [
            -1.670568823814392,
            -0.6917582154273987,
            0.0,
            0.5253505110740662,
            2.1014020442962646,
            8.405608177185059,
        ],
        "softplus": [
            0.04858735203742981,
            0.4740769863128662,
            0.6931471824645996,
            0.9740769863128662,
            2.1269280910491943,
            8.000335693359375,
        ],
        "log_sigmoid": [
            -3.0485873222351074,
            -0.9740769863128662,
            -0.6931471824645996,
            -0.4740769863128662,
            -0.12692800164222717,
            -0.00033540636650286615,
        ],
        "silu": [
            -0.14227762818336487,
            -0.1887703388929367,
            0.0,
            0.3112296760082245,
            1.7615940570831299,
            7.997317314147949,
        ],
        "elu": [-0.9502129554748535, -0.39346933364868164, 0.0, 0.5, 2.0, 8.0],
        "softmax": [
            1.6641997717670165e-05,
            0.0002027410373557359,
            0.0003342634590808302,
            0.0005511072813533247,
            0.0024698914494365454,
            0.9964253306388855,
        ],
    }
    for name, w in want.items():
        close(getattr(nn, name)(x), np.array(w, np.float32), rtol=1e-5)
    close(
        nn.gelu(x, approximate=False),
        np.array(
            [
                -0.0040496960282325745,
                -0.1542687714099884,
                0.0,
                0.3457312285900116,
                1.9544997215270996,
                8.0,
            ],
            np.float32,
        ),
        rtol=1e-5,
    )
    close(nn.relu(x), np.maximum(X, 0))
    close(nn.relu6(jnp.array([-1., 3., 7.])), np.array([0., 3., 6.], np.float32))


ACTIVATIONS = ["relu", "relu6", "sigmoid", "softplus", "silu", "swish", "gelu", "elu", "leaky_relu",
               "celu", "selu", "log_sigmoid", "hard_tanh", "hard_sigmoid", "hard_silu", "soft_sign",
               "squareplus", "sparse_plus", "sparse_sigmoid", "mish"]


def test_activations_vs_jax():
    jax = pytest.importorskip("jax")
    x = np.concatenate([X, np.linspace(-12, 12, 25, dtype=np.float32), [-100.0, 100.0]]).astype(
        np.float32
    )
    for name in ACTIVATIONS:
        close(getattr(nn, name)(jnp.asarray(x)), getattr(jax.nn, name)(x), rtol=1e-5, atol=1e-6)
    close(
        nn.gelu(jnp.asarray(x), approximate=False),
        jax.nn.gelu(x, approximate=False),
        rtol=1e-5,
        atol=1e-6,
    )
    close(nn.elu(jnp.asarray(x), 0.3), jax.nn.elu(x, 0.3), rtol=1e-5, atol=1e-6)
    close(nn.celu(jnp.asarray(x), 2.0), jax.nn.celu(x, 2.0), rtol=1e-5, atol=1e-6)
    close(nn.leaky_relu(jnp.asarray(x), 0.2), jax.nn.leaky_relu(x, 0.2), rtol=1e-5, atol=1e-6)
    m = np.arange(12, dtype=np.float32).reshape(3, 4) / 3 - 2
    close(nn.glu(jnp.asarray(m)), jax.nn.glu(m), rtol=1e-5)
    close(nn.glu(jnp.asarray(m.T), axis=0), jax.nn.glu(m.T, axis=0), rtol=1e-5)


def test_normalizers_vs_jax():
    jax = pytest.importorskip("jax")
    # up to 280: exp overflows
    m = (np.arange(15, dtype=np.float32).reshape(3, 5) - 7) * np.float32(40)
    for axis in (-1, 0, None, (0, 1)):
        close(
            nn.softmax(jnp.asarray(m), axis=axis),
            jax.nn.softmax(m, axis=axis),
            rtol=1e-5,
            atol=1e-7,
        )
        close(
            nn.log_softmax(jnp.asarray(m), axis=axis),
            jax.nn.log_softmax(m, axis=axis),
            rtol=1e-5,
            atol=1e-5,
        )
        close(nn.logsumexp(jnp.asarray(m), axis=axis), jax.nn.logsumexp(m, axis=axis), rtol=1e-6)
    where = np.array([[True, False, True, True, False]] * 3)
    close(
        nn.softmax(jnp.asarray(m), where=jnp.asarray(where)),
        jax.nn.softmax(m, where=where),
        rtol=1e-5,
    )
    close(nn.standardize(jnp.asarray(m)), jax.nn.standardize(m), rtol=1e-4, atol=1e-5)
    close(nn.standardize(jnp.asarray(m), axis=0, algorithm="stable"),
          jax.nn.standardize(m, axis=0, algorithm="stable"), rtol=1e-4, atol=1e-5)
    close(nn.logmeanexp(jnp.asarray(m), axis=1), jax.nn.logmeanexp(m, axis=1), rtol=1e-5)


def test_softmax_large_inputs_are_finite():
    x = jnp.array([1000., 1000., -1000.])
    close(nn.softmax(x), np.array([0.5, 0.5, 0.], np.float32))
    close(nn.log_softmax(x)[:2], np.array([-np.log(2)] * 2, np.float32))
    close(nn.logsumexp(x), np.float32(1000 + np.log(2)))


def test_one_hot():
    got = nn.one_hot(jnp.array([0, 2, 5, -1]), 3)
    want = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]], np.float32)
    close(got, want)
    close(nn.one_hot(jnp.array([1, 0]), 3, axis=0), np.eye(3, dtype=np.float32)[[1, 0]].T.copy())
    got = nn.one_hot(jnp.array([[1], [2]]), 4, dtype=jnp.int32)
    assert got.shape == (2, 1, 4) and got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got)[:, 0], np.eye(4, dtype=np.int32)[[1, 2]])


def test_initializers_fixed_and_vs_jax():
    from wjax.nn import initializers as I
    k = random.key(0)
    close(I.glorot_uniform()(k, (2, 3)),
          np.array([[0.980789303779602, 1.048516035079956, -0.3674309551715851],
                    [-0.0686439648270607, 0.15311850607395172, -0.732846200466156]], np.float32))
    close(I.he_normal()(k, (2, 3)),
          np.array([[1.6552032232284546, 1.9494074583053589, -0.4691488444805145],
                    [-0.08530155569314957, 0.19099149107933044, -1.0375028848648071]], np.float32),
          rtol=1e-5)
    close(I.zeros(k, (2, 2)), np.zeros((2, 2), np.float32))
    close(I.ones(k, (3,)), np.ones(3, np.float32))
    close(I.constant(2.5)(k, (2,)), np.full(2, 2.5, np.float32))
    jax = pytest.importorskip("jax")
    kj = jax.random.key(0)
    JI = jax.nn.initializers
    for name in ["glorot_uniform", "lecun_uniform", "he_uniform"]:
        np.testing.assert_array_equal(np.asarray(getattr(I, name)()(k, (4, 5))),
                                      np.asarray(getattr(JI, name)()(kj, (4, 5))))
    for name in ["glorot_normal", "lecun_normal", "he_normal", "xavier_normal", "kaiming_normal"]:
        close(getattr(I, name)()(k, (4, 5)), getattr(JI, name)()(kj, (4, 5)), rtol=1e-5)
    close(I.uniform(0.5)(k, (3, 3)), JI.uniform(0.5)(kj, (3, 3)))
    close(I.normal(2.0)(k, (3, 3)), JI.normal(2.0)(kj, (3, 3)), rtol=1e-5)
    close(I.truncated_normal(0.1)(k, (3, 3)), JI.truncated_normal(0.1)(kj, (3, 3)), rtol=1e-5)
    close(I.variance_scaling(0.5, "fan_out", "normal")(k, (2, 3, 4)),
          JI.variance_scaling(0.5, "fan_out", "normal")(kj, (2, 3, 4)), rtol=1e-5)


def test_gradients():
    g = wjax.vmap(wjax.grad(nn.relu))(jnp.array([-1., 0., 2.]))
    close(g, np.array([0., 0., 1.], np.float32))
    g = wjax.vmap(wjax.grad(nn.relu6))(jnp.array([0., 3., 6., 7.]))
    close(g, np.array([0., 1., 0., 0.], np.float32))
    g = wjax.grad(lambda v: nn.logsumexp(v))(jnp.array([1000., 1000.]))
    close(g, np.array([0.5, 0.5], np.float32))
    g = wjax.grad(lambda v: nn.softmax(v)[0])(jnp.array([1000., 1000.]))
    close(g, np.array([0.25, -0.25], np.float32))
    g = wjax.grad(lambda v: jnp.sum(nn.log_softmax(v)))(jnp.array([1000., 0.]))
    close(g, np.array([-1., 1.], np.float32))


def test_gradients_vs_jax():
    jax = pytest.importorskip("jax")
    x = np.array([-2.5, -0.3, 0.4, 1.7, 5.], np.float32)
    for name in [
        "sigmoid",
        "softplus",
        "silu",
        "gelu",
        "elu",
        "selu",
        "log_sigmoid",
        "celu",
        "mish",
    ]:
        g = wjax.grad(lambda v: jnp.sum(getattr(nn, name)(v)))(jnp.asarray(x))
        gj = jax.grad(lambda v: jax.numpy.sum(getattr(jax.nn, name)(v)))(x)
        close(g, gj, rtol=1e-5, atol=1e-6)
    g = wjax.grad(lambda v: jnp.sum(nn.gelu(v, approximate=False)))(jnp.asarray(x))
    close(
        g,
        jax.grad(lambda v: jax.numpy.sum(jax.nn.gelu(v, approximate=False)))(x),
        rtol=1e-5,
        atol=1e-6,
    )
    w = np.array([0.3, -1., 2., 0.5, 0.1], np.float32)
    g = wjax.grad(lambda v: jnp.sum(nn.softmax(v) * w))(jnp.asarray(x))
    close(g, jax.grad(lambda v: jax.numpy.sum(jax.nn.softmax(v) * w))(x), rtol=1e-5, atol=1e-6)
