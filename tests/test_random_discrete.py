"""wjax.random.poisson, binomial and multinomial against JAX 0.10.2.

The samplers follow JAX's algorithms step by step (the same key splits, uniforms and float32
arithmetic), so the same key gives JAX's counts.  Their rejection loops compare against
``log`` and ``lgamma``, which on wjax's backend may differ from XLA's by an ulp or two, so a
decision can rarely flip: draws are required to match JAX for at least 99% of the samples,
and their moments are checked against the distribution.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import random

N = 1000


@contextlib.contextmanager
def threefry_mode(partitionable, jax):
    old, old_j = wjax.config.jax_threefry_partitionable, jax.config.jax_threefry_partitionable
    wjax.config.update("jax_threefry_partitionable", partitionable)
    jax.config.update("jax_threefry_partitionable", partitionable)
    try:
        yield
    finally:
        wjax.config.update("jax_threefry_partitionable", old)
        jax.config.update("jax_threefry_partitionable", old_j)


def _equal(a, b):
    if a.dtype.kind == "f":
        return (a == b) | (np.isnan(a) & np.isnan(b))
    return a == b


def same(ours, theirs, min_frac=1.0):
    """``ours`` has JAX's shape and dtype, and equals it on at least ``min_frac`` of entries."""
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    frac = _equal(a, b).mean() if a.size else 1.0
    assert frac >= min_frac, (frac, a[~_equal(a, b)][:10], b[~_equal(a, b)][:10])
    return frac


def moments(x, mean, var, n_sigma=5.0, var_rtol=0.15):
    """The sample mean within ``n_sigma`` standard errors, the variance within ``var_rtol``."""
    x = np.asarray(x, np.float64)
    assert abs(x.mean() - mean) <= n_sigma * np.sqrt(var / x.size) + 1e-9, (x.mean(), mean)
    assert abs(x.var() - var) <= var_rtol * var + 1e-9, (x.var(), var)


# --------------------------------------------------------------------------- poisson

@pytest.mark.parametrize("lam", [0.5, 4.0, 9.9, 10.0, 50.0, 1e3])
def test_poisson_matches_jax(lam):
    jax = pytest.importorskip("jax")
    ours = random.poisson(random.key(3), lam, (N,))
    same(ours, jax.random.poisson(jax.random.key(3), lam, (N,)), min_frac=0.99)
    assert ours.dtype == np.int32 and ours.shape == (N,)
    moments(ours, lam, lam)


def test_poisson_statistics():
    for lam in (2.0, 25.0, 400.0):   # Knuth, and the rejection branch twice
        x = np.asarray(random.poisson(random.key(11), lam, (4000,)))
        assert (x >= 0).all()
        moments(x, lam, lam, var_rtol=0.1)


def test_poisson_edges_dtypes_and_broadcasting():
    jax = pytest.importorskip("jax")
    jr = jax.random
    k, kj = random.key(5), jr.key(5)
    lam = np.array([0.0, -1.0, np.nan, np.inf, 3.0, 12.0, 1e-3], np.float32)
    same(random.poisson(k, jnp.asarray(lam)), jr.poisson(kj, lam))
    for dt in (np.int8, np.uint32):
        same(random.poisson(k, 6.0, (50,), dt), jr.poisson(kj, 6.0, (50,), dt))
    rates = np.array([1.0, 8.0, 30.0], np.float32)
    same(random.poisson(k, jnp.asarray(rates), (4, 3)), jr.poisson(kj, rates, (4, 3)))
    same(random.poisson(k, 7), jr.poisson(kj, 7))
    # raw keys give the typed keys' values
    same(random.poisson(random.PRNGKey(5), 3.0, (8,)), jr.poisson(kj, 3.0, (8,)))


# --------------------------------------------------------------------------- binomial

BINOMIAL_CASES = [(5.0, 0.3), (20.0, 0.5), (100.0, 0.05), (100.0, 0.3), (1000.0, 0.7),
                  (30.5, 0.9), (1e5, 0.4)]


@pytest.mark.parametrize("n,p", BINOMIAL_CASES)
def test_binomial_matches_jax(n, p):
    jax = pytest.importorskip("jax")
    ours = random.binomial(random.key(7), n, p, (N,))
    same(ours, jax.random.binomial(jax.random.key(7), n, p, (N,)), min_frac=0.99)
    assert ours.dtype == np.float32
    n_ = np.floor(n)
    moments(ours, n_ * p, n_ * p * (1 - p))


