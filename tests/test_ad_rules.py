"""Autodiff rules, op by op: every differentiable primitive through one table of records.

For each record: the vjp against central finite differences of the (float32) forward pass,
the identity <vjp(ct), t> = <ct, jvp(t)>, the rewritten jaxprs (jvp, partial eval, transpose)
typecheck, and against real JAX: jvp, vjp and (smooth ops) second derivatives.  A last test
walks the primitive registry for missing rules.
"""
from __future__ import annotations

import numpy as np
import pytest

import wjax
from wjax._src.core.ir import typecheck
from wjax._src.core.primitive import REGISTRY
from wjax._src.transforms.jvp import jvp_jaxpr
from wjax._src.transforms.partial_eval import partial_eval_jaxpr
from wjax._src.transforms.transpose import transpose_jaxpr


class Op:
    def __init__(self, name, fn, specs, smooth=True, jax_ok=True, fd=True, rtol=3e-2):
        self.name, self.fn, self.specs = name, fn, specs
        self.smooth, self.jax_ok, self.fd, self.rtol = smooth, jax_ok, fd, rtol

    def __repr__(self):
        return self.name


def gen(spec, rng):
    shape, dom = spec
    n = int(np.prod(shape, dtype=np.int64))
    if dom == "any":
        x = rng.normal(size=shape)
    elif dom == "pos":
        x = rng.uniform(0.5, 2.0, size=shape)
    elif dom == "unit":
        x = rng.uniform(-0.8, 0.8, size=shape)
    elif dom == "gt1":
        x = rng.uniform(1.2, 3.0, size=shape)
    elif dom == "sep":   # well separated values: no ties, no kinks near each other
        x = (rng.permutation(n) * 0.7 - 0.35 * n + 0.1).reshape(shape)
    elif dom == "wellcond":   # a well-conditioned square matrix (symmetric positive definite)
        q = rng.normal(size=shape) * 0.3
        x = q @ np.swapaxes(q, -1, -2) + 2 * np.eye(shape[-1])
    elif dom == "frac":  # away from integers (floor/round/sign)
        x = (rng.integers(-3, 3, size=shape) + rng.uniform(0.2, 0.4, size=shape))
    else:
        raise ValueError(dom)
    return np.asarray(x, np.float32)


def I(*v):  # noqa: E743  an int32 index constant in either library
    return np.asarray(v, np.int32)


def _solve_tri(m):
    f = getattr(m.numpy.linalg, "solve_triangular", None)
    return f if f is not None else m.scipy.linalg.solve_triangular


S3, S23, S = ((3,), "any"), ((2, 3), "any"), ((), "any")
P3, P23 = ((3,), "pos"), ((2, 3), "pos")
U3 = ((3,), "unit")

