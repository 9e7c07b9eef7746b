"""``jax.interpreters.batching``: vmap rules of primitives, as JAX names them.

``primitive_batchers[p] = rule`` with ``rule(args, dims, **params) -> (out, out_dim)`` (a
dim is None for an operand shared by all examples); the older
``axis_primitive_batchers[p] = rule(axis_size, axis_name, trace_type, args, dims, **params)``
and ``fancy_primitive_batchers[p] = rule(axis_data, args, dims, **params)`` receive the axis
being vmapped.  wjax's vmap is a rewrite of jaxprs (``wjax/_src/transforms/vmap.py``) calling
these same rules."""
from __future__ import annotations

from .._src.transforms import batching as _b
from .._src.transforms.batching import bdim_at_front, move_batch_axis
from .._src.transforms.vmap import AxisData, current_axis
from ._rules import RuleTable

__all__ = ["AxisData", "axis_primitive_batchers", "bdim_at_front", "broadcast",
           "defbroadcasting", "defreducer", "defvectorized", "fancy_primitive_batchers",
           "moveaxis", "primitive_batchers"]


def _axis(args, dims) -> AxisData:
    ax = current_axis()
    return ax if ax is not None else AxisData(None, _b.axis_size(args, dims))


def _with_axis_data(prim, rule):
    return lambda args, dims, **params: rule(_axis(args, dims), args, dims, **params)


def _with_axis_args(prim, rule):
    def batch(args, dims, **params):
        ax = _axis(args, dims)
        return rule(ax.size, ax.name, None, args, dims, **params)
    return batch


primitive_batchers = RuleTable("batch")
fancy_primitive_batchers = RuleTable("batch", _with_axis_data)
axis_primitive_batchers = RuleTable("batch", _with_axis_args)


def defvectorized(prim) -> None:
    _b.defvectorized(prim)


def defbroadcasting(prim) -> None:
    _b.defbroadcasting(prim)


def defreducer(prim, ident=None) -> None:
    _b.defreducer(prim)


def moveaxis(x, src: int, dst: int):
    """``x``'s axis ``src`` moved to ``dst``."""
    return _b.move_batch_axis(x, src, dst, None)


def broadcast(x, size: int, axis: int):
    """``x`` with a new axis of length ``size`` at ``axis``."""
    return move_batch_axis(x, None, axis, size)
