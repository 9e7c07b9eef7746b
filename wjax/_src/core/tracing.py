"""Tracing: builders, tracers, ``bind``, ``make_jaxpr`` and concreteness errors.

Tracing is an interpreter swap.  While a :class:`Builder` is active (a stack,
innermost last), binding a primitive appends an equation to it and returns
tracers; with no builder active the primitive runs eagerly through the
backend.  Tracers of an outer builder that reach an inner one are captured as
constvars of the inner jaxpr (closure conversion), so nested traces (``jit``
inside ``grad`` inside ``vmap``) compose.  Tracers of a finished builder are
leaked tracers and raise :class:`UnexpectedTracerError`.

Autodiff called outside ``jit`` (``grad``, ``jvp``, ``vjp``, ``linearize`` and what is built on
them) traces with the values known, as JAX differentiates with concrete primals: such a
builder holds its inputs' values, and a tracer's value is computed on demand (the equations it
depends on run eagerly) when Python asks for it -- ``bool``, ``int``, ``operator.index``,
``.item()``, boolean masks, sizes.  Python control flow then takes that path and the jaxpr
records it; the jaxpr is specialised to those values (its structure and literals show the
path taken, so the structural compile cache of ``wjax/_src/dispatch.py`` never reuses it for
another path).
``jit``, ``vmap``, ``checkpoint`` and control-flow bodies trace abstractly: there the same
conversions raise JAX's errors.
"""
from __future__ import annotations

import contextlib
import gc
import inspect
import operator
import os
import sys
import threading
from typing import Any, Callable

import numpy as np

from . import traceback_util as _tb
from .errors import (ConcretizationTypeError, NonConcreteBooleanIndexError,  # noqa: F401
                     TracerArrayConversionError, TracerBoolConversionError,
                     TracerIntegerConversionError, UnexpectedTracerError)
from .ir import (ClosedJaxpr, Eqn, Jaxpr, Lit, ShapeDtypeStruct, ShapedArray, Var, WeakScalar,
                 raise_to_shaped)
from . import tree_util
from .config import config as _config

# --------------------------------------------------------------------------- builders

class DebugInfo:
    """Where a trace came from, for error messages."""

    def __init__(self, what: str, fun: Callable | None, arg_names: list[str] | None = None):
        self.what = what
        self.fun_name = (
            getattr(fun, "__name__", "<unnamed function>") if fun is not None else "<fn>"
        )
        try:
            code = fun.__code__
            self.where = f"{code.co_filename}:{code.co_firstlineno}"
        except AttributeError:
            self.where = "<unknown>"
        self.arg_names = arg_names or []
        self.differentiated = False     # a trace that autodiff rewrites (grad, vjp, jvp, ...)


def arg_names_of(fun, n_leaves_per_arg: list[int], static: set[int] = frozenset()) -> list[str]:
    """Names of flattened argument leaves: 'x', or 'params[0]' for pytree args."""
    try:
        names = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        names = []
    out = []
    pos = 0
    for i, n in enumerate(n_leaves_per_arg):
        base = names[i] if i < len(names) else f"args[{i}]"
        out.extend([base] if n == 1 else [f"{base}[{j}]" for j in range(n)])
        pos += n
    return out


class _TraceState(threading.local):
    """The stack of active builders, one per thread (JAX's trace context is thread-local):
    a thread tracing a jit function never turns another thread's eager ops into equations."""

    def __init__(self):
        self.builders: list["Builder"] = []


_state = _TraceState()


