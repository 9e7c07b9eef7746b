"""The reduction and elementwise kernel forms (``prims/reduce.py``'s
``_Sequential``, ``lower.Lowering._looped``), each against NumPy and real JAX: rows with vec4
loads, columns with vec4 loads of 4 adjacent outputs, scalar lanes, reductions split in parts
with a second pass, loop-invariant reads hoisted, lane-uniform and lane-contiguous reads, the
scalar fallback when a lane placeholder leaks (iota along the vectorized dim), and the same
programs with the GPU forms (``profiles.GPU_FORMS``: strided reductions, flat elementwise
kernels)."""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax._src.backend import profiles, runtime

RS = np.random.RandomState(0)

# (shape, axis): rows (B == 1), columns (B % 4 == 0), odd columns (scalar lanes), middle axis,
# non-adjacent axes, size-1 dims, and one big enough to be split in parts (2^18 elements)
CASES = [((64, 256), 1), ((256, 64), 0), ((300, 6), 0), ((16, 40, 12), 1), ((6, 5, 7), (0, 2)),
         ((1, 64, 1, 8), 1), ((4, 65536), 1), ((65536, 4), 0), ((33, 17), None)]


def rjax():
    return pytest.importorskip("jax")


def stats(np_, x, ax):
    return (x.sum(axis=ax), x.max(axis=ax), x.std(axis=ax), x.mean(axis=ax),
            np_.exp(x - x.max(axis=ax, keepdims=True)).sum(axis=ax))


def check(got, want, tol):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,ax", CASES)
def test_reductions_against_numpy_and_jax(shape, ax):
    x = RS.randn(*shape).astype(np.float32)
    want = stats(np, x.astype(np.float64), ax)
    got = wjax.jit(lambda a: stats(jnp, a, ax))(x)
    check(got, want, 2e-5)
    if isinstance(ax, int):
        np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: a.argmax(ax))(x)),
                                      x.argmax(ax))
    J = rjax()
    check(got, J.jit(lambda a: stats(J.numpy, a, ax))(x), 2e-5)


@pytest.mark.parametrize("shape,ax", [c for c in CASES if c[1] is not None])
def test_broadcast_consumers(shape, ax):
    """softmax and norm: the normalizations read per-row / per-column values (looped
    elementwise kernels, vec4 along the last dim where it divides)."""
    x = RS.randn(*shape).astype(np.float32)

    def progs(np_, softmax, a):
        m = a - a.mean(axis=ax, keepdims=True)
        return softmax(a, ax), m / (1 + a.std(axis=ax, keepdims=True)), m * a[..., :1]

    def np_softmax(a, axis):
        e = np.exp(a - a.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    want = progs(np, np_softmax, x.astype(np.float64))
    got = wjax.jit(lambda a: progs(jnp, wjax.nn.softmax, a))(x)
    check(got, want, 2e-5)
    eager = progs(jnp, wjax.nn.softmax, jnp.asarray(x))
    check(eager, want, 2e-5)


def test_lane_placeholders_fall_back_to_scalar_kernels():
    """An iota along the vectorized dim cannot be a lane-uniform or contiguous read: the vec4
    form fails to compile and the scalar kernel gives the right answer."""
    x = RS.randn(512, 8).astype(np.float32)
    col = np.arange(8, dtype=np.float32)
    f = lambda a: ((a * jnp.arange(8.0)).sum(0),                             # noqa: E731
                   a - a.mean(0) + jnp.arange(8.0),
                   (a - a.mean(-1, keepdims=True)) * jnp.arange(8.0))
    want = ((x * col).sum(0), x - x.mean(0) + col, (x - x.mean(-1, keepdims=True)) * col)
    check(wjax.jit(f)(x), want, 1e-4)


@pytest.mark.parametrize("shape,ax", [((64, 256), 1), ((256, 64), 0), ((16, 40, 12), 1),
                                      ((4, 65536), 1)])
def test_gpu_forms(shape, ax):
    rt = runtime.get()
    x = RS.randn(*shape).astype(np.float32)
    with rt.options(**profiles.GPU_FORMS):
        got = wjax.jit(lambda a: stats(jnp, a, ax))(x)
        soft = wjax.jit(lambda a: wjax.nn.softmax(a, axis=ax))(x)
        check(got, stats(np, x.astype(np.float64), ax), 2e-5)
        e = np.exp(x - x.max(ax, keepdims=True))
        check([soft], [e / e.sum(ax, keepdims=True)], 2e-5)
    wjax.clear_caches()


def test_kernel_counts():
    """norm over a small leading axis stays 3 kernels (no split: not worth a second
    dispatch); a big one-row sum is split in parts and folded by a second pass."""
    n_kernels = lambda f, *a: len(wjax.jit(f).lower(*a).compile().plan.steps)   # noqa: E731

    def norm(X):
        X = X - X.mean(0)
        return X / X.std(0)
    assert n_kernels(norm, jnp.ones((10000, 10))) == 3
    assert n_kernels(jnp.sum, jnp.ones(1 << 20)) == 2
    assert n_kernels(lambda a: a.sum(1), jnp.ones((4096, 256))) == 1
