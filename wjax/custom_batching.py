"""``jax.custom_batching``: functions with their own vmap rule (``custom_vmap``) and
``sequential_vmap`` (a function vmapped as a loop over the batch).

A ``custom_vmap`` call binds ``custom_vmap_call`` (``wjax/_src/prims/calls.py``) carrying the
function's jaxpr and the rule; ``vmap`` calls the rule, everything else runs the function.
"""
from __future__ import annotations

import functools
from typing import Callable

from . import lax
from ._src.core import tree_util
from ._src.core.tree import flatten_call
from ._src.core.ir import abstractify
from ._src.core.tracing import DebugInfo, trace_flat
from ._src.prims.calls import custom_vmap_call_p
from ._src.prims.control import lift_consts
from ._src.api.autodiff import jvp

__all__ = ["custom_vmap", "sequential_vmap"]


class custom_vmap:
    """``f`` with a custom batching rule set by ``def_vmap``:
    ``rule(axis_size, in_batched, *args) -> (out, out_batched)`` where ``in_batched`` mirrors
    ``args`` with a bool per leaf (batched leaves have the batch axis first) and
    ``out_batched`` is a bool or a pytree of bools like ``out``."""

    def __init__(self, fun: Callable):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, vmap_rule: Callable) -> Callable:
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError("custom_vmap functions take positional arguments only (got "
                            f"keyword arguments {sorted(kwargs)})")
        name = getattr(self.fun, "__name__", "fun")
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 f"using def_vmap.")
        leaves, in_tree = tree_util.tree_flatten(args)
        flat, out_tree_of = flatten_call(self.fun, in_tree)
        closed = trace_flat(flat, [abstractify(x) for x in leaves],
                            DebugInfo("custom_vmap", self.fun))
        jaxpr, consts = lift_consts(closed)
        out_tree = out_tree_of()
        outs = custom_vmap_call_p.bind(*consts, *leaves, jaxpr=jaxpr, rule=self.vmap_rule,
                                       num_consts=len(consts), in_tree=in_tree,
                                       out_tree=out_tree, name=name, jvp_rule=_jvp_rule)
        return tree_util.tree_unflatten(out_tree, list(outs))


def _jvp_rule(rule, out_tree):
    """The batching rule of a custom_vmap function's jvp: the jvp of ``rule`` (its operands
    ``(primals, tangents)``; a leaf batched in one of the two is batched in both)."""
    def jrule(axis_size, in_batched, primals, tangents):
        pb, tb = in_batched
        flags = [p or t for p, t in zip(tree_util.tree_leaves(pb), tree_util.tree_leaves(tb))]

        def bcast(xs):
            leaves, tree = tree_util.tree_flatten(xs)
            out = [x if not f or b else lax.broadcast_in_dim(x, (axis_size,) + tuple(
                x.shape), tuple(range(1, x.ndim + 1)))
                   for x, f, b in zip(leaves, flags, tree_util.tree_leaves(
                       pb if xs is primals else tb))]
            return tree_util.tree_unflatten(tree, out)

        ps, ts = bcast(primals), bcast(tangents)
        flags_tree = list(tree_util.tree_unflatten(tree_util.tree_structure(pb), flags))
        box = []

        def f(*p):
            out, ob = rule(axis_size, flags_tree, *p)
            box.append(ob)
            return out

        out, tout = jvp(f, tuple(ps), tuple(ts))
        ob = box[0]
        if isinstance(ob, bool):
            ob = tree_util.tree_unflatten(out_tree, [ob] * out_tree.num_leaves)
        return (out, tout), (ob, ob)
    return jrule


def sequential_vmap(f: Callable) -> custom_vmap:
    """``f`` batched by running it on one example at a time (``lax.map``) under ``vmap``."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        leaves, tree = tree_util.tree_flatten(args)
        flags = tree_util.tree_leaves(in_batched)

        def one(batched_leaves):
            it = iter(batched_leaves)
            full = [next(it) if b else x for x, b in zip(leaves, flags)]
            return f(*tree_util.tree_unflatten(tree, full))

        out = lax.map(one, [x for x, b in zip(leaves, flags) if b])
        return out, True

    return f