def test_binomial_edges_dtypes_and_broadcasting():
    jax = pytest.importorskip("jax")
    jr = jax.random
    k, kj = random.key(2), jr.key(2)
    n = np.array([-1.0, np.nan, 0.0, np.inf, 5.0, 20.0, 5.0, 5.0, 5.0, 30.5], np.float32)
    p = np.array([0.3, 0.3, 0.3, 0.3, np.nan, -0.1, 1.0, 0.0, 1.5, 0.7], np.float32)
    same(random.binomial(k, jnp.asarray(n), jnp.asarray(p)), jr.binomial(kj, n, p))
    ns = np.array([3.0, 40.0, 400.0], np.float32)
    same(random.binomial(k, jnp.asarray(ns), 0.25, (5, 3)), jr.binomial(kj, ns, 0.25, (5, 3)))
    same(random.binomial(k, jnp.asarray(ns)[:, None], jnp.asarray([0.1, 0.8]), None),
         jr.binomial(kj, ns[:, None], np.array([0.1, 0.8], np.float32), None))
    same(random.binomial(k, 5, 1), jr.binomial(kj, 5, 1))
    same(random.binomial(k, 12.0, 0.3, (6,), jnp.float16), jr.binomial(kj, 12.0, 0.3, (6,),
                                                                      np.float16))


# --------------------------------------------------------------------------- multinomial

def test_multinomial_matches_jax():
    jax = pytest.importorskip("jax")
    jr = jax.random
    k, kj = random.key(4), jr.key(4)
    p = np.array([0.2, 0.3, 0.5], np.float32)
    ours = random.multinomial(k, 100.0, jnp.asarray(p), shape=(300, 3))
    same(ours, jr.multinomial(kj, 100.0, p, shape=(300, 3)), min_frac=0.99)
    x = np.asarray(ours)
    assert (x.sum(-1) == 100).all()
    for j in range(3):
        moments(x[:, j], 100 * p[j], 100 * p[j] * (1 - p[j]), var_rtol=0.25)
    # n as an array, a row of p per n (each summing to 1)
    n = np.array([10.0, 100.0, 1000.0, 7.0], np.float32)
    ps = np.random.default_rng(0).dirichlet(np.ones(5), 4).astype(np.float32)
    ps /= ps.sum(-1, keepdims=True)
    ours = random.multinomial(k, jnp.asarray(n), jnp.asarray(ps))
    same(ours, jr.multinomial(kj, n, ps))
    np.testing.assert_array_equal(np.asarray(ours).sum(-1), n)
    # broadcasting n and p against shape, an integer result dtype
    same(random.multinomial(k, jnp.asarray(n[:2]), jnp.asarray(p), shape=(3, 2, 3),
                            dtype=jnp.int32),
         jr.multinomial(kj, n[:2], p, shape=(3, 2, 3), dtype=np.int32))
    same(random.multinomial(k, 5, jnp.asarray(p), unroll=0), jr.multinomial(kj, 5, p, unroll=0))


def test_multinomial_many_outcomes():
    """More than 16 outcomes: XLA sums the remaining mass in blocks of 16."""
    jax = pytest.importorskip("jax")
    p = np.random.default_rng(1).dirichlet(np.ones(20)).astype(np.float32)
    ours = random.multinomial(random.key(6), 500.0, jnp.asarray(p), shape=(40, 20))
    same(ours, jax.random.multinomial(jax.random.key(6), 500.0, p, shape=(40, 20)),
         min_frac=0.99)
    assert (np.asarray(ours).sum(-1) == 500).all()


@pytest.mark.parametrize("k", [3, 17, 300])
def test_reverse_cumsum_in_xlas_order(k):
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(k)
    x = (rng.random((k, 7)) * 10.0 ** rng.integers(-4, 4, (k, 7))).astype(np.float32)
    ours = wjax.jit(random.discrete._reverse_cumsum)(jnp.asarray(x))
    same(ours, jax.jit(lambda v: jax.lax.cumsum(v, 0, reverse=True))(x))


# --------------------------------------------------------------------------- transforms, modes

SAMPLERS = [
    ("poisson", lambda R, kk: R.poisson(kk, 30.0, (6,))),
    ("poisson_small", lambda R, kk: R.poisson(kk, 2.5, (6,))),
    ("binomial", lambda R, kk: R.binomial(kk, 60.0, 0.4, (6,))),
    ("binomial_small", lambda R, kk: R.binomial(kk, 6.0, 0.7, (6,))),
    ("multinomial", lambda R, kk: R.multinomial(kk, 40.0, np.array([0.25, 0.25, 0.5], np.float32),
                                                shape=(2, 3))),
]


@pytest.mark.parametrize("name,draw", SAMPLERS, ids=[s[0] for s in SAMPLERS])
def test_jit_and_vmap_agree_with_eager_and_jax(name, draw):
    jax = pytest.importorskip("jax")
    keys = random.split(random.key(8), 3)
    eager = np.stack([np.asarray(draw(random, keys[i])) for i in range(3)])
    same(wjax.jit(lambda kk: draw(random, kk))(keys[0]), eager[0])
    same(wjax.vmap(lambda kk: draw(random, kk))(keys), eager)
    same(wjax.jit(wjax.vmap(lambda kk: draw(random, kk)))(keys), eager)
    same(eager, jax.vmap(lambda kk: draw(jax.random, kk))(jax.random.split(jax.random.key(8), 3)))


