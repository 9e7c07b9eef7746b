"""Autodiff: ``grad``, ``value_and_grad``, ``jvp``, ``vjp``, ``linearize``, ``jacfwd``,
``jacrev``, ``hessian`` -- all jaxpr rewrites (``wjax/_src/transforms/``).

``f`` is traced to a jaxpr; ``jvp_jaxpr`` then ``partial_eval_jaxpr`` give linearize;
``transpose_jaxpr`` of the linear part gives vjp.  Under another trace the rewritten jaxpr is
evaluated into that trace; eagerly it runs as one compiled program (``dispatch.run_closed``).
``f`` is traced at each call (with the argument values known, so Python may branch on them),
but the rewrites are cached by the structure of its jaxpr (its closed-over values are passed
as inputs), so they are built -- and compiled -- once per structure.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import functools
import inspect

import numpy as np

from .. import dispatch
from ..array import Array
from ..core import dtypes, ops, tree_util
from ..core.tree import flatten_call
from ..core import caches
from ..core.ir import ClosedJaxpr, Jaxpr, Lit, WeakScalar, abstractify, jaxpr_key
from ..core.tracing import DebugInfo, Tracer, arg_names_of, eval_jaxpr, trace_flat
from ..transforms import ad as _ad
from ..transforms.dce import dce_closed
from ..transforms.jvp import jvp_jaxpr
from ..transforms.partial_eval import partial_eval_jaxpr
from ..transforms.transpose import transpose_jaxpr
from .jit import jit
from .vmap import vmap

_ad_cache = caches.LRU(256)


def _ad_cached(key, keep, build):
    """The rewritten jaxpr(s) for ``key`` (``keep``: the objects it names by identity)."""
    return _ad_cache.get_or_make(key, lambda: (build(), keep))[0]


def _run_closed(closed: ClosedJaxpr, args):
    """Evaluates a closed jaxpr: into the current trace, or eagerly as one compiled program."""
    return dispatch.run_closed(closed, args, "ad")


_TRACED = object()      # an aux leaf that is an output of the traced function


class _Traced:
    """``f`` traced for autodiff: ``fun_jaxpr`` maps (closed-over values, arguments) to outputs
    (closure conversion)."""

    def __init__(self, fun_jaxpr, consts, key, keep, out, out_tree, n_main, aux_tree):
        self.fun_jaxpr, self.consts, self.key, self.keep = fun_jaxpr, consts, key, keep
        self.out, self.out_tree, self.n_main, self.aux_tree = out, out_tree, n_main, aux_tree

    @property
    def nc(self):
        return len(self.consts)

    def aux(self, traced):
        """The aux output: its traced leaves from ``traced``, the others (Python values,
        arrays made without the arguments) returned untouched, as in JAX."""
        fixed, it = self.aux_static, iter(traced)
        leaves = [next(it) if f is _TRACED else f for f in fixed]
        return tree_util.tree_unflatten(self.aux_tree, leaves)


def _trace_for_ad(fun, leaves, make_args, has_aux, what):
    """Traces ``fun(*make_args(tracers))``; the closed-over values become leading inputs."""
    avals = [abstractify(x) for x in leaves]
    box = []

    def flat(*tracers):
        args, kwargs = make_args(list(tracers))
        out = fun(*args, **kwargs)
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(
                    "expected function with aux output to return a two-element tuple, but "
                    f"got type {type(out)} with value {out!r}"
                )
            main, aux = out
            ml, mt = tree_util.tree_flatten(main)
            al, at = tree_util.tree_flatten(aux)
            static = [_TRACED if isinstance(a, Tracer) else a for a in al]
            box.append((main, mt, len(ml), at, static))
            return ml + [a for a in al if isinstance(a, Tracer)]
        ol, ot = tree_util.tree_flatten(out)
        box.append((out, ot, len(ol), None, None))
        return ol

    # traced with the values known (see wjax/_src/core/tracing.py): Python may branch on them,
    # as in JAX
    debug = DebugInfo(what, fun, arg_names_of(fun, [1] * len(leaves)))
    debug.differentiated = True     # custom_jvp/vjp functions trace their rules (as in JAX)
    closed = trace_flat(flat, avals, debug, values=list(leaves))
    closed = _ad.hoist_call_consts(closed)
    j = closed.jaxpr
    fun_jaxpr = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.outvars, j.eqns), [])
    keep: list = []
    key = jaxpr_key(fun_jaxpr.jaxpr, keep)
    out, out_tree, n_main, aux_tree, aux_static = box[0]
    tr = _Traced(fun_jaxpr, list(closed.consts), key, keep, out, out_tree, n_main, aux_tree)
    tr.aux_static = aux_static
    return tr


def _linearize_pieces(fun_jaxpr, nc, diff, out_diff):
    """known: (consts, args) -> (outs, residuals); lin: (residuals, tangents) -> out tangents."""
    jc, out_nz = jvp_jaxpr(fun_jaxpr, [False] * nc + list(diff), instantiate_outs=list(out_diff))
    n_out = len(out_diff)
    jc, _ = dce_closed(jc, [True] * n_out + [d for d, nz in zip(out_diff, out_nz) if nz])
    k = sum(diff)
    known, lin, out_unk, nres = partial_eval_jaxpr(
        jc,
        [False] * (nc + len(diff)) + [True] * k,
        instantiate=[False] * n_out + [True] * sum(out_diff),
    )
    if any(out_unk[:n_out]):
        raise AssertionError("linearize: a primal output depends on the tangents")
    return known, lin, nres


def _vjp_pieces(fun_jaxpr, nc, diff, out_diff):
    known, lin, nres = _linearize_pieces(fun_jaxpr, nc, diff, out_diff)
    return known, transpose_jaxpr(lin, [False] * nres + [True] * sum(diff)), nres


def _grad_jaxpr(fun_jaxpr, nc, diff, out_diff, need_value=True):
    """One jaxpr: (consts, args) -> (outs, gradients of the differentiable args); without
    ``need_value`` the first output (the value) is left out."""
    known, tj, nres = _vjp_pieces(fun_jaxpr, nc, diff, out_diff)
    n_out = len(out_diff)
    # the seed is JAX's ``full_like(out, 1)``: weak when the output is
    seeds = [WeakScalar(np.ones((), a.dtype)) if a.weak_type else np.ones((), a.dtype)
             for a, d in zip(fun_jaxpr.out_avals, out_diff) if d]
    primals = [a for a, d in zip(fun_jaxpr.in_avals[nc:], diff) if d]
    # (a complex primal's gradient from a real output is strong: see _like_primal)
    real_out = np.dtype(fun_jaxpr.out_avals[0].dtype).kind != "c"
    primals = [a.update(weak_type=False) if real_out and np.dtype(a.dtype).kind == "c" else a
               for a in primals]

    def fused(*xs):
        kr = eval_jaxpr(known.jaxpr, known.consts, *xs)
        gs = eval_jaxpr(tj.jaxpr, tj.consts, *kr[n_out:], *seeds)
        # a gradient has its primal's weak type (JAX's cotangent types), traced or not
        gs = [_weak_as(g, a) for g, a in zip(gs, primals)]
        return list(kr[:n_out]) + list(gs)

    closed = dce_closed(trace_flat(fused, fun_jaxpr.in_avals))[0]
    if not need_value:
        # JAX's grad computes the value and drops it: the equations computing it stay (its
        # make_jaxpr shows them, ``_:f32[] = log c``); lowering removes them
        j = closed.jaxpr
        closed = ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars[1:], j.eqns), closed.consts)
    return closed


def _weak_as(g, aval):
    """``g`` with the weak type of ``aval`` (same dtype): a constant stays a constant (a weak
    scalar becomes a weak literal, as JAX's ``0.0:f32[]``), a traced value is converted."""
    ga = abstractify(g)
    if ga.weak_type == aval.weak_type or ga.dtype != aval.dtype:
        return g
    if not isinstance(g, Tracer) and aval.weak_type and ga.shape == ():
        return WeakScalar(np.asarray(g, ga.dtype))
    return ops.convert_element_type(g, aval.dtype, weak_type=aval.weak_type)


def _like_primal(g, aval, real_outs=False):
    """A cotangent carries its primal's weak type, as in JAX -- except a complex primal's
    cotangent from real outputs: JAX's way back from a real output to a complex input passes a
    ``real``/``imag`` transpose, ``complex(t, zeros)`` with strong zeros, so its gradient is
    strong (``grad(lambda z: (z * z).real)(3. + 4.j)`` is ``Array(6.+8.j, dtype=complex64)``)."""
    if real_outs and np.dtype(aval.dtype).kind == "c":
        return g
    if isinstance(g, Array) and g.aval.weak_type != aval.weak_type and g.aval.shape == aval.shape \
            and np.dtype(g.aval.dtype) == np.dtype(aval.dtype):
        return Array(g.buffer, g.aval.update(weak_type=aval.weak_type))
    return g


def _float0_zeros(aval):
    return np.zeros(aval.shape, dtype=[("float0", "V")])


def _is_float_aval(a) -> bool:
    return _ad.is_differentiable(a)


def _argnums_tuple(argnums, nargs, what="differentiating"):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums and not isinstance(argnums, int):
        raise ValueError("argnums must be a non-empty tuple or an int, got ()")
    for i in nums:
        if not isinstance(i, (int, np.integer)):
            raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
        if i >= nargs or i < -nargs:
            raise TypeError(
                f"{what} with respect to argnums={argnums} requires at least "
                f"{max(nums) + 1} positional arguments to be passed by the caller, but got "
                f"only {nargs} positional arguments."
            )
    return tuple(int(i) % nargs for i in nums)


def _check_fun(fun, name):
    if not callable(fun):
        raise TypeError(f"{name} requires a callable argument, got {fun!r}")


def _resolve_kwargs(fun, args, kwargs):
    if not kwargs:
        return tuple(args)
    try:
        ba = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError):
        raise TypeError("keyword arguments could not be resolved to positions") from None
    ba.apply_defaults()
    if ba.kwargs:
        raise TypeError("keyword-only arguments are not supported here")
    return tuple(ba.args)


