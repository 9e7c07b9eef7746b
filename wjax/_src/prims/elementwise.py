"""Elementwise primitives: one block each, built by the ``unop``/``binop`` factories.

A WGSL rule is a table from dtype kind ('f' float, 'i' signed int, 'u'
unsigned int, 'b' bool, 'c' complex64) to an expression template over ``{0}``, ``{1}``...
A kind missing from the table is a dtype the primitive does not accept.  A complex value is a
``vec2<f32>`` of (re, im) (``backend/wgsl_cmath.py`` holds the complex helpers); the NumPy
reference of a complex operation is its function in ``cmath_ref`` (JAX's special values).
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..backend import wgsl as W
from ..backend import wgsl_math  # noqa: F401  (registers the float math helpers)
from ..backend import wgsl_cmath  # noqa: F401  (registers the complex math helpers)
from . import cmath_ref as C
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from ..transforms import row_split as _rows
from ..transforms import ad as _ad
from ..transforms.ad import const as _c
from ..core import ops


def kind(dtype) -> str:
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return "b"
    if dt.kind == "f" or dt == dtypes.bfloat16:   # bfloat16 (kind 'V'): an f32 in kernels
        return "f"
    if dt.kind == "u":
        return "u"
    if dt.kind == "i":
        return "i"
    if dt == np.complex64:
        return "c"
    raise TypeError(f"wjax: unsupported dtype {dt}")


def _check_kind(name, dtype, table):
    if kind(dtype) not in table:
        accepted = {"f": "floating", "i": "signed integer", "u": "unsigned integer", "b": "bool",
                    "c": "complex floating"}
        raise TypeError(f"{name} does not accept dtype {np.dtype(dtype).name}. Accepted dtypes are "
                        f"subtypes of {', '.join(accepted[k] for k in table if k in accepted)}.")


def _fill(kb, template: str, args, dtype) -> str:
    """``{T}`` value type, ``{Z}``/``{O}`` zero/one, ``{B}`` bit width, ``{M}`` its u32 mask."""
    bits = np.dtype(dtype).itemsize * 8 if kind(dtype) in "iu" else 32
    return template.format(*args, T=kb.vt(dtype), Z=kb.lit(0, dtype), O=kb.lit(1, dtype),
                           B=bits, M=hex((1 << bits) - 1))


def _fill_vec(kb, template, args, in_dtype, out_dtype) -> str:
    """In a vec4 kernel, a template calling a (scalar) WGSL helper is applied per component:
    ``vec4<T>(f(a.x, b.x), f(a.y, b.y), ...)`` -- the kernel keeps its vec4 loads and stores."""
    names = [kb.let(a) for a in args]
    comps = [_fill(kb, template, [f"{n}.{c}" for n in names], in_dtype) for c in "xyzw"[:kb.vec]]
    saved, kb.vec = kb.vec, 1
    ty = kb.vt(out_dtype)
    kb.vec = saved
    return f"vec{kb.vec}<{ty}>({', '.join(comps)})"


def _fill_f16_via_f32(kb, template, args, in_dtype, out_dtype) -> str:
    """float16 ops compute in f32 and round to f16 after each op, as XLA does (the helpers are
    f32-only, and f16 builtins are coarse on some drivers).  The rounding goes through
    ``wj_f16r`` so no compiler fuses two f16 ops into one rounding."""
    if np.dtype(in_dtype) != np.float16:
        if kb.vec > 1 and _helpers_in(template):
            return _fill_vec(kb, template, args, in_dtype, out_dtype)
        return _fill(kb, template, args, in_dtype)
    e = _fill(kb, template, [f"f32({a})" for a in args], np.float32)
    if np.dtype(out_dtype) != np.float16:
        return e
    kb.use_helper("wj_f16r")
    return f"wj_f16r({e})"


def elementwise_shape(name, *avals) -> tuple:
    """Operands must agree in shape; rank-0 operands broadcast (as lax's scalars do)."""
    shapes = [a.shape for a in avals if a.ndim > 0]
    if shapes and any(s != shapes[0] for s in shapes):
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        + ", ".join(str(tuple(s)) for s in (a.shape for a in avals)) + ".")
    return shapes[0] if shapes else ()


# lax ops whose jax.numpy counterpart promotes its operands (named in JAX's dtype error)
_PROMOTING_JNP = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
                  "rem": "remainder", "max": "maximum", "min": "minimum", "pow": "float_power",
                  "atan2": "arctan2", "nextafter": "nextafter", "eq": "equal", "ne": "not_equal",
                  "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                  "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
                  "shift_left": "left_shift", "shift_right_logical": "right_shift",
                  "shift_right_arithmetic": "right_shift", "select_n": "where"}


def _same_dtypes(name, avals):
    dts = {np.dtype(a.dtype) for a in avals}
    if len(dts) > 1:
        msg = (f"lax.{name} requires arguments to have the same dtypes, got "
               + ", ".join(np.dtype(a.dtype).name for a in avals) + ".")
        if name in _PROMOTING_JNP:
            msg += (f" (Tip: jnp.{_PROMOTING_JNP[name]} is a similar function that does "
                    "automatic type promotion on inputs).")
        raise TypeError(msg)


# --------------------------------------------------------------------------- factories

def _with_complex(reference, cref):
    """The NumPy reference: ``cref`` (from ``cmath_ref``) for complex operands."""
    if cref is None:
        return lambda *xs: np.asarray(reference(*xs))
    return lambda *xs: np.asarray(cref(*xs) if xs[0].dtype.kind == "c" else reference(*xs))


