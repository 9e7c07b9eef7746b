"""Traced programs do not depend on the device: long contractions are split at lowering.

lavapipe stops a shader invocation after 65535 loop iterations, so a long contraction must be
cut into chunks there.  That is a decision of the backend for its ``Target``
(``Primitive.decompose``, traced and inlined by ``backend/lower.py``), not of tracing:
``make_jaxpr`` binds what JAX binds -- one ``dot_general``, one ``conv_general_dilated``, one
``reduce_sum`` at every size -- and the values, under ``jit`` and eagerly, match NumPy in
float64 and real JAX.  With a target without a loop limit (GPUs) the lowering keeps the
equation whole; the "few outputs, long contraction" product stays a fused multiply and
reduction on every target (a tuning choice: it is the parallel form).
"""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import execute, profiles, runtime
from wjax._src.prims import conv as C
from wjax._src.prims import dot as L

from checks import close

RS = np.random.RandomState(7)
DN = (((1,), (0,)), ((), ()))


def f32(*shape):
    return RS.randn(*shape).astype(np.float32)


def conv(lhs, rhs):
    return lax.conv_general_dilated(lhs, rhs, (1, 1), "SAME")


def conv_ref(lhs, rhs):
    """NCHW / OIHW 'SAME' convolution (odd windows, stride 1) in float64."""
    n, c, h, w = lhs.shape
    o, _, kh, kw = rhs.shape
    x = np.pad(lhs.astype(np.float64), [(0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)])
    out = np.zeros((n, o, h, w))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", x[:, :, i:i + h, j:j + w], rhs[:, :, i, j])
    return out


# name: (function, operands, float64 reference); every one contracts past lavapipe's limit
CASES = {
    "dot_few_outputs": (jnp.dot, (f32(4, 100000), f32(100000, 3)), None),
    "dot_many_outputs": (jnp.dot, (f32(64, 40000), f32(40000, 8)), None),
    "dot_int32": (jnp.dot, (RS.randint(-3, 4, (8, 40000)).astype(np.int32),
                            RS.randint(-3, 4, (40000, 16)).astype(np.int32)), None),
    "conv_long": (conv, (f32(1, 2048, 6, 6), f32(3, 2048, 3, 3)), conv_ref),
    "sum": (jnp.sum, (f32(10**6),), None),
}
PRIM = {"dot_few_outputs": "dot_general", "dot_many_outputs": "dot_general",
        "dot_int32": "dot_general", "conv_long": "conv_general_dilated", "sum": "reduce_sum"}


def reference(name):
    f, args, ref = CASES[name]
    if ref is not None:
        return ref(*args)
    a64 = [np.asarray(a, np.float64) if a.dtype == np.float32 else a.astype(np.int64)
           for a in args]
    return np.dot(*a64) if f is jnp.dot else np.sum(*a64)


def lowered_labels(f, args, target):
    """The kernel labels of ``f``'s plan lowered for ``target`` (nothing runs)."""
    closed = wjax.make_jaxpr(f)(*args)
    return [d.label for d in execute.Executable(closed.jaxpr, target).plan.steps]


@pytest.mark.parametrize("name", list(CASES))
def test_traced_program_binds_one_equation(name):
    f, args, _ = CASES[name]
    names = [e.prim.name for e in wjax.make_jaxpr(f)(*args).jaxpr.eqns]
    assert names == [PRIM[name]], names
    rjax = pytest.importorskip("jax")
    jf = {jnp.dot: rjax.numpy.dot, jnp.sum: rjax.numpy.sum,
          conv: lambda a, b: rjax.lax.conv_general_dilated(a, b, (1, 1), "SAME")}[f]
    assert [e.primitive.name for e in rjax.make_jaxpr(jf)(*args).jaxpr.eqns] == names


@pytest.mark.parametrize("name", list(CASES))
def test_values_jit_and_eager_match_numpy_and_jax(name):
    f, args, _ = CASES[name]
    want = reference(name)
    got = wjax.jit(f)(*args)
    eager = f(*[jnp.asarray(a) for a in args])
    tol = dict(rtol=1e-5, atol=2e-3)
    if np.asarray(got).dtype.kind == "i":
        np.testing.assert_array_equal(np.asarray(got), want)
    else:
        close(got, want, **tol)
    # eagerly the equation is lowered as under jit: the same plan, the same bits
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(got))
    rjax = pytest.importorskip("jax")
    jf = {jnp.dot: rjax.numpy.dot, jnp.sum: rjax.numpy.sum,
          conv: lambda a, b: rjax.lax.conv_general_dilated(a, b, (1, 1), "SAME")}[f]
    close(got, np.asarray(rjax.jit(jf)(*args)), **tol)


