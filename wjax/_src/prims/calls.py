"""Call primitives: equations that carry a jaxpr and run it.

    pjit             jit under a trace: ``jaxpr``, ``name``
    checkpoint       jax.checkpoint (remat): ``jaxpr``, ``prevent_cse``, ``policy``, ``name``
    closed_call,     JAX's plain calls of a jaxpr (``jax.extend.core.primitives``): ``jaxpr``;
    call             wjax binds neither, a program or library may
    custom_jvp_call  a custom_jvp function: ``jaxpr`` (the primal), ``jvp_jaxpr`` (the rule),
                     ``num_consts``, ``name``, ``symbolic_zeros``
    custom_vjp_call  a custom_vjp function: ``jaxpr``, ``fwd_jaxpr`` (operands -> outs,
                     residuals), ``bwd_jaxpr`` (residuals, cts -> cts), ``num_consts``, ``name``
    custom_lin       the linear part of a custom_vjp call under jvp: ``bwd_jaxpr``, ``num_res``,
                     ``out_avals``, ``name``; its transpose runs ``bwd``

The backend inlines every call (``Primitive.call``: ``passes.inline_calls``).  ``pjit`` and
``checkpoint`` are *transparent*: their rules are those of the jaxpr they carry (jvp, transpose
and vmap of the inner jaxpr, memoized per jaxpr); ``checkpoint``'s partial evaluation saves
only its inputs and recomputes the rest (rematerialization).  The custom calls apply the user's
rules; a rule that could not be traced when the call was bound is a ``LazyJaxpr``, traced on
first use.  The APIs that bind these live in ``wjax/_src/api/``.
"""
from __future__ import annotations

from ..core import caches, tree_util
from ..core.ir import (ClosedJaxpr, Eqn, Jaxpr, LazyJaxpr, PerturbedRule, Var, for_perturbed,
                       force_jaxpr)
from ..core.primitive import Primitive
from ..core.tracing import eval_jaxpr
from ..transforms import ad as _ad
from ..transforms import batching
from ..transforms.dce import dce_jaxpr
from ..transforms.jvp import jvp_jaxpr
from ..transforms.partial_eval import partial_eval_jaxpr
from ..transforms.transpose import transpose_jaxpr
from ..transforms.vmap import batched_aval, vmap_closed_jaxpr

# jaxprs derived from a call's jaxpr (its jvp, transpose, batched form), per jaxpr object
_derived = caches.Memo(1024)


def _out_avals(*avals, jaxpr, **params):
    return jaxpr.out_avals


def _run_inner(*args, jaxpr, **params):
    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


# =========================================================================== transparent calls

def _transparent_rules(prim: Primitive, rename: bool) -> None:
    """jvp, transpose and vmap of a call are the call of the inner jaxpr's jvp, transpose and
    vmap (``rename``: the transposed call is named ``transpose(name)``, as JAX's pjit)."""

    def jvp(primals, tangents, *, jaxpr, **params):
        nz = tuple(not isinstance(t, _ad.Zero) for t in tangents)
        jc, out_nz = _derived.get_or_make((jaxpr,), ("jvp", nz), lambda: jvp_jaxpr(jaxpr, nz))
        outs = prim.bind(*primals, *[t for t in tangents if not isinstance(t, _ad.Zero)],
                         jaxpr=jc, **params)
        n = len(jaxpr.out_avals)
        it = iter(outs[n:])
        return list(outs[:n]), [next(it) if z else _ad.Zero(a)
                                for z, a in zip(out_nz, jaxpr.out_avals)]

    def transpose(cts, *args, jaxpr, **params):
        lin = tuple(_ad.is_undefined_primal(a) for a in args)
        tj = _derived.get_or_make((jaxpr,), ("T", lin), lambda: transpose_jaxpr(jaxpr, lin))
        if rename:
            params = dict(params, name=f"transpose({params['name']})")
        outs = prim.bind(*[a for a in args if not _ad.is_undefined_primal(a)],
                         *[_ad.instantiate(c) for c in cts], jaxpr=tj, **params)
        it = iter(outs)
        return [next(it) if l else None for l in lin]

    def batch(args, dims, *, jaxpr, **params):
        n = batching.axis_size(args, dims)
        bj, out_dims = _derived.get_or_make((jaxpr,), ("vmap", tuple(dims), n),
                                            lambda: vmap_closed_jaxpr(jaxpr, list(dims), n))
        return list(prim.bind(*args, jaxpr=bj, **params)), list(out_dims)

    prim.abstract_eval = _out_avals
    prim.call = prim.transparent_call = True
    prim.jvp, prim.transpose, prim.batch = jvp, transpose, batch


