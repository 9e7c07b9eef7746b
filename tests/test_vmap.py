"""vmap: the jaxpr rewrite, every primitive's batching rule, the API and its errors.

The op table is checked against a Python loop of eager calls stacked along ``out_axes``,
with in_axes drawn by hypothesis; every batched jaxpr is typechecked.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from checks import examples

import wjax
import wjax.numpy as jnp
import wjax.random  # noqa: F401
from wjax import lax
from wjax._src.core.ir import typecheck
from wjax._src.core.primitive import REGISTRY
from wjax._src.transforms.vmap import vmap_jaxpr

B = 3


# --------------------------------------------------------------------------- registry

def test_every_primitive_has_a_batching_rule():
    missing = sorted(name for name, p in REGISTRY.items() if p.batch is None)
    assert not missing, f"primitives without a batching rule: {missing}"


# --------------------------------------------------------------------------- op table

def _f(shape):
    return ("f", shape)


def _pos(shape):
    return ("pos", shape)


def _i(shape, lo=-4, hi=4):
    return ("i", shape, lo, hi)


def _b(shape):
    return ("b", shape)


def _gen(rng, spec):
    kind, shape = spec[0], spec[1]
    if kind == "f":
        return rng.normal(size=shape).astype(np.float32)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, size=shape).astype(np.float32)
    if kind == "i":
        return rng.integers(spec[2], spec[3], size=shape).astype(np.int32)
    if kind in ("key", "u"):
        return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)
    return rng.random(size=shape) > 0.5


def _dot_batch_dims(a, b):
    return lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,))))


def _dus(x, u, i):
    return lax.dynamic_update_slice(x, u, (i, np.int32(1)))


def _scatter_set(x, i, v):
    return x.at[i].set(v)


OPS = {
    # elementwise
    "sin": (jnp.sin, [_f((2, 3))]),
    "tanh_exp": (lambda x: jnp.tanh(x) * jnp.exp(x), [_f((4,))]),
    "abs_floor_sign": (lambda x: jnp.abs(x) + jnp.floor(x) - jnp.sign(x), [_f((2, 2))]),
    "add": (jnp.add, [_f((2, 3)), _f((2, 3))]),
    "mul_scalar": (lambda x, s: x * s, [_f((2, 3)), _f(())]),
    "div_pow": (lambda x, y: x / y + y**x, [_pos((3,)), _pos((3,))]),
    "max_min": (lambda x, y: jnp.maximum(x, y) - jnp.minimum(x, 0.5), [_f((2, 2)), _f((2, 2))]),
    "atan2_rem": (lambda x, y: jnp.arctan2(x, y) + lax.rem(x, y), [_f((3,)), _pos((3,))]),
    "compare": (lambda x, y: (x > y) & (x != 0), [_f((2, 3)), _f(())]),
    "where": (lambda c, x, y: jnp.where(c, x, y), [_b((2, 3)), _f((2, 3)), _f(())]),
    "select_n3": (
        lambda i, x, y, z: lax.select_n(i, x, y, z),
        [_i((3,), 0, 3), _f((3,)), _f((3,)), _f((3,))],
    ),
    "int_ops": (
        lambda a, b: (a << 1) ^ (a & b) | lax.shift_right_arithmetic(a, np.int32(1)),
        [_i((4,)), _i((4,))],
    ),
    "clamp": (lambda lo, x: lax.clamp(lo, x, 1.0), [_f(()), _f((2, 3))]),
    "select_scalar_pred": (lambda c, x: lax.select(c, x, -x), [_b(()), _f((2, 3))]),
    "integer_pow": (lambda x: x**3 + lax.integer_pow(x, -2), [_pos((3,))]),
    "convert": (lambda x: x.astype(jnp.int32) + 1, [_f((2, 3))]),
    "is_finite_not": (lambda x: ~jnp.isfinite(jnp.log(x)), [_f((3,))]),
    # reductions
    "sum": (lambda x: jnp.sum(x, axis=1), [_f((2, 3, 2))]),
    "max_all": (jnp.max, [_f((2, 3))]),
    "prod_min": (lambda x: jnp.prod(x, axis=0) + jnp.min(x, axis=0), [_f((3, 2))]),
    "argmax": (lambda x: jnp.argmax(x, axis=1), [_f((2, 4))]),
    "argmin": (lambda x: jnp.argmin(x), [_f((5,))]),
    "any_all": (lambda b: jnp.any(b, axis=0) & jnp.all(b, axis=0), [_b((3, 2))]),
    "mean_var": (lambda x: jnp.mean(x, axis=0) + jnp.var(x, axis=0), [_f((4, 3))]),
    # shapes
    "reshape": (lambda x: x.reshape(3, 2), [_f((2, 3))]),
    "transpose": (lambda x: jnp.transpose(x, (2, 0, 1)), [_f((2, 3, 2))]),
    "broadcast": (lambda x: jnp.broadcast_to(x, (2, 3)), [_f((3,))]),
    "expand_squeeze": (lambda x: jnp.expand_dims(x, (0, 2)).squeeze(0), [_f((2, 3))]),
    "slice_rev": (lambda x: x[1:, ::-2], [_f((3, 4))]),
    "pad": (lambda x, v: lax.pad(x, v, [(1, 2, 1), (-1, 0, 0)]), [_f((2, 3)), _f(())]),
    "concatenate": (lambda x, y: jnp.concatenate([x, y, x], axis=1), [_f((2, 1)), _f((2, 2))]),
    "iota": (lambda x: x + jnp.arange(3.0), [_f((3,))]),
    # indexing
    "dynamic_slice": (
        lambda x, i: lax.dynamic_slice(x, (i, np.int32(0)), (2, 2)),
        [_f((4, 3)), _i((), -1, 4)],
    ),
    "dynamic_update_slice": (_dus, [_f((4, 3)), _f((2, 2)), _i((), -1, 4)]),
    "gather": (lambda x, i: x[i], [_f((4, 3)), _i((2,), -4, 4)]),
    "gather_2d": (lambda x, i, j: x[i, 1:] * x[j, 0], [_f((4, 3)), _i((2,), 0, 4), _i((), 0, 4)]),
    "scatter_add": (lambda x, i, v: x.at[i].add(v), [_f((4, 3)), _i((2,), 0, 4), _f((2, 3))]),
    "scatter_set": (_scatter_set, [_f((5,)), _i((), 0, 5), _f(())]),
    "scatter_max_mul": (
        lambda x, i: x.at[i].max(1.0).at[i].multiply(2.0),
        [_f((4,)), _i((2,), 0, 4)],
    ),
    # linear algebra
    "matvec": (lambda a, x: a @ x, [_f((2, 3)), _f((3,))]),
    "matmul": (lambda a, b: a @ b, [_f((2, 3)), _f((3, 4))]),
    "dot_batch": (_dot_batch_dims, [_f((2, 3, 4)), _f((2, 4, 2))]),
    "vdot": (jnp.dot, [_f((3,)), _f((3,))]),
    # calls
    "jit": (wjax.jit(lambda x, y: jnp.sin(x) * y), [_f((2, 3)), _f((3,))]),
    # cumulative, sort, conv, special, bitcast, random (other families' primitives)
    "cumsum_cummax": (
        lambda x: lax.cumsum(x, axis=1) + lax.cummax(x, axis=0, reverse=True),
        [_f((2, 3))],
    ),
    "cumprod_cumlogsumexp": (
        lambda x: lax.cumprod(x, 0) - lax.cumlogsumexp(x, 0) + lax.cummin(x, 0),
        [_f((4,))],
    ),
    "sort": (lambda x: lax.sort(x, dimension=0), [_f((4, 2))]),
    "sort_key_val": (lambda k, v: lax.sort_key_val(k, v)[1], [_f((5,)), _i((5,))]),
    "top_k": (lambda x: lax.top_k(x, 2)[0] + lax.top_k(x, 2)[1].astype(jnp.float32), [_f((2, 4))]),
    "conv": (
        lambda l, r: lax.conv_general_dilated(l, r, (1,), [(1, 0)]),
        [_f((1, 2, 5)), _f((3, 2, 2))],
    ),
    "conv_groups": (
        lambda l, r: lax.conv_general_dilated(l, r, (2,), "SAME", feature_group_count=2),
        [_f((2, 4, 5)), _f((4, 2, 3))],
    ),
    "conv_batch_groups": (
        lambda l, r: lax.conv_general_dilated(l, r, (1,), "VALID", batch_group_count=2),
        [_f((2, 2, 4)), _f((2, 2, 2))],
    ),
    "conv_nhwc": (
        lambda l, r: lax.conv_general_dilated(
            l, r, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        ),
        [_f((1, 3, 3, 2)), _f((2, 2, 2, 3))],
    ),
    "erf_inv_reduce_precision": (
        lambda x: lax.erf_inv(x * 0.5) + lax.reduce_precision(x, 5, 10),
        [_f((3,))],
    ),
    "bitcast": (lambda x: lax.bitcast_convert_type(x, jnp.int32), [_f((2, 2))]),
    "random": (
        lambda k: wjax.random.normal(wjax.random.split(wjax.random.fold_in(k, 3))[1], (2,)),
        [("key", (2,))],
    ),
    "cholesky_trsolve": (lambda a, b: _chol_solve(a, b), [_f((3, 3)), _f((3, 2))]),
    "lu": (lambda a: _lu(a), [_f((3, 3))]),
    "random_fold_in_data": (
        lambda k, d: wjax.random.bits(wjax.random.fold_in(k, d), (3,)),
        [("key", (2,)), ("u", ())],
    ),
}


def _chol_solve(a, b):
    from wjax._src.prims.decomp import cholesky_p, triangular_solve_p
    spd = a @ a.T + 3.0 * jnp.eye(3)
    c = cholesky_p.bind(spd)
    return triangular_solve_p.bind(c, b, left_side=True, lower=True, transpose_a=False,
                                   conjugate_a=False, unit_diagonal=False)


def _lu(a):
    from wjax._src.prims.decomp import lu_p
    lu, piv, perm = lu_p.bind(a + 3.0 * jnp.eye(3))
    return lu * 2.0 + piv[0] + perm[2]


def _call_loop(f, args, axes, out_axes):
    outs = []
    for i in range(B):
        ex = [jnp.asarray(a if d is None else np.take(a, i, axis=d)) for a, d in zip(args, axes)]
        outs.append(np.asarray(f(*ex)))
    return np.stack(outs, axis=out_axes)


def _check(name, data):
    f, specs = OPS[name]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    axes = []
    for s in specs:
        nd = len(s[1])
        axes.append(data.draw(st.one_of(st.none(), st.integers(-nd - 1, nd)), label="axis"))
    if all(a is None for a in axes):
        axes[0] = 0
    args = []
    for s, a in zip(specs, axes):
        if a is None:
            args.append(_gen(rng, s))
        else:
            args.append(np.stack([_gen(rng, s) for _ in range(B)], axis=a))
    out_axis = data.draw(st.sampled_from([0, -1]), label="out_axes")
    vf = wjax.vmap(f, in_axes=tuple(axes), out_axes=out_axis)
    got = np.asarray(vf(*args))
    want = _call_loop(f, args, axes, out_axis)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        got.shape,
        want.shape,
        got.dtype,
        want.dtype,
    )
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    else:
        np.testing.assert_array_equal(got, want)
    # the batched program typechecks, both through the API and as a direct rewrite
    typecheck(wjax.make_jaxpr(vf)(*args).jaxpr)
    unb = [a if d is None else np.take(a, 0, axis=d) for a, d in zip(args, axes)]
    closed = wjax.make_jaxpr(f)(*unb)
    batched, out_dims = vmap_jaxpr(closed.jaxpr, axes, B)
    typecheck(batched)
    for v, d, w in zip(batched.outvars, out_dims, closed.jaxpr.outvars):
        assert d is None or v.aval.shape[d] == B
        assert len(v.aval.shape) == len(w.aval.shape) + (d is not None)


@pytest.mark.parametrize("name", sorted(OPS))
@examples(6)
@given(data=st.data())
def test_op_table_vs_loop(name, data):
    _check(name, data)


# --------------------------------------------------------------------------- seeds and API


def _tutorial_convolve(x, w):
    out = []
    for i in range(1, len(x) - 1):
        out.append(jnp.dot(x[i - 1:i + 2], w))
    return jnp.array(out) if hasattr(jnp, "array") else jnp.stack(out)


def test_convolve_column_wise_seed():
    x_batch = jnp.arange(15.0).reshape(5, 3)
    w = jnp.array([2.0, 3.0, 4.0])
    convolve_column_wise = wjax.vmap(_tutorial_convolve, in_axes=(1, None), out_axes=1)
    got = np.asarray(convolve_column_wise(x_batch, w))
    xb = np.arange(15.0).reshape(5, 3)
    want = np.stack([[xb[i - 1:i + 2, c] @ np.array([2.0, 3.0, 4.0]) for c in range(3)]
                     for i in range(1, 4)])
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got, want)
    jax = pytest.importorskip("jax")
    ref = jax.vmap(lambda x, w: jax.numpy.convolve(x, w[::-1], mode="valid"),
                   in_axes=(1, None), out_axes=1)(np.arange(15.0, dtype=np.float32).reshape(5, 3),
                                                  np.array([2.0, 3.0, 4.0], np.float32))
    np.testing.assert_allclose(got, np.asarray(ref), rtol=1e-6)


def test_jnp_convolve_column_wise_seed():
    x_batch = jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    kernel = jnp.array([1.0, -2.0])
    convolve_column_wise = wjax.vmap(jnp.convolve, in_axes=(1, None), out_axes=1)
    got = np.asarray(convolve_column_wise(x_batch, kernel))
    xb = np.asarray(x_batch)
    want = np.stack([np.convolve(xb[:, c], [1.0, -2.0]) for c in range(3)], axis=1)
    assert got.shape == (3, 3)
    np.testing.assert_allclose(got, want)       # [[1, 2, 3], [2, 1, 0], [-8, -10, -12]]
    jax = pytest.importorskip("jax")
    ref = jax.vmap(jax.numpy.convolve, in_axes=(1, None), out_axes=1)(xb, np.asarray(kernel))
    np.testing.assert_allclose(got, np.asarray(ref))
    full = wjax.vmap(jnp.convolve, in_axes=(1, None), out_axes=1)(
        jnp.arange(15.0).reshape(5, 3), jnp.array([2.0, 3.0, 4.0])
    )
    ref = jax.vmap(jax.numpy.convolve, in_axes=(1, None), out_axes=1)(
        np.arange(15.0, dtype=np.float32).reshape(5, 3), np.array([2.0, 3.0, 4.0], np.float32)
    )
    np.testing.assert_allclose(full, np.asarray(ref))


def test_tutorial_batched_convolve():
    x = jnp.arange(5.0)
    w = jnp.array([2.0, 3.0, 4.0])
    xs, ws = jnp.stack([x, x]), jnp.stack([w, w])
    np.testing.assert_allclose(wjax.vmap(_tutorial_convolve)(xs, ws), [[11, 20, 29]] * 2)
    np.testing.assert_allclose(wjax.vmap(_tutorial_convolve, in_axes=1, out_axes=1)(xs.T, ws.T),
                               [[11, 11], [20, 20], [29, 29]])
    np.testing.assert_allclose(
        wjax.vmap(_tutorial_convolve, in_axes=[0, None])(xs, w), [[11, 20, 29]] * 2
    )


def test_pytree_in_axes_and_out_axes_vs_jax():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(4, 3)).astype(np.float32)
    c = rng.normal(size=(4,)).astype(np.float32)

    def f(jnp_, d, s, scale=1.0):
        return {"u": d["a"] * d["b"][0] + s, "v": (jnp_.sum(d["a"]) * scale, s)}

    in_axes = ({"a": 0, "b": [1]}, None)
    out_axes = {"u": 1, "v": (0, None)}
    got = wjax.vmap(lambda d, s: f(jnp, d, s), in_axes=in_axes, out_axes=out_axes)(
        {"a": a, "b": [b]}, c
    )
    want = jax.vmap(lambda d, s: f(jax.numpy, d, s), in_axes=in_axes, out_axes=out_axes)(
        {"a": a, "b": [b]}, c
    )
    assert set(got) == {"u", "v"}
    np.testing.assert_allclose(got["u"], want["u"], rtol=1e-6)
    np.testing.assert_allclose(got["v"][0], want["v"][0], rtol=1e-5)
    np.testing.assert_allclose(got["v"][1], want["v"][1])
    # keyword arguments are mapped along axis 0
    got = wjax.vmap(
        lambda d, s, scale: f(jnp, d, s, scale)["v"][0], in_axes=({"a": 0, "b": [1]}, None)
    )({"a": a, "b": [b]}, c, scale=np.arange(3.0, dtype=np.float32))
    np.testing.assert_allclose(got, a.sum(1) * np.arange(3.0), rtol=1e-5)


def test_random_keys_vs_jax():
    import wjax.random as wrandom
    keys = wrandom.split(wrandom.PRNGKey(0), 3)
    got = wjax.vmap(lambda k: wrandom.uniform(k, (2,)))(keys)
    typed = wjax.vmap(lambda k: wrandom.normal(k, (2,)))(wrandom.split(wrandom.key(1), 3))
    assert got.shape == (3, 2) and typed.shape == (3, 2)
    assert len({tuple(r) for r in np.asarray(got).tolist()}) == 3      # one stream per key
    jax = pytest.importorskip("jax")
    want = jax.vmap(lambda k: jax.random.uniform(k, (2,)))(
        jax.random.split(jax.random.PRNGKey(0), 3)
    )
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6)
    want = jax.vmap(lambda k: jax.random.normal(k, (2,)))(jax.random.split(jax.random.key(1), 3))
    np.testing.assert_allclose(typed, np.asarray(want), rtol=1e-5, atol=1e-6)


def test_negative_axes_and_axis_size():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_allclose(wjax.vmap(lambda r: r * 2, in_axes=-1, out_axes=-1)(x), x * 2)
    np.testing.assert_allclose(wjax.vmap(jnp.sum, in_axes=-2)(x), x.sum(axis=(0, 2)))
    out = wjax.vmap(lambda s: s + x[0, 0], in_axes=None, axis_size=5)(1.0)
    assert out.shape == (5, 4)
    np.testing.assert_allclose(out, np.broadcast_to(x[0, 0] + 1, (5, 4)))
    const = wjax.vmap(lambda r: 3.0)(x)
    assert const.shape == (2,) and const.weak_type
    ones = wjax.vmap(lambda r: jnp.ones(2), out_axes=1)(x)
    np.testing.assert_allclose(ones, np.ones((2, 2)))


def test_out_axes_none_for_unbatched_output():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    y, z = wjax.vmap(lambda r, s: (r + s, s * 2), in_axes=(0, None), out_axes=(0, None))(x, x[0])
    np.testing.assert_allclose(y, x + x[0])
    np.testing.assert_allclose(z, x[0] * 2)


# --------------------------------------------------------------------------- composition


def test_nested_vmap_is_an_outer_product():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(5, 4)).astype(np.float32)
    f = lambda u, v: jnp.dot(u, v)
    got = wjax.vmap(wjax.vmap(f, in_axes=(None, 0)), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(got, a @ b.T, rtol=1e-5, atol=1e-5)
    # closure over the outer batched value
    got = wjax.vmap(lambda u: wjax.vmap(lambda v: jnp.sum(u * v))(b))(a)
    np.testing.assert_allclose(got, a @ b.T, rtol=1e-5, atol=1e-5)
    jaxpr = wjax.make_jaxpr(wjax.vmap(wjax.vmap(f, in_axes=(None, 0)), in_axes=(0, None)))(a, b)
    typecheck(jaxpr.jaxpr)
    assert [e.prim.name for e in jaxpr.eqns].count("dot_general") == 1


def test_jit_of_vmap_and_vmap_of_jit():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2)).astype(np.float32)
    f = lambda r, m: jnp.tanh(r @ m)
    want = np.tanh(x @ w)
    np.testing.assert_allclose(
        wjax.jit(wjax.vmap(f, in_axes=(0, None)))(x, w), want, rtol=1e-5, atol=1e-6
    )
    jf = wjax.jit(f)
    vf = wjax.vmap(jf, in_axes=(0, None))
    np.testing.assert_allclose(vf(x, w), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vf(x * 2, w), np.tanh(2 * x @ w), rtol=1e-5, atol=1e-6)
    jaxpr = wjax.make_jaxpr(vf)(x, w)
    assert [e.prim.name for e in jaxpr.eqns] == ["pjit"]
    typecheck(jaxpr.jaxpr)
    # a vmapped function closing over a jit tracer
    g = wjax.jit(lambda m, xs: wjax.vmap(lambda r: jnp.sum(r * m[0]))(xs))
    np.testing.assert_allclose(g(w.T, x), x @ w[:, 0], rtol=1e-5, atol=1e-6)


def test_eager_vmap_is_one_plan():
    from wjax._src.backend import runtime
    rt = runtime.get()
    xs = np.random.default_rng(4).normal(size=(128, 16)).astype(np.float32)
    w = np.random.default_rng(5).normal(size=(16, 8)).astype(np.float32)
    f = lambda x, m: jnp.sum(jax_relu(x @ m) ** 2)
    vf = wjax.vmap(f, in_axes=(0, None))
    np.asarray(vf(xs, w))                     # compile
    d0 = rt.stats["dispatches"]
    got = np.asarray(vf(xs, w))
    n_vmap = rt.stats["dispatches"] - d0
    d0 = rt.stats["dispatches"]
    one = np.asarray(f(jnp.asarray(xs[0]), w))
    n_one = rt.stats["dispatches"] - d0
    assert n_vmap <= n_one, (n_vmap, n_one)  # 128 examples cost no more kernels than one eager call
    np.testing.assert_allclose(got[0], one, rtol=1e-4)
    np.testing.assert_allclose(got, (np.maximum(xs @ w, 0) ** 2).sum(1), rtol=1e-4)


def jax_relu(x):
    return jnp.maximum(x, 0.0)


def test_batched_jaxpr_prints_and_typechecks():
    closed = wjax.make_jaxpr(lambda x, y: jnp.sum(x * y, axis=0))(np.ones((2, 3), np.float32),
                                                                    np.ones((2, 3), np.float32))
    batched, out_dims = vmap_jaxpr(closed.jaxpr, [1, None], 5)
    typecheck(batched)
    assert [v.aval.shape for v in batched.invars] == [(2, 5, 3), (2, 3)]
    assert out_dims == [0] and batched.outvars[0].aval.shape == (5, 3)
    assert "reduce_sum" in str(batched)


def test_grad_compositions():
    if not hasattr(wjax, "grad"):
        pytest.fail("wjax.grad is not available yet")
    rng = np.random.default_rng(6)
    xs = rng.normal(size=(4, 3)).astype(np.float32)
    w = rng.normal(size=(3,)).astype(np.float32)
    loss = lambda w, x: jnp.sum(jnp.tanh(x * w) ** 2)
    per_example = wjax.vmap(wjax.grad(loss), in_axes=(None, 0))(w, xs)
    want = np.stack([2 * np.tanh(x * w) * (1 - np.tanh(x * w) ** 2) * x for x in xs])
    np.testing.assert_allclose(per_example, want, rtol=1e-4, atol=1e-5)
    total = wjax.grad(lambda w: jnp.sum(wjax.vmap(loss, in_axes=(None, 0))(w, xs)))(w)
    np.testing.assert_allclose(total, want.sum(0), rtol=1e-4, atol=1e-5)


def test_custom_jvp_vjp_and_checkpoint_under_vmap():
    """Custom rules survive vmap: the batched call still uses them (deliberately 'wrong' rules
    tell them apart from differentiating the primal)."""
    xs = np.linspace(-0.5, 1.0, 4).astype(np.float32)
    w = np.float32(0.7)

    f = wjax.custom_jvp(lambda x: jnp.sin(x))
    f.defjvp(lambda p, t: (jnp.sin(p[0]), 2.0 * jnp.cos(p[0]) * t[0]))

    g = wjax.custom_vjp(lambda x, w: jnp.sin(x) * w)
    g.defvjp(lambda x, w: (jnp.sin(x) * w, (jnp.cos(x), w, jnp.sin(x))),
             lambda res, ct: (3.0 * res[0] * res[1] * ct, res[2] * ct))

    np.testing.assert_allclose(wjax.vmap(f)(xs), np.sin(xs), rtol=1e-6)
    np.testing.assert_allclose(wjax.vmap(wjax.grad(f))(xs), 2 * np.cos(xs), rtol=1e-5)
    np.testing.assert_allclose(
        wjax.grad(lambda v: jnp.sum(wjax.vmap(f)(v)))(xs), 2 * np.cos(xs), rtol=1e-5
    )
    jaxpr = wjax.make_jaxpr(wjax.vmap(f))(xs)
    assert [e.prim.name for e in jaxpr.eqns] == ["custom_jvp_call"]
    typecheck(jaxpr.jaxpr)

    np.testing.assert_allclose(wjax.vmap(g, in_axes=(0, None))(xs, w), np.sin(xs) * w, rtol=1e-6)
    np.testing.assert_allclose(
        wjax.vmap(wjax.grad(g), in_axes=(0, None))(xs, w), 3 * np.cos(xs) * w, rtol=1e-5
    )
    gx, gw = wjax.grad(lambda v, w: jnp.sum(wjax.vmap(g, in_axes=(0, None))(v, w)), argnums=(0, 1))(
        xs, w
    )
    np.testing.assert_allclose(gx, 3 * np.cos(xs) * w, rtol=1e-5)
    np.testing.assert_allclose(gw, np.sin(xs).sum(), rtol=1e-5)   # summed over the examples
    typecheck(wjax.make_jaxpr(wjax.vmap(g, in_axes=(0, None)))(xs, w).jaxpr)

    h = wjax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    np.testing.assert_allclose(wjax.vmap(h)(xs), np.sin(np.sin(xs)), rtol=1e-6)
    np.testing.assert_allclose(wjax.grad(lambda v: jnp.sum(wjax.vmap(h)(v)))(xs),
                               np.cos(np.sin(xs)) * np.cos(xs), rtol=1e-5)


# --------------------------------------------------------------------------- errors


def _err(exc, fn, match):
    with pytest.raises(exc) as e:
        fn()
    assert match in str(e.value), str(e.value)
    return str(e.value)


def test_errors_like_jax():
    f = lambda x, y: x + y
    msg = _err(ValueError, lambda: wjax.vmap(f)(jnp.ones(3), jnp.ones(4)),
               "vmap got inconsistent sizes for array axes to be mapped:")
    assert "axis 0 of argument x of type float32[3]" in msg
    assert "axis 0 of argument y of type float32[4]" in msg
    msg = _err(
        ValueError,
        lambda: wjax.vmap(lambda d: d["a"] + d["b"][0])({"a": jnp.ones(3), "b": jnp.ones((2, 3))}),
        "inconsistent sizes",
    )
    assert "argument d['b'] of type float32[2,3]" in msg
    _err(ValueError, lambda: wjax.vmap(f, in_axes=(0, 0, 0))(jnp.ones(3), jnp.ones(3)),
         "len(in_axes)=3, len(args)=2")
    _err(ValueError, lambda: wjax.vmap(f, in_axes=({"a": 0}, 0))(jnp.ones(3), jnp.ones(3)),
         "vmap in_axes specification must be a tree prefix of the corresponding value")
    _err(
        ValueError,
        lambda: wjax.vmap(f, in_axes=(2, 0))(jnp.ones((3, 3)), jnp.ones(3)),
        "vmap was requested to map its argument along axis 2, which implies that its rank should "
        "be at least 3, but is only 2",
    )
    _err(ValueError, lambda: wjax.vmap(f, in_axes=(-3, 0))(jnp.ones((3, 3)), jnp.ones(3)),
         "along axis -3")
    _err(ValueError, lambda: wjax.vmap(f, out_axes=None)(jnp.ones(3), jnp.ones(3)),
         "vmap has mapped output but out_axes is None")
    _err(ValueError, lambda: wjax.vmap(f, out_axes=3)(jnp.ones(3), jnp.ones(3)),
         "axis 3 is out of bounds for array of dimension 1")
    _err(ValueError, lambda: wjax.vmap(f, in_axes=None)(jnp.ones(3), jnp.ones(3)),
         "vmap must have at least one non-None value in in_axes")
    _err(
        TypeError,
        lambda: wjax.vmap(f, in_axes="a"),
        "vmap in_axes must be an int, None, or a tuple",
    )
    _err(TypeError, lambda: wjax.vmap(f, in_axes=(0, 1.0)), "container with those types as leaves")
    _err(ValueError, lambda: wjax.vmap(f, axis_size=5)(jnp.ones(3), jnp.ones(3)),
         "the `axis_size` argument was 5")
