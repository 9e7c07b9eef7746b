"""Elementwise functions (JAX's ufuncs): arithmetic, comparisons, logic, bit operations,
exponents and logarithms, trigonometry, rounding, ``clip`` and the three-argument ``where``.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from .._src.core.ir import WeakScalar
from .._src.api.custom_derivatives import custom_jvp
from .._src.core.tracing import to_concrete_value
from ._util import (_aval, _broadcast_to_shape, _const, _f32, _inexact, _is_array, _is_complex,
                    _is_float, _no_complex, _select, _wrap_result, broadcast_shapes, promote_args)
from .creation import _arraylike, _isnan, astype, full_like, ones_like, zeros_like


def _unary(name, f, to_float=False, accepts_bool=True):
    def u(x, /):
        x, = promote_args(name, x, to_float=to_float)
        if not accepts_bool and _aval(x).dtype == np.bool_:
            raise TypeError(f"{name} does not accept dtype bool")
        return _wrap_result(f(x))
    u.__name__ = name
    return u


def _binary(name, f, to_float=False):
    def b(x1, x2, /):
        x1, x2 = promote_args(name, x1, x2, to_float=to_float)
        return _wrap_result(f(x1, x2))
    b.__name__ = name
    return b


def _logical(f):
    def g(a, b):
        return f(lax.ne(a, _zero_like(a)) if _aval(a).dtype != np.bool_ else a,
                 lax.ne(b, _zero_like(b)) if _aval(b).dtype != np.bool_ else b)
    return g


def _zero_like(x):
    return lax._const(x, 0)


def _bool_to_int(f):
    def g(*xs):
        if _aval(xs[0]).dtype == np.bool_:
            xs = [lax.convert_element_type(x, np.int32) for x in xs]
        return f(*xs)
    return g


add = _binary(
    "add", lambda a, b: lax.bitwise_or(a, b) if _aval(a).dtype == np.bool_ else lax.add(a, b)
)


subtract = _binary("subtract", lambda a, b: _no_bool_sub(a, b))


multiply = _binary(
    "multiply", lambda a, b: lax.bitwise_and(a, b) if _aval(a).dtype == np.bool_ else lax.mul(a, b)
)


true_divide = _binary("true_divide", lambda a, b: lax.div(a, b), to_float=True)


divide = true_divide


maximum = _binary("maximum", lax.max)


minimum = _binary("minimum", lax.min)


equal = _binary("equal", lax.eq)


not_equal = _binary("not_equal", lax.ne)


def _complex_comparison(op):
    """As JAX: complex values order lexicographically (the real parts, then the imaginary)."""
    def f(x, y):
        if not _is_complex(x):
            return op(x, y)
        return lax.select(lax.eq(lax.real(x), lax.real(y)), op(lax.imag(x), lax.imag(y)),
                          op(lax.real(x), lax.real(y)))
    return f


less = _binary("less", _complex_comparison(lax.lt))


less_equal = _binary("less_equal", _complex_comparison(lax.le))


greater = _binary("greater", _complex_comparison(lax.gt))


greater_equal = _binary("greater_equal", _complex_comparison(lax.ge))


bitwise_and = _binary("bitwise_and", lax.bitwise_and)


bitwise_or = _binary("bitwise_or", lax.bitwise_or)


bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)


def _logical_binary(name, f):
    """As JAX: the operands are promoted together, then each becomes bool (``x != 0``, the zero
    weak only for a weak scalar ``x``), so ``logical_xor(np.array(False), -3)`` is a weak bool
    and ``logical_xor(bool_vector, -3)`` a strong one."""
    def b(x1, x2, /):
        bools = [x if _aval(x).dtype == np.bool_ else lax.ne(x, _zero_like(x))
                 for x in promote_args(name, x1, x2)]
        shape = broadcast_shapes(*[_aval(x).shape for x in bools])
        return _wrap_result(
            f(*[_broadcast_to_shape(x, shape) if _aval(x).ndim else x for x in bools])
        )

    b.__name__ = name
    return b


logical_and = _logical_binary("logical_and", lax.bitwise_and)


logical_or = _logical_binary("logical_or", lax.bitwise_or)


logical_xor = _logical_binary("logical_xor", lax.bitwise_xor)


arctan2 = _binary("arctan2", lax.atan2, to_float=True)


left_shift = _binary("left_shift", lax.shift_left)


def _no_bool_sub(a, b):
    if _aval(a).dtype == np.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    return lax.sub(a, b)


def right_shift(x1, x2, /):
    x1, x2 = promote_args("right_shift", x1, x2)
    f = (
        lax.shift_right_logical
        if dtypes.is_unsigned(_aval(x1).dtype)
        else lax.shift_right_arithmetic
    )
    return _wrap_result(f(x1, x2))


def floor_divide(x1, x2, /):
    """As JAX: integer division rounds toward -inf (x // 0 is -1 rounded the same way, so
    ``7 // 0 == -2``); floats use Python's divmod rule (``1.0 // 0.1 == 9.0``)."""
    x1, x2 = promote_args("floor_divide", x1, x2)
    dt = _aval(x1).dtype
    if dt == np.bool_:
        raise TypeError("floor_divide does not accept dtype bool")
    if dtypes.is_unsigned(dt):
        return lax.div(x1, x2)
    _no_complex("floor_divide", x1)
    if dtypes.is_int(dt):
        q = lax.div(x1, x2)
        fix = lax.bitwise_and(
            lax.ne(lax.sign(x1), lax.sign(x2)), lax.ne(lax.rem(x1, x2), _zero_like(q))
        )
        return _where(fix, lax.sub(q, lax._const(q, 1)), q)
    return _float_divmod(x1, x2)[0]


def _where(c, a, b):
    shape = broadcast_shapes(_aval(c).shape, _aval(a).shape, _aval(b).shape)
    return lax.select(*[_broadcast_to_shape(v, shape) if _aval(v).shape != shape else v
                        for v in (c, a, b)])


def _float_divmod(x1, x2):
    """CPython's float divmod (floatobject.c), as JAX: the quotient rounds (away from zero)."""
    mod = lax.rem(x1, x2)
    x1c = _where(lax.eq(x2, _zero_like(x2)), x1, lax.sub(x1, mod))
    div = lax.div(x1c, x2)
    ind = lax.bitwise_and(lax.ne(mod, _zero_like(mod)), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = _where(ind, lax.add(mod, x2), mod)
    div = _where(ind, lax.sub(div, lax._const(div, 1)), div)
    return lax.round(div), mod


def _nonzero_divisor(x2):
    """Integer ``x % 0`` is 0 in JAX: the divisor 0 becomes 1 first."""
    if dtypes.is_int(_aval(x2).dtype):
        return _where(lax.eq(x2, _zero_like(x2)), lax._const(x2, 1), x2)
    return x2


def remainder(x1, x2, /):
    x1, x2 = promote_args("remainder", x1, x2)
    _no_complex("remainder", x1)
    if _aval(x1).dtype == np.bool_:
        raise TypeError("remainder does not accept dtype bool")
    x2 = _nonzero_divisor(x2)
    r = lax.rem(x1, x2)
    z = _zero_like(r)
    fix = lax.bitwise_and(lax.ne(lax.lt(r, z), lax.lt(x2, _zero_like(x2))), lax.ne(r, z))
    return _where(fix, lax.add(r, x2), r)


mod = remainder


def divmod(x1, x2, /):
    x1, x2 = promote_args("divmod", x1, x2)
    _no_complex("divmod", x1)
    if dtypes.is_int(_aval(x1).dtype) or _aval(x1).dtype == np.bool_:
        return floor_divide(x1, x2), remainder(x1, x2)
    return _float_divmod(x1, x2)


def power(x1, x2, /):
    """As JAX: a concrete integer exponent (a Python int, a NumPy int, a 0-d integer array, a
    traced value whose value is known) means ``lax.integer_pow`` -- which rejects negative
    powers of integers with a TypeError; otherwise integer bases use binary exponentiation over
    6 exponent bits and float bases ``lax.pow``."""
    c = to_concrete_value(x2)
    if c is not None and np.ndim(c) == 0:
        try:
            k = operator.index(c)
        except TypeError:
            k = None
        if k is not None:
            x1, = promote_args("power", x1)
            return _wrap_result(lax.integer_pow(x1, k))
    x1, x2 = promote_args("power", x1, x2)
    if dtypes.is_int(_aval(x1).dtype) or _aval(x1).dtype == np.bool_:
        return _pow_int_int(x1, x2)
    return lax.pow(x1, x2)


def _pow_int_int(x1, x2):
    """JAX's integer power by squaring over 6 exponent bits (more overflows anything > 1);
    works for traced and array exponents (negative ones give JAX's wrapped result)."""
    if _aval(x1).dtype == np.bool_:
        x1, x2 = lax.convert_element_type(x1, np.int32), lax.convert_element_type(x2, np.int32)
    dt = _aval(x1).dtype
    zero, one = WeakScalar(np.asarray(0, dt)), WeakScalar(np.asarray(1, dt))
    shape = broadcast_shapes(_aval(x1).shape, _aval(x2).shape)
    x1, x2 = _broadcast_to_shape(x1, shape), _broadcast_to_shape(x2, shape)
    acc = lax.select(lax.bitwise_and(lax.eq(x1, zero), lax.ne(x2, zero)),
                     lax.broadcast_in_dim(np.asarray(0, dt), shape, ()),
                     lax.broadcast_in_dim(np.asarray(1, dt), shape, ()))
    for _ in range(6):
        acc = lax.select(lax.ne(lax.bitwise_and(x2, one), zero), lax.mul(acc, x1), acc)
        x1 = lax.mul(x1, x1)
        x2 = lax.shift_right_logical(x2, one)
    return acc


def float_power(x1, x2, /):
    x1, x2 = promote_args("float_power", x1, x2, to_float=True)
    return lax.pow(x1, x2)


negative = _unary("negative", lambda x: _no_bool_neg(x))


positive = _unary("positive", lambda x: x)


sign = _unary("sign", lax.sign)


def _exact(x):
    """Integers and bools: no rounding to do (complex values go on to the lax op's TypeError)."""
    return not dtypes.is_inexact(_aval(x).dtype)


floor = _unary("floor", lambda x: x if _exact(x) else lax.floor(x))


ceil = _unary("ceil", lambda x: x if _exact(x) else lax.ceil(x))


# ceil or floor by the sign bit, not by x < 0: a flushing driver (NVIDIA) reads -1e-45 < 0 as
# false while its floor sees the bits and gives -1 (ceil is the IEEE answer, -0.0)
trunc = _unary("trunc", lambda x: x if _exact(x) else
               lax.select(signbit(x), lax.ceil(x), lax.floor(x)))


fix = trunc


def _rint(x):
    if _exact(x):
        return x
    if _is_complex(x):   # as JAX: each part rounds
        return lax.complex(_rint(lax.real(x)), _rint(lax.imag(x)))
    return lax.round(x, 1)


rint = _unary("rint", _rint)


absolute = _unary("absolute", lambda x: x if _aval(x).dtype == np.bool_ else lax.abs(x))


abs = absolute


exp = _unary("exp", lax.exp, True)


exp2 = _unary("exp2", lax.exp2, True)


expm1 = _unary("expm1", lax.expm1, True)


log = _unary("log", lax.log, True)


log1p = _unary("log1p", lax.log1p, True)


def _log_base(base):
    def f(x):
        if _is_complex(x):   # as JAX: each part of log(x) scaled
            r = lax.log(x)
            c = np.float32(1 / np.log(base))
            return lax.complex(lax.mul(lax.real(r), c), lax.mul(lax.imag(r), c))
        if base == 10:   # as JAX: times 1/log(10) rounded to x's dtype
            return lax.mul(lax.log(x), WeakScalar(np.asarray(1 / np.log(10), _aval(x).dtype)))
        return lax.div(lax.log(x), WeakScalar(np.asarray(np.log(base), _aval(x).dtype)))
    return f


log2 = _unary("log2", _log_base(2), True)


log10 = _unary("log10", _log_base(10), True)


sqrt = _unary("sqrt", lax.sqrt, True)


cbrt = _unary("cbrt", lax.cbrt, True)


sin = _unary("sin", lax.sin, True)


cos = _unary("cos", lax.cos, True)


tan = _unary("tan", lax.tan, True)


arcsin = _unary("arcsin", lax.asin, True)


arccos = _unary("arccos", lax.acos, True)


arctan = _unary("arctan", lax.atan, True)


sinh = _unary("sinh", lax.sinh, True)


cosh = _unary("cosh", lax.cosh, True)


tanh = _unary("tanh", lax.tanh, True)


arcsinh = _unary("arcsinh", lax.asinh, True)


arccosh = _unary("arccosh", lax.acosh, True)


arctanh = _unary("arctanh", lax.atanh, True)


square = _unary("square", lambda x: lax.integer_pow(x, 2) if _aval(x).dtype != np.bool_ else x)


reciprocal = _unary("reciprocal", lambda x: lax.integer_pow(x, -1))


invert = _unary("invert", lax.bitwise_not)


bitwise_not = bitwise_invert = invert


logical_not = _unary("logical_not", lambda x: lax.bitwise_not(x) if _aval(x).dtype == np.bool_
                     else lax.eq(x, _zero_like(x)))


def _isfinite(x):
    if _is_complex(x):
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x) if dtypes.is_float(_aval(x).dtype) else \
        full_like(x, True, dtype=np.bool_)


isfinite = _unary("isfinite", _isfinite)


isnan = _unary("isnan", lambda x: lax.ne(x, x))


def _isinf(x):
    if _is_complex(x):
        return lax.bitwise_or(_isinf(lax.real(x)), _isinf(lax.imag(x)))
    if dtypes.is_float(_aval(x).dtype):
        return lax.eq(lax.abs(x), WeakScalar(np.asarray(np.inf, _aval(x).dtype)))
    return full_like(x, False, dtype=np.bool_)


isinf = _unary("isinf", _isinf)


deg2rad = radians = _unary(
    "deg2rad", lambda x: lax.mul(x, WeakScalar(np.asarray(np.pi / 180, _aval(x).dtype))), True
)


rad2deg = degrees = _unary(
    "rad2deg", lambda x: lax.mul(x, WeakScalar(np.asarray(180 / np.pi, _aval(x).dtype))), True
)


def _no_bool_neg(x):
    if _aval(x).dtype == np.bool_:
        raise TypeError("The numpy boolean negative, the `-` operator, is not supported, use the "
                        "`~` operator or the logical_not function instead.")
    return lax.neg(x)


def round(a, decimals=0, out=None):
    """As JAX's: ``x * 10**decimals`` rounded half to even, then scaled back.  XLA turns the
    float32 division by the constant factor into a product with its float32 reciprocal, so a
    float32 (and a float16, computed in float32) result is ``rint(x * f) * (1 / f)`` bit for bit
    (``round(2.675, 2)`` is 2.6799998); bfloat16 divides."""
    a, = promote_args("round", a)
    decimals = operator.index(decimals)
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
    dt = _aval(a).dtype
    if dtypes.is_int(dt) or dt == np.bool_:
        if dt == np.bool_ and decimals != 0:
            raise ValueError(f"data type {np.bool_} not inexact")
        if decimals < 0:
            raise NotImplementedError("integer np.round not implemented for decimals < 0")
        return a
    if decimals > np.log10(float(dtypes.finfo(dt).max)):
        return a                    # rounding beyond the precision is a no-op
    if dtypes.is_complex(dt):   # as JAX: each part rounds
        return lax.complex(round(lax.real(a), decimals), round(lax.imag(a), decimals))
    if decimals == 0:
        return lax.round(a, 1)
    x = lax.convert_element_type(a, np.float32) if dt == np.float16 else a
    cdt = _aval(x).dtype
    factor = _const(x, 10.0 ** decimals)
    y = lax.round(lax.mul(x, factor), 1)
    if cdt == np.float32:
        y = lax.mul(y, _const(x, np.float32(1) / np.float32(10.0 ** decimals)))
    else:
        y = lax.div(y, factor)
    return lax.convert_element_type(y, dt) if dt == np.float16 else y


around = round_ = round


def clip(arr=None, /, min=None, max=None, a=None, a_min=None, a_max=None):
    x = arr if arr is not None else a
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    if any(iscomplexobj(v) for v in (x, lo, hi)):
        raise ValueError("Clip received a complex value either through the input or the min/max "
                         "keywords. Complex values have no ordering and cannot be clipped. "
                         "Please convert to a real value or array by taking the real or "
                         "imaginary components via jax.numpy.real/imag respectively.")
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return _wrap_result(x) if not _is_array(x) else x


def _where_xy(condition, x, y):
    """``where(condition, x, y)`` with JAX's promotion and broadcasting."""
    if x is None or y is None:
        raise ValueError(
            "Either both or neither of the x and y arguments should be provided to jax.numpy.where"
        )
    c = _arraylike("where", condition)
    if c.dtype != np.bool_:
        c = not_equal(c, 0)
    broadcast_shapes(c.shape, np.shape(x), np.shape(y))   # JAX's ValueError, all three shapes
    x, y = promote_args("where", x, y)
    shape = broadcast_shapes(c.shape, _aval(x).shape, _aval(y).shape)
    c = _broadcast_to_shape(c, shape)
    x = _broadcast_to_shape(x, shape)
    y = _broadcast_to_shape(y, shape)
    return _wrap_result(lax.select(c, x, y))


def hypot(x1, x2, /):
    x1, x2 = _inexact("hypot", x1, x2)
    _no_complex("hypot", x1, error=ValueError, msg=(
        "jnp.hypot is not well defined for complex-valued inputs. Please convert to real values "
        "first, such as by using abs(x)"))
    a, b = lax.abs(x1), lax.abs(x2)
    inf = lax.bitwise_or(isinf(a), isinf(b))
    hi, lo = lax.max(a, b), lax.min(a, b)
    zero = lax.eq(hi, _const(hi, 0))
    safe = _select(zero, ones_like(hi), hi)
    r = lax.mul(hi, lax.sqrt(lax.add(lax.integer_pow(lax.div(lo, safe), 2), _const(hi, 1))))
    r = _select(zero, hi, r)
    return _select(inf, full_like(r, np.inf), r)


def signbit(x, /):
    x, = promote_args("signbit", x)
    dt = _aval(x).dtype
    if dt == np.bool_:
        return full_like(x, False, dtype=np.bool_)
    if dtypes.is_complex(dt):
        raise ValueError(f"jax.numpy.signbit is not well defined for {dt}")
    if dtypes.is_unsigned(dt):
        return full_like(x, False, dtype=np.bool_)
    if dtypes.is_int(dt):
        return lax.lt(x, _const(x, 0))
    if dt != _f32:
        x = lax.convert_element_type(x, _f32)
    bits = lax.bitcast_convert_type(x, np.int32)
    return lax.lt(bits, WeakScalar(np.asarray(0, np.int32)))


def copysign(x1, x2, /):
    x1, x2 = _inexact("copysign", x1, x2)
    _no_complex("copysign", x1)
    a = lax.abs(x1)
    return _select(signbit(x2), lax.neg(a), a)


def heaviside(x1, x2, /):
    x1, x2 = _inexact("heaviside", x1, x2)
    zero, one = zeros_like(x1), ones_like(x1)
    return _select(lax.lt(x1, _const(x1, 0)), zero,
                   _select(lax.gt(x1, _const(x1, 0)), one, _select(lax.ne(x1, x1), x1, x2)))


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _arraylike("nan_to_num", x)
    if _is_complex(x):   # as JAX: each part
        parts = [nan_to_num(p, nan=nan, posinf=posinf, neginf=neginf)
                 for p in (lax.real(x), lax.imag(x))]
        return lax.complex(*parts)
    if not _is_float(x):
        return x
    info = dtypes.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = _select(isnan(x), full_like(x, nan), x)
    out = _select(lax.eq(out, _const(out, np.inf)), full_like(x, posinf), out)
    return _select(lax.eq(out, _const(out, -np.inf)), full_like(x, neginf), out)


def fmax(x1, x2):
    """x1 where it is greater (lexicographically for complex, as JAX) or x2 is NaN, else x2."""
    x1, x2 = promote_args("fmax", x1, x2)
    return _wrap_result(_select(lax.bitwise_or(_gt(x1, x2), _isnan(x2)), x1, x2))


def fmin(x1, x2):
    x1, x2 = promote_args("fmin", x1, x2)
    return _wrap_result(_select(lax.bitwise_or(_gt(x2, x1), _isnan(x2)), x1, x2))


_gt = _complex_comparison(lax.gt)


def _wrap_between(x, a):
    """``x`` wrapped into [-a, a) (as JAX's logaddexp wraps a complex result's phase)."""
    two_a = _const(x, 2 * a)
    r = lax.rem(lax.add(x, _const(x, a)), two_a)
    return lax.sub(_select(lax.lt(r, _const(x, 0)), lax.add(r, two_a), r), _const(x, a))


def _logaddexp_complex(x1, x2, exp, scale, period):
    """JAX's complex formula: m + scale log1p(exp(x1 + x2 - 2m)), m the lexicographic larger
    (XLA's complex max: x1 where x1 > x2, else x2), the imaginary part wrapped into a period."""
    amax = _select(_gt(x1, x2), x1, x2)
    delta = lax.sub(lax.add(x1, x2), lax.mul(amax, _const(amax, 2)))
    t = lax.log1p(exp(delta))
    out = lax.add(amax, t if scale == 1 else lax.mul(_const(t, scale), t))
    return lax.complex(lax.real(out), _wrap_between(lax.imag(out), period))


def _logaddexp_real(x1, x2, exp, scale):
    """``max + scale log1p(exp(-|x1 - x2|))``; where the difference is NaN (a NaN, or
    infinities of one sign) ``x1 + x2``."""
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    t = lax.log1p(exp(lax.neg(lax.abs(delta))))
    return _select(lax.ne(delta, delta), lax.add(x1, x2),
                   lax.add(amax, t if scale == 1 else lax.mul(_const(x1, scale), t)))


def _finite_plus_inf(x):
    """``x`` with +inf (of the real part) replaced by 0, for the derivative's exponent."""
    re = lax.real(x) if _is_complex(x) else x
    return _select(lax.eq(re, _const(re, np.inf)), zeros_like(x), x)


def _logaddexp_rule(fun, exp):
    """The derivative of log(exp(x1) + exp(x2)) as JAX defines it: each tangent weighted by
    ``exp(x_i - out)`` -- half each where x1 == x2 (the max's tie), and +inf operands or
    outputs counted as 0 in the exponent."""
    def jvp(primals, tangents):
        x1, x2 = primals
        t1, t2 = tangents
        out = fun(x1, x2)
        r_out = _finite_plus_inf(out)
        w1 = exp(lax.sub(_finite_plus_inf(x1), r_out))
        w2 = exp(lax.sub(_finite_plus_inf(x2), r_out))
        return out, lax.add(lax.mul(t1, w1), lax.mul(t2, w2))
    return jvp


@custom_jvp
def _logaddexp(x1, x2):
    if _is_complex(x1):
        return _logaddexp_complex(x1, x2, lax.exp, 1, np.pi)
    return _logaddexp_real(x1, x2, lax.exp, 1)


@custom_jvp
def _logaddexp2(x1, x2):
    if _is_complex(x1):
        return _logaddexp_complex(x1, x2, lax.exp2, 1 / np.log(2), np.pi / np.log(2))
    return _logaddexp_real(x1, x2, lax.exp2, 1 / np.log(2))


_logaddexp.defjvp(_logaddexp_rule(_logaddexp, lax.exp))
_logaddexp2.defjvp(_logaddexp_rule(_logaddexp2, lax.exp2))


def logaddexp(x1, x2, /):
    x1, x2 = _inexact("logaddexp", x1, x2)
    return _logaddexp(x1, x2)


def logaddexp2(x1, x2, /):
    x1, x2 = _inexact("logaddexp2", x1, x2)
    return _logaddexp2(x1, x2)


def sinc(x, /):
    x, = _inexact("sinc", x)
    zero = lax.eq(x, _const(x, 0))
    px = lax.mul(x, _const(x, np.pi))
    safe = _select(zero, ones_like(x), px)
    return _select(zero, ones_like(x), lax.div(lax.sin(safe), safe))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = promote_args("isclose", a, b)
    if not dtypes.is_inexact(_aval(a).dtype):
        return _wrap_result(lax.eq(a, b))
    dt = _aval(a).dtype if _is_float(a) else _f32   # complex: |a - b| against real tolerances
    rt, at = WeakScalar(np.asarray(rtol, dt)), WeakScalar(np.asarray(atol, dt))
    out = lax.le(lax.abs(lax.sub(a, b)), lax.add(at, lax.mul(rt, lax.abs(b))))
    ai, bi = isinf(a), isinf(b)
    out = lax.bitwise_and(out, lax.bitwise_not(lax.bitwise_or(ai, bi)))
    out = lax.bitwise_or(out, lax.bitwise_and(lax.bitwise_and(ai, bi), lax.eq(a, b)))
    an, bn = lax.ne(a, a), lax.ne(b, b)
    out = lax.bitwise_and(out, lax.bitwise_not(lax.bitwise_or(an, bn)))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(an, bn))
    return out


