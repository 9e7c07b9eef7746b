"""The thin functions over primitives (JAX's ``lax`` level): operand normalization (Python
scalars become weakly typed values of the other operand's dtype), canonical parameters, bind.

Each looks its primitive up by name in the registry, so this module imports nothing of the
families in ``wjax/_src/prims/`` -- and every family's rules (jvp, transpose, batching) can use
any primitive through it without an import cycle.  ``wjax.lax`` re-exports these functions
and adds what needs the layers above (control flow, convolution helpers, fused eager calls).
"""
from __future__ import annotations

import builtins
import enum
from typing import NamedTuple

import numpy as np

from . import dtypes, tree_util
from .ir import WeakScalar, raise_to_shaped
from .primitive import REGISTRY


def _p(name: str):
    return REGISTRY[name]


class GatherDimensionNumbers(NamedTuple):
    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def gather_mode(mode) -> str:
    """A gather/scatter ``mode`` (None, a string or GatherScatterMode) as "clip" or "fill"."""
    if mode is None:
        return "clip"
    m = str(getattr(mode, "name", mode)).lower()
    if m in ("clip", "promise_in_bounds"):
        return "clip"
    if m in ("fill", "drop", "fill_or_drop"):
        return "fill"
    raise ValueError(f'Unknown gather mode "{mode}"')


def _is_pyscalar(x) -> bool:
    t = type(x)
    hit = _pyscalar_types.get(t)
    if hit is None:       # (a property of the type: remembered per type)
        hit = (isinstance(x, (bool, int, float, builtins.complex))
               and not isinstance(x, np.generic))
        if x.__class__ is t:
            _pyscalar_types[t] = hit
    return hit


_pyscalar_types: dict = {}      # type -> whether its values are Python scalars


_aval = raise_to_shaped


def _as_operand(x, like_dtype=None):
    """A Python scalar becomes a weak-typed value of ``like_dtype`` (JAX's weak rule)."""
    if _is_pyscalar(x):
        if like_dtype is None:
            dt, weak = dtypes.dtype_and_weak(x)
            return np.asarray(x, dt) if not weak else x
        if (
            isinstance(x, float)
            and dtypes.is_int(like_dtype)
            or isinstance(x, float)
            and like_dtype == np.bool_
        ):
            raise TypeError(
                f"lax operation got a float scalar {x} for an operand of "
                f"dtype {np.dtype(like_dtype).name}"
            )
        if isinstance(x, builtins.complex) and not dtypes.is_complex(like_dtype):
            raise TypeError(
                f"lax operation got a complex scalar {x} for an operand of "
                f"dtype {np.dtype(like_dtype).name}"
            )
        return _weak_const(x, like_dtype)
    if isinstance(x, (list, tuple)):
        raise TypeError(f"lax operations take arrays, not {type(x).__name__}")
    return x


def _weak_const(x, dtype):
    return WeakScalar(np.asarray(x, dtype))


def _const(example, val):
    """``val`` as a constant of ``example``'s dtype, as JAX's ``lax._const``: weakly typed when
    ``example`` is a weakly typed scalar, else a strong array (so ``ne(weak_vector, 0)`` is a
    strong bool, while ``ne(weak_scalar, 0)`` stays weak)."""
    a = _aval(example)
    if a.weak_type and a.ndim == 0:
        return WeakScalar(np.asarray(val, a.dtype))
    return np.asarray(val, a.dtype)


def _operands(*xs):
    like = next((_aval(x).dtype for x in xs if not _is_pyscalar(x)), None)
    return [_as_operand(x, like) for x in xs]


def _strict_operands(*xs):
    """The operands of a binary lax function, as JAX's: a Python scalar is a weak value of its
    own default dtype (``1`` int32, ``1.0`` float32, ``1j`` complex64), never converted to the
    other operand's dtype -- so ``lax.add(jnp.float32(1), 2)`` is a same-dtypes TypeError
    (``jnp.add`` promotes)."""
    if not any(_is_pyscalar(x) for x in xs):
        return [_as_operand(x) for x in xs]
    out = []
    for x in xs:
        if _is_pyscalar(x):
            dt, weak = dtypes.dtype_and_weak(x)
            x = _weak_const(x, dt) if weak else np.asarray(x, dt)
        out.append(_as_operand(x))
    return out