OPS = [
    # unary
    Op("neg", lambda m, x: m.lax.neg(x), [S3]),
    Op("exp", lambda m, x: m.numpy.exp(x), [S3]),
    Op("exp2", lambda m, x: m.numpy.exp2(x), [S3]),
    Op("log", lambda m, x: m.numpy.log(x), [P3]),
    Op("log1p", lambda m, x: m.numpy.log1p(x), [P3]),
    Op("expm1", lambda m, x: m.numpy.expm1(x), [S3]),
    Op("tanh", lambda m, x: m.numpy.tanh(x), [S23]),
    Op("logistic", lambda m, x: m.lax.logistic(x), [S3]),
    Op("sin", lambda m, x: m.numpy.sin(x), [S3]),
    Op("cos", lambda m, x: m.numpy.cos(x), [S3]),
    Op("tan", lambda m, x: m.numpy.tan(x), [U3]),
    Op("asin", lambda m, x: m.numpy.arcsin(x), [U3]),
    Op("acos", lambda m, x: m.numpy.arccos(x), [U3]),
    Op("atan", lambda m, x: m.numpy.arctan(x), [S3]),
    Op("sinh", lambda m, x: m.numpy.sinh(x), [S3]),
    Op("cosh", lambda m, x: m.numpy.cosh(x), [S3]),
    Op("asinh", lambda m, x: m.numpy.arcsinh(x), [S3]),
    Op("acosh", lambda m, x: m.numpy.arccosh(x), [((3,), "gt1")]),
    Op("atanh", lambda m, x: m.numpy.arctanh(x), [U3]),
    Op("sqrt", lambda m, x: m.numpy.sqrt(x), [P3]),
    Op("rsqrt", lambda m, x: m.lax.rsqrt(x), [P3]),
    Op("cbrt", lambda m, x: m.numpy.cbrt(x), [P3]),
    Op("erf", lambda m, x: m.lax.erf(x), [S3]),
    Op("erf_inv", lambda m, x: m.lax.erf_inv(x), [U3]),
    Op("integer_pow3", lambda m, x: m.lax.integer_pow(x, 3), [S3]),
    Op("integer_pow-2", lambda m, x: m.lax.integer_pow(x, -2), [P3]),
    Op("abs", lambda m, x: m.numpy.abs(x), [((3,), "sep")], smooth=False),
    Op("sign", lambda m, x: m.numpy.sign(x) * x, [((3,), "frac")], smooth=False),
    Op(
        "floor_ceil_round",
        lambda m, x: m.numpy.floor(x) + m.numpy.ceil(x) * x + m.lax.round(x) * x,
        [((3,), "frac")],
        smooth=False,
    ),
    # binary (same shapes, and a rank-0 operand through jnp's broadcasting)
    Op("add", lambda m, x, y: m.lax.add(x, y), [S3, S3]),
    Op("sub", lambda m, x, y: m.lax.sub(x, y), [S3, S3]),
    Op("mul", lambda m, x, y: m.lax.mul(x, y), [S23, S23]),
    Op("mul_scalar", lambda m, x, y: x * y, [S23, S]),
    Op("div", lambda m, x, y: m.lax.div(x, y), [S3, P3]),
    Op("div_scalar", lambda m, x, y: y / x, [P23, S]),
    Op("rem", lambda m, x, y: m.lax.rem(x, y), [((3,), "pos"), ((3,), "gt1")], smooth=False),
    Op("pow", lambda m, x, y: m.lax.pow(x, y), [P3, S3]),
    Op("max", lambda m, x, y: m.lax.max(x, y), [((4,), "sep"), ((4,), "sep")], smooth=False),
    Op("min", lambda m, x, y: m.lax.min(x, y), [((4,), "sep"), ((4,), "sep")], smooth=False),
    Op("atan2", lambda m, x, y: m.lax.atan2(x, y), [P3, S3]),
    # select, convert, clamp
    Op(
        "select_n",
        lambda m, x, y: m.numpy.where(x > 0, x * y, m.numpy.sin(y)),
        [((4,), "sep"), ((4,), "any")],
        smooth=False,
    ),
    Op(
        "convert",
        lambda m, x: (
            m.lax.convert_element_type(x, np.float32) * x
            + m.lax.convert_element_type(m.lax.convert_element_type(x, np.int32), np.float32)
        ),
        [((3,), "frac")],
        smooth=False,
    ),
    Op(
        "clamp",
        lambda m, lo, x: m.lax.clamp(lo, x, 1.5),
        [((5,), "unit"), ((5,), "sep")],
        smooth=False,
    ),
    # (JAX's own clamp jvp fails for a rank-0 bound with a tangent, hence no JAX comparison)
    Op(
        "clamp_scalar_lo",
        lambda m, lo, x: m.lax.clamp(lo, x, 1.5),
        [((), "unit"), ((5,), "sep")],
        smooth=False,
        jax_ok=False,
    ),
    # shapes
    Op(
        "broadcast_in_dim",
        lambda m, x: m.lax.broadcast_in_dim(x, (2, 3, 4), (1,)) * 1.5,
        [((3,), "any")],
    ),
    Op(
        "broadcast_unit",
        lambda m, x: m.lax.broadcast_in_dim(x, (2, 3, 4), (0, 1, 2)),
        [((2, 1, 4), "any")],
    ),
    Op("reshape", lambda m, x: m.numpy.reshape(x, (3, 2)) ** 2, [S23]),
    Op(
        "squeeze_expand",
        lambda m, x: m.numpy.expand_dims(m.numpy.squeeze(x, 1), 0) ** 2,
        [((3, 1), "any")],
    ),
    Op("transpose", lambda m, x: m.lax.transpose(x, (2, 0, 1)) ** 2, [((2, 3, 4), "any")]),
    Op("slice", lambda m, x: m.lax.slice(x, (1, 0), (4, 3), (2, 2)) ** 2, [((5, 4), "any")]),
    Op("rev", lambda m, x: m.lax.rev(x, (0,)) * m.numpy.arange(4.0), [((4,), "any")]),
    Op("pad", lambda m, x, v: m.lax.pad(x, v, ((1, 2, 1), (-1, 1, 0))) ** 2, [((3, 3), "any"), S]),
    Op(
        "concatenate",
        lambda m, x, y: m.numpy.concatenate([x, y, x], 1) ** 2,
        [S23, ((2, 2), "any")],
    ),
    Op(
        "dynamic_slice",
        lambda m, x: m.lax.dynamic_slice(x, (np.int32(1), np.int32(2)), (2, 2)) ** 2,
        [((3, 4), "any")],
    ),
    Op(
        "dynamic_update_slice",
        lambda m, x, u: m.lax.dynamic_update_slice(x, u, (np.int32(1),)) ** 2,
        [((5,), "any"), ((2,), "any")],
    ),
    Op("gather", lambda m, x: x[m.numpy.asarray(I(0, 2, 2, 1))] ** 2, [((4,), "any")]),
    Op("gather_2d", lambda m, x: x[:, m.numpy.asarray(I(2, 0))] * x[1, 1], [((2, 3), "any")]),
    Op(
        "scatter_add",
        lambda m, x, u: x.at[m.numpy.asarray(I(0, 2, 2))].add(u) ** 2,
        [((4,), "any"), S3],
    ),
    Op(
        "scatter",
        lambda m, x, u: x.at[m.numpy.asarray(I(3, 1))].set(u) ** 2,
        [((4,), "any"), ((2,), "any")],
    ),
    Op(
        "scatter_mul",
        lambda m, x, u: x.at[m.numpy.asarray(I(0, 2))].multiply(u, unique_indices=True),
        [((4,), "any"), ((2,), "any")],
        smooth=False,
    ),
    Op(
        "scatter_mul_dup",
        lambda m, x, u: x.at[m.numpy.asarray(I(0, 2, 0))].multiply(u),
        [((4,), "any"), ((3,), "pos")],
        smooth=False,
        jax_ok=False,
    ),
    Op(
        "scatter_max",
        lambda m, x, u: x.at[m.numpy.asarray(I(0, 2))].max(u),
        [((4,), "sep"), ((2,), "sep")],
        smooth=False,
    ),
    Op(
        "scatter_min",
        lambda m, x, u: x.at[m.numpy.asarray(I(1, 2))].min(u),
        [((4,), "sep"), ((2,), "sep")],
        smooth=False,
    ),
    # reductions
    Op("reduce_sum", lambda m, x: m.numpy.sum(x**2, axis=0), [S23]),
    Op("reduce_max", lambda m, x: m.numpy.max(x, axis=1), [((2, 4), "sep")], smooth=False),
    Op("reduce_min", lambda m, x: m.numpy.min(x, axis=0), [((3, 2), "sep")], smooth=False),
    Op("reduce_prod", lambda m, x: m.numpy.prod(x, axis=1), [((2, 3), "pos")]),
    Op(
        "argmax",
        lambda m, x: m.numpy.argmax(x).astype(np.float32) * x,
        [((4,), "sep")],
        smooth=False,
    ),
    Op("cumsum", lambda m, x: m.numpy.cumsum(x, axis=1) ** 2, [S23]),
    Op("cumprod", lambda m, x: m.numpy.cumprod(x), [((4,), "pos")]),
    Op("cummax", lambda m, x: m.lax.cummax(x, axis=0), [((5,), "sep")], smooth=False),
    Op("cummin", lambda m, x: m.lax.cummin(x, axis=0, reverse=True), [((5,), "sep")], smooth=False),
    Op("cumlogsumexp", lambda m, x: m.lax.cumlogsumexp(x, axis=0), [((4,), "any")]),
    Op("sort", lambda m, x: m.numpy.sort(x) * m.numpy.arange(5.0), [((5,), "sep")], smooth=False),
    Op(
        "top_k",
        lambda m, x: m.lax.top_k(x, 2)[0] * m.numpy.arange(1.0, 3.0),
        [((5,), "sep")],
        smooth=False,
    ),
    # linear algebra
    Op("matmul", lambda m, a, b: m.numpy.tanh(a @ b), [((2, 3), "any"), ((3, 4), "any")]),
    Op("matvec", lambda m, a, b: a @ b, [((2, 3), "any"), ((3,), "any")], smooth=False),
    Op(
        "dot_batched",
        lambda m, a, b: m.lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))) ** 2,
        [((2, 3, 2), "any"), ((2, 2, 4), "any")],
    ),
    Op(
        "dot_contract_first",
        lambda m, a, b: m.lax.dot_general(a, b, (((0,), (0,)), ((), ()))) ** 2,
        [((3, 2), "any"), ((3, 4), "any")],
    ),
    Op("linalg_inv", lambda m, a: m.numpy.linalg.inv(a), [((3, 3), "wellcond")]),
    Op("linalg_det_lu", lambda m, a: m.numpy.linalg.det(a), [((3, 3), "wellcond")]),
    Op("cholesky", lambda m, a: m.numpy.linalg.cholesky(a), [((3, 3), "wellcond")]),
    Op(
        "triangular_solve",
        lambda m, a, b: _solve_tri(m)(a, b, lower=True),
        [((3, 3), "wellcond"), ((3, 2), "any")],
    ),
    Op(
        "conv",
        lambda m, x, w: m.lax.conv_general_dilated(x, w, (1,), "SAME") ** 2,
        [((1, 2, 5), "any"), ((3, 2, 3), "any")],
    ),
    # autodiff's own
    Op("stop_gradient", lambda m, x: x * m.lax.stop_gradient(x), [S3], smooth=False, fd=False),
    Op("pjit", lambda m, x: m.jit(lambda y: m.numpy.sin(y) * y)(x), [S3]),
    Op("name", lambda m, x: m.ad_checkpoint.checkpoint_name(m.numpy.sin(x), "h") * x, [S3]),
    Op("checkpoint", lambda m, x: m.checkpoint(lambda y: m.numpy.sin(m.numpy.sin(y)))(x), [S3]),
    Op(
        "logsumexp_mix",
        lambda m, x, y: m.numpy.log(m.numpy.sum(m.numpy.exp(x * y), axis=-1)),
        [S23, S23],
    ),
]