def fabs(x, /):
    x, = _inexact("fabs", x)
    _no_complex("fabs", x, msg="ufunc 'fabs' does not support complex dtypes")
    return lax.abs(x)


def fmod(x1, x2, /):
    x1, x2 = promote_args("fmod", x1, x2)
    _no_complex("fmod", x1)
    if _aval(x1).dtype == np.bool_:
        raise TypeError("fmod does not accept dtype bool")
    return _wrap_result(lax.rem(x1, _nonzero_divisor(x2)))   # integer fmod(x, 0) is 0


def _pow2(e):
    """2**e exactly, for integer-valued e: bfloat16's exp2 is XLA's exp(x * log 2) in bf16
    steps (not exact), so a bf16 power of two is taken in float32."""
    if _aval(e).dtype == dtypes.bfloat16:
        return lax.convert_element_type(lax.exp2(lax.convert_element_type(e, np.float32)),
                                        dtypes.bfloat16)
    return lax.exp2(e)


def ldexp(x1, x2, /):
    x2 = _arraylike("ldexp", x2)
    if _is_complex(_arraylike("ldexp", x1)) or not dtypes.is_int(x2.dtype):
        raise ValueError(f"ldexp: x2 must be of integer type, got {x2.dtype}")
    x1, = _inexact("ldexp", x1)
    e = astype(x2, _aval(x1).dtype)
    h = lax.floor(lax.div(e, _const(e, 2)))
    return multiply(multiply(x1, _pow2(h)), _pow2(lax.sub(e, h)))


