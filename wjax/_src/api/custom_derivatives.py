"""``custom_jvp`` and ``custom_vjp``: user-defined derivative rules as call primitives.

Under a trace, calling a ``custom_jvp`` function binds ``custom_jvp_call`` with

    jaxpr      the primal function's ClosedJaxpr (what jit compiles: the backend inlines it)
    jvp_jaxpr  the user's rule traced to a ClosedJaxpr (operands, tangents) -> (outs, out tangents)

and a ``custom_vjp`` function binds ``custom_vjp_call`` with the primal ``jaxpr``,
``fwd_jaxpr`` (operands -> outs, residuals) and ``bwd_jaxpr`` (residuals, cts -> cts).
The rules are traced when the call is bound (while the values they close over
are live); a rule whose own tracing calls the function again gets a lazily
traced rule instead (no infinite recursion).  Values the functions close over
become the first ``num_consts`` operands.

The jvp of ``custom_vjp_call`` runs ``fwd`` and emits ``custom_lin`` (linear in
the tangents) whose transpose runs ``bwd``; evaluating ``custom_lin`` forward
raises JAX's "can't apply forward-mode autodiff (jvp) to a custom_vjp function".

The primitives and their rules are in ``wjax/_src/prims/calls.py``.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Any

import numpy as np

from ..core import dtypes, ops, tree_util
from ..core.tree import flatten_call
from ..array import asarray_device
from ..core.ir import ClosedJaxpr, Jaxpr, LazyJaxpr, PerturbedRule, Var, WeakScalar, abstractify
from ..core.tracing import (DebugInfo, Tracer, builder_stack, current_builder, eval_jaxpr,
                            to_concrete_value, trace_flat)
from ..prims.calls import custom_jvp_call_p, custom_vjp_call_p
from ..prims.solves import linear_call_p
from ..transforms import ad as _ad

# --------------------------------------------------------------------------- helpers


def _split_consts(closed: ClosedJaxpr):
    """(jaxpr with tracer consts moved to leading invars, those tracers, remaining consts)."""
    closed = _ad.hoist_call_consts(closed)
    j = closed.jaxpr
    tv, tc, kv, kc = [], [], [], []
    for v, c in zip(j.constvars, closed.consts):
        if isinstance(c, Tracer):
            tv.append(v)
            tc.append(c)
        else:
            kv.append(v)
            kc.append(c)
    return Jaxpr(kv, tv + j.invars, j.outvars, j.eqns), tc, kc


def _with_leading(jaxpr: Jaxpr, consts, before_avals, own_vars, after_avals) -> ClosedJaxpr:
    """``jaxpr`` whose leading tracer-const invars ``own_vars`` sit among dummies for the
    other calls' consts: invars = [dummies(before), own, dummies(after), rest]."""
    n = len(own_vars)
    rest = jaxpr.invars[n:]
    inv = (
        [Var(a) for a in before_avals]
        + list(jaxpr.invars[:n])
        + [Var(a) for a in after_avals]
        + rest
    )
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, inv, jaxpr.outvars, jaxpr.eqns), consts)


def _resolve(fun, args, kwargs):
    if not kwargs:
        return tuple(args)
    sig = inspect.signature(fun)
    ba = sig.bind(*args, **kwargs)
    ba.apply_defaults()
    return tuple(ba.args) + tuple(ba.kwargs.values())


def _differentiating() -> bool:
    """Whether the current trace is one autodiff will differentiate (``grad``, ``vjp``, ...):
    there, as in JAX, a custom function's rule is traced instead of the function itself."""
    b = current_builder()
    return b is not None and getattr(b.debug, "differentiated", False)


def _differentiation_depth() -> int:
    """How many traces on the stack autodiff will differentiate: JAX processes a custom_jvp
    call once per differentiating trace, the rule of each level calling the function at the
    level below, so under ``grad(grad(f))`` the rule runs twice and ``f`` once."""
    return sum(1 for b in builder_stack() if getattr(b.debug, "differentiated", False))


