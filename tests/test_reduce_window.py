"""lax.reduce_window against real JAX: max/min/sum pooling with VALID/SAME/explicit padding,
strides, base and window dilation, pytree operands with a tuple computation, integer
operands, and gradients, jit and vmap through it; the bad calls raise like JAX."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

X = np.arange(16.0, dtype=np.float32).reshape(4, 4)
IMG = np.sin(np.arange(2 * 5 * 5 * 3.0, dtype=np.float32)).reshape(2, 5, 5, 3)


def _cases(jx, np_):
    lax = jx.lax
    return {
        "max_valid": lambda: lax.reduce_window(X, -np_.inf, lax.max, (2, 2), (2, 2), "VALID"),
        "sum_same": lambda: lax.reduce_window(X, 0.0, lax.add, (3, 3), (1, 1), "SAME"),
        "dilated": lambda: lax.reduce_window(X, 0.0, lax.add, (2, 2), (1, 1), ((1, 0), (0, 1)),
                                             base_dilation=(2, 1), window_dilation=(1, 2)),
        "min_nhwc_jit": lambda: jx.jit(lambda x: lax.reduce_window(
            x, np_.inf, lax.min, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"))(IMG),
        "avg_pool": lambda: lax.reduce_window(IMG, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1),
                                              "VALID") / 4.0,
        "tuple": lambda: lax.reduce_window((X, X), (0.0, 1.0),
                                           lambda a, b: (a[0] + b[0], a[1] * b[1]),
                                           (2, 2), (2, 2), "VALID"),
        "int": lambda: lax.reduce_window(np.arange(10, dtype=np.int32), 0, lax.add, (3,), (2,),
                                         "VALID"),
        "grad_max": lambda: jx.grad(lambda x: lax.reduce_window(
            x, -np_.inf, lax.max, (2, 2), (2, 2), "VALID").sum())(X),
        "grad_sum": lambda: jx.grad(lambda x: (lax.reduce_window(
            x, 0.0, lax.add, (3, 3), (2, 1), "SAME") ** 2).sum())(X),
        "vmap": lambda: jx.vmap(lambda x: lax.reduce_window(x, 0.0, lax.add, (2,), (1,),
                                                            "VALID"))(X),
        "bad_rank": lambda: lax.reduce_window(X, 0.0, lax.add, (2,), (1,), "VALID"),
    }


def _outcome(fn):
    try:
        return jax.tree_util.tree_map(np.asarray, fn())
    except Exception as e:           # noqa: BLE001 - the class is compared
        return type(e).__name__


@pytest.mark.parametrize("name", sorted(_cases(wjax, jnp)))
def test_reduce_window_matches_jax(name):
    got, want = _outcome(_cases(wjax, jnp)[name]), _outcome(_cases(jax, jjnp)[name])
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_max_pool_is_one_kernel():
    f = wjax.jit(lambda x: wjax.lax.reduce_window(x, -jnp.inf, wjax.lax.max, (1, 2, 2, 1),
                                                  (1, 2, 2, 1), "VALID"))
    assert len(f.lower(IMG).compile().plan.steps) == 1