def frexp(x, /):
    x, = _inexact("frexp", x)
    _no_complex("frexp", x)
    ax = lax.abs(x)
    special = lax.bitwise_or(lax.eq(x, _const(x, 0)), lax.bitwise_not(lax.is_finite(x)))
    safe = _select(special, ones_like(ax), ax)
    e = lax.add(lax.floor(lax.log2(safe) if hasattr(lax, "log2") else
                          lax.div(lax.log(safe), _const(safe, np.log(2)))), _const(safe, 1))
    m = lax.div(x, _pow2(e))
    am = lax.abs(m)
    up = lax.ge(am, _const(am, 1))
    down = lax.lt(am, _const(am, 0.5))
    e = _select(up, lax.add(e, _const(e, 1)), _select(down, lax.sub(e, _const(e, 1)), e))
    m = lax.div(x, _pow2(e))
    m = _select(special, x, m)
    e = _select(special, zeros_like(e), e)
    return m, lax.convert_element_type(e, np.int32)


def modf(x, /, out=None):
    x, = _inexact("modf", x)
    whole = _select(signbit(x), lax.ceil(x), lax.floor(x))   # by the sign bit, as trunc
    return lax.sub(x, whole), whole


def _no_complex_inf(x):
    if _is_complex(x):
        raise ValueError("isposinf/isneginf are not well defined for complex types")


