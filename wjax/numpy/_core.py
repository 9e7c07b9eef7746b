"""The core of wjax.numpy: promotion, broadcasting, ufuncs, creation, shapes,
reductions and products.  Everything here lowers to wjax.lax (so to
primitives); nothing computes on the host except shape arithmetic.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ..core import dtypes
from .. import lax
from ..array import Array, asarray_device
from ..core.ir import WeakScalar, raise_to_shaped
from ..core.tracing import Tracer, concrete_or_error

ndarray = Array

# dtypes, as in jax.numpy
class _ScalarMeta(type):
    """``jnp.float32`` and friends, as in JAX: a dtype-like object (``np.dtype(jnp.float32)``
    works, and it compares equal to ``np.float32``) whose call makes a wjax Array, so
    ``jnp.float32(x)`` also works on traced values."""

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x):
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'wjax.numpy.{cls.__name__}'>"


def _scalar_type(np_type):
    return _ScalarMeta(np.dtype(np_type).name, (object,), {"dtype": np.dtype(np_type)})


bool_ = _scalar_type(np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.complex64, np.complex128
bfloat16 = dtypes.bfloat16
inf, nan, pi, e, euler_gamma = np.inf, np.nan, np.pi, np.e, np.euler_gamma
newaxis = None
dtype = np.dtype
generic, number, integer, signedinteger, unsignedinteger = np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger
inexact, floating, complexfloating, bool = np.inexact, np.floating, np.complexfloating, bool_
promote_types = dtypes.promote_types
issubdtype = dtypes.issubdtype
finfo, iinfo = dtypes.finfo, dtypes.iinfo


def result_type(*args):
    return dtypes.result_type(*args)


def _is_array(x) -> builtins.bool:
    return isinstance(x, (Array, Tracer))


def _check_arg(name, x, pos=0):
    """JAX's ``check_arraylike``: jnp functions take arrays and scalars, not lists or tuples
    (which would be converted silently on every call) nor strings or None."""
    if isinstance(x, (list, tuple, str, bytes)) or x is None:
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x)} at "
                        f"position {pos}.")


def _arraylike(name, x, pos=0):
    """``x`` as an array, after JAX's check that it is array-like."""
    _check_arg(name, x, pos)
    return asarray(x)


def _aval(x):
    return raise_to_shaped(x)


def _to_operand(x, dt, weak):
    """``x`` converted to dtype ``dt`` (weakly typed if ``weak``)."""
    if isinstance(x, (builtins.bool, int, float)) and not isinstance(x, np.generic):
        if isinstance(x, int) and not isinstance(x, builtins.bool):
            # JAX (x64 off): a Python int must fit int32, then wraps into narrower int dtypes
            # (uint8 array + 300 is 45 + ...); beyond int32 it is an OverflowError, any dtype
            if not -2**31 <= x < 2**31:
                raise OverflowError(f"Python int {x} too large to convert to int32")
            if dtypes.is_int(dt):
                v = np.asarray(np.int64(x)).astype(dt)
                return WeakScalar(v) if weak else v
        return WeakScalar(np.asarray(x, dt)) if weak else np.asarray(x, dt)
    if isinstance(x, (np.ndarray, np.generic)):
        x = asarray_device(x)
    a = _aval(x)
    if a.dtype != dt or a.weak_type != weak:
        return lax.convert_element_type(x, dt, weak_type=weak)
    return x


def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise ValueError("Incompatible shapes for broadcasting: shapes="
                         + str([tuple(s) for s in shapes])) from None


def _broadcast_to_shape(x, shape):
    a = _aval(x)
    if a.shape == tuple(shape):
        return x
    nd = len(shape)
    return lax.broadcast_in_dim(x, shape, tuple(range(nd - a.ndim, nd)))