BY_NAME = {op.name: op for op in OPS}


def _f(op, m=wjax):
    return lambda *a: op.fn(m, *a)


def _setup(op, seed=0):
    rng = np.random.default_rng(seed)
    xs = [gen(s, rng) for s in op.specs]
    vs = [rng.normal(size=s[0]).astype(np.float32) for s in op.specs]
    return rng, xs, vs


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_vjp_finite_differences_and_jvp_identity(op):
    rng, xs, vs = _setup(op)
    f = _f(op)
    y, vjp_fn = wjax.vjp(f, *xs)
    ct = rng.normal(size=np.shape(y)).astype(np.float32)
    gs = vjp_fn(ct)
    ana = sum(float(np.vdot(np.asarray(g, np.float64), v)) for g, v in zip(gs, vs))
    # <ct, J t> from forward mode equals <J^T ct, t> from reverse mode
    _, t_out = wjax.jvp(f, tuple(xs), tuple(vs))
    fwd = float(np.vdot(np.asarray(t_out, np.float64), ct))
    scale = sum(float(np.linalg.norm(g) * np.linalg.norm(v)) for g, v in zip(gs, vs)) + 1e-3
    assert abs(fwd - ana) <= 2e-4 * scale + 1e-5, (fwd, ana)
    if not op.fd:
        return
    L = wjax.jit(lambda *a: wjax.numpy.sum(f(*a) * ct))
    eps = 2e-3
    plus = float(L(*[x + eps * v for x, v in zip(xs, vs)]))
    minus = float(L(*[x - eps * v for x, v in zip(xs, vs)]))
    num = (plus - minus) / (2 * eps)
    tol = op.rtol * (abs(ana) + 0.1 * scale) + 2e-7 * abs(plus) / eps + 1e-3
    assert abs(num - ana) <= tol, (op.name, num, ana)


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_transformed_jaxprs_typecheck(op):
    _, xs, _ = _setup(op)
    closed = wjax.make_jaxpr(_f(op))(*xs)
    n, m = len(xs), len(closed.out_avals)
    jc, out_nz = jvp_jaxpr(closed, [True] * n, instantiate_outs=True)
    typecheck(jc.jaxpr)
    assert all(out_nz) and len(jc.out_avals) == 2 * m
    for o, t in zip(jc.out_avals[:m], jc.out_avals[m:]):
        assert o.shape == t.shape and o.dtype == t.dtype
    known, lin, out_unk, nres = partial_eval_jaxpr(jc, [False] * n + [True] * n,
                                                   instantiate=[False] * m + [True] * m)
    typecheck(known.jaxpr)
    typecheck(lin.jaxpr)
    assert out_unk == [False] * m + [True] * m
    tj = transpose_jaxpr(lin, [False] * nres + [True] * n)
    typecheck(tj.jaxpr)
    assert [a.shape for a in tj.out_avals] == [np.shape(x) for x in xs]