def _closes_over_tracers(fn) -> bool:
    """Whether ``fn`` (a rule) holds a tracer in its closure or defaults: such a rule must be
    traced while that tracer's trace is alive."""
    cells = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())
             if c.cell_contents is not fn]
    cells += list(getattr(fn, "__defaults__", None) or ())
    try:
        return any(isinstance(x, Tracer) for x in tree_util.tree_leaves(cells))
    except Exception:   # noqa: BLE001 - an unflattenable closure: trace now, to be safe
        return True


def _split_args(nondiff_argnums, args):
    """``(nd, dyn, leaves, in_tree, avals, full)`` as ``_trace_primal``, without tracing."""
    nd = {i % len(args): args[i] for i in nondiff_argnums}
    dyn = [a for i, a in enumerate(args) if i not in nd]
    leaves, in_tree = tree_util.tree_flatten(tuple(dyn))
    avals = [abstractify(x) for x in leaves]

    def full(d):
        it = iter(d)
        return [nd[i] if i in nd else next(it) for i in range(len(args))]
    return nd, dyn, leaves, in_tree, avals, full


def _primal_from_rule(rule: ClosedJaxpr, n_lead: int, n_in: int, n_out: int,
                      zero_tangents: bool) -> ClosedJaxpr:
    """The primal function as the first ``n_out`` outputs of a traced rule (a custom_jvp's
    jvp with zero tangents, or a custom_vjp's fwd): what runs where nothing differentiates
    the call, without tracing the user's function again."""
    in_avals = [v.aval for v in rule.jaxpr.invars[:n_lead + n_in]]

    def primal(*xs):
        extra = [_ad.zeros(a) for a in in_avals[n_lead:]] if zero_tangents else []
        return eval_jaxpr(rule.jaxpr, rule.consts, *xs, *extra)[:n_out]
    return trace_flat(primal, in_avals, DebugInfo("custom rule primal", None))


def _trace_primal(fun, nondiff_argnums, args, kind):
    """Splits ``args`` into the non-differentiable ones (``nd``, by position) and the dynamic
    ones (``dyn``, flattened to ``leaves``/``in_tree``/``avals``) and traces ``fun`` on the latter.
    Returns ``(nd, dyn, leaves, in_tree, avals, full, closed, out_tree)``, ``full(dyn)`` putting
    the non-differentiable arguments back in place."""
    nd, dyn, leaves, in_tree, avals, full = _split_args(nondiff_argnums, args)
    primal_flat, out_tree = flatten_call(lambda *a: fun(*full(a)), in_tree)
    closed = trace_flat(primal_flat, avals, DebugInfo(kind, fun), values=_known_values(leaves))
    return nd, dyn, leaves, in_tree, avals, full, closed, out_tree()



def _zeros(shape, dtype, weak: bool):
    """``jnp.zeros`` (``jnp.zeros_like`` with ``weak``): a broadcast zero, an Array eagerly."""
    v = np.zeros((), dtype)
    z = ops.broadcast_in_dim(WeakScalar(v) if weak else v, tuple(shape), ())
    if isinstance(z, WeakScalar):
        return asarray_device(z.val, weak_type=True)
    return asarray_device(z) if isinstance(z, np.ndarray) else z


def _zeros_like(x):
    a = abstractify(x)
    return _zeros(a.shape, a.dtype, a.weak_type)



def _fun_name(f) -> str:
    """A rule's name as JAX's jaxprs print it (``jvp=<lambda>``)."""
    f = getattr(f, "func", f)           # functools.partial
    return getattr(f, "__name__", type(f).__name__)

class SymbolicZero:
    """A zero tangent known without its values (JAX hands these to rules registered with
    ``symbolic_zeros=True``).  wjax's rules always receive arrays -- a zero tangent arrives as
    an array of zeros, which such rules accept as well -- so this type appears only where user
    code makes one."""

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)

    def instantiate(self):
        return _zeros(self.aval.shape, self.aval.dtype, False)

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


