"""``jax.custom_batching``: functions with their own vmap rule (``custom_vmap``) and
``sequential_vmap`` (a function vmapped as a loop over the batch).

A ``custom_vmap`` call binds ``custom_vmap_call`` (``wjax/prims/calls.py``) carrying the
function's jaxpr and the rule; ``vmap`` calls the rule, everything else runs the function.
"""
from __future__ import annotations

import functools
from typing import Callable

from .. import lax
from ..core import tree_util
from ..core.ir import abstractify
from ..core.tracing import DebugInfo, trace_flat
from ..prims.calls import custom_vmap_call_p
from ..prims.control import lift_consts

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
        box = []

        def flat(*xs):
            out = self.fun(*tree_util.tree_unflatten(in_tree, list(xs)))
            ol, ot = tree_util.tree_flatten(out)
            box.append(ot)
            return ol

        closed = trace_flat(flat, [abstractify(x) for x in leaves],
                            DebugInfo("custom_vmap", self.fun))
        jaxpr, consts = lift_consts(closed)
        out_tree = box[0]
        outs = custom_vmap_call_p.bind(*consts, *leaves, jaxpr=jaxpr, rule=self.vmap_rule,
                                       num_consts=len(consts), in_tree=in_tree,
                                       out_tree=out_tree, name=name)
        return tree_util.tree_unflatten(out_tree, list(outs))


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
