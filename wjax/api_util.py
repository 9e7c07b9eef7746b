"""``jax.api_util``: the helpers that library transformations (flax's lifted ``scan``) use to
trace a function of pytrees: ``debug_info``, ``flatten_fun``/``flatten_fun_nokwargs`` over
``jax.extend.linear_util`` wrappers, and ``shaped_abstractify``."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .core.ir import abstractify as shaped_abstractify
from .extend.linear_util import Store, WrappedFun
from .tree_util import tree_flatten, tree_unflatten

__all__ = ["DebugInfo", "debug_info", "flatten_fun", "flatten_fun_nokwargs",
           "shaped_abstractify"]


class DebugInfo(NamedTuple):
    """What a trace was made for, and where its function was written (JAX's fields)."""
    traced_for: str
    func_src_info: str | None
    arg_names: tuple[str, ...] | None
    result_paths: tuple[str, ...] | None = None

    @property
    def func_name(self) -> str:
        return (self.func_src_info or "<unknown>").split(" ")[0]


def debug_info(traced_for: str, fun: Callable, args: tuple, kwargs: dict, *,
               static_argnums: tuple = (), static_argnames: tuple = (),
               result_paths_thunk: Any = None, sourceinfo: str | None = None,
               signature: Any = None) -> DebugInfo:
    code = getattr(getattr(fun, "func", fun), "__code__", None)
    name = getattr(fun, "__name__", None) or getattr(getattr(fun, "func", None), "__name__",
                                                      "<unnamed>")
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    return DebugInfo(traced_for, sourceinfo or f"{name}{where}", None, None)


def flatten_fun_nokwargs(f: WrappedFun, in_tree) -> tuple[WrappedFun, Callable]:
    """``f`` of the pytree ``in_tree`` (a tuple of positional arguments) as a function of its
    flat leaves returning flat leaves; the second result gives the output's treedef once the
    function has run."""
    store = Store()

    def flat(*leaves):
        args = tree_unflatten(in_tree, list(leaves))
        out = f.call_wrapped(*args)
        out_leaves, out_tree = tree_flatten(out)
        store.store(out_tree)
        return out_leaves
    return WrappedFun(flat, debug_info=getattr(f, "debug_info", None)), store


def flatten_fun(f: WrappedFun, in_tree) -> tuple[WrappedFun, Callable]:
    """As :func:`flatten_fun_nokwargs`, for ``in_tree`` the tree of ``(args, kwargs)``."""
    store = Store()

    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, list(leaves))
        out = f.call_wrapped(*args, **kwargs)
        out_leaves, out_tree = tree_flatten(out)
        store.store(out_tree)
        return out_leaves
    return WrappedFun(flat, debug_info=getattr(f, "debug_info", None)), store
