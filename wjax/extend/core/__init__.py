"""``jax.extend.core``: user-defined primitives and the IR's data structures, as JAX names
them, over wjax's own core.

A :class:`Primitive` made here follows JAX's "primitives" tutorial: ``def_impl`` (eager),
``def_abstract_eval`` (shapes), and rules registered in ``jax.interpreters.ad`` (jvp,
transpose), ``jax.interpreters.batching`` (vmap) and ``jax.interpreters.mlir`` (lowering).
wjax lowers to WGSL, not MLIR: a lowering given as ``mlir.lower_fun(fun)`` (or as an MLIR
rule over elementwise ``hlo`` operations) is traced and inlined into the kernels; without one,
``jit`` raises NotImplementedError, as JAX does.  The ``impl`` runs eagerly -- also inside
the programs wjax compiles for an eager ``grad`` or ``vmap`` (JAX runs those op by op),
traced, or on the host as a ``pure_callback`` when it needs concrete values.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..._src.api.callbacks import pure_callback
from ..._src.api.jit import compiling_user_jit
from ..._src.core.errors import ConcretizationTypeError, TracerArrayConversionError
from ..._src.core.ir import (ClosedJaxpr, DropVar, Eqn as JaxprEqn, Jaxpr, JaxprTypeError, Lit as
                            Literal, ShapedArray, ShapeDtypeStruct, Var, raise_to_shaped, subjaxprs)
from ..._src.core.ir import abstractify, typecheck as check_jaxpr
from ..._src.core.primitive import Primitive as _CorePrimitive
from ..._src.core.tracing import (Trace, TraceTag, Tracer, concrete_or_error, current_builder,
                                 eval_jaxpr, find_top_trace, set_current_trace,
                                 take_current_trace, trace_flat)

__all__ = ["ClosedJaxpr", "DropVar", "Effect", "Effects", "Jaxpr", "JaxprEqn", "JaxprTypeError",
           "Literal", "Primitive", "ShapedArray", "Trace", "TraceTag", "Tracer", "Var",
           "check_jaxpr", "concrete_or_error", "find_top_trace",
           "get_opaque_trace_state", "jaxpr_as_fun", "jaxprs_in_params", "mapped_aval",
           "new_jaxpr_eqn", "no_effects", "set_current_trace", "subjaxprs",
           "take_current_trace", "unmapped_aval", "valid_jaxtype"]


def _as_aval(a) -> ShapedArray:
    return a if isinstance(a, ShapedArray) else raise_to_shaped(a)


class Primitive(_CorePrimitive):
    """A user primitive: ``p = Primitive("name")``; ``p.multiple_results = True`` for a
    primitive returning a list; ``p.bind(*args, **params)`` applies it."""

    def __init__(self, name: str):
        self._lowering: Callable | None = None
        super().__init__(name, register=False)
        self.impl = self._no_impl
        self.abstract_eval = self._no_abstract_eval

    def _no_impl(self, *args, **params):
        raise NotImplementedError(f"Evaluation rule for '{self.name}' not implemented")

    def _no_abstract_eval(self, *avals, **params):
        raise NotImplementedError(f"Abstract evaluation for '{self.name}' not implemented")

    def def_impl(self, impl: Callable) -> Callable:
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule: Callable) -> Callable:
        def abstract_eval(*avals, **params):
            out = rule(*avals, **params)
            if self.multiple_results:
                return [_as_aval(a) for a in out]
            return _as_aval(out)
        self.abstract_eval = abstract_eval
        return rule

    def def_effectful_abstract_eval(self, rule: Callable) -> Callable:
        """``rule(*avals, **params) -> (avals, effects)``; a primitive with effects is never
        removed as dead code."""
        def avals_only(*avals, **params):
            out, effects = rule(*avals, **params)
            if effects:
                self.effectful = True
            return out
        self.def_abstract_eval(avals_only)
        return rule

    # the backend inlines ``expand``: the registered lowering (``jax.interpreters.mlir``)
    @property
    def expand(self):
        return self._lowering if self._lowering is not None else self._no_lowering

    @expand.setter
    def expand(self, fun):
        self._lowering = fun

    def _no_lowering(self, *xs, **params):
        """Without a lowering rule, a user's ``jit`` fails as JAX's does; the programs wjax
        compiles for eager ``grad``/``vmap`` (which JAX runs op by op, calling the impl)
        inline the impl instead: traced, or on the host when it needs concrete values."""
        if compiling_user_jit():
            raise NotImplementedError(f"MLIR translation rule for primitive '{self.name}' "
                                      "not found for platform webgpu")
        avals = [x.aval if isinstance(x, Tracer) else raise_to_shaped(x) for x in xs]

        def flat(*ys):
            out = self.impl(*ys, **params)
            return list(out) if self.multiple_results else [out]
        try:
            closed = trace_flat(flat, avals)
        except (TracerArrayConversionError, ConcretizationTypeError):
            return self._host_impl(xs, avals, params)
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *xs)
        return outs if self.multiple_results else outs[0]

    def _host_impl(self, xs, avals, params):
        out = self.abstract_eval(*avals, **params)
        outs = list(out) if self.multiple_results else [out]
        shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in outs]

        def on_host(*values):
            res = self.impl(*values, **params)
            res = list(res) if self.multiple_results else [res]
            return [np.asarray(r, a.dtype) for r, a in zip(res, outs)]
        res = pure_callback(on_host, shapes, *xs, vmap_method="sequential")
        return res if self.multiple_results else res[0]


class Effect:
    """JAX's base class of side effects an equation may have (wjax marks effectful primitives
    with the ``effectful`` flag instead; libraries subclass this to name theirs)."""


Effects = set
no_effects: frozenset = frozenset()


def jaxpr_as_fun(closed: ClosedJaxpr) -> Callable:
    """A function evaluating a closed jaxpr (``jax.core.jaxpr_as_fun``)."""
    def fun(*args):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return fun


def jaxprs_in_params(params: dict) -> list:
    """The jaxprs among an equation's parameters."""
    return list(subjaxprs(params))


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None) -> JaxprEqn:
    return JaxprEqn(primitive, list(invars), list(outvars), dict(params))


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """``aval`` without its mapped axis ``axis`` (of length ``size``)."""
    if axis is None:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} is not of size {size}")
    return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray,
                  explicit_mesh_axis: Any = None) -> ShapedArray:
    """``aval`` with a mapped axis of length ``size`` inserted at ``axis``."""
    if axis is None:
        return aval
    shape = list(aval.shape)
    shape.insert(axis, size)
    return aval.update(shape=tuple(shape))


class _OpaqueTraceState:
    __slots__ = ("_builder",)

    def __init__(self, builder):
        self._builder = builder

    def __eq__(self, other):
        return isinstance(other, _OpaqueTraceState) and other._builder is self._builder

    def __hash__(self):
        return id(self._builder)


def get_opaque_trace_state(convention: Any = None) -> _OpaqueTraceState:
    """An object equal to another exactly when both were taken under the same trace."""
    return _OpaqueTraceState(current_builder())


def valid_jaxtype(x) -> bool:
    """Whether ``x`` is a value JAX takes as an array (an array, tracer, NumPy value or Python
    scalar, or anything with a shape and dtype); distrax asks it of its attributes."""
    try:
        abstractify(x)
    except TypeError:
        return False
    return True
