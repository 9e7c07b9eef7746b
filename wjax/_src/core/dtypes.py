r"""Dtypes, weak types and JAX's type-promotion lattice (with x64 disabled).

wjax follows JAX's dtype rules exactly, in the mode JAX calls "x64 disabled":
WebGPU has no 64-bit numbers, so 64-bit dtypes are *canonicalized* to their
32-bit counterparts (float64 -> float32, int64 -> int32, uint64 -> uint32,
complex128 -> complex64).  Dtype objects are plain ``numpy.dtype`` instances.

Weak types
----------
A Python scalar (``1``, ``2.0``, ``1j``) has no bit width of its own.  JAX calls
its dtype *weak*: it adopts the width of whatever strongly-typed value it meets
(``int8_array + 1`` stays int8).  Alone, a weak int is int32, a weak float is
float32.  A Python ``bool`` is NOT weak: it is simply the ``bool`` dtype.
Arrays can be weakly typed too (``jnp.asarray(1.0) * 2`` is a weak float32);
any object with ``weak_type=True`` (or ``aval.weak_type``) counts as weak.

The promotion lattice
---------------------
Promotion is the least upper bound (join) of the operands on this graph, where
an edge ``a -> b`` means "a promotes to b" and ``i*``, ``f*``, ``c*`` are the
weak int, float and complex nodes::

    bool   -> i*
    i*     -> uint8, int8
    uint8  -> uint16, int16            int8  -> int16
    uint16 -> uint32, int32            int16 -> int32
    uint32 -> uint64, int32  (*)       int32 -> int64
    uint64 -> f*                       int64 -> f*
    f*     -> bfloat16, float16, c*
    bfloat16, float16 -> float32 -> float64 -> complex128
    c* -> complex64 -> complex128,     float32 -> complex64

(*) JAX with x64 on has uint32 -> int64; with x64 off it never *forms* a 64-bit
type from 32-bit inputs, so uint32 + int32 is int32.
The ``_LATTICE`` dict below is the authoritative form of this picture.

Consequences worth knowing (all checked against JAX in tests/test_dtypes.py):

* ``int32 + float16 -> float16`` (any int meets any float at ``f*``, below f16).
* ``int32 + 1.0 -> weak float32``: the join is the weak node ``f*``, so the
  result is weak even though one input was strong.  A result is weak iff the
  join is a weak node (or every input was weak).
* ``uint8 + 1 -> uint8``, ``float16 + 1.0 -> float16``, ``True + 1 -> weak int32``.
* ``promote_types`` does not canonicalize (``promote_types(int, float)`` is
  float64, as in JAX); ``result_type`` does.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import Any

import numpy as np

from .config import config

import ml_dtypes as _ml_dtypes   # bfloat16's host dtype (a dependency, as for JAX)

__all__ = [
    "extended", "ExtendedDType", "prng_key",
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "TypePromotionError", "canonicalize_dtype", "check_supported", "narrow_with_warning",
    "is_weakly_typed", "dtype", "dtype_and_weak", "promote_types", "result_type",
    "issubdtype", "is_float", "is_int", "is_unsigned", "is_bool", "is_complex", "is_inexact",
    "finfo", "iinfo", "default_float_dtype", "default_int_dtype", "default_uint_dtype",
    "default_complex_dtype", "python_scalar_dtypes", "scalar_type_of", "scalar_type_to_dtype",
    "supported_dtypes", "float0", "itemsize_bits",
]

# The dtype of the tangents of integer and boolean values (JAX's ``jax.dtypes.float0``): a
# zero-size void, so grad(f, allow_int=True) returns arrays of it for integer inputs.
float0 = np.dtype([("float0", np.void, 0)])

# ---------------------------------------------------------------------------
# Scalar types (what ``jnp.float32`` etc. are; the Array layer may wrap them).
bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128
bfloat16 = _ml_dtypes.bfloat16

_BF16 = np.dtype(bfloat16)


class TypePromotionError(ValueError):
    """Raised when dtypes have no promotion path (as ``jax.dtypes.TypePromotionError``)."""


# ---------------------------------------------------------------------------
# Canonicalization (x64 disabled).

_TO_32BIT = {
    "int64": np.dtype("int32"), "uint64": np.dtype("uint32"),
    "float64": np.dtype("float32"), "complex128": np.dtype("complex64"),
}
# Python scalar types and the (non-canonical) dtypes NumPy/JAX give them.
python_scalar_dtypes: dict[type, np.dtype] = {
    bool: np.dtype("bool"), int: np.dtype("int64"),
    float: np.dtype("float64"), complex: np.dtype("complex128"),
}
_WEAK_PY_TYPES = (int, float, complex)


def default_int_dtype() -> np.dtype: return np.dtype("int32")
def default_uint_dtype() -> np.dtype: return np.dtype("uint32")
def default_float_dtype() -> np.dtype: return np.dtype("float32")
def default_complex_dtype() -> np.dtype: return np.dtype("complex64")


# Default dtype per dtype kind; used to give weak results their (only) width.
_DEFAULT_FOR_KIND = {"b": lambda: np.dtype("bool"), "i": default_int_dtype,
                     "u": default_uint_dtype, "f": default_float_dtype,
                     "c": default_complex_dtype}


def _is_py_scalar_type(x) -> bool:
    # Identity, not ==: np.dtype('int64') == int is True in NumPy.
    return any(x is t for t in python_scalar_dtypes)


def _np_dtype(x) -> np.dtype:
    try:
        return np.dtype(x)
    except TypeError as e:
        raise TypeError(f"dtype {x!r} not understood") from e


def _kind(dt: np.dtype) -> str:
    """dtype.kind, except bfloat16 (kind 'V' in NumPy) counts as a float."""
    return "f" if dt == _BF16 else dt.kind


# the wjax package (this file is wjax/_src/core/dtypes.py)
_WJAX_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def _user_stacklevel() -> int:
    """``stacklevel`` for warnings.warn in our caller: the first frame outside wjax."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_WJAX_DIR):
        frame, level = frame.f_back, level + 1
    return level


