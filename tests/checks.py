"""Shared assertion for the op tests: values, shapes and dtypes of (nested tuples of) arrays."""
import numpy as np


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _leaves(v)]
    return [x]


def assert_same(got, want, rtol, atol=1e-6, dtype=True):
    """Equal shapes (and dtypes); exact for bool/int, allclose in float64 otherwise."""
    gs, ws = _leaves(got), _leaves(want)
    assert len(gs) == len(ws), (len(gs), len(ws))
    for g, w in zip(gs, ws):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        if dtype:
            assert g.dtype == w.dtype, (g.dtype, w.dtype)
        if g.dtype == bool or np.issubdtype(g.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)