@dataclasses.dataclass
class CustomVJPPrimal:
    """A primal input as a ``custom_vjp`` fwd rule registered with ``symbolic_zeros=True``
    receives it: the value, and whether it may be differentiated (every floating input: wjax
    traces the fwd rule once, before it knows which inputs a transformation perturbs).  As
    JAX's, a plain dataclass: a pytree leaf, so ``tree_map`` over the inputs sees each one
    whole."""
    value: Any
    perturbed: bool


class custom_jvp:
    """A function with a custom jvp rule: ``f.defjvp(rule)`` or ``f.defjvps(*per_arg)``."""

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None
        self.symbolic_zeros = False
        self._tracing_rule = 0

    def defjvp(self, jvp, symbolic_zeros=False):
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps):
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals, tangents):
            primal_out = self(*primals)
            acc = None
            for fn, t in zip(jvps, tangents):
                if fn is None:
                    continue
                c = fn(t, primal_out, *primals)
                acc = c if acc is None else tree_util.tree_map(lambda a, b: a + b, acc, c)
            if acc is None:
                acc = tree_util.tree_map(_zeros_like, primal_out)
            return primal_out, acc

        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_jvp")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = _resolve(self.fun, args, kwargs)
        if current_builder() is None:
            return self.fun(*args)
        # the rule is traced in place of the function under autodiff; called again from
        # inside the rule, once more for each enclosing differentiating trace (JAX's nesting)
        if (_differentiating() and not self._tracing_rule) or (
                0 < self._tracing_rule < _differentiation_depth()
                and getattr(current_builder().debug, "what", None) == "custom_jvp rule"):
            out = self._call_differentiated(name, args)
            if out is not None:
                return out
        nd, _, leaves, in_tree, avals, _, closed, out_tree = _trace_primal(
            self.fun, self.nondiff_argnums, args, "custom_jvp")
        jvp_flat = self._jvp_flat(nd, in_tree, out_tree, closed.out_avals, len(avals))

        def trace_rule():
            self._tracing_rule += 1
            try:
                return trace_flat(jvp_flat, avals + avals, DebugInfo("custom_jvp rule", self.jvp))
            finally:
                self._tracing_rule -= 1

        pj, ptc, pkc = _split_consts(closed)
        pa = [t.aval for t in ptc]
        def lazy():
            jj, jtc, jkc = _split_consts(trace_rule())
            if jtc:
                _lazy_tracer_error(name)
            return _with_leading(jj, jkc, pa, [], [])

        traced = None
        if not self._tracing_rule and _closes_over_tracers(self.jvp):
            # traced now, so the rule may use values of the enclosing trace; a rule that cannot
            # be traced (say, it applies jvp to a custom_vjp function) fails only where it is
            # used -- under differentiation -- as in JAX.  Other rules are traced only when the
            # call is differentiated, as JAX does (so a jit or vmap alone never runs the rule)
            try:
                traced = _split_consts(trace_rule())
            except Exception:   # noqa: BLE001 - re-raised when the rule is needed
                traced = None
        if traced is None:
            # called from inside its own rule, or not traceable now: traced when differentiated
            jvp_param, jtc = LazyJaxpr(lazy), []
        else:
            jj, jtc, jkc = traced
            jvp_param = _with_leading(jj, jkc, pa, jj.invars[:len(jtc)], [])
        primal = _with_leading(pj, pkc, [], pj.invars[:len(ptc)], [t.aval for t in jtc])
        jvp_param.fun_name = _fun_name(self.jvp)
        outs = custom_jvp_call_p.bind(*ptc, *jtc, *leaves, jaxpr=primal, jvp_jaxpr=jvp_param,
                                      num_consts=len(ptc) + len(jtc), name=name,
                                      symbolic_zeros=self.symbolic_zeros)
        return tree_util.tree_unflatten(out_tree, list(outs))

    def _call_differentiated(self, name, args):
        """Under autodiff: the rule is traced (the user's function only where the rule calls
        it), and the primal is the rule's primal output.  None when the rule cannot be traced
        now (the caller then takes the general path)."""
        nd, _, leaves, in_tree, avals, _ = _split_args(self.nondiff_argnums, args)
        box: list = []
        jvp_flat = self._jvp_flat(nd, in_tree, None, None, len(avals), box)
        values = _known_values(leaves)
        self._tracing_rule += 1
        try:
            traced = trace_flat(jvp_flat, avals + avals, DebugInfo("custom_jvp rule", self.jvp),
                                values=None if values is None else values + [None] * len(avals))
        except Exception:   # noqa: BLE001 - the general path traces again and reports
            return None
        finally:
            self._tracing_rule -= 1
        jj, jtc, jkc = _split_consts(traced)
        out_tree, n_out = box[0], box[0].num_leaves
        rule = ClosedJaxpr(jj, jkc)
        rule.fun_name = _fun_name(self.jvp)
        primal = _primal_from_rule(rule, len(jtc), len(avals), n_out, zero_tangents=True)
        outs = custom_jvp_call_p.bind(*jtc, *leaves, jaxpr=primal, jvp_jaxpr=rule,
                                      num_consts=len(jtc), name=name,
                                      symbolic_zeros=self.symbolic_zeros)
        return tree_util.tree_unflatten(out_tree, list(outs))

    def _jvp_flat(self, nd, in_tree, out_tree, out_avals, n, box=None):
        """The jvp rule over flat leaves: ``n`` primals then ``n`` tangents in, primal outputs
        then tangents out; the tangents' structure, shapes and dtypes checked against the
        primal outputs (tangent dtypes converted, as JAX does)."""
        def jvp_flat(*xs):
            primals = tuple(tree_util.tree_unflatten(in_tree, list(xs[:n])))
            tangents = tuple(tree_util.tree_unflatten(in_tree, list(xs[n:])))
            out, tout = self.jvp(*[nd[i] for i in sorted(nd)], primals, tangents)
            ol, ot = tree_util.tree_flatten(out)
            tl, tt = tree_util.tree_flatten(tout)
            if box is not None:         # the structure is the rule's (no primal trace)
                box.append(ot)
            want = ot if out_tree is None else out_tree
            if ot != want or tt != want:
                raise TypeError(
                    "Custom JVP rule must produce primal and tangent outputs with equal container "
                    f"(pytree) structures, but got {ot} and {tt} respectively.")
            fixed = []
            for t, a in zip(tl, out_avals or [abstractify(o) for o in ol]):
                ta = abstractify(t)
                if ta.shape != a.shape:
                    raise TypeError(
                        "Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes, but got {a.str_short()} and "
                        f"{ta.str_short()} respectively."
                    )
                if np.dtype(ta.dtype) != np.dtype(a.dtype) and _ad.is_differentiable(a):
                    t = ops.convert_element_type(t, a.dtype)
                fixed.append(t)
            return ol + fixed
        return jvp_flat