def unop(name, table: dict, reference, result_dtype=None, cref=None):
    """An elementwise unary primitive (``cref``: its complex64 reference)."""
    p = Primitive(name)

    def abstract(x):
        _check_kind(name, x.dtype, table)
        dt = result_dtype(x.dtype) if result_dtype else x.dtype
        return ShapedArray(x.shape, dt, x.weak_type)   # JAX: is_finite(weak) is a weak bool

    def fuse(kb, idx, read, in_avals, out_aval):
        t = _template(table, in_avals[0].dtype)
        for h in _helpers_in(t):
            kb.use_helper(h)
        return _fill_f16_via_f32(kb, t, [read[0](idx)], in_avals[0].dtype, out_aval.dtype)

    p.abstract_eval, p.fuse = abstract, fuse
    p.reference = _with_complex(reference, cref)
    p.table = table
    _batching.defbroadcasting(p)   # vmap: align batch axes, broadcast the rest
    return p


def binop(name, table: dict, reference, result_dtype=None, cref=None):
    """An elementwise binary primitive with lax's strict dtype rule (``cref``: its complex64
    reference)."""
    p = Primitive(name)

    def abstract(x, y):
        _same_dtypes(name, [x, y])
        _check_kind(name, x.dtype, table)
        shape = elementwise_shape(name, x, y)
        dt = result_dtype(x.dtype) if result_dtype else x.dtype
        # JAX: weak operands give a weak result, comparisons too (jnp.equal(1, 2) is weak bool)
        return ShapedArray(shape, dt, x.weak_type and y.weak_type)

    def fuse(kb, idx, read, in_avals, out_aval):
        t = _template(table, in_avals[0].dtype)
        for h in _helpers_in(t):
            kb.use_helper(h)
        return _fill_f16_via_f32(kb, t, [read[0](idx), read[1](idx)], in_avals[0].dtype,
                                 out_aval.dtype)

    p.abstract_eval, p.fuse = abstract, fuse
    p.reference = _with_complex(reference, cref)
    p.table = table
    _batching.defbroadcasting(p)   # vmap: align batch axes, broadcast the rest
    return p


def _template(table: dict, dtype) -> str:
    """The table's template for ``dtype``: its ``"bf"`` entry for bfloat16 where it has one (an
    op XLA expands into several bf16 operations, each rounded), else the kind's."""
    if "bf" in table and np.dtype(dtype) == dtypes.bfloat16:
        return table["bf"]
    return table[kind(dtype)]


def _helpers_in(template: str):
    return [h for h in W.HELPERS if h + "(" in template]


def _bool(_):
    return np.dtype(np.bool_)


_real_of = dtypes.real_dtype     # complex64 -> float32 (abs of a complex value)


F = "f"
NUM = ("f", "i", "u")
INT = ("i", "u")


def FC(tmpl, ctmpl):
    """A float op that takes complex64 too: ``tmpl`` for floats, ``ctmpl`` for complex."""
    return {"f": tmpl, "c": ctmpl}


def T(kinds, tmpl):
    return {k: tmpl for k in kinds}


# --------------------------------------------------------------------------- unary

neg_p = unop("neg", {"f": "-({0})", "i": "-({0})", "u": "0u - ({0})", "c": "-({0})"}, np.negative)
sign_p = unop("sign", {"f": "wj_sign_f({0})", "i": "sign({0})", "u": "select(0u, 1u, {0} != 0u)",
                       "c": "wj_csign({0})"},
               lambda x: np.where(x == 0, x, np.sign(x)),   # sign(-0.0) is -0.0 in XLA
               cref=C.sign)
floor_p = unop("floor", T(F, "floor({0})"), np.floor)
ceil_p = unop("ceil", T(F, "ceil({0})"), np.ceil)
abs_p = unop("abs", {"f": "abs({0})", "i": "abs({0})", "u": "{0}", "c": "wj_cabs({0})"}, np.abs,
              result_dtype=_real_of, cref=C.abs)
exp_p = unop("exp", FC("wj_exp({0})", "wj_cexp({0})"), np.exp, cref=C.exp)
# bfloat16: XLA's exp2 is exp(x * log(2)) with the product rounded to bf16
_LN2_BF16 = float(np.asarray(np.log(2), dtypes.bfloat16))
exp2_p = unop("exp2", {**FC("wj_exp2({0})", "wj_cexp2({0})"),
                       "bf": f"wj_exp(wj_bf16r({{0}} * {_LN2_BF16!r}))"},
              lambda x: (np.exp(x * np.asarray(_LN2_BF16, x.dtype)) if x.dtype == dtypes.bfloat16
                         else np.exp2(x)), cref=C.exp2)