def promote_args(name, *args, to_float=False, to_inexact=False):
    """JAX's promotion of ufunc arguments, then rank/shape broadcasting."""
    for i, x in enumerate(args):
        _check_arg(name, x, i)
    dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if (to_float or to_inexact) and not dtypes.is_float(dt):
        dt = np.dtype(np.float32)
    ops = [_to_operand(x, dt, weak) for x in args]
    try:
        shape = broadcast_shapes(*[_aval(o).shape for o in ops])
    except ValueError:   # as JAX, where the lax op's shape rule reports it
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        + ", ".join(str(_aval(o).shape) for o in ops) + ".") from None
    # rank-0 operands stay scalars: elementwise primitives broadcast them (``mul a 2.0``)
    return [_broadcast_to_shape(o, shape) if 0 < _aval(o).ndim and _aval(o).shape != shape else o
            for o in ops]


def _wrap_result(x):
    if isinstance(x, WeakScalar):
        return asarray_device(x.val, weak_type=True)
    if isinstance(x, np.ndarray):
        return asarray_device(x)
    return x


# --------------------------------------------------------------------------- ufuncs

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


add = _binary("add", lambda a, b: lax.bitwise_or(a, b) if _aval(a).dtype == np.bool_ else lax.add(a, b))
subtract = _binary("subtract", lambda a, b: _no_bool_sub(a, b))
multiply = _binary("multiply", lambda a, b: lax.bitwise_and(a, b) if _aval(a).dtype == np.bool_ else lax.mul(a, b))
true_divide = _binary("true_divide", lambda a, b: lax.div(a, b), to_float=True)
divide = true_divide
power = None  # defined below
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
less = _binary("less", lax.lt)
less_equal = _binary("less_equal", lax.le)
greater = _binary("greater", lax.gt)
greater_equal = _binary("greater_equal", lax.ge)
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
        return _wrap_result(f(*[_broadcast_to_shape(x, shape) if _aval(x).ndim else x for x in bools]))
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
    f = lax.shift_right_logical if dtypes.is_unsigned(_aval(x1).dtype) else lax.shift_right_arithmetic
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
    if dtypes.is_int(dt):
        q = lax.div(x1, x2)
        fix = lax.bitwise_and(lax.ne(lax.sign(x1), lax.sign(x2)), lax.ne(lax.rem(x1, x2), _zero_like(q)))
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
    if dtypes.is_int(_aval(x1).dtype) or _aval(x1).dtype == np.bool_:
        return floor_divide(x1, x2), remainder(x1, x2)
    return _float_divmod(x1, x2)


def power(x1, x2, /):
    """As JAX: a concrete integer exponent (a Python int, a NumPy int, a 0-d integer array, a
    traced value whose value is known) means ``lax.integer_pow`` -- which rejects negative
    powers of integers with a TypeError; otherwise integer bases use binary exponentiation over
    6 exponent bits and float bases ``lax.pow``."""
    from ..core.tracing import to_concrete_value
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
floor = _unary("floor", lambda x: x if not dtypes.is_float(_aval(x).dtype) else lax.floor(x))
ceil = _unary("ceil", lambda x: x if not dtypes.is_float(_aval(x).dtype) else lax.ceil(x))
trunc = _unary("trunc", lambda x: x if not dtypes.is_float(_aval(x).dtype) else
               lax.select(lax.lt(x, _zero_like(x)), lax.ceil(x), lax.floor(x)))
fix = trunc
rint = _unary("rint", lambda x: x if not dtypes.is_float(_aval(x).dtype) else lax.round(x, 1))
absolute = _unary("absolute", lambda x: x if _aval(x).dtype == np.bool_ else lax.abs(x))
abs = absolute
exp = _unary("exp", lax.exp, True)
exp2 = _unary("exp2", lax.exp2, True)
expm1 = _unary("expm1", lax.expm1, True)
log = _unary("log", lax.log, True)
log1p = _unary("log1p", lax.log1p, True)
log2 = _unary("log2", lambda x: lax.div(lax.log(x), WeakScalar(np.asarray(np.log(2), _aval(x).dtype))), True)
log10 = _unary("log10", lambda x: lax.div(lax.log(x), WeakScalar(np.asarray(np.log(10), _aval(x).dtype))), True)
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
isfinite = _unary("isfinite", lambda x: lax.is_finite(x) if dtypes.is_float(_aval(x).dtype)
                  else full_like(x, True, dtype=np.bool_))
