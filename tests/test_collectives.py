"""Collectives over named vmap axes (psum, pmean, pmax, pmin, all_gather, all_to_all,
pswapaxes, ppermute, pshuffle, psum_scatter, axis_index, axis_size) against real JAX: values,
gradients through them (vmap of grad and grad of vmap), jit inside and outside, nested named
axes, scan/cond bodies, pytrees, and the unbound-name errors."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

X3 = np.arange(3.0, dtype=np.float32)
M33 = np.arange(9.0, dtype=np.float32).reshape(3, 3)
M32 = np.arange(6.0, dtype=np.float32).reshape(3, 2)


def _programs(jx, np_):
    lax, vmap, grad, jit = jx.lax, jx.vmap, jx.grad, jx.jit

    def v(f, **kw):
        return vmap(f, axis_name="i", **kw)
    return {
        "psum": lambda: v(lambda x: lax.psum(x ** 2, "i"))(X3),
        "psum_literal": lambda: v(lambda x: lax.psum(3.0, "i"))(X3),
        "psum_int": lambda: v(lambda x: lax.psum(1, "i"))(X3),
        "psum_bool": lambda: v(lambda x: lax.psum(x > 0, "i"))(X3),
        "psum_tree": lambda: v(lambda x: lax.psum({"a": x, "b": (2 * x, x)}, "i"))(X3),
        "pmean": lambda: v(lambda x: x - lax.pmean(x, "i"))(M32),
        "pmean_int": lambda: v(lambda x: lax.pmean(np_.int32(x), "i"))(X3),
        "pmax_pmin": lambda: v(lambda x: (lax.pmax(x, "i"), lax.pmin(-x, "i")))(M32),
        "axis_index": lambda: v(lambda x: lax.axis_index("i") * x)(X3),
        "axis_size": lambda: v(lambda x: x * lax.axis_size("i"))(X3),
        "all_gather": lambda: v(lambda x: lax.all_gather(x, "i"))(M32),
        "all_gather_axis1": lambda: v(lambda x: lax.all_gather(x, "i", axis=1))(M32),
        "all_gather_tiled": lambda: v(lambda x: lax.all_gather(x, "i", tiled=True))(M32),
        "all_to_all": lambda: v(lambda x: lax.all_to_all(x, "i", 0, 0))(M33),
        "all_to_all_1_0": lambda: v(lambda x: lax.all_to_all(x, "i", 1, 0))(
            np.arange(18.0, dtype=np.float32).reshape(3, 2, 3)),
        "all_to_all_tiled": lambda: v(lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True))(
            np.arange(36.0, dtype=np.float32).reshape(3, 2, 6)),
        "pswapaxes": lambda: v(lambda x: lax.pswapaxes(x, "i", 0))(M33),
        "ppermute": lambda: v(lambda x: lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]))(M32),
        "pshuffle": lambda: v(lambda x: lax.pshuffle(x, "i", [2, 0, 1]))(X3),
        "psum_scatter": lambda: v(lambda x: lax.psum_scatter(x, "i"))(M33),
        "psum_scatter_tiled": lambda: v(lambda x: lax.psum_scatter(x, "i", tiled=True))(
            np.arange(18.0, dtype=np.float32).reshape(3, 6)),
        "vmap_grad_psum": lambda: v(grad(lambda x: lax.psum(x ** 2, "i")))(X3),
        "vmap_grad_psum_times": lambda: v(grad(lambda x: lax.psum(x, "i") * x))(X3),
        "grad_vmap_psum": lambda: grad(
            lambda x: v(lambda y: lax.psum(y ** 2, "i") * y)(x).sum())(X3),
        "vmap_grad_pmean": lambda: v(grad(lambda x: lax.pmean(x ** 2, "i")))(X3),
        "vmap_grad_all_gather": lambda: v(grad(
            lambda x: (lax.all_gather(x ** 2, "i", tiled=True) * np_.arange(6.0)).sum()))(M32),
        "vmap_grad_ppermute": lambda: v(grad(
            lambda x: lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)])
            * np_.float32(lax.axis_index("i"))))(X3),
        "vmap_of_jit": lambda: v(jit(lambda x: x - lax.pmean(x, "i")))(X3),
        "jit_of_vmap": lambda: jit(v(lambda x: x - lax.pmean(x, "i")))(X3),
        "nested_both": lambda: vmap(vmap(lambda x: lax.psum(x, ("i", "j")), axis_name="j"),
                                    axis_name="i")(M32),
        "nested_outer": lambda: vmap(vmap(lambda x: lax.psum(x, "i"), axis_name="j"),
                                     axis_name="i")(M32),
        "nested_index": lambda: vmap(vmap(
            lambda x: lax.axis_index("i") + 10 * lax.axis_index("j"), axis_name="j"),
            axis_name="i")(M32),
        "in_scan": lambda: v(lambda x: lax.scan(
            lambda c, y: (c + lax.psum(y, "i"), c), 0.0, x)[0])(M32),
        "in_cond": lambda: v(lambda x: lax.cond(x > 0, lambda: lax.psum(x, "i"),
                                                lambda: -x))(X3),
        "in_fori": lambda: v(lambda x: lax.fori_loop(
            0, 3, lambda k, c: c + lax.pmax(c, "i"), x))(X3),
        "unbound_eager": lambda: lax.psum(X3, "i"),
        "unbound_jit": lambda: jit(lambda x: lax.psum(x, "i"))(X3),
        "wrong_name": lambda: v(lambda x: lax.psum(x, "j"))(X3),
        "pmax_grad": lambda: v(grad(lambda x: lax.pmax(x, "i")))(X3),
    }


class _Raised(str):
    """The class name of the exception a program raised."""


def _outcome(fn):
    try:
        out = fn()
    except Exception as e:                # noqa: BLE001 - the classes are compared
        return _Raised(type(e).__name__)
    return jax.tree_util.tree_map(lambda a: np.asarray(a).tolist(), out)


NAMES = sorted(_programs(wjax, jnp))


@pytest.mark.parametrize("name", NAMES)
def test_collective_matches_jax(name):
    got = _outcome(_programs(wjax, jnp)[name])
    want = _outcome(_programs(jax, jjnp)[name])
    if isinstance(want, _Raised) or isinstance(got, _Raised):
        assert (type(got), got) == (type(want), want)
        return
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want), (got, want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        assert np.asarray(g).dtype == np.asarray(w).dtype or isinstance(g, (int, float, bool))


def test_axis_index_groups_refused():
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        wjax.vmap(lambda x: wjax.lax.psum(x, "i", axis_index_groups=[[0, 1], [2]]),
                  axis_name="i")(X3)


def test_jit_cache_keyed_by_axis_size():
    f = wjax.jit(lambda x: x - wjax.lax.pmean(x, "i"))
    a = wjax.vmap(f, axis_name="i")(X3)
    b = wjax.vmap(f, axis_name="i")(np.arange(4.0, dtype=np.float32))
    np.testing.assert_allclose(a, X3 - 1.0)
    np.testing.assert_allclose(b, np.arange(4.0) - 1.5)


def test_all_to_all_transposes_to_the_swapped_all_to_all():
    # JAX 0.10 cannot transpose all_to_all under vmap (it raises on the cotangent's type); the
    # expected value follows its rule: example i's loss sum_j x_j[i] * w[j] sends cotangent w[k]
    # to every element of example k
    w = np.arange(3.0, dtype=np.float32)
    g = wjax.vmap(wjax.grad(lambda x: (wjax.lax.all_to_all(x, "i", 0, 0) * w).sum()),
                  axis_name="i")(M33)
    np.testing.assert_allclose(g, np.repeat(w[:, None], 3, axis=1))
