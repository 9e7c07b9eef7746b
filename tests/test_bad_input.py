"""Bad input over the public API gets JAX's exception class (and borderline input JAX's value).

The cases live in ``tests/bad_inputs.py``, one line each.  For each, real JAX and wjax run the
same call: both raise (wjax's exception an instance of JAX's class, its message naming the
shapes JAX's names), or both return the same values, dtypes and weak types.  Nothing may reach
WGSL compilation and fail there.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import wjax
from bad_inputs import CASES
from wjax._src.backend.runtime import WjaxRuntimeError

# JAX itself crashes inside its compiler on these (an MLIRError, not a user-facing exception);
# wjax gives the TypeError that JAX's own shape rules give for the same negative sizes
JAX_INTERNAL = {"tile_negative": TypeError, "random_bad_shape": TypeError,
                # JAX fails inside its own symmetrization (a^T + a: "(3, 2)"); wjax names the
                # shape given, with JAX's class
                "linalg_cholesky_nonsquare": TypeError, "scipy_cholesky_nonsquare": ValueError}


def _run(fn, mod):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*mod), None
        except Exception as e:   # noqa: BLE001 - compared below
            return None, e


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [y for v in x for y in _leaves(v)]
    return [x]


def _same_class(gerr, werr) -> bool:
    """wjax's exception is an instance of JAX's class; for JAX's own classes (``jax.errors``)
    wjax's class of the same name, with the same builtin base (``TypeError``, ``IndexError``)."""
    if isinstance(gerr, type(werr)):
        return True
    cls = type(werr)
    if not cls.__module__.startswith("jax"):
        return False
    builtin = next(c for c in cls.__mro__ if c.__module__ == "builtins")
    return (isinstance(gerr, builtin)
            and any(c.__name__ == cls.__name__ for c in type(gerr).__mro__))


_SHAPE = re.compile(r"\((?:\d+, )+\d+\)|\(\d+,\)")     # tuples: (3,), (2, 3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_jax(name):
    rjax = pytest.importorskip("jax")
    fn = CASES[name]
    got, gerr = _run(fn, (wjax, wjax.numpy, wjax.lax))
    assert not isinstance(gerr, WjaxRuntimeError), f"{name} reached WGSL compilation: {gerr}"
    if name in JAX_INTERNAL:
        assert isinstance(gerr, JAX_INTERNAL[name]), gerr
        return
    want, werr = _run(fn, (rjax, rjax.numpy, rjax.lax))
    if werr is not None:
        assert gerr is not None, (
            f"{name}: JAX raised {type(werr).__name__}: {werr}; wjax returned {got!r}"
        )
        assert _same_class(gerr, werr), (
            f"{name}: JAX raised {type(werr).__name__}: {werr}\n"
            f"wjax raised {type(gerr).__name__}: {gerr}"
        )
        assert str(gerr), f"{name}: wjax's {type(gerr).__name__} has no message"
        for shape in _SHAPE.findall(str(werr)):
            assert shape in str(gerr), (
                f"{name}: JAX's message names {shape}, wjax's does not: {gerr}"
            )
        return
    assert gerr is None, f"{name}: JAX returned {want!r}, wjax raised {type(gerr).__name__}: {gerr}"
    for g, w in zip(_leaves(got), _leaves(want), strict=True):
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.shape == wa.shape and ga.dtype == wa.dtype, (
            name,
            ga.shape,
            ga.dtype,
            wa.shape,
            wa.dtype,
        )
        assert getattr(g, "weak_type", False) == getattr(w, "weak_type", False), name
        if ga.dtype.kind in "biu":
            np.testing.assert_array_equal(ga, wa, err_msg=name)
        else:
            np.testing.assert_allclose(ga, wa, rtol=1e-6, equal_nan=True, err_msg=name)