isnan = _unary("isnan", lambda x: lax.ne(x, x))
isinf = _unary("isinf", lambda x: lax.eq(lax.abs(x), WeakScalar(np.asarray(np.inf, _aval(x).dtype)))
               if dtypes.is_float(_aval(x).dtype) else full_like(x, False, dtype=np.bool_))
deg2rad = radians = _unary("deg2rad", lambda x: lax.mul(x, WeakScalar(np.asarray(np.pi / 180, _aval(x).dtype))), True)
rad2deg = degrees = _unary("rad2deg", lambda x: lax.mul(x, WeakScalar(np.asarray(180 / np.pi, _aval(x).dtype))), True)


def _no_bool_neg(x):
    if _aval(x).dtype == np.bool_:
        raise TypeError("The numpy boolean negative, the `-` operator, is not supported, use the "
                        "`~` operator or the logical_not function instead.")
    return lax.neg(x)


def round(a, decimals=0, out=None):
    a, = promote_args("round", a)
    dt = _aval(a).dtype
    if not dtypes.is_float(dt):
        return a if decimals >= 0 else _wrap_result(a)
    if decimals == 0:
        return lax.round(a, 1)
    f = WeakScalar(np.asarray(10.0 ** decimals, dt))
    return lax.div(lax.round(lax.mul(a, f), 1), f)


around = round_ = round


def clip(arr=None, /, min=None, max=None, a=None, a_min=None, a_max=None):
    x = arr if arr is not None else a
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return _wrap_result(x) if not _is_array(x) else x


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    if x is None and y is None:
        from .extra import nonzero
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("Either both or neither of the x and y arguments should be provided to jax.numpy.where")
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


# --------------------------------------------------------------------------- creation

def array(object, dtype=None, copy=True, order="K", ndmin=0):
    if object is None:
        raise ValueError("None is not a valid value for jnp.array")
    if _is_array(object):
        out = object if dtype is None else astype(object, dtype)
    else:
        if isinstance(object, (list, tuple)) and builtins.any(_is_array(o) for o in _flat(object)):
            out = stack([array(o) for o in object]) if object else asarray_device(np.zeros((0,), np.float32))
            if dtype is not None:
                out = astype(out, dtype)
        else:
            if isinstance(object, int) and not isinstance(object, builtins.bool):
                if not -2**31 <= object < 2**31 and dtype is None:
                    raise OverflowError(f"Python int {object} too large to convert to int32")
            if dtype is not None:
                dt = dtypes.check_supported(dtype, warn=True)
                host = np.asarray(object)
                if host.dtype.kind in "cOSUV":
                    raise TypeError(f"wjax does not support arrays of dtype {host.dtype}")
                if not isinstance(object, np.ndarray):
                    # as JAX: np.asarray(object, dtype) (Python ints out of range: OverflowError)
                    host = np.asarray(object, dtype=dt)
                out = asarray_device(host.astype(dt), dtype=dt)
            else:
                host = np.asarray(object)
                if host.dtype.kind in "cOSUVMm":
                    raise TypeError(f"wjax does not support arrays of dtype {host.dtype}")
                dt = dtypes.canonicalize_dtype(host.dtype) if isinstance(object, np.ndarray) or host.ndim else None
                if isinstance(object, (builtins.bool, int, float)) and not isinstance(object, np.generic):
                    out = asarray_device(object)   # weak, as JAX's jnp.array(2.0)
                else:
                    if host.dtype == np.float64 and not isinstance(object, (np.ndarray, np.generic)):
                        host = host.astype(np.float32)
                    elif host.dtype == np.int64 and not isinstance(object, (np.ndarray, np.generic)):
                        if host.size and (host.max() >= 2**31 or host.min() < -2**31):
                            raise OverflowError("Python int too large to convert to int32")
                        host = host.astype(np.int32)
                    out = asarray_device(host)
    if ndmin > out.ndim:
        out = reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def _flat(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flat(o)
    else:
        yield obj


def asarray(a, dtype=None, order=None, copy=None):
    if _is_array(a) and dtype is None:
        return a
    return array(a, dtype=dtype, copy=False)


def _dt(dtype, default=np.float32):
    return dtypes.check_supported(default if dtype is None else dtype)


def _shape(shape):
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "__index__") and not isinstance(shape, (tuple, list))):
        shape = (operator.index(shape),)
    out = []
    for s in shape:
        if isinstance(s, Tracer) and s.to_concrete_value() is None:
            raise TypeError(
                f"Shapes must be 1D sequences of concrete values of integer type, got {tuple(shape)}. "
                "If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.")
        out.append(operator.index(s))
    if builtins.any(s < 0 for s in out):   # JAX's class and words (broadcast_in_dim's rule)
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{tuple(out)}.")
    return tuple(out)