def narrow_with_warning(dt, what: str = "array") -> np.dtype:
    """Canonicalize an *explicitly requested* dtype, warning if it gets narrowed.

    ``narrow_with_warning('float64', 'zeros')`` returns float32 and emits a
    ``UserWarning`` naming both dtypes, like JAX does with x64 disabled.
    """
    requested = _np_dtype(dt)
    out = _TO_32BIT.get(requested.name, requested)
    if out != requested:
        warnings.warn(
            f"Explicitly requested dtype {requested} requested in {what} is not available, "
            f"and will be truncated to dtype {out}. wjax runs on WebGPU, which has no 64-bit "
            "types: it behaves as JAX with jax_enable_x64 off.",
            UserWarning, stacklevel=_user_stacklevel())
    return out


_canonical: dict = {}                  # np.dtype -> its canonical dtype (a memo)
_DTYPE_TYPES = frozenset(type(np.dtype(n)) for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))


def canonicalize_dtype(dt: Any, warn_context: str | None = None) -> np.dtype:
    """Return the dtype wjax uses for ``dt``: 64-bit types become 32-bit.

    Accepts anything ``np.dtype`` does (strings, NumPy scalar types, dtypes) and the
    Python types ``bool``/``int``/``float``/``complex`` (-> bool/int32/float32/complex64).
    ``None`` means the default float.  With ``warn_context`` set (e.g. ``"zeros"``),
    narrowing an explicitly requested 64-bit dtype warns; Python types never warn.
    """
    if dt is None:
        return default_float_dtype()
    if warn_context is None and type(dt) in _DTYPE_TYPES:
        out = _canonical.get(dt)
        if out is None:
            out = _canonical[dt] = _TO_32BIT.get(dt.name, dt)
        return out
    if _is_py_scalar_type(dt):
        dt = python_scalar_dtypes[dt]
    elif warn_context is not None:
        return narrow_with_warning(dt, warn_context)
    dt = _np_dtype(dt)
    return _TO_32BIT.get(dt.name, dt)


