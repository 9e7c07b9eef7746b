"""Tests for wjax.dtypes: JAX's promotion lattice with x64 disabled.

The expected tables below are written by hand from JAX's "Type promotion semantics"
doc (x64 off).  `test_matches_real_jax_*` re-checks everything against real JAX when it
is importable (it is an oracle only; wjax never imports jax).
"""

import itertools
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

from wjax._src.core import dtypes as D

# ---------------------------------------------------------------------------
# Expected result_type table.  Rows/cols: strong dtypes, then weak Python int (i*)
# and weak Python float (f*).  Entries: short dtype names; 'i*'/'f*' mean a *weak*
# int32/float32 result.  A Python bool behaves exactly like the strong 'b1'.

SHORT = {"b1": "bool", "u1": "uint8", "u2": "uint16", "u4": "uint32", "i1": "int8",
         "i2": "int16", "i4": "int32", "f2": "float16", "f4": "float32",
         "i*": "int32", "f*": "float32"}
COLS = "b1 u1 u2 u4 i1 i2 i4 f2 f4 i* f*".split()
TABLE = """
b1: b1 u1 u2 u4 i1 i2 i4 f2 f4 i* f*
u1: u1 u1 u2 u4 i2 i2 i4 f2 f4 u1 f*
u2: u2 u2 u2 u4 i4 i4 i4 f2 f4 u2 f*
u4: u4 u4 u4 u4 i4 i4 i4 f2 f4 u4 f*
i1: i1 i2 i4 i4 i1 i2 i4 f2 f4 i1 f*
i2: i2 i2 i4 i4 i2 i2 i4 f2 f4 i2 f*
i4: i4 i4 i4 i4 i4 i4 i4 f2 f4 i4 f*
f2: f2 f2 f2 f2 f2 f2 f2 f2 f4 f2 f2
f4: f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4
i*: i* u1 u2 u4 i1 i2 i4 f2 f4 i* f*
f*: f* f* f* f* f* f* f* f2 f4 f* f*
"""
EXPECTED = {}
for line in TABLE.strip().splitlines():
    row, entries = line.split(":")
    for col, e in zip(COLS, entries.split()):
        EXPECTED[row, col] = e


def value_of(short):
    """A representative input for a table key."""
    return {"i*": 3, "f*": 2.5}.get(short) or np.dtype(SHORT[short])


def expected_pair(e):
    return np.dtype(SHORT[e]), e in ("i*", "f*")


@pytest.mark.parametrize("a,b", list(EXPECTED))
def test_result_type_table(a, b):
    got = D.result_type(value_of(a), value_of(b), return_weak_type_flag=True)
    assert got == expected_pair(EXPECTED[a, b])
    assert D.result_type(value_of(a), value_of(b)) == expected_pair(EXPECTED[a, b])[0]


@pytest.mark.parametrize("other", COLS)
def test_python_bool_is_strong_bool(other):
    assert D.result_type(True, value_of(other), return_weak_type_flag=True) == \
        expected_pair(EXPECTED["b1", other])


@pytest.mark.parametrize("a,b", [(a, b) for a, b in EXPECTED if "*" not in a + b])
def test_promote_types_table(a, b):
    assert D.promote_types(SHORT[a], SHORT[b]) == np.dtype(SHORT[EXPECTED[a, b]])
    assert D.promote_types(getattr(np, SHORT[a]), SHORT[b]) == np.dtype(SHORT[EXPECTED[a, b]])


@pytest.mark.parametrize("a,b", [(a, b) for a, b in EXPECTED if "*" in a + b])
def test_promote_types_weak_python_types_not_canonicalized(a, b):
    # promote_types(int, ...) treats int/float as the weak nodes; like JAX, a weak result
    # comes back as np.dtype(int)/np.dtype(float), i.e. int64/float64.
    conv = {"i*": int, "f*": float}
    e = EXPECTED[a, b]
    want = {"i*": np.dtype("int64"), "f*": np.dtype("float64")}.get(e) or np.dtype(SHORT[e])
    assert D.promote_types(conv.get(a, SHORT[a]), conv.get(b, SHORT[b])) == want


