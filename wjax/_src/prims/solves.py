"""``linear_solve``: a linear solve with user-supplied solvers (JAX's ``linear_solve_p``,
behind ``lax.custom_linear_solve`` and ``lax.custom_root``).

The equation carries four closed jaxprs -- ``matvec`` (the linear map A), ``vecmat`` (its
transpose), ``solve`` (b -> A^-1 b) and ``transpose_solve`` (b -> A^-T b) -- each taking its
closed-over values, then the vector; the operands are the four groups of closed-over values
(``const_lengths`` long) followed by the right-hand side b.  Its value is ``solve(b)``, and
its rules never differentiate the solvers:

* jvp: ``x_dot = linear_solve(b_dot - A_dot x)`` (A_dot from the tangents of matvec's
  closed-over values), itself a linear_solve, so it transposes;
* transpose (in b): ``linear_solve`` with the roles swapped (A^T, transpose_solve);
* vmap: every jaxpr batched, b and x batched at axis 0.

Eagerly it runs the solve jaxpr; under ``jit`` the backend inlines it (``expand``).
"""
from __future__ import annotations

from ..core import ops
from ..core.primitive import Primitive
from ..core.tracing import eval_jaxpr
from ..transforms import ad as _ad
from ..transforms import batching
from ..transforms.jvp import jvp_eval
from ..transforms.vmap import vmap_closed_jaxpr

linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)

MATVEC, VECMAT, SOLVE, TRANSPOSE_SOLVE = range(4)


def _split(args, const_lengths):
    out, i = [], 0
    for n in const_lengths:
        out.append(list(args[i:i + n]))
        i += n
    return out, list(args[i:])


@linear_solve_p.def_abstract_eval
def _abstract(*avals, const_lengths, jaxprs):
    return list(jaxprs[SOLVE].out_avals)


def _run(*args, const_lengths, jaxprs):
    consts, b = _split(args, const_lengths)
    j = jaxprs[SOLVE]
    return eval_jaxpr(j.jaxpr, j.consts, *consts[SOLVE], *b)


linear_solve_p.impl = _run
linear_solve_p.expand = _run


def _jvp(primals, tangents, *, const_lengths, jaxprs):
    consts, b = _split(primals, const_lengths)
    tconsts, tb = _split(tangents, const_lengths)
    x = linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
    rhs = [_ad.instantiate(t) for t in tb]
    if any(not isinstance(t, _ad.Zero) for t in tconsts[MATVEC]):
        mv = jaxprs[MATVEC]
        zeros = [_ad.Zero(_ad.tangent_aval(_ad.aval_of(v))) for v in x]
        _, a_dot_x = jvp_eval(mv.jaxpr, mv.consts, consts[MATVEC] + list(x),
                              tconsts[MATVEC] + zeros)
        rhs = [r if isinstance(t, _ad.Zero) else ops.sub(r, t) for r, t in zip(rhs, a_dot_x)]
    if all(isinstance(t, _ad.Zero) for t in tb) and \
            all(isinstance(t, _ad.Zero) for t in tconsts[MATVEC]):
        return x, [_ad.Zero(_ad.tangent_aval(_ad.aval_of(v))) for v in x]
    flat_consts = [c for group in consts for c in group]
    x_dot = linear_solve_p.bind(*flat_consts, *rhs, const_lengths=const_lengths, jaxprs=jaxprs)
    return x, list(x_dot)


linear_solve_p.jvp = _jvp


def _transpose(cts, *args, const_lengths, jaxprs):
    consts, b = _split(args, const_lengths)
    if any(_ad.is_undefined_primal(c) for group in consts for c in group):
        raise TypeError("custom_linear_solve: cannot transpose with respect to the closed-over "
                        "values of its functions")
    if jaxprs[TRANSPOSE_SOLVE] is None:
        raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                        "of custom_linear_solve")
    cts = [_ad.instantiate(c) if isinstance(c, _ad.Zero) else c for c in cts]
    order = (VECMAT, MATVEC, TRANSPOSE_SOLVE, SOLVE)
    swapped = tuple(jaxprs[i] for i in order)
    lengths = tuple(const_lengths[i] for i in order)
    ct_b = linear_solve_p.bind(*[c for i in order for c in consts[i]], *cts,
                               const_lengths=lengths, jaxprs=swapped)
    return [None] * sum(const_lengths) + list(ct_b)


linear_solve_p.transpose = _transpose


