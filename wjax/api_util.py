"""``jax.api_util``: the helpers libraries use to build transformations (flattening
functions over pytrees, partial application of static arguments, abstract values)."""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

from ._src.core import tree_util
from ._src.core.ir import ShapedArray, abstractify
from .extend.linear_util import Store, WrappedFun

__all__ = ["DebugInfo", "argnums_partial", "debug_info", "donation_vector", "flatten_axes",
           "flatten_fun", "flatten_fun_nokwargs", "rebase_donate_argnums", "safe_map",
           "shaped_abstractify"]


def shaped_abstractify(x) -> ShapedArray:
    """The abstract value (shape, dtype, weak type) of an array, tracer or scalar."""
    return abstractify(x)


def safe_map(f, *args):
    """``map`` that insists every argument has the same length."""
    args = list(map(list, args))
    n = len(args[0])
    for arg in args[1:]:
        if len(arg) != n:
            raise ValueError(f"length mismatch: {list(map(len, args))}")
    return list(map(f, *args))


def _as_wrapped(fun) -> WrappedFun:
    return fun if isinstance(fun, WrappedFun) else WrappedFun(fun)


def flatten_fun(fun, in_tree):
    """``(flat_fun, out_tree)``: ``flat_fun(*leaves)`` unflattens ``leaves`` as ``in_tree`` (an
    ``(args, kwargs)`` pair), calls ``fun`` and returns its flattened output; ``out_tree()``
    is the output's tree once it ran."""
    fun = _as_wrapped(fun)
    store = Store()

    def flat(*leaves):
        args, kwargs = tree_util.tree_unflatten(in_tree, list(leaves))
        out = fun.call_wrapped(*args, **kwargs)
        ol, ot = tree_util.tree_flatten(out)
        store.store(ot)
        return ol

    return WrappedFun(flat, debug_info=getattr(fun, "debug_info", None)), store


def flatten_fun_nokwargs(fun, in_tree):
    """As ``flatten_fun`` with ``in_tree`` the tree of the positional arguments only."""
    fun = _as_wrapped(fun)
    store = Store()

    def flat(*leaves):
        args = tree_util.tree_unflatten(in_tree, list(leaves))
        out = fun.call_wrapped(*args)
        ol, ot = tree_util.tree_flatten(out)
        store.store(ot)
        return ol

    return WrappedFun(flat, debug_info=getattr(fun, "debug_info", None)), store


def argnums_partial(f, dyn_argnums, args: Sequence, require_static_args_hashable=True):
    """``(f_partial, dyn_args)``: ``f`` with the arguments not in ``dyn_argnums`` fixed."""
    f = _as_wrapped(f)
    dyn_argnums = (dyn_argnums,) if isinstance(dyn_argnums, int) else tuple(dyn_argnums)
    n = len(args)
    dyn_argnums = tuple(i % n for i in dyn_argnums)
    fixed = {i: a for i, a in enumerate(args) if i not in dyn_argnums}
    if require_static_args_hashable:
        for i, a in fixed.items():
            try:
                hash(a)
            except TypeError:
                raise ValueError(f"Non-hashable static arguments are not supported, as this can "
                                 f"lead to unexpected cache-misses. Static argument (index {i}) "
                                 f"of type {type(a)} is non-hashable.") from None

    def partial_f(*dyn, **kwargs):
        it = iter(dyn)
        full = [fixed[i] if i in fixed else next(it) for i in range(n)]
        return f.call_wrapped(*full, **kwargs)

    return WrappedFun(partial_f), tuple(args[i] for i in dyn_argnums)


def flatten_axes(name, treedef, axis_tree, *, kws=False, tupled_args=False):
    """``axis_tree`` (a prefix of ``treedef``'s tree, as vmap's ``in_axes``) broadcast to one
    entry per leaf."""
    dummy = tree_util.tree_unflatten(treedef, [object()] * treedef.num_leaves)
    if kws:
        axis_tree = (axis_tree, {})
    try:
        return tree_util.broadcast_prefix(axis_tree, dummy, none_is_leaf=True)
    except ValueError:
        raise ValueError(f"{name} specification must be a tree prefix of the corresponding "
                         f"value, got specification {axis_tree} for value tree {treedef}."
                         ) from None


def donation_vector(donate_argnums, donate_argnames, in_tree, kws: bool = True) -> tuple:
    """One bool per leaf of ``in_tree``: whether its argument is donated (wjax never reuses a
    donated buffer, but reports the vector as JAX does)."""
    donate_argnums = set((donate_argnums,) if isinstance(donate_argnums, int)
                         else donate_argnums or ())
    donate_argnames = set((donate_argnames,) if isinstance(donate_argnames, str)
                          else donate_argnames or ())
    subtrees = in_tree.children()
    if kws:
        args_tree, kwargs_tree = subtrees
        arg_trees, kw_trees = args_tree.children(), kwargs_tree.children()
        names = list(tree_util.tree_unflatten(kwargs_tree, [0] * kwargs_tree.num_leaves)
                     ) if kwargs_tree.num_leaves else []
    else:
        arg_trees, kw_trees, names = subtrees, [], []
    out = []
    for i, t in enumerate(arg_trees):
        out += [i in donate_argnums] * t.num_leaves
    for name, t in zip(sorted(names), kw_trees):
        out += [name in donate_argnames] * t.num_leaves
    return tuple(out)


def rebase_donate_argnums(donate_argnums, static_argnums) -> tuple[int, ...]:
    """``donate_argnums`` renumbered as positions among the non-static arguments."""
    if not (static_argnums or donate_argnums):
        return tuple(sorted(donate_argnums))
    static = sorted(static_argnums)
    donate = sorted(set(donate_argnums))
    out = []
    for d in donate:
        if d in static:
            raise ValueError(f"static_argnums {static_argnums} and donate_argnums "
                             f"{donate_argnums} cannot intersect.")
        out.append(d - sum(1 for s in static if s < d))
    return tuple(out)


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
