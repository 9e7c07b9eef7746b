"""Comparison helpers for the tests/test_surface_*.py files: wjax's result against real
JAX's on the same program (pytrees of arrays: shapes, dtypes and values)."""
from __future__ import annotations

import numpy as np
import pytest


def leaves(x):
    import wjax
    return [np.asarray(v) for v in wjax.tree_util.tree_leaves(
        x, is_leaf=lambda v: isinstance(v, (tuple, list)) and len(v) == 0)]


def same(got, want, rtol=1e-5, atol=1e-6, dtype=True, what=""):
    """Equal pytree structure (leaf count), shapes, dtypes and values (NaN = NaN)."""
    import jax
    g = leaves(got)
    w = [np.asarray(v) for v in jax.tree_util.tree_leaves(want)]
    assert len(g) == len(w), (what, len(g), len(w))
    for a, b in zip(g, w):
        assert a.shape == b.shape, (what, a.shape, b.shape)
        if dtype:
            assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
        if a.dtype.kind in "biu" or a.dtype == object:
            np.testing.assert_array_equal(a, b, err_msg=what)
        else:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True, err_msg=what)


def both(fn, rtol=1e-5, atol=1e-6, dtype=True, what="", jit_jax=True):
    """``fn(module)`` on both libraries; the results must agree.  wjax runs ``fn`` as
    written (eagerly, unless ``fn`` jits); real JAX runs it as one jitted program by default
    (``jit_jax``: XLA compiles it once instead of op by op, which is much faster for long
    lists of small computations; off where ``fn`` needs concrete values)."""
    import jax
    import wjax
    got = fn(wjax)
    want = jax.jit(lambda: fn(jax))() if jit_jax else fn(jax)
    same(got, want, rtol, atol, dtype, what)
    return got


def raises_like_jax(fn, match=None):
    """``fn(module)`` raises on both libraries, wjax with an instance of JAX's class."""
    import jax
    import wjax
    with pytest.raises(Exception) as theirs:
        fn(jax)
    with pytest.raises(type(theirs.value), match=match):
        fn(wjax)