def _known_values(leaves) -> list | None:
    """The arguments' values where the enclosing trace knows them (autodiff outside ``jit``
    runs on known values, as JAX's): a rule traced with them may branch on them in Python."""
    b = current_builder()
    if b is None or not b.with_values:
        return None
    values = [to_concrete_value(x) for x in leaves]
    return None if any(v is None for v in values) else [np.asarray(v) for v in values]


def _lazy_tracer_error(name):
    raise TypeError(f"the custom rule of {name}, called again from inside its own rule, closes "
                    "over traced values: this nesting is not supported")


class custom_vjp:
    """A function with a custom vjp: ``f.defvjp(fwd, bwd)``; ``fwd(*args) -> (out, res)``,
    ``bwd(*nondiff_args, res, ct) -> tuple of cotangents, one per (differentiable) argument``."""

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None
        self.symbolic_zeros = False
        self._tracing_rule = 0

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = symbolic_zeros
        return None

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", "custom_vjp")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = _resolve(self.fun, args, kwargs)
        if current_builder() is None:
            return self.fun(*args)
        # (a symbolic_zeros fwd waits for the jvp, where it learns which inputs are perturbed)
        if _differentiating() and not self._tracing_rule and not self.symbolic_zeros:
            out = self._call_differentiated(name, args)
            if out is not None:
                return out
        nd, dyn, leaves, in_tree, avals, full, closed, out_tree = _trace_primal(
            self.fun, self.nondiff_argnums, args, "custom_vjp")
        res_box, out_box = [], []
        fwd_flat = self._fwd_flat(full, in_tree, out_tree, res_box, out_box)
        pj, ptc, pkc = _split_consts(closed)
        pa = [t.aval for t in ptc]

        def rules(perturbed=None):
            flat = fwd_flat if perturbed is None else self._fwd_flat(
                full, in_tree, out_tree, res_box, out_box, perturbed)
            return self._rules(name, avals, flat, nd, dyn, res_box, out_box)

        if self._tracing_rule or not _closes_over_tracers(self.fwd):
            # fwd and bwd are traced when the call is differentiated, as in JAX (also when
            # called from inside its own fwd/bwd); a fwd holding tracers is traced now
            def lazy(perturbed=None):
                fj, ftc, fkc, bwd = rules(perturbed)
                if ftc:
                    _lazy_tracer_error(name)
                return _with_leading(fj, fkc, pa, [], []), bwd
            if self.symbolic_zeros:     # traced per set of perturbed inputs
                pairs = {}

                def pair_for(mask):
                    if mask not in pairs:
                        pairs[mask] = lazy(mask)
                    return pairs[mask]
                fwd = PerturbedRule(lambda m: pair_for(m)[0])
                bwd, ftc = PerturbedRule(lambda m: pair_for(m)[1]), []
            else:
                pair = LazyJaxpr(lazy)
                fwd, bwd, ftc = LazyJaxpr(lambda: pair()[0]), LazyJaxpr(lambda: pair()[1]), []
        else:
            fj, ftc, fkc, bwd = rules()
            fwd = _with_leading(fj, fkc, pa, fj.invars[:len(ftc)], [])
        primal = _with_leading(pj, pkc, [], pj.invars[:len(ptc)], [t.aval for t in ftc])
        fwd.fun_name, bwd.fun_name = _fun_name(self.fwd), _fun_name(self.bwd)
        outs = custom_vjp_call_p.bind(
            *ptc,
            *ftc,
            *leaves,
            jaxpr=primal,
            fwd_jaxpr=fwd,
            bwd_jaxpr=bwd,
            num_consts=len(ptc) + len(ftc),
            name=name,
        )
        return tree_util.tree_unflatten(out_tree, list(outs))

    def _trace_rule(self, *args, values=None):
        """``trace_flat(*args)`` for one of the rules: a call to this function while it runs
        is from inside its own rule."""
        self._tracing_rule += 1
        try:
            return trace_flat(*args, values=values)
        finally:
            self._tracing_rule -= 1

    def _call_differentiated(self, name, args):
        """Under autodiff: fwd is traced (the user's function only where fwd calls it), and
        the primal is fwd's primal output.  None when fwd cannot be traced now."""
        nd, dyn, leaves, in_tree, avals, full = _split_args(self.nondiff_argnums, args)
        res_box, out_box = [], []
        fwd_flat = self._fwd_flat(full, in_tree, None, res_box, out_box)
        try:
            fj, ftc, fkc, bwd = self._rules(name, avals, fwd_flat, nd, dyn, res_box, out_box,
                                            values=_known_values(leaves))
        except Exception:   # noqa: BLE001 - the general path traces again and reports
            return None
        out_tree = out_box[-1]
        fwd = ClosedJaxpr(fj, fkc)
        fwd.fun_name, bwd.fun_name = _fun_name(self.fwd), _fun_name(self.bwd)
        primal = _primal_from_rule(fwd, len(ftc), len(avals), out_tree.num_leaves,
                                   zero_tangents=False)
        outs = custom_vjp_call_p.bind(*ftc, *leaves, jaxpr=primal, fwd_jaxpr=fwd, bwd_jaxpr=bwd,
                                      num_consts=len(ftc), name=name)
        return tree_util.tree_unflatten(out_tree, list(outs))

    def _rules(self, name, avals, fwd_flat, nd, dyn, res_box, out_box, values=None):
        """fwd traced now (knowing the inputs' ``values`` where autodiff runs on known
        values); bwd traced on first use (a transpose), as JAX does: a program that is never
        differentiated never runs the bwd rule.  Returns the fwd jaxpr, its traced and known
        consts, and the bwd rule as a LazyJaxpr."""
        fc = self._trace_rule(fwd_flat, avals, DebugInfo("custom_vjp fwd", self.fwd),
                              values=values)
        fj, ftc, fkc = _split_consts(fc)
        out_tree = out_box[-1]
        out_avals = fc.out_avals[:out_tree.num_leaves]
        res_avals = fc.out_avals[out_tree.num_leaves:]
        res_tree = res_box[-1]
        bwd_flat = functools.partial(self._bwd_flat, nd, dyn, out_tree)

        def bwd():
            bc = self._trace_rule(
                bwd_flat(res_tree, len(res_avals)),
                list(res_avals) + list(out_avals),
                DebugInfo("custom_vjp bwd", self.bwd),
            )
            bj, btc, bkc = _split_consts(bc)
            if btc:
                raise TypeError(
                    f"the bwd rule of custom_vjp function {name} closes over traced "
                    "values; pass them through the residuals instead"
                )
            return ClosedJaxpr(bj, bkc)
        return fj, ftc, fkc, LazyJaxpr(bwd)

    def _fwd_flat(self, full, in_tree, out_tree, res_box, out_box, perturbed=None):
        """The fwd rule over flat leaves: primal outputs then residuals (their trees saved;
        ``out_tree`` None: the primal's structure is fwd's).  With symbolic zeros, each leaf
        is a CustomVJPPrimal, perturbed as ``perturbed`` says (None: if floating)."""
        def fwd_flat(*xs):
            if self.symbolic_zeros:
                flags = (perturbed if perturbed is not None else
                         [dtypes.is_float(x.aval.dtype) for x in xs])
                xs = [CustomVJPPrimal(x, bool(p)) for x, p in zip(xs, flags)]
            r = self.fwd(*full(tree_util.tree_unflatten(in_tree, list(xs))))
            if not (isinstance(r, (tuple, list)) and len(r) == 2):
                raise TypeError(f"Custom VJP fwd rule {getattr(self.fwd, '__name__', 'fwd')} must "
                                f"produce a pair (list or tuple of length two) where the first "
                                f"element represents the primal output and the second element "
                                f"represents residuals, but got {r!r}.")
            out, res = r
            ol, ot = tree_util.tree_flatten(out)
            out_box.append(ot)
            if out_tree is not None and ot != out_tree:
                raise TypeError(f"Custom VJP fwd rule must produce an output with the same "
                                f"container (pytree) structure as the primal function, got {ot} "
                                f"and {out_tree}.")
            # residuals known while fwd is traced (Python scalars, NumPy or concrete arrays)
            # reach bwd as they are, as JAX's known values do: bwd may branch on them
            rl, rt = tree_util.tree_flatten(res)
            static = {i: x for i, x in enumerate(rl) if not isinstance(x, Tracer)}
            res_box.append((rt, static))
            return ol + [x for i, x in enumerate(rl) if i not in static]
        return fwd_flat

    def _bwd_flat(self, nd, dyn, out_tree, res_tree, n_res):
        """The bwd rule over flat leaves: (residuals, output cotangents) -> input cotangents."""
        def bwd_flat(*xs):
            tree, static = res_tree
            traced = iter(xs[:n_res])
            res = tree_util.tree_unflatten(tree, [static[i] if i in static else next(traced)
                                                  for i in range(tree.num_leaves)])
            ct = tree_util.tree_unflatten(out_tree, list(xs[n_res:]))
            r = self.bwd(*[nd[i] for i in sorted(nd)], res, ct)
            if not isinstance(r, (tuple, list)) or len(r) != len(dyn):
                raise TypeError(
                    "Custom VJP bwd rule must produce an output with the same container (pytree) "
                    "structure as the args tuple of the primal function, and in particular must "
                    f"produce a tuple of length equal to the number of arguments to the primal "
                    f"function, but got bwd output {r!r} for {len(dyn)} primal arguments.")
            return _cotangents_like(dyn, r)
        return bwd_flat


