"""The jax.lax names wjax lacked (issue 15): special functions (values, derivatives, vmap,
jit, bad dtypes), custom_linear_solve / custom_root, associative_scan, generic reduce,
constructors and shape helpers, patch convolutions, approx top-k, ragged_dot, the
optimization barrier, tokens, enums -- each against real JAX on the same program."""
from __future__ import annotations

import numpy as np
import pytest

import wjax
from surface_util import both, raises_like_jax, same

jax = pytest.importorskip("jax")
f32 = np.float32
R = np.random.RandomState(0)


# --------------------------------------------------------------------------- special functions

A = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 20.0], f32)
X = np.array([0.01, 0.3, 1.0, 3.0, 9.0, 40.0], f32)


def test_incomplete_gamma_family_values_grads_vmap_jit():
    for name in ("igamma", "igammac", "igamma_grad_a", "random_gamma_grad"):
        both(lambda m: getattr(m.lax, name)(A[:, None], X[None, :]), rtol=2e-5, atol=1e-7,
             what=name)
    both(lambda m: m.jit(m.vmap(m.grad(lambda a, x: m.lax.igamma(a, x), argnums=(0, 1))))(
        A, X), rtol=1e-4, atol=1e-6, what="grad igamma")
    both(lambda m: m.grad(lambda x: m.lax.igammac(2.5, x))(f32(3.0)), rtol=1e-5)
    # JAX's edge conventions: domain errors are NaN, x = 0 and x = inf the limits
    edges = np.array([np.nan, -1.0, 0.0, 0.5, np.inf], f32)
    for name in ("igamma", "igammac"):
        both(lambda m: getattr(m.lax, name)(edges[:, None], edges[None, :]), what=name)
    raises_like_jax(lambda m: m.lax.igamma(np.int32(1), np.int32(2)))


def test_betainc_zeta_polygamma_bessel_erfc():
    B = np.array([0.5, 2.0, 8.0], f32)
    U = np.array([0.0, 0.05, 0.3, 0.7, 1.0], f32)
    both(lambda m: m.lax.betainc(A[:3, None, None], B[None, :, None], U[None, None, :]),
         rtol=2e-5, atol=1e-6)
    both(lambda m: m.vmap(m.grad(lambda x: m.lax.betainc(2.0, 3.0, x)))(U[1:4]), rtol=1e-5)
    with pytest.raises(ValueError, match="Betainc gradient with respect to a and b"):
        wjax.grad(lambda a: wjax.lax.betainc(a, 2.0, 0.5))(1.0)
    S = np.array([1.5, 2.0, 3.5, 8.0], f32)
    Q = np.array([0.2, 1.0, 4.0, -2.5], f32)
    both(lambda m: m.lax.zeta(S[:, None], Q[None, :]), rtol=2e-5)
    both(lambda m: m.lax.zeta(np.array([2.0, 3.0, 0.5], f32), np.array([-2.0, 0.0, 1.0], f32)))
    N = np.array([0.0, 1.0, 2.0, 3.0, 1.5], f32)
    both(lambda m: m.lax.polygamma(N[:, None], np.array([0.3, 2.0, 10.0], f32)[None, :]),
         rtol=2e-5)
    both(lambda m: m.grad(lambda x: m.lax.polygamma(2.0, x))(f32(1.7)), rtol=1e-5)
    Z = np.array([-30.0, -2.0, -0.0, 0.0, 0.5, 3.0, 11.9, 12.1, 50.0, np.inf, np.nan], f32)
    for name in ("bessel_i0e", "bessel_i1e", "erfc"):
        both(lambda m: getattr(m.lax, name)(Z), rtol=2e-6, atol=1e-7, what=name)
        both(lambda m: m.vmap(m.grad(getattr(m.lax, name)))(Z[:9]), rtol=1e-5, atol=1e-7,
             what=f"grad {name}")
    both(lambda m: m.lax.lgamma(Z[4:9]), rtol=1e-6)
    both(lambda m: m.lax.digamma(Z[4:9]), rtol=1e-6)


def test_nextafter_and_mulhi_bit_exact():
    x = np.array([0.0, -0.0, 1.0, -1.0, 1.4e-45, -1.4e-45, np.inf, 3.4028235e38, np.nan], f32)
    y = np.array([-1.0, 1.0, 2.0, 0.0, -1.0, 1.0, 0.0, np.inf, 0.0], f32)
    got = np.asarray(wjax.lax.nextafter(x, y))
    want = np.asarray(jax.lax.nextafter(x, y))
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32):
        info = np.iinfo(dt)
        v = np.array([info.min, info.min + 1, 0, 1, 7, info.max - 3, info.max], dt)
        both(lambda m: m.lax.mulhi(v[:, None], v[None, :]), what=dt.__name__)