def _batch(args, dims, *, const_lengths, jaxprs):
    n = batching.axis_size(args, dims)
    consts, b = _split(list(zip(args, dims)), const_lengths)
    new_args, new_jaxprs = [], []
    for j, group in zip(jaxprs, consts):
        cdims = [None if d is None else 0 for _, d in group]
        new_args += [a if d is None else batching.move_batch_axis(a, d, 0, n) for a, d in group]
        if j is None:
            new_jaxprs.append(None)
            continue
        nx = len(j.jaxpr.invars) - len(group)
        new_jaxprs.append(vmap_closed_jaxpr(j, cdims + [0] * nx, n, out_dims=0)[0])
    new_args += [batching.move_batch_axis(a, d, 0, n) for a, d in b]
    outs = linear_solve_p.bind(*new_args, const_lengths=const_lengths, jaxprs=tuple(new_jaxprs))
    return list(outs), [0] * len(outs)


linear_solve_p.batch = _batch


# --------------------------------------------------------------------------- linear_call
# ``custom_derivatives.linear_call(callee, transpose, residual_args, linear_args)``: a call
# of ``callee(res, lin)``, linear in ``lin``, whose transpose is ``transpose(res, ct)``.  The
# equation carries both closed jaxprs (closed-over values lifted to leading operands,
# ``num_callee_consts`` and ``num_transpose_consts`` of them), then the residuals
# (``num_res``), then the linear operands.

linear_call_p = Primitive("linear_call", multiple_results=True)


def _lc_split(args, nc, nt, nr):
    return args[:nc], args[nc:nc + nt], args[nc + nt:nc + nt + nr], args[nc + nt + nr:]


@linear_call_p.def_abstract_eval
def _lc_abstract(*avals, callee, transpose, num_callee_consts, num_transpose_consts, num_res):
    return list(callee.out_avals)


def _lc_run(*args, callee, transpose, num_callee_consts, num_transpose_consts, num_res):
    cc, _, res, lin = _lc_split(args, num_callee_consts, num_transpose_consts, num_res)
    return eval_jaxpr(callee.jaxpr, callee.consts, *cc, *res, *lin)


linear_call_p.impl = _lc_run
linear_call_p.expand = _lc_run


def _lc_jvp(primals, tangents, **params):
    nc, nt, nr = (params["num_callee_consts"], params["num_transpose_consts"],
                  params["num_res"])
    if any(not isinstance(t, _ad.Zero) for t in tangents[:nc + nt + nr]):
        raise TypeError("linear_call: differentiation with respect to the residual arguments "
                        "(or values the functions close over) is not supported")
    outs = linear_call_p.bind(*primals, **params)
    lin_t = tangents[nc + nt + nr:]
    if all(isinstance(t, _ad.Zero) for t in lin_t):
        return outs, [_ad.Zero(_ad.tangent_aval(_ad.aval_of(o))) for o in outs]
    touts = linear_call_p.bind(*primals[:nc + nt + nr], *[_ad.instantiate(t) for t in lin_t],
                               **params)
    return outs, list(touts)


def _lc_transpose(cts, *args, callee, transpose, num_callee_consts, num_transpose_consts,
                  num_res):
    cc, tc, res, lin = _lc_split(args, num_callee_consts, num_transpose_consts, num_res)
    if any(_ad.is_undefined_primal(a) for a in (*cc, *tc, *res)):
        raise TypeError("linear_call: transposition with respect to the residual arguments "
                        "is not supported")
    cts = [_ad.instantiate(c) for c in cts]
    out = linear_call_p.bind(*tc, *cc, *res, *cts, callee=transpose, transpose=callee,
                             num_callee_consts=num_transpose_consts,
                             num_transpose_consts=num_callee_consts, num_res=num_res)
    return [None] * (len(args) - len(lin)) + list(out)


def _lc_batch(args, dims, *, callee, transpose, num_callee_consts, num_transpose_consts,
              num_res):
    n = batching.axis_size(args, dims)
    moved = [batching.move_batch_axis(a, d, 0, n) for a, d in zip(args, dims)]
    nc, nt = num_callee_consts, num_transpose_consts
    nl_c = len(callee.jaxpr.invars)
    nl_t = len(transpose.jaxpr.invars)
    bc = vmap_closed_jaxpr(callee, [0] * nl_c, n, out_dims=0)[0]
    bt = vmap_closed_jaxpr(transpose, [0] * nl_t, n, out_dims=0)[0]
    outs = linear_call_p.bind(*moved, callee=bc, transpose=bt, num_callee_consts=nc,
                              num_transpose_consts=nt, num_res=num_res)
    return list(outs), [0] * len(outs)


linear_call_p.jvp = _lc_jvp
linear_call_p.transpose = _lc_transpose
linear_call_p.batch = _lc_batch