# ---------------------------------------------------------------------------
# What the device can hold.

supported_dtypes: tuple[np.dtype, ...] = tuple(np.dtype(n) for n in (
    "bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32",
    "complex64")) + (_BF16,)


def check_supported(dt: Any, what: str = "array", warn: bool = True) -> np.dtype:
    """Validate a user-requested dtype for a wjax array; return its canonical form.

    Supported: bool, int8/16/32, uint8/16/32, float16, bfloat16, float32, complex64 (64-bit
    ints, floats and complex128 are narrowed to 32 bits, with a warning unless ``warn=False`` or
    ``dt`` is a Python type).  Anything else -- strings, objects, datetimes,
    void/structured -- raises ``TypeError`` naming the dtype.
    """
    try:
        out = canonicalize_dtype(dt) if not warn else canonicalize_dtype(dt, warn_context=what)
    except TypeError as e:
        raise TypeError(f"wjax does not support dtype {dt!r} in {what}: {e}") from None
    if out in supported_dtypes:
        return out
    reason = "only numeric and bool dtypes can live on the device"
    raise TypeError(
        f"wjax does not support dtype {out} in {what} ({reason}). Supported dtypes: "
        + ", ".join(d.name for d in supported_dtypes) + " (64-bit types narrow to 32-bit).")


# ---------------------------------------------------------------------------
# The promotion lattice.  Nodes are dtype names, plus 'i*', 'f*', 'c*' for the
# weak int, float and complex types.  Each node lists the nodes directly above it.

_LATTICE: dict[str, list[str]] = {
    "bool": ["i*"],
    "i*": ["uint8", "int8"],
    "uint8": ["uint16", "int16"],
    "uint16": ["uint32", "int32"],
    "uint32": ["uint64", "int32"],  # JAX with x64 on has int64 here; x64 off never forms it
    "uint64": ["f*"],
    "int8": ["int16"], "int16": ["int32"], "int32": ["int64"], "int64": ["f*"],
    "f*": ["bfloat16", "float16", "c*"],
    "bfloat16": ["float32"], "float16": ["float32"],
    "float32": ["float64", "complex64"], "float64": ["complex128"],
    "c*": ["complex64"], "complex64": ["complex128"], "complex128": [],
}
_WEAK_NODES = {"i*": int, "f*": float, "c*": complex}
_WEAK_NAMES = {n: str(t) for n, t in _WEAK_NODES.items()}   # as JAX's messages name them


def _upper_bounds(lattice: dict[str, list[str]]) -> dict[str, frozenset[str]]:
    """Each node's set of upper bounds: itself and everything reachable above it."""
    ub: dict[str, frozenset[str]] = {}

    def visit(n: str) -> frozenset[str]:
        if n not in ub:
            ub[n] = frozenset({n}).union(*(visit(m) for m in lattice[n]))
        return ub[n]

    for n in lattice:
        visit(n)
    return ub


_UB = _upper_bounds(_LATTICE)


@functools.lru_cache(maxsize=None)
def _join(nodes: frozenset[str]) -> str:
    """Least upper bound of lattice nodes: the common upper bound below all others."""
    for n in nodes:
        if n not in _UB:
            raise TypePromotionError(f"dtype {n} is not a valid dtype for wjax type promotion")
    common = frozenset.intersection(*(_UB[n] for n in nodes))
    least = [c for c in common if common <= _UB[c]]
    if len(least) != 1:  # cannot happen on this lattice; kept as a guard
        raise TypePromotionError(f"dtypes {sorted(nodes)} have no unique promotion path")
    return least[0]


