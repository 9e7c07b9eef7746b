"""Transformations: jit (and, as they land, grad, vmap, ...).

``jit(f)`` traces ``f`` to a jaxpr once per signature (tree structure, avals
with weak types, static values), lowers it to WGSL through the backend and
caches the compiled plan.  Called under another trace it binds ``pjit`` so the
outer jaxpr shows the call nested, as JAX does.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import time

import numpy as np

from .config import config as _cfg
from . import tree_util
from .array import Array, asarray_device
from .ir import ClosedJaxpr, ShapedArray, raise_to_shaped
from .primitive import Primitive
from .staging import (DebugInfo, Tracer, arg_names_of, current_builder, eval_jaxpr, make_jaxpr,
                      trace_flat)

logger = logging.getLogger("wjax")

# --------------------------------------------------------------------------- pjit primitive

pjit_p = Primitive("pjit", multiple_results=True)


@pjit_p.def_abstract_eval
def _pjit_abstract(*avals, jaxpr, name):
    return jaxpr.out_avals


def _pjit_impl(*args, jaxpr, name):
    from .backend.execute import Compiled
    comp = _compiled_cache.get(id(jaxpr))
    if comp is None or comp[0] is not jaxpr:
        comp = (jaxpr, Compiled(jaxpr, name))
        _compiled_cache[id(jaxpr)] = comp
    arrays = [a if isinstance(a, Array) else asarray_device(a) for a in args]
    return comp[1](arrays)


pjit_p.impl = _pjit_impl
pjit_p.reference = None
_compiled_cache: dict = {}


# --------------------------------------------------------------------------- jit

def _hashable_static(v, i):
    try:
        hash(v)
    except TypeError:
        raise ValueError(
            f"Non-hashable static arguments are not supported. An error occurred while trying to "
            f"hash an object of type {type(v)}, {v!r}. The error was:\nTypeError: unhashable type: "
            f"'{type(v).__name__}'") from None
    return v


def _abstractify(x):
    if isinstance(x, (Array, Tracer)):
        return x.aval
    if isinstance(x, (bool, int, float)) and not isinstance(x, np.generic):
        return raise_to_shaped(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return raise_to_shaped(np.asarray(x))
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(x.shape, x.dtype)
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")


class Lowered:
    def __init__(self, closed, compiled):
        self.jaxpr, self._compiled = closed, compiled

    def as_text(self) -> str:
        return self._compiled.plan.wgsl_text()

    def compile(self):
        return self._compiled


class JitWrapped:
    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
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
        self._cache: dict = {}

    def _split(self, args, kwargs):
        n = len(args)
        static_pos = {i % n for i in self.static_argnums if -n <= i < n} if n else set()
        statics = tuple((i, _hashable_static(args[i], i)) for i in sorted(static_pos))
        static_kw = tuple(sorted((k, _hashable_static(v, k)) for k, v in kwargs.items()
                                 if k in self.static_argnames))
        dyn_args = [a for i, a in enumerate(args) if i not in static_pos]
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return statics, static_kw, dyn_args, dyn_kw

    def _trace(self, args, kwargs):
        statics, static_kw, dyn_args, dyn_kw = self._split(args, kwargs)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kw))
        avals = tuple(_abstractify(x) for x in leaves)
        key = (in_tree, avals, statics, static_kw)
        hit = self._cache.get(key)
        if hit is None:
            t0 = time.perf_counter()
            out_tree_box = []
            static_pos = dict(statics)

            def flat(*tracers):
                d_args, d_kw = tree_util.tree_unflatten(in_tree, list(tracers))
                it = iter(d_args)
                full = [static_pos[i] if i in static_pos else next(it)
                        for i in range(len(d_args) + len(static_pos))]
                kw = dict(d_kw)
                kw.update(dict(static_kw))
                out = self.fun(*full, **kw)
                out_leaves, out_tree = tree_util.tree_flatten(out)
                out_tree_box.append(out_tree)
                return out_leaves

            per_arg = [len(tree_util.tree_leaves(a)) for a in dyn_args]
            names = arg_names_of(self.fun, per_arg)
            names += [f"{k}" for k in dyn_kw]
            closed = trace_flat(flat, avals, DebugInfo("jit", self.fun, names))
            hit = (closed, out_tree_box[0])
            self._cache[key] = hit
            if _cfg.jax_log_compiles:
                logger.warning("Finished tracing + transforming %s for jit in %.3f s",
                               getattr(self.fun, "__name__", "fun"), time.perf_counter() - t0)
        return hit, leaves

    def __call__(self, *args, **kwargs):
        if _cfg.jax_disable_jit:
            return self.fun(*args, **kwargs)
        (closed, out_tree), leaves = self._trace(args, kwargs)
        name = getattr(self.fun, "__name__", "fun")
        if current_builder() is not None:
            outs = pjit_p.bind(*leaves, jaxpr=closed, name=name)
        else:
            outs = self._run(closed, leaves, name)
        return tree_util.tree_unflatten(out_tree, list(outs))

    def _run(self, closed, leaves, name):
        from .backend.execute import Compiled
        comp = getattr(closed, "_compiled", None)
        if comp is None:
            t0 = time.perf_counter()
            comp = Compiled(closed, name)
            closed._compiled = comp
            if _cfg.jax_log_compiles:
                logger.warning("Compiling %s with %d kernels for args %s took %.3f s", name,
                               len(comp.plan.steps), [a.str_short() for a in closed.in_avals],
                               time.perf_counter() - t0)
        arrays = [a if isinstance(a, Array) else asarray_device(a) for a in leaves]
        return comp(arrays)

    def lower(self, *args, **kwargs):
        from .backend.execute import Compiled
        (closed, _), _ = self._trace(args, kwargs)
        comp = getattr(closed, "_compiled", None) or Compiled(closed, getattr(self.fun, "__name__", "fun"))
        closed._compiled = comp
        return Lowered(closed, comp)

    def trace(self, *args, **kwargs):
        (closed, _), _ = self._trace(args, kwargs)
        return closed

    def clear_cache(self):
        self._cache.clear()

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(), **kwargs):
    if fun is None:
        return lambda f: jit(f, static_argnums=static_argnums, static_argnames=static_argnames,
                             donate_argnums=donate_argnums)
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun!r}")
    return JitWrapped(fun, static_argnums, static_argnames, donate_argnums)


# --------------------------------------------------------------------------- vmap

def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    """Vectorizing map: ``fun`` mapped over the ``in_axes`` of its arguments (a jaxpr rewrite,
    see ``wjax/transforms/vmap.py``); the mapped axis of each output goes to ``out_axes``."""
    from .transforms.vmap import vmap as _vmap
    return _vmap(fun, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size,
                 spmd_axis_name=spmd_axis_name)


_pjit_batched: dict = {}


def _pjit_batch(args, dims, *, jaxpr, name):
    """vmap of a jit call: the inner jaxpr is batched (memoized per jaxpr and dims)."""
    from .transforms.batching import axis_size
    from .transforms.vmap import vmap_closed_jaxpr
    n = axis_size(args, dims)
    key = (id(jaxpr), tuple(dims), n)
    hit = _pjit_batched.get(key)
    if hit is None or hit[0] is not jaxpr:
        if len(_pjit_batched) > 256:
            _pjit_batched.clear()
        hit = _pjit_batched[key] = (jaxpr,) + vmap_closed_jaxpr(jaxpr, dims, n)
    _, batched, out_dims = hit
    return pjit_p.bind(*args, jaxpr=batched, name=name), list(out_dims)


pjit_p.batch = _pjit_batch
