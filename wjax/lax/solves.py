"""``lax.custom_linear_solve``: a matrix-free linear solve whose derivatives are defined by
implicit differentiation at the solution (the ``custom_linear_solve`` primitive of
``wjax/prims/solves.py``), never by differentiating through the solver."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core import tree_util
from ..core.ir import ClosedJaxpr, Jaxpr, abstractify
from ..core.tracing import DebugInfo, eval_jaxpr, trace_flat
from ..prims.control import lift_consts
from ..prims.solves import linear_solve_p
from ..transforms.dce import dce_closed
from ..transforms.transpose import transpose_jaxpr

__all__ = ["custom_linear_solve"]


def _check_shapes(func_name, expected_name, actual, expected):
    actual_shapes = [np.shape(a) for a in actual]
    expected_shapes = [np.shape(e) for e in expected]
    if actual_shapes != expected_shapes:
        raise ValueError(f"{func_name}() output shapes must match {expected_name}, got "
                         f"{actual_shapes} and {expected_shapes}")


def _trace_vector_fun(fun, name, tree, avals, has_aux=False):
    """``fun`` (vector pytree -> vector pytree [, aux]) traced at ``avals``: (closed jaxpr
    with its consts as leading inputs, consts, aux tree or None)."""
    box = []

    def flat(*xs):
        out = fun(tree_util.tree_unflatten(tree, list(xs)))
        aux = None
        if has_aux:
            out, aux = out
        leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"{name}() output pytree structure must match b, got {out_tree} "
                            f"and {tree}")
        _check_shapes(name, "b", leaves, avals)
        aux_leaves, aux_tree = tree_util.tree_flatten(aux)
        box.append((len(leaves), aux_tree))
        return leaves + aux_leaves

    closed = trace_flat(flat, list(avals), DebugInfo(name, fun))
    jaxpr, consts = lift_consts(closed)
    return jaxpr, consts, box[0]


def _as_fun(jaxpr, consts, tree):
    def f(x):
        leaves = tree_util.tree_leaves(x)
        return tree_util.tree_unflatten(tree, eval_jaxpr(jaxpr.jaxpr, [], *consts, *leaves))
    return f


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable[[Callable, Any], Any],
                        transpose_solve: Callable[[Callable, Any], Any] | None = None,
                        symmetric: bool = False, has_aux: bool = False):
    """``solve(matvec, b)``, differentiated as the solution of ``matvec(x) == b``:
    ``x_dot = solve(matvec, b_dot - matvec_dot(x))``, and in reverse mode through
    ``transpose_solve(vecmat, ct)`` (``solve`` itself when ``symmetric``), where ``vecmat`` is
    the transpose of ``matvec``.  ``b`` may be any pytree of arrays."""
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    b_leaves, tree = tree_util.tree_flatten(b)
    b_avals = [abstractify(x) for x in b_leaves]

    mv_jaxpr, mv_consts, _ = _trace_vector_fun(matvec, "matvec", tree, b_avals)
    matvec_fun = _as_fun(mv_jaxpr, mv_consts, tree)
    nmv = len(mv_consts)
    # vecmat = matvec^T: the transpose of matvec's jaxpr in its vector argument
    vm_closed = transpose_jaxpr(mv_jaxpr, [False] * nmv + [True] * len(b_leaves))
    vm_jaxpr, vm_extra = lift_consts(vm_closed)
    vm_consts = list(vm_extra) + list(mv_consts)
    vecmat_fun = _as_fun(vm_jaxpr, vm_consts, tree)

    def solve_with(s, f):
        return lambda x: s(f, x)

    s_jaxpr, s_consts, (nx, aux_tree) = _trace_vector_fun(
        solve_with(solve, matvec_fun), "solve", tree, b_avals, has_aux)
    if transpose_solve is None:
        ts_jaxpr, ts_consts = None, []
    else:
        ts_jaxpr, ts_consts, _ = _trace_vector_fun(
            solve_with(transpose_solve, vecmat_fun), "transpose_solve", tree, b_avals, has_aux)
    # the primitive carries vectors only: aux outputs of the solvers are split off here
    if has_aux:
        s_main = _first_outputs(s_jaxpr, nx)
        ts_main = None if ts_jaxpr is None else _first_outputs(ts_jaxpr, nx)
    else:
        s_main, ts_main = s_jaxpr, ts_jaxpr
    groups = [mv_consts, vm_consts, s_consts, ts_consts]
    out = linear_solve_p.bind(*[c for g in groups for c in g], *b_leaves,
                              const_lengths=tuple(len(g) for g in groups),
                              jaxprs=(mv_jaxpr, vm_jaxpr, s_main, ts_main))
    x = tree_util.tree_unflatten(tree, list(out))
    if not has_aux:
        return x
    aux_leaves = eval_jaxpr(s_jaxpr.jaxpr, [], *s_consts, *b_leaves)[nx:]
    return x, tree_util.tree_unflatten(aux_tree, list(aux_leaves))


def _first_outputs(closed, n):
    j = closed.jaxpr
    return dce_closed(ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars[:n], j.eqns),
                                  closed.consts))[0]