def _node(dt: np.dtype, weak: bool) -> str:
    """Lattice node of a (dtype, weak) pair.  A weak bool is just bool."""
    if weak and dt.kind != "b":
        return {"i": "i*", "u": "i*", "f": "f*", "c": "c*"}[_kind(dt)]
    return dt.name


def _node_dtype(node: str) -> np.dtype:
    """The (non-canonical) dtype of a node; weak nodes map like np.dtype(int|float|complex)."""
    if node in _WEAK_NODES:
        return python_scalar_dtypes[_WEAK_NODES[node]]
    return _BF16 if node == "bfloat16" else np.dtype(node)


def promote_types(a: Any, b: Any) -> np.dtype:
    """``jnp.promote_types``: the join of two dtypes on the lattice.

    The Python types ``int``/``float``/``complex`` stand for the weak nodes.  Like
    JAX, the result is *not* canonicalized: ``promote_types(int, float)`` is
    float64 and ``promote_types('float64', 'float32')`` is float64.
    """
    na = _node(_np_dtype(a), True) if any(a is t for t in _WEAK_PY_TYPES) else _np_dtype(a).name
    nb = _node(_np_dtype(b), True) if any(b is t for t in _WEAK_PY_TYPES) else _np_dtype(b).name
    if config.jax_numpy_dtype_promotion == "strict":
        _check_strict([(na, na in _WEAK_NODES), (nb, nb in _WEAK_NODES)])
    return _node_dtype(_join(frozenset({na, nb})))