def full(shape, fill_value, dtype=None):
    shape = _shape(shape)
    if _is_array(fill_value):
        v = fill_value if dtype is None else astype(fill_value, dtype)
        return broadcast_to(v, shape)
    dt = dtypes.check_supported(dtype) if dtype is not None else dtypes.result_type(fill_value)
    return lax.broadcast_in_dim(np.asarray(fill_value, dt), shape, ())


def zeros(shape, dtype=None):
    return full(shape, 0, _dt(dtype))


def ones(shape, dtype=None):
    return full(shape, 1, _dt(dtype))


def empty(shape, dtype=None):
    return zeros(shape, dtype)


def _like(a, dtype, shape):
    return (_dt(dtype, _aval(a).dtype), _aval(a).shape if shape is None else shape)


def zeros_like(a, dtype=None, shape=None):
    dt, sh = _like(a, dtype, shape)
    return full(sh, 0, dt)


def ones_like(a, dtype=None, shape=None):
    dt, sh = _like(a, dtype, shape)
    return full(sh, 1, dt)


def empty_like(a, dtype=None, shape=None):
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    dt, sh = _like(a, dtype, shape)
    return full(sh, fill_value, dt)


def arange(start, stop=None, step=None, dtype=None):
    for v in (start, stop, step):
        if isinstance(v, Tracer) and v.to_concrete_value() is None:
            raise concrete_error_for("arange", v)
    start, stop, step = (v.to_concrete_value()[()] if isinstance(v, Tracer) else v
                         for v in (start, stop, step))
    if stop is None and step is None:
        start, stop, step = 0, start, 1
    elif step is None:
        step = 1
    if dtype is None:
        dtype = dtypes.result_type(*[v for v in (start, stop, step) if v is not None])
    dt = dtypes.check_supported(dtype)
    n = builtins.max(0, int(math.ceil((float(stop) - float(start)) / float(step))))
    if dtypes.is_int(dt) and builtins.all(isinstance(v, (int, np.integer)) for v in (start, step)):
        i = lax.iota(dt, n)
        if step != 1:
            i = lax.mul(i, WeakScalar(np.asarray(step, dt)))
        if start != 0:
            i = lax.add(i, WeakScalar(np.asarray(start, dt)))
        return i
    i = lax.convert_element_type(lax.iota(np.int32, n), np.float32)
    out = lax.add(lax.mul(i, WeakScalar(np.asarray(step, np.float32))), WeakScalar(np.asarray(start, np.float32)))
    return out if dt == np.float32 else lax.convert_element_type(out, dt)


def concrete_error_for(name, v):
    from ..core.tracing import ConcretizationTypeError
    return ConcretizationTypeError(
        f"jax.numpy.{name} requires concrete (non-traced) arguments, got {v!r}. Use "
        "static_argnums for values that determine shapes.")


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    dt = _dt(dtype, np.float32)
    start_a = asarray(start, np.float32)
    stop_a = asarray(stop, np.float32)
    div = (num - 1) if endpoint else num
    i = lax.convert_element_type(lax.iota(np.int32, num), np.float32)
    shape = broadcast_shapes(start_a.shape, stop_a.shape)
    st = broadcast_to(start_a, shape)
    sp = broadcast_to(stop_a, shape)
    step = (sp - st) / builtins.max(div, 1)
    i = reshape(i, (num,) + (1,) * len(shape))
    out = st[None] + i * step[None]
    if endpoint and num > 1:
        out = out.at[-1].set(sp)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    out = astype(out, dt) if dt != np.float32 else out
    return (out, astype(step, dt)) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    return astype(power(base, linspace(start, stop, num, endpoint, axis=axis)), _dt(dtype, np.float32))


