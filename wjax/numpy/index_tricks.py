"""Index tricks and array builders: ``block``, ``r_``/``c_``, ``s_``/``index_exp``, ``ix_``,
``mgrid``/``ogrid``, ``fromfunction``, the ``*_indices_from`` helpers, ``mask_indices``,
``apply_over_axes``, ``place``/``put``, host constructors (``frombuffer``, ``fromstring``,
``fromiter``), host I/O (``load``/``save``/``savez``) and printing (``array_repr``,
``array_str``, print options)."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from .._src.core.tracing import Tracer
from ._util import _aval, _concrete
from .creation import (_arraylike, arange, array, asarray, astype, concrete_error_for, ones,
                       tril_indices, triu_indices, unravel_index)
from .grids import linspace
from .shapes import concatenate, expand_dims, ravel, reshape, transpose
from .sorting import nonzero
from .ufuncs import not_equal

__all__ = ["block", "r_", "c_", "s_", "index_exp", "ix_", "mgrid", "ogrid", "fromfunction",
           "diag_indices_from", "tril_indices_from", "triu_indices_from", "mask_indices",
           "apply_over_axes", "place", "put", "frombuffer", "fromstring", "fromiter", "fromfile",
           "load", "save", "savez", "array_repr", "array_str", "printoptions",
           "get_printoptions", "set_printoptions"]

s_ = np.s_
index_exp = np.index_exp
printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions
save = np.save
savez = np.savez


# --------------------------------------------------------------------------- block

def _block_depth(x, name="block"):
    if isinstance(x, tuple):
        raise TypeError(f"jax.numpy.{name} does not allow tuples, got {x}")
    if isinstance(x, list):
        if not x:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        depths = {_block_depth(v) for v in x}
        if len(depths) != 1:
            raise ValueError("Mismatched list depths in jax.numpy.block")
        return depths.pop() + 1
    return 0


def block(arrays):
    """Assembles an array from nested lists of blocks: the innermost lists join along the last
    axis, the next along the one before, and so on (NumPy's ``block``)."""
    depth = _block_depth(arrays)
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for v in x:
                collect(v)
        else:
            leaves.append(asarray(x))

    collect(arrays)
    ndim = builtins.max([depth] + [a.ndim for a in leaves])

    def rec(x, d):
        if not isinstance(x, list):
            a = asarray(x)
            return reshape(a, (1,) * (ndim - a.ndim) + a.shape)
        parts = [rec(v, d + 1) for v in x]
        return concatenate(parts, axis=-(depth - d))

    return rec(arrays, 0)


# --------------------------------------------------------------------------- r_, c_, grids

def _slice_range(s: slice):
    """A slice of a grid constructor as a 1-D array (a complex step is a point count)."""
    start = 0 if s.start is None else s.start
    stop, step = s.stop, 1 if s.step is None else s.step
    if isinstance(step, complex):
        return linspace(start, stop, int(builtins.abs(step)))
    return arange(start, stop, step)


class _AxisConcat:
    """``r_``/``c_``: concatenation of slices, scalars and arrays along an axis, with NumPy's
    string directive ``"axis,ndmin,trans1d"`` first."""

    def __init__(self, axis, ndmin, trans1d, name):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if key and isinstance(key[0], str):
            directive, key = key[0], key[1:]
            if directive in ("r", "c"):
                raise NotImplementedError(f"jax.numpy.{self.name}: matrix directives ('r', "
                                          f"'c') are not supported")
            parts = [int(p) for p in directive.split(",")]
            axis = parts[0]
            if len(parts) > 1:
                ndmin = parts[1]
            if len(parts) > 2:
                trans1d = parts[2]
        items = []
        for k in key:
            if isinstance(k, slice):
                a = _slice_range(k)
            elif isinstance(k, str):
                raise ValueError(f"jax.numpy.{self.name}: a string directive must come first")
            else:
                a = asarray(k)
            if a.ndim < ndmin:
                k2 = ndmin - a.ndim
                a = reshape(a, (1,) * k2 + a.shape)
                if trans1d != -1:
                    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                    d = list(range(ndmin))
                    a = transpose(a, d[:k1] + d[k2:] + d[k1:k2])
            items.append(a)
        if not items:
            return array([])
        return concatenate(items, axis=axis)

    def __len__(self):
        return 0


r_ = _AxisConcat(0, 1, -1, "r_")
c_ = _AxisConcat(-1, 2, 0, "c_")


class _Grid:
    def __init__(self, sparse, name):
        self.sparse, self.name = sparse, name

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _slice_range(key)
        ranges = [_slice_range(k) for k in key]
        if not ranges:
            return array([])
        dt = dtypes.result_type(*[r.dtype for r in ranges])
        ranges = [astype(r, dt) for r in ranges]
        n = len(ranges)
        if self.sparse:
            return [reshape(r, tuple(-1 if i == j else 1 for j in range(n)))
                    for i, r in enumerate(ranges)]
        shape = tuple(r.shape[0] for r in ranges)
        grids = [lax.broadcast_in_dim(r, shape, (i,)) for i, r in enumerate(ranges)]
        return lax.concatenate([expand_dims(g, 0) for g in grids], 0)


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")


def ix_(*args):
    """An open mesh from 1-D index sequences: ``a[ix_(rows, cols)]`` picks the cross product."""
    out = []
    n = len(args)
    for i, a in enumerate(args):
        a = asarray(a)
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{a.shape}")
        if a.dtype == np.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        out.append(reshape(a, tuple(-1 if j == i else 1 for j in range(n))))
    return tuple(out)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*index_arrays)`` over a grid of ``shape`` (indices of ``dtype``)."""
    shape = tuple(operator.index(d) for d in shape)
    dt = dtypes.check_supported(dtypes.dtype(dtype) if dtype is not float else np.float32)
    idx = [lax.broadcasted_iota(dt, shape, i) for i in range(len(shape))]
    return function(*idx, **kwargs)


# --------------------------------------------------------------------------- index helpers

def _static_shape_check(name, arr, ndim=None):
    a = _arraylike(name, arr)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"input array must be {ndim}-d")
    return a


def diag_indices_from(arr):
    """The indices of the main diagonal of a square (all sides equal) array."""
    a = asarray(arr)
    if a.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(a.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    i = arange(a.shape[0])
    return (i,) * a.ndim


def tril_indices_from(arr, k: int = 0):
    a = _static_shape_check("tril_indices_from", arr)
    if a.ndim != 2:
        raise ValueError("input array must be 2-d")
    return tril_indices(a.shape[0], k=k, m=a.shape[1])


def triu_indices_from(arr, k: int = 0):
    a = _static_shape_check("triu_indices_from", arr)
    if a.ndim != 2:
        raise ValueError("input array must be 2-d")
    return triu_indices(a.shape[0], k=k, m=a.shape[1])


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where ``mask_func(ones((n, n)), k)`` is nonzero."""
    m = mask_func(ones((n, n), np.int32), k)
    return nonzero(not_equal(m, 0), size=size)