log_p = unop("log", FC("wj_log({0})", "wj_clog({0})"), np.log, cref=C.log)
log1p_p = unop("log1p", FC("wj_log1p({0})", "wj_clog1p({0})"), np.log1p, cref=C.log1p)
expm1_p = unop("expm1", FC("wj_expm1({0})", "wj_cexpm1({0})"), np.expm1, cref=C.expm1)
tanh_p = unop("tanh", FC("wj_tanh({0})", "wj_ctanh({0})"), np.tanh, cref=C.tanh)
logistic_p = unop(
    "logistic", {**FC("wj_div(1.0, 1.0 + wj_exp(-({0})))", "wj_clogistic({0})"),
                 # XLA expands a bf16 logistic into bf16 exp, add and divide, each rounded
                 "bf": "wj_div(1.0, wj_bf16r(1.0 + wj_bf16r(wj_exp(-({0})))))"},
    lambda x: 1 / (1 + np.exp(-x)), cref=C.logistic
)
sin_p = unop("sin", FC("wj_sin({0})", "wj_csin({0})"), np.sin, cref=C.sin)
cos_p = unop("cos", FC("wj_cos({0})", "wj_ccos({0})"), np.cos, cref=C.cos)
tan_p = unop("tan", FC("wj_tan({0})", "wj_ctan({0})"), np.tan, cref=C.tan)
asin_p = unop("asin", FC("wj_asin({0})", "wj_casin({0})"), np.arcsin, cref=C.asin)
acos_p = unop("acos", FC("wj_acos({0})", "wj_cacos({0})"), np.arccos, cref=C.acos)
atan_p = unop("atan", FC("wj_atan({0})", "wj_catan({0})"), np.arctan, cref=C.atan)
sinh_p = unop("sinh", FC("wj_sinh({0})", "wj_csinh({0})"), np.sinh, cref=C.sinh)
cosh_p = unop("cosh", FC("wj_cosh({0})", "wj_ccosh({0})"), np.cosh, cref=C.cosh)
asinh_p = unop("asinh", FC("wj_asinh({0})", "wj_casinh({0})"), np.arcsinh, cref=C.asinh)
acosh_p = unop("acosh", FC("wj_acosh({0})", "wj_cacosh({0})"), np.arccosh, cref=C.acosh)
atanh_p = unop("atanh", FC("wj_atanh({0})", "wj_catanh({0})"), np.arctanh, cref=C.atanh)
sqrt_p = unop("sqrt", FC("wj_sqrt({0})", "wj_csqrt({0})"), np.sqrt, cref=C.sqrt)
rsqrt_p = unop("rsqrt", FC("inverseSqrt({0})", "wj_crsqrt({0})"), lambda x: 1 / np.sqrt(x),
               cref=C.rsqrt)
cbrt_p = unop("cbrt", T(F, "wj_cbrt({0})"), np.cbrt)
erf_p = unop("erf", T(F, "wj_erf({0})"), lambda x: _erf_ref(x))
not_p = unop(
    "not",
    {"b": "!({0})", "i": "~({0})", "u": "~({0})"},
    lambda x: np.logical_not(x) if x.dtype == bool else np.invert(x),
)
is_finite_p = unop(
    "is_finite", T(F, "!(wj_isnan({0}) || wj_isinf({0}))"), np.isfinite, result_dtype=_bool
)
# 8/16-bit integers live sign- or zero-extended in 32-bit lanes: mask to the dtype's width
population_count_p = unop(
    "population_count",
    {"i": "bitcast<i32>(countOneBits(bitcast<u32>({0}) & {M}u))", "u": "countOneBits({0} & {M}u)"},
    lambda x: np.bitwise_count(x.view(x.dtype.str.replace("i", "u"))).astype(x.dtype),
)
clz_p = unop(
    "clz",
    {
        "i": "bitcast<i32>(countLeadingZeros(bitcast<u32>({0}) & {M}u) - (32u - {B}u))",
        "u": "(countLeadingZeros({0} & {M}u) - (32u - {B}u))",
    },
    lambda x: _clz_ref(x),
)


# complex parts: real, imag, conj and complex (lax's), JAX's linear rules
real_p = unop("real", {"c": "({0}).x"}, np.real, result_dtype=_real_of)
imag_p = unop("imag", {"c": "({0}).y"}, np.imag, result_dtype=_real_of)

complex_p = binop("complex", {"f": "vec2<f32>({0}, {1})"}, lambda x, y: x + np.complex64(1j) * y,
                  result_dtype=lambda dt: np.dtype(np.complex64))
_complex_abstract_f = complex_p.abstract_eval


def _complex_abstract(x, y):
    if np.dtype(x.dtype) != np.float32 or np.dtype(y.dtype) != np.float32:
        raise TypeError(f"complex does not accept dtype {np.dtype(x.dtype).name}. Accepted dtypes "
                        "are subtypes of float32, float64.")
    return _complex_abstract_f(x, y)


complex_p.abstract_eval = _complex_abstract
complex_p.reference = lambda x, y: C._mk(x, y)

conj_p = Primitive("conj")
conj_p.view = True


@conj_p.def_abstract_eval
def _conj_abstract(x, input_dtype=None):
    if np.dtype(x.dtype) not in (np.dtype(np.float32), np.dtype(np.complex64)):
        raise TypeError(f"conj does not accept dtype {np.dtype(x.dtype).name}. Accepted dtypes "
                        "are subtypes of float32, float64, complexfloating.")
    return ShapedArray(x.shape, np.complex64, x.weak_type)


@conj_p.def_fuse
def _conj_fuse(kb, idx, read, in_avals, out_aval, input_dtype=None):
    v = read[0](idx)
    if W.is_complex(in_avals[0].dtype):
        return f"vec2<f32>(({v}).x, -({v}).y)"
    return f"vec2<f32>({v}, 0.0)"


conj_p.reference = lambda x, input_dtype=None: (   # of a real x: (x, +0) as in JAX
    np.conj(x) if x.dtype.kind == "c" else C._mk(x, 0))
_batching.defbroadcasting(conj_p)


# round: lax's ``rounding_method`` 0 rounds half away from zero, 1 half to even (jnp.round)
round_p = Primitive("round")


@round_p.def_abstract_eval
def _round_abstract(x, rounding_method=0):
    _check_kind("round", x.dtype, F)
    return x


@round_p.def_fuse
def _round_fuse(kb, idx, read, in_avals, out_aval, rounding_method=0):
    fn = "wj_round_even" if int(rounding_method) == 1 else "wj_round_away"
    kb.use_helper(fn)
    return _fill_f16_via_f32(kb, fn + "({0})", [read[0](idx)], in_avals[0].dtype, out_aval.dtype)