def isneginf(x, /, out=None):
    x = _arraylike("isneginf", x)
    _no_complex_inf(x)
    return logical_and(isinf(x), signbit(x)) if _is_float(x) else full_like(x, False, dtype=bool)


def isposinf(x, /, out=None):
    x = _arraylike("isposinf", x)
    _no_complex_inf(x)
    return logical_and(isinf(x), logical_not(signbit(x))) if _is_float(x) else \
        full_like(x, False, dtype=bool)


def isreal(x):
    """Elementwise: the imaginary part is 0 (every element of a real array)."""
    x = _arraylike("isreal", x)
    return lax.eq(lax.imag(x), _const(lax.imag(x), 0)) if _is_complex(x) else \
        full_like(x, True, dtype=bool)


def iscomplex(x):
    """Elementwise: the imaginary part is not 0 (no element of a real array)."""
    x = _arraylike("iscomplex", x)
    return lax.ne(lax.imag(x), _const(lax.imag(x), 0)) if _is_complex(x) else \
        full_like(x, False, dtype=bool)


def _dtype_of(x):
    if x is None:
        return None
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = dtypes.dtype(x) if isinstance(x, (bool, int, float, complex)) else \
            np.asarray(x).dtype
    return np.dtype(dt)


def isrealobj(x):
    return not iscomplexobj(x)