def _check_strict(nodes: list[tuple[str, bool]]) -> None:
    """``jax_numpy_dtype_promotion='strict'``: arrays combine only with arrays of their own
    dtype, and with weak Python scalars whose kind joins into it."""
    strong = {n for n, w in nodes if not w}
    ok = len(strong) <= 1
    if ok and strong:
        (s,) = strong
        ok = all(_join(frozenset({n, s})) == s for n, w in nodes if w)
    if not ok:
        names = ", ".join(repr(_WEAK_NAMES.get(n, n)) for n, _ in nodes)
        raise TypePromotionError(
            f"Input dtypes ({names}) have no available implicit dtype promotion path when "
            f"jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            f"output type, or set jax_numpy_dtype_promotion=standard.")


# ---------------------------------------------------------------------------
# Dtype and weakness of values.

_valid_dtypes: set = set()


def _valid(dt: np.dtype, x: Any) -> np.dtype:
    if dt in _valid_dtypes:
        return dt
    if dt.name in _UB and type(dt) in _DTYPE_TYPES:
        _valid_dtypes.add(dt)
    if dt.name not in _UB and not (dt == _BF16):
        raise TypeError(f"Value {x!r} with dtype {dt} is not a valid wjax array type. "
                        "Only arrays of numeric types are supported.")
    return dt


def is_weakly_typed(x: Any) -> bool:
    """True for Python int/float/complex values and objects marked ``weak_type``.

    Python ``bool`` values are not weak (they are plain bool).
    """
    if type(x) in _WEAK_PY_TYPES:
        return True
    weak = getattr(x, "weak_type", None)
    if weak is None:
        weak = getattr(getattr(x, "aval", None), "weak_type", False)
    return bool(weak)


def dtype_and_weak(x: Any) -> tuple[np.dtype, bool]:
    """``(canonical dtype, weak flag)`` of a value, array, aval or dtype specifier.

    * Python scalars: ``True`` -> (bool, False), ``1`` -> (int32, True),
      ``1.0`` -> (float32, True), ``1j`` -> (complex64, True).
    * The Python types ``int``/``float``/``complex`` themselves are weak too; ``bool`` is not.
    * Dtype specifiers (NumPy scalar types, strings, dtypes) are strong, and narrowing an
      explicit 64-bit one warns, as in JAX (``result_type(np.float64)`` warns).
    * Anything with ``.dtype`` (NumPy arrays/scalars, wjax arrays, avals) is canonicalized
      silently; it is weak when it has ``weak_type=True`` (or ``aval.weak_type``).
    """
    if x is None:
        raise ValueError("Invalid argument to dtype: None.")
    fast = _py_scalar_dtype_and_weak.get(type(x))
    if fast is not None:
        return fast
    if type(x) is np.ndarray and type(x.dtype) in _DTYPE_TYPES:
        # a NumPy array: its dtype, canonicalized, and strong (``is_weakly_typed`` says so)
        dt = x.dtype
        hit = _aval_pairs.get((dt, False))
        if hit is None:
            hit = _aval_pairs[(dt, False)] = (canonicalize_dtype(_valid(dt, x)), False)
        return hit
    aval = getattr(x, "aval", None)
    if aval is not None:
        dt = getattr(aval, "dtype", None)
        if type(dt) in _DTYPE_TYPES:
            # an array or tracer: its aval's dtype, canonicalized, and weak flag (the pair
            # remembered per (dtype, weak): an eager op asks for it several times)
            weak = aval.weak_type
            hit = _aval_pairs.get((dt, weak))
            if hit is None:
                hit = (canonicalize_dtype(_valid(dt, x)), bool(weak))
                if type(weak) is bool:
                    _aval_pairs[(dt, weak)] = hit
            return hit
    if isinstance(x, type):
        if _is_py_scalar_type(x):
            return canonicalize_dtype(x), any(x is t for t in _WEAK_PY_TYPES)
        if issubclass(x, np.generic):
            return narrow_with_warning(_valid(np.dtype(x), x), "dtype"), False
    elif type(x) in python_scalar_dtypes:
        return canonicalize_dtype(type(x)), is_weakly_typed(x)
    if isinstance(x, (str, np.dtype)):
        return narrow_with_warning(_valid(_np_dtype(x), x), "dtype"), False
    dt = getattr(x, "dtype", None)
    if not isinstance(dt, np.dtype):
        try:
            dt = np.result_type(x)
        except TypeError as e:
            raise TypeError(f"Cannot determine dtype of {x!r}") from e
    return canonicalize_dtype(_valid(dt, x)), is_weakly_typed(x)


_aval_pairs: dict = {}    # (valid NumPy dtype, weak) -> (its canonical dtype, weak)

_py_scalar_dtype_and_weak = {int: (np.dtype("int32"), True), float: (np.dtype("float32"), True),
                             bool: (np.dtype("bool"), False)}


def dtype(x: Any) -> np.dtype:
    """Canonical dtype of a value or dtype specifier (``jax.dtypes.dtype``)."""
    return dtype_and_weak(x)[0]


def result_type(*args: Any, return_weak_type_flag: bool = False):
    """``jnp.result_type`` with JAX's lattice: the canonical dtype of combining ``args``.

    ``args`` may be dtypes, dtype specifiers, Python scalars or types, NumPy arrays, or
    any object with ``.dtype`` (and optionally ``.weak_type``); ``None`` stands for the
    default float.  With ``return_weak_type_flag=True`` returns ``(dtype, weak)``; the
    result is weak iff the join is a weak node, e.g. ``result_type(int32, 1.0)`` is a
    weak float32 and ``result_type(int32, 1)`` a strong int32.
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = tuple([(default_float_dtype(), False) if a is None else dtype_and_weak(a)
                   for a in args])
    # the join depends on the (dtype, weak) pairs and the promotion mode only: remembered
    mode = config.jax_numpy_dtype_promotion if len(pairs) > 1 else None
    key = (pairs, mode)
    hit = _results.get(key)
    if hit is None:
        hit = _join_pairs(pairs, mode)
        if len(_results) >= 4096:
            _results.clear()
        _results[key] = hit
    return hit if return_weak_type_flag else hit[0]


_results: dict = {}     # ((dtype, weak) pairs[, promotion mode]) -> (dtype, weak)


def _join_pairs(pairs: tuple, mode) -> tuple[np.dtype, bool]:
    """``result_type``'s ``(dtype, weak)`` of canonical ``(dtype, weak)`` pairs under the
    promotion mode ``mode``."""
    dts = [d for d, _ in pairs]
    weaks = [w for _, w in pairs]
    if len(pairs) > 1 and mode == "strict":
        _check_strict([(_node(d, w), w and d.kind != "b") for d, w in pairs])
    if len(pairs) == 1:
        out, weak = pairs[0]
    elif len(set(dts)) == 1 and not all(weaks):
        out, weak = dts[0], False
    elif all(weaks):
        # Join the strong counterparts, then mark weak (avoids e.g. a weak int16 result).
        out, weak = _node_dtype(_join(frozenset(d.name for d in dts))), True
    else:
        joined = _join(frozenset(_node(d, w) for d, w in pairs))
        out, weak = _node_dtype(joined), joined in _WEAK_NODES
    out = canonicalize_dtype(out)
    weak = weak and out.kind != "b"
    if weak:  # a weak value has no width of its own: it takes its kind's default
        out = _DEFAULT_FOR_KIND[_kind(out)]()
    return out, weak


# ---------------------------------------------------------------------------
# Dtype predicates and info.

def _scalar_type(x: Any) -> type:
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    dt = getattr(x, "dtype", None)
    return (dt if isinstance(dt, np.dtype) and not isinstance(x, type) else _np_dtype(x)).type


class extended(np.generic):
    """The abstract scalar type above every extended (non-NumPy) dtype, such as keys."""


class prng_key(extended):
    """The abstract dtype of typed PRNG key arrays: ``issubdtype(key.dtype, prng_key)``."""


class ExtendedDType:
    """Base class of dtypes that are not NumPy's (the typed-key dtype); ``type`` is the
    abstract scalar type they sit under."""
    type: type = extended
    name: str = "extended"


DType = np.dtype


def issubdtype(a: Any, b: Any) -> bool:
    """``np.issubdtype`` that also places bfloat16 under ``np.floating``.

    ``b`` may be an abstract NumPy type (np.floating, np.integer, np.signedinteger,
    np.unsignedinteger, np.inexact, np.number, np.bool_, np.generic) or a concrete dtype.
    ``a`` may also be any object with a ``.dtype``.
    """
    if type(a) in _DTYPE_TYPES and type(b) is type:
        # a NumPy dtype against a scalar type (``is_float(dt)``): remembered per pair
        memo = _subdtype.get(b)
        if memo is None:
            memo = _subdtype.setdefault(b, {})
        hit = memo.get(a)
        if hit is None:
            hit = memo[a] = _issubdtype(a, b)
        return hit
    return _issubdtype(a, b)


_subdtype: dict = {}     # scalar type -> {NumPy dtype: issubdtype(dtype, type)}


def _issubdtype(a: Any, b: Any) -> bool:
    a_key = getattr(a, "is_key", False) or getattr(getattr(a, "dtype", None), "is_key", False)
    if b is prng_key or b is extended:
        return bool(a_key) or (b is extended and isinstance(a, ExtendedDType))
    if a_key:                  # a key dtype is under prng_key and itself only
        return bool(getattr(b, "is_key", False))
    ta, tb = _scalar_type(a), _scalar_type(b)
    if ta is bfloat16:
        return tb in (bfloat16, np.floating, np.inexact, np.number, np.generic)
    return bool(np.issubdtype(ta, tb))


def is_float(dt: Any) -> bool:
    """Real floating dtype (float16, bfloat16, float32, float64)."""
    return issubdtype(dt, np.floating)


def is_int(dt: Any) -> bool:
    """Signed or unsigned integer dtype (not bool)."""
    return issubdtype(dt, np.integer)


def is_unsigned(dt: Any) -> bool:
    return issubdtype(dt, np.unsignedinteger)


def is_bool(dt: Any) -> bool:
    return issubdtype(dt, np.bool_)


def is_complex(dt: Any) -> bool:
    return issubdtype(dt, np.complexfloating)


def real_dtype(dt: Any) -> np.dtype:
    """The dtype of a value's real part (what ``real``/``imag``/``abs`` give): complex64 ->
    float32, every other dtype unchanged."""
    return np.dtype(np.float32) if is_complex(dt) else np.dtype(dt)


def is_inexact(dt: Any) -> bool:
    """Floating or complex dtype (what JAX's ``promote_args_inexact`` keeps)."""
    return is_float(dt) or is_complex(dt)


def _named_dtype(dt: Any) -> np.dtype:
    """The dtype ``dt`` names, not canonicalized (an array or scalar type: its dtype)."""
    d = getattr(dt, "dtype", None)
    return d if isinstance(d, np.dtype) else _np_dtype(dt)


def finfo(dt: Any):
    """Float info of the dtype named, as JAX's (``finfo(float64)`` describes float64 although
    float64 arrays become float32: libraries, and the array API suite, size values by it)."""
    dt = _named_dtype(dt)
    if dt == _BF16:
        return _ml_dtypes.finfo(dt)
    return np.finfo(dt)


def iinfo(dt: Any):
    """Integer info of the dtype named, as JAX's (``iinfo(int64)`` describes int64)."""
    return np.iinfo(_named_dtype(dt))


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) matching a value's dtype."""
    kind = _kind(dtype(x))
    try:
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind]
    except KeyError:  # pragma: no cover - dtype() already rejects other kinds
        raise TypeError(f"Invalid scalar value {x!r}") from None