def _un(name):
    def f(x):
        return _p(name).bind(*_operands(x))
    f.__name__ = name
    return f


def _broadcast_ranks(name, xs):
    """JAX's lax broadcasting: operands of one rank broadcast their size-1 dimensions
    (rank-0 operands and Python scalars broadcast inside the primitive)."""
    avs = [None if isinstance(x, WeakScalar) or _is_pyscalar(x) else _aval(x) for x in xs]
    ranked = [a for a in avs if a is not None and a.ndim > 0]
    if len({a.shape for a in ranked}) <= 1:
        return xs
    ranks = {a.ndim for a in ranked}
    if len(ranks) > 1:
        raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")
    shape = []
    for dims in zip(*[a.shape for a in ranked]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            + ", ".join(str(a.shape) for a in ranked) + ".")
        shape.append(sizes.pop() if sizes else 1)
    shape = tuple(shape)
    return [x if a is None or a.ndim == 0 or a.shape == shape else
            broadcast_in_dim(x, shape, tuple(range(len(shape)))) for x, a in zip(xs, avs)]


def _bin(name):
    def f(x, y):
        return _p(name).bind(*_broadcast_ranks(name, _strict_operands(x, y)))
    f.__name__ = name
    return f


neg = _un("neg"); sign = _un("sign"); floor = _un("floor"); ceil = _un("ceil")
abs = _un("abs"); exp = _un("exp"); exp2 = _un("exp2"); log = _un("log")
log1p = _un("log1p"); expm1 = _un("expm1"); tanh = _un("tanh"); logistic = _un("logistic")
sin = _un("sin"); cos = _un("cos"); tan = _un("tan"); asin = _un("asin")
acos = _un("acos"); atan = _un("atan"); sinh = _un("sinh"); cosh = _un("cosh")
asinh = _un("asinh"); acosh = _un("acosh"); atanh = _un("atanh"); sqrt = _un("sqrt")
rsqrt = _un("rsqrt"); cbrt = _un("cbrt"); erf = _un("erf"); bitwise_not = _un("not")
is_finite = _un("is_finite"); population_count = _un("population_count"); clz = _un("clz")
add = _bin("add"); sub = _bin("sub"); mul = _bin("mul"); div = _bin("div")
rem = _bin("rem"); max = _bin("max"); min = _bin("min")


def pow(x, y):
    """``lax.pow``: ``x ** y``; an integer exponent may go with a floating or complex base."""
    return _p("pow").bind(*_broadcast_ranks("pow", _operands(x, y)))



atan2 = _bin("atan2"); bitwise_and = _bin("and"); bitwise_or = _bin("or")
bitwise_xor = _bin("xor"); shift_left = _bin("shift_left")
shift_right_arithmetic = _bin("shift_right_arithmetic")
shift_right_logical = _bin("shift_right_logical")
eq = _bin("eq"); ne = _bin("ne"); lt = _bin("lt"); le = _bin("le"); gt = _bin("gt")
ge = _bin("ge")
not_ = bitwise_not
real = _un("real"); imag = _un("imag")


def complex(x, y):
    """``lax.complex``: x + i y of two float32 operands (a complex64 result)."""
    return _p("complex").bind(*_operands(x, y))


def conj(x):
    """``lax.conj``: the complex conjugate (complex64, also of a real operand)."""
    x, = _operands(x)
    return _p("conj").bind(x, input_dtype=_aval(x).dtype)


class RoundingMethod(int, enum.Enum):
    """lax.round's rounding of halves (JAX's ``lax.RoundingMethod``)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


class FftType(enum.IntEnum):
    """The transform ``lax.fft`` computes (JAX's ``lax.FftType``)."""
    FFT = 0      # complex -> complex, forward
    IFFT = 1     # complex -> complex, inverse (scaled by 1 / prod(fft_lengths))
    RFFT = 2     # real -> complex: the non-negative frequencies of the last axis
    IRFFT = 3    # complex (a Hermitian half) -> real, inverse


_FFT_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT,
              "irfft": FftType.IRFFT}