def _partial_args(args, kwargs, argnums):
    """Leaves of ``args[argnums]`` and a function rebuilding the full argument list."""
    dyn = tuple(args[i] for i in argnums)
    leaves, in_tree = tree_util.tree_flatten(dyn)

    def make(tracers):
        d = tree_util.tree_unflatten(in_tree, tracers)
        full = list(args)
        for i, v in zip(argnums, d):
            full[i] = v
        return full, kwargs

    return leaves, in_tree, make


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False, reduce_axes=(),
                   _need_value: bool = True) -> Callable:
    """``(f(*args), ∇f(*args))`` for a scalar-valued ``f``, w.r.t. the arguments ``argnums``."""
    _check_fun(fun, "value_and_grad")

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args))
        leaves, in_tree, make = _partial_args(args, kwargs, nums)
        for x in leaves:
            _check_input_revderiv("grad", holomorphic, allow_int, abstractify(x))
        tr = _trace_for_ad(fun, leaves, make, has_aux, "grad")
        out_avals = tr.fun_jaxpr.out_avals
        if (tr.n_main != 1 or not tree_util.treedef_is_leaf(tr.out_tree)
                or out_avals[0].shape != ()):
            # JAX linearizes before it looks at the output: a primitive that cannot be
            # differentiated (a callback) is the error reported first
            jvp_jaxpr(tr.fun_jaxpr, [False] * tr.nc + [_is_float_aval(a) for a in
                                                        tr.fun_jaxpr.in_avals[tr.nc:]])
        if tr.n_main != 1 or not tree_util.treedef_is_leaf(tr.out_tree):
            raise TypeError(
                f"Gradient only defined for scalar-output functions. Output was {tr.out!r}."
            )
        if out_avals[0].shape != ():
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                            f"{out_avals[0].shape}.")
        _check_output_revderiv("grad", holomorphic, out_avals[0])
        diff = tuple(_is_float_aval(a) for a in tr.fun_jaxpr.in_avals[tr.nc:])
        out_diff = (True,) + (False,) * (len(out_avals) - 1)
        closed = _ad_cached(("grad", tr.key, diff, out_diff, _need_value), tr.keep,
                            lambda: _grad_jaxpr(tr.fun_jaxpr, tr.nc, diff, out_diff, _need_value))
        res = _run_closed(closed, tr.consts + list(leaves))
        if not _need_value:
            res = [None] + list(res)
        n_out = len(out_avals)
        it = iter(res[n_out:])
        real_out = np.dtype(out_avals[0].dtype).kind != "c"
        grads = [_like_primal(next(it), a, real_out) if d else _float0_zeros(a)
                 for d, a in zip(diff, tr.fun_jaxpr.in_avals[tr.nc:])]
        g = tree_util.tree_unflatten(in_tree, grads)
        g = g[0] if isinstance(argnums, int) else g
        value = res[0]
        if has_aux:
            return (value, tr.aux(list(res[1:n_out]))), g
        return value, g

    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False, reduce_axes=()) -> Callable:
    """The gradient of a scalar-valued ``fun`` w.r.t. the arguments ``argnums``."""
    _check_fun(fun, "grad")
    vg = value_and_grad(
        fun, argnums, has_aux, holomorphic, allow_int, reduce_axes, _need_value=False
    )

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        (v, g) = vg(*args, **kwargs)
        if has_aux:
            return g, v[1]
        return g

    return grad_f


