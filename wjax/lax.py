"""wjax.lax: thin, strictly typed wrappers over primitives (JAX's ``jax.lax``).

Operands must agree in dtype (TypeError otherwise, as in JAX); a Python
scalar is weakly typed and takes the dtype of the other operand.
"""
from __future__ import annotations

import builtins
from typing import Sequence

import numpy as np

from .core import caches, dtypes
from .core.ir import WeakScalar, raise_to_shaped
from .prims import elementwise as E
from .prims import indexing as I
from .prims import linalg as L
from .prims import reduce as R
from .prims import shape as S
from .prims.indexing import GatherDimensionNumbers, ScatterDimensionNumbers


def _is_pyscalar(x) -> bool:
    return isinstance(x, (bool, int, float)) and not isinstance(x, np.generic)


def _aval(x):
    return raise_to_shaped(x)


def _as_operand(x, like_dtype=None):
    """A Python scalar becomes a weak-typed value of ``like_dtype`` (JAX's weak rule)."""
    if _is_pyscalar(x):
        if like_dtype is None:
            dt, weak = dtypes.dtype_and_weak(x)
            return np.asarray(x, dt) if not weak else x
        if isinstance(x, float) and dtypes.is_int(like_dtype) or isinstance(x, float) and like_dtype == np.bool_:
            raise TypeError(f"lax operation got a float scalar {x} for an operand of dtype {np.dtype(like_dtype).name}")
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


def _un(p):
    def f(x):
        return p.bind(*_operands(x))
    f.__name__ = p.name
    return f


def _bin(p):
    def f(x, y):
        return p.bind(*_operands(x, y))
    f.__name__ = p.name
    return f


neg = _un(E.neg_p); sign = _un(E.sign_p); floor = _un(E.floor_p); ceil = _un(E.ceil_p)
abs = _un(E.abs_p); exp = _un(E.exp_p); exp2 = _un(E.exp2_p); log = _un(E.log_p)
log1p = _un(E.log1p_p); expm1 = _un(E.expm1_p); tanh = _un(E.tanh_p); logistic = _un(E.logistic_p)
sin = _un(E.sin_p); cos = _un(E.cos_p); tan = _un(E.tan_p); asin = _un(E.asin_p)
acos = _un(E.acos_p); atan = _un(E.atan_p); sinh = _un(E.sinh_p); cosh = _un(E.cosh_p)
asinh = _un(E.asinh_p); acosh = _un(E.acosh_p); atanh = _un(E.atanh_p); sqrt = _un(E.sqrt_p)
rsqrt = _un(E.rsqrt_p); cbrt = _un(E.cbrt_p); erf = _un(E.erf_p); bitwise_not = _un(E.not_p)
is_finite = _un(E.is_finite_p); population_count = _un(E.population_count_p); clz = _un(E.clz_p)
add = _bin(E.add_p); sub = _bin(E.sub_p); mul = _bin(E.mul_p); div = _bin(E.div_p)
rem = _bin(E.rem_p); pow = _bin(E.pow_p); max = _bin(E.max_p); min = _bin(E.min_p)
atan2 = _bin(E.atan2_p); bitwise_and = _bin(E.and_p); bitwise_or = _bin(E.or_p)
bitwise_xor = _bin(E.xor_p); shift_left = _bin(E.shift_left_p)
shift_right_arithmetic = _bin(E.shift_right_arithmetic_p)
shift_right_logical = _bin(E.shift_right_logical_p)
eq = _bin(E.eq_p); ne = _bin(E.ne_p); lt = _bin(E.lt_p); le = _bin(E.le_p); gt = _bin(E.gt_p)
ge = _bin(E.ge_p)
not_ = bitwise_not


class RoundingMethod(int, __import__("enum").Enum):
    """lax.round's rounding of halves (JAX's ``lax.RoundingMethod``)."""
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """Rounds half away from zero (method 0, the default) or to nearest even (method 1)."""
    x, = _operands(x)
    if isinstance(rounding_method, str):
        rounding_method = RoundingMethod[rounding_method]
    m = int(rounding_method)
    if m not in (0, 1):
        raise ValueError(f"Unknown rounding method {rounding_method!r}")
    return E.round_p.bind(x, rounding_method=m)