def iscomplexobj(x):
    """Whether ``x`` has a complex dtype (a value, array or dtype-carrying object)."""
    dt = _dtype_of(x)
    return dt is not None and dt.kind == "c"


def isscalar(element):
    if _is_array(element):
        return element.ndim == 0
    return np.isscalar(element)


def real(x, /):
    x = _arraylike("real", x)
    return lax.real(x) if _is_complex(x) else x


def imag(x, /):
    x = _arraylike("imag", x)
    return lax.imag(x) if _is_complex(x) else zeros_like(x)


def conjugate(x, /):
    x = _arraylike("conjugate", x)
    return lax.conj(x) if _is_complex(x) else x


conj = conjugate


def angle(z, deg=False):
    """The argument of ``z``: ``atan2(imag, real)`` (0 or pi for a real value), float32."""
    z = _arraylike("angle", z)
    if _is_complex(z):
        re, im = lax.real(z), lax.imag(z)
    else:
        re, = _inexact("angle", z)
        im = zeros_like(re)
    r = lax.atan2(im, re)
    return rad2deg(r) if deg else r


def gcd(x1, x2, /):
    x1, x2 = promote_args("gcd", x1, x2)
    if not dtypes.is_int(_aval(x1).dtype):
        raise ValueError("Arguments to jax.numpy.gcd must be integers.")
    a, b = lax.abs(x1), lax.abs(x2)
    for _ in range(48):   # Euclid converges within 47 steps for 32-bit integers
        nz = lax.ne(b, _const(b, 0))
        safe = _select(nz, b, ones_like(b))
        a, b = _select(nz, b, a), _select(nz, lax.rem(a, safe), b)
    return a


