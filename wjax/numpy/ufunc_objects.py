"""``jnp.ufunc``: JAX's ufunc objects.  ``jnp.add``, ``jnp.maximum``, ``jnp.logical_and`` ...
are instances (calling one calls the elementwise function), with NumPy's ``reduce``,
``accumulate``, ``outer``, ``at`` (``inplace=False``) and ``reduceat``.  Known ufuncs use the
reduction, cumulative and scatter primitives; any other (``frompyfunc``'s) folds with
``lax.scan`` / ``lax.fori_loop`` in order, as JAX does."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from .._src.core.tracing import Tracer
from ._util import _aval
from .creation import asarray, astype, full, zeros
from .reductions import all as _all, any as _any, cumprod, cumsum, max as _max, min as _min
from .reductions import prod, sum as _sum
from .shapes import broadcast_arrays, expand_dims, moveaxis, ravel, reshape
from .sorting import where as _where
from . import ufuncs as _u

__all__ = ["ufunc", "add", "subtract", "multiply", "maximum", "minimum", "negative",
           "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
           "logical_xor", "logaddexp", "logaddexp2"]

_INPLACE_AT = ("Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like "
               "np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.\n"
               ">>> arr = jnp.add.at(arr, ind, val, inplace=False)\n")


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (operator.index(axis) % builtins.max(ndim, 1),)
    return tuple(sorted({operator.index(a) % ndim for a in axis}))


class ufunc:
    """A universal function: ``f(*args)`` elementwise with NumPy broadcasting, plus its
    reductions.  ``ufunc(func, nin, nout, name=..., identity=...)`` wraps an elementwise
    ``func``."""

    def __init__(self, func, /, nin: int, nout: int, *, name: str | None = None,
                 nargs: int | None = None, identity=None, call=None, reduce=None,
                 accumulate=None, at=None, reduceat=None):
        self.__name__ = name if name is not None else getattr(func, "__name__", "ufunc")
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else operator.index(nargs)
        self.identity = identity
        self._call = call if call is not None else func
        self._reduce, self._accumulate, self._at, self._reduceat = reduce, accumulate, at, \
            reduceat

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __hash__(self):
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout))

    def __eq__(self, other):
        return isinstance(other, ufunc) and (self._func, self.__name__, self.identity,
                                             self.nin, self.nout) == \
            (other._func, other.__name__, other.identity, other.nin, other.nout)

    def __call__(self, *args, out=None, where=None):
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional argument"
                            f"{'s' if self.nin != 1 else ''} but {len(args)} were given")
        return self._call(*args)

    # ------------------------------------------------------------------ reduce
    def _check_binary(self, what):
        if self.nin != 2:
            raise ValueError(f"{what} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{what} only supported for functions returning a single value")

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        """``a`` reduced with this ufunc over ``axis`` (None: all axes)."""
        self._check_binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        a = asarray(a)
        if self._reduce is not None and (where is None or self.identity is not None
                                         or initial is not None):
            return self._reduce(a, axis=axis, dtype=dtype, keepdims=keepdims,
                                initial=initial, where=where)
        if where is not None and self.identity is None and initial is None:
            raise ValueError(f"reduction operation {self.__name__} does not have an identity, "
                             f"so to use a where mask one has to specify 'initial'.")
        return self._reduce_via_scan(a, axis, dtype, keepdims, initial, where)

    def _reduce_via_scan(self, a, axis, dtype, keepdims, initial, where):
        if dtype is not None:
            a = astype(a, dtype)
        axes = _axes(axis, a.ndim)
        rest = [i for i in range(a.ndim) if i not in axes]
        n = int(np.prod([a.shape[i] for i in axes]))
        rest_shape = tuple(a.shape[i] for i in rest)
        xs = reshape(lax.transpose(a, axes + tuple(rest)), (n,) + rest_shape)
        mask = None
        if where is not None:
            m = lax.broadcast_in_dim(asarray(where, bool), a.shape, tuple(
                range(a.ndim - np.ndim(where), a.ndim))) if np.shape(where) != a.shape else \
                asarray(where, bool)
            mask = reshape(lax.transpose(m, axes + tuple(rest)), (n,) + rest_shape)
        if initial is None and self.identity is None and n == 0:
            raise ValueError(f"zero-size array to reduction operation {self.__name__} which "
                             f"has no identity")
        start = initial if initial is not None else self.identity
        if start is not None:
            carry = full(rest_shape, start, a.dtype)
            first = 0
        else:
            carry = xs[0]
            first = 1

        def step(c, x):
            if mask is None:
                return astype(self(c, x), a.dtype), None
            xv, mv = x
            return lax.select(mv, astype(self(c, xv), a.dtype), c), None

        seq = xs[first:] if mask is None else (xs[first:], mask[first:])
        if n - first > 0:
            carry, _ = lax.scan(step, carry, seq)
        if keepdims:
            carry = reshape(carry, tuple(1 if i in axes else d for i, d in enumerate(a.shape)))
        return carry

    # ------------------------------------------------------------------ accumulate
    def accumulate(self, a, axis: int = 0, dtype=None, out=None):
        """The running reduction of ``a`` along ``axis``."""
        self._check_binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        a = asarray(a)
        if a.ndim == 0:
            raise ValueError("accumulate on a scalar")
        axis = operator.index(axis) % a.ndim
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        if dtype is not None:
            a = astype(a, dtype)
        xs = moveaxis(a, axis, 0)
        if xs.shape[0] == 0:
            return a

        def step(c, x):
            y = astype(self(c, x), a.dtype)
            return y, y

        _, ys = lax.scan(step, xs[0], xs[1:])
        return moveaxis(lax.concatenate([expand_dims(xs[0], 0), ys], 0), 0, axis)

    # ------------------------------------------------------------------ outer, at, reduceat
    def outer(self, A, B, /):
        """``f(A[i..], B[j..])`` for every pair: shape ``A.shape + B.shape``."""
        if self.nin != 2:
            raise ValueError("outer only supported for binary ufuncs")
        A, B = asarray(A), asarray(B)
        return self(reshape(A, A.shape + (1,) * B.ndim), B)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """``a`` with ``f(a[indices], b)`` (``f(a[indices])`` for a unary ufunc) applied at
        every index, repeated indices applying again; only ``inplace=False``."""
        if inplace:
            raise NotImplementedError(_INPLACE_AT)
        a = asarray(a)
        if b is None and self.nin != 1:
            raise ValueError(f"{self.__name__}.at: the second operand b is required")
        if self._at is not None:
            return self._at(a, indices, b)
        return self._at_via_loop(a, indices, b)

    def _at_via_loop(self, a, indices, b):
        idx = indices if isinstance(indices, tuple) else (indices,)
        if not all(isinstance(i, (int, np.integer, np.ndarray, list, Tracer)) or
                   hasattr(i, "aval") for i in idx):
            # slices and the like select each element once: one application
            sel = a[indices]
            new = self(sel) if b is None else self(sel, b)
            return a.at[indices].set(astype(new, a.dtype))
        arrs = broadcast_arrays(*[asarray(i) for i in idx])
        flat = [ravel(i) for i in arrs]
        n = flat[0].shape[0] if flat else 0
        bb = None if b is None else ravel(lax.broadcast_in_dim(
            asarray(b, a.dtype), arrs[0].shape, tuple(
                range(arrs[0].ndim - np.ndim(b), arrs[0].ndim)))
            if np.shape(b) != arrs[0].shape else asarray(b, a.dtype))

        def body(k, acc):
            where = tuple(f[k] for f in flat)
            cur = acc[where]
            new = self(cur) if bb is None else self(cur, bb[k])
            return acc.at[where].set(astype(new, a.dtype))

        return lax.fori_loop(0, n, body, a) if n else a

    def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
        """Reductions over the slices ``a[indices[i]:indices[i+1]]`` along ``axis`` (a single
        element where ``indices[i] >= indices[i+1]``; the last runs to the end)."""
        self._check_binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        a = asarray(a)
        axis = operator.index(axis) % builtins.max(a.ndim, 1)
        if dtype is not None:
            a = astype(a, dtype)
        ind = asarray(indices)
        if ind.ndim != 1:
            raise ValueError("reduceat: indices must be one-dimensional")
        n = a.shape[axis]
        nxt = lax.concatenate([ind[1:], asarray([n], ind.dtype)], 0)
        end = _where(_u.less(ind, nxt), nxt, ind + 1)
        end = lax.concatenate([end[:-1], asarray([n], ind.dtype)], 0) if ind.shape[0] else end
        pos = lax.broadcasted_iota(ind.dtype, (ind.shape[0], n), 1)
        mask = (pos >= ind[:, None]) & (pos < end[:, None])          # (m, n)
        x = moveaxis(a, axis, 0)                                      # (n, rest...)
        rest = x.shape[1:]
        xb = lax.broadcast_in_dim(x, (ind.shape[0],) + x.shape, tuple(range(1, 1 + x.ndim)))
        mb = lax.broadcast_in_dim(mask, (ind.shape[0], n) + rest, (0, 1))
        out_ = self.reduce(xb, axis=1, where=mb, initial=_reduceat_identity(self, a.dtype))
        return moveaxis(out_, 0, axis)


def _reduceat_identity(uf, dt):
    if uf.identity is not None:
        return uf.identity
    if uf.__name__ in ("maximum", "minimum"):
        if dtypes.is_float(dt):
            return -np.inf if uf.__name__ == "maximum" else np.inf
        info = np.iinfo(dt)
        return info.min if uf.__name__ == "maximum" else info.max
    raise NotImplementedError(f"{uf.__name__}.reduceat: the ufunc has no identity")


# --------------------------------------------------------------------------- JAX's ufuncs

def _reducer(fn, bool_fn=None):
    def r(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        f = bool_fn if bool_fn is not None and a.dtype == np.bool_ else fn
        kw = {} if dtype is None else {"dtype": dtype}
        if where is not None:
            kw["where"] = where
        if initial is not None:
            kw["initial"] = initial
        return f(a, axis=axis, keepdims=keepdims, **kw)
    return r


def _bitwise_reducer(op, ident):
    def r(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        if dtype is not None:
            a = astype(a, dtype)
        if not (dtypes.is_int(a.dtype) or a.dtype == np.bool_):
            raise TypeError(f"bitwise reduction requires integer or bool input, got {a.dtype}")
        axes = _axes(axis, a.ndim)
        init = np.asarray(ident if a.dtype != np.bool_ else bool(ident & 1)).astype(a.dtype)
        if where is not None:
            a = _where(where, a, init)
        out = lax.reduce(a, init, op, axes)
        if initial is not None:
            out = op(out, asarray(initial, a.dtype))
        if keepdims:
            out = reshape(out, tuple(1 if i in axes else d for i, d in enumerate(a.shape)))
        return out
    return r


def _logaddexp_reducer(base2):
    def r(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
        a = asarray(a, dtype) if dtype is not None else asarray(a)
        a, = _u.promote_args("logaddexp.reduce", a, to_inexact=True)
        if base2:
            a = a * np.float32(np.log(2))
        neg = -np.inf
        if where is not None:
            a = _where(where, a, neg)
        m = _max(a, axis=axis, keepdims=True, initial=neg)
        m_safe = lax.stop_gradient(_where(_u.isfinite(m), m, 0))
        out = _u.log(_sum(_u.exp(a - m_safe), axis=axis, keepdims=True)) + m_safe
        if initial is not None:
            i0 = asarray(initial, a.dtype) * (np.float32(np.log(2)) if base2 else 1)
            out = _u.logaddexp(out, i0)
        if not keepdims:
            out = reshape(out, tuple(d for i, d in enumerate(out.shape)
                                     if i not in _axes(axis, a.ndim)))
        return out / np.float32(np.log(2)) if base2 else out
    return r


def _scatter_at(method, negate=False):
    def at(a, indices, b):
        b = asarray(b)
        if negate:
            b = -b
        return getattr(a.at[indices], method)(astype(b, a.dtype))
    return at


add = ufunc(_u.add, 2, 1, name="add", identity=0,
            reduce=_reducer(_sum, _any), accumulate=lambda a, axis, dtype: cumsum(
                a, axis=axis, dtype=dtype), at=_scatter_at("add"))
subtract = ufunc(_u.subtract, 2, 1, name="subtract", at=_scatter_at("add", negate=True))
multiply = ufunc(_u.multiply, 2, 1, name="multiply", identity=1,
                 reduce=_reducer(prod, _all), accumulate=lambda a, axis, dtype: cumprod(
                     a, axis=axis, dtype=dtype), at=_scatter_at("multiply"))
maximum = ufunc(_u.maximum, 2, 1, name="maximum", reduce=_reducer(_max),
                accumulate=lambda a, axis, dtype: lax.cummax(
                    astype(a, dtype) if dtype is not None else a, axis=axis),
                at=_scatter_at("max"))
minimum = ufunc(_u.minimum, 2, 1, name="minimum", reduce=_reducer(_min),
                accumulate=lambda a, axis, dtype: lax.cummin(
                    astype(a, dtype) if dtype is not None else a, axis=axis),
                at=_scatter_at("min"))
negative = ufunc(_u.negative, 1, 1, name="negative")
bitwise_and = ufunc(_u.bitwise_and, 2, 1, name="bitwise_and", identity=-1,
                    reduce=_bitwise_reducer(lax.bitwise_and, -1))
bitwise_or = ufunc(_u.bitwise_or, 2, 1, name="bitwise_or", identity=0,
                   reduce=_bitwise_reducer(lax.bitwise_or, 0))
bitwise_xor = ufunc(_u.bitwise_xor, 2, 1, name="bitwise_xor", identity=0,
                    reduce=_bitwise_reducer(lax.bitwise_xor, 0))
logical_and = ufunc(_u.logical_and, 2, 1, name="logical_and", identity=True,
                    reduce=_reducer(_all))
logical_or = ufunc(_u.logical_or, 2, 1, name="logical_or", identity=False,
                   reduce=_reducer(_any))
logical_xor = ufunc(_u.logical_xor, 2, 1, name="logical_xor", identity=False)
logaddexp = ufunc(_u.logaddexp, 2, 1, name="logaddexp", identity=-np.inf,
                  reduce=_logaddexp_reducer(False))
logaddexp2 = ufunc(_u.logaddexp2, 2, 1, name="logaddexp2", identity=-np.inf,
                   reduce=_logaddexp_reducer(True))

del zeros, _aval
