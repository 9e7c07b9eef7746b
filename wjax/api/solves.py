"""``lax.custom_root``: a root finder differentiated by the implicit function theorem (a
``custom_jvp`` over the closure-converted functions; its tangent system is solved by the
user's ``tangent_solve``).  It needs ``custom_jvp`` and ``linearize`` from this layer, so
``wjax/__init__.py`` installs it into ``wjax.lax``."""
from __future__ import annotations

from typing import Any, Callable

from ..core import tree_util
from .autodiff import jvp, linearize
from .custom_derivatives import closure_convert, custom_jvp

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