def fft(x, fft_type, fft_lengths):
    """``lax.fft``: an FFT over the trailing ``len(fft_lengths)`` axes (1 to 3 of them).
    ``fft_type`` is an ``FftType`` or its name; FFT/IFFT/IRFFT take complex64 operands (real
    ones are converted), RFFT a real one."""
    if isinstance(fft_type, str):
        t = _FFT_NAMES.get(fft_type.lower()) if fft_type in (
            "fft", "ifft", "rfft", "irfft", "FFT", "IFFT", "RFFT", "IRFFT") else None
        if t is None:
            raise ValueError(f"Unknown FFT type '{fft_type}'")
    elif isinstance(fft_type, FftType):
        t = fft_type
    else:
        raise TypeError(f"Unknown FFT type value '{fft_type}'")
    x, = _operands(x)
    dt = _aval(x).dtype
    if t == FftType.RFFT:
        if dtypes.is_complex(dt):
            raise ValueError("only real valued inputs supported for rfft")
        if not dtypes.is_inexact(dt):
            x = convert_element_type(x, np.float32)
    elif not dtypes.is_complex(dt):
        x = convert_element_type(x, np.complex64)
    lengths = tuple(int(n) for n in fft_lengths)
    if not lengths:
        return x
    return _p("fft").bind(x, fft_type=t, fft_lengths=lengths)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """Rounds half away from zero (method 0, the default) or to nearest even (method 1)."""
    x, = _operands(x)
    if isinstance(rounding_method, str):
        rounding_method = RoundingMethod[rounding_method]
    m = int(rounding_method)
    if m not in (0, 1):
        raise ValueError(f"Unknown rounding method {rounding_method!r}")
    return _p("round").bind(x, rounding_method=m)


def integer_pow(x, y: int):
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, (int, np.integer)):
        raise TypeError(f"integer_pow requires an integer exponent, got {y!r} of type "
                        f"{type(y).__name__}")
    return _p("integer_pow").bind(x, y=int(y))


def square(x):
    return integer_pow(x, 2)


def reciprocal(x):
    return integer_pow(x, -1)


def select_n(which, *cases):
    cs = _operands(*cases)
    return _p("select_n").bind(which, *cs)


def select(pred, on_true, on_false):
    return select_n(pred, on_false, on_true)


def convert_element_type(x, new_dtype, weak_type=False, *, warn_on_complex_to_real_cast=True):
    new = dtypes.check_supported(new_dtype)
    if _is_pyscalar(x):
        x = np.asarray(x, new)
    a = _aval(x)
    if warn_on_complex_to_real_cast and dtypes.is_complex(a.dtype) and not dtypes.is_complex(new):
        import warnings                  # as lax: the imaginary part is dropped
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=dtypes._user_stacklevel())
    if a.dtype == new and a.weak_type == weak_type:
        return x
    return _p("convert_element_type").bind(x, new_dtype=new, weak_type=weak_type)


def bitcast_convert_type(x, new_dtype):
    return _p("bitcast_convert_type").bind(x, new_dtype=dtypes.check_supported(new_dtype))


def clamp(min, x, max):
    lo, xx, hi = _operands(min, x, max)
    return _p("clamp").bind(lo, xx, hi)


# --------------------------------------------------------------------------- shapes

def broadcast_in_dim(operand, shape, broadcast_dimensions, out_sharding=None):
    a = _aval(operand)
    shape = tuple(int(s) for s in shape)
    if a.shape == shape and tuple(broadcast_dimensions) == tuple(range(len(shape))):
        return operand
    return _p("broadcast_in_dim").bind(
        operand, shape=shape, broadcast_dimensions=tuple(broadcast_dimensions), sharding=None
    )


def broadcast(operand, sizes, *, out_sharding=None):
    a = _aval(operand)
    return broadcast_in_dim(operand, tuple(sizes) + a.shape,
                            tuple(range(len(sizes), len(sizes) + a.ndim)))


def reshape(operand, new_sizes, dimensions=None, out_sharding=None):
    new_sizes = tuple(int(s) for s in new_sizes)
    if dimensions is not None and tuple(dimensions) != tuple(range(_aval(operand).ndim)):
        operand = transpose(operand, dimensions)
    if _aval(operand).shape == new_sizes:
        return operand
    return _p("reshape").bind(operand, new_sizes=new_sizes, dimensions=None, sharding=None)


