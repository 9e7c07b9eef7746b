"""Real arrays over lavapipe's 128 MiB binding limit, one case per kernel family (slow: minutes
on a CPU adapter).  Run with ``bash scripts/test.sh --slow``; CI runs the same paths at small
sizes under a forced 1 MiB limit (``tests/test_big_arrays.py``)."""
from __future__ import annotations

import time

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

pytestmark = pytest.mark.slow

N = 40 * 2**20                        # 160 MiB of int32 / float32


def timed(name, f):
    t = time.perf_counter()
    out = f()
    np.asarray(out if not isinstance(out, tuple) else out[0])
    print(f"\n  {name}: {time.perf_counter() - t:.2f} s")
    return out


def test_elementwise_and_iota():
    got = np.asarray(timed("arange int32 160 MiB", lambda: jnp.arange(N, dtype=jnp.int32)))
    np.testing.assert_array_equal(got[2**25 - 2: 2**25 + 3], np.arange(2**25 - 2, 2**25 + 3))
    assert got[-1] == N - 1
    y = np.asarray(
        timed("ones * arange broadcast", lambda: jnp.ones((N // 1280, 1280)) * jnp.arange(1280.0))
    )
    np.testing.assert_array_equal(y[26214, 510:515], np.arange(510, 515, dtype=np.float32))
    np.testing.assert_array_equal(y[-1, -3:], [1277., 1278., 1279.])


def test_random_uniform_256_mib():
    u = np.asarray(
        timed("uniform 2^26", lambda: wjax.random.uniform(wjax.random.PRNGKey(0), (2**26,)))
    )
    assert not np.array_equal(u[2**25:], u[:2**25])
    rjax = pytest.importorskip("jax")
    want = np.asarray(rjax.random.uniform(rjax.random.PRNGKey(0), (2**26,)))
    np.testing.assert_array_equal(u, want)


def test_concatenate_and_reductions():
    a = np.random.default_rng(0).random(2**25, dtype=np.float32)
    c = timed(
        "concatenate 2 x 128 MiB",
        lambda: jnp.concatenate([jnp.asarray(a), jnp.asarray(a[::-1].copy())]),
    )
    cn = np.asarray(c)
    np.testing.assert_array_equal(cn[2**25:], a[::-1])
    x = jnp.asarray(np.random.default_rng(1).standard_normal(N).astype(np.float32))
    xn = np.asarray(x)
    np.testing.assert_allclose(
        float(timed("sum 40M", lambda: x.sum())), xn.astype(np.float64).sum(), rtol=1e-4, atol=1
    )
    np.testing.assert_allclose(
        float(timed("mean 40M", lambda: x.mean())), xn.astype(np.float64).mean(), atol=1e-5
    )
    assert float(timed("max 40M", lambda: x.max())) == xn.max()
    assert int(timed("argmax 40M", lambda: x.argmax())) == int(xn.argmax())


def test_cumsum_and_sort():
    x = np.random.default_rng(2).integers(-3, 4, N).astype(np.int32)
    got = np.asarray(timed("cumsum int32 40M", lambda: jnp.cumsum(jnp.asarray(x))))
    np.testing.assert_array_equal(got[::1000003], np.cumsum(x)[::1000003])
    assert got[-1] == x.sum()
    f = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    s = np.asarray(timed("sort float32 40M", lambda: jnp.sort(jnp.asarray(f))))
    assert np.all(s[1:] >= s[:-1]) and s[0] == f.min() and s[-1] == f.max()


def test_matmul_transpose_gather_scatter():
    m = np.random.default_rng(4).standard_normal((6000, 6000)).astype(np.float32)   # 144 MB
    jm = jnp.asarray(m)
    t = np.asarray(timed("transpose 6000^2", lambda: jm.T))
    np.testing.assert_array_equal(t[::997, ::991], m.T[::997, ::991])
    p = timed("matmul 6000^2", lambda: jm @ jm)
    rows = [0, 2999, 5999]
    np.testing.assert_allclose(np.asarray(p[np.array(rows)]), m[rows] @ m, rtol=1e-3, atol=2e-2)
    idx = np.array([0, 35999999, 17, 35999999], np.int32)
    flat = jm.reshape(-1)
    np.testing.assert_array_equal(
        np.asarray(timed("gather", lambda: flat[idx])), m.reshape(-1)[idx]
    )
    up = np.asarray(timed("scatter add", lambda: flat.at[idx].add(1.0)))
    want = m.reshape(-1).copy()
    np.add.at(want, idx, 1.0)
    np.testing.assert_array_equal(up[idx], want[idx])
    assert up[123456] == want[123456]