def _dim(name, n, m):
    """Concrete, nonnegative matrix sizes (JAX's checks for eye and tri)."""
    try:
        n, m = operator.index(n), (None if m is None else operator.index(m))
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                        f"({n!r}, {m!r}).") from None
    if n < 0 or (m is not None and m < 0):
        raise ValueError(f"negative dimensions are not allowed, got {n} and {m}")
    return n, (n if m is None else m)


def eye(N, M=None, k=0, dtype=None):
    N, M = _dim("eye", N, M)
    k = operator.index(k)
    r = lax.broadcasted_iota(np.int32, (N, M), 0)
    c = lax.broadcasted_iota(np.int32, (N, M), 1)
    return astype(equal(c - r, k), _dt(dtype))


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    N, M = operator.index(N), (None if M is None else operator.index(M))   # negatives: iota's TypeError
    M = N if M is None else M
    k = operator.index(k)
    r = lax.broadcasted_iota(np.int32, (N, M), 0)
    c = lax.broadcasted_iota(np.int32, (N, M), 1)
    return astype(less_equal(c, r + k), _dt(dtype))


def astype(x, dtype, copy=False, device=None):
    dt = dtypes.check_supported(dtype)
    x = _arraylike("astype", x)
    if x.dtype == dt and not x.weak_type:
        return x
    return lax.convert_element_type(x, dt)


# --------------------------------------------------------------------------- shapes

def shape(a):
    return np.shape(a) if not _is_array(a) else a.shape


def ndim(a):
    return len(shape(a))


def size(a, axis=None):
    s = shape(a)
    return int(np.prod(s)) if axis is None else s[axis]


def _axis(axis, nd, name="axis"):
    if not -nd <= axis < builtins.max(nd, 1) or (nd == 0 and axis not in (0, -1)):
        from numpy.exceptions import AxisError
        raise AxisError(f"{name} {axis} is out of bounds for array of dimension {nd}")
    return axis % builtins.max(nd, 1)


def _axes(axis, nd):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        out = tuple(_axis(operator.index(a), nd) for a in axis)
        if len(set(out)) != len(out):
            raise ValueError(f"repeated axis in {tuple(axis)}")
        return out
    return (_axis(operator.index(axis), nd),)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if shape is None:
        shape = newshape
    a = _arraylike("reshape", a)
    if order != "C":
        raise NotImplementedError("reshape only supports order='C'")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    for s in shape:
        if isinstance(s, Tracer) and s.to_concrete_value() is None:
            raise TypeError(
                f"Shapes must be 1D sequences of concrete values of integer type, got {shape}. "
                "If using `jit`, try using `static_argnums` or applying `jit` to smaller subfunctions.")
    shape = tuple(operator.index(s) for s in shape)
    if shape.count(-1) > 1:
        raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {shape}")
    if builtins.any(s < -1 for s in shape):
        raise TypeError(f"reshape new_sizes must all be positive, got {shape}.")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        if known == 0 or a.size % known:
            raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into shape {shape}")
        shape = tuple(a.size // known if s == -1 else s for s in shape)
    if int(np.prod(shape)) != a.size:
        raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into shape {shape} "
                        f"(size {int(np.prod(shape))})")
    return lax.reshape(a, shape)


def ravel(a, order="C"):
    return reshape(a, (-1,))


def transpose(a, axes=None):
    a = _arraylike("transpose", a)
    if axes is None:
        axes = tuple(range(a.ndim))[::-1]
    axes = tuple(_axis(operator.index(x), a.ndim) for x in axes)
    if sorted(axes) != list(range(a.ndim)):
        raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                        f"permutation {axes} for operand shape {a.shape}.")
    return lax.transpose(a, axes)