def test_vmap_over_parameters():
    jax = pytest.importorskip("jax")
    jr = jax.random
    n = np.array([5.0, 50.0, 500.0], np.float32)
    ks, ksj = random.split(random.key(1), 3), jr.split(jr.key(1), 3)
    same(wjax.vmap(lambda kk, m: random.binomial(kk, m, 0.3, (4,)))(ks, jnp.asarray(n)),
         jax.vmap(lambda kk, m: jr.binomial(kk, m, 0.3, (4,)))(ksj, n))
    same(wjax.vmap(lambda kk, lam: random.poisson(kk, lam, (4,)))(ks, jnp.asarray(n)),
         jax.vmap(lambda kk, lam: jr.poisson(kk, lam, (4,)))(ksj, n))


def test_original_threefry_mode():
    jax = pytest.importorskip("jax")
    jr = jax.random
    with threefry_mode(False, jax):
        k, kj = random.key(9), jr.key(9)
        same(random.poisson(k, 20.0, (50,)), jr.poisson(kj, 20.0, (50,)))
        same(random.binomial(k, 50.0, 0.5, (50,)), jr.binomial(kj, 50.0, 0.5, (50,)))
        p = np.array([0.5, 0.5], np.float32)
        same(random.multinomial(k, 9.0, jnp.asarray(p)), jr.multinomial(kj, 9.0, p))


# --------------------------------------------------------------------------- errors

ERROR_CASES = [
    ("p_int_key", lambda R, m, k: R.poisson(3, 2.0)),
    ("p_bad_key_shape", lambda R, m, k: R.poisson(m.zeros(3, np.uint32), 2.0)),
    ("p_float_key", lambda R, m, k: R.poisson(m.zeros(2, np.float32), 2.0)),
    ("p_batched_key", lambda R, m, k: R.poisson(R.split(k), 2.0)),
    ("p_shape", lambda R, m, k: R.poisson(k, m.ones(3), (2,))),
    ("p_fewer_dims", lambda R, m, k: R.poisson(k, m.ones((2, 3)), (3,))),
    ("p_float_dtype", lambda R, m, k: R.poisson(k, 2.0, (3,), np.float32)),
    ("p_list", lambda R, m, k: R.poisson(k, [1.0, 2.0])),
    ("b_int_key", lambda R, m, k: R.binomial(3, 5.0, 0.3)),
    ("b_batched_key", lambda R, m, k: R.binomial(R.split(k), 5.0, 0.3)),
    ("b_int_dtype", lambda R, m, k: R.binomial(k, 5.0, 0.3, dtype=np.int32)),
    ("b_list", lambda R, m, k: R.binomial(k, [5.0], 0.3)),
    ("b_shape", lambda R, m, k: R.binomial(k, m.ones(3), 0.3, (2,))),
    ("b_params", lambda R, m, k: R.binomial(k, m.ones(3), m.ones(2) / 2)),
    ("m_int_key", lambda R, m, k: R.multinomial(3, 5.0, m.ones(3) / 3)),
    ("m_list", lambda R, m, k: R.multinomial(k, 5.0, [0.5, 0.5])),
    ("m_shape", lambda R, m, k: R.multinomial(k, 5.0, m.ones(3) / 3, shape=(2,))),
    ("m_n_shape", lambda R, m, k: R.multinomial(k, m.ones(4), m.ones(3) / 3, shape=(2, 3))),
    ("m_n_vs_p", lambda R, m, k: R.multinomial(k, m.ones(2), m.ones(3) / 3)),
    ("m_scalar_p", lambda R, m, k: R.multinomial(k, 5.0, m.float32(1.0))),
    ("m_unroll", lambda R, m, k: R.multinomial(k, 5.0, m.ones(3) / 3, unroll=-1)),
    ("m_positional_shape", lambda R, m, k: R.multinomial(k, 5.0, m.ones(3) / 3, (2, 3))),
]


@pytest.mark.parametrize("name,call", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_match_jax(name, call):
    jax = pytest.importorskip("jax")
    with pytest.raises(Exception) as theirs:
        call(jax.random, jax.numpy, jax.random.key(0))
    with pytest.raises(Exception) as ours:
        call(random, jnp, random.key(0))
    assert type(ours.value) is type(theirs.value) or isinstance(ours.value, theirs.type), (
        ours.value, theirs.value)


def test_public_names():
    for name in ("poisson", "binomial", "multinomial"):
        assert name in random.__all__ and callable(getattr(random, name))