@pytest.mark.parametrize("op", [o for o in OPS if o.jax_ok], ids=repr)
def test_against_jax(op):
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.scipy.linalg")
    pytest.importorskip("jax.ad_checkpoint")
    jax.config.update("jax_enable_x64", False)
    rng, xs, vs = _setup(op, seed=1)
    fw, fj = _f(op, wjax), _f(op, jax)
    yw, tw = wjax.jvp(fw, tuple(xs), tuple(vs))
    yj, tj = jax.jit(lambda xs, vs: jax.jvp(fj, tuple(xs), tuple(vs)))(xs, vs)
    np.testing.assert_allclose(np.asarray(yw), np.asarray(yj), rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(np.asarray(tw), np.asarray(tj), rtol=5e-4, atol=5e-5)
    ct = rng.normal(size=np.shape(yj)).astype(np.float32)
    gw = wjax.vjp(fw, *xs)[1](ct)
    gj = jax.jit(lambda xs, ct: jax.vjp(fj, *xs)[1](ct))(xs, ct)
    for a, b in zip(gw, gj):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=5e-4, atol=5e-5)
    if op.smooth:
        # second order: the gradient of <grad L(x), v>
        def hv(m, f):
            L = lambda *a: m.numpy.sum(f(*a) * ct)  # noqa: E731
            return lambda *a: sum(m.numpy.vdot(g, v) for g, v in
                                  zip(m.grad(L, argnums=tuple(range(len(a))))(*a), vs))
        hw = wjax.grad(hv(wjax, fw), argnums=tuple(range(len(xs))))(*xs)
        hj = jax.jit(jax.grad(hv(jax, fj), argnums=tuple(range(len(xs)))))(*xs)
        for a, b in zip(hw, hj):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-4)


