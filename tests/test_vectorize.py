"""jnp.vectorize and lax.Precision against real JAX."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

RS = np.random.RandomState(0)
A = RS.randn(4, 3, 5).astype(np.float32)
B = RS.randn(5).astype(np.float32)
M = RS.randn(2, 5, 5).astype(np.float32)

CASES = [
    ("(n),(n)->()", lambda np_: np_.dot, (A, B)),
    ("(m,n),(n)->(m)", lambda np_: (lambda m, v: m @ v), (M, B)),
    ("(n)->(),(n)", lambda np_: (lambda v: (v.sum(), v * 2)), (A,)),
    (None, lambda np_: (lambda x, y: x * 2 + y), (A, B)),
    ("()->(k)", lambda np_: (lambda s: np_.stack([s, s + 1])), (B,)),
]


@pytest.mark.parametrize("k", range(len(CASES)))
@pytest.mark.parametrize("jit", [False, True])
def test_vectorize_matches_jax(k, jit):
    sig, make, args = CASES[k]
    ours = jnp.vectorize(make(jnp), signature=sig)
    theirs = jjnp.vectorize(make(jjnp), signature=sig)
    if jit:
        ours, theirs = wjax.jit(ours), jax.jit(theirs)
    got, want = ours(*args), theirs(*args)
    for g, w in zip(wjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5)


def test_vectorize_grad_excluded_and_errors():
    f = jnp.vectorize(lambda x, p: (x ** p).sum(), signature="(n)->()", excluded={1})
    jf = jjnp.vectorize(lambda x, p: (x ** p).sum(), signature="(n)->()", excluded={1})
    np.testing.assert_allclose(np.asarray(f(A, 2)), np.asarray(jf(A, 2)), rtol=1e-5)
    g = wjax.grad(lambda x: f(x, 3).sum())(A)
    jg = jax.grad(lambda x: jf(x, 3).sum())(A)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jg), rtol=1e-5)
    for mod in (jnp, jjnp):
        with pytest.raises(ValueError):
            mod.vectorize(mod.dot, signature="(n),(n)->()")(A, np.ones(4, np.float32))
        with pytest.raises(ValueError):
            mod.vectorize(mod.dot, signature="(n),(n)->(")(A, B)


def test_precision_names_like_jax():
    P, JP = wjax.lax.Precision, jax.lax.Precision
    assert [p.name for p in P] == [p.name for p in JP]
    for name in ("highest", "float32", "bfloat16", "tensorfloat32", "default", "HIGH"):
        try:
            want = JP(name).name
        except ValueError:
            with pytest.raises(ValueError):
                P(name)
            continue
        assert P(name).name == want and str(P(name)) == str(JP(name))
    with pytest.raises(ValueError):
        P("x")
    x = jnp.ones((3, 3))
    np.testing.assert_allclose(np.asarray(jnp.dot(x, x, precision=P.HIGHEST)), 3 * np.ones((3, 3)))
