"""The rest of ``jax.lax``: array constructors (``full``, ``full_like``, ``empty``), shape
helpers (``broadcast_shapes``, ``collapse``, ``split``, ``tile``, ``stack``...), generic
``reduce``, ``associative_scan``, patch convolutions, ``approx_max_k``, the optimization
barrier, tokens, ``platform_dependent`` and the enums/aliases JAX exports -- compositions of
the primitives (``optimization_barrier`` is one of its own, in ``wjax/_src/prims/shape.py``).
"""
from __future__ import annotations

import builtins
import enum
import functools
import math
from typing import Any, Callable, NamedTuple, Sequence, Union

import numpy as np

from .._src.core import dtypes, ops, tree_util
from .._src.core.ir import WeakScalar, abstractify, raise_to_shaped
from .._src.core.primitive import REGISTRY
from .._src.prims.conv import ConvDimensionNumbers
from .control import while_loop

__all__ = [
    "GatherScatterMode", "RandomAlgorithm", "DotAlgorithm", "DotAlgorithmPreset",
    "DotDimensionNumbers", "ragged_dot",
    "ConvGeneralDilatedDimensionNumbers", "PrecisionLike", "broadcast_shapes",
    "broadcast_to_rank", "broadcast_like", "full", "full_like", "empty", "dtype", "collapse",
    "dynamic_update_index_in_dim", "batch_matmul", "index_take", "split", "tile", "stack",
    "unstack", "reduce", "reduce_xor", "scatter_sub", "scatter_apply", "associative_scan",
    "approx_max_k",
    "approx_min_k", "optimization_barrier", "create_token", "after_all",
    "platform_dependent", "shape_as_value", "composite", "dce_sink",
]


def _aval(x):
    return raise_to_shaped(x)


# --------------------------------------------------------------------------- enums and aliases

class GatherScatterMode(enum.Enum):
    """How gathers and scatters treat out-of-bounds indices (``mode=`` of lax.gather/scatter and
    of ``x.at[...]``)."""
    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(s):
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        if s == "one_hot":
            return GatherScatterMode.ONE_HOT
        raise ValueError(f'Unknown gather mode "{s}"')


class DotAlgorithm(NamedTuple):
    """A dot-product algorithm, accepted as ``precision=`` (wjax multiplies float32 operands
    with float32 accumulation whatever is asked)."""
    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class RandomAlgorithm(enum.IntEnum):
    """XLA's random bit generator algorithms (``lax.rng_bit_generator``'s ``algorithm``)."""
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2


class DotAlgorithmPreset(enum.Enum):
    """Matmul algorithm presets accepted as ``precision=`` (wjax computes float32 products with
    float32 accumulation for every one)."""
    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self):
        return self.name

    __str__ = __repr__


DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]
PrecisionLike = Any


# --------------------------------------------------------------------------- constructors, shapes

def broadcast_shapes(*shapes):
    """The shape NumPy broadcasting gives ``shapes`` (ValueError naming them if none)."""
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    nd = builtins.max(len(s) for s in shapes)
    padded = [(1,) * (nd - len(s)) + s for s in shapes]
    out = []
    for ds in zip(*padded):
        sizes = {d for d in ds if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to_rank(x, rank: int):
    """``x`` with leading unit dimensions added up to ``rank``."""
    a = _aval(x)
    if a.ndim >= rank:
        return x
    return ops.broadcast(x, (1,) * (rank - a.ndim))


def broadcast_like(arr, like_arr):
    """``arr`` broadcast (NumPy's trailing alignment) to the shape of ``like_arr``."""
    shape = _aval(like_arr).shape
    a = _aval(arr)
    return ops.broadcast_in_dim(arr, shape, tuple(range(len(shape) - a.ndim, len(shape))))


def _check_shape(name, shape):
    try:
        shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    except TypeError:
        raise TypeError(f"{name}: shapes must be sequences of integers, got {shape!r}") from None
    if builtins.any(d < 0 for d in shape):
        raise TypeError(f"{name}: shapes must have non-negative dimensions, got {shape}")
    return shape


def full(shape, fill_value, dtype=None, *, sharding=None):
    """An array of ``shape`` filled with the scalar ``fill_value`` (weakly typed when both
    ``fill_value`` is a Python scalar and ``dtype`` is None, as JAX)."""
    shape = _check_shape("full", shape)
    if np.ndim(fill_value) != 0:
        raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                        f"{np.shape(fill_value)}.")
    weak = dtype is None and ops._is_pyscalar(fill_value)
    if dtype is None:
        dt = dtypes.dtype_and_weak(fill_value)[0] if ops._is_pyscalar(fill_value) else \
            _aval(fill_value).dtype
    else:
        dt = dtypes.check_supported(dtype)
    if ops._is_pyscalar(fill_value) or isinstance(fill_value, (np.ndarray, np.generic)):
        val = np.asarray(fill_value).astype(dt)
        x = WeakScalar(val) if weak else val
    else:
        x = fill_value if np.dtype(_aval(fill_value).dtype) == np.dtype(dt) else \
            ops.convert_element_type(fill_value, dt)
    out = ops.broadcast_in_dim(x, shape, ())
    return out


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
    """An array like ``x`` (its shape and dtype unless given) filled with ``fill_value``; weakly
    typed when ``x`` is and no dtype is given."""
    a = abstractify(x) if not hasattr(x, "aval") else x.aval
    dt = a.dtype if dtype is None else dtypes.check_supported(dtype)
    shp = a.shape if shape is None else shape
    out = full(shp, fill_value, dt)
    if dtype is None and a.weak_type:
        out = ops.convert_element_type(out, dt, weak_type=True)
    return out


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` (zeros: its contents are unspecified in JAX)."""
    return full(shape, 0, dtypes.check_supported(dtype))


def dtype(x):
    """The dtype of ``x`` as JAX canonicalizes it (Python floats are float32)."""
    if ops._is_pyscalar(x):
        return np.dtype(dtypes.dtype_and_weak(x)[0])
    if hasattr(x, "aval"):
        return np.dtype(x.aval.dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return dtypes.canonicalize_dtype(x.dtype)
    try:
        return dtypes.canonicalize_dtype(np.dtype(x))
    except TypeError:
        return np.dtype(_aval(x).dtype)


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
    """``operand`` with dimensions ``[start_dimension, stop_dimension)`` merged into one."""
    a = _aval(operand)
    lo = start_dimension % a.ndim if a.ndim else 0
    hi = a.ndim if stop_dimension is None else (
        stop_dimension % a.ndim if stop_dimension < 0 else stop_dimension)
    if lo > hi:
        raise ValueError(f"collapse: start_dimension {start_dimension} must not come after "
                         f"stop_dimension {stop_dimension}")
    size = math.prod(a.shape[lo:hi])
    return ops.reshape(operand, a.shape[:lo] + (size,) + a.shape[hi:])


def dynamic_update_index_in_dim(operand, update, index, axis: int, *,
                                allow_negative_indices: bool = True):
    """``operand`` with ``update`` written at ``index`` along ``axis`` (``update`` may lack that
    axis)."""
    a, u = _aval(operand), _aval(update)
    axis = int(axis) % a.ndim
    if u.ndim == a.ndim - 1:
        update = ops.expand_dims(update, (axis,))
    return ops.dynamic_update_slice_in_dim(operand, update, index, axis,
                                           allow_negative_indices=allow_negative_indices)


def batch_matmul(lhs, rhs, precision=None):
    """Matrix products over equal leading batch dimensions (rank >= 2)."""
    la, ra = _aval(lhs), _aval(rhs)
    if la.ndim < 2 or ra.ndim < 2 or la.ndim != ra.ndim:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D and have the same rank, "
                         f"got {la.ndim}D and {ra.ndim}D")
    if la.shape[:-2] != ra.shape[:-2]:
        raise ValueError(f"batch_matmul: the batch dimensions must be equal, got "
                         f"{la.shape[:-2]} and {ra.shape[:-2]}")
    batch = tuple(range(la.ndim - 2))
    return ops.dot_general(lhs, rhs, (((la.ndim - 1,), (ra.ndim - 2,)), (batch, batch)),
                           precision)


def index_take(src, idxs, axes):
    """``src[idxs[0], :, idxs[1], ...]``-style: entries of ``src`` at the index arrays ``idxs``
    along ``axes`` (the indexed axes gathered into the leading output axis)."""
    a = _aval(src)
    axes = tuple(int(ax) % a.ndim for ax in axes)
    idxs = [ops.convert_element_type(i, np.int32) if np.dtype(_aval(i).dtype) != np.int32
            else i for i in idxs]
    indices = ops.concatenate([ops.expand_dims(i, (1,)) for i in idxs], 1)
    offset = tuple(i for i in range(a.ndim) if i not in axes)
    dn = ops.GatherDimensionNumbers(offset_dims=tuple(range(1, 1 + len(offset))),
                                    collapsed_slice_dims=axes, start_index_map=axes)
    slice_sizes = tuple(1 if i in axes else a.shape[i] for i in range(a.ndim))
    return ops.gather(src, indices, dn, slice_sizes, mode="clip")


def split(operand, sizes: Sequence[int], axis: int = 0):
    """``operand`` cut along ``axis`` into pieces of ``sizes`` (which must add up to it)."""
    a = _aval(operand)
    axis = int(axis) % a.ndim
    sizes = [int(s) for s in sizes]
    if builtins.any(s < 0 for s in sizes) or builtins.sum(sizes) != a.shape[axis]:
        raise ValueError(f"Sum of sizes {builtins.sum(sizes)} must be equal to dimension "
                         f"{a.shape[axis]} of the operand shape {a.shape}")
    out, start = [], 0
    for s in sizes:
        out.append(ops.slice_in_dim(operand, start, start + s, axis=axis))
        start += s
    return out


def tile(operand, reps: Sequence[int]):
    """``operand`` repeated ``reps[i]`` times along each axis (len(reps) == ndim)."""
    a = _aval(operand)
    reps = tuple(int(r) for r in reps)
    if len(reps) != a.ndim:
        raise ValueError(f"tile: len(reps) must equal operand.ndim, got {len(reps)} and {a.ndim}")
    shape = []
    dims = []
    for i, (r, d) in enumerate(zip(reps, a.shape)):
        shape += [r, d]
        dims.append(2 * i + 1)
    out = ops.broadcast_in_dim(operand, tuple(shape), tuple(dims))
    return ops.reshape(out, tuple(r * d for r, d in zip(reps, a.shape)))


def stack(operands, axis: int = 0):
    """The operands (all one shape) stacked along a new ``axis``."""
    operands = list(operands)
    if not operands:
        raise ValueError("stack requires at least one operand")
    nd = _aval(operands[0]).ndim
    axis = int(axis) % (nd + 1)
    return ops.concatenate([ops.expand_dims(o, (axis,)) for o in operands], axis)


def unstack(x, axis: int = 0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    a = _aval(x)
    axis = int(axis) % a.ndim
    return tuple(ops.index_in_dim(x, i, axis, keepdims=False) for i in range(a.shape[axis]))


# --------------------------------------------------------------------------- reductions

_MONOIDS = {}


def _monoid(computation, init, dt):
    """The reduce primitive for a known monoid (lax.add with 0, lax.max with -inf, ...)."""
    if not _MONOIDS:
        _MONOIDS.update({ops.add: ("reduce_sum", 0), ops.mul: ("reduce_prod", 1),
                         ops.max: ("reduce_max", "min"), ops.min: ("reduce_min", "max"),
                         ops.bitwise_and: ("reduce_and", -1),
                         ops.bitwise_or: ("reduce_or", 0)})
    hit = _MONOIDS.get(computation)
    if hit is None or not isinstance(init, (int, float, bool, np.ndarray, np.generic)):
        return None
    name, ident = hit
    if ident in ("min", "max"):
        if dtypes.is_float(dt):
            ident = -np.inf if ident == "min" else np.inf
        elif dt == np.bool_:
            ident = ident == "max"
        else:
            info = np.iinfo(dt)
            ident = info.min if ident == "min" else info.max
    elif name in ("reduce_and", "reduce_or") and dt == np.bool_:
        ident = name == "reduce_and"
    try:
        same = np.asarray(init).astype(dt) == np.asarray(ident).astype(dt)
    except (OverflowError, ValueError):
        return None
    return name if bool(same) else None


def _tree_fold(computation, xs_tree, leaves, n):
    """Reduces axis 0 (length ``n``) of every leaf pairwise with ``computation``."""
    while n > 1:
        half = n // 2
        lo = [ops.slice_in_dim(v, 0, 2 * half, 2, 0) for v in leaves]
        hi = [ops.slice_in_dim(v, 1, 2 * half, 2, 0) for v in leaves]
        out = computation(tree_util.tree_unflatten(xs_tree, lo),
                          tree_util.tree_unflatten(xs_tree, hi))
        out_leaves = tree_util.tree_leaves(out)
        if n % 2:
            out_leaves = [ops.concatenate([o, ops.slice_in_dim(v, n - 1, n, 1, 0)], 0)
                          for o, v in zip(out_leaves, leaves)]
        leaves, n = out_leaves, half + n % 2
    return leaves


def reduce(operands, init_values, computation: Callable, dimensions: Sequence[int],
           out_sharding=None):
    """Reduces ``operands`` (an array or a pytree of equally shaped arrays) over
    ``dimensions`` with ``computation(accumulated, element)``, starting from ``init_values``.
    Known monoids (add, mul, max, min, and, or with their identity) use the reduce
    primitives; any other (associative) computation is folded pairwise."""
    flat_ops, tree = tree_util.tree_flatten(operands)
    flat_init, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"Operands must have the same tree structure as init_values: {tree} "
                         f"vs. {init_tree}")
    if len(flat_ops) != len(flat_init):
        raise ValueError("Must have same total number of operands as init_values")
    dims = tuple(sorted({int(d) for d in dimensions}))
    if len(flat_ops) == 1:
        dt = np.dtype(_aval(flat_ops[0]).dtype)
        name = _monoid(computation, flat_init[0], dt)
        if name is not None:
            return tree_util.tree_unflatten(tree, [REGISTRY[name].bind(flat_ops[0], axes=dims)])
    shapes = {_aval(o).shape for o in flat_ops}
    if len(shapes) != 1:
        raise ValueError(f"reduce: operands must all have one shape, got {sorted(shapes)}")
    shape = shapes.pop()
    for d in dims:
        if not 0 <= d < len(shape):
            raise ValueError(f"reduce: dimension {d} out of range for shape {shape}")
    keep = [i for i in range(len(shape)) if i not in dims]
    n = math.prod(shape[d] for d in dims)
    rest = tuple(shape[i] for i in keep)
    moved = [ops.reshape(ops.transpose(o, tuple(dims) + tuple(keep)), (n,) + rest)
             for o in flat_ops]
    inits = [ops.broadcast_in_dim(i if hasattr(i, "aval") else np.asarray(i, _aval(o).dtype),
                                  (1,) + rest, ()) for i, o in zip(flat_init, flat_ops)]
    if n == 0:
        out = inits
    else:
        folded = _tree_fold(computation, tree, moved, n)
        out = tree_util.tree_leaves(computation(tree_util.tree_unflatten(tree, inits),
                                                tree_util.tree_unflatten(tree, folded)))
    return tree_util.tree_unflatten(tree, [ops.reshape(o, rest) for o in out])


def reduce_xor(operand, axes: Sequence[int]):
    """The bitwise xor of ``operand`` over ``axes`` (booleans: parity)."""
    dt = np.dtype(_aval(operand).dtype)
    if dt.kind not in "iub":
        raise TypeError(f"reduce_xor does not accept dtype {dt.name}. Accepted dtypes are "
                        f"subtypes of integer, bool.")
    return reduce(operand, np.zeros((), dt), ops.bitwise_xor, axes)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """``scatter_add`` of the negated updates."""
    operand, updates = ops._operands(operand, updates)
    return ops.scatter_add(operand, scatter_indices, ops.neg(updates), dimension_numbers,
                           indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                           mode=mode)


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *,
                  update_shape=(), indices_are_sorted=False, unique_indices=False, mode=None):
    """``operand`` with ``func`` applied at every position the scatter indices select -- as
    many times as the position is selected (``update_shape`` is the shape of the updates the
    indices address)."""
    a = _aval(operand)
    hits = ops.scatter_add(ops.broadcast_in_dim(np.zeros((), np.int32), a.shape, ()),
                           scatter_indices,
                           ops.broadcast_in_dim(np.ones((), np.int32), tuple(update_shape), ()),
                           dimension_numbers, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)
    most = ops.reduce_max(hits, tuple(range(a.ndim))) if a.ndim else hits

    def body(state):
        k, x = state
        return ops.add(k, np.int32(1)), ops.select(ops.gt(hits, ops.broadcast_in_dim(
            k, a.shape, ())), func(x), x)

    return while_loop(lambda st: ops.lt(st[0], most), body, (np.int32(0), operand))[1]


# --------------------------------------------------------------------------- associative_scan

def _interleave(a, b, axis):
    """Elements of ``a`` and ``b`` alternately along ``axis`` (len(a) == len(b) or one more)."""
    na, nb = _aval(a).shape[axis], _aval(b).shape[axis]
    if na == nb + 1:
        b = ops.pad(b, np.zeros((), _aval(b).dtype), [(0, 1, 0) if i == axis else (0, 0, 0)
                                                        for i in range(_aval(b).ndim)])
    both = ops.concatenate([ops.expand_dims(a, (axis + 1,)), ops.expand_dims(b, (axis + 1,))],
                           axis + 1)
    shape = list(_aval(a).shape)
    shape[axis] = 2 * na
    out = ops.reshape(both, tuple(shape))
    return ops.slice_in_dim(out, 0, na + nb, 1, axis) if na != nb else out


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations ``fn(...fn(fn(e0, e1), e2)..., ek)`` of ``elems`` along
    ``axis`` for an associative ``fn``, in O(log n) rounds of ``fn`` on halves (the
    Ladner-Fischer recursion).  ``elems`` may be a pytree of arrays of equal length."""
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        return elems
    nd = _aval(leaves[0]).ndim
    if not -nd <= axis < nd:
        raise ValueError(f"associative_scan: axis {axis} is out of bounds for arrays of rank "
                         f"{nd}")
    axis = axis % nd
    lens = {_aval(x).shape[axis] for x in leaves}
    if len(lens) != 1:
        raise ValueError(f"Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {sorted(lens)})")
    n = lens.pop()
    if reverse:
        leaves = [ops.rev(x, (axis,)) for x in leaves]

    def combine(a, b):
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise ValueError(f"associative_scan: fn must return a pytree of the structure of "
                             f"elems, got {out_tree} for {tree}")
        return out_leaves

    def sl(xs, start, stop, step=1):
        return [ops.slice_in_dim(x, start, stop, step, axis) for x in xs]

    def scan(xs, k):
        if k < 2:
            return xs
        pairs = combine(sl(xs, 0, k - 1, 2), sl(xs, 1, k, 2))    # e0+e1, e2+e3, ...
        odd = scan(pairs, k // 2)                                # prefixes ending at odd i
        if k % 2 == 0:
            even_tail = combine(sl(odd, 0, k // 2 - 1), sl(xs, 2, k, 2))
        else:
            even_tail = combine(odd, sl(xs, 2, k, 2))
        even = [ops.concatenate([h, t], axis) for h, t in zip(sl(xs, 0, 1), even_tail)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan(leaves, n)
    if reverse:
        out = [ops.rev(x, (axis,)) for x in out]
    return tree_util.tree_unflatten(tree, out)


# --------------------------------------------------------------------------- top-k

def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` largest entries along ``reduction_dimension`` and their indices -- exact, as
    JAX on CPU (``aggregate_to_topk=False`` returns every entry, sorted)."""
    a = _aval(operand)
    if a.ndim == 0:
        raise TypeError("approx_max_k operand must have >= 1 dimension")
    dim = int(reduction_dimension) % a.ndim
    if not 0 <= int(k) <= a.shape[dim]:
        raise ValueError(f"k must be in [0, {a.shape[dim]}], got {k}")
    kk = int(k) if aggregate_to_topk else a.shape[dim]
    return list(ops.top_k(operand, kk, axis=dim))


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
    """The ``k`` smallest entries and their indices (exact; see ``approx_max_k``)."""
    a = _aval(operand)
    if np.dtype(a.dtype).kind == "u":
        raise TypeError("approx_min_k does not accept unsigned operands")
    vals, idx = approx_max_k(ops.neg(operand), k, reduction_dimension, recall_target,
                             reduction_input_size_override, aggregate_to_topk)
    return [ops.neg(vals), idx]


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """A grouped matmul: ``lhs`` (m, k) rows come in consecutive groups of ``group_sizes``
    (g,), and group ``i``'s rows are multiplied by ``rhs[i]`` (g, k, n); rows past the groups
    give zeros."""
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    la, ra, ga = _aval(lhs), _aval(rhs), _aval(group_sizes)
    if la.ndim != 2 or ra.ndim != 3 or ga.ndim != 1:
        raise TypeError(f"ragged_dot expects lhs (m, k), rhs (g, k, n) and group_sizes (g,), "
                        f"got {la.shape}, {ra.shape}, {ga.shape}")
    m, k = la.shape
    g, k2, n = ra.shape
    if k != k2 or ga.shape[0] != g:
        raise TypeError(f"ragged_dot: incompatible shapes {la.shape}, {ra.shape}, {ga.shape}")
    ends = ops.cumsum(ops.convert_element_type(group_sizes, np.int32), axis=0)
    starts = ops.sub(ends, ops.convert_element_type(group_sizes, np.int32))
    row = ops.broadcasted_iota(np.int32, (g, m), 1)
    member = ops.bitwise_and(ops.ge(row, ops.broadcast_in_dim(starts, (g, m), (0,))),
                             ops.lt(row, ops.broadcast_in_dim(ends, (g, m), (0,))))
    pet = preferred_element_type
    prods = ops.dot_general(lhs, rhs, (((1,), (1,)), ((), ())), precision, pet)  # (m, g, n)
    dt = _aval(prods).dtype
    mask = ops.convert_element_type(ops.transpose(member, (1, 0)), dt)              # (m, g)
    return ops.reduce_sum(ops.mul(prods, ops.broadcast_in_dim(mask, (m, g, n), (0, 1))),
                          (1,))


# --------------------------------------------------------------------------- barriers, tokens

def optimization_barrier(operand, /):
    """The identity on a pytree of arrays, kept as one equation so that no computation moves
    across it (wjax's lowering does not reorder across it either)."""
    leaves, tree = tree_util.tree_flatten(operand)
    leaves = [ops._as_operand(x) if ops._is_pyscalar(x) else x for x in leaves]
    leaves = [np.asarray(x) if isinstance(x, (int, float, bool)) else x for x in leaves]
    outs = REGISTRY["optimization_barrier"].bind(*leaves)
    return tree_util.tree_unflatten(tree, list(outs))


class Token:
    """An ordering token (``lax.create_token``/``after_all``): wjax runs effects in program
    order, so a token carries no data."""

    def __repr__(self):
        return "Token()"


def create_token(_=None):
    return Token()


def after_all(*operands):
    for o in operands:
        if not isinstance(o, Token):
            raise TypeError(f"after_all operands must be tokens, got {type(o).__name__}")
    return Token()


# --------------------------------------------------------------------------- platforms, misc

PLATFORM = "webgpu"


def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
    """Calls the branch for wjax's platform (``webgpu``; ``gpu`` also matches), else
    ``default``."""
    for name in (PLATFORM, "gpu"):
        if name in per_platform:
            return per_platform[name](*args)
    if default is not None:
        return default(*args)
    raise NotImplementedError(
        f"platform_dependent: no branch for platform {PLATFORM!r} (branches for "
        f"{sorted(per_platform)}) and no default")


def shape_as_value(shape):
    """``shape`` as an int32 array."""
    return ops.broadcast_in_dim(np.asarray(tuple(int(d) for d in shape), np.int32),
                                (len(shape),), (0,))


def composite(decomposition: Callable, name: str, version: int = 0):
    """A function marked as a named composite; wjax runs its decomposition."""
    @functools.wraps(decomposition)
    def f(*args, **kwargs):
        return decomposition(*args, **kwargs)
    return f


def dce_sink(val, *, prevent_mlir_dce: bool = False):
    """Marks ``val`` used (a no-op in wjax)."""
    return None