def permute_dims(a, axes):
    return transpose(a, axes)


def swapaxes(a, axis1, axis2):
    a = _arraylike("swapaxes", a)
    p = list(range(a.ndim))
    i, j = _axis(axis1, a.ndim), _axis(axis2, a.ndim)
    p[i], p[j] = p[j], p[i]
    return lax.transpose(a, p)


def moveaxis(a, source, destination):
    a = _arraylike("moveaxis", a)
    src = _axes(source, a.ndim) if not isinstance(source, int) else (_axis(source, a.ndim),)
    dst = _axes(destination, a.ndim) if not isinstance(destination, int) else (_axis(destination, a.ndim),)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


def expand_dims(a, axis):
    a = _arraylike("expand_dims", a)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = a.ndim + len(axes)
    axes = tuple(_axis(x, nd) for x in axes)
    return lax.expand_dims(a, axes)


def squeeze(a, axis=None):
    a = _arraylike("squeeze", a)
    if axis is None:
        axes = tuple(i for i, s in enumerate(a.shape) if s == 1)
    else:
        axes = _axes(axis, a.ndim)
        for ax in axes:
            if a.shape[ax] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                                 f"one, got shape={a.shape} and dimensions={axes}")
    return lax.squeeze(a, axes)


def broadcast_to(array, shape):
    a = _arraylike("broadcast_to", array)
    shape = _shape(shape)
    try:
        out = np.broadcast_shapes(a.shape, shape)
    except ValueError:
        out = None
    if out != shape:
        raise ValueError(f"Incompatible shapes for broadcasting: {a.shape} and requested shape {shape}")
    if a.shape == shape:
        return a
    return lax.broadcast_in_dim(a, shape, tuple(range(len(shape) - a.ndim, len(shape))))


def broadcast_arrays(*args):
    shape = broadcast_shapes(*[np.shape(a) if not _is_array(a) else a.shape for a in args])
    return [broadcast_to(a, shape) for a in args]


def atleast_1d(*arys):
    out = [reshape(asarray(a), (1,)) if asarray(a).ndim == 0 else asarray(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    out = []
    for a in arys:
        a = asarray(a)
        out.append(reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis=0, dtype=None):
    if _is_array(arrays) or isinstance(arrays, np.ndarray):
        arrays = list(arrays)
    if not len(arrays):
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = [asarray(a) for a in arrays]
    if builtins.any(a.ndim == 0 for a in arrays):
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    dt = dtypes.result_type(*arrays) if dtype is None else dtypes.check_supported(dtype)
    nd = arrays[0].ndim
    if builtins.any(a.ndim != nd for a in arrays):
        raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                        + ", ".join(str(a.shape) for a in arrays) + ".")
    ax = _axis(axis, nd)
    for a in arrays:
        if builtins.any(s != t for i, (s, t) in enumerate(zip(a.shape, arrays[0].shape)) if i != ax):
            raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                            f"than the one being concatenated: concatenating along dimension {ax} "
                            "for shapes " + ", ".join(str(a.shape) for a in arrays) + ".")
    arrays = [astype(a, dt) if a.dtype != dt else a for a in arrays]
    return lax.concatenate(arrays, ax)


concat = concatenate


def stack(arrays, axis=0, dtype=None):
    arrays = [asarray(a) for a in arrays]
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    shapes = {a.shape for a in arrays}
    if len(shapes) > 1:
        raise ValueError("All input arrays must have the same shape, got " + ", ".join(str(a.shape) for a in arrays))
    ax = _axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, ax) for a in arrays], axis=ax, dtype=dtype)


def hstack(tup, dtype=None):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype)


# --------------------------------------------------------------------------- reductions