class Builder:
    def __init__(self, debug: DebugInfo | None = None, with_values: bool = False):
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        self.alive = True
        self.debug = debug
        self.producer: dict[int, Eqn] = {}
        # with_values: the inputs' values are known (autodiff outside jit); var id -> value
        # (an Array, a host value, or a Tracer of an enclosing builder, resolved on demand)
        self.with_values = with_values
        self.values: dict[int, Any] = {}

    # ------------------------------------------------------------------ vars
    def new_arg(self, aval: ShapedArray, value=None) -> "Tracer":
        v = Var(aval)
        self.invars.append(v)
        if self.with_values and value is not None:
            self.values[v.id] = value
        return Tracer(aval, self, v)

    def add_const(self, val, aval: ShapedArray) -> Var:
        key = id(val)
        if key in self._const_ids:
            return self._const_ids[key]
        v = Var(aval)
        self.constvars.append(v)
        self.consts.append(val)
        self._const_ids[key] = v
        if self.with_values:
            self.values[v.id] = val
        return v

    # ------------------------------------------------------------------ values
    def concrete_value(self, var: Var):
        """The value of ``var`` as a NumPy array, or None when it depends on an input whose
        value this trace does not know.  The equations it needs run eagerly, once."""
        if not self.with_values:
            return None
        need, stack, seen = set(), [var], set()
        while stack:                       # the backward slice of var
            v = stack.pop()
            if not isinstance(v, Var) or v.id in seen:
                continue
            seen.add(v.id)
            if v.id in self.values:
                continue
            e = self.producer.get(v.id)
            if e is None:                  # an input without a known value
                return None
            need.add(id(e))
            stack.extend(e.invars)
        for vid in seen:                   # resolve inputs held as tracers of outer traces
            x = self.values.get(vid)
            if isinstance(x, Tracer):
                x = x.builder.concrete_value(x._var)
                if x is None:
                    return None
                self.values[vid] = x
        with _eager():
            for e in self.eqns:
                if id(e) not in need:
                    continue
                args = [a.operand if isinstance(a, Lit) else self.values[a.id] for a in e.invars]
                outs = e.prim.bind(*args, **e.params)
                for v, o in zip(e.outvars, outs if e.prim.multiple_results else [outs]):
                    self.values[v.id] = o
        return np.asarray(self.values[var.id])

    def to_atom(self, x) -> Var | Lit:
        if isinstance(x, Tracer):
            if x.builder is self:
                return x._var
            if not x.builder.alive:
                raise _leak_error(x)
            if x.builder in _state.builders:   # an outer trace: capture it
                return self.add_const(x, x.aval)
            raise _leak_error(x)
        if isinstance(x, WeakScalar):
            return Lit(x.val, x.aval)
        if isinstance(x, (bool, int, float, complex, np.generic)) or (
            isinstance(x, np.ndarray) and x.ndim == 0
        ):
            return Lit(x)
        if isinstance(getattr(x, "aval", None), ShapedArray):   # a concrete array (wjax.Array)
            return self.add_const(x, x.aval)
        if isinstance(x, np.ndarray):     # a host array: the backend uploads it with the consts
            return self.add_const(x, raise_to_shaped(x))
        raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid wjax type")

    # ------------------------------------------------------------------ eqns
    def add_eqn(self, prim, args, params, out_avals):
        invars = [self.to_atom(a) for a in args]
        outs = [Tracer(a, self, Var(a)) for a in out_avals]
        eqn = Eqn(prim, invars, [t._var for t in outs], params, current_source())
        self.eqns.append(eqn)
        for t in outs:
            self.producer[t._var.id] = eqn
        return outs

    def build(self, outs) -> ClosedJaxpr:
        outvars = [self.to_atom(o) for o in outs]
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns)
        return ClosedJaxpr(jaxpr, self.consts)

    # ------------------------------------------------------------------ debug
    def depends_on(self, var: Var) -> list[str]:
        """Names of the traced arguments that a variable depends on."""
        seen, stack, found = set(), [var], set()
        inv = {v.id: i for i, v in enumerate(self.invars)}
        while stack:
            v = stack.pop()
            if not isinstance(v, Var) or v.id in seen:
                continue
            seen.add(v.id)
            if v.id in inv:
                found.add(inv[v.id])
            elif v.id in self.producer:
                stack.extend(self.producer[v.id].invars)
        names = self.debug.arg_names if self.debug else []
        return [names[i] if i < len(names) else f"args[{i}]" for i in sorted(found)]