def _round_ref(x, rounding_method=0):
    if int(rounding_method) == 1:
        return np.round(x)
    return np.copysign(np.floor(np.abs(x.astype(np.float64)) + 0.5), x).astype(x.dtype)


round_p.reference = _round_ref
_batching.defbroadcasting(round_p)


def _erf_ref(x):
    import math
    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _clz_ref(x):
    bits = x.dtype.itemsize * 8
    out = np.zeros_like(x)
    u = x.astype(np.int64) & ((1 << bits) - 1)
    for i, v in np.ndenumerate(u):
        out[i] = bits - int(v).bit_length()
    return out


# autodiff rules (unary) -------------------------------------------------------

def _zeros_like_ct(t):
    return np.zeros((), _ad.aval_of(t).dtype)


_ad.deflinear(real_p, lambda ct, x: [ops.complex(ct, _zeros_like_ct(ct))])
_ad.deflinear(imag_p, lambda ct, x: [ops.complex(_zeros_like_ct(ct), ops.neg(ct))])
_ad.deflinear(conj_p, lambda ct, x, input_dtype=None: [
    ops.conj(ct) if np.dtype(input_dtype or x.aval.dtype).kind == "c" else ops.real(ct)])


def _complex_transpose(ct, x, y):
    return [_ad.unbroadcast(ops.real(ct), x.aval) if _undef(x) else None,
            _ad.unbroadcast(ops.neg(ops.imag(ct)), y.aval) if _undef(y) else None]



_ad.deflinear(neg_p, lambda ct, x: [ops.neg(ct)])
for _p in (sign_p, floor_p, ceil_p, round_p, not_p, is_finite_p, population_count_p, clz_p):
    _ad.defjvp_zero(_p)


def _abs_jvp(g, ans, x):
    if _ad.aval_of(x).dtype.kind == "c":   # JAX: re(g conj(x) / |x|), |x| = 0 taken as 1
        d = ops.convert_element_type(ans, np.complex64)
        return ops.real(ops.mul(g, ops.div(ops.conj(x), _replace_zero(d))))
    return ops.select(ops.ge(x, _c(x, 0)), g, ops.neg(g))


_ad.defjvp2(abs_p, _abs_jvp)
_ad.defjvp2(exp_p, lambda g, ans, x: ops.mul(g, ans))
_ad.defjvp2(exp2_p, lambda g, ans, x: ops.mul(g, ops.mul(ans, _c(x, np.log(2)))))
_ad.defjvp(log_p, lambda g, x: ops.div(g, x))
_ad.defjvp(log1p_p, lambda g, x: ops.div(g, ops.add(x, _c(x, 1))))
_ad.defjvp2(expm1_p, lambda g, ans, x: ops.mul(g, ops.add(ans, _c(x, 1))))
_ad.defjvp2(tanh_p, lambda g, ans, x: ops.mul(ops.add(g, ops.mul(g, ans)), ops.sub(_c(x, 1), ans)))
_ad.defjvp2(logistic_p, lambda g, ans, x: ops.mul(g, ops.mul(ans, ops.sub(_c(x, 1), ans))))
_ad.defjvp(sin_p, lambda g, x: ops.mul(g, ops.cos(x)))
_ad.defjvp(cos_p, lambda g, x: ops.neg(ops.mul(g, ops.sin(x))))
_ad.defjvp2(tan_p, lambda g, ans, x: ops.mul(g, ops.add(_c(x, 1), ops.mul(ans, ans))))
_ad.defjvp(asin_p, lambda g, x: ops.mul(g, ops.rsqrt(ops.sub(_c(x, 1), ops.mul(x, x)))))
_ad.defjvp(acos_p, lambda g, x: ops.neg(ops.mul(g, ops.rsqrt(ops.sub(_c(x, 1), ops.mul(x, x))))))
_ad.defjvp(atan_p, lambda g, x: ops.div(g, ops.add(_c(x, 1), ops.mul(x, x))))
_ad.defjvp(sinh_p, lambda g, x: ops.mul(g, ops.cosh(x)))
_ad.defjvp(cosh_p, lambda g, x: ops.mul(g, ops.sinh(x)))
_ad.defjvp(asinh_p, lambda g, x: ops.mul(g, ops.rsqrt(ops.add(ops.mul(x, x), _c(x, 1)))))
_ad.defjvp(
    acosh_p, lambda g, x: ops.mul(g, ops.rsqrt(ops.mul(ops.sub(x, _c(x, 1)), ops.add(x, _c(x, 1)))))
)
_ad.defjvp(atanh_p, lambda g, x: ops.mul(ops.reciprocal(ops.add(_c(x, 1), x)),
                                          ops.div(g, ops.sub(_c(x, 1), x))))
_ad.defjvp2(sqrt_p, lambda g, ans, x: ops.mul(g, ops.div(_c(x, 0.5), ans)))
_ad.defjvp2(rsqrt_p, lambda g, ans, x: ops.mul(g, ops.mul(_c(x, -0.5), ops.div(ans, x))))
_ad.defjvp2(cbrt_p, lambda g, ans, x: ops.mul(g, ops.mul(_c(x, 1 / 3), ops.integer_pow(ans, -2))))
_ad.defjvp(erf_p, lambda g, x: ops.mul(_c(x, 2 / np.sqrt(np.pi)),
                                        ops.mul(g, ops.exp(ops.neg(ops.mul(x, x))))))


# --------------------------------------------------------------------------- binary

