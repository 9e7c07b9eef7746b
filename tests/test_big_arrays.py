"""Arrays larger than one storage binding, for every kernel family.

A buffer over the adapter's ``max-storage-buffer-binding-size`` is bound as several windows
(``wjax/_src/backend/wgsl.py``: accessors pick the window); elementwise kernels over such arrays
run in chunks that keep the global index.  Here the binding limit is forced down to 1 MiB so
every path runs on a few MiB, against NumPy (and JAX for random bits); the same at real sizes
(> 128 MiB, lavapipe's limit) is ``tests/test_big_arrays_slow.py`` (``scripts/test.sh --slow``).
"""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import runtime

LIMIT = 1 << 20
N = 3 * 2**18 + 123                   # 3 MiB of float32: four windows


@pytest.fixture(autouse=True)
def small_bindings():
    rt = runtime.get()
    old = rt.max_binding
    wjax.clear_caches()
    rt.max_binding = LIMIT
    yield
    rt.max_binding = old
    wjax.clear_caches()


RNG = np.random.default_rng(0)
A = RNG.standard_normal(N).astype(np.float32)
B = RNG.standard_normal(N).astype(np.float32)
M = RNG.standard_normal((900, 800)).astype(np.float32)     # 2.9 MB


def close(got, want, rtol=1e-5, atol=1e-5):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(
        got.astype(np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol
    )


def both(f, *args, tol=1e-5):
    """f eagerly and under jit (fused differently): the same answer."""
    e = f(*args)
    j = wjax.jit(f)(*args)
    np.testing.assert_allclose(
        np.asarray(e, np.float64), np.asarray(j, np.float64), rtol=tol, atol=tol
    )
    return e


def test_global_index_in_chunked_elementwise():
    got = both(lambda: jnp.arange(N, dtype=jnp.int32))
    np.testing.assert_array_equal(np.asarray(got), np.arange(N, dtype=np.int32))
    close(both(lambda: jnp.ones((N // 1280, 1280)) * jnp.arange(1280.0)),
          np.ones((N // 1280, 1280)) * np.arange(1280.0))
    close(both(lambda a, b: jnp.concatenate([a, b[::-1]]), A, B), np.concatenate([A, B[::-1]]))
    close(both(lambda a, b: jnp.where(a > 0, a, b) * 2 + 1, A, B), np.where(A > 0, A, B) * 2 + 1)


def test_random_bits_past_one_binding_match_jax():
    u = np.asarray(wjax.random.uniform(wjax.random.PRNGKey(0), (2 * N,)))
    assert not np.array_equal(u[:N], u[N:])
    rjax = pytest.importorskip("jax")
    np.testing.assert_array_equal(
        u, np.asarray(rjax.random.uniform(rjax.random.PRNGKey(0), (2 * N,)))
    )


def test_reductions():
    close(both(lambda a: a.sum(), A), A.astype(np.float64).sum(), rtol=1e-4)
    close(both(lambda a: a.max(), A), A.max())
    assert int(both(lambda a: a.argmax(), A)) == int(A.argmax())
    close(both(lambda m: m.mean(0), M), M.mean(0))
    close(both(lambda m: m.std(1), M), M.std(1), rtol=1e-4)
    close(
        both(lambda m: wjax.nn.softmax(m, axis=1), M),
        np.exp(M - M.max(1, keepdims=True))
        / np.exp(M - M.max(1, keepdims=True)).sum(1, keepdims=True),
    )


def test_scans_and_sorts():
    close(
        both(lambda a: jnp.cumsum(a), A[:300000]),
        np.cumsum(A[:300000].astype(np.float64)),
        rtol=1e-3,
        atol=1e-2,
    )
    close(both(lambda a: jnp.sort(a), A), np.sort(A))
    np.testing.assert_array_equal(np.asarray(both(lambda m: jnp.argsort(m, axis=1), M)),
                                  np.argsort(M, axis=1, kind="stable"))


def test_gpu_radix_sort_through_windows():
    """The GPU radix sort's tile kernels (workgroup-memory ranking) on key and position
    buffers bound as windows: one row of 2^18 + 123 int8 (two passes; its u32 key and
    position words take two windows of 1 MiB each), many equal keys (stability)."""
    from wjax._src.backend import profiles
    x = np.clip(A[:2**18 + 123] * 40, -128, 127).astype(np.int8)
    with runtime.get().options(**dict(profiles.GPU_STRATEGIES, radix_sort=1 << 12)):
        f = wjax.jit(lambda a: jnp.argsort(a))
        text = f.lower(x).compile().as_text()
        got = np.asarray(f(x))
    assert "LSD radix sort (GPU form)" in text and "_w1" in text
    np.testing.assert_array_equal(got, np.argsort(x, kind="stable"))


def test_transpose_matmul_conv():
    close(both(lambda m: m.T * 2, M), M.T * 2)
    close(both(lambda m: m @ m.T[:, :200], M, tol=1e-3), M @ M.T[:, :200], rtol=1e-3, atol=1e-3)
    x = RNG.standard_normal((2, 4, 200, 200)).astype(np.float32)     # 1.3 MB
    w = RNG.standard_normal((8, 4, 3, 3)).astype(np.float32)
    rjax = pytest.importorskip("jax")
    want = rjax.lax.conv(x, w, (1, 1), "SAME")
    close(both(lambda a, b: lax.conv(a, b, (1, 1), "SAME"), x, w), want, rtol=1e-4, atol=1e-4)


def test_gather_scatter_slices():
    idx = np.array([0, N - 1, N // 2, 12345, N // 2], np.int32)
    close(both(lambda a, i: a[i], A, idx), A[idx])
    want = A.copy()
    want[idx] = 7.0
    close(both(lambda a, i: jnp.asarray(a).at[i].set(7.0), A, idx), want)
    want = A.copy()
    np.add.at(want, idx, 1.0)
    close(both(lambda a, i: jnp.asarray(a).at[i].add(1.0), A, idx), want)
    close(both(lambda a: lax.dynamic_slice(a, (N - 5,), (5,)), A), A[N - 5:])
    close(both(lambda m: jnp.pad(m, ((1, 2), (3, 0))), M), np.pad(M, ((1, 2), (3, 0))))


@pytest.mark.parametrize("strategy", ["registers", "workgroup"])
def test_fft(strategy, target_options):
    """2^18 complex points (2 MiB: its buffers and the passes' scratch are windowed), a long
    row, a strided axis of many rows, and Bluestein's scratch (length 4096 for 1278 points)
    windowed, against NumPy."""
    target_options(fft=strategy)
    n = 1 << 18
    z = (A[:n] + 1j * B[:n]).astype(np.complex64)
    want = np.fft.fft(z.astype(np.complex128))
    got = np.asarray(jnp.fft.fft(z))
    assert np.linalg.norm(got - want) <= 1e-6 * np.linalg.norm(want)
    m = (M[:, :640] + 0.5j).astype(np.complex64)                  # 900 x 640: 4.4 MiB
    want = np.fft.fft(m.astype(np.complex128), axis=0)
    got = np.asarray(jnp.fft.fft(m, axis=0))
    assert np.linalg.norm(got - want) <= 1e-6 * np.linalg.norm(want)
    want = np.fft.irfft(m[:100].astype(np.complex128))
    got = np.asarray(jnp.fft.irfft(m[:100]))
    assert np.linalg.norm(got - want) <= 1e-6 * np.linalg.norm(want)


def test_autodiff_and_loops_over_big_arrays():
    g = wjax.grad(lambda a: jnp.sum(jnp.sin(a) * a))(A)
    close(g, np.cos(A) * A + np.sin(A), rtol=1e-4, atol=1e-4)
    out = lax.fori_loop(0, 3, lambda i, c: c * 0.5 + 1.0, jnp.asarray(A))
    close(out, ((A * 0.5 + 1) * 0.5 + 1) * 0.5 + 1)
    c, ys = lax.scan(lambda c, x: (c + x, c.sum()), jnp.zeros(800), jnp.asarray(M[:5]))
    close(c, M[:5].sum(0), rtol=1e-4, atol=1e-4)


def test_too_many_windows_is_a_clear_memory_error():
    x = jnp.ones(40 * 2**18)                                 # 40 MiB: 40 windows of 1 MiB
    with pytest.raises(MemoryError, match="max-storage-buffer-binding-size"):
        np.asarray(x[::-1])                                  # read at other positions: all windows
