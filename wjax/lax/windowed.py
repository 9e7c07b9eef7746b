"""``lax.reduce_window``: a reduction over sliding windows (max/avg pooling, windowed sums).

It is a composition: the operand is dilated and padded with the init value (``pad``), and
every window offset is one strided ``slice`` of it; the slices are combined with
``computation``.  Slices are views, so the whole reduction fuses into one elementwise kernel
reading each input element once per window position, and its gradient comes from the rules of
``pad``, ``slice`` and the computation (for ``max``: the selected element, as in JAX).  Any
associative ``computation`` written with lax/jnp operations works, on pytrees of operands as
in JAX; windows are meant to be small (pooling): the kernel reads one slice per window element.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

import numpy as np

from .._src.core import ops, tree_util
from .._src.core.ir import raise_to_shaped
from .._src.core.tracing import Tracer
from .._src.prims import conv as _C

__all__ = ["reduce_window", "reduce_window_shape_tuple"]


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple:
    """The output shape of ``reduce_window`` (``padding`` as (low, high) pairs)."""
    nd = len(operand_shape)
    bd = (1,) * nd if base_dilation is None else tuple(base_dilation)
    wdl = (1,) * nd if window_dilation is None else tuple(window_dilation)
    out = []
    for d, w, s, (lo, hi), b, r in zip(operand_shape, window_dimensions, window_strides,
                                       padding, bd, wdl):
        full = (0 if d == 0 else (d - 1) * b + 1) + lo + hi
        out.append(max(0, (full - ((w - 1) * r + 1)) // s + 1))
    return tuple(out)


def _tuple(v, nd: int, name: str, default: int) -> tuple:
    v = (default,) * nd if v is None else tuple(int(a) for a in v)
    if len(v) != nd:
        raise TypeError(f"reduce_window: {name} must have one entry per operand dimension "
                        f"({nd}), got {v}")
    if any(a < 1 for a in v):
        raise ValueError(f"reduce_window: {name} must be positive, got {v}")
    return v


def _init_like(init, dtype):
    if isinstance(init, Tracer) or hasattr(init, "aval"):
        return ops.convert_element_type(init, dtype)
    return np.asarray(init, dtype)


def reduce_window(operand: Any, init_value: Any, computation: Callable,
                  window_dimensions: Sequence[int], window_strides: Sequence[int],
                  padding: str | Sequence[tuple[int, int]],
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduces each window of ``operand`` (a pytree of same-shaped arrays) with
    ``computation``, starting from ``init_value`` (which also fills the padding)."""
    xs, tree = tree_util.tree_flatten(operand)
    inits, init_tree = tree_util.tree_flatten(init_value)
    if tree != init_tree:
        raise TypeError("reduce_window: operand and init_value must have the same structure, "
                        f"got {tree} and {init_tree}")
    avals = [raise_to_shaped(x) for x in xs]
    shape = avals[0].shape
    if any(a.shape != shape for a in avals):
        raise TypeError(f"reduce_window: operands must have one shape, got "
                        f"{[a.shape for a in avals]}")
    nd = len(shape)
    wd = _tuple(window_dimensions, nd, "window_dimensions", 1)
    ws = _tuple(window_strides, nd, "window_strides", 1)
    bd = _tuple(base_dilation, nd, "base_dilation", 1)
    wdl = _tuple(window_dilation, nd, "window_dilation", 1)
    dilated = tuple(0 if s == 0 else (s - 1) * b + 1 for s, b in zip(shape, bd))
    eff_window = tuple((w - 1) * d + 1 for w, d in zip(wd, wdl))
    if isinstance(padding, str):
        pads = [tuple(p) for p in _C.padtype_to_pads(dilated, eff_window, ws, padding)]
    else:
        pads = [tuple(int(v) for v in p) for p in padding]
        if len(pads) != nd:
            raise ValueError(f"reduce_window: padding must have {nd} (low, high) pairs, "
                             f"got {padding}")
    inits = [_init_like(i, a.dtype) for i, a in zip(inits, avals)]
    padded = [ops.pad(x, i, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, bd)])
              for x, i in zip(xs, inits)]
    full = [d + lo + hi for d, (lo, hi) in zip(dilated, pads)]
    out_shape = tuple(max(0, (f - e) // s + 1) for f, e, s in zip(full, eff_window, ws))

    def piece(offset):
        start = [o * d for o, d in zip(offset, wdl)]
        limit = [st + (n - 1) * s + 1 if n else st for st, n, s in zip(start, out_shape, ws)]
        return [ops.slice(p, start, limit, ws) for p in padded]

    def combine(a, b):
        out = computation(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"reduce_window: computation returned structure {out_tree}, "
                            f"expected {tree}")
        return leaves

    level = [[ops.broadcast_in_dim(i, out_shape, ()) if np.ndim(i) == 0 else i
              for i in inits]]
    level += [piece(off) for off in itertools.product(*[range(w) for w in wd])]
    while len(level) > 1:           # a balanced tree of combines (short dependency chains)
        nxt = [combine(level[k], level[k + 1]) for k in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return tree_util.tree_unflatten(tree, level[0])