# --------------------------------------------------------------------------- registry walk

# Primitives whose results are integers, booleans or piecewise constant get a symbolic-zero jvp
# rule (``defjvp_zero``); they are listed so a new primitive must be classified deliberately.
ZERO_DERIVATIVE = {
    "sign", "floor", "ceil", "round", "not", "is_finite", "population_count", "clz", "and", "or",
    "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical", "eq", "ne", "lt", "le",
    "gt", "ge", "iota", "reduce_and", "reduce_or", "argmax", "argmin", "stop_gradient",
    "random_bits", "random_split", "random_fold_in", "random_seed", "random_wrap", "random_unwrap",
    "threefry2x32", "bitcast_convert_type",
}
# Primitives linear in (some of) their operands must transpose.
LINEAR = {
    "neg", "add", "sub", "mul", "div", "convert_element_type", "reduce_sum", "broadcast_in_dim",
    "reshape", "transpose", "squeeze", "expand_dims", "slice", "pad", "concatenate", "rev",
    "select_n", "dot_general", "gather", "dynamic_slice", "dynamic_update_slice", "scatter_add",
    "scatter", "scatter_mul", "pjit", "checkpoint", "custom_lin", "cumsum", "conv_general_dilated",
    "reduce_precision", "copy", "copy_p", "real", "imag", "complex", "conj",
}