def _cotangents_like(dyn, r) -> list:
    """The bwd rule's cotangents as flat leaves matching the primal arguments: ``None`` is a
    zero, dtypes follow the primals, scalars broadcast."""
    flat = []
    for arg, c in zip(dyn, r):
        al, at = tree_util.tree_flatten(arg)
        if c is None:
            flat.extend(_ad.zeros(abstractify(x)) for x in al)
            continue
        # as JAX's: the cotangent is a prefix of the primal -- a None stands for the zeros
        # of a whole subtree, and a cotangent where the primal has no leaves (None) is dropped
        cl, ct_ = tree_util.tree_flatten(c, is_leaf=lambda v: v is None)
        try:
            subtrees = ct_.flatten_up_to(arg)
        except ValueError:
            raise TypeError(f"Custom VJP bwd rule produced a cotangent with structure "
                            f"{ct_} for a primal argument with structure {at}.") from None
        pairs = [(x, cc) for cc, sub in zip(cl, subtrees) for x in tree_util.tree_leaves(sub)]
        for x, cc in pairs:
            a = abstractify(x)
            if cc is None:
                cc = _ad.zeros(a)
            elif (np.dtype(abstractify(cc).dtype) != np.dtype(a.dtype)
                  and _ad.is_differentiable(a)):
                cc = ops.convert_element_type(cc, a.dtype)
            if abstractify(cc).shape != a.shape and abstractify(cc).ndim == 0:
                cc = ops.broadcast_in_dim(cc, a.shape, ())
            flat.append(cc)
    return flat

