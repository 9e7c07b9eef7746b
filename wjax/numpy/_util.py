"""Helpers every jax.numpy module uses: argument checks, JAX's promotion of arguments
(``promote_args``), shape broadcasting, and the dtype queries (``result_type``).
"""
from __future__ import annotations

import builtins
import warnings

import numpy as np

from .. import lax
from .._src.array import Array, asarray_device
from .._src.core import dtypes
from .._src.core.config import config as _config
from .._src.core.ir import WeakScalar, raise_to_shaped
from .._src.core.refs import RefCell
from .._src.core.tracing import ConcretizationTypeError, Tracer


def result_type(*args):
    return dtypes.result_type(*args)


def _is_array(x) -> builtins.bool:
    return isinstance(x, (Array, Tracer))


def _check_arg(name, x, pos=0):
    """JAX's ``check_arraylike``: jnp functions take arrays and scalars, not lists or tuples
    (which would be converted silently on every call) nor strings or None."""
    if isinstance(x, (list, tuple, str, bytes, RefCell)) or x is None:
        raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(x)} at "
                        f"position {pos}.")


_aval = raise_to_shaped


def _to_operand(x, dt, weak):
    """``x`` converted to dtype ``dt`` (weakly typed if ``weak``)."""
    if type(x) is Array:
        a = x.aval
        if a.dtype == dt and a.weak_type == weak:
            return x
        return lax.convert_element_type(x, dt, weak_type=weak)
    if isinstance(x, (builtins.bool, int, float, complex)) and not isinstance(x, np.generic):
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
    first = tuple(shapes[0]) if shapes else ()
    if all(tuple(s) == first or not s for s in shapes[1:]):
        if first or all(not s for s in shapes):
            return first          # equal shapes, and scalars: no NumPy call
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


_RANK_DOC = "https://docs.jax.dev/en/latest/rank_promotion_warning.html"


def _check_rank_promotion(name, shapes) -> None:
    """``jax_numpy_rank_promotion``: implicit rank promotion of non-scalar operands is allowed,
    warned about, or refused (ValueError), as JAX."""
    mode = _config.jax_numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if len(s)}) < 2:
        return
    shapes_str = " ".join(str(tuple(s)) for s in shapes)
    if mode == "raise":
        raise ValueError(f"Operands could not be broadcast together for {name} on shapes "
                         f"{shapes_str} and with the config option "
                         f"jax_numpy_rank_promotion='raise'. For more information, see "
                         f"{_RANK_DOC}.")
    warnings.warn(f"Following NumPy automatic rank promotion for {name} on shapes {shapes_str}. "
                  f"Set the jax_numpy_rank_promotion config option to 'allow' to disable this "
                  f"warning; for more information, see {_RANK_DOC}.", stacklevel=4)


# argument types ``_check_arg`` always accepts (exact types: no subclass is looked at here)
_PLAIN_ARGS = frozenset({Array, builtins.bool, int, float, complex})


def promote_args(name, *args, to_float=False, to_inexact=False):
    """JAX's promotion of ufunc arguments, then rank/shape broadcasting."""
    for i, x in enumerate(args):
        if type(x) not in _PLAIN_ARGS:
            _check_arg(name, x, i)
    dt, weak = dtypes.result_type(*args, return_weak_type_flag=True)
    if (to_float or to_inexact) and not dtypes.is_inexact(dt):
        dt = np.dtype(np.float32)
    ops = [_to_operand(x, dt, weak) for x in args]
    avals = [_aval(o) for o in ops]
    shapes = [a.shape for a in avals]
    # the common case: every operand of one shape, or a scalar
    shape = ()
    for s in shapes:
        if s:
            if not shape:
                shape = s
            elif s != shape:
                shape = None
                break
    if shape is not None:
        return ops          # no rank promotion, nothing to broadcast
    try:
        shape = broadcast_shapes(*shapes)
    except ValueError:
        if len({len(s) for s in shapes if s}) > 1:   # as JAX: ranks differ -> broadcast_shapes
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None
        # equal ranks reach the lax op, whose shape rule reports it
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        + ", ".join(str(s) for s in shapes) + ".") from None
    _check_rank_promotion(name, shapes)
    # rank-0 operands stay scalars: elementwise primitives broadcast them (``mul a 2.0``)
    return [_broadcast_to_shape(o, shape) if 0 < len(s) and s != shape else o
            for o, s in zip(ops, shapes)]


def _wrap_result(x):
    if isinstance(x, WeakScalar):
        return asarray_device(x.val, weak_type=True)
    if isinstance(x, np.ndarray):
        return asarray_device(x)
    return x


_int = np.dtype(np.int32)


_f32 = np.dtype(np.float32)


def _const(x, v):
    """``v`` in ``x``'s dtype (weak only when ``x`` is a weak scalar, as JAX's ``lax._const``)."""
    return lax._const(x, v)


def _is_float(x) -> bool:
    return dtypes.is_float(_aval(x).dtype)


def _inexact(name, *args):
    return promote_args(name, *args, to_inexact=True)


def _is_complex(x) -> bool:
    return dtypes.is_complex(_aval(x).dtype)


def _no_complex(name, *xs, error=TypeError, msg=None):
    """JAX's refusal of complex operands where an operation has no complex meaning."""
    if any(_is_complex(x) for x in xs):
        raise error(msg or f"{name} does not support complex-valued inputs")


def _concrete(x, what):
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is not None:
            return v
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: {what}. "
            "The size of the result depends on values; pass a static size (size=/length=) to use "
            "this function under jit.")
    return np.asarray(x)


def _select(c, x, y):
    """where with already-promoted, equal-shape operands (scalars broadcast)."""
    return lax.select(c, x, y)


__all__ = [
    "result_type", "broadcast_shapes", "promote_args",
]