def test_random_gamma_is_differentiable_in_its_shape():
    a = np.array([0.3, 1.0, 2.5, 7.0], f32)
    for fn in ("gamma", "loggamma"):
        both(lambda m: m.grad(lambda a: getattr(m.random, fn)(m.random.key(1), a).sum())(a),
             rtol=1e-5, what=fn)


# --------------------------------------------------------------------------- solves

A3 = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], f32)
B3 = np.array([1.0, 2.0, 3.0], f32)


def _lin(m):
    def solve(a, b):
        return m.lax.custom_linear_solve(lambda x: a @ x, b,
                                         lambda mv, r: m.numpy.linalg.solve(a, r),
                                         lambda vm, r: m.numpy.linalg.solve(a.T, r))
    return solve


def _cg(m):
    def solve(matvec, b):
        def body(c):
            x, r, p, k = c
            ap = matvec(p)
            alpha = (r @ r) / (p @ ap)
            x, rn = x + alpha * p, r - alpha * ap
            return x, rn, rn + (rn @ rn) / (r @ r) * p, k + 1
        return m.lax.while_loop(lambda c: c[3] < 3, body, (m.numpy.zeros_like(b), b, b, 0))[0]
    return solve


def test_custom_linear_solve_values_and_every_derivative():
    both(lambda m: _lin(m)(A3, B3), rtol=1e-5)
    both(lambda m: m.grad(lambda a, b: (_lin(m)(a, b) ** 2).sum(), argnums=(0, 1))(A3, B3),
         rtol=1e-4, atol=1e-5, what="grad")
    both(lambda m: m.jvp(_lin(m), (A3, B3), (np.ones_like(A3), B3)), rtol=1e-4, atol=1e-5)
    two = np.stack([A3, A3 + np.eye(3, dtype=f32)])
    both(lambda m: m.jit(m.vmap(lambda a: _lin(m)(a, B3)))(two), rtol=1e-5, what="vmap")
    both(lambda m: m.hessian(lambda b: (_lin(m)(A3, b) ** 3).sum())(B3), rtol=1e-4, atol=1e-5)
    # a while_loop solver (not differentiable itself) differentiated implicitly; symmetric
    both(lambda m: m.grad(lambda b: (m.lax.custom_linear_solve(
        lambda x: A3 @ x, b, _cg(m), symmetric=True) ** 2).sum())(B3), rtol=1e-4, atol=1e-5)
    # pytree right-hand sides and has_aux
    both(lambda m: m.lax.custom_linear_solve(
        lambda x: {"u": 2 * x["u"], "v": 3 * x["v"]}, {"u": B3, "v": B3[:2]},
        lambda mv, r: ({"u": r["u"] / 2, "v": r["v"] / 3}, r["u"].sum()), has_aux=True))
    raises_like_jax(lambda m: m.grad(lambda b: m.lax.custom_linear_solve(
        lambda x: A3 @ x, b, lambda mv, r: m.numpy.linalg.solve(A3, r)).sum())(B3),
        match="transpose_solve required")
    raises_like_jax(lambda m: m.lax.custom_linear_solve(
        lambda x: x[:2], B3, lambda mv, r: r), match="shape")


def _sqrt(m):
    def f(a):
        def solve(g, x0):
            return m.lax.fori_loop(0, 20, lambda i, x: x - g(x) / (2 * x), x0)
        return m.lax.custom_root(lambda x: x ** 2 - a, 1.0 + 0 * a, solve,
                                 lambda g, y: y / g(1.0))
    return f


def test_custom_root_implicit_derivatives():
    both(lambda m: _sqrt(m)(f32(2.0)))
    both(lambda m: m.jit(m.vmap(m.grad(_sqrt(m))))(np.array([2.0, 5.0], f32)), rtol=1e-5)
    both(lambda m: m.jvp(_sqrt(m), (f32(4.0),), (f32(1.0),)))
    both(lambda m: m.grad(m.grad(_sqrt(m)))(f32(4.0)), rtol=1e-5)

    def cube(m):
        def f(a):
            def solve(g, x0):
                x = m.lax.fori_loop(0, 30, lambda i, x: x - g(x) / (3 * x ** 2), x0)
                return x, g(x)
            return m.lax.custom_root(lambda x: x ** 3 - a, 1.0 + 0 * a, solve,
                                     lambda g, y: y / g(1.0), has_aux=True)
        return f
    both(lambda m: cube(m)(f32(8.0)), atol=1e-5)
    both(lambda m: m.grad(lambda a: cube(m)(a)[0])(f32(8.0)), rtol=1e-5)


