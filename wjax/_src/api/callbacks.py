"""Host callbacks from traced code: ``jax.debug.print``, ``jax.debug.callback`` and
``jax.pure_callback`` (primitives in ``wjax/_src/prims/callback.py``)."""
from __future__ import annotations

import logging
import string
from typing import Any, Callable

import numpy as np

from ..array import asarray_device
from ..core import tree_util
from ..core.ir import ShapedArray
from ..core.tracing import Tracer
from ..prims.callback import HostCallback, debug_callback_p, io_callback_p, pure_callback_p


def _as_arrays(leaves):
    """Host values as Arrays (as ``jnp.asarray``: Arrays and tracers pass through)."""
    return [x if isinstance(x, Tracer) else asarray_device(x) for x in leaves]


def debug_callback(callback: Callable[..., None], *args: Any, ordered: bool = False,
                   partitioned: bool = False, **kwargs: Any) -> None:
    """Calls ``callback(*args, **kwargs)`` with the arguments' values (as arrays) when the
    program runs -- under ``jit``, ``vmap`` (once per example) and ``grad`` (primal values)."""
    leaves, tree = tree_util.tree_flatten((args, kwargs))

    def on_host(*values):
        a, kw = tree_util.tree_unflatten(tree, _as_arrays(values))
        callback(*a, **kw)
        return ()
    name = getattr(callback, "__name__", "callback")
    debug_callback_p.bind(*_as_arrays(leaves), callback=HostCallback(on_host, name))


def debug_print(fmt: str, *args: Any, ordered: bool = False, partitioned: bool = False,
                skip_format_check: bool = False, **kwargs: Any) -> None:
    """``print(fmt.format(*args, **kwargs))`` with the arguments' runtime values."""
    if not skip_format_check:
        _check_format(fmt, args, kwargs)

    def show(*a, **kw):
        print(fmt.format(*[np.asarray(x) for x in a],
                         **{k: np.asarray(v) for k, v in kw.items()}))
    show.__name__ = "debug_print"
    debug_callback(show, *args, **kwargs)


_debug_logger = logging.getLogger("jax._src.debugging")   # JAX's name: its logging setup applies


def debug_log(fmt: str | None = None, *args: Any, ordered: bool = False,
              partitioned: bool = False, skip_format_check: bool = False,
              **kwargs: Any):
    """As ``debug_print``, the message going to Python logging (INFO, logger
    ``jax._src.debugging``) instead of stdout.  ``debug_log(ordered=...)`` with no format
    returns the logging function (JAX's two-call form)."""
    if fmt is None:
        return lambda f, *a, **kw: debug_log(f, *a, ordered=ordered, partitioned=partitioned,
                                             skip_format_check=skip_format_check, **kw)
    if not skip_format_check:
        _check_format(fmt, args, kwargs)

    def log(*a, **kw):
        _debug_logger.info(fmt.format(*[np.asarray(x) for x in a],
                                      **{k: np.asarray(v) for k, v in kw.items()}))
    log.__name__ = "debug_log"
    debug_callback(log, *args, **kwargs)
    return None


def _check_format(fmt, args, kwargs):
    """JAX's check: every argument is used by the format string."""
    used_pos, used_kw, auto = set(), set(), 0
    for _, field, _, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        head = field.split(".")[0].split("[")[0]
        if head == "":
            used_pos.add(auto)
            auto += 1
        elif head.isdigit():
            used_pos.add(int(head))
        else:
            used_kw.add(head)
    if len(used_pos) != len(args) or set(kwargs) - used_kw:
        raise ValueError("The format string had to use all the arguments: "
                         f"{fmt!r} with {len(args)} positional and {sorted(kwargs)} keyword "
                         "arguments")


def pure_callback(callback: Callable, result_shape_dtypes: Any, *args: Any, sharding=None,
                  vmap_method: str | None = None, **kwargs: Any) -> Any:
    """``callback(*args, **kwargs)`` computed by Python on the host, its results shaped as
    ``result_shape_dtypes`` (a pytree of ``ShapeDtypeStruct``)."""
    return _host_call(pure_callback_p, callback, result_shape_dtypes, args, kwargs,
                      vmap_method=vmap_method)


def io_callback(callback: Callable, result_shape_dtypes: Any, *args: Any, sharding=None,
                ordered: bool = False, **kwargs: Any) -> Any:
    """Like ``pure_callback`` but with side effects: never removed or merged, called once per
    execution (per example under ``vmap``)."""
    return _host_call(io_callback_p, callback, result_shape_dtypes, args, kwargs,
                      ordered=bool(ordered))


def _host_call(prim, callback, result_shape_dtypes, args, kwargs, **params):
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    res_leaves, res_tree = tree_util.tree_flatten(result_shape_dtypes)
    result_avals = tuple(ShapedArray(r.shape, r.dtype) for r in res_leaves)

    def on_host(*values):
        a, kw = tree_util.tree_unflatten(tree, list(values))
        out = callback(*a, **kw)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != res_tree:
            raise TypeError(f"Callback func {callback} should have returned a result with "
                            f"pytree {res_tree} but returned {out_tree}")
        return [np.asarray(o) for o in out_leaves]
    name = getattr(callback, "__name__", "callback")
    outs = prim.bind(*_as_arrays(leaves), callback=HostCallback(on_host, name),
                     result_avals=result_avals, **params)
    return tree_util.tree_unflatten(res_tree, list(outs))
