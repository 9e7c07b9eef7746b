"""wjax from several Python threads (data loaders, servers): trace state is per thread, the
runtime records one thread's plan at a time, caches are shared safely.  Every thread's results
must equal the single-threaded results for the same inputs."""
from __future__ import annotations

import threading

import numpy as np

import wjax as jax
import wjax.numpy as jnp
from wjax import lax


def _work(seed: int):
    """A mixed workload: jit, eager ops, grad, vmap, cond, while_loop, scan, random."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    w = rng.standard_normal(5).astype(np.float32)
    out = {}
    out["jit"] = jax.jit(lambda a, b: jnp.tanh(a @ b) + a.sum())(x, w)
    out["eager"] = jnp.exp(-jnp.abs(jnp.asarray(x))).mean(axis=0) * 3.0
    out["grad"] = jax.grad(lambda b: jnp.sum(jnp.sin(x @ b) ** 2))(w)
    out["vmap"] = jax.vmap(lambda r: jnp.dot(r, w) * r.max())(x)
    out["cond"] = jax.jit(lambda a: lax.cond(a.sum() > 0, lambda v: v * 2, lambda v: -v, a))(x[0])
    out["cond_eager"] = lax.cond(float(x[1, 0]) > 0, lambda v: v + 1, lambda v: v - 1, x[1])
    out["while"] = lax.while_loop(
        lambda c: c[0] < 7 + seed % 3, lambda c: (c[0] + 1, c[1] * 0.9 + 1), (0, jnp.asarray(x[2]))
    )[1]
    out["scan"] = lax.scan(lambda c, r: (c * 0.5 + r, c.sum()), jnp.zeros(5), jnp.asarray(x))[0]
    out["random"] = jax.random.normal(jax.random.PRNGKey(seed), (6,))
    out["python_if_grad"] = jax.grad(lambda v: v ** 2 if v > 0 else -v)(float(x[3, 1]))
    return {k: np.asarray(v) for k, v in out.items()}


def _run_threads(n_threads, rounds, seeds):
    results, errors = {}, []

    def worker(t):
        try:
            for r in range(rounds):
                s = seeds[(t + r) % len(seeds)]
                results[(t, r)] = (s, _work(s))
        except Exception as e:   # noqa: BLE001 - reported by the test
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results, errors


def test_threads_match_single_threaded():
    seeds = list(range(6))
    want = {s: _work(s) for s in seeds}
    results, errors = _run_threads(6, 3, seeds)
    assert not errors, errors
    assert len(results) == 18
    for (t, r), (s, got) in results.items():
        for k in want[s]:
            np.testing.assert_allclose(got[k], want[s][k], rtol=1e-5, atol=1e-6,
                                       err_msg=f"thread {t} round {r} seed {s}: {k}")


def test_tracing_in_one_thread_does_not_leak_into_another():
    """One thread traces jit functions while another runs eager ops: the eager thread must not
    see the other's trace (JAX's trace context is per thread)."""
    stop = threading.Event()
    errors = []
    entered = threading.Event()

    def tracer():
        def slow(a):
            entered.set()
            for _ in range(200):
                a = jnp.sin(a) + 1.0
            return a
        try:
            for i in range(5):
                jax.jit(slow)(jnp.ones(3) * i).block_until_ready()
        except Exception as e:   # noqa: BLE001
            errors.append(("tracer", repr(e)))
        finally:
            stop.set()

    def eager():
        entered.wait(5)
        try:
            n = 0
            while not stop.is_set() or n < 20:
                y = jnp.arange(4.0) * 2.0
                assert float(y.sum()) == 12.0
                assert np.asarray(y).tolist() == [0.0, 2.0, 4.0, 6.0]
                n += 1
        except Exception as e:   # noqa: BLE001
            errors.append(("eager", repr(e)))

    ts = [threading.Thread(target=tracer), threading.Thread(target=eager)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_concurrent_conds_on_own_data():
    f = jax.jit(lambda p, v: lax.cond(p, lambda a: a * 10.0, lambda a: a - 1.0, v))
    errors = []

    def worker(t):
        try:
            for i in range(30):
                p = (t + i) % 2 == 0
                v = np.full(4, float(t * 100 + i), np.float32)
                got = np.asarray(f(p, v))
                want = v * 10 if p else v - 1
                if not np.array_equal(got, want):
                    errors.append((t, i, got.tolist(), want.tolist()))
        except Exception as e:   # noqa: BLE001
            errors.append((t, repr(e)))

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:5]