# --------------------------------------------------------------------------- source info

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class SourceInfo:
    """Where user code bound an equation: the innermost frame outside wjax (its line and
    column are computed only when asked)."""

    __slots__ = ("code", "lasti", "lineno")

    def __init__(self, code, lasti: int, lineno: int):
        self.code, self.lasti, self.lineno = code, lasti, lineno

    def __str__(self):
        col = None
        positions = getattr(self.code, "co_positions", None)
        if positions is not None:
            try:
                col = list(positions())[self.lasti // 2][2]
            except (IndexError, TypeError):
                col = None
        where = f"{self.code.co_filename}:{self.lineno}" + ("" if col is None else f":{col}")
        # the function's qualified name, as JAX prints it (Python 3.11+; the name before)
        return f"{where} ({getattr(self.code, 'co_qualname', self.code.co_name)})"


class _SourceState(threading.local):
    def __init__(self):
        self.inherited: list = []


_source_state = _SourceState()


def current_source() -> SourceInfo | None:
    """The source of an equation being bound now: the equation a transformation is rewriting
    (``source_of``), else the innermost calling frame outside wjax."""
    if _source_state.inherited:
        return _source_state.inherited[-1]
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    return None if f is None else SourceInfo(f.f_code, f.f_lasti, f.f_lineno)


@contextlib.contextmanager
def source_of(eqn: Eqn):
    """Equations bound inside (a rule rewriting ``eqn``) take ``eqn``'s source, as in JAX."""
    _source_state.inherited.append(eqn.source)
    try:
        yield
    finally:
        _source_state.inherited.pop()


class _AxisEnv(threading.local):
    """The named axes bound while a function is traced (``vmap(f, axis_name=...)``)."""

    def __init__(self):
        self.frames: list[tuple[Any, int]] = []


_axis_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(name: Any, size: int):
    """Binds the axis ``name`` (of ``size`` examples) while tracing in this context."""
    _axis_env.frames.append((name, size))
    try:
        yield
    finally:
        _axis_env.frames.pop()


def axis_env() -> tuple:
    """The bound axes, outermost first: a jit trace made under them is only valid there."""
    return tuple(_axis_env.frames)


def bound_axis_size(name: Any) -> int:
    """The size of the bound axis ``name``; JAX's NameError when none is bound."""
    for n, size in reversed(_axis_env.frames):
        if n == name:
            return size
    raise NameError(f"unbound axis name: {name}")


def current_builder() -> Builder | None:
    b = _state.builders
    return b[-1] if b else None


def builder_stack() -> tuple:
    """The active builders, outermost first."""
    return tuple(_state.builders)


def trace_state_clean() -> bool:
    """No trace is being recorded (no jit, grad, vmap... around): primitives bound now run
    eagerly (JAX's ``jax._src.core.trace_state_clean``)."""
    return current_builder() is None


@contextlib.contextmanager
def _eager():
    """No active builder inside: primitives bound here run eagerly."""
    saved, _state.builders = _state.builders, []
    try:
        yield
    finally:
        _state.builders = saved


@contextlib.contextmanager
def new_builder(debug: DebugInfo | None = None, with_values: bool = False):
    b = Builder(debug, with_values)
    _state.builders.append(b)
    try:
        yield b
    finally:
        _state.builders.pop()
        b.alive = False


def _leak_error(t: "Tracer") -> UnexpectedTracerError:
    where = ""
    if t.builder.debug is not None:
        d = t.builder.debug
        where = f" It was created while tracing {d.fun_name} for {d.what} (defined at {d.where})."
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer: {t!r}. A function transformed by wjax had a side "
        f"effect that let an intermediate value escape its trace (for example by storing it in "
        f"a global or in an attribute).{where} Return the value from the function instead.")


# --------------------------------------------------------------------------- bind

def _no_backend(prim, args, params):
    raise RuntimeError("wjax: no backend to run primitives eagerly (import wjax, not wjax.core)")


_run_eagerly = _no_backend


def set_eager(run) -> None:
    """Installs ``run(prim, args, params)``, which runs a primitive on concrete values (the
    dispatch layer does, at import): the core never imports what is above it."""
    global _run_eagerly
    _run_eagerly = run


class _CompileTimeEval(threading.local):
    def __init__(self):
        self.depth = 0