def apply_over_axes(func, a, axes):
    """``func(a, axis)`` applied for each of ``axes`` in turn, the reduced axis kept."""
    a = _arraylike("apply_over_axes", a)
    for axis in [axes] if isinstance(axes, int) else axes:
        b = func(a, axis)
        b = asarray(b)
        if b.ndim == a.ndim - 1:
            b = expand_dims(b, axis)
        elif b.ndim != a.ndim:
            raise ValueError("function is not returning an array of the correct shape")
        a = b
    return a


_INPLACE = ("jax.numpy.{} cannot modify arrays in-place, because JAX arrays are immutable. "
            "Pass inplace=False to instead return an updated array.")


def place(arr, mask, vals, *, inplace=True):
    """``arr`` with the entries where ``mask`` is true set to ``vals`` in order (repeating
    ``vals`` as needed); requires ``inplace=False`` and a concrete ``mask``."""
    if inplace:
        raise ValueError(_INPLACE.format("place"))
    arr = _arraylike("place", arr)
    m = _concrete(ravel(asarray(mask)), "jnp.place mask")
    vals = ravel(asarray(vals))
    pos = np.flatnonzero(np.asarray(m))
    if pos.size == 0:
        return arr
    if vals.shape[0] == 0:
        raise ValueError("Cannot place values from an empty array")
    take = np.arange(pos.size) % vals.shape[0]
    flat = ravel(arr).at[pos].set(astype(vals[take], arr.dtype))
    return reshape(flat, arr.shape)


def put(a, ind, v, mode=None, *, inplace=True):
    """``a`` with its flat entries ``ind`` set to ``v`` (repeated to ``ind``'s length); requires
    ``inplace=False``.  Out-of-range indices are clipped (``mode=None`` or "clip") or wrapped
    ("wrap")."""
    if inplace:
        raise ValueError(_INPLACE.format("put"))
    a = _arraylike("put", a)
    ind = ravel(asarray(ind))
    v = ravel(asarray(v))
    if ind.shape[0] == 0 or v.shape[0] == 0:
        return a
    if v.shape[0] != ind.shape[0]:
        v = v[np.arange(ind.shape[0]) % v.shape[0]]
    size = builtins.max(1, int(np.prod(a.shape)))
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind = lax.clamp(0, astype(ind, np.int32), size - 1)
        scatter_mode = "clip"
    elif mode == "wrap":
        ind = ind % size
        scatter_mode = "clip"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    # flat indices through unravel_index (which clips them into range), as JAX
    return a.at[unravel_index(ind, a.shape)].set(astype(v, a.dtype), mode=scatter_mode)


# --------------------------------------------------------------------------- host constructors

def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A device array of the bytes of ``buffer`` read as ``dtype``."""
    dt = np.float32 if dtype is float else dtype
    return asarray(np.frombuffer(buffer, dtype=dt, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """A device array of the numbers in the text ``string`` separated by ``sep``."""
    dt = np.float32 if dtype is float else dtype
    return asarray(np.fromstring(string, dtype=dt, count=count, sep=sep))


def fromfile(*args, **kwargs):
    raise NotImplementedError(
        "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for use "
        "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromfile(...)) "
        "instead, although care should be taken if np.fromfile is used within a jax "
        "transformations because of its potential side-effect of consuming the file object; for "
        "more information see https://docs.jax.dev/en/latest/notebooks/"
        "Common_Gotchas_in_JAX.html#pure-functions")


def fromiter(*args, **kwargs):
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for use "
        "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromiter(...)) "
        "instead.")


def load(file, *args, **kwargs):
    """``np.load``, with arrays returned on the device (a ``.npz`` archive stays a mapping)."""
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype != object:
        return asarray(out)
    return out


# --------------------------------------------------------------------------- printing

def _host(a):
    if isinstance(a, Tracer):
        raise concrete_error_for("array_repr", a)
    return np.asarray(a)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """The repr of ``arr``: NumPy's, under the name of the class of a wjax array (JAX's:
    ``ArrayImpl(...)``); a host array's as NumPy writes it."""
    text = np.array_repr(_host(arr), max_line_width, precision, suppress_small)
    if isinstance(arr, (np.ndarray, np.generic)) or not text.startswith("array"):
        return text
    return type(arr).__name__ + text[len("array"):]


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    return np.array_str(_host(a), max_line_width, precision, suppress_small)


del _aval
