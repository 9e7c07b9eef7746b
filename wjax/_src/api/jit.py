"""``jit``: trace once per signature, compile once per structure, run.

``jit(f)`` traces ``f`` to a jaxpr once per signature (tree structure, avals with weak types,
static values) and keeps the trace and its compiled form (``dispatch.Compiled``) in its own
cache; compiling goes through the one compile cache of ``wjax/_src/dispatch.py``.  Called under
another trace it binds ``pjit`` (``wjax/_src/prims/calls.py``) so the outer jaxpr shows the call
nested, as JAX does.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import functools
import inspect
import logging
import threading
import time
import weakref

from .. import dispatch
from ..array import Array
from ..backend import runtime
from ..core import caches, tree_util
from ..core import traceback_util as _tb
from ..core import refs as _refs
from ..core.config import config as _cfg
from ..core.ir import ClosedJaxpr, Jaxpr, ShapedArray, ShapeDtypeStruct, abstractify
from ..core.mesh import get_abstract_mesh
from ..core.tracing import (DebugInfo, Tracer, arg_names_of, axis_env, current_builder, make_jaxpr,
                            trace_flat)
from ..prims.calls import pjit_p
from .sharding import place

logger = logging.getLogger("wjax")


def _hashable_static(v, i):
    try:
        hash(v)
    except TypeError:
        raise ValueError(
            f"Non-hashable static arguments are not supported. An error occurred while trying to "
            f"hash an object of type {type(v)}, {v!r}. The error was:\nTypeError: unhashable type: "
            f"'{type(v).__name__}'") from None
    return v


def _shardings_key(avals) -> tuple:
    """The trace-cache key's part for the arguments' shardings (``jax.typeof(x).sharding``).
    A plain ``ShapedArray``'s is replicated over the current abstract mesh, and its rank is in
    the aval: the mesh, once, stands for all of them (not a ``NamedSharding`` made and hashed
    per argument per call); other avals (a sharded array's) give their own."""
    own = tuple([None if type(a) is ShapedArray else getattr(a, "sharding", None)
                 for a in avals])
    plain = any(type(a) is ShapedArray for a in avals)
    return (get_abstract_mesh() if plain else None, own)


def _hoist_tracer_consts(closed: ClosedJaxpr):
    """Constants of ``closed`` that are tracers of an enclosing trace become leading inputs,
    so the nested ``pjit`` equation passes them explicitly."""
    idx = [i for i, c in enumerate(closed.consts) if isinstance(c, Tracer)]
    if not idx:
        return closed, []
    j = closed.jaxpr
    moved = [j.constvars[i] for i in idx]
    keep = [i for i in range(len(j.constvars)) if i not in idx]
    new = Jaxpr([j.constvars[i] for i in keep], moved + list(j.invars), j.outvars, j.eqns)
    return ClosedJaxpr(new, [closed.consts[i] for i in keep]), [closed.consts[i] for i in idx]


def _fun_info(f) -> str:
    name = getattr(f, "__name__", None) or type(f).__name__
    code = getattr(f, "__code__", None)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code is not None else name


_KEY_PARTS = ("input pytree structure", "input types (shapes, dtypes, weak types)",
              "static positional arguments", "static keyword arguments",
              "configuration flags the trace depends on", "named axes in scope")


def _explain_miss(fun, cache, key) -> None:
    """Logs why ``fun`` is traced again (``jax_explain_cache_misses``), as JAX's
    'TRACING CACHE MISS' warnings."""
    where = _fun_info(fun)
    if not cache:
        logger.warning("TRACING CACHE MISS at %s because:\n  never seen function:\n    %s",
                       where, where)
        return
    reasons = []
    full = [k for k in cache if k[0] != "arrays"]     # not the fast path's keys
    for prev in full[-1:]:
        for part, a, b in zip(_KEY_PARTS, prev, key):
            if a != b:
                reasons.append(f"  different {part}:\n    before: {a}\n    now:    {b}")
    logger.warning("TRACING CACHE MISS at %s because:\n%s", where, "\n".join(reasons))


_user_jit = threading.local()


def compiling_user_jit() -> bool:
    """Whether the program being compiled now is a user's ``jit`` (not the rewritten jaxpr
    an eager ``grad`` or ``vmap`` runs): a user primitive without a lowering rule may fall
    back on its impl in the latter only, as JAX runs eager transformations op by op."""
    return getattr(_user_jit, "depth", 0) > 0


def _cell_filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


class Lowered:
    def __init__(self, closed, compiled):
        self.jaxpr, self._compiled = closed, compiled

    def as_text(self) -> str:
        return self._compiled.plan.wgsl_text()

    def compile(self) -> dispatch.Compiled:
        return self._compiled


class _TraceCaches:
    """The trace caches of every jitted function: one per (function, static configuration),
    shared by every ``jit`` of that function (as JAX's: ``jit(f)`` twice traces ``f`` once),
    held weakly by the function so they die with it."""

    def __init__(self):
        self._by_fun: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    def get(self, fun, config) -> dict:
        try:
            per_fun = self._by_fun.setdefault(fun, {})
        except TypeError:                 # not weak-referenceable: a cache of its own
            return {}
        return per_fun.setdefault(config, {})

    def clear_cache(self) -> None:
        self._by_fun.clear()


_trace_caches = caches.register_owner(_TraceCaches())


class Traced:
    """A traced jitted call (``jit(f).trace(*args)``): its ``jaxpr``, avals and ``lower()``."""

    def __init__(self, hit, wrapped):
        self._hit, self._wrapped = hit, wrapped
        self.jaxpr: ClosedJaxpr = hit[0]
        self.out_tree = hit[1]
        self.fun_name = getattr(wrapped.fun, "__name__", "fun")

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: tree_util.tree_unflatten(self.out_tree,
                                                               self.jaxpr.out_avals))

    def lower(self) -> Lowered:
        return Lowered(self.jaxpr, self._wrapped._compiled(self._hit))