# JAX has no derivative for these either (tests/test_collectives.py checks pmax/pmin raise
# alike; test_special_primitives_without_derivatives_raise_as_jax the others)
NOT_DIFFERENTIABLE_IN_JAX = {"pmax", "pmin", "nextafter", "zeta", "igamma_grad_a",
                             "random_gamma_grad"}


def test_special_primitives_without_derivatives_raise_as_jax():
    import jax
    for name, args in [("nextafter", (1.5, 2.0)), ("zeta", (3.0, 1.5)),
                       ("igamma_grad_a", (1.5, 2.0)), ("random_gamma_grad", (1.5, 2.0))]:
        for i in range(2):
            def f(mod, x, name=name, args=args, i=i):
                a = list(args)
                a[i] = x
                a = [mod.numpy.asarray(v, "float32") for v in a]
                return getattr(mod.lax, name)(*a)
            with pytest.raises(Exception) as want:      # JAX's class for this operand
                jax.grad(lambda x: f(jax, x))(1.5)
            # JAX computes random_gamma_grad with a while_loop, so its grad is the loop's
            # ValueError; wjax's is a primitive without a derivative (NotImplementedError)
            expect = ((want.type, NotImplementedError) if name == "random_gamma_grad"
                      else want.type)
            with pytest.raises(expect) as got:
                wjax.grad(lambda x: f(wjax, x))(1.5)
            if got.type is NotImplementedError:
                assert f"Differentiation rule for '{name}' not implemented" in str(got.value)


def test_every_primitive_has_a_jvp_rule():
    missing = sorted(n for n, p in REGISTRY.items()
                     if p.jvp is None and n not in NOT_DIFFERENTIABLE_IN_JAX)
    assert not missing, f"primitives without a jvp rule: {missing}"
    for n in ZERO_DERIVATIVE & set(REGISTRY):
        assert getattr(REGISTRY[n], "zero_jvp", False), f"{n} should have a symbolic-zero jvp rule"


def test_every_linear_primitive_has_a_transpose_rule():
    missing = sorted(n for n in LINEAR & set(REGISTRY) if REGISTRY[n].transpose is None)
    assert not missing, f"linear primitives without a transpose rule: {missing}"
    # every primitive the op table linearizes through must transpose (checked by running them)
    assert {"add", "mul", "dot_general", "gather", "scatter_add", "pjit"} <= set(REGISTRY)