_compile_time_eval = _CompileTimeEval()


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Inside, operations on concrete values run at once even while tracing (``jit``): their
    results are concrete arrays Python can branch on.  Operations on tracers still trace."""
    _compile_time_eval.depth += 1
    try:
        yield
    finally:
        _compile_time_eval.depth -= 1


# shardings in types (``wjax/_src/partition.py`` installs it): (prim, in avals, params, out aval)
# -> the out aval carrying the sharding its operands' imply
_type_rule = None


def set_type_rule(rule) -> None:
    global _type_rule
    _type_rule = rule


# eager shard_map (``wjax/_src/spmd.py`` installs it): while a body runs eagerly over per-device
# values, ``_manual_hook(prim, args, params)`` runs each primitive on every device
_manual_hook = None


def set_manual_hook(hook) -> None:
    global _manual_hook
    _manual_hook = hook


def bind(prim, args, params):
    """Binds a primitive: traced when a builder is active, else run eagerly.  An API boundary:
    an error leaving it loses wjax's frames (``traceback_util``)."""
    _wjax_api_boundary = True  # noqa: F841 (read by traceback_util)
    try:
        return _bind(prim, args, params)
    except Exception as e:
        _tb.filtered(e)
        raise


def _bind(prim, args, params):
    b = current_builder()
    if b is not None and _compile_time_eval.depth and not any(
            isinstance(a, Tracer) for a in args):
        with _eager():
            return bind(prim, args, params)
    if b is None:
        if _manual_hook is not None and _manual_hook.active:
            return _manual_hook(prim, args, params)
        for a in args:
            if isinstance(a, Tracer):
                raise _leak_error(a)
        if prim.impl is not None:
            return prim.impl(*args, **params)
        return _run_eagerly(prim, args, params)
    avals = [raise_to_shaped(a) if not isinstance(a, Tracer) else a.aval for a in args]
    out = prim.abstract_eval(*avals, **params)
    if _type_rule is not None and not prim.multiple_results and any(
            type(a) is not ShapedArray for a in avals):
        out = _type_rule(prim, avals, params, out)
    if prim.multiple_results:
        return b.add_eqn(prim, args, params, list(out))
    return b.add_eqn(prim, args, params, [out])[0]


def eval_jaxpr(jaxpr: Jaxpr, consts, *args):
    """Evaluates a jaxpr by binding each equation (tracing or eager)."""
    env: dict[int, Any] = {}

    def read(a):
        return a.operand if isinstance(a, Lit) else env[a.id]

    for v, x in zip(jaxpr.constvars, consts):
        env[v.id] = x
    for v, x in zip(jaxpr.invars, args):
        env[v.id] = x
    for e in jaxpr.eqns:
        out = e.prim.bind(*[read(a) for a in e.invars], **e.params)
        for v, o in zip(e.outvars, out if e.prim.multiple_results else [out]):
            env[v.id] = o
    return [read(a) for a in jaxpr.outvars]


def trace_flat(fun_flat: Callable, in_avals, debug: DebugInfo | None = None, values=None,
               check_leaks: bool = False):
    """Traces ``fun_flat(*tracers) -> list`` into a ClosedJaxpr.  With ``values`` (one per
    input) the trace knows the inputs' values: Python may branch on the traced values.
    ``check_leaks``: under ``jax_check_tracer_leaks``, raise if a tracer outlives the trace."""
    with new_builder(debug, with_values=values is not None) as b:
        tracers = [b.new_arg(a, None if values is None else x)
                   for a, x in zip(in_avals, values or [None] * len(in_avals))]
        outs = fun_flat(*tracers)
        closed = b.build(outs)
    if check_leaks and _config.jax_check_tracer_leaks:
        del tracers, outs
        _check_leaks(b)
    return closed


def _check_leaks(b: Builder) -> None:
    """``jax_check_tracer_leaks``: a tracer of a finished trace still referenced from
    somewhere (a global, a closure, a list outside) is a leak."""
    gc.collect()
    leaked = [r for r in gc.get_referrers(b) if isinstance(r, Tracer)]
    if leaked:
        what = b.debug.what if b.debug is not None else "trace"
        msgs = "\n\n".join(repr(t) for t in leaked)
        raise Exception(f"Leaked trace of {what}. Leaked tracer(s):\n\n{msgs}\n")