add_p = binop("add", T(NUM + ("c",), "({0} + {1})"), np.add)
sub_p = binop("sub", T(NUM + ("c",), "({0} - {1})"), np.subtract)
mul_p = binop("mul", {**T(NUM, "({0} * {1})"), "c": "wj_cmul({0}, {1})"}, np.multiply, cref=C.mul)
div_p = binop("div", {"f": "wj_div({0}, {1})", "i": "wj_div_i({0}, {1})", "u": "wj_div_u({0}, {1})",
                      "c": "wj_cdiv({0}, {1})"},
              lambda x, y: _div_ref(x, y), cref=C.div)
rem_p = binop("rem", {"f": "wj_rem_f({0}, {1})", "i": "wj_rem_i({0}, {1})",
                      "u": "wj_rem_u({0}, {1})"}, lambda x, y: _rem_ref(x, y))
pow_p = binop("pow", FC("wj_pow_f({0}, {1})", "wj_cpow({0}, {1})"), np.power, cref=C.pow)
max_p = binop("max", {"f": "wj_max_f({0}, {1})", "i": "max({0}, {1})", "u": "max({0}, {1})",
                      "b": "({0} || {1})", "c": "select({1}, {0}, wj_cgt({0}, {1}))"},
              lambda x, y: _max_ref(x, y))
min_p = binop("min", {"f": "wj_min_f({0}, {1})", "i": "min({0}, {1})", "u": "min({0}, {1})",
                      "b": "({0} && {1})", "c": "select({1}, {0}, wj_clt({0}, {1}))"},
              lambda x, y: _min_ref(x, y))
atan2_p = binop("atan2", FC("wj_atan2({0}, {1})", "wj_catan2({0}, {1})"), np.arctan2,
                cref=C.atan2)
nextafter_p = None
and_p = binop("and", {"b": "({0} && {1})", "i": "({0} & {1})", "u": "({0} & {1})"},
              lambda x, y: np.logical_and(x, y) if x.dtype == bool else np.bitwise_and(x, y))
or_p = binop("or", {"b": "({0} || {1})", "i": "({0} | {1})", "u": "({0} | {1})"},
             lambda x, y: np.logical_or(x, y) if x.dtype == bool else np.bitwise_or(x, y))
xor_p = binop("xor", {"b": "({0} != {1})", "i": "({0} ^ {1})", "u": "({0} ^ {1})"},
              lambda x, y: np.logical_xor(x, y) if x.dtype == bool else np.bitwise_xor(x, y))
shift_left_p = binop(
    "shift_left",
    {
        "i": "select({0} << bitcast<u32>({1}), {Z}, bitcast<u32>({1}) >= 32u)",
        "u": "select({0} << {1}, {Z}, {1} >= 32u)",
    },
    lambda x, y: _shift_ref(x, y, "l"),
)
shift_right_arithmetic_p = binop(
    "shift_right_arithmetic",
    {"i": "({0} >> min(bitcast<u32>({1}), 31u))",
     # unsigned: the bits read as a signed number of the dtype's width (XLA's rule)
     "u": "bitcast<u32>((bitcast<i32>({0} << (32u - {B}u)) >> (32u - {B}u)) >> min({1}, 31u))"},
    lambda x, y: _shift_ref(x, y, "ra"))
shift_right_logical_p = binop(
    "shift_right_logical",
    {"i": "select(bitcast<i32>((bitcast<u32>({0}) & {M}u) >> min(bitcast<u32>({1}), 31u)), {Z}, "
          "bitcast<u32>({1}) >= {B}u)",
     "u": "select({0} >> {1}, {Z}, {1} >= 32u)"},
    lambda x, y: _shift_ref(x, y, "rl"))

eq_p = binop("eq", {**T(NUM + ("b",), "({0} == {1})"), "c": "wj_ceq({0}, {1})"}, np.equal,
              _bool)
# drivers may compile float != as an ordered compare (false for NaN): test NaN explicitly
ne_p = binop("ne", {"f": "(({0} != {1}) || wj_isnan({0}) || wj_isnan({1}))", "i": "({0} != {1})",
                    "u": "({0} != {1})", "b": "({0} != {1})", "c": "wj_cne({0}, {1})"},
             np.not_equal, _bool)
# a float comparison reads its second operand through wj_opq: wgpu's GL path (naga -> GLSL ->
# llvmpipe) otherwise folds ``select(a > b, a, b)`` into a max that drops NaN operands
lt_p = binop(
    "lt",
    {"f": "({0} < wj_opq({1}))", "i": "({0} < {1})", "u": "({0} < {1})", "b": "(!{0} && {1})"},
    np.less,
    _bool,
)
le_p = binop(
    "le",
    {"f": "({0} <= wj_opq({1}))", "i": "({0} <= {1})", "u": "({0} <= {1})", "b": "(!{0} || {1})"},
    np.less_equal,
    _bool,
)
gt_p = binop(
    "gt",
    {"f": "({0} > wj_opq({1}))", "i": "({0} > {1})", "u": "({0} > {1})", "b": "({0} && !{1})"},
    np.greater,
    _bool,
)
ge_p = binop(
    "ge",
    {"f": "({0} >= wj_opq({1}))", "i": "({0} >= {1})", "u": "({0} >= {1})", "b": "({0} || !{1})"},
    np.greater_equal,
    _bool,
)


def complex_order(x, y, greater: bool):
    """XLA's lexicographic order of complex values, ``x > y`` (``x < y``): real parts, then
    imaginary parts; any comparison with a NaN part is false."""
    x, y = np.asarray(x), np.asarray(y)
    cmp = np.greater if greater else np.less
    with np.errstate(invalid="ignore"):
        return cmp(x.real, y.real) | ((x.real == y.real) & cmp(x.imag, y.imag))


