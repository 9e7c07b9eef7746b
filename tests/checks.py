"""Shared assertion for the op tests: values, shapes and dtypes of (nested tuples of) arrays."""
import importlib.util
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load_script(relpath: str, name: str):
    """The module of a script outside the package (``bench/...``, ``demos/...``), by path."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
            np.testing.assert_allclose(
                g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol
            )


def examples(n: int):
    """``@settings(max_examples=n)`` for the CI profile, scaled up under ``--fuzz``."""
    import os

    from hypothesis import settings
    if os.environ.get("WJAX_HYPOTHESIS", "ci") == "fuzz":
        n *= int(os.environ.get("WJAX_FUZZ_SCALE", "10"))
    return settings(max_examples=n)


def close(a, b, rtol=1e-5, atol=1e-6):
    """Equal pytree leaves (shapes exact, values allclose in float64)."""
    import wjax
    la, lb = wjax.tree_util.tree_leaves(a), wjax.tree_util.tree_leaves(b)
    assert len(la) == len(lb), (len(la), len(lb))
    for x, y in zip(la, lb):
        assert np.shape(x) == np.shape(y), (np.shape(x), np.shape(y))
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64),
                                   rtol=rtol, atol=atol)


def rjax():
    """Real JAX, the oracle (CPU)."""
    import pytest
    return pytest.importorskip("jax")


def against_jax(build, *args, rtol=1e-5, atol=1e-6):
    """``build(jax, jnp, lax)`` gives a function; wjax's and real JAX's results on ``args`` must
    agree.  Returns wjax's result."""
    import pytest

    import wjax
    import wjax.numpy as wjnp
    rjax = pytest.importorskip("jax")
    import jax.numpy as rjnp
    got = build(wjax, wjnp, wjax.lax)(*args)
    want = build(rjax, rjnp, rjax.lax)(*args)
    close(got, rjax.tree_util.tree_leaves(want), rtol, atol)
    return got


def has_f16() -> bool:
    """Whether the adapter has ``shader-f16`` (wgpu's GL backend has not): float16 cases run
    where it does; where it does not, float16 must raise TypeError naming the feature."""
    from wjax._src.backend import runtime
    return runtime.get().has_f16


def f16_unsupported(fn):
    """Asserts ``fn()`` raises wjax's TypeError for float16 on an adapter without it."""
    import pytest
    with pytest.raises(TypeError, match="shader-f16"):
        fn()


def f16_uniform_want(rjax, key, shape, lo, hi):
    """What ``uniform(key, shape, float16, lo, hi)`` gives under JAX 0.10 (which wjax follows),
    from the oracle's random bits: 10 of them as the float16 u in [0, 1), then u * (hi - lo)
    rounded to float16, plus lo rounded again (XLA's CPU float16 arithmetic there).  The
    oracle's own uniform must be that or the once-rounded u * (hi - lo) + lo (JAX 0.11 on the
    H200 machine's CPU gave this in 25% of the elements): its float16 arithmetic changed,
    its bits did not."""
    import numpy as np
    bits = np.asarray(rjax.random.bits(key, shape, np.uint16))
    u = (bits >> 6).astype(np.float16) * np.float16(2.0 ** -10)      # exact
    span, low = np.float16(hi - lo), np.float16(lo)
    twice = np.maximum(low, (u * span).astype(np.float16) + low)
    once = np.maximum(low, (u.astype(np.float64) * float(span) + float(low)).astype(np.float16))
    theirs = np.asarray(rjax.random.uniform(key, shape, np.float16, lo, hi))
    assert (theirs == twice).all() or (theirs == once).all(), "the oracle's float16 uniform"
    return twice
