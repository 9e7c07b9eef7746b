"""Solves differentiated implicitly, never through the solver: ``lax.custom_linear_solve``, a
matrix-free linear solve whose derivatives are defined at the solution (the
``custom_linear_solve`` primitive of ``wjax/_src/prims/solves.py``), and ``lax.custom_root``, a root
finder differentiated by the implicit function theorem (a ``custom_jvp`` over the
closure-converted functions; its tangent system is solved by the user's ``tangent_solve``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._src.api.autodiff import jvp, linearize
from .._src.api.custom_derivatives import closure_convert, custom_jvp
from .._src.core import tree_util
from .._src.core.ir import ClosedJaxpr, Jaxpr, abstractify
from .._src.core.tracing import DebugInfo, eval_jaxpr, trace_flat
from .._src.prims.control import lift_consts
from .._src.prims.solves import linear_solve_p
from .._src.transforms.dce import dce_closed
from .._src.transforms.transpose import transpose_jaxpr

__all__ = ["custom_linear_solve", "custom_root"]


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

__all__ = ["custom_root"]


def _check_tree(func_name, expected_name, actual_tree, expected_tree, has_aux=False):
    if has_aux:
        if len(actual_tree.children()) != 2:
            raise TypeError(f"{func_name}() must return a (solution, aux) pair when has_aux=True")
        actual_tree = actual_tree.children()[0]
    if actual_tree != expected_tree:
        raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, got "
                        f"{actual_tree} and {expected_tree}.")


def custom_root(f: Callable, initial_guess: Any, solve: Callable[[Callable, Any], Any],
                tangent_solve: Callable[[Callable, Any], Any], has_aux: bool = False):
    """``solve(f, initial_guess)``, differentiated (with respect to values ``f`` closes over)
    as the root of ``f``: ``x_dot = -tangent_solve(g, df)``, ``g`` being ``f`` linearized at
    the root and ``df`` the tangent of ``f``'s output through its closed-over values."""
    guess_tree = tree_util.tree_structure(initial_guess)
    f_c, f_consts = closure_convert(f, initial_guess)
    f_out_tree = tree_util.tree_structure(f_c(initial_guess, *f_consts))
    _check_tree("f", "initial_guess", f_out_tree, guess_tree)
    s_c, s_consts = closure_convert(lambda x: solve(f, x), initial_guess)
    _check_tree("solve", "initial_guess",
                tree_util.tree_structure(s_c(initial_guess, *s_consts)), guess_tree, has_aux)

    def linearize_and_solve(x, b):
        _, f_jvp = linearize(f, x)
        return tangent_solve(f_jvp, b)

    l_c, l_consts = closure_convert(linearize_and_solve, initial_guess, initial_guess)
    _check_tree("tangent_solve", "x",
                tree_util.tree_structure(l_c(initial_guess, initial_guess, *l_consts)),
                guess_tree)
    return _root(f_c, s_c, l_c, has_aux, tuple(f_consts), tuple(s_consts), tuple(l_consts),
                 initial_guess)


def _root_impl(f_c, s_c, l_c, has_aux, f_consts, s_consts, l_consts, guess):
    return s_c(guess, *s_consts)


_root = custom_jvp(_root_impl, nondiff_argnums=(0, 1, 2, 3))


@_root.defjvp
def _root_jvp(f_c, s_c, l_c, has_aux, primals, tangents):
    f_consts, s_consts, l_consts, guess = primals
    f_consts_dot = tangents[0]
    out = _root(f_c, s_c, l_c, has_aux, *primals)
    solution, aux = out if has_aux else (out, None)
    # F(m, u*(m)) = 0  =>  du* = -(d_u F)^-1 d_m F [dm]
    _, rhs = jvp(lambda *c: f_c(solution, *c), tuple(f_consts), tuple(f_consts_dot))
    sol_dot = tree_util.tree_map(lambda t: -t, l_c(solution, rhs, *l_consts))
    if has_aux:
        aux_dot = tree_util.tree_map(lambda a: a * 0, aux)
        return (solution, aux), (sol_dot, aux_dot)
    return solution, sol_dot
