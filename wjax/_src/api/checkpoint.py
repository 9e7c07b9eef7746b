"""``checkpoint`` / ``remat``: recompute a function's intermediates in the backward pass.

``checkpoint(f)`` binds the call primitive ``checkpoint`` holding f's jaxpr
(``wjax/_src/prims/calls.py``).  Its jvp is the checkpoint of the jvp'd jaxpr; its partial
evaluation saves only the call's known inputs and puts the whole call again on the unknown
side, so the transpose recomputes the primal values it needs (forward-evaluating the
non-linear equations) instead of keeping them as residuals.  The backend inlines the call
like ``pjit``.
A ``policy`` chooses values to save instead of recompute (``prims/calls.py``).
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable, Sequence

from ..core import caches, refs as _refs, tree_util
from ..core.config import config as _cfg
from ..core.ir import ClosedJaxpr, abstractify
from ..core.tracing import DebugInfo, Tracer, axis_env, trace_flat
from ..prims.calls import checkpoint_p
from ..prims.elementwise import name_p
from .custom_derivatives import _split_consts



class _TraceCache:
    """The traces of checkpointed functions, per function (held weakly) and per argument
    types, static arguments and trace context: as JAX's (``_trace_to_jaxpr``, a weakref LRU
    cache on the function), a function checkpointed again -- with another policy, say -- is not
    traced again, so it keeps what it was traced with (a global it calls redefined since)."""

    def __init__(self):
        self._by_fun: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def get(self, fun, key):
        try:
            return self._by_fun.get(fun, {}).get(key)
        except TypeError:                 # not weak-referenceable, or a key not hashable
            return None

    def put(self, fun, key, value) -> None:
        try:
            self._by_fun.setdefault(fun, {})[key] = value
        except TypeError:
            pass

    def clear_cache(self) -> None:
        self._by_fun.clear()


_traces = caches.register_owner(_TraceCache())


def checkpoint(fun: Callable | None = None, *, prevent_cse: bool = True,
               policy: Callable | None = None,
               static_argnums: int | Sequence[int] = ()) -> Callable:
    """Marks ``fun`` for rematerialization under differentiation (``jax.checkpoint``)."""
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy,
                                    static_argnums=static_argnums)
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(static_argnums)

    @functools.wraps(fun)
    def remat_f(*args, **kwargs):
        # traced (or taken from the cache) also when called eagerly, as JAX's
        n = len(args)
        static = {i % n: args[i] for i in static_argnums} if n else {}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
        box = []

        def flat(*xs):
            d, kw = tree_util.tree_unflatten(in_tree, list(xs))
            it = iter(d)
            full = [static[i] if i in static else next(it) for i in range(n)]
            out = fun(*full, **kw)
            ol, ot = tree_util.tree_flatten(out)
            box.append(ot)
            return ol

        avals = tuple(abstractify(x) for x in leaves)
        key = (in_tree, avals, n, tuple(sorted(static.items())), _cfg.trace_context(),
               axis_env())
        hit = _traces.get(fun, key)
        if hit is not None:
            j, kc, out_tree = hit
            tc = []
            box.append(out_tree)
        else:
            closed = trace_flat(flat, list(avals), DebugInfo("checkpoint", fun))
            j, tc, kc = _split_consts(closed)
            # reusable unless it closes over an enclosing trace's values or a ref's value
            if not tc and not any(isinstance(c, Tracer) for c in kc) \
                    and not _refs.holds_ref_value(kc):
                _traces.put(fun, key, (j, kc, box[0]))
        outs = checkpoint_p.bind(*tc, *leaves, jaxpr=ClosedJaxpr(j, kc), prevent_cse=prevent_cse,
                                 policy=policy, name=getattr(fun, "__name__", "checkpoint"))
        return tree_util.tree_unflatten(box[0], list(outs))

    return remat_f


remat = checkpoint


class checkpoint_policies:
    """JAX's checkpoint policies: ``policy(prim, *avals, **params) -> bool`` says whether an
    equation's output (computable from the checkpoint's known inputs) is saved for the backward
    pass instead of recomputed."""

    @staticmethod
    def everything_saveable(*_, **__):
        return True

    @staticmethod
    def nothing_saveable(*_, **__):
        return False

    @staticmethod
    def dots_saveable(prim, *_, **__):
        return prim.name == "dot_general"

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *_, **params):
        return prim.name == "dot_general" and not params["dimension_numbers"][1][0]

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names):
        names = set(names)
        return lambda prim, *_, **params: prim.name == "name" and params["name"] in names

    @staticmethod
    def save_any_names_but_these(*names):
        names = set(names)
        return lambda prim, *_, **params: prim.name == "name" and params["name"] not in names


def checkpoint_name(x: Any, name: str) -> Any:
    """Names a value (``name_p``, an identity) for the ``save_*_names`` policies."""
    return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)