def lcm(x1, x2, /):
    x1, x2 = promote_args("lcm", x1, x2)
    d = gcd(x1, x2)
    zero = lax.eq(d, _const(d, 0))
    safe = _select(zero, ones_like(d), d)
    return _select(zero, zeros_like(d), lax.abs(lax.mul(x1, lax.div(x2, safe))))


# array-API spellings
acos, acosh, asin, asinh, atan, atanh = arccos, arccosh, arcsin, arcsinh, arctan, arctanh


atan2 = arctan2


bitwise_left_shift, bitwise_right_shift = left_shift, right_shift


pow = power


def isdtype(dtype, kind):
    dt = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            kd = "f" if dtypes.is_float(dt) else dt.kind    # bfloat16 (kind 'V') a float
            ok = {"bool": dt == np.bool_, "signed integer": kd == "i",
                  "unsigned integer": kd == "u", "integral": kd in "iu",
                  "real floating": kd == "f", "complex floating": kd == "c",
                  "numeric": kd in "iufc"}.get(k)
            if ok is None:
                raise ValueError(f"Unrecognized kind: {k!r}")
            if ok:
                return True
        elif np.dtype(k) == dt:
            return True
    return False


def can_cast(from_, to, casting="safe"):
    return np.can_cast(from_ if not _is_array(from_) else from_.dtype, to, casting=casting)


__all__ = [
    "add", "subtract", "multiply", "true_divide", "divide", "maximum", "minimum", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or",
    "bitwise_xor", "logical_and", "logical_or", "logical_xor", "arctan2", "left_shift",
    "right_shift", "floor_divide", "remainder", "mod", "divmod", "power", "float_power",
    "negative", "positive", "sign", "floor", "ceil", "trunc", "fix", "rint", "absolute", "abs",
    "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "square", "reciprocal", "invert", "bitwise_not", "bitwise_invert", "logical_not",
    "isfinite", "isnan", "isinf", "deg2rad", "radians", "rad2deg", "degrees", "round", "around",
    "round_", "clip", "hypot", "signbit", "copysign", "heaviside", "nan_to_num", "fmax", "fmin",
    "logaddexp", "logaddexp2", "sinc", "isclose", "fabs", "fmod", "ldexp", "frexp", "modf",
    "isneginf", "isposinf", "isreal", "iscomplex", "isrealobj", "iscomplexobj", "isscalar",
    "real", "imag", "conjugate", "conj", "angle", "gcd", "lcm", "acos", "acosh",
    "asin", "asinh", "atan", "atanh", "atan2", "bitwise_left_shift", "bitwise_right_shift",
    "pow", "isdtype", "can_cast",
]