def _check_input_revderiv(name, holomorphic, allow_int, a):
    """JAX's input dtype rule of grad/jacrev: inexact (complex with ``holomorphic``); integers
    and bools with ``allow_int``."""
    dt = np.dtype(a.dtype) if not getattr(a.dtype, "is_key", False) else None
    if holomorphic and (dt is None or dt.kind != "c"):
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {getattr(a.dtype, 'name', a.dtype)}.")
    if not _is_float_aval(a) and not allow_int:
        raise TypeError(
            f"{name} requires real- or complex-valued inputs (input dtype that is a "
            f"sub-dtype of np.inexact), but got {getattr(a.dtype, 'name', a.dtype)}. If you want "
            f"to use Boolean- or integer-valued inputs, use vjp or set allow_int to True."
        )


def _check_output_revderiv(name, holomorphic, a):
    """JAX's output dtype rule of grad/jacrev: real (complex with ``holomorphic``)."""
    dt = np.dtype(a.dtype)
    if holomorphic:
        if dt.kind != "c":
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                            f"but got {dt.name}.")
    elif dt.kind == "c":
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dt.name}. For holomorphic differentiation, pass "
            f"holomorphic=True. For differentiation of non-holomorphic functions involving "
            f"complex outputs, use jax.vjp directly.")
    elif not _is_float_aval(a):
        raise TypeError(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dt.name}. For differentiation of functions with integer "
            f"outputs, use jax.vjp directly.")