def _call_partial_eval(e: Eqn, uin):
    """Splits a call in two: the known call also returns the residuals the unknown call reads."""
    closed = e.params["jaxpr"]
    known, unknown, uout, nres = partial_eval_jaxpr(closed, uin)
    res_vars = [Var(a) for a in known.out_avals[len(known.out_avals) - nres:]]
    kouts = [v for v, u in zip(e.outvars, uout) if not u]
    uouts = [v for v, u in zip(e.outvars, uout) if u]
    name = e.params.get("name", e.prim.name)
    kp = dict(e.params, jaxpr=known)
    up = dict(e.params, jaxpr=unknown)
    if "name" in e.params:
        kp["name"], up["name"] = f"known_{name}", f"unknown_{name}"
    ke = Eqn(e.prim, [a for a, u in zip(e.invars, uin) if not u], kouts + res_vars, kp)
    ue = Eqn(e.prim, res_vars + [a for a, u in zip(e.invars, uin) if u], uouts, up)
    return [ke], [ue], uout


def _checkpoint_partial_eval(e: Eqn, uin):
    """Remat: the known side computes only the known outputs; the unknown side takes the known
    inputs as residuals and recomputes everything it needs from them -- except the values the
    call's ``policy`` saves (``policy(prim, *avals, **params) -> bool`` for each equation
    computable from known inputs), which the known side also returns as residuals."""
    closed = e.params["jaxpr"]
    if e.params.get("policy") is not None:
        saved = _saved_by_policy(closed.jaxpr, uin, e.params["policy"])
        if saved:
            return _checkpoint_split_saving(e, uin, saved)
    known, _, uout, _ = partial_eval_jaxpr(closed, uin)
    nk = sum(1 for u in uout if not u)
    kj, used = dce_jaxpr(known.jaxpr, [True] * nk + [False] * (len(known.jaxpr.outvars) - nk))
    kouts = [v for v, u in zip(e.outvars, uout) if not u]
    ke = [Eqn(e.prim, [a for a, u in zip(e.invars, uin) if not u], kouts,
              dict(e.params, jaxpr=ClosedJaxpr(kj, known.consts)))] if kouts else []
    # the unknown side: the whole call, reading known inputs (residuals) and the unknown ones,
    # returning only the unknown outputs
    full, _ = dce_jaxpr(closed.jaxpr, list(uout))
    uouts = [v for v, u in zip(e.outvars, uout) if u]
    ue = [Eqn(e.prim, list(e.invars), uouts,
              dict(e.params, jaxpr=ClosedJaxpr(full, closed.consts)))]
    return ke, ue, uout


def _saved_by_policy(j, uin, policy) -> list:
    """The variables of known equations whose outputs ``policy`` saves (jaxpr order)."""
    known = {v.id for v, u in zip(j.invars, uin) if not u} | {v.id for v in j.constvars}
    saved = []
    for eq in j.eqns:
        if all(not isinstance(a, Var) or a.id in known for a in eq.invars):
            known.update(v.id for v in eq.outvars)
            if eq.invars and policy(eq.prim, *[a.aval for a in eq.invars], **eq.params):
                saved += [v for v in eq.outvars]
    return saved


