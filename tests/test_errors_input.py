"""Bad input gives clear errors, as in JAX: shapes in broadcast/reshape/concatenate/dot
messages, TypeError naming unsupported dtypes, x64 narrowing with a warning, overflow of
Python ints, and allocations past the adapter's limits (a MemoryError, never a crash)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from checks import has_f16
from wjax import lax
from wjax._src.backend import runtime


# --------------------------------------------------------------------------- shapes

@pytest.mark.parametrize("a,b,cls", [((3,), (4,), TypeError), ((2, 3), (3, 2), TypeError),
                                     ((5, 1, 2), (4, 3), ValueError)])
def test_broadcast_mismatch_names_both_shapes(a, b, cls):
    # JAX's classes: equal ranks reach the lax op's shape rule (TypeError); different ranks
    # fail in jnp's broadcast_shapes (ValueError)
    with pytest.raises(cls) as e:
        jnp.add(jnp.ones(a), jnp.ones(b))
    msg = str(e.value)
    assert str(a) in msg and str(b) in msg
    with pytest.raises(cls, match=re.escape(str(b))):
        jnp.ones(a) * jnp.ones(b)
    with pytest.raises(ValueError, match=re.escape(str(a))):   # JAX's where: a ValueError
        jnp.where(jnp.ones(a, bool), jnp.ones(a), jnp.ones(b))


def test_lax_requires_equal_shapes_and_dtypes():
    with pytest.raises(TypeError, match=r"\(2,\).*\(3,\)"):
        lax.add(jnp.ones(2), jnp.ones(3))
    with pytest.raises(TypeError, match="float32.*int32|int32.*float32"):
        lax.add(jnp.ones(2), jnp.ones(2, jnp.int32))


def test_bad_reshape_names_shapes():
    x = jnp.arange(6)
    with pytest.raises((TypeError, ValueError)) as e:
        x.reshape(4, 2)
    assert "(6,)" in str(e.value) and "(4, 2)" in str(e.value)
    with pytest.raises((TypeError, ValueError)) as e:
        x.reshape(-1, 4)
    assert "(6,)" in str(e.value)
    with pytest.raises(TypeError, match="one unknown axis size"):
        x.reshape(-1, -1)


def test_bad_concatenate_names_shapes():
    with pytest.raises((TypeError, ValueError)) as e:
        jnp.concatenate([jnp.ones((2, 3)), jnp.ones((2, 4))])
    assert "(2, 3)" in str(e.value) and "(2, 4)" in str(e.value)
    with pytest.raises((TypeError, ValueError)) as e:
        jnp.concatenate([jnp.ones((2, 3)), jnp.ones((3,))])
    assert "(2, 3)" in str(e.value) and "(3,)" in str(e.value)
    with pytest.raises(ValueError, match="Zero-dimensional"):
        jnp.concatenate([jnp.ones(()), jnp.ones(())])
    with pytest.raises(ValueError, match="at least one"):
        jnp.concatenate([])
    with pytest.raises(TypeError, match=r"\(2, 3\).*\(2, 4\)"):
        lax.concatenate([jnp.ones((2, 3)), jnp.ones((2, 4))], 0)


def test_bad_dot_names_shapes():
    with pytest.raises(TypeError) as e:
        jnp.dot(jnp.ones((2, 3)), jnp.ones((4, 5)))
    assert "(2, 3)" in str(e.value) and "(4, 5)" in str(e.value)
    with pytest.raises(TypeError) as e:
        jnp.ones((2, 3)) @ jnp.ones((2, 3))
    assert "(2, 3)" in str(e.value)
    with pytest.raises(TypeError, match=r"\(3,\).*\(4,\)|3.*4"):
        lax.dot_general(jnp.ones((2, 3)), jnp.ones((4, 2)), (((1,), (0,)), ((), ())))
    with pytest.raises(ValueError, match="dimensions"):
        jnp.matmul(jnp.ones(()), jnp.ones(3))


def test_bad_axes_and_sizes():
    from numpy.exceptions import AxisError
    with pytest.raises(AxisError):
        jnp.sum(jnp.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="nonnegative"):
        jnp.zeros((3, -1))
    with pytest.raises(ValueError, match="squeeze"):
        jnp.squeeze(jnp.ones((2, 3)), axis=0)
    with pytest.raises(ValueError, match="empty"):
        jnp.argmax(jnp.zeros((0,)))
    with pytest.raises(ValueError, match="zero-size"):
        jnp.max(jnp.zeros((0, 2)), axis=0)


# --------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("value", [np.array([1 + 2j]), np.ones(2, np.complex64), [1 + 2j, 3]])
def test_complex_values_become_complex64_as_in_jax(value):
    jnp_ = pytest.importorskip("jax.numpy")
    for make in (jnp.array, jnp.asarray):
        got, want = make(value), jnp_.asarray(value)
        assert got.dtype == want.dtype == np.complex64
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("value,name", [
    (np.array(["a", "b"]), "<U1"),
    ("abc", "<U3"),
    (np.array([object(), 1], dtype=object), "object"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64"),
])
def test_unsupported_values_raise_type_error_naming_dtype(value, name):
    with pytest.raises(TypeError) as e:
        jnp.array(value)
    assert name in str(e.value)
    with pytest.raises(TypeError) as e:
        jnp.asarray(value)
    assert name in str(e.value)


@pytest.mark.parametrize("dtype,name", [(np.str_, "<U"), (object, "object"), ("V8", "V8")])
@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_unsupported_dtype_requests_raise_type_error_naming_dtype(dtype, name):
    for make in (lambda: jnp.zeros(3, dtype=dtype), lambda: jnp.ones(3).astype(dtype),
                 lambda: jnp.array([1, 2], dtype=dtype), lambda: jnp.full((2,), 1, dtype=dtype)):
        with pytest.raises(TypeError) as e:
            make()
        assert name in str(e.value), str(e.value)


def test_unsupported_operands_in_arithmetic():
    with pytest.raises(TypeError):
        jnp.ones(3) + "a"
    with pytest.raises(TypeError):
        jnp.add(jnp.ones(3), None)
    with pytest.raises(TypeError):
        jnp.sin("x")


@pytest.mark.parametrize("dtype,want", [(np.float64, np.float32), ("float64", np.float32),
                                        (np.int64, np.int32), (np.uint64, np.uint32)])
def test_explicit_64bit_requests_warn_and_narrow(dtype, want):
    with pytest.warns(UserWarning, match="64|truncated"):
        x = jnp.array([1, 2], dtype=dtype)
    assert x.dtype == want
    np.testing.assert_array_equal(np.asarray(x), [1, 2])
    with pytest.warns(UserWarning):
        assert jnp.zeros(2, dtype=dtype).dtype == want
    with pytest.warns(UserWarning):
        assert jnp.arange(3.0).astype(dtype).dtype == want


def test_implicit_64bit_inputs_narrow_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = jnp.asarray(np.array([1.5, 2.5]))           # float64 NumPy array
        assert x.dtype == np.float32
        assert jnp.asarray(np.arange(3)).dtype == np.int32
        assert jnp.array([0.1, 0.2]).dtype == np.float32
        assert jnp.asarray(np.uint64(7)).dtype == np.uint32
    np.testing.assert_allclose(np.asarray(x), [1.5, 2.5])


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_float64_values_round_to_float32():
    v = np.array([0.1, 1e300, -1e-300], np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = jnp.array(v, dtype=jnp.float64)
    np.testing.assert_array_equal(np.asarray(x), v.astype(np.float32))   # 1e300 -> inf


def test_python_int_overflow():
    with pytest.raises(OverflowError):
        jnp.array(2**40)
    with pytest.raises(OverflowError):
        jnp.array([1, 2**31])
    with pytest.raises(OverflowError):
        jnp.asarray(-(2**31) - 1)
    with pytest.raises(OverflowError):
        jnp.arange(3) + 2**35
    assert int(jnp.array(2**31 - 1)) == 2**31 - 1
    assert int(jnp.array(-(2**31))) == -(2**31)


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_explicit_dtype_of_out_of_range_values():
    jax = pytest.importorskip("jax")
    with pytest.raises(OverflowError):        # as JAX (NumPy's conversion of Python ints)
        jnp.array([300, -1], dtype=jnp.uint8)
    for v, dt in [
        ([1.7, -2.2], jnp.int32),
        ([70000.0], jnp.float16),
        (np.array([300, -1]), jnp.uint8),
    ]:
        if dt == jnp.float16 and not has_f16():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.asarray(jax.numpy.array(v, dtype=dt))
        got = np.asarray(jnp.array(v, dtype=dt))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- limits

def test_allocation_past_max_buffer_size_is_a_clear_memory_error():
    rt = runtime.get()
    n = 2**31                                   # 8 GiB of float32
    with pytest.raises((MemoryError, ValueError)) as e:
        jnp.zeros((n,))
    msg = str(e.value)
    assert str(n * 4) in msg and str(rt.max_buffer) in msg
    with pytest.raises((MemoryError, ValueError)) as e:
        jnp.ones((2**20, 2**20))
    assert str(rt.max_buffer) in str(e.value)
    # the runtime is still usable afterwards
    assert float(jnp.arange(4.0).sum()) == 6.0


def test_allocation_past_binding_size_errors_clearly_or_works():
    """Bigger than one storage binding (128 MiB on lavapipe) but within max-buffer-size: either
    it works or it says which limit it hit -- it must not crash or hang."""
    rt = runtime.get()
    n = rt.max_binding // 4 + 1024
    if n * 4 > rt.max_buffer or n * 4 > 1 << 30:
        pytest.skip("adapter binding limit too large to exceed cheaply")
    try:
        x = jnp.ones((n,), jnp.float32)
        assert float(x[-1]) == 1.0
        assert float(x[n // 2]) == 1.0
    except (MemoryError, ValueError) as e:
        assert str(rt.max_binding) in str(e)
    assert float((jnp.arange(3.0) + 1).sum()) == 6.0


def test_huge_host_upload_is_refused_before_copying():
    rt = runtime.get()
    with pytest.raises((MemoryError, ValueError)) as e:
        rt.alloc(rt.max_buffer + 1)
    assert str(rt.max_buffer) in str(e.value)


# --------------------------------------------------------------------------- misc bad input

def test_bad_jit_and_index_inputs():
    with pytest.raises(TypeError, match="callable"):
        wjax.jit(3)
    with pytest.raises(TypeError):
        wjax.jit(lambda x: x)("not an array")
    with pytest.raises(TypeError, match="non-tuple sequence"):
        jnp.arange(3)[[0, 1]]
    with pytest.raises(TypeError, match="static"):     # a traced value cannot be a shape
        wjax.jit(lambda n: jnp.zeros(n))(3)


def _jax_messages_cases(J, N):
    return {
        "bool": lambda: J.jit(_branchy)(1.0),
        "int": lambda: J.jit(_to_int)(1.0),
        "numpy": lambda: J.jit(_to_numpy)(1.0),
        "index": lambda: J.jit(_to_range)(3),
        "tolist": lambda: J.jit(_to_list)(N.ones(2)),
        "item": lambda: J.jit(_to_item)(N.ones(2)),
        "argument": lambda: J.jit(_ident)({"a": 1.0, "name": "moc"}),
        "bool_index": lambda: J.jit(_masked)(N.ones(3)),
        "setitem": lambda: N.ones(3).__setitem__(0, 1.0),
        "lax_dtypes": lambda: J.lax.add(N.int32(1), N.float32(1)),
        "ranks": lambda: N.ones((2, 3)) + N.ones(4),
    }


def _branchy(x):
    return 1 if x > 0 else 2


def _to_int(x):
    return int(x)


def _to_numpy(x):
    return np.asarray(x)


def _to_range(n):
    return list(range(n))


def _to_list(x):
    return x.tolist()


def _to_item(x):
    return x.item()


def _ident(x):
    return x


def _masked(x):
    return x[x > 0]


@pytest.mark.parametrize("case", sorted(_jax_messages_cases(None, None)))
def test_error_messages_are_jaxs(case):
    """JAX's exact words for the errors its tutorials show (tracer conversions under jit, a
    non-array argument, boolean masks, item assignment, lax's strict dtypes)."""
    rjax = pytest.importorskip("jax")
    texts = []
    for J in (wjax, rjax):
        with pytest.raises(Exception) as e:
            _jax_messages_cases(J, J.numpy)[case]()
        text = re.sub(r" at 0x[0-9a-f]+", "", str(e.value))
        # JAX prints its "while tracing" line twice for tolist(); compare distinct lines
        lines = text.split("\n")
        text = "\n".join(l for i, l in enumerate(lines) if i == 0 or l != lines[i - 1])
        texts.append((type(e.value).__name__, text))
    assert texts[0] == texts[1]