def _check_jvp_args(primals, tangents):
    for nm, v in (("primal", primals), ("tangent", tangents)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(f"{nm} and tangent arguments to jax.jvp must be tuples or lists; found "
                            f"{type(primals).__name__} and {type(tangents).__name__}.")
    pl, pt = tree_util.tree_flatten(tuple(primals))
    tl, tt = tree_util.tree_flatten(tuple(tangents))
    if pt != tt:
        raise TypeError(
            f"primal and tangent arguments to jax.jvp must have the same tree structure; "
            f"primals have tree structure {pt} whereas tangents have tree structure {tt}."
        )
    out = []
    for p, t in zip(pl, tl):
        pa = abstractify(p)
        if not _is_float_aval(pa):        # integer/bool primals: tangents are float0 (ignored)
            out.append(None)
            continue
        if isinstance(t, (int, float, complex)) and not isinstance(t, bool):
            t = np.asarray(t, pa.dtype)
        ta = abstractify(t)
        if pa.shape != ta.shape:
            raise ValueError(
                f"jvp called with different primal and tangent shapes;Got primal shape "
                f"{pa.shape} and tangent shape as {ta.shape}"
            )
        if _is_float_aval(pa) and np.dtype(ta.dtype) != np.dtype(pa.dtype):
            raise TypeError(
                f"primal and tangent arguments to jax.jvp do not match; dtypes must be equal, "
                f"or in case of int/bool primal dtype the tangent dtype must be float0.Got "
                f"primal dtype {np.dtype(pa.dtype).name} and so expected tangent dtype "
                f"{np.dtype(pa.dtype).name}, but got tangent dtype {np.dtype(ta.dtype).name} "
                f"instead."
            )
        out.append(t)
    return pl, pt, out


def jvp(fun: Callable, primals: Sequence, tangents: Sequence, has_aux: bool = False) -> tuple:
    """``(fun(*primals), J·tangents)``: forward-mode differentiation."""
    _check_fun(fun, "jvp")
    pl, in_tree, tl = _check_jvp_args(primals, tangents)
    make = lambda ts: (list(tree_util.tree_unflatten(in_tree, ts)), {})  # noqa: E731
    tr = _trace_for_ad(fun, pl, make, has_aux, "jvp")
    diff = tuple(_is_float_aval(a) for a in tr.fun_jaxpr.in_avals[tr.nc:])
    n_main = tr.n_main
    n_out = len(tr.fun_jaxpr.out_avals)
    inst = [True] * n_main + [False] * (n_out - n_main)

    def build():
        jc, out_nz = jvp_jaxpr(tr.fun_jaxpr, [False] * tr.nc + list(diff), instantiate_outs=inst)
        jc, _ = dce_closed(jc, [True] * n_out + [i for i, nz in zip(inst, out_nz) if nz])
        return jc

    jc = _ad_cached(("jvp", tr.key, diff, n_main), tr.keep, build)
    res = _run_closed(jc, tr.consts + list(pl) + [t for t, d in zip(tl, diff) if d])
    outs, touts = res[:n_out], res[n_out:]
    primal_out = tree_util.tree_unflatten(tr.out_tree, list(outs[:n_main]))
    tangent_out = tree_util.tree_unflatten(tr.out_tree, list(touts))
    if has_aux:
        return primal_out, tangent_out, tr.aux(list(outs[n_main:]))
    return primal_out, tangent_out


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(fun(*primals), f_jvp)`` where ``f_jvp`` evaluates the linearization at ``primals``."""
    _check_fun(fun, "linearize")
    pl, in_tree = tree_util.tree_flatten(tuple(primals))
    make = lambda ts: (list(tree_util.tree_unflatten(in_tree, ts)), {})  # noqa: E731
    tr = _trace_for_ad(fun, pl, make, has_aux, "linearize")
    diff = tuple(_is_float_aval(a) for a in tr.fun_jaxpr.in_avals[tr.nc:])
    n_main, n_out = tr.n_main, len(tr.fun_jaxpr.out_avals)
    out_diff = (True,) * n_main + (False,) * (n_out - n_main)
    known, lin, nres = _ad_cached(("linearize", tr.key, diff, out_diff), tr.keep,
                                  lambda: _linearize_pieces(tr.fun_jaxpr, tr.nc, diff, out_diff))
    kr = _run_closed(known, tr.consts + list(pl))
    outs, res = kr[:n_out], kr[n_out:]

    def f_jvp(*tangents):
        _, _, tl = _check_jvp_args(primals, tangents)
        r = _run_closed(lin, list(res) + [t for t, d in zip(tl, diff) if d])
        return tree_util.tree_unflatten(tr.out_tree, list(r))

    primal_out = tree_util.tree_unflatten(tr.out_tree, list(outs[:n_main]))
    if has_aux:
        return primal_out, f_jvp, tr.aux(list(outs[n_main:]))
    return primal_out, f_jvp


def vjp(fun: Callable, *primals: Any, has_aux: bool = False, reduce_axes=()) -> tuple:
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(ct)`` pulls a cotangent back to the primals."""
    _check_fun(fun, "vjp")
    pl, in_tree = tree_util.tree_flatten(tuple(primals))
    make = lambda ts: (list(tree_util.tree_unflatten(in_tree, ts)), {})  # noqa: E731
    tr = _trace_for_ad(fun, pl, make, has_aux, "vjp")
    in_avals = tr.fun_jaxpr.in_avals[tr.nc:]
    diff = tuple(_is_float_aval(a) for a in in_avals)
    n_main, n_out = tr.n_main, len(tr.fun_jaxpr.out_avals)
    main_avals = tr.fun_jaxpr.out_avals[:n_main]
    out_diff = tuple(_is_float_aval(a) for a in main_avals) + (False,) * (n_out - n_main)
    known, lin, nres = _ad_cached(("linearize", tr.key, diff, out_diff), tr.keep,
                                  lambda: _linearize_pieces(tr.fun_jaxpr, tr.nc, diff, out_diff))
    kr = _run_closed(known, tr.consts + list(pl))
    outs, res = kr[:n_out], kr[n_out:]
    primal_out = tree_util.tree_unflatten(tr.out_tree, list(outs[:n_main]))

    def pullback(res, ct):
        cl, ct_tree = tree_util.tree_flatten(ct)
        if ct_tree != tr.out_tree:
            raise TypeError(
                f"Tree structure of cotangent input {ct_tree}, does not match structure of "
                f"primal output {tr.out_tree}."
            )
        cts = []
        for c, a, d in zip(cl, main_avals, out_diff):
            ca = abstractify(c)
            if ca.shape != a.shape:
                raise ValueError(
                    f"Shape of cotangent input to vjp pullback function {ca.shape} must be "
                    f"the same as the shape of corresponding primal input {a.shape}."
                )
            if d:
                if isinstance(c, (int, float, complex)) or (not isinstance(c, (Array, Tracer))
                                                   and np.dtype(ca.dtype) != np.dtype(a.dtype)):
                    c = np.asarray(c, a.dtype)
                cts.append(c)
        # transposed when the pullback is first called, as JAX's: a custom_vjp's bwd rule runs
        # then, not at vjp time
        tj = _ad_cached(("vjp-transpose", tr.key, diff, out_diff), tr.keep,
                        lambda: transpose_jaxpr(lin, [False] * nres + [True] * sum(diff)))
        gs = _run_closed(tj, list(res) + cts)
        it = iter(gs)
        real_outs = all(np.dtype(a.dtype).kind != "c" for a in main_avals)
        full = [_like_primal(next(it), a, real_outs) if d else _float0_zeros(a)
                for d, a in zip(diff, in_avals)]
        return tuple(tree_util.tree_unflatten(in_tree, full))

    # a pytree whose leaves are the residuals (as JAX's): it can cross a jit boundary
    vjp_fn = tree_util.Partial(pullback, list(res))
    if has_aux:
        return primal_out, vjp_fn, tr.aux(list(outs[n_main:]))
    return primal_out, vjp_fn


# --------------------------------------------------------------------------- Jacobians

def _std_basis(leaves):
    """An identity over the flattened leaves, one (N,)+leaf.shape block per leaf."""
    sizes = [int(np.prod(np.shape(x), dtype=np.int64)) for x in leaves]
    n = sum(sizes)
    dt = np.result_type(*[np.dtype(abstractify(x).dtype) for x in leaves]) if leaves else np.float32
    eye = np.eye(n, dtype=dt)
    out, off = [], 0
    for x, s in zip(leaves, sizes):
        out.append(
            eye[:, off : off + s].reshape((n,) + tuple(np.shape(x))).astype(abstractify(x).dtype)
        )
        off += s
    return out, sizes


def _check_jacfwd_inputs(leaves, holomorphic):
    """JAX's input rule of jacfwd: real inputs, or complex ones with ``holomorphic``."""
    for x in leaves:
        a = abstractify(x)
        dt = np.dtype(a.dtype)
        if holomorphic:
            if dt.kind != "c":
                raise TypeError("jacfwd with holomorphic=True requires inputs with complex "
                                f"dtype, but got {dt.name}.")
        elif not dtypes.is_float(dt):
            raise TypeError(
                f"jacfwd requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.floating), but got {dt.name}. For holomorphic differentiation, "
                f"pass holomorphic=True. For differentiation of non-holomorphic functions "
                f"involving complex inputs or integer inputs, use jax.jvp directly."
            )


def _like(block, example):
    """A Jacobian block in the dtype and weak type of ``example`` -- the output leaf (jacfwd)
    or the input leaf (jacrev) it belongs to -- its real part where that is real, as JAX's."""
    a, want = abstractify(block), abstractify(example)
    if dtypes.is_complex(a.dtype) and not dtypes.is_complex(want.dtype):
        block = ops.real(block)
    return ops.convert_element_type(block, want.dtype, weak_type=want.weak_type)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun`` by forward mode: jvp mapped (vmap) over a basis of the inputs."""
    _check_fun(fun, "jacfwd")

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args))
        leaves, in_tree, make = _partial_args(args, kwargs, nums)
        # JAX checks the inputs with a tree_map, so a custom node's unflatten sees the
        # checks' results (None) as its children
        tree_util.tree_map(lambda x: _check_jacfwd_inputs([x], holomorphic),
                           tuple(args[i] for i in nums))
        basis, sizes = _std_basis(leaves)

        def f_flat(*xs):
            a, kw = make(list(xs))
            return fun(*a, **kw)

        aux_box = []

        def pushfwd(*ts):
            if has_aux:
                y, t, aux = jvp(f_flat, tuple(leaves), tuple(ts), has_aux=True)
                # the aux leaves that are not traced come back untouched (JAX's out_axes=None)
                al, at = tree_util.tree_flatten(aux)
                aux_box.append(([_TRACED if isinstance(a, Tracer) else a for a in al], at))
                return y, t, [a for a in al if isinstance(a, Tracer)]
            y, t = jvp(f_flat, tuple(leaves), tuple(ts))
            return y, t

        outs = vmap(pushfwd, in_axes=0, out_axes=0)(*basis)
        y, jt = outs[0], outs[1]
        y = tree_util.tree_map(lambda v: v[0], y)

        def check_out(yv):
            if holomorphic and np.dtype(abstractify(yv).dtype).kind != "c":
                raise TypeError("jacfwd with holomorphic=True requires outputs with complex "
                                f"dtype, but got {np.dtype(abstractify(yv).dtype).name}.")

        tree_util.tree_map(check_out, y)                        # as JAX's: a tree_map
        yl, y_tree = tree_util.tree_flatten(y)
        jl = tree_util.tree_leaves(jt)
        blocks = []
        for yv, j in zip(yl, jl):
            yshape = tuple(np.shape(yv))
            if j.ndim > 1:                                      # (*y, N)
                j = ops.transpose(j, tuple(range(1, j.ndim)) + (0,))
            per, off = [], 0
            for x, s in zip(leaves, sizes):
                b = j[..., off:off + s]
                per.append(_like(ops.reshape(b, yshape + tuple(np.shape(x))), yv))
                off += s
            t = tree_util.tree_unflatten(in_tree, per)
            blocks.append(t[0] if isinstance(argnums, int) else t)
        jac = tree_util.tree_unflatten(y_tree, blocks)
        if has_aux:
            fixed, at = aux_box[0]
            it = iter(v[0] for v in outs[2])
            return jac, tree_util.tree_unflatten(at, [next(it) if f is _TRACED else f
                                                     for f in fixed])
        return jac

    return jacfun


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun`` by reverse mode: the vjp mapped (vmap) over a basis of the
    outputs."""
    _check_fun(fun, "jacrev")

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args))
        leaves, in_tree, make = _partial_args(args, kwargs, nums)
        # JAX checks the inputs with a tree_map, so a custom node's unflatten sees the
        # checks' results (None) as its children
        tree_util.tree_map(
            lambda x: _check_input_revderiv("jacrev", holomorphic, allow_int, abstractify(x)),
            tuple(args[i] for i in nums))

        def f_flat(*xs):
            a, kw = make(list(xs))
            return fun(*a, **kw)

        if has_aux:
            y, pullback, aux = vjp(f_flat, *leaves, has_aux=True)
        else:
            y, pullback = vjp(f_flat, *leaves)
        tree_util.tree_map(
            lambda yv: _check_output_revderiv("jacrev", holomorphic, abstractify(yv)), y)
        yl, y_tree = tree_util.tree_flatten(y)
        basis, ysizes = _std_basis(yl)
        cts = vmap(lambda *bs: pullback(tree_util.tree_unflatten(y_tree, list(bs))))(*basis)
        # cts: per input leaf, (M, *x.shape)
        per_y = []
        off = 0
        for yv, s in zip(yl, ysizes):
            per_x = []
            for x, c in zip(leaves, cts):
                b = c[off:off + s]
                per_x.append(_like(ops.reshape(b, tuple(np.shape(yv)) + tuple(np.shape(x))), x))
            t = tree_util.tree_unflatten(in_tree, per_x)
            per_y.append(t[0] if isinstance(argnums, int) else t)
            off += s
        jac = tree_util.tree_unflatten(y_tree, per_y)
        if has_aux:
            return jac, aux
        return jac

    return jacfun


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