def scalar_type_to_dtype(typ: type, value: Any = None) -> np.dtype:
    """Canonical dtype of a Python scalar type; with ``value``, check a Python int fits.

    >>> scalar_type_to_dtype(int, 1 << 40)
    Traceback (most recent call last):
    OverflowError: Python int 1099511627776 too large to convert to int32
    """
    out = canonicalize_dtype(python_scalar_dtypes[typ])
    if typ is int and value is not None:
        info = np.iinfo(out)
        if not info.min <= value <= info.max:
            raise OverflowError(f"Python int {value} too large to convert to {out}")
    return out


_SUBBYTE_BITS = {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "float4_e2m1fn": 4}


def itemsize_bits(dtype) -> int:
    """The size of one element of ``dtype`` in bits (sub-byte types included)."""
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype
    if name in _SUBBYTE_BITS:
        return _SUBBYTE_BITS[name]
    dt = np.dtype(dtype)
    if dt == float0 or dt.kind == "V":
        raise ValueError(f"unexpected input: dtype={dt!r}")
    return dt.itemsize * 8


# ---------------------------------------------------------------------------
# Host values as the device holds them (JAX's ``canonicalize_value_handlers``, exported as
# ``jax.interpreters.xla.canonicalize_dtype_handlers``): a type -> handler registry that
# libraries extend for their own array types (tfp registers its ndarray subclass).

def _canonical_array(x):
    x = np.asarray(x)
    dt = canonicalize_dtype(x.dtype)
    return x if x.dtype == dt else x.astype(dt)


canonicalize_value_handlers: dict[type, Any] = {
    np.ndarray: _canonical_array, np.generic: _canonical_array,
    bool: lambda x: x, int: lambda x: x, float: lambda x: x, complex: lambda x: x}


def canonicalize_value(x):
    """``x`` with a dtype wjax holds, by the handler registered for its type (or the nearest
    base class); a TypeError for a type none is registered for."""
    for typ in type(x).__mro__:
        handler = canonicalize_value_handlers.get(typ)
        if handler is not None:
            return handler(x)
    raise TypeError(f"No canonicalize_dtype handler for type: {type(x)}")
