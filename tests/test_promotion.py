"""JAX's type promotion and broadcasting in wjax.numpy's binary functions.

Hypothesis draws broadcastable shape pairs (0-d and size-1 dims included) and operands of
every wjax dtype or Python int/float/bool scalars, then checks result shape, dtype,
weak_type and values against NumPy, and dtype/weak_type/values against real JAX when it is
importable (an oracle only).  Example counts are modest: each distinct signature compiles
a shader.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from checks import examples, has_f16
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import wjax
import wjax.numpy as jnp

STRONG = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32"]
if not has_f16():               # an adapter without shader-f16 (wgpu's GL backend)
    STRONG.remove("float16")
PY = ["py_bool", "py_int", "py_float"]

# small values: no overflow in any dtype, so NumPy's (wider) arithmetic gives the same numbers
_VALUES = {"b": [False, True], "i": [-3, -1, 0, 1, 2, 5], "u": [0, 1, 2, 3, 7],
           "f": [-2.5, -1.0, 0.0, 0.5, 1.0, 3.0]}


def _kind(name):
    special = {"bool": "b", "py_bool": "b", "py_int": "i", "py_float": "f"}
    return special[name] if name in special else np.dtype(name).kind


@st.composite
def operand(draw, name, shape):
    vals = _VALUES[_kind(name)]
    if name.startswith("py_"):
        v = draw(st.sampled_from(vals))
        return {"py_bool": bool, "py_int": int, "py_float": float}[name](v)
    n = int(np.prod(shape))
    data = draw(st.lists(st.sampled_from(vals), min_size=n, max_size=n))
    return np.array(data, dtype=name).reshape(shape)


def to_wjax(x):
    return x if not isinstance(x, np.ndarray) else jnp.asarray(x)


def np_value(x, operand_dtype=None):
    """An operand as a float64/int64/bool NumPy array (for computing expected values), first
    converted to the promoted operand dtype as JAX does (a Python -3 with uint8 is 253)."""
    a = np.asarray(x)
    if operand_dtype is not None and a.dtype != operand_dtype:
        a = (a.astype(np.int64) if a.dtype.kind in "iu" else a).astype(operand_dtype)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    return a


BINARY = {
    "add": lambda a, b: a + b if a.dtype != bool else a | b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b if a.dtype != bool else a & b,
    "true_divide": lambda a, b: np.true_divide(a, b),
    "maximum": np.maximum,
    "minimum": np.minimum,
    "less": np.less,
    "less_equal": np.less_equal,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "logical_xor": np.logical_xor,
    "arctan2": np.arctan2,
}


def _expected_numpy(opname, x, y, dt):
    pdt = wjax.dtypes.result_type(x, y)
    if opname in ("true_divide", "arctan2") and np.dtype(pdt).kind != "f":
        pdt = np.dtype(np.float32)   # these promote to inexact first: -3 / uint8(0) is -inf in JAX
    a, b = np_value(x, pdt), np_value(y, pdt)
    if opname in ("add", "multiply") and dt == np.bool_:
        a, b = a.astype(bool), b.astype(bool)
    with np.errstate(all="ignore"):
        r = BINARY[opname](a, b)
    return np.asarray(r)


def _is_valid(opname, dx, dy, result_dtype):
    if opname == "subtract" and result_dtype == np.bool_:
        return False   # numpy boolean subtract is an error (checked in test_array)
    if opname in ("bitwise_and", "bitwise_or") and np.dtype(result_dtype).kind == "f":
        return False
    return True


def _assert_values(got, want, dtype):
    got = np.asarray(got)
    want = want.astype(dtype) if want.dtype != dtype else want
    if dtype.kind == "f":
        tol = 2e-3 if dtype == np.float16 else 1e-6
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@st.composite
def binary_case(draw):
    opname = draw(st.sampled_from(sorted(BINARY)))
    dx = draw(st.sampled_from(STRONG + PY))
    dy = draw(st.sampled_from(STRONG + PY))
    shapes = draw(
        mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3)
    ).input_shapes
    x = draw(operand(dx, shapes[0]))
    y = draw(operand(dy, shapes[1]))
    return opname, x, y


def _shape(x):
    return np.shape(x)


@examples(40)
@given(binary_case())
def test_binary_ufuncs_match_numpy(case):
    opname, x, y = case
    dt, weak = wjax.dtypes.result_type(x, y, return_weak_type_flag=True)
    if opname in ("true_divide", "arctan2") and dt.kind != "f":
        dt, weak = np.dtype(np.float32), weak
    if opname in ("less", "less_equal", "equal", "not_equal", "greater", "greater_equal"):
        dt = np.dtype(bool)   # weak operands still give a weak result (JAX's rule)
    if opname == "logical_xor":
        # JAX promotes both, then each non-bool becomes ``x != 0`` with a zero that is weak only
        # for a weak scalar x (lax._const): a weak result needs weak 0-d operands
        if dt != np.bool_:
            weak = weak and all(np.ndim(v) == 0 for v in (x, y))
        dt = np.dtype(bool)
    if not _is_valid(opname, x, y, dt):
        return
    out = getattr(jnp, opname)(to_wjax(x), to_wjax(y))
    assert isinstance(out, wjax.Array)
    assert out.shape == np.broadcast_shapes(_shape(x), _shape(y))
    assert out.dtype == dt, (opname, out.dtype, dt)
    assert out.weak_type == weak
    _assert_values(out, _expected_numpy(opname, x, y, dt), dt)


@examples(40)
@given(binary_case())
def test_binary_ufuncs_match_real_jax(case):
    jax = pytest.importorskip("jax")
    opname, x, y = case
    try:
        want = getattr(jax.numpy, opname)(x, y)
    except (TypeError, ValueError, OverflowError) as e:
        with pytest.raises(type(e)):
            getattr(jnp, opname)(to_wjax(x), to_wjax(y))
        return
    out = getattr(jnp, opname)(to_wjax(x), to_wjax(y))
    assert out.shape == want.shape
    assert out.dtype == want.dtype, (opname, type(x), type(y), out.dtype, want.dtype)
    assert out.weak_type == want.weak_type, (opname, out.dtype)
    want = np.asarray(want)
    if opname in ("true_divide", "divide") and bool in (np.asarray(x).dtype, np.asarray(y).dtype):
        # XLA's CPU backend gives 0/0 = 0 when either operand was converted from bool (its own
        # jaxpr divides the converted floats; IEEE, NumPy and wjax give NaN): compare with NumPy
        with np.errstate(all="ignore"):
            want = np.true_divide(np.asarray(x, np.float64), np.asarray(y, np.float64)).astype(
                want.dtype
            )
    _assert_values(out, want, np.dtype(want.dtype))


@st.composite
def where_case(draw):
    dx = draw(st.sampled_from(STRONG + PY))
    dy = draw(st.sampled_from(STRONG + PY))
    shapes = draw(
        mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3, max_side=3)
    ).input_shapes
    c = draw(operand("bool", shapes[0]))
    return c, draw(operand(dx, shapes[1])), draw(operand(dy, shapes[2]))


@examples(30)
@given(where_case())
def test_where_promotes_and_broadcasts(case):
    c, x, y = case
    dt, weak = wjax.dtypes.result_type(x, y, return_weak_type_flag=True)
    out = jnp.where(to_wjax(c), to_wjax(x), to_wjax(y))
    assert out.shape == np.broadcast_shapes(np.shape(c), np.shape(x), np.shape(y))
    assert out.dtype == dt and out.weak_type == weak
    _assert_values(out, np.where(c, np_value(x, dt), np_value(y, dt)), dt)
    jax = pytest.importorskip("jax")
    want = jax.numpy.where(c, x, y)
    assert (out.dtype, out.weak_type) == (want.dtype, want.weak_type)


_RT_ARGS = st.lists(st.sampled_from(STRONG + PY), min_size=1, max_size=4)


def _example(name):
    return {"py_bool": True, "py_int": 1, "py_float": 1.0}.get(name) if name.startswith("py_") \
        else np.zeros((), name)


@examples(80)
@given(_RT_ARGS)
def test_result_type_matches_real_jax(names):
    jax = pytest.importorskip("jax")
    args = [_example(n) for n in names]
    assert jnp.result_type(*args) == jax.numpy.result_type(*args)
    # and the weak flag of an actual sum of those operands
    if len(args) >= 2 and not all(
        isinstance(a, bool) or isinstance(a, np.ndarray) and a.dtype == bool for a in args[:2]
    ):
        w = jax.numpy.add(args[0], args[1])
        g = jnp.add(to_wjax(args[0]), to_wjax(args[1]))
        assert (g.dtype, g.weak_type) == (w.dtype, w.weak_type)


# --------------------------------------------------------------------------- hand-picked

def test_python_scalars_are_weak():
    x = jnp.arange(3, dtype=jnp.int8)
    assert (x + 1).dtype == jnp.int8
    assert (x * 2.5).dtype == jnp.float32 and (x * 2.5).weak_type
    if has_f16():
        h = jnp.ones(3, jnp.float16)
        assert (h + 1.5).dtype == jnp.float16 and not (h + 1.5).weak_type
        assert (h + 1).dtype == jnp.float16
    u = jnp.ones(2, jnp.uint8)
    assert (u + 3).dtype == jnp.uint8
    np.testing.assert_array_equal(np.asarray(u + 255), [0, 0])   # wraps like JAX
    b = jnp.array([True, False])
    assert (b + 1).dtype == jnp.int32 and (b + 1).weak_type
    assert (b * 1.0).dtype == jnp.float32


def test_weak_scalar_arrays_stay_weak_until_mixed():
    w = jnp.add(1, 2)
    assert w.dtype == jnp.int32 and w.weak_type
    assert repr(w) == "Array(3, dtype=int32, weak_type=True)"
    assert jnp.asarray(2.0).weak_type and jnp.array(2).weak_type   # as JAX 0.10
    assert not jnp.array(True).weak_type
    s = jnp.asarray(np.float32(2.0))
    assert not s.weak_type
    assert not jnp.array(2.0, dtype=jnp.float32).weak_type
    if has_f16():
        assert (jnp.ones(2, jnp.float16) * w).dtype == jnp.float16
        assert (jnp.ones(2, jnp.float16) * jnp.asarray(2.0)).dtype == jnp.float16
        assert (jnp.ones(2, jnp.float16) * s).dtype == jnp.float32


def test_unsigned_signed_mix():
    u = jnp.array([200], jnp.uint8)
    i = jnp.array([-1], jnp.int8)
    r = u + i
    assert r.dtype == jnp.int16
    np.testing.assert_array_equal(np.asarray(r), [199])
    r = jnp.array([3], jnp.uint32) * jnp.array([-2], jnp.int32)
    assert r.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(r), [-6])


def test_python_ints_wrap_into_narrow_dtypes_but_must_fit_int32():
    # as JAX 0.10 with x64 off: the int is taken as int32, then converted (wrapping)
    np.testing.assert_array_equal(np.asarray(jnp.ones(2, jnp.uint8) + 300), [45, 45])
    np.testing.assert_array_equal(np.asarray(jnp.ones(2, jnp.int8) + (-129)), [-128, -128])
    np.testing.assert_array_equal(np.asarray(jnp.ones(1, jnp.uint32) + (-3)), [4294967294])
    for dt in (jnp.uint32, jnp.float32, jnp.int8):
        with pytest.raises(OverflowError):
            jnp.ones(2, dt) + 2**31
        with pytest.raises(OverflowError):
            jnp.ones(2, dt) - 2**40


def test_comparisons_of_weak_operands_are_weak():
    r = jnp.equal(1, 2)
    assert r.dtype == jnp.bool_ and r.weak_type
    assert repr(r) == "Array(False, dtype=bool, weak_type=True)"
    assert jnp.isfinite(1.0).weak_type
    assert not jnp.less(jnp.arange(2), 1).weak_type


def test_broadcasting_rank_and_size_one():
    a = jnp.ones((3, 1))
    b = jnp.arange(4.0)
    r = a + b
    assert r.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(r), np.ones((3, 1)) + np.arange(4.0))
    assert (jnp.ones(()) + jnp.ones((2, 0))).shape == (2, 0)
    with pytest.raises(TypeError, match=r"\(3,\).*\(4,\)|\(4,\).*\(3,\)"):
        jnp.ones(3) + jnp.ones(4)