def _reduction(name, lax_fn, bool_op=None, promote_int=False, identity=None):
    def red(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        if out is not None:
            raise NotImplementedError("The 'out' argument to jnp.%s is not supported." % name)
        a = _arraylike(name, a)
        axes = _axes(axis, a.ndim)
        dt = a.dtype
        if dtype is not None:
            dt = dtypes.check_supported(dtype)
        elif promote_int and (a.dtype == np.bool_ or dtypes.is_int(a.dtype)):
            dt = np.dtype(np.uint32 if dtypes.is_unsigned(a.dtype) else np.int32)
        x = a if a.dtype == dt else lax.convert_element_type(a, dt)
        if where is not None:
            if identity is None:
                if initial is None:
                    raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                                     "where mask one has to specify 'initial'")
                fillv = initial
            else:
                fillv = identity(dt)
            x = _where_fill(where, x, fillv)
        if name in ("max", "min") and initial is None and builtins.any(a.shape[i] == 0 for i in axes):
            raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
        if dt == np.bool_ and bool_op is not None:
            r = bool_op(x, axes)
        else:
            r = lax_fn(x, axes)
        if initial is not None:
            r = _combine_initial(name, r, initial)
        if keepdims:
            r = lax.expand_dims(r, axes) if axes else r
        if a.weak_type and dtype is None and r.dtype == a.dtype:
            pass
        return r
    red.__name__ = name
    return red


def _where_fill(where, x, fillv):
    w = broadcast_to(asarray(where), x.shape)
    return lax.select(w, x, lax.broadcast_in_dim(np.asarray(fillv, x.dtype), x.shape, ()))


def _combine_initial(name, r, initial):
    f = {"sum": add, "prod": multiply, "max": maximum, "min": minimum}[name]
    return astype(f(r, initial), r.dtype)


def _ident(v):
    return lambda dt: np.asarray(v).astype(dt)


sum = _reduction("sum", lax.reduce_sum, bool_op=lax.reduce_or, promote_int=True, identity=_ident(0))
prod = _reduction("prod", lax.reduce_prod, bool_op=lax.reduce_and, promote_int=True, identity=_ident(1))
max = _reduction("max", lax.reduce_max, identity=None)
min = _reduction("min", lax.reduce_min, identity=None)
amax, amin = max, min


def _max_identity(dt):
    return np.asarray(-np.inf if dtypes.is_float(dt) else (False if dt == np.bool_ else np.iinfo(dt).min)).astype(dt)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    a = _arraylike("any", a)
    b = a if a.dtype == np.bool_ else not_equal(a, 0)
    if where is not None:
        b = logical_and(b, where)
    r = lax.reduce_or(b, _axes(axis, a.ndim))
    return lax.expand_dims(r, _axes(axis, a.ndim)) if keepdims else r


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    a = _arraylike("all", a)
    b = a if a.dtype == np.bool_ else not_equal(a, 0)
    if where is not None:
        b = logical_or(b, logical_not(where))
    r = lax.reduce_and(b, _axes(axis, a.ndim))
    return lax.expand_dims(r, _axes(axis, a.ndim)) if keepdims else r


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    a = _arraylike("mean", a)
    axes = _axes(axis, a.ndim)
    if where is None:
        n = int(np.prod([a.shape[i] for i in axes]))
        count = n
    else:
        count = sum(broadcast_to(asarray(where), a.shape).astype(np.int32), axis=axis, keepdims=keepdims)
    dt = dtypes.check_supported(dtype) if dtype is not None else (
        a.dtype if dtypes.is_float(a.dtype) else np.dtype(np.float32))
    s = sum(astype(a, dt) if a.dtype != dt else a, axis=axis, keepdims=keepdims, where=where)
    return _wrap_result(true_divide(s, count)).astype(dt) if not isinstance(count, int) else \
        lax.div(s, WeakScalar(np.asarray(count, dt)))


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    if correction is not None:
        ddof = correction
    a = _arraylike("var", a)
    dt = dtypes.check_supported(dtype) if dtype is not None else (
        a.dtype if dtypes.is_float(a.dtype) else np.dtype(np.float32))
    a = astype(a, dt) if a.dtype != dt else a
    axes = _axes(axis, a.ndim)
    n = int(np.prod([a.shape[i] for i in axes])) if where is None else None
    if n:
        # One pass, shifted by the first element along the axes: the sum and the sum of
        # squares share one kernel (DESIGN.md: norm-style statistics in one pass), and the
        # shift keeps the subtraction from cancelling when the mean is large.
        first = lax.slice(a, [0] * a.ndim, [1 if i in axes else s for i, s in enumerate(a.shape)])
        d = subtract(a, first)
        s1 = lax.reduce_sum(d, axes)
        s2 = lax.reduce_sum(multiply(d, d), axes)
        v = lax.div(lax.sub(s2, lax.div(lax.mul(s1, s1), WeakScalar(np.asarray(n, dt)))),
                    WeakScalar(np.asarray(builtins.max(n - ddof, 0), dt)))
        v = lax.max(v, WeakScalar(np.asarray(0, dt)))
        return lax.expand_dims(v, axes) if keepdims else v
    m = mean(a, axis=axis, keepdims=True, where=where)
    d = subtract(a, m)
    sq = multiply(d, d)
    s = sum(sq, axis=axis, keepdims=keepdims, where=where)
    if n is not None:
        return lax.div(s, WeakScalar(np.asarray(builtins.max(n - ddof, 0), dt)))
    cnt = sum(broadcast_to(asarray(where), a.shape).astype(np.int32), axis=axis, keepdims=keepdims)
    return true_divide(s, cnt - ddof).astype(dt)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, correction=None):
    return sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                    correction=correction))