def _checkpoint_split_saving(e: Eqn, uin, saved):
    """Partial evaluation of a checkpoint whose policy saves ``saved``: the known call returns
    the known outputs and the saved values; the unknown call takes the saved values as inputs
    instead of recomputing them."""
    closed = e.params["jaxpr"]
    j = closed.jaxpr
    known, _, uout, _ = partial_eval_jaxpr(closed, uin)
    # known side: the call restricted to known inputs, returning known outputs + saved values
    kin = [v for v, u in zip(j.invars, uin) if not u]
    kouts = [a for a, u in zip(j.outvars, uout) if not u]
    kj, _ = dce_jaxpr(Jaxpr(j.constvars, kin, kouts + saved, j.eqns))
    res = [Var(v.aval) for v in saved]
    k_outvars = [v for v, u in zip(e.outvars, uout) if not u] + res
    ke = [Eqn(e.prim, [a for a, u in zip(e.invars, uin) if not u], k_outvars,
              dict(e.params, jaxpr=ClosedJaxpr(kj, closed.consts)))]
    # unknown side: the saved values are inputs; what produced them is dropped
    saved_ids = {v.id for v in saved}
    eqns = [eq for eq in j.eqns if not any(v.id in saved_ids for v in eq.outvars)]
    uouts = [a for a, u in zip(j.outvars, uout) if u]
    uj, _ = dce_jaxpr(Jaxpr(j.constvars, list(j.invars) + list(saved), uouts, eqns))
    ue = [Eqn(e.prim, list(e.invars) + res, [v for v, u in zip(e.outvars, uout) if u],
              dict(e.params, jaxpr=ClosedJaxpr(uj, closed.consts)))]
    return ke, ue, uout


pjit_p = Primitive("pjit", multiple_results=True)
_transparent_rules(pjit_p, rename=True)
pjit_p.partial_eval = _call_partial_eval
# printed as JAX 0.10 prints its jit equations: ``jit[name=f jaxpr={ ... }]``, the inner
# binders named as the operands and results
pjit_p.pp_name = "jit"
pjit_p.pp_share_names = True
pjit_p.pp_params = lambda params, eqn: [("name", params["name"])] + sorted(
    (k, v) for k, v in params.items() if k != "name" and not k.startswith("_"))

# plain calls: run the jaxpr, and every rule is the jaxpr's
closed_call_p = Primitive("closed_call", multiple_results=True)
call_p = Primitive("call", multiple_results=True)
for _p in (closed_call_p, call_p):
    _transparent_rules(_p, rename=False)
    _p.impl = _run_inner
    _p.partial_eval = _call_partial_eval
del _p

checkpoint_p = Primitive("checkpoint", multiple_results=True)
_transparent_rules(checkpoint_p, rename=False)
checkpoint_p.impl = _run_inner
checkpoint_p.partial_eval = _checkpoint_partial_eval
checkpoint_p.remat = True
checkpoint_p.pp_name = "remat2"          # JAX's name and parameters
checkpoint_p.pp_params = lambda params, eqn: [
    ("differentiated", params.get("differentiated", False)), ("jaxpr", params["jaxpr"]),
    ("policy", params.get("policy")), ("prevent_cse", params.get("prevent_cse", True))]


def _custom_call_pp(rules: tuple):
    """JAX's printing of a custom call: its name first, the primal jaxpr as ``call_jaxpr``,
    each rule by its Python function's name, ``num_consts`` only when not 0."""
    def pp_params(params, eqn):
        shown = {"call_jaxpr": params["jaxpr"],
                 "symbolic_zeros": params.get("symbolic_zeros", False)}
        for key, param in rules:
            shown[key] = getattr(params.get(param), "fun_name", None) or key
        if params.get("num_consts"):
            shown["num_consts"] = params["num_consts"]
        return [("name", params.get("name"))] + sorted(shown.items())
    return pp_params