# --------------------------------------------------------------------------- tracers

def tracer_repr(builder: Builder, aval, primal_text: Callable[[], str],
                dtype_name: str | None = None) -> str:
    """How JAX prints a tracer: ``JitTracer(float32[3])`` under ``jit`` (``~`` marks a weak
    type), ``VmapTracer(aval=...)`` under ``vmap``, ``GradTracer(primal=..., typeof(tangent)=...)``
    for autodiff outside ``jit`` (where the primal value is known)."""
    name = dtype_name or np.dtype(aval.dtype).name
    long = f"{'~' if aval.weak_type else ''}{name}[{','.join(map(str, aval.shape))}]"
    if builder.debug is not None and builder.debug.what == "vmap":
        return f"VmapTracer(aval={long})"
    if builder.with_values:
        try:
            primal = primal_text()
        except Exception:                 # a value that cannot be computed: show its type
            primal = long
        return f"GradTracer(primal={primal}, typeof(tangent)={aval.str_short()})"
    return f"JitTracer({long})"


_ABSTRACT_VALUE = ("Abstract tracer value encountered where concrete value is expected: traced "
                   "array with shape {shape}")


class Tracer:
    """A traced value: an aval and the variable it stands for in a builder.  Its operators and
    array methods are installed by ``wjax/numpy/array_methods.py`` (shared with Array)."""

    __slots__ = ("aval", "builder", "_var")   # not ``var``: that is the array method
    __array_priority__ = 1000

    def __init__(self, aval: ShapedArray, builder: Builder, var: Var):
        self.aval, self.builder, self._var = aval, builder, var

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    _trace = property(lambda self: BuilderTrace(self.builder))

    def __repr__(self):
        return tracer_repr(self.builder, self.aval, self._primal_text)

    def _primal_text(self) -> str:
        return str(np.asarray(self.to_concrete_value()))

    # -------------------------------------------------------- concreteness
    def _concrete_error(self, cls, head: str, context: str = ""):
        """JAX's message: what was attempted on which traced array, ``context``, the function
        being traced and the arguments the value depends on, and the errors page."""
        b = self.builder
        a = self.aval
        shape = f"{getattr(a.dtype, 'name', a.dtype)}[{','.join(map(str, a.shape))}]"
        msg = (head.replace("{shape}", shape) + "\n"
               + (context.replace("{shape}", shape) + "\n" if context else ""))
        if b.debug is not None:
            deps = b.depends_on(self._var)
            msg += (f"The error occurred while tracing the function {b.debug.fun_name} at "
                    f"{b.debug.where} for {b.debug.what}.")
            if deps:
                msg += (" This concrete value was not available in Python because it depends on "
                        f"the value of the argument{'s' if len(deps) > 1 else ''} "
                        + ", ".join(f"{d}" for d in deps) + ".")
            msg += "\n"
        if cls is ConcretizationTypeError:
            msg += "\n"
        msg += f"See https://docs.jax.dev/en/latest/errors.html#jax.errors.{cls.__name__}"
        return cls(msg)

    def _abstract_value_error(self, fn: str):
        return self._concrete_error(
            ConcretizationTypeError, _ABSTRACT_VALUE,
            f"The problem arose with the `{fn}` function. If trying to convert the data type of "
            f"a value, try using `x.astype({fn})` or `jnp.array(x, {fn})` instead.")

    def to_concrete_value(self):
        """The value as a NumPy array when this trace knows it (autodiff outside jit), else None."""
        return self.builder.concrete_value(self._var)

    def __bool__(self):
        v = self.to_concrete_value()
        if v is not None:
            return bool(v)
        raise self._concrete_error(
            TracerBoolConversionError,
            "Attempted boolean conversion of traced array with shape {shape}.")

    def __int__(self):
        v = self.to_concrete_value()
        if v is not None:
            return int(v)
        raise self._abstract_value_error("int")

    def __float__(self):   # as in JAX, even where the value is known: use .item()
        raise self._abstract_value_error("float")

    def __complex__(self):
        raise self._abstract_value_error("complex")

    def __index__(self):
        v = self.to_concrete_value()
        if v is not None:
            return operator.index(v[()] if v.ndim == 0 else v)
        raise self._concrete_error(
            TracerIntegerConversionError,
            "The __index__() method was called on traced array with shape {shape}")

    def __array__(self, dtype=None, copy=None):
        raise self._concrete_error(
            TracerArrayConversionError,
            "The numpy.ndarray conversion method __array__() was called on traced array with "
            "shape {shape}")

    def tolist(self):
        raise self._concrete_error(
            ConcretizationTypeError, _ABSTRACT_VALUE,
            "The tolist() method was called on traced array with shape {shape}.")

    def item(self, *args):
        v = self.to_concrete_value()
        if v is not None:
            return v.item(*args)
        raise self._concrete_error(ConcretizationTypeError, _ABSTRACT_VALUE,
                                   "This occurred in the item() method of jax.Array")

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __hash__(self):
        raise TypeError(f"unhashable type: {type(self).__name__}")