# --------------------------------------------------------------------------- compositions

ARR = np.arange(24.0, dtype=f32).reshape(2, 3, 4)


def test_associative_scan_and_generic_reduce():
    both(lambda m: m.lax.associative_scan(m.lax.add, ARR, axis=2))
    both(lambda m: m.lax.associative_scan(m.lax.add, ARR, reverse=True, axis=1))
    v = R.randn(7).astype(f32)
    both(lambda m: m.lax.associative_scan(m.lax.max, v))
    # non-commutative: composition of affine maps, a pytree of elements
    both(lambda m: m.lax.associative_scan(lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1]),
                                          (v, v[::-1] * 1)), rtol=1e-5)
    both(lambda m: m.grad(lambda x: m.lax.associative_scan(m.lax.mul, x).sum())(v[:5]),
         rtol=1e-5)
    both(lambda m: m.vmap(lambda x: m.lax.associative_scan(m.lax.add, x))(ARR[0]))
    both(lambda m: m.lax.reduce(ARR, 0.0, m.lax.add, (0, 2)))
    both(lambda m: m.lax.reduce(ARR, f32(1.0), m.lax.mul, (1,)))
    both(lambda m: m.lax.reduce((v, np.arange(7, dtype=np.int32)), (-np.inf, 0),
                                lambda a, b: (m.lax.max(a[0], b[0]), m.lax.max(a[1], b[1])),
                                (0,)))
    both(lambda m: m.lax.reduce_xor(np.array([[1, 2, 4, 3], [7, 7, 1, 0]], np.int32), (1,)))
    raises_like_jax(lambda m: m.lax.reduce((v, v), (0.0,), m.lax.add, (0,)))


def test_constructors_and_shape_helpers():
    both(lambda m: [m.lax.full((2,), 1.0), m.lax.full((2,), 1), m.lax.full((), f32(2)),
                    m.lax.full((2, 3), 2, np.int32), m.lax.full_like(np.ones(2, np.int32), 2.5),
                    m.lax.full_like(np.ones(2, f32), 1, shape=(3, 1)),
                    m.lax.empty((2,), np.float32)])
    assert wjax.lax.full((2,), 1.0).weak_type and not wjax.lax.full((2,), 1.0, f32).weak_type
    both(lambda m: [m.lax.collapse(ARR, 1), m.lax.collapse(ARR, 0, 2), m.lax.collapse(ARR, -2),
                    m.lax.broadcast_to_rank(np.ones(3, f32), 3),
                    m.lax.broadcast_like(np.ones(3, f32), np.ones((2, 3)))])
    assert wjax.lax.broadcast_shapes((2, 1), (1, 3)) == jax.lax.broadcast_shapes((2, 1), (1, 3))
    raises_like_jax(lambda m: m.lax.broadcast_shapes((2,), (3,)), match="Incompatible shapes")
    raises_like_jax(lambda m: m.lax.full((2,), np.ones(2)), match="scalar fill_value")
    both(lambda m: m.lax.index_take(ARR, (np.array([0, 1]), np.array([2, 0])), (0, 2)))
    z = np.zeros((3, 2), f32)
    both(lambda m: [m.lax.dynamic_update_index_in_dim(z, np.ones(2, f32), 1, 0),
                    m.lax.dynamic_update_index_in_dim(z, np.ones((1, 2), f32), -1, 0)])
    both(lambda m: m.lax.batch_matmul(np.ones((2, 3, 4), f32), ARR[:, :, :, None][..., 0]
                                      .reshape(2, 4, 3)))
    both(lambda m: [m.lax.split(np.arange(6), (2, 4)), m.lax.tile(np.arange(3), (2,)),
                    m.lax.stack([np.ones(2, f32), np.zeros(2, f32)], 1),
                    m.lax.unstack(ARR[0], 1)])
    raises_like_jax(lambda m: m.lax.split(np.arange(6), (2, 3)))
    assert wjax.lax.dtype(1.0) == jax.lax.dtype(1.0)
    assert wjax.lax.dtype(np.ones(2, np.int32)) == jax.lax.dtype(np.ones(2, np.int32))
    both(lambda m: m.lax.shape_as_value((2, 3)))


