"""``checkpoint`` / ``remat``: recompute a function's intermediates in the backward pass.

``checkpoint(f)`` binds the call primitive ``checkpoint`` holding f's jaxpr.
Its jvp is the checkpoint of the jvp'd jaxpr; partial evaluation (see
``wjax/transforms/partial_eval.py``) saves only the call's known inputs and puts
the whole call again on the unknown side, so the transpose recomputes the
primal values it needs (forward-evaluating the non-linear equations) instead
of keeping them as residuals.  The backend inlines the call like ``pjit``.
Policies are accepted; every policy currently rematerializes everything.
"""
from __future__ import annotations

import functools

from .core import caches, tree_util
from .core.ir import ClosedJaxpr
from .core.primitive import Primitive
from .core.tracing import DebugInfo, current_builder, eval_jaxpr, trace_flat
from .transforms import ad as _ad

checkpoint_p = Primitive("checkpoint", multiple_results=True)


@checkpoint_p.def_abstract_eval
def _checkpoint_abstract(*avals, jaxpr, prevent_cse=True, policy=None, name="checkpoint"):
    return jaxpr.out_avals


def _checkpoint_impl(*args, jaxpr, prevent_cse=True, policy=None, name="checkpoint"):
    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


_memo: dict = caches.register({})


def _memoized(key, jaxpr, build):
    hit = _memo.get(key)
    if hit is None or hit[0] is not jaxpr:
        if len(_memo) > 512:
            _memo.clear()
        hit = _memo[key] = (jaxpr, build())
    return hit[1]


def _checkpoint_jvp(primals, tangents, *, jaxpr, **params):
    from .transforms.jvp import jvp_jaxpr
    nz = tuple(not isinstance(t, _ad.Zero) for t in tangents)
    jc, out_nz = _memoized(("jvp", id(jaxpr), nz), jaxpr, lambda: jvp_jaxpr(jaxpr, nz))
    outs = checkpoint_p.bind(*primals, *[t for t in tangents if not isinstance(t, _ad.Zero)],
                             jaxpr=jc, **params)
    n = len(jaxpr.out_avals)
    it = iter(outs[n:])
    return list(outs[:n]), [next(it) if z else _ad.Zero(a) for z, a in zip(out_nz, jaxpr.out_avals)]


def _checkpoint_transpose(cts, *args, jaxpr, **params):
    from .transforms.transpose import transpose_jaxpr
    lin = tuple(_ad.is_undefined_primal(a) for a in args)
    tj = _memoized(("T", id(jaxpr), lin), jaxpr, lambda: transpose_jaxpr(jaxpr, lin))
    outs = checkpoint_p.bind(*[a for a in args if not _ad.is_undefined_primal(a)],
                             *[_ad.instantiate(c) for c in cts], jaxpr=tj, **params)
    it = iter(outs)
    return [next(it) if l else None for l in lin]


def _checkpoint_batch(args, dims, *, jaxpr, **params):
    from .transforms.batching import axis_size
    from .transforms.vmap import vmap_closed_jaxpr
    n = axis_size(args, dims)
    bj, out_dims = vmap_closed_jaxpr(jaxpr, list(dims), n)
    return list(checkpoint_p.bind(*args, jaxpr=bj, **params)), list(out_dims)


checkpoint_p.impl = _checkpoint_impl
checkpoint_p.jvp = _checkpoint_jvp
checkpoint_p.transpose = _checkpoint_transpose
checkpoint_p.batch = _checkpoint_batch


def checkpoint(fun=None, *, prevent_cse: bool = True, policy=None, static_argnums=()):
    """Marks ``fun`` for rematerialization under differentiation (``jax.checkpoint``)."""
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy,
                                    static_argnums=static_argnums)
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    static_argnums = tuple(static_argnums)

    @functools.wraps(fun)
    def remat_f(*args, **kwargs):
        if current_builder() is None:
            return fun(*args, **kwargs)
        n = len(args)
        static = {i % n: args[i] for i in static_argnums} if n else {}
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
        from .api import _abstractify
        box = []

        def flat(*xs):
            d, kw = tree_util.tree_unflatten(in_tree, list(xs))
            it = iter(d)
            full = [static[i] if i in static else next(it) for i in range(n)]
            out = fun(*full, **kw)
            ol, ot = tree_util.tree_flatten(out)
            box.append(ot)
            return ol

        closed = trace_flat(flat, [_abstractify(x) for x in leaves], DebugInfo("checkpoint", fun))
        from .custom_derivatives import _split_consts
        j, tc, kc = _split_consts(closed)
        outs = checkpoint_p.bind(*tc, *leaves, jaxpr=ClosedJaxpr(j, kc), prevent_cse=prevent_cse,
                                 policy=policy, name=getattr(fun, "__name__", "checkpoint"))
        return tree_util.tree_unflatten(box[0], list(outs))

    return remat_f


remat = checkpoint


class checkpoint_policies:
    """Names of JAX's checkpoint policies (accepted; wjax currently recomputes everything)."""

    @staticmethod
    def everything_saveable(*_, **__):
        return True

    @staticmethod
    def nothing_saveable(*_, **__):
        return False

    dots_saveable = checkpoint_dots = nothing_saveable
    dots_with_no_batch_dims_saveable = checkpoint_dots_with_no_batch_dims = nothing_saveable

    @staticmethod
    def save_only_these_names(*names):
        return checkpoint_policies.nothing_saveable

    @staticmethod
    def save_any_names_but_these(*names):
        return checkpoint_policies.nothing_saveable


def checkpoint_name(x, name):
    """Names a value for checkpoint policies (identity here)."""
    return x