# =========================================================================== custom calls
# vmap of a custom call: it stays a call, with its jaxprs batched alike, so the custom rules
# still apply to the batched call.  Every non-const operand gets its batch axis first
# (unbatched ones are broadcast, which makes a custom bwd's per-example cotangents sum back
# over the batch through broadcast's transpose), and every output of every carried jaxpr is
# forced to batch axis 0 so that they agree.

def _batch_carried(j, in_dims, n):
    """``j`` batched (outputs at axis 0); ``in_dims`` is a list, or a function of the jaxpr."""
    if isinstance(j, PerturbedRule):        # ... and traced per perturbed mask
        return PerturbedRule(lambda m: _batch_carried(force_jaxpr(j.for_perturbed(m)),
                                                      in_dims, n))
    if isinstance(j, LazyJaxpr):            # a lazily traced rule stays lazy
        return LazyJaxpr(lambda: _batch_carried(force_jaxpr(j), in_dims, n))
    if callable(in_dims):
        in_dims = in_dims(j)
    return _derived.get_or_make((j,), ("custom vmap", tuple(in_dims), n),
                                lambda: vmap_closed_jaxpr(j, in_dims, n, out_dims=0)[0])


def _custom_call_batch(prim: Primitive) -> None:
    """A batching rule for a call carrying ``jaxpr`` (operands -> outs) and any of
    ``jvp_jaxpr`` (operands, tangents of the non-consts -> outs, out tangents), ``fwd_jaxpr``
    (operands -> outs, residuals), ``bwd_jaxpr`` (residuals, cts -> cts)."""

    def rule(args, dims, **params):
        n = batching.axis_size(args, dims)
        k = params.get("num_consts", 0)
        # unbatched operands stay unbatched (a custom_jvp's cond on an unbatched predicate
        # stays a cond), except for a custom_vjp: its bwd returns every operand's cotangent
        # batched, so every operand is batched to match
        keep = "bwd_jaxpr" not in params
        new_dims = [d if (i < k or keep) and d is None else 0 for i, d in enumerate(dims)]
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


# --------------------------------------------------------------------------- custom_jvp_call

def _custom_jvp_call_jvp(primals, tangents, *, jaxpr, jvp_jaxpr, num_consts, name,
                         symbolic_zeros=False):
    if any(not isinstance(t, _ad.Zero) for t in tangents[:num_consts]):
        raise TypeError(
            "Detected differentiation of a custom_jvp function with respect to a closed-over "
            "value. That isn't supported because the custom JVP rule only specifies how to "
            "differentiate the custom_jvp function with respect to explicit input parameters.")
    jc = force_jaxpr(jvp_jaxpr)
    tans = [_ad.instantiate(t) for t in tangents[num_consts:]]
    outs = eval_jaxpr(jc.jaxpr, jc.consts, *primals, *tans)
    m = len(jaxpr.out_avals)
    return list(outs[:m]), list(outs[m:])


def _custom_jvp_call_transpose(cts, *args, jaxpr, jvp_jaxpr, num_consts, name,
                               symbolic_zeros=False):
    """A custom_jvp function met on the linear side (a jvp rule that calls the function on its
    tangents, as lineax's and optimistix's ``_asarray``) is linear there: its transpose is the
    function's.  JAX's partial evaluation inlines such a call for the same reason."""
    lin = tuple(_ad.is_undefined_primal(a) for a in args)
    tj = _derived.get_or_make((jaxpr,), ("T", lin), lambda: transpose_jaxpr(jaxpr, lin))
    outs = eval_jaxpr(tj.jaxpr, tj.consts, *[a for a in args if not _ad.is_undefined_primal(a)],
                      *[_ad.instantiate(c) for c in cts])
    it = iter(outs)
    return [next(it) if l else None for l in lin]


custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_jvp_call_p.abstract_eval = _out_avals
custom_jvp_call_p.impl = _run_inner
custom_jvp_call_p.call = True
custom_jvp_call_p.jvp = _custom_jvp_call_jvp
custom_jvp_call_p.transpose = _custom_jvp_call_transpose
_custom_call_batch(custom_jvp_call_p)
custom_jvp_call_p.pp_params = _custom_call_pp((("jvp", "jvp_jaxpr"),))