def _arg_reduction(name, lax_fn):
    def f(a, axis=None, out=None, keepdims=False):
        a = _arraylike(name, a)
        if axis is None:
            a, axis = ravel(a), 0
        ax = _axis(axis, a.ndim)
        if a.shape[ax] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        r = lax_fn(a, ax, np.int32)
        return lax.expand_dims(r, (ax,)) if keepdims else r
    f.__name__ = name
    return f


argmax = _arg_reduction("argmax", lax.argmax)
argmin = _arg_reduction("argmin", lax.argmin)


# --------------------------------------------------------------------------- products

def matmul(a, b, *, precision=None, preferred_element_type=None):
    for x in (a, b):
        _check_arg("matmul", x)
    a, b = _arraylike("matmul", a), _arraylike("matmul", b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: Input operand does not have enough dimensions (shapes {a.shape} "
                         f"and {b.shape})")
    dt, weak = dtypes.result_type(a, b, return_weak_type_flag=True)
    a, b = _to_operand(a, dt, False), _to_operand(b, dt, False)
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a = reshape(a, (1, a.shape[0]))
    if b_vec:
        b = reshape(b, (b.shape[0], 1))
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got "
                        f"({a.shape[-1]},) and ({b.shape[-2]},) (matmul of shapes "
                        f"{a.shape} and {b.shape})")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    nb = len(batch)
    out = lax.dot_general(a, b, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
                          preferred_element_type=preferred_element_type)
    if a_vec:
        out = lax.squeeze(out, (out.ndim - 2,))
    if b_vec:
        out = lax.squeeze(out, (out.ndim - 1,))
    return out


def dot(a, b, *, precision=None, preferred_element_type=None):
    a, b = _arraylike("dot", a), _arraylike("dot", b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if b.ndim <= 2:
        return matmul(a, b, preferred_element_type=preferred_element_type)
    dt = dtypes.result_type(a, b)
    a, b = astype(a, dt), astype(b, dt)
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"dot: shapes {a.shape} and {b.shape} not aligned")
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), ((), ())))


def vdot(a, b, *, precision=None, preferred_element_type=None):
    return dot(ravel(a), ravel(b))


def inner(a, b, *, precision=None, preferred_element_type=None):
    a, b = _arraylike("inner", a), _arraylike("inner", b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    dt = dtypes.result_type(a, b)
    a, b = astype(a, dt), astype(b, dt)
    if a.shape[-1] != b.shape[-1]:
        raise TypeError(f"inner: shapes {a.shape} and {b.shape} not aligned")
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())))


def outer(a, b, out=None):
    a, b = ravel(_arraylike("outer", a)), ravel(_arraylike("outer", b))
    return multiply(a[:, None], b[None, :])