def closure_convert(fun, *example_args):
    """``(converted, consts)``: ``fun`` with its closed-over traced values made explicit trailing
    arguments (as JAX's ``jax.closure_convert``)."""
    leaves, in_tree = tree_util.tree_flatten(example_args)
    flat, out_tree_of = flatten_call(fun, in_tree)
    closed = trace_flat(flat, [abstractify(x) for x in leaves])
    j, tc, kc = _split_consts(closed)
    out_tree = out_tree_of()
    n = len(tc)

    def converted(*args):
        xs = tree_util.tree_leaves(args[:len(args) - n])
        outs = eval_jaxpr(j, kc, *args[len(args) - n:], *xs)
        return tree_util.tree_unflatten(out_tree, list(outs))

    return converted, list(tc)


# --------------------------------------------------------------------------- custom_gradient

class _GradRule:
    """A traced custom_gradient rule as custom_vjp residuals: its closed-over values are the
    leaves, its jaxpr and trees the static part."""

    def __init__(self, consts, jaxpr, in_tree, out_tree):
        self.consts, self.jaxpr, self.in_tree, self.out_tree = consts, jaxpr, in_tree, out_tree


tree_util.register_pytree_node(
    _GradRule, lambda r: (r.consts, (r.jaxpr, r.in_tree, r.out_tree)),
    lambda aux, consts: _GradRule(list(consts), *aux))


