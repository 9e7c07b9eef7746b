"""jax.experimental.sparse.BCOO (unbatched, no dense dimensions) against real JAX: fromdense
with and without padding, from_scipy_sparse, todense, products with dense vectors and
matrices from either side, elementwise products, sums, transposes, and jit/grad through a
BCOO pytree."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import sparse as jsparse

import wjax
import wjax.numpy as jnp
from wjax.experimental import sparse as wsparse

M = np.array([[0, 1.5, 0, 2], [0, 0, 0, 0], [3, 0, -1, 0]], np.float32)


def _both(fn):
    return fn(wsparse, jnp, wjax), fn(jsparse, jjnp, jax)


def _close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-6)


def test_bcoo_construction_matches_jax():
    scipy_sparse = pytest.importorskip("scipy.sparse")
    for nse in (None, 6):
        got, want = _both(lambda s, n, j: s.BCOO.fromdense(M, nse=nse))
        assert (got.nse, got.shape, got.dtype, repr(got)) == \
            (want.nse, want.shape, want.dtype, repr(want))
        _close([got.data, got.indices, got.todense()], [want.data, want.indices, want.todense()])
    got, want = _both(lambda s, n, j: s.BCOO.from_scipy_sparse(scipy_sparse.csr_matrix(M)))
    _close([got.data, got.indices, got.todense()], [want.data, want.indices, want.todense()])
    # duplicates add up in todense
    got, want = _both(lambda s, n, j: s.BCOO((np.array([1.0, 2.0], np.float32),
                                              np.array([[0, 1], [0, 1]], np.int32)),
                                             shape=(2, 2)).todense())
    _close(got, want)


def test_bcoo_operations_match_jax():
    v = np.arange(4, dtype=np.float32)
    b = np.ones((4, 2), np.float32)

    def ops(s, n, j):
        a = s.BCOO.fromdense(M, nse=6)
        return [a @ v, a @ b, n.arange(3.0) @ a, n.ones((2, 3)) @ a, a.T.todense(),
                a.transpose((1, 0)).todense(), a.sum(0).todense(), a.sum(1).todense(),
                a.sum(), (a * 2).todense(), (a * M).todense(), (-a).todense(),
                s.todense(a), s.bcoo_todense(a)]
    got, want = _both(ops)
    _close(got, want)


def test_bcoo_under_jit_and_grad_matches_jax():
    v = np.arange(4, dtype=np.float32)

    def run(s, n, j):
        a = s.BCOO.fromdense(M)
        mv = j.jit(lambda x, v: x @ v)(a, v)
        g = j.grad(lambda d: (s.BCOO((d, a.indices), shape=a.shape) @ v).sum())(a.data)
        f = j.jit(lambda m: s.BCOO.fromdense(m, nse=5).todense())(M)
        return [mv, g, f]
    got, want = _both(run)
    _close(got, want)


def test_bcoo_batched_or_dense_dimensions_are_refused():
    with pytest.raises(NotImplementedError):
        wsparse.BCOO.fromdense(M, n_batch=1)
    with pytest.raises(NotImplementedError):
        wsparse.BCOO.fromdense(M, n_dense=1)