def transpose(operand, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and len(permutation) == _aval(operand).ndim:
        return operand
    return _p("transpose").bind(operand, permutation=permutation)


def squeeze(array, dimensions):
    dims = tuple(sorted(int(d) % builtins.max(_aval(array).ndim, 1) for d in dimensions))
    if not dims:
        return array
    return _p("squeeze").bind(array, dimensions=dims)


def expand_dims(array, dimensions):
    if not dimensions:
        return array
    return _p("expand_dims").bind(array, dimensions=tuple(int(d) for d in dimensions))


def slice(operand, start_indices, limit_indices, strides=None):
    return _p("slice").bind(operand, start_indices=tuple(int(i) for i in start_indices),
                          limit_indices=tuple(int(i) for i in limit_indices),
                          strides=tuple(int(s) for s in strides) if strides is not None else None)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    a = _aval(operand)
    axis = axis % a.ndim
    n = a.shape[axis]
    start = 0 if start_index is None else (start_index + n if start_index < 0 else start_index)
    limit = n if limit_index is None else (limit_index + n if limit_index < 0 else limit_index)
    st = [0] * a.ndim; lim = list(a.shape); strides = [1] * a.ndim
    st[axis], lim[axis], strides[axis] = start, limit, stride
    return slice(operand, st, lim, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    a = _aval(operand)
    axis = axis % a.ndim
    index = index + a.shape[axis] if index < 0 else index
    r = slice_in_dim(operand, index, index + 1, 1, axis)
    return r if keepdims else squeeze(r, (axis,))


def rev(operand, dimensions):
    if not dimensions:
        return operand
    return _p("rev").bind(operand, dimensions=tuple(int(d) for d in dimensions))


def iota(dtype, size):
    return _p("iota").bind(
        dtype=dtypes.check_supported(dtype), shape=(int(size),), dimension=0, sharding=None
    )


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
    return _p("iota").bind(dtype=dtypes.check_supported(dtype), shape=tuple(int(s) for s in shape),
                         dimension=int(dimension), sharding=None)


def pad(operand, padding_value, padding_config):
    operand, padding_value = _operands(operand, padding_value)
    return _p("pad").bind(
        operand,
        padding_value,
        padding_config=tuple((int(l), int(h), int(i)) for l, h, i in padding_config),
    )


def concatenate(operands, dimension):
    ops = list(operands)
    if len(ops) == 1:
        return ops[0]
    # one equation, as JAX's; the lowering splits one of more operands than a kernel can
    # bind into a tree of concatenates (backend/passes.py ``chunk_wide_concats``)
    return _p("concatenate").bind(*ops, dimension=int(dimension))


def _index_operands(starts):
    out = []
    for s in starts:
        if _is_pyscalar(s):
            s = np.int32(s)
        out.append(s)
    return out


def _dynamic_slice_indices(operand, start_indices, allow_negative_indices):
    """The start indices of a dynamic slice or update, a negative one counting from the end of
    its dimension (as JAX's ``_dynamic_slice_indices``: a static start is shifted here, a traced
    one through ``select(i < 0, i + d, i)``; the primitive then clamps)."""
    shape = _aval(operand).shape
    if not isinstance(start_indices, (list, tuple)):
        if _aval(start_indices).ndim != 1:
            raise ValueError(f"Slice indices must be a 1D sequence, got "
                             f"{_aval(start_indices).shape}")
        start_indices = [index_in_dim(start_indices, k, keepdims=False)
                         for k in range(_aval(start_indices).shape[0])]
    if len(start_indices) != len(shape):
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {shape})")
    if isinstance(allow_negative_indices, bool):
        allow_negative_indices = [allow_negative_indices] * len(shape)
    out = []
    for i, d, allow in zip(start_indices, shape, allow_negative_indices):
        static = isinstance(i, (int, np.integer)) and not isinstance(i, bool)
        if static:
            if i < 0 and not allow:
                raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                                 f"allow_negative_indices=False")
            dt = np.asarray(i).dtype if isinstance(i, np.integer) else np.int32
            out.append(np.asarray(i + d if i < 0 else i, dt)[()])
            continue
        dt = _aval(i).dtype
        if not allow or np.issubdtype(dt, np.unsignedinteger):
            out.append(i)
            continue
        out.append(select(lt(i, np.asarray(0, dt)), add(i, np.asarray(d, dt)), i))
    return out


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    nd = _aval(operand).ndim
    starts = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    if len(slice_sizes) != nd:
        raise TypeError(f"Length of slice sizes must match number of operand dimensions "
                        f"({len(slice_sizes)} vs {nd})")
    return _p("dynamic_slice").bind(operand, *_index_operands(starts),
                                  slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    starts = _dynamic_slice_indices(operand, start_indices, allow_negative_indices)
    return _p("dynamic_update_slice").bind(operand, update, *_index_operands(starts))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
    a = _aval(operand)
    axis = int(axis)
    starts = [np.int32(0)] * a.ndim
    starts[axis] = start_index
    allow = [False] * a.ndim
    allow[axis] = allow_negative_indices
    sizes = list(a.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
    """The slice at ``index`` along ``axis`` (a traced index; kept as a size-1 axis or not)."""
    axis = axis % _aval(operand).ndim
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
    a = _aval(operand)
    axis = int(axis)
    starts = [np.int32(0)] * a.ndim
    starts[axis] = start_index
    allow = [False] * a.ndim
    allow[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    return _p("gather").bind(operand, start_indices, dimension_numbers=dimension_numbers,
                           slice_sizes=tuple(int(s) for s in slice_sizes), mode=gather_mode(mode),
                           fill_value=fill_value, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices)


def _scatter(name):
    def f(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
          unique_indices=False, mode=None):
        operand, updates = _operands(operand, updates)
        return _p(name).bind(operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
                             indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                             mode=gather_mode(mode) if mode is not None else "fill")
    f.__name__ = name
    return f


scatter = _scatter("scatter")
scatter_add = _scatter("scatter_add")
scatter_mul = _scatter("scatter_mul")
scatter_min = _scatter("scatter_min")
scatter_max = _scatter("scatter_max")

# --------------------------------------------------------------------------- reductions


def _axes(axes):
    return tuple(int(a) for a in axes)


def reduce_sum(operand, axes, *, out_sharding=None):
    return _p("reduce_sum").bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_prod(operand, axes):
    return _p("reduce_prod").bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_max(operand, axes):
    return _p("reduce_max").bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_min(operand, axes):
    return _p("reduce_min").bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_and(operand, axes):
    return _p("reduce_and").bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_or(operand, axes):
    return _p("reduce_or").bind(operand, axes=_axes(axes), out_sharding=None)


def argmax(operand, axis, index_dtype):
    return _p("argmax").bind(
        operand, axes=(int(axis),), index_dtype=dtypes.check_supported(index_dtype)
    )


def argmin(operand, axis, index_dtype):
    return _p("argmin").bind(
        operand, axes=(int(axis),), index_dtype=dtypes.check_supported(index_dtype)
    )


# --------------------------------------------------------------------------- linear algebra

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                out_sharding=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    pet = (
        dtypes.check_supported(preferred_element_type)
        if preferred_element_type is not None
        else None
    )
    la, ra = _aval(lhs), _aval(rhs)
    if la.dtype != ra.dtype:
        # operands of two dtypes meet at the higher-precision one (XLA's rule, as JAX)
        dt = pet if pet is not None else _dot_dtype(la.dtype, ra.dtype)
        lhs = convert_element_type(lhs, dt) if la.dtype != dt else lhs
        rhs = convert_element_type(rhs, dt) if ra.dtype != dt else rhs
    return _p("dot_general").bind(lhs, rhs, dimension_numbers=dn, precision=None,
                                preferred_element_type=pet, out_sharding=None)


def _dot_dtype(a, b):
    """XLA's HigherPrecisionType for dot operands (JAX's ``_dot_general_dtype_rule``)."""
    def props(dt):
        dt = np.dtype(dt)
        f = dtypes.is_float(dt)
        return (dtypes.finfo(dt).maxexp if f else -1, dtypes.finfo(dt).nmant if f else -1,
                dt.itemsize * 8 if dt != np.bool_ else 1, not dtypes.is_unsigned(dt))
    pa, pb = props(a), props(b)
    if pa == pb:
        raise TypeError(
            f"lax.dot_general argument type error: {np.dtype(a).name}, {np.dtype(b).name}"
        )
    return np.dtype(a) if pa > pb else np.dtype(b)


def _dot_dimension_numbers(lhs, rhs, dimension_numbers):
    """``lax.dot``'s dimension numbers: given, or those of a matrix/vector product."""
    if dimension_numbers is not None:
        return dimension_numbers
    la, ra = _aval(lhs), _aval(rhs)
    if not (la.ndim in (1, 2) and ra.ndim in (1, 2) and la.shape[-1] == ra.shape[0]):
        raise ValueError(
            "jax.lax.dot: dimension_numbers must be specified when not performing simple "
            "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
            f"lhs_shape={la.shape} rhs_shape={ra.shape}")
    return (((la.ndim - 1,), (0,)), ((), ()))


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, dimension_numbers=None,
        out_sharding=None):
    return dot_general(lhs, rhs, _dot_dimension_numbers(lhs, rhs, dimension_numbers),
                       precision=precision, preferred_element_type=preferred_element_type)



def _cum(name):
    def f(operand, axis: int = 0, reverse: bool = False):
        a = _aval(operand)
        if not -a.ndim <= int(axis) < builtins.max(a.ndim, 1) or a.ndim == 0:
            raise ValueError(f"{name}: axis {axis} is out of bounds for array of shape {a.shape}")
        return _p(name).bind(operand, axis=int(axis) % a.ndim, reverse=bool(reverse))
    f.__name__ = name
    return f


cumsum = _cum("cumsum")
cumprod = _cum("cumprod")
cummax = _cum("cummax")
cummin = _cum("cummin")
cumlogsumexp = _cum("cumlogsumexp")


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
    """Sorts along ``dimension``; a sequence of operands is sorted by its first ``num_keys``."""
    single = not isinstance(operand, (tuple, list))
    ops = [operand] if single else list(operand)
    if not ops:
        raise TypeError("sort requires at least one operand")
    nd = _aval(ops[0]).ndim
    if nd == 0:
        raise TypeError("sort requires operands of rank at least 1, got shape ()")
    if not -nd <= dimension < nd:
        raise ValueError(f"sort dimension {dimension} is out of bounds for operand shape "
                         f"{_aval(ops[0]).shape}")
    num_keys = int(num_keys)
    keys = ops[:num_keys]
    if any(dtypes.is_complex(_aval(k).dtype) for k in keys):
        # as JAX's comparator: a complex key is two float keys, its real then imaginary part
        # (each in float order, NaN last); the operands themselves ride along
        split = []
        for k in keys:
            split += [real(k), imag(k)] if dtypes.is_complex(_aval(k).dtype) else [k]
        out = _p("sort").bind(*split, *ops, dimension=int(dimension) % nd,
                              is_stable=bool(is_stable), num_keys=len(split))[len(split):]
    else:
        out = _p("sort").bind(*ops, dimension=int(dimension) % nd, is_stable=bool(is_stable),
                              num_keys=num_keys)
    return out[0] if single else tuple(out)


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
    k, v = sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)
    return k, v


def top_k(operand, k: int, *, axis: int = -1):
    """The ``k`` largest entries along ``axis`` (last by default) and their indices."""
    a = _aval(operand)
    if a.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got shape ()")
    k = int(k)
    if k < 0:
        raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
    ax = int(axis) % a.ndim
    vals, idx = _p("top_k").bind(operand, k=k, axis=ax)
    return vals, idx


def erf_inv(x):
    return _p("erf_inv").bind(*_operands(x))


def _nary(name, n):
    def f(*xs):
        if len(xs) != n:
            raise TypeError(f"{name}() takes {n} arguments, got {len(xs)}")
        return _p(name).bind(*_broadcast_ranks(name, _strict_operands(*xs)))
    f.__name__ = name
    return f


# special functions (wjax/_src/prims/special.py; lgamma and digamma in wjax/_src/prims/random.py)
erfc = _un("erfc"); lgamma = _un("lgamma"); digamma = _un("digamma")
bessel_i0e = _un("bessel_i0e"); bessel_i1e = _un("bessel_i1e")
igamma = _nary("igamma", 2); igammac = _nary("igammac", 2)
igamma_grad_a = _nary("igamma_grad_a", 2); zeta = _nary("zeta", 2)
polygamma = _nary("polygamma", 2); nextafter = _nary("nextafter", 2)
mulhi = _bin("mulhi")


def random_gamma_grad(a, x):
    """The derivative of a ``Gamma(a, 1)`` sample ``x`` with respect to ``a``."""
    a, x = _operands(a, x)
    shape = np.broadcast_shapes(_aval(a).shape, _aval(x).shape)
    a, x = (v if _aval(v).shape == shape else
            broadcast_in_dim(v, shape, tuple(range(len(shape) - _aval(v).ndim, len(shape))))
            for v in (a, x))
    return _p("random_gamma_grad").bind(a, x)


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)``."""
    return _nary("regularized_incomplete_beta", 3)(a, b, x)


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    return _p("reduce_precision").bind(operand, exponent_bits=int(exponent_bits),
                                       mantissa_bits=int(mantissa_bits))



def stop_gradient(x):
    """The identity, with a zero derivative (applied to every leaf of a pytree)."""

    def stop(v):
        a = _aval(v)
        if not dtypes.is_float(a.dtype):
            return v
        return _p("stop_gradient").bind(v)

    return tree_util.tree_map(stop, x)





# --------------------------------------------------------------------------- composites for rules
# A few jnp-level compositions that autodiff and batching rules need (the rules sit below
# wjax.numpy): same-shape cases only, no argument checking.

def zeros_like(x):
    a = _aval(x)
    return broadcast_in_dim(np.zeros((), a.dtype), a.shape, ())


def where(c, x, y):
    shape = np.broadcast_shapes(*(_aval(v).shape for v in (c, x, y)))

    def b(v):
        a = _aval(v)
        return (
            v
            if a.shape == shape
            else broadcast_in_dim(v, shape, tuple(range(len(shape) - a.ndim, len(shape))))
        )

    return select(b(c), b(x), b(y))


def eye(n: int, dtype=np.float32):
    return convert_element_type(eq(broadcasted_iota(np.int32, (n, n), 0),
                                   broadcasted_iota(np.int32, (n, n), 1)), dtype)


def _band(x, k, lower):
    a = _aval(x)
    r = broadcasted_iota(np.int32, a.shape, a.ndim - 2)
    c = broadcasted_iota(np.int32, a.shape, a.ndim - 1)
    keep = le(c, add(r, np.int32(k))) if lower else ge(c, add(r, np.int32(k)))
    return select(keep, x, zeros_like(x))


def tril(x, k: int = 0):
    return _band(x, k, True)


def triu(x, k: int = 0):
    return _band(x, k, False)


def swapaxes(x, a: int, b: int):
    nd = _aval(x).ndim
    perm = list(range(nd))
    perm[a % nd], perm[b % nd] = perm[b % nd], perm[a % nd]
    return transpose(x, perm)


def matmul(a, b):
    """Batched matrix products with equal leading (batch) dimensions."""
    na, nb = _aval(a).ndim, _aval(b).ndim
    batch = tuple(range(na - 2))
    return dot_general(a, b, (((na - 1,), (nb - 2,)), (batch, batch)))


def take_along_axis(arr, idx, axis: int):
    """``arr`` gathered along ``axis`` by ``idx`` of the same shape (indices in bounds)."""
    a = _aval(arr)
    shape = _aval(idx).shape
    idx = convert_element_type(idx, np.int32)
    coords = [expand_dims(broadcasted_iota(np.int32, shape, d) if d != axis else idx, (len(shape),))
              for d in range(a.ndim)]
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=tuple(range(a.ndim)),
                                start_index_map=tuple(range(a.ndim)))
    return gather(arr, concatenate(coords, len(shape)), dn, (1,) * a.ndim, mode="clip")


_RULE_HELPERS = {"zeros_like", "where", "eye", "tril", "triu", "swapaxes", "matmul",
                 "take_along_axis"}   # not lax names: wjax.lax does not re-export them
__all__ = [n for n, v in list(globals().items())
           if not n.startswith("_") and n not in _RULE_HELPERS
           and getattr(v, "__module__", None) == __name__]
