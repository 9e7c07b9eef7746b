"""Memory stays flat: the buffer pool has a byte budget, uploads do not pile up staging memory,
``clear_caches`` gives everything back, and 10,000 mixed calls do not grow the process."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import runtime


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


pytestmark = pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"),
                                reason="needs /proc (Linux) to read the resident set size")


def test_dropped_arrays_of_many_sizes_stay_within_the_pool_budget():
    rt = runtime.get()
    wjax.clear_caches()
    base = rss_mb()
    for i in range(60):                       # 1 .. 60 MiB each, dropped at once
        assert float(jnp.ones((i + 1) * 2**18)[-1]) == 1.0
    gc.collect()
    stats = wjax.devices()[0].memory_stats()
    assert stats["pool_bytes"] <= stats["pool_bytes_limit"] + 64 * 2**20
    grown = rss_mb() - base
    assert grown < stats["pool_bytes_limit"] / 2**20 + 300, grown   # was 1.4 GB before the budget
    wjax.clear_caches()
    assert wjax.devices()[0].memory_stats()["pool_bytes"] == 0
    assert rt.pool_size() == 0


def test_uploads_never_read_do_not_accumulate():
    host = np.ones(2**20, np.float32)         # 4 MiB
    for _ in range(20):
        jnp.asarray(host)
    base = rss_mb()
    for _ in range(500):                      # 2 GB of uploads, none read
        a = jnp.asarray(host)
    del a
    gc.collect()
    assert rss_mb() - base < 400, rss_mb() - base    # was +2.1 GB


def test_memory_stats_and_live_arrays():
    wjax.clear_caches()
    before = {id(a) for a in wjax.live_arrays()}
    s0 = wjax.devices()[0].memory_stats()["bytes_in_use"]
    x = jnp.ones((256, 256))
    y = x * 3
    new = [a for a in wjax.live_arrays() if id(a) not in before]
    assert any(a is x for a in new) and any(a is y for a in new)
    s1 = wjax.devices()[0].memory_stats()
    assert s1["bytes_in_use"] >= s0 + 2 * 256 * 256 * 4
    assert s1["peak_bytes_in_use"] >= s1["bytes_in_use"]
    del x, y, new
    gc.collect()
    assert (
        wjax.devices()[0].memory_stats()["bytes_in_use"] <= s1["bytes_in_use"] - 2 * 256 * 256 * 4
    )
    assert set(wjax.devices()[0].memory_stats()) >= {
        "bytes_in_use", "peak_bytes_in_use", "bytes_reserved", "pool_bytes", "bytes_limit",
        "num_allocs", "largest_alloc_size"}


def test_ten_thousand_mixed_calls_keep_rss_flat():
    f = wjax.jit(lambda a, b: jnp.tanh(a @ b).sum(0))
    g = wjax.grad(lambda w, x: jnp.sum((x @ w) ** 2))
    h = wjax.vmap(lambda r: jnp.sort(r) * r.max())
    c = wjax.jit(lambda p, v: lax.cond(p, lambda t: t + 1, lambda t: t * 2, v))
    rng = np.random.default_rng(0)

    def step(i):
        n = 8 + i % 5
        a = rng.standard_normal((n, 6)).astype(np.float32)
        b = rng.standard_normal((6, 4)).astype(np.float32)
        k = i % 6
        if k == 0:
            return f(a, b)
        if k == 1:
            return g(b, a)
        if k == 2:
            return h(a)
        if k == 3:
            return c(i % 2 == 0, a)
        if k == 4:
            return jnp.exp(jnp.asarray(a)).mean() + i
        return wjax.random.uniform(wjax.random.PRNGKey(i), (n,))

    for i in range(1000):                     # warm-up: every program compiled, pool filled
        step(i)
    runtime.get().synchronize()
    gc.collect()
    base = rss_mb()
    for i in range(1000, 10000):
        r = step(i)
        if i % 500 == 0:
            np.asarray(r)
    runtime.get().synchronize()
    gc.collect()
    grown = rss_mb() - base
    print(f"RSS grew {grown:.1f} MB over 9,000 calls")
    assert grown < 60, f"RSS grew {grown:.1f} MB over 9,000 calls"