def integer_pow(x, y: int):
    if isinstance(y, (bool, np.bool_)) or not isinstance(y, (int, np.integer)):
        raise TypeError(f"integer_pow requires an integer exponent, got {y!r} of type "
                        f"{type(y).__name__}")
    return E.integer_pow_p.bind(x, y=int(y))


def square(x):
    return integer_pow(x, 2)


def reciprocal(x):
    return integer_pow(x, -1)


def select_n(which, *cases):
    cs = _operands(*cases)
    return E.select_n_p.bind(which, *cs)


def select(pred, on_true, on_false):
    return select_n(pred, on_false, on_true)


def convert_element_type(x, new_dtype, weak_type=False):
    new = dtypes.check_supported(new_dtype)
    if _is_pyscalar(x):
        x = np.asarray(x, new)
    a = _aval(x)
    if a.dtype == new and a.weak_type == weak_type:
        return x
    return E.convert_element_type_p.bind(x, new_dtype=new, weak_type=weak_type)


def bitcast_convert_type(x, new_dtype):
    from .prims.bitcast import bitcast_convert_type_p
    return bitcast_convert_type_p.bind(x, new_dtype=dtypes.check_supported(new_dtype))


def clamp(min, x, max):
    lo, xx, hi = _operands(min, x, max)
    return S.clamp_p.bind(lo, xx, hi)


# --------------------------------------------------------------------------- shapes

def broadcast_in_dim(operand, shape, broadcast_dimensions, out_sharding=None):
    a = _aval(operand)
    shape = tuple(int(s) for s in shape)
    if a.shape == shape and tuple(broadcast_dimensions) == tuple(range(len(shape))):
        return operand
    return S.broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=tuple(broadcast_dimensions),
                                     sharding=None)


def broadcast(operand, sizes):
    a = _aval(operand)
    return broadcast_in_dim(operand, tuple(sizes) + a.shape,
                            tuple(range(len(sizes), len(sizes) + a.ndim)))


def reshape(operand, new_sizes, dimensions=None, out_sharding=None):
    new_sizes = tuple(int(s) for s in new_sizes)
    if dimensions is not None and tuple(dimensions) != tuple(range(_aval(operand).ndim)):
        operand = transpose(operand, dimensions)
    if _aval(operand).shape == new_sizes:
        return operand
    return S.reshape_p.bind(operand, new_sizes=new_sizes, dimensions=None, sharding=None)


def transpose(operand, permutation):
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(len(permutation))) and len(permutation) == _aval(operand).ndim:
        return operand
    return S.transpose_p.bind(operand, permutation=permutation)


def squeeze(array, dimensions):
    dims = tuple(sorted(int(d) % builtins.max(_aval(array).ndim, 1) for d in dimensions))
    if not dims:
        return array
    return S.squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions):
    if not dimensions:
        return array
    return S.expand_dims_p.bind(array, dimensions=tuple(int(d) for d in dimensions))


