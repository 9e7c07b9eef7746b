"""Python control flow under autodiff outside ``jit`` (JAX differentiates with the primal
values known): ``if``/``while``/``int()``/``operator.index``/``.item()``/boolean masks on traced
values take the path of the values, under ``grad jvp vjp linearize jacfwd jacrev hessian
value_and_grad`` and in unmapped ``vmap`` inputs; under ``jit``, ``checkpoint`` and loop bodies the
conversions raise JAX's errors.  Every case is compared with real JAX, raising cases by class."""
from __future__ import annotations

import numpy as np
import pytest

import wjax
from checks import close

F = np.float32


def _piecewise(x):
    if x < 3:
        return 3. * x ** 2
    return -4 * x


def _pywhile(x):
    while x < 10:
        x = x * 2
    return x


CASES = {
    # name: (build(J, N, L) -> callable, args)
    "grad_if_low": (lambda J, N, L: J.grad(_piecewise), (2.0,)),
    "grad_if_high": (lambda J, N, L: J.grad(_piecewise), (4.0,)),
    "grad_while": (lambda J, N, L: J.grad(_pywhile), (2.0,)),
    "grad_int_range": (lambda J, N, L: J.grad(lambda x: sum(x for _ in range(int(x)))), (3.0,)),
    "grad_index": (lambda J, N, L: J.grad(lambda x, n: x * N.arange(10.0)[n]), (2.0, 3)),
    "grad_item": (lambda J, N, L: J.grad(lambda x: x * x.item()), (2.0,)),
    "grad_mask": (
        lambda J, N, L: J.grad(lambda x: x[x > 0].sum()),
        (np.array([1.0, -1.0, 2.0], F),),
    ),
    "grad_int_input_branch": (lambda J, N, L: J.grad(lambda x, n: x * 2 if n > 2 else x), (2.0, 3)),
    "grad_float_raises": (lambda J, N, L: J.grad(lambda x: x * float(x)), (2.0,)),
    "grad_tolist_raises": (lambda J, N, L: J.grad(lambda x: x * x.tolist()), (2.0,)),
    "grad_asarray_raises": (lambda J, N, L: J.grad(lambda x: x * np.asarray(x)), (2.0,)),
    "value_and_grad": (lambda J, N, L: J.value_and_grad(_piecewise), (4.0,)),
    "jvp": (lambda J, N, L: lambda x: J.jvp(_piecewise, (x,), (1.0,)), (2.0,)),
    "vjp": (lambda J, N, L: lambda x: J.vjp(_piecewise, x)[1](1.0), (2.0,)),
    "linearize": (lambda J, N, L: lambda x: J.linearize(_piecewise, x)[1](1.0), (2.0,)),
    "jacfwd": (lambda J, N, L: J.jacfwd(_piecewise), (2.0,)),
    "jacrev": (lambda J, N, L: J.jacrev(_piecewise), (4.0,)),
    "hessian": (lambda J, N, L: J.hessian(lambda x: 3 * x**3 if x < 3 else -4 * x), (2.0,)),
    "grad_grad": (lambda J, N, L: J.grad(J.grad(lambda x: x**3 if x < 3 else -4 * x)), (2.0,)),
    "grad_of_vmap_closure": (
        lambda J, N, L: J.grad(
            lambda x: J.vmap(lambda y: y * 2 if x < 3 else y)(N.ones(2) * x).sum()
        ),
        (2.0,),
    ),
    "vmap_unmapped_arg": (
        lambda J, N, L: J.vmap(lambda x, n: x * 2 if n > 2 else x, in_axes=(0, None)),
        (np.ones(3, F), 3),
    ),
    "grad_outer_if_checkpoint": (
        lambda J, N, L: J.grad(lambda x: J.checkpoint(lambda y: y * 2)(x) if x < 3 else x),
        (2.0,),
    ),
    "grad_outer_if_cond": (
        lambda J, N, L: J.grad(
            lambda x: L.cond(x < 3, lambda y: y * 2, lambda y: y, x) if x > 0 else x
        ),
        (2.0,),
    ),
    "grad_fori_concrete_bounds": (
        lambda J, N, L: J.grad(lambda x: L.fori_loop(0, int(x), lambda i, c: c * x, 1.0)),
        (3.0,),
    ),
    # abstract traces: JAX's errors
    "jit_grad_raises": (lambda J, N, L: J.jit(J.grad(_piecewise)), (2.0,)),
    "grad_jit_raises": (lambda J, N, L: J.grad(J.jit(_piecewise)), (2.0,)),
    "vmap_grad_raises": (lambda J, N, L: J.vmap(J.grad(_piecewise)), (np.array([2.0, 4.0], F),)),
    "grad_checkpoint_raises": (lambda J, N, L: J.grad(J.checkpoint(_piecewise)), (2.0,)),
    "grad_scan_body_raises": (
        lambda J, N, L: J.grad(
            lambda x: L.scan(lambda c, _: (c * x if x > 1 else c, None), x, None, length=3)[0]
        ),
        (2.0,),
    ),
    "vmap_mapped_raises": (
        lambda J, N, L: J.vmap(lambda x: x * 2 if x > 0 else x),
        (np.ones(3, F),),
    ),
}


def _run(build, args, mod):
    try:
        return build(*mod)(*args), None
    except Exception as e:   # noqa: BLE001 - the class is what is compared
        return None, e


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_jax(name):
    rjax = pytest.importorskip("jax")
    build, args = CASES[name]
    want, werr = _run(build, args, (rjax, rjax.numpy, rjax.lax))
    got, gerr = _run(build, args, (wjax, wjax.numpy, wjax.lax))
    if werr is not None:
        assert gerr is not None, f"JAX raised {type(werr).__name__}, wjax returned {got}"
        assert type(gerr).__name__ == type(werr).__name__, (gerr, werr)
        return
    assert gerr is None, gerr
    close(got, rjax.tree_util.tree_leaves(want))


def test_values_are_the_paths_taken():
    g = wjax.grad(_piecewise)
    assert float(g(2.)) == 12.0 and float(g(4.)) == -4.0 and float(g(2.5)) == 15.0
    # one function, both paths, then the first again: the structural caches keep them apart
    assert [float(g(x)) for x in (1., 5., 1.)] == [6.0, -4.0, 6.0]
    jaxpr = wjax.make_jaxpr(wjax.grad(lambda x: x * 2 if x > 0 else x))
    with pytest.raises(wjax.errors.TracerBoolConversionError):
        jaxpr(1.0)   # make_jaxpr traces abstractly, as jit does


def test_concrete_value_runs_only_what_is_needed():
    from wjax._src.backend import runtime
    x = np.linspace(0, 1, 1000, dtype=F)

    def f(x):
        y = wjax.numpy.sin(x) * 3          # not needed for the branch
        if x[0] < 1:                       # needs only x[0] < 1
            return (y * x).sum()
        return y.sum()
    st = runtime.get().stats
    before = st["dispatches"]
    close(wjax.grad(f)(x), np.sin(x) * 3 + 3 * np.cos(x) * x, rtol=1e-5, atol=1e-5)
    assert st["dispatches"] - before < 12