# --------------------------------------------------------------------------- saved residuals

def saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> list[tuple[Any, str]]:
    """The values reverse-mode differentiation of ``fun`` at ``args`` keeps for the backward
    pass, as ``(aval, where it comes from)`` pairs: an argument, a literal, or an operation's
    output with the source line that bound it (``jax.ad_checkpoint.saved_residuals``)."""
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    make = lambda ts: tree_util.tree_unflatten(in_tree, ts)  # noqa: E731
    tr = _trace_for_ad(fun, leaves, make, False, "saved_residuals")
    per_arg = [len(tree_util.tree_leaves(a)) for a in args]
    names = arg_names_of(fun, per_arg) + [k for k in kwargs
                                          for _ in tree_util.tree_leaves(kwargs[k])]
    diff = tuple(_is_float_aval(a) for a in tr.fun_jaxpr.in_avals[tr.nc:])
    out_diff = tuple(_is_float_aval(a) for a in tr.fun_jaxpr.out_avals)
    known, _, nres = _linearize_pieces(tr.fun_jaxpr, tr.nc, diff, out_diff)
    j = known.jaxpr
    producer = {o.id: e for e in j.eqns for o in e.outvars}
    order = {o.id: k for k, e in enumerate(j.eqns) for o in e.outvars}
    position = {v.id: i for i, v in enumerate(j.invars)}
    # arguments first (in argument order), then the rest in program order, as JAX lists them
    ranked = []
    for r in j.outvars[len(j.outvars) - nres:]:
        if isinstance(r, Lit):
            ranked.append((len(j.invars), (r.aval, "from a literal")))
        elif r.id in position and position[r.id] >= tr.nc:
            i = position[r.id] - tr.nc
            ranked.append((i, (r.aval, f"from the argument {names[i]}")))
        elif r.id in position:
            ranked.append((len(j.invars), (r.aval, "from a constant the function closes over")))
        else:
            e = _origin(producer[r.id], r)
            where = f" from {e.source}" if e.source is not None else ""
            what = (f"named {e.params['name']!r}" if e.prim.name == "name"
                    else f"output of {e.prim.name}")
            ranked.append((len(j.invars) + 1 + order[r.id], (r.aval, f"{what}{where}")))
    return [p for _, p in sorted(ranked, key=lambda t: t[0])]