def test_eager_lax_dot_general_of_a_long_contraction():
    a, b = f32(64, 40000), f32(40000, 8)
    got = lax.dot_general(jnp.asarray(a), jnp.asarray(b), DN)
    close(got, a.astype(np.float64) @ b, rtol=1e-5, atol=2e-3)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(wjax.jit(jnp.dot)(a, b)))


def test_grad_and_vmap_of_a_long_contraction_against_jax():
    rjax = pytest.importorskip("jax")
    x, w, xs = f32(4, 100000), f32(100000, 3), f32(3, 2, 40000)

    def loss(m, x, w):
        return m.numpy.sum(m.numpy.tanh(m.numpy.dot(x, w)))
    got = wjax.jit(wjax.grad(lambda x, w: loss(wjax, x, w), argnums=(0, 1)))(x, w)
    want = rjax.grad(lambda x, w: loss(rjax, x, w), argnums=(0, 1))(x, w)
    close(got, [np.asarray(v) for v in want], rtol=1e-4, atol=1e-4)
    # the transposes contract over the 4 rows and 3 columns: no long contraction is traced
    jaxpr = wjax.make_jaxpr(wjax.grad(lambda x, w: loss(wjax, x, w), argnums=(0, 1)))(x, w)
    assert [e.prim.name for e in jaxpr.jaxpr.eqns].count("dot_general") == 3
    got = wjax.jit(wjax.vmap(lambda a: jnp.dot(a, w[:40000])))(xs)
    close(got, xs.astype(np.float64) @ w[:40000], rtol=1e-5, atol=2e-3)


def test_conv_weight_gradient_splits_inside_its_kernel():
    """The direct kernel (float32, output features a multiple of 4) splits a long
    contraction itself: the weight gradient contracts over batch x positions (32768)."""
    rjax = pytest.importorskip("jax")
    x, w = f32(32, 4, 32, 32), f32(8, 4, 3, 3)

    def loss(m, w):
        return (m.lax.conv_general_dilated(x, w, (1, 1), "SAME") ** 2).sum()
    got = wjax.jit(wjax.grad(lambda w: loss(wjax, w)))(w)
    close(got, np.asarray(rjax.grad(lambda w: loss(rjax, w))(w)), rtol=1e-4, atol=1e-3)


def test_the_split_is_the_targets():
    """lavapipe's limit splits the contraction (chunked dot_general + sum, sliced convs +
    adds); a target without a limit keeps one kernel.  The few-outputs product is a fused
    multiply and reduction on both."""
    rt = runtime.get()
    with rt.options(**profiles.CPU_STRATEGIES):     # one kernel a product (no split-K)
        limited = rt.target().replace(loop_limit=65535)
        unlimited = rt.target().replace(loop_limit=None)
    f, args, _ = CASES["dot_many_outputs"]
    assert "reduce_sum" in lowered_labels(f, args, limited)
    assert lowered_labels(f, args, unlimited) == ["dot_general"]
    f, args, _ = CASES["dot_int32"]
    assert "reduce_sum" in lowered_labels(f, args, limited)
    assert lowered_labels(f, args, unlimited) == ["dot_general"]
    f, args, _ = CASES["conv_long"]
    assert [lb.startswith("conv_general_dilated") for lb in lowered_labels(f, args, limited)
            ].count(True) == 2
    assert lowered_labels(f, args, unlimited) == ["conv_general_dilated"]
    f, args, _ = CASES["dot_few_outputs"]
    for t in (limited, unlimited):
        labels = lowered_labels(f, args, t)
        assert "dot_general" not in " ".join(labels) and labels[0] == "reduce_sum(mul)", labels
    # the kernels' own chunking follows the target too
    assert L.k_chunk(limited) == 16384 and L.k_chunk(unlimited) is None
    assert L._mm_splits(100000, 1, L.k_chunk(limited)) == 7
    assert L._mm_splits(100000, 1, None) == 1
    assert C._conv_splits(100000, 2, L.k_chunk(limited)) == 7
    assert C._conv_splits(100000, 2, None) == 2