def custom_gradient(fun):
    """``fun(*args) -> (value, vjp_rule)``, differentiated with ``vjp_rule(ct) -> tuple of
    input cotangents`` (``jax.custom_gradient``; the rule may close over values ``fun``
    computed)."""

    @custom_vjp
    def wrapped(*args, **kwargs):
        ans, _ = fun(*args, **kwargs)
        return ans

    def fwd(*args, **kwargs):
        ans, rule = fun(*args, **kwargs)
        ans_flat, out_tree = tree_util.tree_flatten((ans,))
        box = []

        def rule_flat(*cts):
            out = rule(*tree_util.tree_unflatten(out_tree, list(cts)))
            leaves, tree = tree_util.tree_flatten(out)
            box.append(tree)
            return leaves

        avals = [_ad.tangent_aval(abstractify(x)) for x in ans_flat]
        closed = trace_flat(rule_flat, avals, DebugInfo("custom_gradient rule", rule))
        return ans, _GradRule(list(closed.consts), closed.jaxpr, box[0], out_tree)

    def bwd(res, cts):
        cts_flat, tree = tree_util.tree_flatten((cts,))
        if tree != res.out_tree:
            raise TypeError(f"{res.out_tree}\n!=\n{tree}")
        out = eval_jaxpr(res.jaxpr, res.consts, *cts_flat)
        out = tree_util.tree_unflatten(res.in_tree, list(out))
        return (out,) if tree_util.treedef_is_leaf(res.in_tree) else out

    wrapped.defvjp(fwd, bwd)
    return wrapped


