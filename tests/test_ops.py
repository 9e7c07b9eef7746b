"""One record per primitive: eager (WGSL) vs the primitive's NumPy reference rule, and jit vs eager.

A record names a primitive, generates cases (NumPy operands + params) over dtypes and
shapes, and gives a tolerance.  ``test_every_primitive_has_a_record`` walks
``wjax.primitive.REGISTRY`` and fails when a registered primitive has no record, so adding
a primitive means adding one record here (JAX's ``lax_test_util.op_record`` pattern).

Float cases include NaN, +-inf, -0.0, 0-d and empty arrays where the op accepts floats;
integer cases include the extremes of int8/uint8/int16/uint16 (wrap-around) and int32;
complex64 cases take every pair of components from 0, -0, +-1, 0.5, -2.5, +-inf, NaN (JAX's
special values and branch cuts) and some finite values, compared normwise (|got - want| <=
rtol |want|) where finite and component by component where not.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import wjax
from wjax._src.array import asarray_device
from wjax._src.backend import runtime
from wjax._src.prims.indexing import GatherDimensionNumbers as GDN
from wjax._src.prims.indexing import ScatterDimensionNumbers as SDN
from wjax._src.core.primitive import REGISTRY

# Call-like primitives: their "operation" is a nested jaxpr (or rule jaxprs), not an array op
# with a NumPy meaning; the tests of jit, checkpoint and custom derivatives cover them.
EXCLUDED = {
    "pjit": "call primitive (runs a nested jaxpr); covered by the jit-vs-eager checks below",
    "checkpoint": "call primitive (remat of a nested jaxpr); tests/test of ad_checkpoint",
    "call": "call primitive (runs a nested jaxpr; jax.extend.core.primitives.call_p); "
            "tests/test_extend.py",
    "closed_call": "call primitive (runs a nested closed jaxpr); tests/test_extend.py",
    "custom_jvp_call": "call primitive carrying a jvp rule jaxpr; custom_derivatives tests",
    "custom_vjp_call": "call primitive carrying fwd/bwd jaxprs; custom_derivatives tests",
    "custom_lin": "linearized custom_vjp call (bwd jaxpr); custom_derivatives tests",
    "cond": "control flow carrying branch jaxprs; tests/test_control.py",
    "while": "control flow carrying cond/body jaxprs; tests/test_control.py",
    "scan": "control flow carrying a body jaxpr; tests/test_control.py",
    "debug_callback": "host callback (Python function parameter); tests/test_callbacks.py and "
                      "tests/programs/debug_callbacks.py against real JAX",
    "pure_callback": "host callback; tests/test_callbacks.py, tests/programs/debug_callbacks.py",
    "call_exported": "a deserialized jax.export program (its parameter is a recording); "
                     "tests/test_export.py",
    "io_callback": "host callback; tests/programs/debug_callbacks.py",
    "custom_linear_solve": "carries the solver jaxprs (lax.custom_linear_solve); "
                           "tests/test_surface_lax.py against real JAX",
    "linear_call": "carries the callee and transpose jaxprs (custom_derivatives.linear_call); "
                   "tests/test_surface_top.py against real JAX",
    "custom_vmap_call": "carries a function's jaxpr and its vmap rule (custom_batching); "
                        "tests/test_surface_top.py against real JAX",
    "row_group": "a row-resident group the backend forms at lowering for GPU targets "
                 "(backend/passes.row_groups); tests/test_row_resident.py against real JAX",
    "attention": "attention the backend forms at lowering for GPU targets "
                 "(backend/passes.attention_groups); tests/test_attention.py against real JAX",
}
# collectives never run on their own: vmap's rewrite of their named axis replaces them with array
# operations (tests/test_collectives.py compares every one with real JAX)
EXCLUDED.update({n: "collective over a named vmap axis; tests/test_collectives.py" for n in
                 ("psum", "pmax", "pmin", "all_gather", "all_to_all", "ppermute",
                  "axis_index")})

# many devices: tests/test_devices.py and the tutorial programs run them against real JAX
EXCLUDED.update({
    "shard_map": "per-device program (wjax/_src/spmd.py); tests/programs/*_tutorial.py, "
                 "tests/programs/sharding_checks.py",
    "pvary": "marks a value varying over mesh axes (identity); "
             "tests/programs/shard_map_tutorial.py",
    "sharding_constraint": "lays a value out by a sharding (identity on one device); "
                           "tests/programs/sharding_checks.py, parallel_tutorial.py",
})

F16_OK = runtime.get().has_f16
# bfloat16: an f32 lane on the device, every result rounded to bf16 (tests/test_bfloat16.py
# holds it to real JAX; here each float primitive to its reference on ml_dtypes' bfloat16)
FLOATS = ["float32", "float16", "bfloat16"] if F16_OK else ["float32", "bfloat16"]
SINTS = ["int8", "int16", "int32"]
UINTS = ["uint8", "uint16", "uint32"]
INTS = SINTS + UINTS
ALL = FLOATS + INTS + ["bool"]
ALL_C = ALL + ["complex64"]
KIND_DTYPES = {"f": FLOATS, "i": SINTS, "u": UINTS, "b": ["bool"], "c": ["complex64"]}

FSPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.5, 0.1, -0.3,
            3.0, -7.25, 10.0, 1e-3, 40.0, -100.0]


CSPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan]
CFINITE = [0.1 - 0.3j, 3 + 4j, -7.25 + 1e-3j, 10 - 40j, 1e-3 + 1e-3j, 0.999 + 1e-3j,
           -1.001 - 0.5j, 0.3 + 0.999j, -40 + 2j, 2.5 - 10j, 1e-4 - 2j, -0.7 - 0.7j]


def _kind(dtype) -> str:
    """dtype.kind, with bfloat16 (kind 'V' in NumPy) a float."""
    dt = np.dtype(dtype)
    return "f" if dt.name == "bfloat16" else dt.kind


def vals(dtype, special=True):
    """Interesting values of a dtype (a 1-D NumPy array)."""
    dt = np.dtype(dtype)
    if dt.kind == "c":
        grid = [complex(a, b) for a in CSPECIAL for b in CSPECIAL] if special else []
        return np.array(grid + CFINITE, dt)
    if dt == np.bool_:
        return np.array([True, False, False, True])
    if _kind(dt) == "f":
        v = FSPECIAL if special else [x for x in FSPECIAL if np.isfinite(x)]
        return np.array(v, dt)
    info = np.iinfo(dt)
    cand = [info.min, info.min + 1, -100, -7, -2, -1, 0, 1, 2, 3, 7, 31, 32, 100, 200,
            info.max - 1, info.max]
    return np.array(sorted({c for c in cand if info.min <= c <= info.max}), dt)


def cross(a, b):
    """All pairs: (repeat(a), tile(b))."""
    return np.repeat(a, len(b)), np.tile(b, len(a))


# --------------------------------------------------------------------------- records

class Case:
    def __init__(self, args, params=None, label="", tol=None):
        self.args, self.params, self.label, self.tol = list(args), dict(params or {}), label, tol


class Rec:
    """name, cases() -> [Case], tolerance {dtype name or kind: (rtol, atol)}."""

    def __init__(self, name, cases, tol=None, signed_zero=False, jit_exact=True):
        self.name, self.make_cases, self.signed_zero, self.jit_exact = (
            name,
            cases,
            signed_zero,
            jit_exact,
        )
        self.tol = {"float32": (2e-6, 1e-6), "float16": (2e-3, 1e-4), "complex64": (3e-6, 1e-6),
                    "bfloat16": (8e-3, 1e-6)}
        self.tol.update(tol or {})
        self._cases = None

    def cases(self):
        if self._cases is None:
            self._cases = self.make_cases()
        return self._cases


RECORDS: dict[str, Rec] = {}


def record(name, cases, **kw):
    RECORDS[name] = Rec(name, cases, **kw)


def _floatish_extras(make):
    """0-d and empty operands, float32 only (they exercise shape handling, not dtypes)."""
    return [Case(make(np.array(1.5, np.float32)), label="f32-0d"),
            Case(make(np.zeros((0,), np.float32)), label="f32-empty"),
            Case(make(np.zeros((2, 0), np.float32)), label="f32-empty2d")]


# ---- unary elementwise

# ops whose value set must avoid a domain edge to be comparable at float32 precision
UNARY_VALUES = {
    "tan": [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.2, 0.1, 1e-3],
}
UNARY_TOL = {
    "tan": {"float32": (2e-5, 1e-6)}, "cbrt": {"float32": (2e-6, 1e-6)},
    "erf": {"float32": (2e-6, 1e-6), "float16": (2e-3, 1e-3)},
    "sinh": {"float32": (1e-5, 1e-6)}, "cosh": {"float32": (1e-5, 1e-6)},
    "asinh": {"float32": (1e-5, 1e-6)}, "acosh": {"float32": (1e-5, 1e-6)},
    "atanh": {"float32": (1e-5, 1e-6)}, "expm1": {"float32": (1e-5, 1e-6)},
    "log1p": {"float32": (1e-5, 1e-6)}, "exp": {"float32": (4e-6, 1e-6)},
    "exp2": {"float32": (4e-6, 1e-6)}, "logistic": {"float32": (4e-6, 1e-6)},
    "tanh": {"float32": (1e-5, 1e-6)}, "log": {"float32": (4e-6, 1e-6)},
    "sin": {"float32": (4e-6, 1e-6)}, "cos": {"float32": (4e-6, 1e-6)},
}
# exact ops: -0.0 must come back as -0.0
UNARY_SIGNED_ZERO = {"neg", "abs", "floor", "ceil", "round", "sign", "sqrt"}


def unary_cases(p, name):
    def cases():
        out = []
        for k, dts in KIND_DTYPES.items():
            if k not in p.table:
                continue
            for dt in dts:
                v = (
                    np.array(UNARY_VALUES[name], dt)
                    if (name in UNARY_VALUES and k == "f")
                    else vals(dt)
                )
                out.append(Case([v.reshape(-1, 1) if v.size % 2 else v.reshape(2, -1)], label=dt))
        if "f" in p.table:
            out += _floatish_extras(lambda x: [x])
        return out
    return cases


for _name, _p in sorted(REGISTRY.items()):
    if getattr(_p, "table", None) is not None and _p.abstract_eval.__code__.co_argcount == 1:
        record(_name, unary_cases(_p, _name), tol=UNARY_TOL.get(_name),
               signed_zero=_name in UNARY_SIGNED_ZERO)


def round_cases():
    halves = np.array(
        [
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            3.5,
            -0.4,
            0.4,
            0.49999997,
            8388607.5,
            -8388607.5,
            16777216.0,
            1e10,
            -0.0,
            0.0,
            np.nan,
            np.inf,
            -np.inf,
        ],
        np.float32,
    )
    out = []
    for method in (0, 1):
        for dt in FLOATS:
            h = halves[np.abs(halves) < 6e4] if dt == "float16" else halves
            out.append(Case([np.concatenate([vals(dt), h.astype(dt)])], {"rounding_method": method},
                            label=f"{dt}-m{method}"))
    return out + _floatish_extras(lambda x: [x])


record("round", round_cases, signed_zero=True)


# ---- binary elementwise

BINARY_TOL = {"pow": {"float32": (1e-5, 1e-6), "float16": (4e-3, 1e-3), "complex64": (2e-5, 1e-6)},
              "atan2": {"float32": (4e-6, 1e-6)},
              "rem": {"float32": (1e-6, 1e-6), "float16": (2e-3, 2e-3)}}
BINARY_SIGNED_ZERO = {"add", "sub", "mul", "div", "max", "min"}


def binary_cases(p, name):
    def cases():
        out = []
        for k, dts in KIND_DTYPES.items():
            if k not in p.table:
                continue
            for dt in dts:
                a, b = cross(vals(dt), vals(dt))
                out.append(Case([a, b], label=dt))
        if "f" in p.table:
            out += _floatish_extras(lambda x: [x, x * 2])
            # a rank-0 operand broadcasts against an array (as lax's scalars do)
            out.append(
                Case([np.float32(2.5).reshape(()), vals("float32")], label="f32-scalar-array")
            )
        else:
            out.append(Case([np.array(3, np.int32), vals("int32")], label="i32-scalar-array"))
        return out
    return cases


for _name, _p in sorted(REGISTRY.items()):
    if getattr(_p, "table", None) is not None and _p.abstract_eval.__code__.co_argcount == 2:
        record(_name, binary_cases(_p, _name), tol=BINARY_TOL.get(_name),
               signed_zero=_name in BINARY_SIGNED_ZERO)


def complex_cases():
    f = vals("float32")
    a, b = cross(f, f)
    return [Case([a, b], label="float32"), Case([np.float32(2.5).reshape(()), f], label="scalar"),
            *_floatish_extras(lambda x: [x, x * 2])]


record("complex", complex_cases, signed_zero=True)
record("conj", lambda: [Case([vals(dt)], dict(input_dtype=np.dtype(dt)), label=dt)
                        for dt in ("complex64", "float32")] + [
    Case([np.zeros((0, 2), np.complex64)], dict(input_dtype=np.dtype(np.complex64)),
         label="empty")], signed_zero=True)


# ---- select_n, convert_element_type, integer_pow, clamp

def select_cases():
    out = []
    for dt in ALL_C:
        v = vals(dt)
        n = len(v)
        pred = (np.arange(n) % 3 == 1)
        out.append(Case([pred, v, v[::-1].copy()], label=f"{dt}-bool"))
    v = vals("float32")
    which = (np.arange(len(v)) % 3).astype(np.int32)
    out.append(Case([which, v, -v, v * 2], label="f32-int3"))
    out.append(
        Case([np.array(True), np.array(1.0, np.float32), np.array(2.0, np.float32)], label="0d")
    )
    out.append(Case([np.zeros((0,), bool), np.zeros((0,), np.float32), np.ones((0,), np.float32)],
                    label="empty"))
    out.append(Case([np.array(False), vals("int32"), vals("int32") + 1], label="scalar-pred"))
    return out


record("select_n", select_cases)


def convert_cases():
    out = []
    for src in ALL_C:
        v = vals(src)
        if _kind(src) == "f":
            with np.errstate(over="ignore"):   # 70000 and beyond are inf in float16
                big = np.array([300.5, -300.5, 70000.0, -1e10, 1e10, 2.5e9, -2.5e9, 4.2e9, 65504.0,
                                127.6, -128.9], np.float64).astype(src)
            v = np.concatenate([v, big])
        for dst in ALL_C:
            out.append(Case([v], dict(new_dtype=np.dtype(dst), weak_type=False, sharding=None),
                            label=f"{src}->{dst}"))
    out.append(
        Case(
            [np.zeros((0, 3), np.float32)],
            dict(new_dtype=np.dtype("int32"), weak_type=False, sharding=None),
            label="empty",
        )
    )
    return out


record("convert_element_type", convert_cases,
       tol={"float16": (1e-3, 0.0), "float32": (0.0, 0.0), "complex64": (0.0, 0.0)})


def ipow_cases():
    out = []
    for dt in FLOATS:
        for y in (0, 1, 2, 3, 5, -1, -2):
            out.append(Case([vals(dt)], dict(y=y), label=f"{dt}-y{y}"))
    for dt in INTS:
        for y in (0, 2, 3):
            out.append(Case([vals(dt)], dict(y=y), label=f"{dt}-y{y}"))
    for y in (0, 1, 2, 3, 5, -1, -3):   # complex: the plain product, XLA's division
        out.append(Case([vals("complex64")], dict(y=y), label=f"c64-y{y}"))
    out.append(Case([np.array(-1.5, np.float32)], dict(y=3), label="0d"))
    out.append(Case([np.zeros((0,), np.float32)], dict(y=2), label="empty"))
    return out


record("integer_pow", ipow_cases, tol={"float32": (4e-6, 1e-30), "float16": (4e-3, 1e-4),
                                      "complex64": (4e-6, 1e-30)})


def clamp_cases():
    out = []
    for dt in FLOATS + INTS:
        v = vals(dt)
        lo, hi = np.array(v[2]), np.array(v[-3])
        if lo > hi:
            lo, hi = hi, lo
        out.append(Case([lo, v, hi], label=f"{dt}-scalar"))
    v = vals("float32")
    out.append(Case([v - 1, v, v + 1], label="f32-arrays"))
    out.append(Case([np.float32(-0.5).reshape(()), np.array([np.nan, -0.0, 0.0, 3.0], np.float32),
                     np.float32(0.5).reshape(())], label="f32-nan"))
    c = vals("complex64")   # XLA's complex clamp: by the real parts, NaN picks the bound
    out.append(Case([np.complex64(-0.5 + 2j).reshape(()), c, np.complex64(1 - 1j).reshape(())],
                    label="c64-scalar"))
    out.append(Case([c[::-1].copy(), c, np.roll(c, 7)], label="c64-arrays"))
    out.append(
        Case(
            [np.array(0, np.int32), np.zeros((0,), np.int32), np.array(1, np.int32)], label="empty"
        )
    )
    return out


record("clamp", clamp_cases, signed_zero=True)


# ---- shape / view ops

def arr(shape, dtype="float32", seed=0):
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if _kind(dt) == "f":
        v = np.random.RandomState(seed).randn(n).astype(dt)
        if n > 3:
            v[:4] = [np.nan, np.inf, -np.inf, -0.0]
    elif dt.kind == "c":
        r = np.random.RandomState(seed)
        v = (r.randn(n) + 1j * r.randn(n)).astype(dt)
        if n > 3:
            v[:4] = [complex(np.nan, 1), complex(1, np.inf), complex(-np.inf, -0.0), -0.0]
    elif dt == np.bool_:
        v = np.random.RandomState(seed).rand(n) > 0.5
    else:
        info = np.iinfo(dt)
        v = (
            np.random.RandomState(seed)
            .randint(max(info.min, -1000), min(info.max, 1000) + 1, n)
            .astype(dt)
        )
        if n > 2:
            v[:2] = [info.min, info.max]
    return v.reshape(shape)


SHAPE_DTYPES = ["float32", "int8", "uint16", "bool", "complex64"] + (["float16"] if F16_OK else [])


def per_dtype(f, dts=SHAPE_DTYPES):
    def cases():
        out = []
        for dt in dts:
            for c in f(dt):
                c.label = f"{dt}-{c.label}"
                out.append(c)
        return out
    return cases


record(
    "broadcast_in_dim",
    per_dtype(
        lambda dt: [
            Case(
                [arr((3,), dt)], dict(shape=(2, 3), broadcast_dimensions=(1,), sharding=None), "row"
            ),
            Case(
                [arr((3, 1), dt)],
                dict(shape=(3, 4), broadcast_dimensions=(0, 1), sharding=None),
                "size1",
            ),
            Case([arr((), dt)], dict(shape=(2, 5), broadcast_dimensions=(), sharding=None), "0d"),
            Case(
                [arr((2,), dt)],
                dict(shape=(2, 3, 4), broadcast_dimensions=(0,), sharding=None),
                "lead",
            ),
            Case(
                [arr((3,), dt)],
                dict(shape=(0, 3), broadcast_dimensions=(1,), sharding=None),
                "empty",
            ),
        ]
    ),
)
record("reshape", per_dtype(lambda dt: [
    Case([arr((2, 6), dt)], dict(new_sizes=(3, 4), dimensions=None, sharding=None), "2d"),
    Case([arr((2, 3, 2), dt)], dict(new_sizes=(12,), dimensions=None, sharding=None), "flat"),
    Case([arr((1,), dt)], dict(new_sizes=(), dimensions=None, sharding=None), "to0d"),
    Case([arr((0, 4), dt)], dict(new_sizes=(2, 0), dimensions=None, sharding=None), "empty"),
]))
record("squeeze", per_dtype(lambda dt: [
    Case([arr((1, 3, 1), dt)], dict(dimensions=(0, 2)), "both"),
    Case([arr((2, 1), dt)], dict(dimensions=(1,)), "last"),
    Case([arr((1,), dt)], dict(dimensions=(0,)), "to0d"),
]))
record("expand_dims", per_dtype(lambda dt: [
    Case([arr((2, 3), dt)], dict(dimensions=(0, 3)), "two"),
    Case([arr((), dt)], dict(dimensions=(0,)), "0d"),
]))
record("transpose", per_dtype(lambda dt: [
    Case([arr((2, 3), dt)], dict(permutation=(1, 0)), "2d"),
    Case([arr((2, 3, 4), dt)], dict(permutation=(2, 0, 1)), "3d"),
    Case([arr((0, 3), dt)], dict(permutation=(1, 0)), "empty"),
]))
record(
    "slice",
    per_dtype(
        lambda dt: [
            Case(
                [arr((5, 6), dt)],
                dict(start_indices=(1, 0), limit_indices=(4, 6), strides=None),
                "plain",
            ),
            Case(
                [arr((7, 6), dt)],
                dict(start_indices=(1, 1), limit_indices=(7, 6), strides=(2, 3)),
                "strided",
            ),
            Case(
                [arr((5,), dt)], dict(start_indices=(2,), limit_indices=(2,), strides=None), "empty"
            ),
        ]
    ),
)
record("rev", per_dtype(lambda dt: [
    Case([arr((3, 4), dt)], dict(dimensions=(0,)), "d0"),
    Case([arr((3, 4), dt)], dict(dimensions=(0, 1)), "both"),
    Case([arr((0, 4), dt)], dict(dimensions=(1,)), "empty"),
]))


def iota_cases():
    out = []
    for dt in FLOATS + INTS:
        out.append(
            Case([], dict(dtype=np.dtype(dt), shape=(5,), dimension=0, sharding=None), label=dt)
        )
    out.append(
        Case(
            [], dict(dtype=np.dtype("int32"), shape=(3, 4), dimension=1, sharding=None), label="2d"
        )
    )
    out.append(
        Case(
            [],
            dict(dtype=np.dtype("int8"), shape=(300,), dimension=0, sharding=None),
            label="i8wrap",
        )
    )
    out.append(
        Case(
            [],
            dict(dtype=np.dtype("float32"), shape=(0,), dimension=0, sharding=None),
            label="empty",
        )
    )
    return out


record("iota", iota_cases)


def _pv(dt):
    return np.array(-9, dt) if _kind(dt) in "fi" else np.array(np.ones((), dt))


record("pad", per_dtype(lambda dt: [
    Case([arr((3,), dt), _pv(dt)], dict(padding_config=((1, 2, 0),)), "lohi"),
    Case([arr((3, 2), dt), _pv(dt)], dict(padding_config=((0, 0, 1), (2, -1, 0))), "interior-neg"),
    Case([arr((4,), dt), _pv(dt)], dict(padding_config=((-2, -1, 0),)), "crop"),
    Case([arr((0,), dt), _pv(dt)], dict(padding_config=((1, 1, 0),)), "empty"),
    Case([arr((3,), dt), _pv(dt)], dict(padding_config=((0, 0, 2),)), "interior"),
]))
record(
    "concatenate",
    per_dtype(
        lambda dt: [
            Case(
                [arr((2, 3), dt, 1), arr((1, 3), dt, 2), arr((3, 3), dt, 3)],
                dict(dimension=0),
                "d0",
            ),
            Case(
                [arr((2, 1), dt, 1), arr((2, 0), dt, 2), arr((2, 2), dt, 3)],
                dict(dimension=1),
                "d1-empty",
            ),
            Case([arr((4,), dt, 1), arr((5,), dt, 2)], dict(dimension=0), "1d"),
        ]
    ),
)


def _i(v):
    return np.array(v, np.int32)


record("dynamic_slice", per_dtype(lambda dt: [
    Case([arr((5, 6), dt), _i(1), _i(2)], dict(slice_sizes=(2, 3)), "inb"),
    Case([arr((5, 6), dt), _i(-3), _i(10)], dict(slice_sizes=(2, 3)), "clamped"),
    Case([arr((5,), dt), _i(4)], dict(slice_sizes=(0,)), "empty"),
]))
record("dynamic_update_slice", per_dtype(lambda dt: [
    Case([arr((5, 6), dt), arr((2, 3), dt, 7), _i(1), _i(2)], {}, "inb"),
    Case([arr((5, 6), dt), arr((2, 3), dt, 7), _i(4), _i(-5)], {}, "clamped"),
    Case([arr((4,), dt), arr((0,), dt, 7), _i(1)], {}, "empty-update"),
]))

# ---- reductions

REDUCE_KINDS = {
    "reduce_sum": "fiuc",
    "reduce_prod": "fiuc",
    "reduce_max": "fiubc",
    "reduce_min": "fiubc",
    "reduce_and": "iub",
    "reduce_or": "iub",
}


def reduce_cases(name):
    def cases():
        out = []
        for dt in ALL_C:
            if (_kind(dt) if dt != "bool" else "b") not in REDUCE_KINDS[name]:
                continue
            v = arr((3, 4, 5), dt)
            if name == "reduce_prod" and _kind(dt) in "fc":
                v = (np.random.RandomState(1).rand(3, 4, 5) + 0.5).astype(dt)
                if dt == "complex64":
                    v = v * np.exp(1j * np.random.RandomState(2).rand(3, 4, 5)).astype(dt)
            for axes in [(2,), (0,), (0, 2), (0, 1, 2), ()]:
                out.append(Case([v], dict(axes=axes, out_sharding=None), label=f"{dt}-{axes}"))
        # long rows exercise the two-pass kernel; 0-d and empty edge cases
        big = np.random.RandomState(2).randn(2, 5000).astype(np.float32)
        if name == "reduce_sum":   # the compensated complex sum, two passes
            cbig = (big + 1j * big[::-1]).astype(np.complex64) + 0.1j
            out.append(Case([cbig.reshape(-1)], dict(axes=(0,), out_sharding=None),
                            label="c64-twopass-all"))
        if name in ("reduce_sum", "reduce_max", "reduce_min"):
            out.append(Case([big], dict(axes=(1,), out_sharding=None), label="f32-twopass"))
            out.append(
                Case([big.reshape(-1)], dict(axes=(0,), out_sharding=None), label="f32-twopass-all")
            )
        if name in ("reduce_and", "reduce_or"):
            b = np.zeros(4000, bool)
            b[1234] = True
            out.append(Case([b], dict(axes=(0,), out_sharding=None), label="bool-twopass"))
            out.append(Case([~b], dict(axes=(0,), out_sharding=None), label="bool-twopass-not"))
        if name in ("reduce_sum", "reduce_prod"):
            out.append(
                Case(
                    [np.zeros((3, 0), np.float32)],
                    dict(axes=(1,), out_sharding=None),
                    label="empty",
                )
            )
            out.append(Case([arr((), "int32")], dict(axes=(), out_sharding=None), label="0d"))
        return out
    return cases


for _name in REDUCE_KINDS:
    record(_name, reduce_cases(_name), tol={"float32": (1e-5, 1e-5), "float16": (5e-3, 5e-3),
                                            "complex64": (1e-5, 1e-5)})


def arg_cases():
    out = []
    for dt in ALL:
        v = arr((3, 4, 5), dt)
        if dt == "int8":
            v = v % 4   # ties: the first index wins
        for axis in (0, 1, 2):
            out.append(
                Case(
                    [v], dict(axes=(axis,), index_dtype=np.dtype(np.int32)), label=f"{dt}-ax{axis}"
                )
            )
    out.append(
        Case(
            [np.array([1.0, np.nan, 3.0, np.nan], np.float32)],
            dict(axes=(0,), index_dtype=np.dtype(np.int32)),
            label="nan-first",
        )
    )
    big = np.random.RandomState(3).randn(3000).astype(np.float32)
    out.append(Case([big], dict(axes=(0,), index_dtype=np.dtype(np.int32)), label="twopass"))
    out.append(
        Case(
            [arr((4,), "float32")],
            dict(axes=(0,), index_dtype=np.dtype(np.uint8)),
            label="u8-index",
        )
    )
    return out


record("argmax", arg_cases)
record("argmin", arg_cases)


# ---- dot_general

def dot_cases():
    out = []
    mm = (((1,), (0,)), ((), ()))
    for dt in ["float32", "int32", "int8", "uint8", "bool", "complex64"] + (
            ["float16"] if F16_OK else []):
        def m(shape, seed):
            if _kind(dt) == "f":
                return np.random.RandomState(seed).randn(*shape).astype(dt)
            if dt == "complex64":
                r = np.random.RandomState(seed)
                return (r.randn(*shape) + 1j * r.randn(*shape)).astype(dt)
            if dt == "bool":
                return np.random.RandomState(seed).rand(*shape) > 0.6
            return (
                np.random.RandomState(seed).randint(-5 if dt[0] == "i" else 0, 6, shape).astype(dt)
            )

        out.append(Case([m((3, 4), 0), m((4, 5), 1)], dict(dimension_numbers=mm), label=f"{dt}-mm"))
        out.append(Case([m((2, 3, 4), 0), m((2, 4, 2), 1)],
                        dict(dimension_numbers=(((2,), (1,)), ((0,), (0,)))), label=f"{dt}-batch"))
    f = lambda *s: np.random.RandomState(sum(s)).randn(*s).astype(np.float32)
    out += [
        Case([f(4), f(4)], dict(dimension_numbers=(((0,), (0,)), ((), ()))), label="vv"),
        Case([f(3, 4), f(4)], dict(dimension_numbers=(((1,), (0,)), ((), ()))), label="mv"),
        Case([f(4, 3), f(4, 5)], dict(dimension_numbers=(((0,), (0,)), ((), ()))), label="tn"),
        Case(
            [f(2, 3, 4), f(3, 4, 5)],
            dict(dimension_numbers=(((1, 2), (0, 1)), ((), ()))),
            label="k2",
        ),
        Case([f(3), f(5)], dict(dimension_numbers=(((), ()), ((), ()))), label="outer"),
        Case([f(70, 33), f(33, 65)], dict(dimension_numbers=mm), label="tiled"),
        Case([f(3, 0), f(0, 4)], dict(dimension_numbers=mm), label="k0"),
        Case([f(0, 3), f(3, 4)], dict(dimension_numbers=mm), label="m0"),
        Case(
            [np.arange(12, dtype=np.int8).reshape(3, 4) * 10, np.full((4, 2), 10, np.int8)],
            dict(dimension_numbers=mm, preferred_element_type=np.dtype(np.int32)),
            label="i8->i32",
        ),
        Case(
            [np.arange(12, dtype=np.int8).reshape(3, 4) * 10, np.full((4, 2), 10, np.int8)],
            dict(dimension_numbers=mm),
            label="i8-wrap",
        ),
    ]
    if F16_OK:
        out.append(
            Case(
                [f(3, 8).astype(np.float16), f(8, 2).astype(np.float16)],
                dict(dimension_numbers=mm, preferred_element_type=np.dtype(np.float32)),
                label="f16->f32",
            )
        )
    return out


record(
    "dot_general",
    dot_cases,
    tol={"float32": (1e-5, 1e-5), "float16": (4e-3, 4e-3), "complex64": (1e-5, 1e-5)},
    signed_zero=False,
)


# ---- gather / scatter

TAKE0 = GDN(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))   # x[idx, :]
POINT = GDN(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1))  # x[i, j]
WINDOW = GDN(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1))  # windows


def gather_cases():
    out = []
    for dt in SHAPE_DTYPES:
        x = arr((5, 3), dt)
        idx = np.array([[0], [4], [2], [-1], [7], [4]], np.int32)
        for mode in ("clip", "fill"):
            out.append(
                Case(
                    [x, idx],
                    dict(dimension_numbers=TAKE0, slice_sizes=(1, 3), mode=mode),
                    label=f"{dt}-take-{mode}",
                )
            )
        ij = np.array([[0, 0], [4, 2], [1, 5], [-1, 1], [2, 1]], np.int32)
        for mode in ("clip", "fill"):
            out.append(
                Case(
                    [x, ij],
                    dict(dimension_numbers=POINT, slice_sizes=(1, 1), mode=mode),
                    label=f"{dt}-point-{mode}",
                )
            )
    x = arr((5, 6), "float32")
    out.append(
        Case(
            [x, np.array([[0, 0], [3, 4], [4, 5]], np.int32)],
            dict(dimension_numbers=WINDOW, slice_sizes=(2, 3), mode="clip"),
            label="window-clip",
        )
    )
    out.append(
        Case(
            [x, np.array([[0, 0], [3, 4], [4, 5]], np.int32)],
            dict(dimension_numbers=WINDOW, slice_sizes=(2, 3), mode="fill", fill_value=-1.0),
            label="window-fill",
        )
    )
    out.append(
        Case(
            [x, np.array([[1], [9]], np.uint8)],
            dict(dimension_numbers=TAKE0, slice_sizes=(1, 6), mode="fill"),
            label="u8-indices",
        )
    )
    out.append(
        Case(
            [x, np.zeros((0, 1), np.int32)],
            dict(dimension_numbers=TAKE0, slice_sizes=(1, 6), mode="clip"),
            label="no-indices",
        )
    )
    return out


record("gather", gather_cases)

SC1 = SDN(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
SCROW = SDN(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))


def scatter_cases(name):
    def cases():
        out = []
        dts = [d for d in ["float32", "int32", "int8", "uint8", "uint16", "bool", "complex64"]
               if not (d == "bool" and name in ("scatter_add", "scatter_mul"))]
        for dt in dts:
            x = arr((6,), dt)
            if name == "scatter_mul" and dt == "float32":
                x = np.arange(1, 7, dtype=np.float32)
            u = arr((5,), dt, 9)
            if name in ("scatter_add", "scatter_mul") and dt[0] in "iu":
                u = (np.arange(5) % 3 + 1).astype(dt) * (60 if dt in ("int8", "uint8") else 1)
            if name == "scatter_mul" and dt == "float32":
                u = np.array([2.0, 0.5, -1.0, 4.0, 3.0], np.float32)
            if dt == "complex64":
                x = np.array([1 + 1j, -2, 0.5j, 3 - 1j, 1, 2j], np.complex64)
                u = np.array([2 - 1j, 0.5j, -1 + 1j, 4, 3 + 3j], np.complex64)
            idx = np.array([[1], [3], [1], [9], [-1]], np.int32)   # duplicates and out-of-bounds
            if name == "scatter":
                idx = np.array([[1], [3], [0], [9], [-1]], np.int32)  # unique in-bounds positions
            out.append(Case([x, idx, u], dict(dimension_numbers=SC1, indices_are_sorted=False,
                                              unique_indices=False, mode="fill"), label=dt))
        if name in ("scatter_min", "scatter_max"):   # complex order: real parts tie, NaN parts
            x = np.array([1 + 1j, np.nan + 1j, 2 + np.nan * 1j, 0j, -1 - 1j], np.complex64)
            u = np.array([1 + 2j, 1 - 5j, 0.5 + 9j, 2 - 1j, np.nan, 3j, -1 - 2j, -1 - 1j],
                         np.complex64)
            idx = np.array([[0], [0], [0], [2], [3], [1], [4], [4]], np.int32)
            out.append(Case([x, idx, u], dict(dimension_numbers=SC1, indices_are_sorted=False,
                                              unique_indices=False, mode="fill"), label="c64-ties"))
        x = arr((4, 3), "float32")
        u = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
        out.append(
            Case(
                [x, np.array([[2], [0]], np.int32), u],
                dict(
                    dimension_numbers=SCROW,
                    indices_are_sorted=False,
                    unique_indices=False,
                    mode="fill",
                ),
                label="rows",
            )
        )
        out.append(
            Case(
                [x, np.zeros((0, 1), np.int32), np.zeros((0, 3), np.float32)],
                dict(
                    dimension_numbers=SCROW,
                    indices_are_sorted=False,
                    unique_indices=False,
                    mode="fill",
                ),
                label="no-updates",
            )
        )
        return out
    return cases


for _name in ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]:
    record(_name, scatter_cases(_name), tol={"float32": (1e-6, 1e-6)})


# ---- primitives added by later families (params taken from tracing the lax wrapper)

def from_lax(name, fn, *args, label="", tol=None):
    """A Case for primitive ``name`` with the params ``fn(*args)`` binds (traced, no GPU)."""
    closed = wjax.make_jaxpr(fn)(*args)
    jaxpr = closed.jaxpr
    eqn = next(e for e in jaxpr.eqns if e.prim.name == name)
    pos = {v.id: i for i, v in enumerate(jaxpr.invars)}
    ops = []
    for a in eqn.invars:
        if hasattr(a, "id") and a.id in pos:
            ops.append(np.asarray(args[pos[a.id]]))
        elif hasattr(a, "val"):
            ops.append(np.asarray(a.val))
        else:
            raise AssertionError(f"{name}: operand {a} is computed inside the lax wrapper")
    return Case(ops, eqn.params, label=label, tol=tol)


def bitcast_cases():
    out = []
    pairs = [("float32", "int32"), ("float32", "uint32"), ("int32", "float32"), ("uint32", "int32"),
             ("int8", "uint8"), ("uint8", "int8"), ("int16", "uint16"), ("uint16", "int16"),
             ("int32", "int32")]
    for src, dst in pairs:
        v = vals(src)
        if src == "int32" and dst == "float32":
            v = v[np.isfinite(v.view(np.float32))]   # NaN payloads need not survive a float read
        out.append(Case([v], dict(new_dtype=np.dtype(dst)), label=f"{src}->{dst}"))
    out.append(
        Case([np.zeros((0, 2), np.float32)], dict(new_dtype=np.dtype("int32")), label="empty")
    )
    return out


record("bitcast_convert_type", bitcast_cases)


def conv_cases():
    from wjax import lax
    f = lambda *s: np.random.RandomState(sum(s)).randn(*s).astype(np.float32)
    out = [
        from_lax(
            "conv_general_dilated",
            lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
            f(1, 2, 5, 6),
            f(3, 2, 3, 3),
            label="same",
        ),
        from_lax(
            "conv_general_dilated",
            lambda x, w: lax.conv_general_dilated(
                x, w, (2, 1), ((1, 0), (2, 1)), rhs_dilation=(1, 2)
            ),
            f(2, 1, 7, 6),
            f(2, 1, 2, 3),
            label="stride-pad-dilate",
        ),
        from_lax(
            "conv_general_dilated",
            lambda x, w: lax.conv_general_dilated(x, w, (1,), ((1, 1),), lhs_dilation=(2,)),
            f(1, 1, 5),
            f(1, 1, 3),
            label="1d-lhs-dilation",
        ),
        from_lax(
            "conv_general_dilated",
            lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2),
            f(1, 4, 4, 4),
            f(4, 2, 2, 2),
            label="groups",
        ),
        from_lax(
            "conv_general_dilated",
            lambda x, w: lax.conv_general_dilated(
                x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
            ),
            f(1, 5, 5, 2),
            f(3, 3, 2, 4),
            label="nhwc",
        ),
        from_lax(
            "conv_general_dilated",
            lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"),
            np.arange(12, dtype=np.int32).reshape(1, 2, 6) - 5,
            np.arange(6, dtype=np.int32).reshape(1, 2, 3) - 2,
            label="int32",
        ),
    ]
    if F16_OK:
        out.append(
            from_lax(
                "conv_general_dilated",
                lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"),
                f(1, 2, 6).astype(np.float16),
                f(3, 2, 3).astype(np.float16),
                label="f16",
            )
        )
    return out


record("conv_general_dilated", conv_cases, tol={"float32": (1e-5, 1e-5), "float16": (4e-3, 4e-3)})

CUM_KINDS = {
    "cumsum": "fiuc",
    "cumprod": "fiuc",
    "cummax": "fiub",
    "cummin": "fiub",
    "cumlogsumexp": "f",
}


def cum_cases(name):
    def cases():
        out = []
        for dt in ALL_C:
            if (_kind(dt) if dt != "bool" else "b") not in CUM_KINDS[name]:
                continue
            v = arr((3, 5), dt)
            if name == "cumprod" and _kind(dt) in "fc":
                v = (np.random.RandomState(1).rand(3, 5) + 0.5).astype(dt)
                if dt == "complex64":
                    v = v * np.exp(1j * np.random.RandomState(2).rand(3, 5)).astype(dt)
            for axis, rev in ((1, False), (0, True)):
                out.append(
                    Case(
                        [v],
                        dict(axis=axis, reverse=rev),
                        label=f"{dt}-ax{axis}-{'rev' if rev else 'fwd'}",
                    )
                )
        big = np.random.RandomState(4).rand(3000).astype(np.float32)
        out.append(Case([big], dict(axis=0, reverse=False), label="f32-long"))
        out.append(Case([np.zeros((0, 3), np.float32)], dict(axis=0, reverse=False), label="empty"))
        return out
    return cases


for _name in CUM_KINDS:
    record(_name, cum_cases(_name), tol={"float32": (2e-5, 1e-5), "float16": (4e-3, 4e-3),
                                         "complex64": (2e-5, 1e-5)})


def sort_cases():
    out = []
    for dt in ALL:
        v = arr((3, 7), dt)
        out.append(Case([v], dict(dimension=1, is_stable=True, num_keys=1), label=f"{dt}-rows"))
        out.append(Case([v], dict(dimension=0, is_stable=True, num_keys=1), label=f"{dt}-cols"))
    k = np.array([3, 1, 2, 1, 3, 0, 2, 1], np.int32)
    out.append(
        Case(
            [k, np.arange(8, dtype=np.float32)],
            dict(dimension=0, is_stable=True, num_keys=1),
            label="key-val-stable",
        )
    )
    out.append(Case([k, k[::-1].copy(), np.arange(8, dtype=np.int32)],
                    dict(dimension=0, is_stable=True, num_keys=2), label="two-keys"))
    out.append(Case([np.array([np.nan, -0.0, 0.0, -np.inf, 1.0, np.inf, -1.0, np.nan], np.float32)],
                    dict(dimension=0, is_stable=True, num_keys=1), label="f32-specials"))
    out.append(Case([np.random.RandomState(5).randn(1500).astype(np.float32)],
                    dict(dimension=0, is_stable=True, num_keys=1), label="f32-long"))
    out.append(
        Case(
            [np.zeros((0,), np.float32)],
            dict(dimension=0, is_stable=True, num_keys=1),
            label="empty",
        )
    )
    return out


record("sort", sort_cases, signed_zero=True)


def top_k_cases():
    out = []
    for dt in FLOATS + INTS:
        out.append(Case([arr((3, 6), dt)], dict(k=3, axis=1), label=f"{dt}"))
    out.append(
        Case(
            [np.array([1.0, np.nan, 3.0, 3.0, -np.inf], np.float32)],
            dict(k=5, axis=0),
            label="specials",
        )
    )
    out.append(Case([arr((4, 3), "float32")], dict(k=2, axis=0), label="axis0"))
    out.append(Case([arr((5,), "int32")], dict(k=0, axis=0), label="k0"))
    return out


record("top_k", top_k_cases, signed_zero=True)


def _keys(*shape):
    return (
        np.random.RandomState(sum(shape) + 7)
        .randint(0, 2**32, shape + (2,), dtype=np.uint64)
        .astype(np.uint32)
    )


def random_bits_cases():
    out = []
    for part in (True, False):
        for bw in (8, 16, 32):
            out.append(Case([_keys()], dict(bit_width=bw, shape=(3, 5), _partitionable=part),
                            label=f"w{bw}-{'part' if part else 'orig'}"))
        out.append(Case([_keys(2)], dict(bit_width=32, shape=(4,), _partitionable=part),
                        label=f"batched-{'part' if part else 'orig'}"))
    out.append(Case([_keys()], dict(bit_width=32, shape=(0,), _partitionable=True), label="empty"))
    return out


record("random_bits", random_bits_cases)
record(
    "random_split",
    lambda: (
        [
            Case([_keys()], dict(shape=(3,), _partitionable=part), label=f"3-{part}")
            for part in (True, False)
        ]
        + [Case([_keys(2)], dict(shape=(2, 2), _partitionable=True), label="batched")]
    ),
)
record("random_fold_in", lambda: [
    Case([_keys(), np.array(7, np.uint32)], {}, label="scalar"),
    Case([_keys(3), np.array([0, 1, 2**32 - 1], np.uint32)], {}, label="batched")])


def random_gamma_cases():
    a = np.array([0.3, 1.0, 2.5, 7.0] * 50, np.float32)
    return [Case([_keys(a.size), a], dict(log_space=ls, _partitionable=True), label=f"log{ls}")
            for ls in (False, True)]


record("random_gamma", random_gamma_cases)

record("reduce_precision", lambda: [
    Case([vals(dt)], dict(exponent_bits=e, mantissa_bits=m), label=f"{dt}-e{e}m{m}")
    for dt in FLOATS for e, m in ((8, 7), (5, 10), (8, 23), (3, 2))] + [
    Case([np.array([1.0009765625, 65519.0, 65520.0, 1e-8, -1e-8], np.float32)],
         dict(exponent_bits=5, mantissa_bits=10), label="f16-rounding")], signed_zero=True)


def fma_cases():
    out = []
    for dt in FLOATS:
        a, b = cross(vals(dt), vals(dt))
        out.append(Case([a, b, np.roll(a, 3)], {}, label=dt))
    r = np.random.RandomState(6)
    x, y, z = (r.randn(3, 500) * 10 ** r.uniform(-3, 3, (3, 500))).astype(np.float32)
    out.append(Case([x, y, z], {}, label="f32-random", tol=(0.0, 0.0)))
    out.append(
        Case(
            [np.float32(0.1).reshape(()), np.float32(10).reshape(()), np.float32(-1).reshape(())],
            {},
            label="single-rounding",
            tol=(0.0, 0.0),
        )
    )
    return out


record("fma", fma_cases, signed_zero=True)
record("optimization_barrier", lambda: [
    Case([vals("float32"), vals("int32")], label="f32-i32"),
    Case([np.zeros((0,), np.float32)], label="empty")], signed_zero=True)


# ---- lax's special functions (wjax/_src/prims/special.py), against SciPy's float64 references

def _special_cases(make, f16_make=None):
    """A float32 case from ``make(dtype)``, float16 where the adapter has it, 0-d and empty."""
    out = [Case(make("float32"), label="float32")]
    if F16_OK and f16_make is not None:
        out.append(Case(f16_make("float16"), label="float16"))
    return out + _floatish_extras(lambda x: [x] * len(make("float32")))


def _grid(xs, ys, dt):
    a, b = cross(np.asarray(xs, np.float64), np.asarray(ys, np.float64))
    return [a.astype(dt), b.astype(dt)]


_IGA = [np.nan, 0.0, 0.1, 0.5, 1.0, 2.5, 7.0, 20.0, -1.0]
_IGX = [np.nan, np.inf, 0.0, 0.01, 0.3, 1.0, 2.0, 5.0, 15.0, 40.0, -1.0]
for _n in ("igamma", "igammac"):
    record(_n, lambda: _special_cases(lambda dt: _grid(_IGA, _IGX, dt),
                                      lambda dt: _grid([0.5, 2.5], [0.3, 2.0, 5.0], dt)),
           tol={"float32": (5e-5, 1e-6), "float16": (4e-3, 1e-3)})
# the derivatives in ``a`` (references: central differences of SciPy's gammainc in float64)
for _n in ("igamma_grad_a", "random_gamma_grad"):
    record(_n, lambda: _special_cases(
        lambda dt: _grid([0.1, 0.5, 1.0, 2.5, 7.0, 20.0], [0.01, 0.3, 1.0, 2.0, 5.0, 15.0, 40.0],
                         dt)), tol={"float32": (2e-4, 1e-5)})
record("regularized_incomplete_beta", lambda: _special_cases(
    lambda dt: [v.astype(dt) for v in np.broadcast_arrays(
        *np.meshgrid([0.2, 1.0, 3.0, 10.0], [0.5, 2.0, 8.0], [0.0, 0.05, 0.3, 0.5, 0.9, 1.0],
                     indexing="ij"))]), tol={"float32": (5e-5, 1e-6)})
record("zeta", lambda: _special_cases(
    lambda dt: _grid([1.5, 2.0, 3.5, 8.0, 0.5, 1.0, np.nan], [0.2, 1.0, 3.0, 20.0, -2.5, -2.0],
                     dt)), tol={"float32": (2e-5, 1e-6)})
record("polygamma", lambda: _special_cases(
    lambda dt: _grid([0.0, 1.0, 2.0, 3.0, 1.5, -1.0], [0.3, 1.0, 2.5, 10.0, -1.5], dt)),
    tol={"float32": (2e-5, 1e-6)})
for _n in ("bessel_i0e", "bessel_i1e"):
    record(_n, lambda: _special_cases(lambda dt: [vals(dt)], lambda dt: [vals(dt)]),
           tol={"float32": (2e-6, 1e-7), "float16": (2e-3, 1e-4)})
record("erfc", lambda: _special_cases(lambda dt: [vals(dt)], lambda dt: [vals(dt)]),
       tol={"float32": (2e-6, 1e-40), "float16": (2e-3, 1e-4)})
record("nextafter", lambda: _special_cases(lambda dt: list(cross(vals(dt), vals(dt))),
                                           lambda dt: list(cross(vals(dt), vals(dt)))),
       tol={"float32": (0.0, 0.0), "float16": (0.0, 0.0)}, signed_zero=True)
record(
    "name",      # checkpoint_name's identity
    lambda: [Case([vals(dt)], {"name": "h"}, label=dt) for dt in ALL]
    + [Case([np.zeros((0, 2), np.float32)], {"name": "h"}, label="empty")],
    signed_zero=True,
)
record(
    "stop_gradient",
    lambda: (
        [Case([vals(dt)], label=dt) for dt in ALL]
        + [
            Case([np.array(2.0, np.float32)], label="0d"),
            Case([np.zeros((0, 2), np.float32)], label="empty"),
        ]
    ),
    signed_zero=True,
)

def _spd(n, batch=(), seed=0, dt=np.float32):
    a = np.random.RandomState(seed).randn(*batch, n, n)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dt)


def _tri(n, lower, seed=0, dt=np.float32, batch=()):
    a = np.random.RandomState(seed).randn(*batch, n, n) + 3 * np.eye(n)
    return (np.tril(a) if lower else np.triu(a)).astype(dt)


F_LINALG = ["float32"] + (["float16"] if F16_OK else [])
record("cholesky", lambda: [Case([_spd(4, dt=dt)], label=dt) for dt in F_LINALG] + [
    Case([_spd(3, (2,), seed=1)], label="batched"),
    Case([np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)], label="not-pd"),
    Case([np.zeros((0, 0), np.float32)], label="empty")],
    tol={"float32": (2e-5, 2e-5), "float16": (1e-2, 1e-2)})
record(
    "lu",
    lambda: (
        [Case([np.random.RandomState(2).randn(4, 4).astype(dt)], label=dt) for dt in F_LINALG]
        + [
            Case(
                [np.random.RandomState(3).randn(2, 3, 5).astype(np.float32)], label="wide-batched"
            ),
            Case([np.random.RandomState(4).randn(5, 3).astype(np.float32)], label="tall"),
            Case([np.array([[0.0, 1.0], [2.0, 3.0]], np.float32)], label="pivot"),
        ]
    ),
    tol={"float32": (2e-5, 2e-5), "float16": (1e-2, 1e-2)},
)


def ts_cases():
    out = []
    b = np.random.RandomState(5).randn(4, 3).astype(np.float32)
    for left in (True, False):
        for lower in (True, False):
            for tr in (False, True):
                rhs = b if left else b.T.copy()
                out.append(
                    Case(
                        [_tri(4, lower, seed=6), rhs],
                        dict(
                            left_side=left,
                            lower=lower,
                            transpose_a=tr,
                            conjugate_a=False,
                            unit_diagonal=False,
                        ),
                        label=(f"{'L' if left else 'R'}-{'lo' if lower else 'up'}-"
                               f"{'T' if tr else 'N'}"),
                    )
                )
    out.append(
        Case(
            [
                _tri(3, True, seed=7, batch=(2,)),
                np.random.RandomState(8).randn(2, 3, 2).astype(np.float32),
            ],
            dict(
                left_side=True, lower=True, transpose_a=False, conjugate_a=False, unit_diagonal=True
            ),
            label="batched-unit",
        )
    )
    return out


record("triangular_solve", ts_cases, tol={"float32": (5e-5, 5e-5)})
record("lu_pivots_to_permutation", lambda: [
    Case([np.array([2, 2, 3, 3], np.int32)], dict(permutation_size=5), label="swaps"),
    Case([np.array([[1, 1], [0, 1]], np.int32)], dict(permutation_size=2), label="batched"),
    Case([np.zeros((0,), np.int32)], dict(permutation_size=3), label="no-pivots"),
])


def fft_cases():
    """Each transform over 1-3 trailing axes: powers of two, mixed radices, Bluestein (17),
    odd and even IRFFT lengths, an empty batch; finite values (an inf or NaN spreads over a
    whole row, as in NumPy, but which of the two each output gets depends on the order of
    the butterflies)."""
    from wjax.lax import FftType as T
    r = np.random.RandomState(11)

    def c(*shape):
        return (r.randn(*shape) + 1j * r.randn(*shape)).astype(np.complex64)

    def f(*shape):
        return r.randn(*shape).astype(np.float32)

    return [
        Case([c(8)], dict(fft_type=T.FFT, fft_lengths=(8,)), label="fft-8"),
        Case([c(2, 17)], dict(fft_type=T.FFT, fft_lengths=(17,)), label="fft-17-bluestein"),
        Case([c(2, 3, 20)], dict(fft_type=T.FFT, fft_lengths=(3, 20)), label="fft-2d"),
        Case([c(2, 3, 4)], dict(fft_type=T.FFT, fft_lengths=(2, 3, 4)), label="fft-3d"),
        Case([c(3, 5)], dict(fft_type=T.IFFT, fft_lengths=(3, 5)), label="ifft-2d"),
        Case([c(4, 96)], dict(fft_type=T.IFFT, fft_lengths=(96,)), label="ifft-96"),
        Case([f(2, 6)], dict(fft_type=T.RFFT, fft_lengths=(6,)), label="rfft-6"),
        Case([f(3, 7)], dict(fft_type=T.RFFT, fft_lengths=(3, 7)), label="rfft-2d-odd"),
        Case([c(2, 4)], dict(fft_type=T.IRFFT, fft_lengths=(6,)), label="irfft-6"),
        Case([c(2, 4)], dict(fft_type=T.IRFFT, fft_lengths=(7,)), label="irfft-7"),
        Case([c(3, 2, 5)], dict(fft_type=T.IRFFT, fft_lengths=(2, 8)), label="irfft-2d"),
        Case([c(1)], dict(fft_type=T.FFT, fft_lengths=(1,)), label="fft-1"),
        Case([np.zeros((0, 4), np.complex64)], dict(fft_type=T.FFT, fft_lengths=(4,)),
             label="empty"),
    ]


record("fft", fft_cases, tol={"complex64": (2e-5, 2e-5), "float32": (2e-5, 2e-5)})

# primitives with no NumPy reference by design, and what their record checks instead
NO_REFERENCE = {
    "random_gamma": "a rejection-sampling loop per element (JAX's exact key splits); checked here "
                    "statistically (positive, finite, mean ~ a) and jit == eager",
}


def _check_random_gamma(case, got):
    a = case.args[1]
    g = np.asarray(got)
    if case.params["log_space"]:
        g = np.exp(g)
    assert np.isfinite(g).all() and (g > 0).all()
    for av in np.unique(a):
        m = g[a == av].mean()
        assert abs(m - av) < 4 * np.sqrt(av / (a == av).sum()) + 0.05, (av, m)


CUSTOM_CHECK = {"random_gamma": _check_random_gamma}


# --------------------------------------------------------------------------- checking

def _tol(rec, case, dtype):
    if case.tol is not None:
        return case.tol
    return rec.tol.get(np.dtype(dtype).name, (0.0, 0.0))


def _assert_complex_matches(got, want, rtol, atol, signed_zero, what):
    """complex: NaN and inf per component; finite values normwise, |g - w| <= atol + rtol |w|
    (a component beside a non-finite one: on its own)."""
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    fin = np.isfinite(w) & np.isfinite(g)
    for pg, pw in ((g.real, w.real), (g.imag, w.imag)):
        nan = np.isnan(pg) != np.isnan(pw)
        assert not nan.any(), f"{what}: NaN mismatch: got {got[nan][:5]}, want {want[nan][:5]}"
        inf = np.isinf(pw) | np.isinf(pg)
        assert (pg[inf] == pw[inf]).all(), (
            f"{what}: inf mismatch: got {got[inf][:5]}, want {want[inf][:5]}")
        part = ~fin & np.isfinite(pg) & np.isfinite(pw)
        bad = np.abs(pg[part] - pw[part]) > atol + rtol * np.abs(pw[part])
        assert not bad.any(), f"{what}: got {got[part][bad][:5]}, want {want[part][bad][:5]}"
        if signed_zero:
            z = (pw == 0) & (pg == 0)
            sb = np.signbit(pg[z]) != np.signbit(pw[z])
            assert not sb.any(), (
                f"{what}: signed-zero mismatch: got {got[z][sb][:5]}, want {want[z][sb][:5]}")
    bad = ~(np.abs(g[fin] - w[fin]) <= atol + rtol * np.abs(w[fin]))
    assert not bad.any(), (f"{what}: values differ: got {got[fin][bad][:6]}, want "
                           f"{want[fin][bad][:6]} (normwise rtol={rtol}, atol={atol})")


def assert_matches(got, want, rtol, atol, signed_zero=False, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype.kind == "c":
        return _assert_complex_matches(got, want, rtol, atol, signed_zero, what)
    if _kind(got.dtype) != "f":
        bad = got != want
        assert not bad.any(), (
            f"{what}: mismatch at {np.argwhere(bad)[:5].tolist()}: "
            f"got {got[bad][:5]}, want {want[bad][:5]}"
        )
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    assert (gn == wn).all(), (
        f"{what}: NaN mismatch: got {got[gn != wn][:5]}, want {want[gn != wn][:5]}"
    )
    inf = np.isinf(w)
    assert (g[inf] == w[inf]).all(), f"{what}: inf mismatch: got {got[inf]}, want {want[inf]}"
    fin = ~wn & ~inf
    err = np.abs(g[fin] - w[fin])
    lim = atol + rtol * np.abs(w[fin])
    bad = ~(err <= lim)
    assert not bad.any(), (
        f"{what}: values differ: got {got[fin][bad][:6]}, want {want[fin][bad][:6]} "
        f"(rtol={rtol}, atol={atol})"
    )
    if signed_zero:
        z = (w == 0) & (g == 0)
        sb = np.signbit(g[z]) != np.signbit(w[z])
        assert not sb.any(), f"{what}: signed-zero mismatch: got {got[z][sb]}, want {want[z][sb]}"


def _ref_value(prim, case):
    with np.errstate(all="ignore"):
        want = prim.reference(*[np.asarray(a) for a in case.args], **case.params)
    if prim.multiple_results:
        return [np.asarray(w) for w in want]
    return np.asarray(want)


ALL_CASES = [(name, i, c.label) for name, rec in sorted(RECORDS.items())
             for i, c in enumerate(rec.cases())]


def _case_id(t):
    return f"{t[0]}-{t[2]}"


@pytest.mark.parametrize("name,i,label", ALL_CASES, ids=[_case_id(t) for t in ALL_CASES])
def test_eager_matches_reference_and_jit(name, i, label):
    rec = RECORDS[name]
    case = rec.cases()[i]
    prim = REGISTRY[name]
    host = [np.asarray(a) for a in case.args]
    arrays = [asarray_device(a) for a in host]
    for a, h in zip(arrays, host):
        assert a.dtype == h.dtype, (a.dtype, h.dtype)
    multi = prim.multiple_results
    got = prim.bind(*arrays, **case.params)
    gots = list(got) if multi else [got]
    # abstract eval agrees with what ran
    aval = prim.abstract_eval(*[a.aval for a in arrays], **case.params)
    avals = list(aval) if multi else [aval]
    assert len(gots) == len(avals)
    for g, a in zip(gots, avals):
        assert isinstance(g, wjax.Array)
        assert g.aval == a, (g.aval, a)
    if name in CUSTOM_CHECK:
        CUSTOM_CHECK[name](case, got)
    else:
        want = _ref_value(prim, case)
        wants = want if multi else [want]
        for k, (g, w) in enumerate(zip(gots, wants)):
            rtol, atol = _tol(rec, case, w.dtype)
            assert_matches(g, w, rtol, atol, rec.signed_zero, what=f"{name}[{label}] eager out {k}")
    jitted = wjax.jit(lambda *a: prim.bind(*a, **case.params))(*arrays)
    jits = list(jitted) if multi else [jitted]
    for k, (g, j) in enumerate(zip(gots, jits)):
        assert j.aval == g.aval
        g, j = np.asarray(g), np.asarray(j)
        if rec.jit_exact:
            assert_matches(
                j, g, 0.0, 0.0, signed_zero=True, what=f"{name}[{label}] jit vs eager {k}"
            )
        else:
            assert_matches(
                j, g, *_tol(rec, case, g.dtype), what=f"{name}[{label}] jit vs eager {k}"
            )


def test_every_primitive_has_a_record():
    missing = sorted(n for n in REGISTRY if n not in RECORDS and n not in EXCLUDED)
    assert not missing, f"primitives without a test record in tests/test_ops.py: {missing}"
    for n in EXCLUDED:   # only call-like primitives may go without a record
        p = REGISTRY.get(n)
        assert p is None or p.multiple_results or p.impl is not None or p.collective, n
    stale = sorted(n for n in RECORDS if n not in REGISTRY)
    assert not stale, f"records for unregistered primitives: {stale}"


def test_records_are_well_formed():
    supported = {np.dtype(d) for d in ALL_C}
    for name, rec in RECORDS.items():
        labels = [c.label for c in rec.cases()]
        assert labels, name
        assert len(set(labels)) == len(labels), f"{name}: duplicate case labels"
        for c in rec.cases():
            for a in c.args:
                assert np.asarray(a).dtype in supported, (name, c.label, np.asarray(a).dtype)
        # float-accepting elementwise ops are exercised on NaN, inf, -0.0, 0-d and empty input
        table = getattr(REGISTRY.get(name), "table", None)
        if table is not None and "f" in table:
            f32 = [c for c in rec.cases() if c.label == "float32"]
            assert f32 and any(
                np.isnan(a).any() and np.isinf(a).any() and (np.signbit(a) & (a == 0)).any()
                for a in f32[0].args
            ), name
            assert {"f32-0d", "f32-empty"} <= set(labels), name


@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if n not in EXCLUDED))
def test_primitive_has_required_rules(name):
    p = REGISTRY[name]
    assert callable(p.abstract_eval), f"{name} has no abstract_eval rule"
    if name in NO_REFERENCE:
        assert name in CUSTOM_CHECK
    else:
        assert callable(p.reference), f"{name} has no reference rule"
    assert callable(p.fuse) or callable(p.kernel) or callable(p.impl), f"{name} has no WGSL rule"


@pytest.mark.parametrize(
    "name", sorted(n for n, p in REGISTRY.items() if getattr(p, "table", None))
)
def test_rejected_dtypes_raise_type_error(name):
    """A dtype kind missing from an elementwise op's WGSL table is rejected at abstract eval."""
    from wjax._src.core.ir import ShapedArray
    p = REGISTRY[name]
    nargs = p.abstract_eval.__code__.co_argcount
    rejected = [k for k in "fiubc" if k not in p.table]
    for k in rejected:
        dt = KIND_DTYPES[k][0]
        with pytest.raises(TypeError, match=dt):
            p.abstract_eval(*[ShapedArray((2,), dt)] * nargs)


def test_binary_ops_require_equal_dtypes_and_shapes():
    from wjax._src.core.ir import ShapedArray
    with pytest.raises(TypeError, match="int32.*float32|same dtypes"):
        REGISTRY["add"].abstract_eval(ShapedArray((2,), "int32"), ShapedArray((2,), "float32"))
    with pytest.raises(TypeError, match=r"\(2,\).*\(3,\)"):
        REGISTRY["add"].abstract_eval(ShapedArray((2,), "float32"), ShapedArray((3,), "float32"))


# --------------------------------------------------------------------------- vs real JAX

JAX_LAX_NAME = {
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "not": "bitwise_not",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "rem": "rem",
}


def _atan2_cut_sign(got, want):
    """Complex atan2 on log's cut (a real part of +-pi, exactly): the sign of the pi follows
    rounding noise in XLA (cmath_ref.atan2); ``got`` with JAX's sign there, other points kept."""
    g = np.array(got)
    pi = np.float32(np.pi)
    cut = (np.abs(np.abs(g.real) - pi) <= 2e-7) & (np.abs(want.real + g.real) <= 4e-7)
    assert cut.sum() <= 14, cut.sum()   # 14 of the 8649 pairs, never a pattern
    g.real[cut] = want.real[cut]
    return g


def _digamma_pole_as_jax_0_10(x, want):
    """digamma at the pole x = +-0: NaN in JAX 0.10 (XLA's rule for every non-positive
    integer), which wjax follows; JAX 0.11 gives -inf there (an H200 run).  Elsewhere unchanged."""
    want = np.array(want)
    pole = (np.asarray(x, np.float32) == 0) & np.isinf(want.astype(np.float32))
    want[pole] = np.nan
    return want


@pytest.mark.parametrize("dt", ["float32", "int8", "uint8", "int16", "int32", "uint32",
                                "complex64", "bfloat16"])
def test_elementwise_references_match_real_jax(dt):
    """The reference rules (the living spec) agree with XLA's lax on the same inputs."""
    jax = pytest.importorskip("jax")
    from jax import lax as jlax
    bad = []
    kind = _kind(dt)
    ops = {}
    for name, p in sorted(REGISTRY.items()):
        table = getattr(p, "table", None)
        if table is None or kind not in table:
            continue
        nargs = p.abstract_eval.__code__.co_argcount
        f = getattr(jlax, JAX_LAX_NAME.get(name, name), None)
        if f is None:
            continue
        args = [vals(dt)] if nargs == 1 else list(cross(vals(dt), vals(dt)))
        try:   # JAX rejects some dtypes wjax accepts (abs of uint): leave those out
            jax.eval_shape(f, *args)
        except TypeError:
            continue
        ops[name] = (f, args)
    # operands as jit arguments: XLA would constant-fold closed-over ones (int div by 0 traps)
    wants = jax.jit(lambda d: {n: ops[n][0](*a) for n, a in d.items()})(
        {n: a for n, (f, a) in ops.items()})
    assert len(ops) >= 10
    for name, (f, args) in ops.items():
        p = REGISTRY[name]
        want = np.asarray(wants[name])
        got = _ref_value(p, Case(args))
        tol = {"float32": (1e-5, 1e-6), "complex64": (1e-5, 1e-6),
               "bfloat16": (8e-3, 1e-6)}.get(dt, (0, 0))
        if name == "atan2" and dt == "complex64":
            got = _atan2_cut_sign(got, want)
        if name == "digamma":
            want = _digamma_pole_as_jax_0_10(args[0], want)
        try:   # JAX's complex zeros carry signs of their own: not compared
            assert_matches(got, want, *tol, what=name,
                           signed_zero=RECORDS[name].signed_zero and dt != "complex64")
        except AssertionError as e:
            bad.append(str(e))
    assert not bad, "\n".join(bad)


def test_convert_reference_matches_real_jax():
    jax = pytest.importorskip("jax")
    bad = []
    cases = [c for c in convert_cases() if c.label != "empty"]
    with warnings.catch_warnings():    # JAX's ComplexWarning for complex -> real: expected
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        wants = jax.jit(lambda xs: [jax.lax.convert_element_type(x, c.params["new_dtype"])
                                    for x, c in zip(xs, cases)])([c.args[0] for c in cases])
    for c, want in zip(cases, wants):
        want = np.asarray(want)
        got = _ref_value(REGISTRY["convert_element_type"], c)
        try:
            assert_matches(got, want, 1e-3 if want.dtype == np.float16 else 0, 0, what=c.label)
        except AssertionError as e:
            bad.append(str(e))
    assert not bad, "\n".join(bad)
