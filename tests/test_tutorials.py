"""JAX's quickstart run unchanged on wjax, answers compared with real JAX (and with values
recorded from JAX 0.10.2, so the test still checks something without JAX installed)."""
import numpy as np
import pytest

import wjax
import wjax.numpy as wjnp

RECORDED = [-1.4286, 2218.7, 0.25, 0.19661, 0.10499, -0.035326, 0.0, 0.0, 0.0, 0.0, -0.090858,
            0.0, 0.0, 0.0, -0.079962, -21.119]


def quickstart(jax, jnp):
    grad, jit, vmap, random = jax.grad, jax.jit, jax.vmap, jax.random
    out = []

    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    key = random.key(1701)
    x = random.normal(key, (1_000_000,))
    out.append(float(selu(x)[:3].sum()))
    out.append(float(jit(selu)(x).sum()))

    def sum_logistic(x):
        return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))

    x_small = jnp.arange(3.)
    out += list(np.asarray(grad(sum_logistic)(x_small)))
    out += list(np.asarray(grad(jit(grad(jit(grad(sum_logistic)))))(1.0)).ravel())

    def hessian(fun):
        return jit(jax.jacfwd(jax.jacrev(fun)))

    out += list(np.asarray(hessian(sum_logistic)(x_small)).ravel())
    key1, key2 = random.split(key)
    mat = random.normal(key1, (150, 100))
    batched_x = random.normal(key2, (10, 100))

    def apply_matrix(x):
        return jnp.dot(mat, x)

    @jit
    def vmap_batched_apply_matrix(batched_x):
        return vmap(apply_matrix)(batched_x)

    out.append(float(vmap_batched_apply_matrix(batched_x).sum()))
    return np.array(out)


def test_quickstart_matches_recorded_values():
    got = quickstart(wjax, wjnp)
    np.testing.assert_allclose(got, RECORDED, rtol=2e-4, atol=1e-5)


def test_quickstart_matches_real_jax():
    jax = pytest.importorskip("jax")
    want = quickstart(jax, jax.numpy)
    got = quickstart(wjax, wjnp)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