__all__ = ["custom_jvp", "custom_vjp", "closure_convert", "custom_gradient", "linear_call"]


def linear_call(fun, fun_transpose, residual_args, linear_args):
    """``fun(residual_args, linear_args)``, a function linear in ``linear_args``, whose
    transpose (for reverse-mode autodiff) is ``fun_transpose(residual_args, cotangents)``
    instead of the transpose of ``fun``'s own operations."""
    res_leaves, res_tree = tree_util.tree_flatten(residual_args)
    lin_leaves, lin_tree = tree_util.tree_flatten(linear_args)
    res_avals = [abstractify(x) for x in res_leaves]
    box = []

    def callee_flat(*xs):
        r = tree_util.tree_unflatten(res_tree, list(xs[:len(res_leaves)]))
        lin = tree_util.tree_unflatten(lin_tree, list(xs[len(res_leaves):]))
        out = fun(r, lin)
        leaves, tree = tree_util.tree_flatten(out)
        box.append((tree, [abstractify(v) for v in leaves]))
        return leaves

    callee = trace_flat(callee_flat, res_avals + [abstractify(x) for x in lin_leaves],
                        DebugInfo("linear_call", fun))
    out_tree, out_avals = box[0]

    def transpose_flat(*xs):
        r = tree_util.tree_unflatten(res_tree, list(xs[:len(res_leaves)]))
        ct = tree_util.tree_unflatten(out_tree, list(xs[len(res_leaves):]))
        out = fun_transpose(r, ct)
        leaves, tree = tree_util.tree_flatten(out)
        if tree != lin_tree:
            raise TypeError(f"linear_call: the transpose function returned a tree {tree}, "
                            f"not the linear arguments' {lin_tree}")
        return leaves

    transposed = trace_flat(transpose_flat, res_avals + out_avals,
                            DebugInfo("linear_call transpose", fun_transpose))
    cj, cc = _lift(callee)
    tj, tc = _lift(transposed)
    outs = linear_call_p.bind(*cc, *tc, *res_leaves, *lin_leaves, callee=cj, transpose=tj,
                              num_callee_consts=len(cc), num_transpose_consts=len(tc),
                              num_res=len(res_leaves))
    return tree_util.tree_unflatten(out_tree, list(outs))


def _lift(closed):
    """The closed jaxpr with its constants as leading inputs, and those constants."""
    j = _ad.hoist_call_consts(closed)
    jj = j.jaxpr
    return ClosedJaxpr(Jaxpr([], jj.constvars + jj.invars, jj.outvars, jj.eqns), []), \
        list(j.consts)