def test_patch_convolutions_and_approx_top_k():
    img = ARR[None]                         # N=1, C=2, 3x4
    both(lambda m: m.lax.conv_general_dilated_patches(img, (2, 2), (1, 1), "VALID"))
    both(lambda m: m.lax.conv_general_dilated_patches(
        ARR.transpose(1, 2, 0)[None], (2, 3), (1, 2), "SAME",
        dimension_numbers=("NHWC", "OIHW", "NHWC")))
    rhs = R.randn(5, 2 * 2 * 2, 2, 3).astype(f32)
    both(lambda m: m.lax.conv_general_dilated_local(img, rhs, (1, 1), "VALID", (2, 2)),
         rtol=1e-5, atol=1e-5)
    rhs2 = R.randn(2, 3, 3 * 2 * 2, 5).astype(f32)
    x2 = np.arange(36.0, dtype=f32).reshape(1, 3, 4, 3)
    both(lambda m: m.lax.conv_general_dilated_local(
        x2, rhs2, (1, 1), "VALID", (2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC")),
        rtol=1e-5, atol=1e-4)
    v = np.array([[3.0, 1.0, 2.0, 5.0], [0.0, -1.0, 4.0, 4.5]], f32)
    both(lambda m: [m.lax.approx_max_k(v, 2), m.lax.approx_min_k(v, 2),
                    m.lax.approx_max_k(v, 2, aggregate_to_topk=False),
                    m.lax.approx_max_k(v, 1, reduction_dimension=0)])


def test_ragged_dot_barrier_tokens_and_enums():
    lhs = R.randn(6, 3).astype(f32)
    rhs = R.randn(3, 3, 4).astype(f32)
    gs = np.array([2, 0, 3], np.int32)
    both(lambda m: m.lax.ragged_dot(lhs, rhs, gs), rtol=1e-5, atol=1e-5)
    both(lambda m: m.grad(lambda a, b: m.lax.ragged_dot(a, b, gs).sum(), argnums=(0, 1))(
        lhs, rhs), rtol=1e-5, atol=1e-5)
    both(lambda m: m.lax.optimization_barrier((np.ones(2, f32), f32(3.0))))
    both(lambda m: m.grad(lambda v: m.lax.optimization_barrier(v * v).sum())(B3))
    both(lambda m: m.jit(m.vmap(lambda v: m.lax.optimization_barrier((v, 2 * v))))(A3))
    jaxpr = wjax.make_jaxpr(lambda v: wjax.lax.optimization_barrier(v) + 1)(B3)
    assert "optimization_barrier" in str(jaxpr)
    tok = wjax.lax.create_token()
    assert isinstance(wjax.lax.after_all(tok, wjax.lax.create_token()), type(tok))
    with pytest.raises(TypeError):
        wjax.lax.after_all(1.0)
    assert wjax.lax.platform_dependent(2.0, webgpu=lambda x: x * 3, default=lambda x: x) == 6.0
    assert jax.lax.platform_dependent(2.0, cpu=lambda x: x * 3, default=lambda x: x) == 6.0
    assert wjax.lax.platform_dependent(2.0, cuda=lambda x: 0, default=lambda x: x + 1) == 3.0
    for s in ("clip", None, "promise_in_bounds", "fill"):
        assert wjax.lax.GatherScatterMode.from_any(s).name == \
            jax.lax.GatherScatterMode.from_any(s).name
    # the enum works as a mode of indexing updates
    both(lambda m: m.numpy.zeros(3).at[np.array([0, 5])].add(
        1.0, mode=m.lax.GatherScatterMode.FILL_OR_DROP))
    assert [e.name for e in wjax.lax.RandomAlgorithm] == [e.name for e in jax.lax.RandomAlgorithm]
    assert wjax.lax.linear_solve_p is wjax.lax.custom_linear_solve_p
    for name in ("igamma_p", "igammac_p", "igamma_grad_a_p", "betainc", "zeta_p",
                 "polygamma_p", "bessel_i0e_p", "bessel_i1e_p", "erfc_p", "nextafter_p",
                 "mulhi_p", "optimization_barrier_p", "regularized_incomplete_beta_p"):
        assert hasattr(wjax.lax, name), name


def test_scatter_sub_and_apply():
    dn = wjax.lax.ScatterDimensionNumbers((), (0,), (0,))
    jdn = jax.lax.ScatterDimensionNumbers((), (0,), (0,))
    idx = np.array([[1], [2], [1]], np.int32)
    got = wjax.lax.scatter_sub(np.ones(4, f32), idx, np.array([1.0, 2.0, 3.0], f32), dn)
    want = jax.lax.scatter_sub(np.ones(4, f32), idx, np.array([1.0, 2.0, 3.0], f32), jdn)
    same(got, want)
    # a position selected twice gets func twice, as XLA's scatter applies it per update
    for ix, shape, mode in ((idx, (3,), None), (np.array([[1], [9]], np.int32), (2,), "drop")):
        got = wjax.lax.scatter_apply(np.arange(4.0, dtype=f32), ix, lambda v: v * 10, dn,
                                     update_shape=shape, mode=mode)
        want = jax.lax.scatter_apply(np.arange(4.0, dtype=f32), ix, lambda v: v * 10, jdn,
                                     update_shape=shape, mode=mode)
        same(got, want)


def test_dynamic_slice_negative_starts_count_from_the_end():
    """As JAX: a negative start index adds the dimension's size, then the start clamps (also
    a traced start under jit, under vmap, and through grad)."""
    def run(j):
        lax, jnp = j.lax, j.numpy
        x, m = jnp.arange(8), jnp.arange(12).reshape(3, 4)
        out = []
        for s in (-3, -1, -10, -20, 7, np.int32(-2)):
            out += [lax.dynamic_slice(x, (s,), (3,)),
                    j.jit(lambda x, s: lax.dynamic_slice(x, (s,), (3,)))(x, s),
                    lax.dynamic_update_slice(x, jnp.array([100, 101]), (s,)),
                    j.jit(lambda x, s: lax.dynamic_update_slice(x, jnp.array([7, 9]), (s,)))(x, s),
                    lax.dynamic_slice_in_dim(m, s, 2, 1),
                    lax.dynamic_index_in_dim(m, s, 0, False),
                    j.jit(lambda m, s: lax.dynamic_index_in_dim(m, s, 0, False))(m, s),
                    lax.dynamic_update_slice_in_dim(m, jnp.ones((3, 1), m.dtype), s, 1),
                    lax.dynamic_update_index_in_dim(m, jnp.ones((4,), m.dtype), s, 0),
                    j.grad(lambda v, s: lax.dynamic_slice(v, (s,), (3,)).sum())(x * 1., s)]
        starts = jnp.array([-3, -1, 2, -20])
        out.append(j.vmap(lambda s: lax.dynamic_slice(x, (s,), (3,)))(starts))
        out.append(j.vmap(lambda s: lax.dynamic_update_slice(x, jnp.array([9]), (s,)))(starts))
        out.append(lax.dynamic_slice(m, jnp.array([-1, -2]), (1, 2)))
        return [np.asarray(o).tolist() for o in out]
    assert run(wjax) == run(jax)
    for j in (wjax, jax):
        with pytest.raises(ValueError, match="allow_negative_indices=False"):
            j.lax.dynamic_slice(j.numpy.arange(8), (-1,), (2,), allow_negative_indices=False)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "max", "atan2", "eq", "lt"])
def test_lax_binary_python_scalars_take_their_own_dtype(name):
    """As JAX: lax does not promote, a Python scalar is a weak value of its default dtype, so
    ``lax.add(jnp.float32(1), 2)`` is a same-dtypes TypeError while ``(f32, 2.0)`` works."""
    def run(j):
        jnp, f = j.numpy, getattr(j.lax, name)
        out = []
        for a, b in [(jnp.float32(1), 2), (2, jnp.ones(2)), (jnp.float32(1), 2.5), (3, 4),
                     (2.0, 3.0), (jnp.int32(3), 2), (jnp.int32(3), 2.0), (jnp.uint8(3), 2),
                     (jnp.ones(2, jnp.bfloat16), 2.0), (jnp.float32(1), 1j)]:
            try:
                r = f(a, b)
                out.append((str(r.dtype), bool(r.weak_type),
                            np.round(np.asarray(r, np.complex64), 5).tolist()))
            except TypeError as e:
                out.append(("TypeError", name != "add" or "same dtypes" in str(e)))
        return out
    assert run(wjax) == run(jax)