def _max_ref(x, y):
    if kind(x.dtype) == "c":   # lexicographic; the second operand unless the first is greater
        return np.where(complex_order(x, y, True), x, y).astype(x.dtype)
    r = np.maximum(x, y)
    if kind(x.dtype) == "f":   # XLA: max(-0.0, +0.0) is +0.0 in either order
        z = (x == 0) & (y == 0)
        r = np.where(z, np.where(np.signbit(x) & np.signbit(y), x, np.abs(x)), r)
    return r


def _min_ref(x, y):
    if kind(x.dtype) == "c":
        return np.where(complex_order(x, y, False), x, y).astype(x.dtype)
    r = np.minimum(x, y)
    if kind(x.dtype) == "f":   # XLA: min(-0.0, +0.0) is -0.0 in either order
        z = (x == 0) & (y == 0)
        r = np.where(z, np.where(np.signbit(x) | np.signbit(y), -np.abs(x), np.abs(x)), r)
    return r


def _div_ref(x, y):
    if kind(x.dtype) == "f":
        with np.errstate(all="ignore"):
            return np.divide(x, y)
    with np.errstate(all="ignore"):
        q = np.where(y == 0, -1, np.trunc(x.astype(np.float64) / np.where(y == 0, 1, y)))
    return q.astype(x.dtype)


def _rem_ref(x, y):
    if kind(x.dtype) == "f":
        with np.errstate(all="ignore"):
            return np.fmod(x, y)
    with np.errstate(all="ignore"):
        r = np.where(y == 0, x, np.fmod(x, np.where(y == 0, 1, y)))
    return r.astype(x.dtype)


def _shift_ref(x, y, how):
    bits = x.dtype.itemsize * 8
    # arithmetic shifts read unsigned bits as signed (XLA's rule)
    xs = (x.view(x.dtype.str.replace("u", "i")) if how == "ra" else x).astype(np.int64)
    ys = y.astype(np.int64)
    big = (ys < 0) | (ys >= bits)
    ysafe = np.where(big, 0, ys)
    if how == "l":
        r = np.where(big, 0, xs << ysafe)
    elif how == "ra":
        r = xs >> np.where(big, bits - 1, ysafe)
    else:
        u = xs & ((1 << bits) - 1)
        r = np.where(big, 0, u >> ysafe)
    return (
        (r & ((1 << bits) - 1)).astype(x.dtype.str.replace("i", "u")).view(x.dtype)
        if x.dtype.kind == "i"
        else (r & ((1 << bits) - 1)).astype(x.dtype)
    )


# autodiff rules (binary) ------------------------------------------------------
def _undef(x):
    return _ad.is_undefined_primal(x)


def _add_transpose(ct, x, y):
    return [_ad.unbroadcast(ct, x.aval) if _undef(x) else None,
            _ad.unbroadcast(ct, y.aval) if _undef(y) else None]


def _sub_transpose(ct, x, y):
    return [_ad.unbroadcast(ct, x.aval) if _undef(x) else None,
            _ad.unbroadcast(ops.neg(ct), y.aval) if _undef(y) else None]


def _div_transpose(ct, x, y):
    if _undef(y):
        raise TypeError("div is not linear in its divisor: cannot transpose it")
    return [_ad.unbroadcast(ops.div(ct, y), x.aval), None]


def _replace_zero(x):
    return ops.select(ops.eq(x, _c(x, 0)), np.ones((), _ad.aval_of(x).dtype), x)


def _pow_jvp_lhs(g, ans, x, y):
    jac = ops.select(ops.eq(y, _c(y, 0)), np.zeros((), _ad.aval_of(y).dtype),
                      ops.mul(_replace_zero(y), ops.pow(x, ops.sub(y, _c(y, 1)))))
    return ops.mul(g, jac)


def _pow_jvp_rhs(g, ans, x, y):
    return ops.mul(g, ops.mul(ops.log(_replace_zero(x)), ans))


def _balanced_eq(x, z, y):
    dt = _ad.aval_of(z).dtype
    one, half, zero = (np.asarray(v, dt) for v in (1, 0.5, 0))
    return ops.select(ops.eq(x, z), ops.select(ops.eq(y, z), half, one), zero)


_ad.deflinear(complex_p, _complex_transpose)
_ad.defjvp(add_p, lambda g, x, y: g, lambda g, x, y: g)
add_p.transpose = _add_transpose
_ad.defjvp(sub_p, lambda g, x, y: g, lambda g, x, y: ops.neg(g))
sub_p.transpose = _sub_transpose
_ad.defbilinear(mul_p, lambda ct, x, y: _ad.unbroadcast(ops.mul(ct, y), x.aval),
                lambda ct, x, y: _ad.unbroadcast(ops.mul(x, ct), y.aval))
_ad.defjvp(div_p, lambda g, x, y: ops.div(g, y),
           lambda g, x, y: ops.mul(ops.mul(ops.neg(g), x), ops.integer_pow(y, -2)))
div_p.transpose = _div_transpose
_ad.defjvp(rem_p, lambda g, x, y: g,
           lambda g, x, y: ops.mul(ops.neg(g), ops.mul(ops.sign(ops.div(x, y)),
                                                          ops.floor(ops.abs(ops.div(x, y))))))
_ad.defjvp2(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)
_ad.defjvp2(max_p, lambda g, ans, x, y: ops.mul(g, _balanced_eq(x, ans, y)),
            lambda g, ans, x, y: ops.mul(g, _balanced_eq(y, ans, x)))
_ad.defjvp2(min_p, lambda g, ans, x, y: ops.mul(g, _balanced_eq(x, ans, y)),
            lambda g, ans, x, y: ops.mul(g, _balanced_eq(y, ans, x)))