def slice(operand, start_indices, limit_indices, strides=None):
    return S.slice_p.bind(operand, start_indices=tuple(int(i) for i in start_indices),
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
    return S.rev_p.bind(operand, dimensions=tuple(int(d) for d in dimensions))


def iota(dtype, size):
    return S.iota_p.bind(dtype=dtypes.check_supported(dtype), shape=(int(size),), dimension=0, sharding=None)


def broadcasted_iota(dtype, shape, dimension):
    return S.iota_p.bind(dtype=dtypes.check_supported(dtype), shape=tuple(int(s) for s in shape),
                         dimension=int(dimension), sharding=None)


def pad(operand, padding_value, padding_config):
    operand, padding_value = _operands(operand, padding_value)
    return S.pad_p.bind(operand, padding_value,
                        padding_config=tuple((int(l), int(h), int(i)) for l, h, i in padding_config))


def concatenate(operands, dimension):
    ops = list(operands)
    if len(ops) == 1:
        return ops[0]
    # a kernel binds each operand's buffer (portable limit: 8 per stage): concatenate many
    # operands as a tree of small concatenates, which the lowering can split into kernels
    k = 4
    while len(ops) > k:
        ops = [S.concatenate_p.bind(*ops[i:i + k], dimension=int(dimension)) if len(ops[i:i + k]) > 1
               else ops[i] for i in range(0, len(ops), k)]
    return S.concatenate_p.bind(*ops, dimension=int(dimension))


def _index_operands(starts):
    out = []
    for s in starts:
        if _is_pyscalar(s):
            s = np.int32(s)
        out.append(s)
    return out


def dynamic_slice(operand, start_indices, slice_sizes):
    nd = _aval(operand).ndim
    if len(start_indices) != nd:
        raise ValueError(f"Length of slice indices must match number of operand dimensions "
                         f"({len(start_indices)} vs {_aval(operand).shape})")
    if len(slice_sizes) != nd:
        raise TypeError(f"Length of slice sizes must match number of operand dimensions "
                        f"({len(slice_sizes)} vs {nd})")
    return S.dynamic_slice_p.bind(operand, *_index_operands(start_indices),
                                  slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(operand, update, start_indices):
    return S.dynamic_update_slice_p.bind(operand, update, *_index_operands(start_indices))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    a = _aval(operand)
    starts = [np.int32(0)] * a.ndim
    starts[axis] = start_index
    sizes = list(a.shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    a = _aval(operand)
    starts = [np.int32(0)] * a.ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def gather(operand, start_indices, dimension_numbers, slice_sizes, *, unique_indices=False,
           indices_are_sorted=False, mode=None, fill_value=None):
    return I.gather_p.bind(operand, start_indices, dimension_numbers=dimension_numbers,
                           slice_sizes=tuple(int(s) for s in slice_sizes), mode=I._mode(mode),
                           fill_value=fill_value, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices)


def _scatter(p):
    def f(operand, scatter_indices, updates, dimension_numbers, *, indices_are_sorted=False,
          unique_indices=False, mode=None):
        operand, updates = _operands(operand, updates)
        return p.bind(operand, scatter_indices, updates, dimension_numbers=dimension_numbers,
                      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                      mode=I._mode(mode) if mode is not None else "fill")
    f.__name__ = p.name
    return f


scatter = _scatter(I.scatter_p)
scatter_add = _scatter(I.scatter_add_p)
scatter_mul = _scatter(I.scatter_mul_p)
scatter_min = _scatter(I.scatter_min_p)
scatter_max = _scatter(I.scatter_max_p)

# --------------------------------------------------------------------------- reductions


def _axes(axes):
    return tuple(int(a) for a in axes)


def reduce_sum(operand, axes):
    return R.reduce_sum_p.bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_prod(operand, axes):
    return R.reduce_prod_p.bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_max(operand, axes):
    return R.reduce_max_p.bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_min(operand, axes):
    return R.reduce_min_p.bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_and(operand, axes):
    return R.reduce_and_p.bind(operand, axes=_axes(axes), out_sharding=None)


def reduce_or(operand, axes):
    return R.reduce_or_p.bind(operand, axes=_axes(axes), out_sharding=None)


def argmax(operand, axis, index_dtype):
    return R.argmax_p.bind(operand, axes=(int(axis),), index_dtype=dtypes.check_supported(index_dtype))


def argmin(operand, axis, index_dtype):
    return R.argmin_p.bind(operand, axes=(int(axis),), index_dtype=dtypes.check_supported(index_dtype))


# --------------------------------------------------------------------------- linear algebra

def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None,
                out_sharding=None):
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
          (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))
    pet = dtypes.check_supported(preferred_element_type) if preferred_element_type is not None else None
    la, ra = _aval(lhs), _aval(rhs)
    if la.dtype != ra.dtype:
        # operands of two dtypes meet at the higher-precision one (XLA's rule, as JAX)
        dt = pet if pet is not None else _dot_dtype(la.dtype, ra.dtype)
        lhs = convert_element_type(lhs, dt) if la.dtype != dt else lhs
        rhs = convert_element_type(rhs, dt) if ra.dtype != dt else rhs
        la, ra = _aval(lhs), _aval(rhs)
    K = int(np.prod([la.shape[i] for i in dn[0][0]], dtype=np.int64))
    if K > _SPLIT_K:
        L.dot_general_p.abstract_eval(la, ra, dimension_numbers=dn, preferred_element_type=pet)  # checks
        return _dot_split_k(lhs, rhs, dn, pet)
    return L.dot_general_p.bind(lhs, rhs, dimension_numbers=dn, precision=None,
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
        raise TypeError(f"lax.dot_general argument type error: {np.dtype(a).name}, {np.dtype(b).name}")
    return np.dtype(a) if pa > pb else np.dtype(b)


# Long contractions are split into chunks that run as an extra batch dimension, then summed:
# lavapipe stops every shader invocation after 65535 loop iterations in total (its loop
# limiter), which silently truncated a matmul's K loop; one thread per chunk is also far more
# parallel than one thread walking all of K (a dot of two 10^7-vectors).
_SPLIT_K, _K_CHUNK = 32768, 16384


_split_k_jits: dict = caches.register({})


def _dot_split_k(lhs, rhs, dn, pet):
    from .core.tracing import current_builder
    if current_builder() is not None:
        return _dot_split_k_impl(lhs, rhs, dn, pet)
    # eagerly, run the decomposition as one jitted (fused) call, as the primitive would be
    f = _split_k_jits.get((dn, pet))
    if f is None:
        from .api import jit
        f = _split_k_jits[(dn, pet)] = jit(lambda a, b: _dot_split_k_impl(a, b, dn, pet))
    return f(lhs, rhs)


def _permute(x, perm):
    """transpose, or a (cheaper) reshape when only size-1 axes move."""
    shape = _aval(x).shape
    if [p for p in perm if shape[p] != 1] == [i for i in range(len(shape)) if shape[i] != 1]:
        return reshape(x, [shape[p] for p in perm])
    return transpose(x, perm)


def _dot_split_k_impl(lhs, rhs, dn, pet):
    (lc, rc), (lb, rb) = dn
    la, ra = _aval(lhs), _aval(rhs)
    lfree = tuple(i for i in range(la.ndim) if i not in lc + lb)
    rfree = tuple(i for i in range(ra.ndim) if i not in rc + rb)
    bsh = [la.shape[i] for i in lb]
    msh, nsh = [la.shape[i] for i in lfree], [ra.shape[i] for i in rfree]
    K = int(np.prod([la.shape[i] for i in lc], dtype=np.int64))
    nb, nm = len(bsh), len(msh)
    if int(np.prod(bsh + msh + nsh, dtype=np.int64)) <= 64:
        # few outputs (a dot of two vectors): a broadcast multiply fused into the (two-pass,
        # compensated) reduction kernel, memory-bound and fully parallel
        dt = pet if pet is not None else la.dtype
        a = reshape(_permute(lhs, lb + lfree + lc), bsh + msh + [1] * len(nsh) + [K])
        b = reshape(_permute(rhs, rb + rfree + rc), bsh + [1] * nm + nsh + [K])
        full = bsh + msh + nsh + [K]
        nd = len(full)
        a = broadcast_in_dim(convert_element_type(a, dt), full, tuple(range(nd)))
        b = broadcast_in_dim(convert_element_type(b, dt), full, tuple(range(nd)))
        if np.dtype(dt) == np.bool_:
            return reduce_or(bitwise_and(a, b), (nd - 1,))
        return reduce_sum(mul(a, b), (nd - 1,))
    nS = -(-K // _K_CHUNK)
    nS = next((d for d in range(nS, 2 * nS + 1) if K % d == 0), nS)   # no padding if it divides
    Kc = -(-K // nS)
    npad = nS * Kc - K
    a = reshape(_permute(lhs, lb + lfree + lc), bsh + msh + [K])
    b = reshape(_permute(rhs, rb + rc + rfree), bsh + [K] + nsh)
    if npad:
        a = pad(a, np.zeros((), la.dtype), [(0, 0, 0)] * (nb + nm) + [(0, npad, 0)])
        b = pad(b, np.zeros((), ra.dtype), [(0, 0, 0)] * nb + [(0, npad, 0)] + [(0, 0, 0)] * len(nsh))
    a = reshape(a, bsh + msh + [nS, Kc])
    b = reshape(b, bsh + [nS, Kc] + nsh)
    dn2 = (((nb + nm + 1,), (nb + 1,)), (tuple(range(nb)) + (nb + nm,), tuple(range(nb)) + (nb,)))
    out = L.dot_general_p.bind(a, b, dimension_numbers=dn2, precision=None,
                               preferred_element_type=pet, out_sharding=None)
    # out: batch dims, the chunk axis, lhs free dims, rhs free dims
    return reduce_or(out, (nb,)) if _aval(out).dtype == np.bool_ else reduce_sum(out, (nb,))


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, dimension_numbers=None,
        out_sharding=None):
    la, ra = _aval(lhs), _aval(rhs)
    if dimension_numbers is None:
        if not (la.ndim in (1, 2) and ra.ndim in (1, 2) and la.shape[-1] == ra.shape[0]):
            raise ValueError(
                "jax.lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={la.shape} rhs_shape={ra.shape}")
        dimension_numbers = (((la.ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision=precision,
                       preferred_element_type=preferred_element_type)


# --------------------------------------------------------------------------- cumulative, sort, conv
# (issue 3: primitives in prims/cumulative.py, prims/sort.py, prims/conv.py, prims/special.py)

from .prims import conv as _C  # noqa: E402
from .prims import cumulative as _CU  # noqa: E402
from .prims import sort as _SO  # noqa: E402
from .prims import special as _SP  # noqa: E402
from .prims.conv import ConvDimensionNumbers, conv_dimension_numbers, conv_general_permutations  # noqa: E402,F401


def _cum(p):
    def f(operand, axis: int = 0, reverse: bool = False):
        a = _aval(operand)
        if not -a.ndim <= int(axis) < builtins.max(a.ndim, 1) or a.ndim == 0:
            raise ValueError(f"{p.name}: axis {axis} is out of bounds for array of shape {a.shape}")
        return p.bind(operand, axis=int(axis) % a.ndim, reverse=bool(reverse))
    f.__name__ = p.name
    return f


cumsum = _cum(_CU.cumsum_p)
cumprod = _cum(_CU.cumprod_p)
cummax = _cum(_CU.cummax_p)
cummin = _cum(_CU.cummin_p)
cumlogsumexp = _cum(_CU.cumlogsumexp_p)


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
    out = _SO.sort_p.bind(*ops, dimension=int(dimension) % nd, is_stable=bool(is_stable),
                          num_keys=int(num_keys))
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
    vals, idx = _SO.top_k_p.bind(operand, k=k, axis=ax)
    return vals, idx


def erf_inv(x):
    return _SP.erf_inv_p.bind(*_operands(x))


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    return _SP.reduce_precision_p.bind(operand, exponent_bits=int(exponent_bits),
                                       mantissa_bits=int(mantissa_bits))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    return _C.padtype_to_pads(in_shape, window_shape, window_strides, padding)


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None, rhs_dilation=None,
                         dimension_numbers=None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision=None, preferred_element_type=None):
    la, ra = _aval(lhs), _aval(rhs)
    dnums = _C.conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nsp = la.ndim - 2
    lhs_dilation = (1,) * nsp if lhs_dilation is None else tuple(int(d) for d in lhs_dilation)
    rhs_dilation = (1,) * nsp if rhs_dilation is None else tuple(int(d) for d in rhs_dilation)
    window_strides = tuple(int(s) for s in window_strides)
    if isinstance(padding, str):
        if builtins.any(d != 1 for d in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution using "
                             "this op. Please either exactly specify the required padding or use "
                             "conv_transpose.")
        k_sp = [ra.shape[d] for d in dnums.rhs_spec[2:]]
        eff = [0 if k == 0 else 1 + r * (k - 1) for k, r in zip(k_sp, rhs_dilation)]
        padding = _C.padtype_to_pads([la.shape[d] for d in dnums.lhs_spec[2:]], eff,
                                     window_strides, padding)
    else:
        try:
            padding = tuple((int(lo), int(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise ValueError("padding argument to conv_general_dilated should be a string or a "
                             f"sequence of (low, high) pairs, got {padding}") from None
    pet = dtypes.check_supported(preferred_element_type) if preferred_element_type is not None else None
    if pet is not None and la.dtype != ra.dtype:
        lhs, rhs = convert_element_type(lhs, pet), convert_element_type(rhs, pet)
    return _C.conv_bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=None, preferred_element_type=pet, out_sharding=None)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)



def stop_gradient(x):
    """The identity, with a zero derivative (applied to every leaf of a pytree)."""
    from .core import tree_util
    from .custom_derivatives import stop_gradient_p

    def stop(v):
        a = _aval(v)
        if not dtypes.is_float(a.dtype):
            return v
        return stop_gradient_p.bind(v)

    return tree_util.tree_map(stop, x)


from .lax_control import cond, switch, while_loop, fori_loop, scan, map  # noqa: E402,F401,A001

__all__ = [n for n in dir() if not n.startswith("_")]