def to_concrete_value(x):
    """``x`` itself, or a tracer's value where its trace knows it, or None."""
    return x.to_concrete_value() if isinstance(x, Tracer) else x


def is_concrete(x) -> bool:
    return to_concrete_value(x) is not None


def concrete_or_error(x, what: str = "a concrete value is required"):
    """Returns a NumPy value for ``x`` or raises ConcretizationTypeError."""
    if isinstance(x, Tracer):
        v = x.to_concrete_value()
        if v is None:
            raise x._concrete_error(ConcretizationTypeError, _ABSTRACT_VALUE, what)
        return v
    return np.asarray(x)


def make_jaxpr(fun: Callable, static_argnums=(), return_shape: bool = False):
    """``make_jaxpr(f)(*args)`` returns the ClosedJaxpr of ``f`` at ``args``."""
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)

    def make(*args, **kwargs):
        static = set(i % len(args) for i in static_argnums) if args else set()
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
        avals = [raise_to_shaped(x).strip_weak() if not _is_weak_scalar(x) else raise_to_shaped(x)
                 for x in leaves]
        out_tree_box = []

        def flat(*tracers):
            dargs, kw = tree_util.tree_unflatten(in_tree, list(tracers))
            it = iter(dargs)
            full = [args[i] if i in static else next(it) for i in range(len(args))]
            out = fun(*full, **kw)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves

        debug = DebugInfo("make_jaxpr", fun, arg_names_of(fun, [1] * len(leaves)))
        closed = trace_flat(flat, avals, debug)
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
            return closed, tree_util.tree_unflatten(out_tree_box[0], shapes)
        return closed

    return make


def _is_weak_scalar(x) -> bool:
    return isinstance(x, (int, float, complex)) and not isinstance(x, bool)


# --------------------------------------------------------------------------- JAX's Trace API

_NO_TRACE_OBJECTS = ("wjax traces by recording jaxprs (Builder), not through JAX's Trace "
                     "objects: a Trace subclass cannot intercept primitives")


class BuilderTrace:
    """What ``find_top_trace`` answers and a tracer's ``_trace`` is: the builder recording the
    jaxpr, as the ``main`` of JAX's trace (equinox's ``filter_jvp`` tells the outputs that
    depend on its inputs by ``x._trace.main is find_top_trace(inputs).main``)."""

    __slots__ = ("main",)

    def __init__(self, builder):
        self.main = builder


def find_top_trace(xs) -> BuilderTrace:
    """The trace being recorded (JAX: the innermost trace of ``xs`` or the current one)."""
    del xs
    return BuilderTrace(current_builder())


class Trace:
    """JAX's base class for interpreters that intercept every primitive.  wjax transforms
    jaxprs instead (``wjax/_src/transforms/``); the class exists for libraries that subclass it at
    import time (haiku's ``experimental.to_dot``), and refuses to be made."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_NO_TRACE_OBJECTS)


class TraceTag:
    """JAX's identity of a trace (unused by wjax)."""


def take_current_trace():
    raise NotImplementedError(_NO_TRACE_OBJECTS)


def set_current_trace(trace, check_leaks: bool = False):
    raise NotImplementedError(_NO_TRACE_OBJECTS)