_ad.defjvp(atan2_p,
           lambda g, x, y: ops.mul(g, ops.div(y, ops.add(ops.mul(x, x), ops.mul(y, y)))),
           lambda g, x, y: ops.mul(g, ops.div(ops.neg(x), ops.add(ops.mul(x, x), ops.mul(y, y)))))
for _p in (and_p, or_p, xor_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p,
           eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
    _ad.defjvp_zero(_p)


# --------------------------------------------------------------------------- select, convert

select_n_p = Primitive("select_n")


@select_n_p.def_abstract_eval
def _select_abstract(pred, *cases):
    if not cases:
        raise TypeError("select_n requires at least one case")
    _same_dtypes("select_n", cases)
    if pred.dtype != np.bool_ and pred.dtype != np.int32:
        raise TypeError(f"select_n predicate must be bool or int32, got {pred.dtype}")
    if pred.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select_n with a bool predicate takes at most 2 cases")
    shape = elementwise_shape("select_n", pred, *cases)
    return ShapedArray(shape, cases[0].dtype, all(c.weak_type for c in cases))


@select_n_p.def_fuse
def _select_fuse(kb, idx, read, in_avals, out_aval):
    p = read[0](idx)
    cases = [r(idx) for r in read[1:]]
    if in_avals[0].dtype == np.bool_:
        return f"select({cases[0]}, {cases[-1]}, {p})"
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        out = f"select({out}, {cases[i]}, {p} <= {i})"
    return out


select_n_p.reference = lambda pred, *cases: (
    np.choose(pred.astype(np.int32), cases) if len(cases) > 1 else cases[0]
)


def _select_jvp(primals, tangents):
    pred, *cases = primals
    ans = select_n_p.bind(pred, *cases)
    tcases = tangents[1:]
    if all(isinstance(t, _ad.Zero) for t in tcases):
        return ans, _ad.Zero(_ad.aval_of(ans))
    ts = [
        np.zeros((), _ad.aval_of(c).dtype) if isinstance(t, _ad.Zero) else t
        for c, t in zip(cases, tcases)
    ]
    return ans, _ad.bcast_to(select_n_p.bind(pred, *ts), _ad.aval_of(ans).shape)


def _select_transpose(ct, pred, *cases):
    if _ad.is_undefined_primal(pred):
        raise TypeError("select_n is not linear in its predicate")
    zero = np.zeros((), _ad.aval_of(ct).dtype)
    out = [None]
    for i, c in enumerate(cases):
        if _ad.is_undefined_primal(c):
            args = [ct if j == i else zero for j in range(len(cases))]
            out.append(_ad.unbroadcast(select_n_p.bind(pred, *args), c.aval))
        else:
            out.append(None)
    return out


select_n_p.jvp = _select_jvp
select_n_p.transpose = _select_transpose
_batching.defbroadcasting(select_n_p)

convert_element_type_p = Primitive("convert_element_type")
convert_element_type_p.view = True    # one operand element per output element
convert_element_type_p.pp_params = lambda params, eqn: sorted(   # (sharding: implied by the type)
    (k, v) for k, v in params.items() if k != "sharding" and not k.startswith("_"))


@convert_element_type_p.def_abstract_eval
def _convert_abstract(x, new_dtype, weak_type=False, sharding=None):
    return ShapedArray(x.shape, dtypes.check_supported(new_dtype), weak_type)


def _isnan_inline(e: str) -> str:
    """A NaN test that survives fast-math compilers (``x != x`` may fold to false)."""
    return f"((bitcast<u32>(f32({e})) & 0x7fffffffu) > 0x7f800000u)"


def convert_expr(e: str, src, dst) -> str:
    """WGSL for converting an expression between dtypes (XLA's semantics)."""
    src, dst = np.dtype(src), np.dtype(dst)
    ks, kd = kind(src), kind(dst)
    if src == dst:
        return e
    if kd == "c":        # (x, 0); bool as 0/1
        if ks == "b":
            return f"select(vec2<f32>(0.0, 0.0), vec2<f32>(1.0, 0.0), {e})"
        return f"vec2<f32>(f32({e}), 0.0)"
    if ks == "c":        # the real part (XLA's rule, bool too: jnp's astype compares to 0)
        return convert_expr(f"({e}).x", np.float32, dst)
    if kd == "b":
        if ks == "f":   # NaN is truthy; drivers may compile != as an ordered compare
            return f"({e} != {W.zero(src)} || {_isnan_inline(e)})"
        return f"({e} != {W.zero(src)})"
    if ks == "b":
        return f"select({W.zero(dst)}, {W.literal(1, dst)}, {e})"
    tv = W.value_type(dst)
    if ks == "f" and kd in "iu":
        # saturate, NaN -> 0 (XLA's float->int conversion)
        info = np.iinfo(dst)
        lo = W.literal(max(info.min, -2**31), np.float32)
        hi_v = float(np.float32(min(info.max, 2**31 - 1 if kd == "i" else 2**32 - 1)))
        if hi_v >= (2**31 if kd == "i" else 2**32):
            hi_v = float(np.nextafter(np.float32(hi_v), np.float32(0)))
        hi = W.literal(hi_v, np.float32)
        base = f"f32({e})"
        out = f"{tv}(clamp({base}, {lo}, {hi}))"
        if info.max >= 2**31 - 1:   # the top of a 32-bit range is not a float32: saturate exactly
            top = 2.0**31 if kd == "i" else 2.0**32
            out = (
                f"select({out}, {W.literal(info.max, dst)}, {base} >= {W.literal(top, np.float32)})"
            )
        return f"select({out}, {W.zero(dst)}, {_isnan_inline(base)})"
    if ks in "iu" and kd in "iu":
        if W.storage_type(src) == W.storage_type(dst):
            return W.wrap_narrow(e, dst)
        return W.wrap_narrow(f"bitcast<{tv}>({e})", dst)
    if dst == dtypes.bfloat16:   # rounded here too: element rules return this unwrapped
        return W.wrap_narrow(f"f32({e})", dst)
    if dst == np.float16:        # rounded by the bits: a driver may convert to either neighbour
        return f"wj_f16r(f32({e}))"
    return f"{tv}({e})"


@convert_element_type_p.def_fuse
def _convert_fuse(kb, idx, read, in_avals, out_aval, new_dtype, weak_type=False, sharding=None):
    return convert_expr(read[0](idx), in_avals[0].dtype, out_aval.dtype)


def _convert_ref(x, new_dtype, weak_type=False, sharding=None):
    dt = np.dtype(new_dtype)
    if x.dtype.kind == "c" and dt.kind != "c":   # the real part (XLA's rule)
        return _convert_ref(x.real, dt)
    if kind(x.dtype) == "f" and dt.kind in "iu":
        info = np.iinfo(dt)
        with np.errstate(invalid="ignore"):
            y = np.where(
                np.isnan(x), 0, np.clip(np.trunc(x.astype(np.float64)), info.min, info.max)
            )
        return y.astype(dt)
    return x.astype(dt)


convert_element_type_p.reference = _convert_ref


def _convert_jvp(primals, tangents, new_dtype, weak_type=False, sharding=None):
    x, = primals
    t, = tangents
    ans = convert_element_type_p.bind(
        x, new_dtype=new_dtype, weak_type=weak_type, sharding=sharding
    )
    if not (_ad.is_differentiable(_ad.aval_of(x)) and _ad.is_differentiable(_ad.aval_of(ans))):
        return ans, _ad.Zero(_ad.aval_of(ans))
    return ans, convert_element_type_p.bind(
        t, new_dtype=new_dtype, weak_type=weak_type, sharding=sharding
    )


def _convert_transpose(ct, x, new_dtype, weak_type=False, sharding=None):
    a = x.aval
    if _ad.aval_of(ct).dtype == a.dtype:
        return [ct]
    return [
        convert_element_type_p.bind(ct, new_dtype=a.dtype, weak_type=a.weak_type, sharding=sharding)
    ]


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
_batching.defbroadcasting(convert_element_type_p)

integer_pow_p = Primitive("integer_pow")


@integer_pow_p.def_abstract_eval
def _ipow_abstract(x, y):
    _check_kind("integer_pow", x.dtype, NUM + ("c",))
    if y < 0 and kind(x.dtype) in "iu":
        raise TypeError(
            f"Integers cannot be raised to negative powers, got "
            f"integer_pow({np.dtype(x.dtype).name}[{','.join(map(str, x.shape))}], {y})"
        )
    return x


@integer_pow_p.def_fuse
def _ipow_fuse(kb, idx, read, in_avals, out_aval, y):
    x = read[0](idx)
    if y == 0:
        return kb.lit(1, out_aval.dtype)
    cplx = W.is_complex(out_aval.dtype)
    if cplx:
        kb.use_helper("wj_cmul")
        kb.use_helper("wj_cdiv")
    mul = (lambda a, b: f"wj_cmul({a}, {b})") if cplx else (lambda a, b: f"{a} * {b}")
    n = abs(y)
    acc, base = None, x
    while n:
        if n & 1:
            acc = base if acc is None else kb.let(mul(acc, base))
        n >>= 1
        if n:
            base = kb.let(mul(base, base))
    if y < 0:
        if cplx:
            return f"wj_cdiv({kb.lit(1, out_aval.dtype)}, {acc})"
        return f"({kb.lit(1, out_aval.dtype)} / {acc})"
    return acc


integer_pow_p.reference = lambda x, y: (
    C.integer_pow(x, y) if x.dtype.kind == "c"
    else np.power(x, y) if y >= 0 else 1 / np.power(x, -y))


def _ipow_jvp(g, x, y):
    if y == 0:
        return _ad.Zero(_ad.aval_of(x))
    if y == 1:
        return g
    return ops.mul(g, ops.mul(_c(x, y), x if y == 2 else ops.integer_pow(x, y - 1)))


_ad.defjvp(integer_pow_p, _ipow_jvp)
_batching.defbroadcasting(integer_pow_p)


# --------------------------------------------------------------------------- stop_gradient
# the identity whose tangent is zero (``lax.stop_gradient``)

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.reference = lambda x: np.asarray(x)
stop_gradient_p.fuse = lambda kb, idx, read, in_avals, out_aval: read[0](idx)
stop_gradient_p.view = True
_ad.defjvp_zero(stop_gradient_p)
stop_gradient_p.batch = lambda args, dims: (stop_gradient_p.bind(args[0]), dims[0])
stop_gradient_p.axis_map = _rows.elementwise_axes


# --------------------------------------------------------------------------- name
# the identity carrying a name for checkpoint policies (``ad_checkpoint.checkpoint_name``)

name_p = Primitive("name")
name_p.abstract_eval = lambda x, *, name: x
name_p.reference = lambda x, *, name: np.asarray(x)
name_p.fuse = lambda kb, idx, read, in_avals, out_aval, *, name: read[0](idx)
name_p.view = True
name_p.jvp = lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0])
name_p.transpose = lambda ct, x, *, name: [ct]
name_p.batch = lambda args, dims, *, name: (name_p.bind(args[0], name=name), dims[0])
name_p.axis_map = _rows.elementwise_axes