class JitWrapped:
    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
                 in_shardings=None, out_shardings=None):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        static_argnums = () if static_argnums is None else static_argnums
        static_argnames = () if static_argnames is None else static_argnames
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        names = list(self._sig.parameters) if self._sig else []
        self.static_argnums = set(static_argnums)
        self.static_argnames = set(static_argnames)
        for n in static_argnames:
            if n in names:
                self.static_argnums.add(names.index(n))
        for i in static_argnums:
            if 0 <= i < len(names):
                self.static_argnames.add(names[i])
        config = (frozenset(self.static_argnums), frozenset(self.static_argnames))
        self._cache: dict = _trace_caches.get(fun, config)
        caches.register_owner(self)

    def _split(self, args, kwargs):
        if not self.static_argnums and not self.static_argnames:
            return (), (), list(args), dict(kwargs)
        n = len(args)
        static_pos = {i % n for i in self.static_argnums if -n <= i < n} if n else set()
        statics = tuple((i, _hashable_static(args[i], i)) for i in sorted(static_pos))
        static_kw = tuple(sorted((k, _hashable_static(v, k)) for k, v in kwargs.items()
                                 if k in self.static_argnames))
        dyn_args = [a for i, a in enumerate(args) if i not in static_pos]
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return statics, static_kw, dyn_args, dyn_kw

    def _not_an_array(self, dyn_args, dyn_kw, static_pos) -> TypeError:
        """JAX's error for an argument that is not an array (nor marked static), naming the
        function and the argument's path (``x['name']``, ``b``)."""
        try:
            names = list(inspect.signature(self.fun).parameters)
        except (TypeError, ValueError):
            names = []
        positions = [i for i in range(len(dyn_args) + len(static_pos)) if i not in static_pos]
        for path, leaf in tree_util.tree_flatten_with_path((dyn_args, dyn_kw))[0]:
            try:
                abstractify(leaf)
                continue
            except TypeError:
                pass
            group, top, rest = path[0].idx, path[1], path[2:]
            if group == 0:
                i = positions[top.idx]
                where = names[i] if i < len(names) else f"args[{i}]"
            else:
                where = str(top.key)
            return TypeError(
                f"Error interpreting argument to {self.fun!r} as an abstract array. The "
                f"problematic value is of type {type(leaf)} and was passed to the function at "
                f"path {where}{tree_util.keystr(rest)}.\nThis typically means that a "
                "jit-wrapped function was called with a non-array argument, and this argument "
                "was not marked as static using the static_argnums or static_argnames "
                "parameters of jax.jit.")
        return TypeError("jit: an argument is not a valid JAX type")

    def _slow_key(self, args, kwargs):
        statics, static_kw, dyn_args, dyn_kw = self._split(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kw))
        avals = tuple(abstractify(x) for x in leaves)
        return (in_tree, avals, statics, static_kw, _cfg.trace_context(), axis_env(),
                _shardings_key(avals), ())

    def _trace(self, args, kwargs):
        statics, static_kw, dyn_args, dyn_kw = self._split(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kw))
        # refs passed in: their values go in, their new values come out as extra results
        ref_pos = tuple([i for i, x in enumerate(leaves) if isinstance(x, _refs.RefCell)])
        ref_objs = [leaves[i] for i in ref_pos]
        if ref_pos:
            leaf_names = self._jit_leaf_names(dyn_args, leaves)
            self._jit_check_ref_args(leaf_names, ref_pos, ref_objs)
            leaves = [x._value if isinstance(x, _refs.RefCell) else x for x in leaves]
        try:
            avals = tuple([abstractify(x) for x in leaves])
        except TypeError:
            raise self._not_an_array(dyn_args, dyn_kw, dict(statics)) from None
        # like JAX, the threefry mode is part of the trace context (random bits depend on it)
        key = (in_tree, avals, statics, static_kw, _cfg.trace_context(), axis_env(),
               _shardings_key(avals), ref_pos)
        hit = self._cache.get(key)
        if hit is None:
            if _cfg.jax_no_tracing:
                raise RuntimeError(f"re-tracing function {_fun_info(self.fun)} for `jit`, but "
                                   f"'no_tracing' is set")
            if _cfg.jax_explain_cache_misses:
                _explain_miss(self.fun, self._cache, key)
            t0 = time.perf_counter()
            out_tree_box = []
            static_pos = dict(statics)

            closed_refs: list = []         # refs the function closes over and writes

            def flat(*ins):
                n = len(ins) - len(closed_refs)
                tracers = list(ins[:n])
                for i, r in zip(ref_pos, ref_objs):
                    tracers[i] = r
                d_args, d_kw = tree_util.tree_unflatten(in_tree, tracers)
                it = iter(d_args)
                full = [static_pos[i] if i in static_pos else next(it)
                        for i in range(len(d_args) + len(static_pos))]
                kw = dict(d_kw)
                kw.update(dict(static_kw))
                with _refs.rebound(ref_objs + closed_refs,
                                   [ins[i] for i in ref_pos] + list(ins[n:])):
                    out = self.fun(*full, **kw)
                    new_values = [r._value for r in ref_objs + closed_refs]
                out_leaves, out_tree = tree_util.tree_flatten(out)
                for x in out_leaves:
                    if isinstance(x, _refs.RefCell):
                        ty = _refs._aval_text(x._value)
                        msg = (f"function {_fun_info(self.fun)} traced for jit returned a "
                               f"mutable array reference of type Ref{{{ty}}}, but mutable "
                               "array references cannot be returned.")
                        where = [i for i, r in zip(ref_pos, ref_objs) if r is x]
                        if where:
                            msg += ("\n\nThe returned mutable array was passed in as the "
                                    f"argument {leaf_names[where[0]]}.")
                        raise ValueError(msg)
                out_tree_box.append(out_tree)
                return out_leaves + new_values

            per_arg = [len(tree_util.tree_leaves(a)) for a in dyn_args]
            names = arg_names_of(self.fun, per_arg)
            names += [f"{k}" for k in dyn_kw]
            debug = DebugInfo("jit", self.fun, names)
            closed, written = _refs.tracking(lambda: trace_flat(flat, avals, debug,
                                                                check_leaks=True))
            if written:                   # closed-over refs written: thread them too
                closed_refs[:] = written
                out_tree_box.clear()
                closed = trace_flat(flat, avals + tuple(abstractify(r._value) for r in written),
                                    debug, check_leaks=True)
            # None: compiled on the first run; then the refs passed in and closed over
            # then whether the result is one array (no tree to rebuild)
            hit = [closed, out_tree_box[0], None, len(ref_pos), list(closed_refs),
                   tree_util.treedef_is_strict_leaf(out_tree_box[0])]
            if not any(isinstance(c, Tracer) for c in closed.consts):
                self._cache[key] = (
                    hit  # a jaxpr closing over an outer trace's values is not reusable
                )
            if _cfg.jax_log_compiles:
                logger.warning("Finished tracing + transforming %s for jit in %.3f s",
                               getattr(self.fun, "__name__", "fun"), time.perf_counter() - t0)
        if hit[4]:
            leaves = list(leaves) + [r._value for r in hit[4]]
        return hit, leaves

    def _jit_leaf_names(self, dyn_args, leaves) -> list:
        per_arg = [len(tree_util.tree_leaves(a)) for a in dyn_args]
        names = arg_names_of(self.fun, per_arg)
        return names + [f"args[{i}]" for i in range(len(names), len(leaves))]

    def _jit_check_ref_args(self, names, ref_pos, ref_objs) -> None:
        """JAX's errors for refs passed in: one ref as two arguments, or a ref passed in
        that the function also names from its globals or closure."""
        seen: dict = {}
        for i, r in zip(ref_pos, ref_objs):
            if id(r) in seen:
                raise ValueError(
                    "only one reference to a mutable array may be passed as an argument to a "
                    f"function, but when tracing {_fun_info(self.fun)} for jit the mutable "
                    f"array reference of type Ref{{{_refs._aval_text(r._value)}}} appeared at "
                    f"both {names[seen[id(r)]]} and {names[i]}.")
            seen[id(r)] = i
        code = getattr(self.fun, "__code__", None)
        if code is None:
            return
        scope = [getattr(self.fun, "__globals__", {}).get(n) for n in code.co_names]
        scope += [c.cell_contents for c in (getattr(self.fun, "__closure__", None) or ())
                  if _cell_filled(c)]
        for i, r in zip(ref_pos, ref_objs):
            if any(v is r for v in scope):
                raise ValueError(
                    f"when tracing {_fun_info(self.fun)} for jit, a mutable array reference of "
                    f"type Ref{{{_refs._aval_text(r._value)}}} was both closed over and passed "
                    f"as the argument {names[i]}")

    def __call__(self, *args, **kwargs):
        # an API boundary: errors leaving it lose wjax's frames (core/traceback_util.py)
        _wjax_api_boundary = True  # noqa: F841
        try:
            return self._jit_call(args, kwargs)
        except dispatch.InvalidOutput as bad:
            # jax_debug_nans/infs: as JAX, the function runs again without jit, so the error
            # names the operation that made the value
            print(dispatch.DEOPTIMIZED)
            try:
                self.fun(*args, **kwargs)
            except (FloatingPointError, ZeroDivisionError) as e:
                _tb.filtered(e)
                e.__suppress_context__ = True
                raise
            raise dispatch.no_invalid_in_deoptimized(bad.name, bad.kind) from None
        except Exception as e:
            _tb.filtered(e)
            raise

    def _jit_call(self, args, kwargs):
        disable_jit, context = _cfg.jit_context()
        if disable_jit:
            return self.fun(*args, **kwargs)
        eager = current_builder() is None
        if (eager and not kwargs and not self.static_argnums and self.in_shardings is None
                and self.out_shardings is None):
            # the common call: positional single-device arrays only.  Its trace is found by
            # the arguments' avals alone (their tree is a flat list), without flattening.
            try:
                avals = tuple([a.aval for a in args if type(a) is Array and a._shards is None])
            except AttributeError:
                avals = None
            if avals is not None and len(avals) == len(args):
                key = ("arrays", avals, context, axis_env())
                hit = self._cache.get(key)
                if hit is None:
                    hit, _ = self._trace(args, kwargs)
                    if self._cache.get(self._slow_key(args, kwargs)) is hit and not hit[4]:
                        self._cache[key] = hit
                if not hit[4]:           # (closed-over refs take the full path)
                    compiled = hit[2]
                    if compiled is None or not compiled.is_current():
                        compiled = self._compiled(hit)
                    outs = compiled.call_arrays(args)
                    return outs[0] if hit[5] else tree_util.tree_unflatten(hit[1], outs)
        if self.in_shardings is not None and eager:
            args = tuple(_place(args, self.in_shardings, "in_shardings"))
        hit, leaves = self._trace(args, kwargs)
        closed, out_tree = hit[0], hit[1]
        name = getattr(self.fun, "__name__", "fun")
        if current_builder() is not None:
            closed, hoisted = _hoist_tracer_consts(closed)
            outs = pjit_p.bind(*hoisted, *leaves, jaxpr=closed, name=name)
        else:
            compiled = hit[2]
            if compiled is None or not compiled.is_current():
                compiled = self._compiled(hit)
            outs = compiled(leaves)
        n_refs = hit[3] + len(hit[4])
        if n_refs:                        # refs passed in or closed over take their new values
            outs = list(outs)
            _, _, d_args, d_kw = self._split(args, kwargs)
            refs = [x for x in tree_util.tree_leaves((d_args, d_kw))
                    if isinstance(x, _refs.RefCell)] + hit[4]
            for r, v in zip(refs, outs[-n_refs:]):
                _refs.write(r, v)
            outs = outs[:-n_refs]
        out = tree_util.tree_unflatten(out_tree, list(outs))
        if self.out_shardings is not None and eager:
            out = _place(out, self.out_shardings, "out_shardings")
        return out

    def _compiled(self, hit) -> dispatch.Compiled:
        if hit[2] is None or not hit[2].is_current():
            _user_jit.depth = getattr(_user_jit, "depth", 0) + 1
            try:
                hit[2] = dispatch.Compiled(hit[0], getattr(self.fun, "__name__", "fun"),
                                       defer_invalid=True)
            finally:
                _user_jit.depth -= 1
        return hit[2]

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        hit, _ = self._trace(args, kwargs)
        return Lowered(hit[0], self._compiled(hit))

    def trace(self, *args: Any, **kwargs: Any) -> "Traced":
        hit, _ = self._trace(args, kwargs)
        return Traced(hit, self)

    def clear_cache(self) -> None:
        self._cache.clear()

    def __get__(self, obj, objtype=None):     # a jitted method binds its instance
        if obj is None:
            return self
        return functools.partial(self, obj)


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The output shapes/dtypes of ``fun`` at these arguments, traced without running.

    ``fun`` may return ``ShapeDtypeStruct``s themselves (as JAX allows: lineax compares
    structures with ``eval_shape(lambda: structs)``); they come back as they are."""
    structs = {}

    def traced(*a):
        leaves, tree = tree_util.tree_flatten(fun(*a, **kwargs))
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, ShapeDtypeStruct):
                structs[i], leaves[i] = leaf, 0
        return tree_util.tree_unflatten(tree, leaves)

    _, shapes = make_jaxpr(traced, return_shape=True)(*args)
    if not structs:
        return shapes
    leaves, tree = tree_util.tree_flatten(shapes)
    return tree_util.tree_unflatten(tree, [structs.get(i, s) for i, s in enumerate(leaves)])


def clear_caches() -> None:
    """Empties every cache wjax keeps (traces of ``jit`` functions, transformed jaxprs,
    compiled plans and pipelines, uploaded constants) and gives the device buffers pooled for
    reuse back to the driver, as ``jax.clear_caches()``."""
    caches.clear_all()
    for rt in runtime.started():
        rt.clear()


def _is_placement(s) -> bool:
    return s is None or hasattr(s, "device_set") or type(s).__name__ == "PartitionSpec" or \
        hasattr(s, "platform")


def _place(tree, shardings, what):
    """``tree`` laid out by ``shardings`` (one for all, or a pytree prefix of them)."""
    if _is_placement(shardings):
        return tree_util.tree_map(lambda v: v if shardings is None else place(v, shardings),
                                  tree)
    try:
        return tree_util.tree_map(lambda s, sub: tree_util.tree_map(
            lambda v: v if s is None else place(v, s), sub), shardings, tree,
            is_leaf=_is_placement)
    except (ValueError, TypeError) as e:
        raise ValueError(f"jit {what} must be a sharding or a pytree prefix of the "
                         f"{'arguments' if what == 'in_shardings' else 'outputs'}: {e}") from None


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = (),
        in_shardings: Any = None, out_shardings: Any = None,
        **kwargs: Any) -> JitWrapped | Callable[[Callable], JitWrapped]:
    """Compiles ``fun``; ``in_shardings``/``out_shardings`` lay its arguments and results out
    by shardings (a sharding, a ``P`` over the current mesh, or pytree prefixes of them)."""
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums, in_shardings=in_shardings,
                             out_shardings=out_shardings)
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    return JitWrapped(fun, static_argnums, static_argnames, donate_argnums, in_shardings,
                      out_shardings)