# --------------------------------------------------------------------------- custom_vjp_call

def _custom_lin_forward(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


def _custom_lin_transpose(cts, *args, bwd_jaxpr, num_res, out_avals, name):
    res = args[:num_res]
    bj = force_jaxpr(bwd_jaxpr)
    cts_in = eval_jaxpr(bj.jaxpr, bj.consts, *res, *[_ad.instantiate(c) for c in cts])
    return [None] * num_res + list(cts_in)


custom_lin_p = Primitive("custom_lin", multiple_results=True)
custom_lin_p.abstract_eval = lambda *avals, out_avals, **params: list(out_avals)
# evaluating it forward (eagerly or in a compiled plan) is JAX's error; under a trace that is
# later transposed (grad of a custom_jvp rule that applies jvp to a custom_vjp function) it is not
custom_lin_p.impl = _custom_lin_forward
custom_lin_p.kernel = lambda ctx, *avals, **params: _custom_lin_forward()
custom_lin_p.jvp = lambda primals, tangents, **params: _custom_lin_forward()
custom_lin_p.transpose = _custom_lin_transpose
_custom_call_batch(custom_lin_p)


def _custom_vjp_call_jvp(primals, tangents, *, jaxpr, fwd_jaxpr, bwd_jaxpr, num_consts, name,
                         **_):
    if any(not isinstance(t, _ad.Zero) for t in tangents[:num_consts]):
        raise TypeError(
            f"custom_vjp function {name} closes over a value that is being differentiated; the "
            "custom rule only covers its explicit inputs. Pass the value as an argument (or use "
            "closure_convert).")
    tans = tangents[num_consts:]
    # a symbolic_zeros fwd rule learns which operands are perturbed
    perturbed = [not isinstance(t, _ad.Zero) for t in tans]
    fwd_jaxpr, bwd_jaxpr = for_perturbed(fwd_jaxpr, perturbed), for_perturbed(bwd_jaxpr, perturbed)
    fj = force_jaxpr(fwd_jaxpr)
    outs = eval_jaxpr(fj.jaxpr, fj.consts, *primals)
    m = len(jaxpr.out_avals)
    outs, res = list(outs[:m]), list(outs[m:])
    if all(isinstance(t, _ad.Zero) for t in tans):
        return outs, [_ad.Zero(a) for a in jaxpr.out_avals]
    touts = custom_lin_p.bind(*res, *[_ad.instantiate(t) for t in tans], bwd_jaxpr=bwd_jaxpr,
                              num_res=len(res), out_avals=tuple(jaxpr.out_avals), name=name)
    return outs, list(touts)


custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_vjp_call_p.abstract_eval = _out_avals
custom_vjp_call_p.impl = _run_inner
custom_vjp_call_p.call = True
custom_vjp_call_p.jvp = _custom_vjp_call_jvp
_custom_call_batch(custom_vjp_call_p)
custom_vjp_call_p.pp_params = _custom_call_pp((("fwd", "fwd_jaxpr"), ("bwd", "bwd_jaxpr")))


# --------------------------------------------------------------------------- custom_vmap_call
# A function with its own batching rule (jax.custom_batching.custom_vmap): the call carries
# the function's jaxpr (closed-over values first, ``num_consts`` of them) and the user's
# ``rule(axis_size, in_batched, *args) -> (out, out_batched)``, called on the batched
# operands (batch axis 0) when vmap meets the call.  jvp differentiates the function itself.

def _custom_vmap_jvp(primals, tangents, *, jaxpr, rule, num_consts, in_tree, out_tree, name,
                     jvp_rule):
    """The jvp is again a custom_vmap call: of the function's jvp, with the rule's jvp as its
    batching rule (``jvp_rule(rule)``, built by the api layer), so vmap of jvp still uses
    the user's rule."""
    m = len(jaxpr.out_avals)
    if all(isinstance(t, _ad.Zero) for t in tangents):
        outs = custom_vmap_call_p.bind(*primals, jaxpr=jaxpr, rule=rule, num_consts=num_consts,
                                       in_tree=in_tree, out_tree=out_tree, name=name,
                                       jvp_rule=jvp_rule)
        return list(outs), [_ad.Zero(_ad.tangent_aval(a)) for a in jaxpr.out_avals]
    if any(not isinstance(t, _ad.Zero) for t in tangents[:num_consts]):
        raise TypeError(f"custom_vmap function {name} closes over a value that is being "
                        f"differentiated; pass it as an argument")
    n = len(primals) - num_consts
    jv, _ = jvp_jaxpr(jaxpr, [False] * num_consts + [True] * n, instantiate_outs=True)
    tans = [_ad.instantiate(t) for t in tangents[num_consts:]]
    both_in = tree_util.treedef_tuple([in_tree, in_tree])
    both_out = tree_util.treedef_tuple([out_tree, out_tree])
    outs = custom_vmap_call_p.bind(*primals, *tans, jaxpr=jv, rule=jvp_rule(rule, out_tree),
                                   num_consts=num_consts, in_tree=both_in, out_tree=both_out,
                                   name=name, jvp_rule=jvp_rule)
    return list(outs[:m]), list(outs[m:])


def _custom_vmap_batch(args, dims, *, jaxpr, rule, num_consts, in_tree, out_tree, name,
                       jvp_rule):
    n = batching.axis_size(args, dims)
    if any(d is not None for d in dims[:num_consts]):
        # a batched closed-over value: the function's own batching (as if no rule were given)
        new_dims = [None if d is None else 0 for d in dims]
        moved = [a if d is None else batching.move_batch_axis(a, d, 0, n)
                 for a, d in zip(args, dims)]
        bj, out_dims = vmap_closed_jaxpr(jaxpr, new_dims, n, out_dims=0)
        return eval_jaxpr(bj.jaxpr, bj.consts, *moved), [0] * len(bj.jaxpr.outvars)
    xs = [a if d is None else batching.move_batch_axis(a, d, 0, n)
          for a, d in zip(args[num_consts:], dims[num_consts:])]
    # one entry per positional argument, in a list (as JAX passes it)
    in_batched = list(tree_util.tree_unflatten(in_tree, [d is not None
                                                          for d in dims[num_consts:]]))
    out, out_batched = rule(n, in_batched, *tree_util.tree_unflatten(in_tree, xs))
    outs, tree = tree_util.tree_flatten(out)
    if tree != out_tree:
        raise ValueError(f"structure of output value and output batching specification returned "
                         f"by custom vmap rule ({name}) do not match: rule returned {tree}, the "
                         f"function {out_tree}")
    if isinstance(out_batched, bool):
        flags = [out_batched] * len(outs)
    else:
        flags, btree = tree_util.tree_flatten(out_batched)
        if btree != out_tree:
            raise ValueError(f"structure of output value and output batching specification "
                             f"returned by custom vmap rule ({name}) do not match: {out_tree} "
                             f"and {btree}")
    for o, f, a in zip(outs, flags, jaxpr.out_avals):
        want = batched_aval(a, 0, n) if f else a
        got = batching.aval_of(o)
        if (got.shape, got.dtype) != (want.shape, want.dtype):
            raise ValueError(f"custom vmap rule ({name}) returned an output of shape "
                             f"{got.shape} {got.dtype} where {want.shape} {want.dtype} was "
                             f"expected")
    return outs, [0 if f else None for f in flags]


custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True)
custom_vmap_call_p.abstract_eval = _out_avals
custom_vmap_call_p.impl = _run_inner
custom_vmap_call_p.call = True
custom_vmap_call_p.jvp = _custom_vmap_jvp
custom_vmap_call_p.batch = _custom_vmap_batch