def test_promote_types_misc():
    assert D.promote_types("uint32", "int32") == np.dtype("int32")  # x64 off: no int64 formed
    assert D.promote_types("float64", "float32") == np.dtype("float64")  # not canonicalized
    assert D.promote_types("int64", "uint32") == np.dtype("int64")
    assert D.promote_types("uint64", "int8") == np.dtype("float64")  # joins at f*
    assert D.promote_types("float32", "complex64") == np.dtype("complex64")
    assert D.promote_types("float64", "complex64") == np.dtype("complex128")
    assert D.promote_types(complex, "float16") == np.dtype("complex64")
    assert D.promote_types(bool, int) == np.dtype("int64")  # bool is a strong node
    assert D.promote_types(np.uint8, int) == np.dtype("uint8")
    assert D.promote_types(np.float16, float) == np.dtype("float16")


# ---------------------------------------------------------------------------
# Weak types

class Weak:
    """Stand-in for a weakly typed wjax array / aval."""

    def __init__(self, dtype, weak_type=True):
        self.dtype, self.weak_type = np.dtype(dtype), weak_type


def test_is_weakly_typed():
    assert D.is_weakly_typed(1) and D.is_weakly_typed(1.0) and D.is_weakly_typed(1j)
    assert not D.is_weakly_typed(True)
    assert not D.is_weakly_typed(np.float32(1)) and not D.is_weakly_typed(np.zeros(2))
    assert D.is_weakly_typed(Weak("float32"))
    assert not D.is_weakly_typed(Weak("float32", weak_type=False))
    assert D.is_weakly_typed(types.SimpleNamespace(aval=Weak("int32")))
    assert not D.is_weakly_typed(int)  # the type itself is not a weak *value* ...
    assert D.dtype_and_weak(int) == (np.dtype("int32"), True)  # ... but promotes as i*


@pytest.mark.parametrize("x,want", [
    (True, ("bool", False)), (1, ("int32", True)), (1.5, ("float32", True)),
    (1j, ("complex64", True)), (int, ("int32", True)), (float, ("float32", True)),
    (bool, ("bool", False)), (complex, ("complex64", True)),
    (np.zeros(3), ("float32", False)), (np.zeros(3, np.int64), ("int32", False)),
    (np.arange(3, dtype=np.uint8), ("uint8", False)), (np.float16(1), ("float16", False)),
    (np.bool_(True), ("bool", False)), (Weak("int32"), ("int32", True)),
    (Weak("float16", False), ("float16", False)), ("int16", ("int16", False)),
    (np.dtype("uint16"), ("uint16", False)), (np.int8, ("int8", False)),
])
def test_dtype_and_weak(x, want):
    assert D.dtype_and_weak(x) == (np.dtype(want[0]), want[1])


@pytest.mark.parametrize("args,want", [
    ((np.int32, 1.0), ("float32", True)),  # weak float meets int32 at f*: weak result
    ((np.bool_, 1.0), ("float32", True)),
    ((True, 1), ("int32", True)),
    ((np.uint32, 1.0), ("float32", True)),
    ((np.float16, 1.0), ("float16", False)),
    ((np.uint8, 1), ("uint8", False)),
    ((1, 1.0), ("float32", True)),
    ((1j, np.float32), ("complex64", False)),
    ((1j,), ("complex64", True)),
    ((None,), ("float32", False)),
    ((None, 1), ("float32", False)),
    ((True,), ("bool", False)),
    ((Weak("int32"), Weak("float32")), ("float32", True)),
    ((Weak("int16"), 3), ("int32", True)),  # all weak: join strong parts, then default width
    ((Weak("uint8"),), ("uint32", True)),  # a lone weak uint takes the default uint
    ((Weak("uint8"), np.int8), ("int8", False)),
    ((Weak("float16"), np.int32), ("float32", True)),
    ((Weak("bool"), 1), ("int32", True)),
    ((Weak("bool"),), ("bool", False)),  # never a weak bool
    ((np.int32, np.int32, 1), ("int32", False)),
    ((np.zeros(2, np.float64), np.float32), ("float32", False)),
    ((np.uint32, np.int32), ("int32", False)),
    ((np.int8, np.uint8, np.float16, 2.0), ("float16", False)),
])
def test_result_type_weak_flag(args, want):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these request a 64-bit dtype explicitly
        assert D.result_type(*args, return_weak_type_flag=True) == (np.dtype(want[0]), want[1])


def test_result_type_errors():
    with pytest.raises(ValueError):
        D.result_type()
    with pytest.raises(TypeError):
        D.result_type("U3")
    with pytest.raises(TypeError):
        D.result_type(np.array(["a"]))
    with pytest.raises(TypeError):
        D.result_type(object())


# ---------------------------------------------------------------------------
# Canonicalization, warnings, supported dtypes

@pytest.mark.parametrize("x,want", [
    (np.float64, "float32"), ("float64", "float32"), (np.dtype("int64"), "int32"),
    ("uint64", "uint32"), (np.complex128, "complex64"), (float, "float32"),
    (int, "int32"), (bool, "bool"), (complex, "complex64"), ("float16", "float16"),
    (np.uint8, "uint8"), ("i2", "int16"), (None, "float32"), ("bool", "bool"),
])
def test_canonicalize_dtype(x, want):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert D.canonicalize_dtype(x) == np.dtype(want)


def test_canonicalize_rejects_garbage():
    with pytest.raises(TypeError, match="not understood"):
        D.canonicalize_dtype("not-a-dtype")


@pytest.mark.parametrize("x,requested,truncated", [
    (np.float64, "float64", "float32"), ("int64", "int64", "int32"),
    (np.dtype("uint64"), "uint64", "uint32"), ("complex128", "complex128", "complex64"),
])
def test_x64_warning(x, requested, truncated):
    for call in (lambda: D.canonicalize_dtype(x, warn_context="zeros"),
                 lambda: D.narrow_with_warning(x, "zeros"),
                 lambda: D.result_type(x)):
        with pytest.warns(UserWarning, match=f"dtype {requested} requested in .* "
                                             f"truncated to dtype {truncated}"):
            assert call() == np.dtype(truncated)


def test_x64_warning_points_at_user_code():
    import wjax
    import wjax.numpy as jnp
    calls = [lambda: D.check_supported("float64", "zeros"),     # through layers of wjax too
             lambda: jnp.zeros(3, "float64"), lambda: jnp.arange(3, dtype="int64"),
             lambda: wjax.random.uniform(wjax.random.key(0), (2,), dtype="float64")]
    for call in calls:
        with pytest.warns(UserWarning) as rec:
            call()
        assert rec[0].filename == __file__, rec[0].filename


def test_no_warning_for_python_types_arrays_or_32bit():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert D.canonicalize_dtype(float, warn_context="x") == np.dtype("float32")
        assert D.canonicalize_dtype("float32", warn_context="x") == np.dtype("float32")
        assert D.check_supported(int, "zeros") == np.dtype("int32")
        assert D.result_type(np.zeros(2), 1) == np.dtype("float32")
        assert D.check_supported("int64", "zeros", warn=False) == np.dtype("int32")


@pytest.mark.parametrize("dt", ["bool", "int8", "int16", "int32", "uint8", "uint16",
                                "uint32", "float16", "float32", np.float32, bool, float])
def test_check_supported_ok(dt):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert D.check_supported(dt) == D.canonicalize_dtype(dt)


def test_check_supported_narrows_64bit_with_warning():
    with pytest.warns(UserWarning, match="float64"):
        assert D.check_supported(np.float64, "ones") == np.dtype("float32")
    with pytest.warns(UserWarning, match="int64"):
        assert D.check_supported("int64", "ones") == np.dtype("int32")


def test_check_supported_accepts_complex64_and_narrows_complex128():
    assert D.check_supported(np.complex64, "zeros") == np.dtype("complex64")
    assert D.check_supported(complex, "zeros") == np.dtype("complex64")      # a Python type: silent
    with pytest.warns(UserWarning, match="complex128"):
        assert D.check_supported("complex128", "zeros") == np.dtype("complex64")


@pytest.mark.parametrize("dt,name", [
    ("U3", "<U3"), (str, "<U"), (object, "object"), ("O", "object"),
    ("datetime64[s]", "datetime64"), ("V8", "V8"), ([("a", "f4")], "a"),
    ("not-a-dtype", "not-a-dtype"),
])
def test_check_supported_rejects(dt, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=name):
            D.check_supported(dt, "zeros")


# ---------------------------------------------------------------------------
# Predicates, info, defaults, scalar types

def test_issubdtype_and_predicates():
    assert D.issubdtype(np.float32, np.floating) and D.issubdtype("float16", np.inexact)
    assert D.issubdtype(np.int8, np.signedinteger) and not D.issubdtype(np.uint8, np.signedinteger)
    assert D.issubdtype(np.uint32, np.unsignedinteger) and D.issubdtype(np.uint32, np.integer)
    assert D.issubdtype(np.int16, np.number) and not D.issubdtype(np.bool_, np.number)
    assert D.issubdtype(np.bool_, np.bool_) and not D.issubdtype(np.bool_, np.integer)
    assert D.issubdtype(np.zeros(2, np.float32), np.floating)
    assert D.issubdtype(float, np.floating) and D.issubdtype(np.float32, "float32")
    assert [D.is_float(t) for t in ("float16", "int32", "bool")] == [True, False, False]
    assert [D.is_int(t) for t in ("uint8", "int32", "bool", "float32")] == [
        True,
        True,
        False,
        False,
    ]
    assert [D.is_unsigned(t) for t in ("uint8", "int32", "bool")] == [True, False, False]
    assert [D.is_bool(t) for t in ("bool", "int32", np.bool_)] == [True, False, True]
    assert D.is_complex("complex64") and not D.is_complex("float32")
    assert D.is_float(Weak("float32"))


def test_bfloat16():
    import ml_dtypes
    assert D.bfloat16 is ml_dtypes.bfloat16   # a dependency: JAX's host dtype for bf16
    bf = np.dtype(D.bfloat16)
    assert D.is_float(bf) and D.issubdtype(bf, np.inexact) and not D.issubdtype(bf, np.integer)
    assert D.promote_types(bf, np.float16) == np.dtype("float32")
    assert D.promote_types(bf, np.int32) == bf
    assert D.result_type(bf, 1.0, return_weak_type_flag=True) == (bf, False)
    assert D.result_type(Weak(bf), np.int8, return_weak_type_flag=True) == (
        np.dtype("float32"),
        True,
    )
    assert D.finfo(bf).bits == 16
    assert D.check_supported(bf) == bf and D.check_supported("bfloat16") == bf
    with pytest.raises(TypeError, match="float8_e4m3fn"):   # other narrow formats: no storage
        D.check_supported(ml_dtypes.float8_e4m3fn)


def test_finfo_iinfo_describe_the_dtype_named_as_jax():
    """Not the canonical dtype: ``finfo(float64)`` is float64's, as in JAX with x64 off."""
    jnp = pytest.importorskip("jax.numpy")
    import wjax.numpy as wnp
    for dt, jdt in ((np.float64,) * 2, (float,) * 2, ("float16",) * 2, (np.float32,) * 2,
                    (wnp.float64, jnp.float64), (wnp.float32, jnp.float32)):
        got, want = D.finfo(dt), jnp.finfo(jdt)
        assert (got.bits, got.eps, got.max, got.dtype) == (want.bits, want.eps, want.max,
                                                           want.dtype)
    for dt, jdt in ((np.int64,) * 2, (np.uint64,) * 2, (int,) * 2, ("uint8",) * 2,
                    (wnp.int64, jnp.int64)):
        got, want = D.iinfo(dt), jnp.iinfo(jdt)
        assert (got.bits, got.min, got.max) == (want.bits, want.min, want.max)
    assert D.finfo(wnp.zeros(2)).bits == 32


def test_defaults_and_scalar_types():
    assert D.default_float_dtype() == np.dtype("float32")
    assert D.default_int_dtype() == np.dtype("int32")
    assert D.default_uint_dtype() == np.dtype("uint32")
    assert D.python_scalar_dtypes[int] == np.dtype("int64")  # as in JAX: non-canonical
    assert D.python_scalar_dtypes[float] == np.dtype("float64")
    assert D.python_scalar_dtypes[bool] == np.dtype("bool")
    assert D.scalar_type_of(np.float32(1)) is float
    assert D.scalar_type_of(np.zeros(2, np.uint8)) is int
    assert D.scalar_type_of(True) is bool and D.scalar_type_of(3) is int
    assert D.scalar_type_to_dtype(int, 2**31 - 1) == np.dtype("int32")
    with pytest.raises(OverflowError):
        D.scalar_type_to_dtype(int, 2**31)
    assert D.float32 is np.float32 and D.bool_ is np.bool_ and D.uint16 is np.uint16
    assert D.float32(3) == 3.0


# ---------------------------------------------------------------------------
# Lattice properties (hypothesis)

ALL = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
       "float16", "float32", "float64", "complex64", "complex128", int, float, complex]
inputs = st.sampled_from(ALL)


@given(inputs, inputs, inputs)
def test_join_is_commutative_associative_idempotent(a, b, c):
    p = D.promote_types
    assert p(a, b) == p(b, a)
    assert p(a, a) == (np.dtype(a) if isinstance(a, str) else D.python_scalar_dtypes[a])
    assert p(a, p(a, b)) == p(a, b)  # the join is an upper bound of a
    # promote_types itself is NOT associative, as in JAX: a weak join comes back as a
    # strong 64-bit dtype, so uint64 + int8 -> float64 pairwise, but float16 once
    # float16 joins in.  The lattice join underneath is associative:
    assert p(p("uint64", "int8"), "float16") == np.dtype("float64")
    assert D._join(frozenset({"uint64", "int8", "float16"})) == "float16"


NODES = st.sampled_from(sorted(D._LATTICE))


@given(NODES, NODES, NODES)
def test_lattice_join_is_associative(a, b, c):
    j = lambda *n: D._join(frozenset(n))
    assert j(j(a, b), c) == j(a, j(b, c)) == j(a, b, c)
    assert j(a, j(a, b)) == j(a, b)


WEAK_OR_STRONG = st.sampled_from([True, 1, 2.0, 1j, np.dtype("int8"), np.dtype("uint8"),
                                  np.dtype("uint32"), np.dtype("int32"), np.dtype("float16"),
                                  np.dtype("float32"), np.dtype("complex64"), np.dtype("bool"),
                                  Weak("int32"), Weak("float32"), Weak("uint16")])


@given(st.lists(WEAK_OR_STRONG, min_size=1, max_size=4), st.randoms())
def test_result_type_order_independent(args, rnd):
    shuffled = list(args)
    rnd.shuffle(shuffled)
    assert D.result_type(*args, return_weak_type_flag=True) == \
        D.result_type(*shuffled, return_weak_type_flag=True)


@given(st.lists(WEAK_OR_STRONG, min_size=1, max_size=4))
def test_result_type_is_canonical_and_weak_only_if_some_input_weak(args):
    dt, weak = D.result_type(*args, return_weak_type_flag=True)
    assert dt.name not in ("int64", "uint64", "float64", "complex128")
    if weak:
        assert any(D.dtype_and_weak(a)[1] for a in args)
        assert dt in (np.dtype("int32"), np.dtype("float32"), np.dtype("complex64"),
                      np.dtype("uint32"))


# ---------------------------------------------------------------------------
# Oracle: real JAX, only when installed.

ORACLE_DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                 "int64", "float16", "float32", "float64", "complex64", "complex128"]


def test_matches_real_jax_promote_types():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    assert not jax.config.jax_enable_x64
    specs = ORACLE_DTYPES + [int, float, complex, bool]
    if D.bfloat16 is not None:
        specs.append(np.dtype(D.bfloat16))
    for a, b in itertools.product(specs, repeat=2):
        assert D.promote_types(a, b) == jnp.promote_types(a, b), (a, b)


def test_matches_real_jax_result_type():
    pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax._src import dtypes as jdt
    from jax._src.lax import lax as jlax

    def weak(dt):  # a weakly typed JAX array of dtype dt, and wjax's stand-in for it
        return (jlax._convert_element_type(np.zeros((), dt), np.dtype(dt), weak_type=True),
                Weak(dt))

    # (value for JAX, value for wjax)
    cases = [(np.dtype(d), np.dtype(d)) for d in ORACLE_DTYPES]
    cases += [(getattr(np, d), getattr(np, d)) for d in ("float64", "int32", "uint8")]
    cases += [(v, v) for v in (True, 3, 2.5, 1j, int, float, complex, bool, None)]
    cases += [(np.zeros(2, d), np.zeros(2, d)) for d in ("float64", "int64", "uint16")]
    cases += [weak(d) for d in ("int32", "float32", "uint8", "int16", "float16", "bool")]
    cases += [(jnp.zeros(2, "float16"), Weak("float16", False))]
    if D.bfloat16 is not None:
        bf = np.dtype(D.bfloat16)
        cases += [(bf, bf), weak(bf)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (1, 2, 3):
            for combo in itertools.product(cases, repeat=n):
                jax_args = [j for j, _ in combo]
                ours = [w for _, w in combo]
                want = jdt.result_type(*jax_args, return_weak_type_flag=True)
                assert D.result_type(*ours, return_weak_type_flag=True) == want, combo
                if n == 1 and ours[0] is not None:
                    assert D.dtype_and_weak(ours[0]) == jdt._dtype_and_weaktype(jax_args[0])
    # Same warnings as JAX for explicit 64-bit requests.
    for spec in (np.float64, "int64", np.dtype("complex128")):
        with pytest.warns(UserWarning, match="Explicitly requested dtype"):
            jnp.result_type(spec)
        with pytest.warns(UserWarning, match="Explicitly requested dtype"):
            D.result_type(spec)