def _origin(e, v):
    """The equation that computes ``v``: inside a call (a checkpoint's saved values), the
    inner equation producing the matching output."""
    inner = e.params.get("jaxpr")
    while (e.prim.call or e.prim.transparent_call) and isinstance(inner, ClosedJaxpr):
        out = inner.jaxpr.outvars[e.outvars.index(v)]
        found = next((ie for ie in inner.jaxpr.eqns if out in ie.outvars), None)
        if found is None:
            break
        e, v, inner = found, out, found.params.get("jaxpr")
    return e


def print_saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> None:
    """Prints ``saved_residuals(fun, *args, **kwargs)``, one residual per line."""
    for aval, where in saved_residuals(fun, *args, **kwargs):
        print(f"{aval.str_short()} {where}")


# --------------------------------------------------------------------------- linear_transpose

def _is_float_dtype(dt) -> bool:
    return dtypes.is_float(dt)


def linear_transpose(fun: Callable, *primals: Any, reduce_axes=()) -> Callable:
    """The transpose of the linear function ``fun`` at the shapes/dtypes of ``primals`` (arrays
    or ``ShapeDtypeStruct``s): ``f_t(cotangent) -> tuple of input cotangents``.  ``fun`` must
    be linear (float -> float, or integer -> integer)."""
    _check_fun(fun, "linear_transpose")
    leaves, in_tree = tree_util.tree_flatten(tuple(primals))
    in_avals = [abstractify(x) for x in leaves]
    in_float = [_is_float_dtype(a.dtype) for a in in_avals]
    flat, out_tree_of = flatten_call(fun, in_tree)
    closed = trace_flat(flat, in_avals, DebugInfo("linear_transpose", fun))
    out_tree, out_avals = out_tree_of(), closed.out_avals
    out_float = [_is_float_dtype(a.dtype) for a in out_avals]
    if not ((all(in_float) and all(out_float)) or
            (not any(in_float) and not any(out_float))):
        raise TypeError("linear_transpose only supports [float or complex] -> "
                        "[float or complex], and integer -> integer functions, but got "
                        f"{[str(a) for a in in_avals]} -> {[str(a) for a in out_avals]}.")
    tj = transpose_jaxpr(closed, [True] * len(leaves))

    def transposed(*out_cotangent):
        cl, ct_tree = tree_util.tree_flatten(out_cotangent[0] if len(out_cotangent) == 1
                                             else out_cotangent)
        if ct_tree != out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected "
                            f"{out_tree} but got {ct_tree}")
        if any(abstractify(c).shape != a.shape or
               np.dtype(abstractify(c).dtype) != np.dtype(a.dtype)
               for c, a in zip(cl, out_avals)):
            raise TypeError(f"cotangent type does not match function output, expected "
                            f"{tuple(out_avals)} but got {[abstractify(c) for c in cl]}")
        cts = _run_closed(tj, [c if isinstance(c, (Array, Tracer)) else np.asarray(c)
                               for c in cl])
        return tree_util.tree_unflatten(in_tree, [_like_primal(c, a)
                                                  for c, a in zip(cts, in_avals)])

    return transposed


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """``(fwd, bwd)``: ``fwd(*args) -> (out, residuals[, aux])`` is ``vjp`` of ``fun`` in the
    arguments ``argnums``; ``bwd(residuals, ct)`` their cotangents (one, for an int
    ``argnums``).  Both jitted by default, so ``bwd`` compiles once."""
    _check_fun(fun, "fwd_and_bwd")
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)

    def fwd(*args):
        dyn = [args[i] for i in nums]

        def partial_fun(*d):
            full = list(args)
            for i, v in zip(nums, d):
                full[i] = v
            return fun(*full)
        return vjp(partial_fun, *dyn, has_aux=has_aux)

    def bwd(f_vjp, outgrad):
        g = f_vjp(outgrad)
        return g[0] if single else g

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd
