"""vmap as a jaxpr rewrite.

``vmap_jaxpr(jaxpr, in_dims, axis_size)`` takes a Jaxpr and the batched axis of
each input (``None`` for an input shared by all examples) and returns a Jaxpr
over the batched inputs and the batched axis of each output.  It walks the
equations like ``eval_jaxpr``: an equation whose operands are all unbatched is
copied as it is; otherwise the primitive's ``batch`` rule rewrites it (see
``wjax/transforms/batching.py`` for the rule signature).  The constvars of the
jaxpr stay unbatched constvars of the result.

``vmap(fun, in_axes, out_axes, ...)`` (exported as ``wjax.vmap``) traces ``fun``
at the unbatched avals, rewrites the jaxpr with ``vmap_jaxpr`` and evaluates the
result: recorded into the enclosing trace (under ``jit``, ``grad``, another
``vmap``), or, when eager, compiled once into one fused plan and run.
"""
from __future__ import annotations

import collections
import functools
import inspect
from typing import Any, Callable

import numpy as np

from ..core.ir import ClosedJaxpr, Jaxpr, Lit, ShapedArray, WeakScalar
from ..core.tracing import DebugInfo, arg_names_of, current_builder, eval_jaxpr, trace_flat
from ..core import caches
from . import batching
from .ad import jaxpr_key

# --------------------------------------------------------------------------- the rewrite


def batched_aval(aval: ShapedArray, d, size: int) -> ShapedArray:
    if d is None:
        return aval
    shape = list(aval.shape)
    shape.insert(d, size)
    return aval.update(shape=tuple(shape))


def batch_eval(jaxpr: Jaxpr, consts, args, dims, axis_size: int):
    """Evaluates ``jaxpr`` on batched values (binding primitives into the current trace).

    Returns the outputs and the batched axis of each (``None``: shared by all examples)."""
    env: dict[int, Any] = {}

    def read(a):
        return (a.operand, None) if isinstance(a, Lit) else env[a.id]

    for v, c in zip(jaxpr.constvars, consts):
        env[v.id] = (c, None)
    for v, x, d in zip(jaxpr.invars, args, dims):
        env[v.id] = (x, d)
    for eqn in jaxpr.eqns:
        vals, ds = [], []
        for a in eqn.invars:
            x, d = read(a)
            vals.append(x)
            ds.append(d)
        prim = eqn.prim
        if all(d is None for d in ds):
            out = prim.bind(*vals, **eqn.params)
            out_dims = [None] * len(eqn.outvars) if prim.multiple_results else None
        else:
            if prim.batch is None:
                raise NotImplementedError(f"Batching rule for '{prim.name}' not implemented")
            out, out_dims = prim.batch(vals, ds, **eqn.params)
        if prim.multiple_results:
            for v, o, d in zip(eqn.outvars, out, out_dims):
                env[v.id] = (o, d)
        else:
            env[eqn.outvars[0].id] = (out, out_dims)
    res = [read(a) for a in jaxpr.outvars]
    return [r[0] for r in res], [r[1] for r in res]


def vmap_jaxpr(jaxpr: Jaxpr, in_dims, axis_size: int, out_dims=None):
    """The batched version of ``jaxpr``: ``in_dims[i]`` is the axis of invar ``i`` that is
    inserted (of size ``axis_size``) or ``None``.  Returns ``(batched_jaxpr, out_dims)``;
    the constvars of ``jaxpr`` are the (unbatched) constvars of the result.  ``out_dims``
    (an int for all outputs, or one entry per output) forces where the outputs' batch axes
    go: unbatched outputs are then broadcast (``None`` entries leave an output as it comes)."""
    if isinstance(jaxpr, ClosedJaxpr):
        raise TypeError("vmap_jaxpr takes a Jaxpr; use vmap_closed_jaxpr for a ClosedJaxpr")
    in_dims = list(in_dims)
    if len(in_dims) != len(jaxpr.invars):
        raise ValueError(f"vmap_jaxpr: {len(in_dims)} in_dims for {len(jaxpr.invars)} inputs")
    if axis_size is None:
        raise ValueError("vmap_jaxpr needs the axis_size of the batch axis it inserts")
    in_dims = [None if d is None else d % (v.aval.ndim + 1) for v, d in zip(jaxpr.invars, in_dims)]
    in_avals = [batched_aval(v.aval, d, axis_size) for v, d in zip(jaxpr.invars, in_dims)]
    const_avals = [v.aval for v in jaxpr.constvars]
    box = []

    def flat(*tracers):
        cs, xs = tracers[:len(const_avals)], tracers[len(const_avals):]
        outs, dims = batch_eval(jaxpr, cs, xs, in_dims, axis_size)
        if out_dims is not None:
            want = [out_dims] * len(outs) if isinstance(out_dims, int) else list(out_dims)
            outs = [o if w is None else batching.move_batch_axis(o, d, w, axis_size)
                    for o, d, w in zip(outs, dims, want)]
            dims = [d if w is None else w for d, w in zip(dims, want)]
        box.append(dims)
        return outs

    closed = trace_flat(flat, const_avals + in_avals, DebugInfo("vmap", None))
    j = closed.jaxpr
    if j.constvars:
        raise AssertionError(
            "vmap_jaxpr: a batching rule captured an array constant ("
            + ", ".join(v.aval.str_short() for v in j.constvars) + "); rules must build arrays "
            "from primitives (iota, broadcast_in_dim of a literal)")
    n = len(const_avals)
    return Jaxpr(j.invars[:n], j.invars[n:], j.outvars, j.eqns), box[0]


def vmap_closed_jaxpr(closed: ClosedJaxpr, in_dims, axis_size: int, out_dims=None):
    j, out_dims = vmap_jaxpr(closed.jaxpr, in_dims, axis_size, out_dims)
    return ClosedJaxpr(j, closed.consts), out_dims


# --------------------------------------------------------------------------- call primitives
# Call primitives that carry jaxprs (custom_jvp_call, custom_vjp_call, custom_lin) stay calls
# under vmap: their jaxprs are batched, so the custom rules still apply to the batched call.
# Every non-const operand gets its batch axis first (unbatched ones are broadcast, which makes
# a custom bwd's per-example cotangents sum back over the batch through broadcast's transpose),
# and every output of every carried jaxpr is forced to batch axis 0 so that they agree.

_call_memo: dict = caches.register({})


class _LazyBatched:
    """A carried rule that is traced lazily stays lazy: batched on first use."""

    __name__ = "lazy_rule"

    def __init__(self, f):
        self.f, self.val = f, None

    def __repr__(self):
        return "lazy_rule"

    def __call__(self):
        if self.val is None:
            self.val = self.f()
        return self.val


def _batch_carried(j, in_dims, n):
    """``j`` batched (outputs at axis 0); ``in_dims`` is a list, or a function of the jaxpr."""
    if not isinstance(j, ClosedJaxpr):            # a lazily traced rule
        def force():
            r = j
            while not isinstance(r, ClosedJaxpr):
                r = r()
            return _batch_carried(r, in_dims, n)
        return _LazyBatched(force)
    if callable(in_dims):
        in_dims = in_dims(j)
    key = (id(j), tuple(in_dims), n)
    hit = _call_memo.get(key)
    if hit is None or hit[0] is not j:
        if len(_call_memo) > 512:
            _call_memo.clear()
        hit = _call_memo[key] = (j, vmap_closed_jaxpr(j, in_dims, n, out_dims=0)[0])
    return hit[1]


def batch_custom_call(prim, num_consts_param="num_consts"):
    """A batching rule for a call primitive carrying ``jaxpr`` (operands -> outs) and any of
    ``jvp_jaxpr`` (operands, tangents of the non-consts -> outs, out tangents), ``fwd_jaxpr``
    (operands -> outs, residuals), ``bwd_jaxpr`` (residuals, cts -> cts)."""
    def rule(args, dims, **params):
        n = batching.axis_size(args, dims)
        k = params.get(num_consts_param, 0)
        new_dims = [d if i < k and d is None else 0 for i, d in enumerate(dims)]
        args = [a if nd is None else batching.move_batch_axis(a, d, 0, n)
                for a, d, nd in zip(args, dims, new_dims)]
        new = dict(params)
        for name, j in params.items():
            if name == "jaxpr" or name == "fwd_jaxpr":
                new[name] = _batch_carried(j, new_dims, n)
            elif name == "jvp_jaxpr":
                new[name] = _batch_carried(j, new_dims + new_dims[k:], n)
            elif name == "bwd_jaxpr":
                new[name] = _batch_carried(j, lambda cj: [0] * len(cj.jaxpr.invars), n)
            elif name == "out_avals":
                new[name] = tuple(batched_aval(a, 0, n) for a in j)
        outs = prim.bind(*args, **new)
        return list(outs), [0] * len(outs)
    prim.batch = rule
    return rule


# --------------------------------------------------------------------------- eager plans
# An eager vmap call traces ``fun`` again on every call (its closure may have changed),
# but compiles each distinct batched program once: plans are cached by the structure of
# the final jaxpr, with its constants passed as inputs.

_plan_cache: dict = caches.register({})


def run_eager(closed: ClosedJaxpr, args, name: str = "vmap"):
    """Runs a closed jaxpr as one compiled plan, cached by structure."""
    from ..array import Array, asarray_device
    from ..backend.execute import Compiled
    j = closed.jaxpr
    keep: list = []
    try:
        key = jaxpr_key(j, keep)
        hash(key)
    except TypeError:
        key = None
    hit = _plan_cache.get(key) if key is not None else None
    if hit is None:
        open_j = Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns)
        comp = Compiled(ClosedJaxpr(open_j, []), name)
        if key is not None:
            if len(_plan_cache) > 512:
                _plan_cache.clear()
            _plan_cache[key] = (comp, keep)
    else:
        comp = hit[0]
    arrays = [a if isinstance(a, Array) else asarray_device(a) for a in list(closed.consts) + list(args)]
    return comp(arrays)


# --------------------------------------------------------------------------- API


def _check_axes_types(in_axes, out_axes):
    from ..core import tree_util
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got {in_axes}.")
    for what, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        leaves = tree_util.tree_leaves(axes)
        if not all(type(l) is int or isinstance(l, np.integer) for l in leaves):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container "
                            f"with those types as leaves, but got {axes}.")


def _flatten_axes(what, axes, tree, shown_axes=None, shown_tree=None):
    from ..core import tree_util
    try:
        return tree_util.broadcast_prefix(axes, tree, none_is_leaf=True)
    except ValueError as e:
        detail = str(e)
        if shown_tree is not None:     # name the positional arguments, not the (args, kwargs) pair
            try:
                tree_util.broadcast_prefix(shown_axes, shown_tree, none_is_leaf=True)
            except ValueError as e2:
                detail = str(e2)
            axes, tree = shown_axes, shown_tree
        raise ValueError(f"vmap {what} specification must be a tree prefix of the corresponding "
                         f"value; got specification {axes} for value tree "
                         f"{tree_util.tree_structure(tree)}.\n  Mismatch details: {detail}") from None


def _arg_paths(fun, args, kwargs):
    """One description per leaf, like JAX's: 'argument x of type float32[3]'."""
    from ..core import tree_util
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = None
    out = []
    pairs, _ = tree_util.tree_flatten_with_path(tuple(args))
    for path, leaf in pairs:
        i = path[0].idx
        if params is None or i >= len(params):
            name = f"args{tree_util.keystr(path)}"
        else:
            name = f"argument {params[i]}" + tree_util.keystr(tuple(path[1:]))
        out.append(f"{name} of type {_type_str(leaf)}")
    pairs, _ = tree_util.tree_flatten_with_path(kwargs)
    for path, leaf in pairs:
        out.append(f"kwargs{tree_util.keystr(path)} of type {_type_str(leaf)}")
    return out


def _type_str(x):
    try:
        a = _abstractify(x)
        return f"{np.dtype(a.dtype).name}[{','.join(map(str, a.shape))}]"
    except TypeError:
        return "unknown"


def _abstractify(x):
    from ..api import _abstractify as abst
    return abst(x)


def _mapped_size(fun, args, kwargs, leaves, dims, axis_size):
    sizes = [None if d is None else _abstractify(x).shape[d] for x, d in zip(leaves, dims)]
    distinct = sorted({s for s in sizes if s is not None} | ({axis_size} if axis_size is not None else set()))
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must "
                         "be specified")
    paths = _arg_paths(fun, args, kwargs)
    counts = collections.Counter(s for s in sizes if s is not None).most_common()
    msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        msg.append(f"  * the `axis_size` argument was {axis_size};\n")
    for k, (sz, ct) in enumerate(counts):
        i = sizes.index(sz)
        if ct == 1:
            msg.append(f"  * one axis had size {sz}: axis {dims[i]} of {paths[i]};\n")
        elif k == 0:
            msg.append(f"  * most axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of {paths[i]};\n")
        else:
            msg.append(f"  * some axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of {paths[i]};\n")
    raise ValueError("".join(msg)[:-2])


def _normalize_in_dim(x, d):
    if d is None:
        return None
    shape = _abstractify(x).shape
    nd = len(shape)
    if not -nd <= d < nd:
        min_rank = d + 1 if d >= 0 else -d
        raise ValueError(f"vmap was requested to map its argument along axis {d}, which implies "
                         f"that its rank should be at least {min_rank}, but is only {nd} (its "
                         f"shape is {tuple(shape)})")
    return int(d) % nd


def _move_out(x, d, target, size, path):
    if target is None:
        if d is not None:
            raise ValueError(f"vmap has mapped output but out_axes is None (at vmap out_axes{path}, "
                             f"got axis spec None but output was batched on axis {d})")
        return x
    nd = batching.aval_of(x).ndim + (1 if d is None else 0)
    if not -nd <= target < nd:
        raise ValueError(f"axis {target} is out of bounds for array of dimension {nd}")
    return batching.move_batch_axis(x, d, int(target) % nd, size)


class _Vmapped:
    def __init__(self, fun, in_axes, out_axes, axis_name, axis_size):
        functools.update_wrapper(self, fun)
        self.fun, self.in_axes, self.out_axes = fun, in_axes, out_axes
        self.axis_name, self.axis_size = axis_name, axis_size

    def __call__(self, *args, **kwargs):
        from ..core import tree_util
        in_axes = self.in_axes
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                             "to the positional arguments passed to the function, but got "
                             f"len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        dims = _flatten_axes("in_axes", (in_axes, 0), (args, kwargs), in_axes, args)
        dims = [_normalize_in_dim(x, d) for x, d in zip(leaves, dims)]
        size = _mapped_size(self.fun, args, kwargs, leaves, dims, self.axis_size)
        avals = []
        for x, d in zip(leaves, dims):
            a = _abstractify(x)
            if d is not None:
                a = a.update(shape=a.shape[:d] + a.shape[d + 1:])
            avals.append(a)
        out_tree_box = []

        def flat(*tracers):
            a, kw = tree_util.tree_unflatten(in_tree, list(tracers))
            out = self.fun(*a, **kw)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves

        per_arg = [len(tree_util.tree_leaves(a)) for a in args]
        names = arg_names_of(self.fun, per_arg) + [k for k in kwargs for _ in
                                                   tree_util.tree_leaves(kwargs[k])]
        # unmapped arguments and closed-over values keep their values (Python may branch on
        # them, as in JAX, where an op on unbatched values runs outside the vmap)
        closed = trace_flat(flat, avals, DebugInfo("vmap", self.fun, names),
                            values=[x if d is None else None for x, d in zip(leaves, dims)])
        out_tree = out_tree_box[0]
        dummy = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
        out_axes = _flatten_axes("out_axes", self.out_axes, dummy)
        paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(dummy)[0]]
        batched, out_dims = vmap_jaxpr(closed.jaxpr, dims, size)

        def run(*xs):
            outs = eval_jaxpr(batched, closed.consts, *xs)
            outs = [a.operand if isinstance(a, Lit) else o for a, o in zip(batched.outvars, outs)]
            return [_move_out(o, d, t, size, p) for o, d, t, p in zip(outs, out_dims, out_axes, paths)]

        if current_builder() is not None:
            outs = run(*leaves)
        else:
            in_avals = [batched_aval(a, d, size) for a, d in zip(avals, dims)]
            final = trace_flat(run, in_avals, DebugInfo("vmap", self.fun, names))
            outs = run_eager(final, leaves, getattr(self.fun, "__name__", "vmap"))
        return tree_util.tree_unflatten(out_tree, list(outs))

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorizing map (JAX's ``jax.vmap``): ``fun`` mapped over the ``in_axes`` of its
    arguments, with the mapped axis of each output at ``out_axes``."""
    if not callable(fun):
        raise TypeError(f"vmap requires a callable, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_types(in_axes, out_axes)
    return _Vmapped(fun, in_axes, out_axes, axis_name, axis_size)
