"""Making arrays: ``array``/``asarray``/``astype``, ``zeros``/``ones``/``full``/``empty`` and their
``*_like`` forms, ``arange``, ``eye``/``identity``/``tri``/``tril``/``triu`` and index helpers, and
the argument conversion (``_arraylike``) the modules above build on.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import lax
from .._src.array import asarray_device
from .._src.core import dtypes
from .._src.core.ir import WeakScalar
from .._src.core.tracing import ConcretizationTypeError, Tracer
from ._util import _aval, _check_arg, _const, _f32, _is_array, _select, _wrap_result, result_type


def _arraylike(name, x, pos=0):
    """``x`` as an array, after JAX's check that it is array-like."""
    _check_arg(name, x, pos)
    return asarray(x)


def _has_none(obj) -> bool:
    if obj is None:
        return True
    return isinstance(obj, (list, tuple)) and builtins.any(_has_none(o) for o in obj)


def _host_array(object, dtype=None) -> np.ndarray:
    """``object`` as a NumPy array, with JAX's errors: a None anywhere in nested sequences is
    a ValueError, and a non-numeric dtype (strings, objects) a TypeError."""
    if _has_none(object):
        raise ValueError("None is not a valid value for jnp.array")
    host = np.asarray(object)
    if host.dtype.kind in "OSUVMm" and host.dtype != dtypes.bfloat16:
        raise TypeError(f"Value {object!r} with dtype {host.dtype} is not a valid JAX array "
                        f"type. Only arrays of numeric types are supported by JAX.")
    return host


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None,
          out_sharding=None):
    if object is None:
        raise ValueError("None is not a valid value for jnp.array")
    if _is_array(object):
        out = object if dtype is None else astype(object, dtype)
    else:
        if isinstance(object, (list, tuple)) and builtins.any(_is_array(o) for o in _flat(object)):
            out = (
                _stack_rows([array(o) for o in object])
                if object
                else asarray_device(np.zeros((0,), np.float32))
            )
            if dtype is not None:
                out = astype(out, dtype)
        else:
            if isinstance(object, int) and not isinstance(object, builtins.bool):
                if not -2**31 <= object < 2**31 and dtype is None:
                    raise OverflowError(f"Python int {object} too large to convert to int32")
            if dtype is not None:
                dt = dtypes.check_supported(dtype, warn=True)
                host = _host_array(object)
                if not isinstance(object, np.ndarray):
                    # as JAX: np.asarray(object, dtype) (Python ints out of range: OverflowError)
                    host = np.asarray(object, dtype=dt)
                out = asarray_device(host.astype(dt), dtype=dt)
            else:
                host = _host_array(object)
                dt = (
                    dtypes.canonicalize_dtype(host.dtype)
                    if isinstance(object, np.ndarray) or host.ndim
                    else None
                )
                if isinstance(object, (builtins.bool, int, float, complex)) and not isinstance(
                    object, np.generic
                ):
                    out = asarray_device(object)   # weak, as JAX's jnp.array(2.0)
                else:
                    if host.dtype == np.float64 and not isinstance(
                        object, (np.ndarray, np.generic)
                    ):
                        host = host.astype(np.float32)
                    elif host.dtype == np.complex128 and not isinstance(
                        object, (np.ndarray, np.generic)
                    ):
                        host = host.astype(np.complex64)
                    elif host.dtype == np.int64 and not isinstance(
                        object, (np.ndarray, np.generic)
                    ):
                        if host.size and (host.max() >= 2**31 or host.min() < -2**31):
                            raise OverflowError("Python int too large to convert to int32")
                        host = host.astype(np.int32)
                    out = asarray_device(host)
    if ndmin > out.ndim:
        out = lax.reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def _flat(obj):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flat(o)
    else:
        yield obj


def asarray(a, dtype=None, order=None, copy=None, *, device=None, out_sharding=None):
    if _is_array(a) and dtype is None:
        return a
    return array(a, dtype=dtype, copy=False)


def _dt(dtype, default=np.float32):
    return dtypes.check_supported(default if dtype is None else dtype)


def _shape(shape):
    if isinstance(shape, Tracer):
        shape = (shape,)
    if isinstance(shape, (int, np.integer)) or (
        hasattr(shape, "__index__") and not isinstance(shape, (tuple, list))
    ):
        shape = (operator.index(shape),)
    out = []
    for s in shape:
        if isinstance(s, Tracer) and s.to_concrete_value() is None:
            raise TypeError(
                f"Shapes must be 1D sequences of concrete values of integer type, "
                f"got {tuple(shape)}. "
                "If using `jit`, try using `static_argnums` or applying `jit` to smaller "
                "subfunctions."
            )
        out.append(operator.index(s))
    if builtins.any(s < 0 for s in out):   # JAX's class and words (broadcast_in_dim's rule)
        raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                        f"{tuple(out)}.")
    return tuple(out)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
    shape = _shape(shape)
    if _is_array(fill_value):
        v = fill_value if dtype is None else astype(fill_value, dtype)
        return broadcast_to(v, shape)
    if dtype is not None:
        return _filled(shape, fill_value, dtypes.check_supported(dtype), False)
    dt, weak = dtypes.result_type(fill_value, return_weak_type_flag=True)
    return _filled(shape, fill_value, dt, weak)   # a Python scalar fill is weak, as in JAX


def _filled(shape, fill_value, dt, weak):
    v = np.asarray(fill_value, dt)
    return _wrap_result(lax.broadcast_in_dim(WeakScalar(v) if weak else v, shape, ()))


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
    return full(shape, 0, _dt(dtype))


def ones(shape, dtype=None, *, device=None, out_sharding=None):
    return full(shape, 1, _dt(dtype))


def empty(shape, dtype=None, *, device=None, out_sharding=None):
    return zeros(shape, dtype)


def _like(a, dtype, shape):
    """(dtype, shape, weak) of a ``*_like`` result: ``a``'s weak type stays without a dtype."""
    return (_dt(dtype, _aval(a).dtype), _aval(a).shape if shape is None else shape,
            dtype is None and _aval(a).weak_type)


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    return _filled(*_swap(_like(a, dtype, shape), 0))


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    return _filled(*_swap(_like(a, dtype, shape), 1))


def _swap(like, v):
    dt, sh, weak = like
    return sh, v, dt, weak


def empty_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
    dt, sh, weak = _like(a, dtype, shape)
    if _is_array(fill_value):
        return full(sh, fill_value, dt)
    return _filled(sh, fill_value, dt, weak)


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
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
    out = lax.add(
        lax.mul(i, WeakScalar(np.asarray(step, np.float32))),
        WeakScalar(np.asarray(start, np.float32)),
    )
    return out if dt == np.float32 else lax.convert_element_type(out, dt)


def concrete_error_for(name, v):
    return ConcretizationTypeError(
        f"jax.numpy.{name} requires concrete (non-traced) arguments, got {v!r}. Use "
        "static_argnums for values that determine shapes.")


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


def eye(N, M=None, k=0, dtype=None, *, device=None, out_sharding=None):
    N, M = _dim("eye", N, M)
    k = operator.index(k)
    r = lax.broadcasted_iota(np.int32, (N, M), 0)
    c = lax.broadcasted_iota(np.int32, (N, M), 1)
    return astype(lax.eq(c - r, k), _dt(dtype))


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    N, M = (
        operator.index(N),
        (None if M is None else operator.index(M)),
    )  # negatives: iota's TypeError
    M = N if M is None else M
    k = operator.index(k)
    r = lax.broadcasted_iota(np.int32, (N, M), 0)
    c = lax.broadcasted_iota(np.int32, (N, M), 1)
    return astype(lax.le(c, r + k), _dt(dtype))


def astype(x, dtype, copy=False, device=None):
    dt = dtypes.check_supported(dtype)
    x = _arraylike("astype", x)
    if x.dtype == dt and not x.weak_type:
        return x
    if dtypes.is_complex(x.dtype) and (dtypes.is_int(dt) or dtypes.is_float(dt)):
        import warnings
        warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. Please "
                      "first use jnp.real or jnp.imag to take the real/imaginary component of "
                      "your input.", DeprecationWarning, stacklevel=dtypes._user_stacklevel())
    elif dtypes.is_complex(x.dtype) and dt == np.bool_:
        return lax.ne(x, lax._const(x, 0))     # as JAX: the lax conversion takes the real part
    return lax.convert_element_type(x, dt, warn_on_complex_to_real_cast=False)


def broadcast_to(array, shape, *, out_sharding=None):
    a = _arraylike("broadcast_to", array)
    shape = _shape(shape)
    try:
        out = np.broadcast_shapes(a.shape, shape)
    except ValueError:
        out = None
    if out != shape:
        raise ValueError(
            f"Incompatible shapes for broadcasting: {a.shape} and requested shape {shape}"
        )
    if a.shape == shape:
        return a
    return lax.broadcast_in_dim(a, shape, tuple(range(len(shape) - a.ndim, len(shape))))


def _promote_dtypes(*xs, inexact=False):
    """Converts to the common dtype without broadcasting shapes."""
    xs = [asarray(x) for x in xs]
    dt = result_type(*xs)
    if inexact and not dtypes.is_inexact(dt):
        dt = _f32
    return [astype(x, dt) if x.dtype != dt else x for x in xs]


def _isnan(x):
    return lax.ne(x, x) if dtypes.is_inexact(_aval(x).dtype) else \
        full_like(x, False, dtype=np.bool_)


def _tri_mask(shape, k, lower):
    n, m = shape[-2], shape[-1]
    r = lax.broadcasted_iota(np.int32, (n, m), 0)
    c = lax.broadcasted_iota(np.int32, (n, m), 1)
    k = WeakScalar(np.asarray(int(k), np.int32))
    return lax.le(c, lax.add(r, k)) if lower else lax.ge(c, lax.add(r, k))


def _tri_part(name, m, k, lower):
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    mask = lax.broadcast_in_dim(_tri_mask(m.shape, k, lower), m.shape, (m.ndim - 2, m.ndim - 1))
    return lax.select(mask, m, zeros_like(m))


def tril(m, k=0):
    return _tri_part("tril", m, k, True)


def triu(m, k=0):
    return _tri_part("triu", m, k, False)


def tril_indices(n, k=0, m=None):
    r, c = np.tril_indices(n, k, m)
    return asarray(r.astype(np.int32)), asarray(c.astype(np.int32))


def triu_indices(n, k=0, m=None):
    r, c = np.triu_indices(n, k, m)
    return asarray(r.astype(np.int32)), asarray(c.astype(np.int32))


def diag_indices(n, ndim=2):
    return tuple(arange(n) for _ in range(ndim))


def unravel_index(indices, shape):
    idx = asarray(indices)
    shape = tuple(int(s) for s in shape)
    total = int(np.prod(shape))
    idx = _select(lax.lt(idx, _const(idx, 0)), lax.add(idx, _const(idx, total)), idx)
    out = []
    for s in reversed(shape):
        out.append(lax.rem(idx, _const(idx, s)) if s else zeros_like(idx))
        idx = lax.div(idx, _const(idx, s)) if s else idx
    return tuple(reversed(out))


def _stack_rows(rows):
    """``stack`` of ``array``'s nested rows (axis 0), in their promoted dtype."""
    if len({r.shape for r in rows}) > 1:
        raise ValueError("All input arrays must have the same shape, got "
                         + ", ".join(str(r.shape) for r in rows))
    dt = dtypes.result_type(*rows)
    # each row in the result's dtype, strongly typed (JAX's jaxprs convert even weak int32
    # scalars to int32), a leading axis, one concatenate
    return lax.concatenate([lax.expand_dims(lax.convert_element_type(r, dt, weak_type=False),
                                            (0,)) for r in rows], 0)


def copy(a, order=None):
    """A copy of ``a`` (arrays are immutable, so this is ``array(a, copy=True)``)."""
    return array(a, copy=True)


__all__ = [
    "copy",
    "array", "asarray", "full", "zeros", "ones", "empty", "zeros_like", "ones_like",
    "empty_like", "full_like", "arange", "concrete_error_for", "eye", "identity", "tri",
    "astype", "broadcast_to", "tril", "triu", "tril_indices", "triu_indices", "diag_indices",
    "unravel_index",
]
