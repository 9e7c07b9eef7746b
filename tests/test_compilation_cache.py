"""The persistent compilation cache (``jax_compilation_cache_dir``): a process that starts
cold lowers and writes its programs; one that starts warm reads them and lowers nothing
(counted, not timed) and computes the same values -- against real JAX's values for the same
training step.  JAX's related options (minimum compile time, minimum entry size) and what
cannot be stored (host callbacks) are checked in-process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax._src.backend import disk_cache, execute

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import {jax} as jax
    import {jax}.numpy as jnp
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)

    def loss(params, x, y):
        (w1, b1), (w2, b2) = params
        h = jnp.tanh(x @ w1 + b1)
        logits = h @ w2 + b2
        logp = logits - jax.nn.logsumexp(logits, axis=1, keepdims=True)
        return -jnp.mean(jnp.sum(y * logp, axis=1))

    @jax.jit
    def step(params, x, y):
        v, g = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, g), v

    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(12, 16)).astype(np.float32) / 4, np.zeros(16, np.float32)),
              (rng.normal(size=(16, 5)).astype(np.float32) / 4, np.zeros(5, np.float32))]
    x = rng.normal(size=(8, 12)).astype(np.float32)
    y = np.eye(5, dtype=np.float32)[rng.integers(0, 5, 8)]
    losses = []
    for _ in range(3):
        params, v = step(params, x, y)
        losses.append(float(v))
    out = {{"losses": losses, "w2": np.asarray(params[1][0]).tolist()}}
    if "{jax}" == "wjax":
        from wjax._src.backend import disk_cache, execute
        out["lowered"] = execute.stats["lowered"]
        out["disk"] = disk_cache.stats
    print(json.dumps(out))
""")


def run(tmp_path, cache, jax="wjax"):
    script = tmp_path / f"{jax}_prog.py"
    script.write_text(PROGRAM.format(jax=jax))
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    r = subprocess.run([sys.executable, str(script), str(cache)], env=env, timeout=600,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_cold_then_warm_process(tmp_path):
    cache = tmp_path / "cache"
    cold = run(tmp_path, cache)
    assert cold["lowered"] >= 1 and cold["disk"]["writes"] == cold["lowered"]
    assert cold["disk"]["hits"] == 0
    assert len(list(cache.glob("wjax-*.json"))) == cold["disk"]["writes"]
    warm = run(tmp_path, cache)
    assert warm["lowered"] == 0                       # nothing lowered again
    assert warm["disk"]["hits"] == cold["disk"]["writes"]
    assert warm["disk"]["writes"] == 0
    assert warm["losses"] == cold["losses"] and warm["w2"] == cold["w2"]   # the same plans
    rjax = pytest.importorskip("jax")
    ref = run(tmp_path, tmp_path / "jax_cache", jax=rjax.__name__)
    np.testing.assert_allclose(warm["losses"], ref["losses"], rtol=1e-5)
    np.testing.assert_allclose(warm["w2"], ref["w2"], rtol=1e-4, atol=1e-6)


@pytest.fixture
def cache_dir(tmp_path):
    old = {k: wjax.config.read(k) for k in (
        "jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes")}
    wjax.config.update("jax_compilation_cache_dir", str(tmp_path))
    wjax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    wjax.clear_caches()
    yield tmp_path
    for k, v in old.items():
        wjax.config.update(k, v)
    wjax.clear_caches()


def entries(d):
    return sorted(p for p in os.listdir(d) if p.startswith("wjax-"))


def test_options_and_what_is_not_stored(cache_dir):
    x = jnp.asarray(np.arange(6.0, dtype=np.float32))     # an upload: no program
    f = lambda a: jnp.sin(a) * 3 + 1           # noqa: E731
    w0 = disk_cache.stats["writes"]
    np.testing.assert_allclose(np.asarray(wjax.jit(f)(x)), np.sin(np.arange(6.0)) * 3 + 1,
                               rtol=1e-6)
    assert disk_cache.stats["writes"] == w0 + 1 and len(entries(cache_dir)) == 1
    (first,) = entries(cache_dir)
    # in memory again after clear_caches: read back, not lowered
    wjax.clear_caches()
    lowered, hits = execute.stats["lowered"], disk_cache.stats["hits"]
    np.testing.assert_allclose(np.asarray(wjax.jit(f)(x)), np.sin(np.arange(6.0)) * 3 + 1,
                               rtol=1e-6)
    assert execute.stats["lowered"] == lowered and disk_cache.stats["hits"] == hits + 1
    # programs that compiled faster than the minimum, or whose entry is smaller, are not kept
    wjax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)
    wjax.jit(lambda a: a * 7)(x).block_until_ready()
    wjax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    wjax.config.update("jax_persistent_cache_min_entry_size_bytes", 10 ** 9)
    wjax.jit(lambda a: a * 8)(x).block_until_ready()
    wjax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    assert entries(cache_dir) == [first]
    # a host callback has no value that is the same in another process: not stored
    refused = disk_cache.stats["refused"]
    g = wjax.jit(lambda a: wjax.pure_callback(lambda v: np.asarray(v) * 2,
                                              wjax.ShapeDtypeStruct((6,), np.float32), a))
    np.testing.assert_allclose(np.asarray(g(x)), np.arange(6.0) * 2)
    assert disk_cache.stats["refused"] > refused and entries(cache_dir) == [first]
    # a damaged entry is ignored (recompiled), never an error
    (cache_dir / first).write_text("{not json")
    wjax.clear_caches()
    np.testing.assert_allclose(np.asarray(wjax.jit(f)(x)), np.sin(np.arange(6.0)) * 3 + 1,
                               rtol=1e-6)


def test_set_cache_dir_alias(tmp_path):
    from wjax.experimental.compilation_cache import compilation_cache as cc
    old = wjax.config.read("jax_compilation_cache_dir")
    try:
        cc.set_cache_dir(tmp_path)
        assert cc.is_initialized() and disk_cache.cache_dir() == str(tmp_path)
        cc.reset_cache()
        assert not cc.is_initialized()
    finally:
        wjax.config.update("jax_compilation_cache_dir", old)
