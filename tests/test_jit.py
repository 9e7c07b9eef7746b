"""Tracing, make_jaxpr, jit: caching, static arguments, errors, fusion and limits."""
import logging
import re

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax._src.backend import execute, lower, passes, runtime
from wjax._src.core.ir import typecheck


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def norm(X):
    X = X - X.mean(0)
    return X / X.std(0)


def softmax(x):
    e = jnp.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def n_kernels(f, *args, **kw):
    return len(wjax.jit(f, **kw).lower(*args).compile().plan.steps)


def run_with_limits(f, args, **limits):
    """Lowers ``f`` with forced device limits and runs the plan on real buffers."""
    closed = wjax.make_jaxpr(f)(*args)
    rt = runtime.get()
    exe = execute.Executable(closed.jaxpr, rt.target().with_limits(**limits))
    outs = execute.Bound(exe, closed.consts).run(rt, [jnp.asarray(a).buffer for a in args])
    res = [wjax._src.array.Array(o, a) for o, a in zip(outs, exe.out_avals)]
    return res, exe.plan


# --------------------------------------------------------------------------- tracing

def test_tracer_repr_and_static_shape():
    seen = {}

    def f(x):
        seen["repr"] = repr(x)
        seen["shape"] = x.shape
        return x * 2

    wjax.jit(f)(jnp.ones((3, 4)))
    assert seen["repr"] == "JitTracer(float32[3,4])"   # as JAX prints it
    assert seen["shape"] == (3, 4)


def test_make_jaxpr_format():
    def f(x):
        return jnp.where(x > 0, x, 0.0) * 2.0

    j = wjax.make_jaxpr(f)(jnp.arange(5.0))
    s = str(j)
    assert s.startswith("{ lambda ; a:f32[5]. let")
    assert "b:bool[5] = gt a 0.0:f32[]" in s
    assert s.rstrip().endswith("in (d,) }") or re.search(r"in \([a-z]+,\) }$", s.strip())
    typecheck(j.jaxpr)


def test_make_jaxpr_nested_pjit_and_consts():
    jax = pytest.importorskip("jax")

    def program(mod):
        c = mod.numpy.arange(3.0)

        @mod.jit
        def inner(y):
            return y + c
        return mod.make_jaxpr(lambda x: inner(x) * 3)(mod.numpy.ones(3))
    j = program(wjax)
    # JAX 0.10's layout: a jit equation's parameters one per line, the inner binders named
    # as the call's operands and results
    assert str(j) == str(program(jax))
    assert "b:f32[3] = jit[\n      name=inner\n" in str(j)
    typecheck(j.jaxpr)


def test_make_jaxpr_python_scalar_is_weak():
    j = wjax.make_jaxpr(lambda x: x + 1)(3.0)
    assert j.in_avals[0].weak_type
    assert "add a 1.0:f32[]" in str(j)


def _jaxpr_programs(mod, np_mod):
    """Programs whose jaxprs both libraries print: (name, function, args, exact) -- ``exact``
    where the whole text agrees (layout, sub-jaxprs, the inner ``jit``s JAX's jnp.where and
    jax.nn functions make), else only the literals."""
    lax = mod.lax
    x3, i3 = np_mod.ones(3), np_mod.arange(3)

    @mod.custom_jvp
    def cj(x):
        return np_mod.sin(x) * 2.0
    cj.defjvp(lambda p, t: (cj(p[0]), np_mod.cos(p[0]) * t[0] * 2.0))
    return [
        ("mul_add", lambda x: x * 3.0 + 1, (x3,), True),
        ("int_add", lambda k: k + 1, (np_mod.int32(2),), True),
        ("weak_int", lambda k: k + 1, (2,), True),
        ("weak_float", lambda x: x * 1.5 + 1e-30, (1.0,), True),
        ("bool", lambda x: np_mod.logical_and(x > 0, True), (x3,), True),
        ("rounded", lambda x: x * -2.5 + 1e-8, (x3,), True),
        ("big", lambda x: x * 1e20 + 123456.789, (x3,), True),
        ("third", lambda x: x * (1 / 3), (x3,), True),
        ("int_mul", lambda x: x * 2 + 3, (i3,), True),
        ("u8", lambda x: x + 1, (np_mod.ones(3, np_mod.uint8),), True),
        ("f16", lambda x: x * 0.1, (np_mod.ones(3, np_mod.float16),), True),
        ("bf16", lambda x: x * 0.1, (np_mod.ones(3, np_mod.bfloat16),), True),
        ("complex", lambda x: x * 1j, (x3,), True),
        ("nan_inf", lambda x: np_mod.maximum(x + np_mod.nan, -np_mod.inf), (x3,), True),
        ("mean", np_mod.mean, (x3,), True),
        ("outputs", lambda x: (x, 1.0, 2), (1.0,), True),
        ("where", lambda x: np_mod.where(x > 0, x, 0.0), (x3,), True),
        ("full", lambda x: x + np_mod.zeros(3), (x3,), True),
        ("cond", lambda x: lax.cond(x.sum() > 0, lambda y: y * 2.0, lambda y: y - 1.0, x),
         (x3,), True),
        ("scan", lambda x: lax.scan(lambda c, a: (c + a * 2.0, c), 0.0, x), (x3,), True),
        ("while", lambda x: lax.while_loop(lambda c: c[0] < 10,
                                           lambda c: (c[0] + 1, c[1] * 2.0), (0, x)),
         (x3,), True),
        ("pjit", lambda x: mod.jit(lambda y: y * 2.0 + 1)(x) - 1.0, (x3,), True),
        ("custom_jvp", lambda x: cj(x) + 1.0, (x3,), True),
        ("relu", mod.nn.relu, (x3,), True),
        ("grad_silu", mod.grad(lambda x: mod.nn.silu(x).sum()), (x3,), False),
    ]


_LITERAL = re.compile(r"(?<![\w.])(-?\d[\w.+-]*|\(\S+\)|nan|-?inf|True|False):(\w+)\[\]")


def test_make_jaxpr_text_like_jax():
    """Literals print with their types (``mul a 3.0:f32[]``) and their values in their
    dtypes, as JAX 0.10 prints them; a flat jaxpr that fits in 80 columns is one line."""
    jax = pytest.importorskip("jax")
    ours = _jaxpr_programs(wjax, jnp)
    theirs = _jaxpr_programs(jax, jax.numpy)
    for (name, f, args, exact), (_, g, jargs, _) in zip(ours, theirs):
        s, t = str(wjax.make_jaxpr(f)(*args)), str(jax.make_jaxpr(g)(*jargs))
        if exact:
            assert s == t, (name, s, t)
        else:
            lits = sorted(m.group(0) for m in _LITERAL.finditer(s))
            assert lits and lits == sorted(m.group(0) for m in _LITERAL.finditer(t)), (name, s, t)


# jnp.matmul's batch axes: shared, one-sided, of length 1 on one side or both, vectors
MATMUL_SHAPES = [((2, 256, 128), (128, 128)), ((2, 256, 128), (1, 128, 128)),
                 ((256, 128), (3, 128, 128)), ((4, 1, 5, 6), (3, 6, 7)),
                 ((1, 5, 6), (3, 1, 6, 7)), ((2, 3, 5, 6), (2, 3, 6, 7)),
                 ((2, 1, 5, 6), (1, 3, 6, 7)), ((1, 1, 5, 6), (1, 6, 7)), ((3, 5, 6), (6,)),
                 ((6,), (2, 6, 4)), ((5, 6), (6, 7))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_jaxpr_is_jaxs(sa, sb):
    """``a @ b`` traces to JAX's equations (a weight shared by a batch is contracted once,
    never broadcast: one product of b * s rows for an (b, s, d) ``x @ w``), with JAX's
    values, gradients and jit."""
    jax = pytest.importorskip("jax")
    rs = np.random.RandomState(0)
    a, b = rs.randn(*sa).astype(np.float32), rs.randn(*sb).astype(np.float32)
    assert str(wjax.make_jaxpr(jnp.matmul)(a, b)) == str(jax.make_jaxpr(jax.numpy.matmul)(a, b))
    want = np.asarray(jax.numpy.matmul(a, b), np.float64)
    for f in (jnp.matmul, wjax.jit(jnp.matmul)):
        np.testing.assert_allclose(np.asarray(f(a, b)), want, rtol=2e-5, atol=2e-5)

    def loss(M):
        return lambda a, b: (M.matmul(a, b) ** 2).sum()
    got = wjax.jit(wjax.grad(loss(jnp), argnums=(0, 1)))(a, b)
    want = jax.grad(loss(jax.numpy), argnums=(0, 1))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("spec,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("jk,ij->ik", [(4, 5), (3, 4)]), ("kj,ij->ik", [(5, 4), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bik,bjk->bij", [(2, 3, 4), (2, 5, 4)]),
    ("i,j->ji", [(3,), (4,)]), ("bqhd,bkhd->bhqk", [(2, 4, 3, 5), (2, 6, 3, 5)])])
def test_einsum_jaxpr_is_jaxs(spec, shapes):
    """A two-operand einsum contracts its operands in the order JAX does where one order
    gives the result's axes directly (``jk,ij->ik`` is ``dot_general`` of the second
    operand and the first, with no transpose); JAX's values."""
    jax = pytest.importorskip("jax")
    rs = np.random.RandomState(1)
    args = [rs.randn(*s).astype(np.float32) for s in shapes]
    got = wjax.make_jaxpr(lambda *a: jnp.einsum(spec, *a))(*args)
    assert str(got) == str(jax.make_jaxpr(lambda *a: jax.numpy.einsum(spec, *a))(*args))
    np.testing.assert_allclose(np.asarray(wjax.jit(lambda *a: jnp.einsum(spec, *a))(*args)),
                               np.asarray(jax.numpy.einsum(spec, *args)), rtol=2e-5,
                               atol=2e-5)


def test_jaxpr_atoms_and_equations_print_like_jax():
    jax = pytest.importorskip("jax")
    for mod, np_mod in ((wjax, jnp), (jax, jax.numpy)):
        j = mod.make_jaxpr(lambda x, k: (x * 3.0, k + 1, x > 0.5, k * np_mod.int32(2)))(
            np_mod.ones(3), 2)
        e = j.eqns[0]
        assert re.fullmatch(r"Var\(id=\d+\):float32\[3\]", repr(e.invars[0])), mod
        assert re.fullmatch(r"\[Var\(id=\d+\):float32\[3\], Literal\(3.0\)\]",
                            repr(e.invars)), mod
        assert str(e) == "a:f32[3] = mul b 3.0:f32[]", mod
        assert repr(j.eqns[1].invars[1]) == "Literal(TypedInt(1, dtype=int32))", mod
        assert str(j.eqns[1]) == "a:i32[] = add b 1:i32[]", mod


# --------------------------------------------------------------------------- jit semantics

def test_jit_matches_eager_and_numpy():
    x = jnp.linspace(-3, 3, 101)
    np.testing.assert_allclose(np.asarray(wjax.jit(selu)(x)), np.asarray(selu(x)), rtol=1e-6)
    xn = np.asarray(x)
    ref = 1.05 * np.where(xn > 0, xn, 1.67 * np.exp(xn) - 1.67)
    np.testing.assert_allclose(np.asarray(wjax.jit(selu)(x)), ref, rtol=1e-5, atol=1e-6)


def test_jit_pytrees_kwargs_and_cache():
    calls = []

    @wjax.jit
    def f(params, x, *, scale):
        calls.append(1)
        return {"y": params["w"] * x + params["b"], "s": (x * scale).sum()}

    p = {"w": jnp.float32(2.0), "b": jnp.float32(1.0)}
    out = f(p, jnp.arange(3.0), scale=2.0)
    assert set(out) == {"y", "s"}
    np.testing.assert_allclose(np.asarray(out["y"]), [1, 3, 5])
    assert float(out["s"]) == 6.0
    f(p, jnp.arange(3.0) + 1, scale=3.0)
    assert len(calls) == 1          # same avals: no retrace
    f(p, jnp.arange(4.0), scale=2.0)
    assert len(calls) == 2          # new shape: retrace
    f(p, jnp.arange(4, dtype=jnp.int32), scale=2.0)
    assert len(calls) == 3          # new dtype: retrace


def test_jit_weak_type_in_cache_key():
    calls = []

    @wjax.jit
    def f(x):
        calls.append(1)
        return x * 2

    r1 = f(3.0)
    r2 = f(jnp.float32(3.0))
    assert len(calls) == 2
    assert r1.weak_type and not r2.weak_type


def test_static_argnums_and_argnames():
    calls = []

    def f(x, n, mode="a"):
        calls.append((n, mode))
        return x * n if mode == "a" else x + n

    g = wjax.jit(f, static_argnums=1, static_argnames="mode")
    assert float(g(jnp.float32(2.0), 3)) == 6.0
    assert float(g(jnp.float32(2.0), 3)) == 6.0
    assert len(calls) == 1
    assert float(g(jnp.float32(2.0), 4)) == 8.0
    assert float(g(jnp.float32(2.0), 4, mode="b")) == 6.0
    assert len(calls) == 3
    h = wjax.jit(f, static_argnames=("n",))
    assert float(h(jnp.float32(2.0), n=5)) == 10.0


def test_static_unhashable_is_clear_error():
    g = wjax.jit(lambda x, s: x, static_argnums=1)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        g(1.0, [1, 2])


def test_side_effect_once_and_frozen_global():
    box = {"k": 2.0}
    log = []

    @wjax.jit
    def f(x):
        log.append("traced")
        return x * box["k"]

    assert float(f(jnp.float32(1.0))) == 2.0
    box["k"] = 10.0
    assert float(f(jnp.float32(1.0))) == 2.0   # frozen until retrace
    assert log == ["traced"]
    assert float(f(jnp.ones(2))[0]) == 10.0     # new signature picks up the new global


def test_lower_as_text_and_compile():
    lowered = wjax.jit(selu).lower(jnp.ones(8))
    text = lowered.as_text()
    assert "@compute" in text and "exp(" in text
    comp = lowered.compile()
    assert len(comp.plan.steps) == 1


def test_log_compiles(caplog):
    wjax.config.update("jax_log_compiles", True)
    try:
        with caplog.at_level(logging.WARNING, logger="wjax"):
            wjax.jit(lambda x: x + 41)(jnp.ones(7))
        assert any("Compiling" in r.message for r in caplog.records)
    finally:
        wjax.config.update("jax_log_compiles", False)


def test_disable_jit():
    seen = []

    def f(x):
        seen.append(type(x).__name__)
        return x + 1

    with wjax.disable_jit():
        wjax.jit(f)(jnp.ones(2))
    assert seen == ["ArrayImpl"]      # JAX's name of the concrete array type


def test_jit_async_returns_before_sync():
    x = jnp.ones(1024)
    f = wjax.jit(lambda x: x * 2 + 1)
    y = f(x)
    for _ in range(20):
        y = f(y)
    assert float(y.block_until_ready()[0]) == 2 ** 22 - 1


# --------------------------------------------------------------------------- errors

def test_concretization_error_names_function_and_argument():
    def f(x, flag):
        if x > 0:
            return x
        return -x

    with pytest.raises(wjax.errors.TracerBoolConversionError) as e:
        wjax.jit(f)(jnp.float32(1.0), 2)
    msg = str(e.value)
    assert "tracing the function f" in msg
    assert "argument x" in msg
    assert "traced array with shape bool[]" in msg      # JAX's words, and its errors page
    assert msg.endswith("errors.html#jax.errors.TracerBoolConversionError")
    assert isinstance(e.value, wjax.errors.ConcretizationTypeError)


def test_int_float_of_tracer_errors():
    with pytest.raises(wjax.errors.ConcretizationTypeError):
        wjax.jit(lambda x: float(x))(jnp.float32(1.0))
    with pytest.raises(wjax.errors.ConcretizationTypeError):
        wjax.jit(lambda x: int(x))(jnp.float32(1.0))
    with pytest.raises(wjax.errors.TracerIntegerConversionError):
        wjax.jit(lambda x: [1, 2, 3][x])(jnp.int32(1))
    with pytest.raises(wjax.errors.TracerArrayConversionError):
        wjax.jit(lambda x: np.asarray(x))(jnp.ones(2))


def test_boolean_mask_under_jit():
    with pytest.raises(wjax.errors.NonConcreteBooleanIndexError):
        wjax.jit(lambda x: x[x < 0])(jnp.arange(-2.0, 2.0))
    assert isinstance(wjax.errors.NonConcreteBooleanIndexError("x"), IndexError)
    # outside jit it works
    np.testing.assert_array_equal(
        np.asarray(jnp.arange(-2.0, 2.0)[jnp.arange(-2.0, 2.0) < 0]), [-2, -1]
    )


def test_traced_reshape_size():
    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
        wjax.jit(lambda x, n: x.reshape((n, 2)))(jnp.ones(4), 2)
    reshaped = wjax.jit(lambda x, n: x.reshape((n, 2)), static_argnums=1)(jnp.ones(4), 2)
    assert reshaped.shape == (2, 2)


def test_leaked_tracer():
    leaked = []

    @wjax.jit
    def f(x):
        leaked.append(x)
        return x + 1

    f(jnp.ones(3))
    with pytest.raises(wjax.errors.UnexpectedTracerError, match="unexpected tracer"):
        leaked[0] + 1


# --------------------------------------------------------------------------- fusion

def test_selu_is_one_kernel():
    assert n_kernels(selu, jnp.ones(1000)) == 1


def test_norm_kernels(target_options):
    """Column normalisation: 3 kernels under the CPU forms (a column sum, the centred sum of
    squares, the elementwise rest); under the GPU forms a tall column reduction is split
    across workgroups, a second pass finishing each (5 kernels), the same values."""
    from wjax._src.backend import profiles
    x = np.random.RandomState(3).randn(10000, 10).astype(np.float32) * 3 + 1
    want = (x - x.mean(0)) / x.std(0)
    target_options(**profiles.CPU_STRATEGIES)
    assert n_kernels(norm, jnp.ones((100, 10))) <= 3
    assert n_kernels(norm, jnp.ones((10000, 10))) <= 3
    np.testing.assert_allclose(np.asarray(wjax.jit(norm)(x)), want, rtol=2e-5, atol=2e-5)
    target_options(**dict(profiles.GPU_STRATEGIES, spin_wait_us=0))
    assert n_kernels(norm, jnp.ones((10000, 10))) <= 5
    np.testing.assert_allclose(np.asarray(wjax.jit(norm)(x)), want, rtol=2e-5, atol=2e-5)


def test_softmax_kernels():
    assert n_kernels(softmax, jnp.ones((8, 16))) <= 3
    x = np.random.RandomState(0).randn(8, 16).astype(np.float32)
    ref = np.exp(x - x.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    np.testing.assert_allclose(np.asarray(wjax.jit(softmax)(x)), ref, rtol=1e-5, atol=1e-7)


def test_multi_output_kernel():
    f = lambda x: (jnp.sin(x), jnp.cos(x) * 2, x + 1)
    assert n_kernels(f, jnp.ones(100)) == 1
    a, b, c = wjax.jit(f)(jnp.arange(4.0))
    np.testing.assert_allclose(np.asarray(b), 2 * np.cos(np.arange(4.0)), rtol=1e-6)


def test_views_fuse_without_copies():
    f = lambda x: (x.T.reshape(-1)[::2] * 3)[None, :].sum(0)
    x = jnp.arange(12.0).reshape(3, 4)
    assert n_kernels(f, x) == 1
    np.testing.assert_allclose(
        np.asarray(wjax.jit(f)(x)), (np.arange(12.0).reshape(3, 4).T.reshape(-1)[::2] * 3)
    )


def test_reduction_fuses_producer():
    f = lambda x: jnp.sum(jnp.exp(x) * 2)
    assert n_kernels(f, jnp.ones(64)) == 1
    np.testing.assert_allclose(float(wjax.jit(f)(jnp.zeros(64))), 128.0)


def test_cse_and_folding():
    f = lambda x: jnp.sin(x) * (2.0 * 3.0) + jnp.sin(x) * 6.0
    j = wjax.make_jaxpr(f)(jnp.ones(3))
    plan = lower.lower_jaxpr(passes.flatten_closed(j)[0], runtime.get().target())
    assert plan.wgsl_text().count("= wj_sin(") == 1   # one call in the kernel body


# --------------------------------------------------------------------------- limits

def test_storage_buffer_limit_splitting():
    xs = [np.arange(6.0, dtype=np.float32) + i for i in range(13)]
    f = lambda *a: sum(a[1:], a[0]) * 2
    (out,), plan = run_with_limits(f, xs, **{"max-storage-buffers-per-shader-stage": 8})
    assert all(len(d.keys) <= 8 for d in plan.steps)
    assert len(plan.steps) > 1
    np.testing.assert_allclose(np.asarray(out), 2 * np.sum(xs, 0))


def test_storage_limit_with_reduction_operand():
    xs = [np.arange(6.0, dtype=np.float32) * (i + 1) for i in range(10)]
    f = lambda *a: jnp.sum(sum(a[1:], a[0]))
    (out,), plan = run_with_limits(f, xs, **{"max-storage-buffers-per-shader-stage": 8})
    assert all(len(d.keys) <= 8 for d in plan.steps)
    np.testing.assert_allclose(float(out), float(np.sum(xs)))


def test_grid_limit_two_dimensional():
    x = np.arange(5000, dtype=np.float32)
    (out,), plan = run_with_limits(
        lambda a: a * 2 + 1, [x], **{"max-compute-workgroups-per-dimension": 4}
    )
    assert any(d.grid[1] > 1 for d in plan.steps)
    np.testing.assert_allclose(np.asarray(out), x * 2 + 1)
    (s,), _ = run_with_limits(lambda a: jnp.sum(a.reshape(50, 100), axis=1), [x],
                              **{"max-compute-workgroups-per-dimension": 4})
    np.testing.assert_allclose(np.asarray(s), x.reshape(50, 100).sum(1))


def test_one_command_buffer_per_call():
    f = wjax.jit(lambda x: jnp.sum(x) + jnp.max(x))
    x = jnp.ones(100)
    f(x).block_until_ready()
    rt = runtime.get()
    rt.synchronize()
    before = rt.stats["submits"]
    y = f(x)
    assert rt.stats["submits"] == before    # recorded, not yet submitted
    assert float(y) == 101.0


def _nine_products(a):
    for _ in range(9):
        a = jnp.tanh(a @ a + 1.0)
    return a


def _submits_during(f, x):
    """(f(x), the submits its call made) -- compiled and run once before, nothing pending."""
    rt = runtime.get()
    f(x).block_until_ready()
    rt.synchronize()
    before = rt.stats["submits"]
    y = f(x)
    return y, rt.stats["submits"] - before


def test_big_calls_submit_while_recorded():
    """``Target.submit_early`` (GPUs): a call of that many dispatches or more submits after
    its 2nd, 6th, 14th, ... dispatch and at its end, so the device starts while the host
    records; 0 (CPU profiles) submits at ``block_until_ready`` only.  Same values either
    way."""
    x = np.random.RandomState(0).rand(24, 24).astype(np.float32) / 12
    rt = runtime.get()
    want = np.asarray(wjax.jit(_nine_products)(x))
    for early in (0, 4):
        with rt.options(submit_early=early):
            f = wjax.jit(_nine_products)
            n = sum(1 for s in f.lower(x).compile().plan.steps if hasattr(s, "wgsl"))
            y, got = _submits_during(f, x)
            np.testing.assert_allclose(np.asarray(y), want, rtol=1e-6, atol=1e-6)
        assert n >= 9
        assert got == (0 if not early else len([m for m in (2, 6, 14, 30) if m <= n]) + 1), \
            (early, n, got)


def test_loop_bodies_do_not_submit_early():
    """A loop body's sub-plan runs once a step: it never submits on its own, whatever its
    size (``Target.submit_early`` is for a call's plan; 20 steps of a 9-product body would
    otherwise submit ~4 times a step)."""
    x = np.random.RandomState(1).rand(24, 24).astype(np.float32) / 12

    def loop(a):      # a while loop whose body runs as a sub-plan, step by step
        return wjax.lax.while_loop(lambda c: c[0] < 20,
                                   lambda c: (c[0] + 1, _nine_products(c[1])), (0, a))[1]
    rt = runtime.get()
    want = np.asarray(wjax.jit(loop)(x))
    with rt.options(submit_early=4):
        y, got = _submits_during(wjax.jit(loop), x)
        np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-6)
    assert got <= 6, got


def test_binding_size_limit_splits_elementwise():
    x = np.arange(5000, dtype=np.float32)
    y = np.ones(5000, dtype=np.float32)
    (out,), plan = run_with_limits(lambda a, b: a * 2 + b + jnp.arange(5000.0), [x, y],
                                   **{"max-storage-buffer-binding-size": 4096})
    assert len(plan.steps) == 5 and all(d.ranges is not None for d in plan.steps)
    np.testing.assert_allclose(np.asarray(out), x * 2 + 1 + np.arange(5000))   # global index kept


def test_binding_size_limit_index_math_reads_windows():
    x = np.arange(5000, dtype=np.float32)
    (out,), plan = run_with_limits(
        lambda a: a[::-1] * 2, [x], **{"max-storage-buffer-binding-size": 4096}
    )
    np.testing.assert_allclose(np.asarray(out), x[::-1] * 2)
    assert "_ld(" in plan.steps[0].wgsl and "_w4" in plan.steps[0].wgsl


@pytest.mark.parametrize("shape", [(128, 64, 32), (5, 3, 7)])
def test_matmul_epilogue_fused(shape):
    m, k, n = shape
    rng = np.random.RandomState(0)
    x, W, b = (rng.randn(m, k).astype(np.float32), rng.randn(k, n).astype(np.float32),
               rng.randn(n).astype(np.float32))
    f = lambda x, W, b: jnp.maximum(x @ W + b, 0.0)
    assert n_kernels(f, x, W, b) == 1
    np.testing.assert_allclose(
        np.asarray(wjax.jit(f)(x, W, b)), np.maximum(x @ W + b, 0), rtol=1e-4, atol=1e-4
    )


def test_matmul_epilogue_transposed_or_falls_back_on_index_math():
    """A consumer reading the product through a transpose is its epilogue, stored where it
    belongs (one kernel); one reading it at two positions (``y + y.T``) or through other
    index math (a reversal) is not (two kernels).  Both kernel forms."""
    rng = np.random.RandomState(1)
    x, W = rng.randn(6, 4).astype(np.float32), rng.randn(4, 8).astype(np.float32)
    sq = rng.randn(4, 6).astype(np.float32)
    y, ysq = x @ W, x @ sq
    cases = [(lambda x, W: (x @ W).T + 1, (x, W), y.T + 1, 1),
             (lambda x, W: (lambda y: y + y.T)(x @ W), (x, sq), ysq + ysq.T, 2),
             (lambda x, W: (x @ W)[::-1] * 2, (x, W), y[::-1] * 2, 2)]
    for matmul in ("vec4", "tiled"):
        with runtime.get().options(matmul=matmul):
            for f, args, want, kernels in cases:
                assert n_kernels(f, *args) == kernels
                np.testing.assert_allclose(np.asarray(wjax.jit(f)(*args)), want, rtol=1e-5,
                                           atol=1e-5)


@pytest.mark.parametrize("N", [96, 50])              # 50: scalar stores of the last columns
def test_product_read_only_by_its_epilogue_is_not_stored(N):
    """``relu(x @ w + b)`` (the product read by nothing but its epilogue) writes one buffer
    on both matmul kernels, register blocks and tiles (``KernelContext.output_dead``), also
    with a long contraction split in parts (the sum kernel stores only the epilogue's
    values); where the product is an output too, both are written.  Against NumPy."""
    rng = np.random.RandomState(4)
    for K in (300, 20000):
        x, w = rng.randn(64, K).astype(np.float32), rng.randn(K, N).astype(np.float32)
        b = rng.randn(N).astype(np.float32)
        y = x.astype(np.float64) @ w
        for matmul in ("vec4", "tiled"):
            with runtime.get().options(matmul=matmul):
                for f, want, writes in (
                        (lambda x, w, b: jnp.maximum(x @ w + b, 0), (np.maximum(y + b, 0),), 1),
                        (lambda x, w, b: (x @ w, jnp.maximum(x @ w + b, 0)),
                         (y, np.maximum(y + b, 0)), 2)):
                    steps = wjax.jit(f).lower(x, w, b).compile().plan.steps
                    assert steps[-1].wgsl.count("read_write>") == writes, (matmul, K)
                    got = wjax.jit(f)(x, w, b)
                    for g, v in zip(got if isinstance(got, tuple) else (got,), want):
                        np.testing.assert_allclose(np.asarray(g), v, rtol=1e-4,
                                                   atol=1e-4 * np.abs(v).max())


def test_wide_concatenate_under_storage_limit():
    xs = [np.full((2,), i, np.float32) for i in range(40)]
    (out,), plan = run_with_limits(
        lambda *a: jnp.stack(a), xs, **{"max-storage-buffers-per-shader-stage": 8}
    )
    assert all(len(d.keys) <= 8 for d in plan.steps)
    np.testing.assert_array_equal(np.asarray(out), np.stack(xs))
    big = [jnp.full((3,), i, jnp.float32) for i in range(130)]
    np.testing.assert_array_equal(np.asarray(jnp.stack(big))[:, 0], np.arange(130))


@pytest.mark.parametrize("strategy", ["tiled", "vec4"])
@pytest.mark.parametrize("shape", [(67, 45, 70), (2, 33, 130, 9)])
def test_matmul_strategies(target_options, strategy, shape):
    """Both matmul kernels (GPU tiles, CPU register blocks) are exercised here, whatever the
    adapter: batched, ragged sizes, with a fused epilogue."""
    target_options(matmul=strategy)
    rng = np.random.RandomState(3)
    *bs, m, k, n = (1,) + shape if len(shape) == 3 else shape
    a = rng.randn(*bs, m, k).astype(np.float32)
    b = rng.randn(*bs, k, n).astype(np.float32)
    c = rng.randn(n).astype(np.float32)
    f = wjax.jit(lambda a, b, c: jnp.tanh(a @ b) + c)   # fresh jit: no cached plan
    np.testing.assert_allclose(np.asarray(f(a, b, c)), np.tanh(a @ b) + c, rtol=1e-4, atol=1e-4)
    text = f.lower(a, b, c).as_text()
    assert ("As[" in text) == (strategy == "tiled")


def test_different_shapes_share_one_kernel():
    f = lambda x, y: (jnp.sin(x) * 2, y + 1)
    x, y = jnp.arange(10.0), jnp.arange(3.0)
    assert n_kernels(f, x, y) == 1
    a, b = wjax.jit(f)(x, y)
    np.testing.assert_allclose(np.asarray(a), np.sin(np.arange(10.0)) * 2, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(b), [1, 2, 3])


def _scaler_class(jit):
    class Scaler:
        def __init__(self, k):
            self.k = k

        @jit
        def pytree_method(self, x):
            return x * self.k + 1.0

        @(lambda f: jit(f, static_argnums=0))
        def static_method(self, x):
            return x * self.k - 1.0

    return Scaler


def test_jitted_methods_bind_their_instance_like_jax():
    """``@jit`` on a method: the instance is bound (``jit`` is a descriptor), as in JAX."""
    import jax

    def flatten(s):
        return (s.k,), None

    results = []
    for jit, jnp_, tree_util in ((wjax.jit, jnp, wjax.tree_util),
                                 (jax.jit, jax.numpy, jax.tree_util)):
        Scaler = _scaler_class(jit)
        tree_util.register_pytree_node(Scaler, flatten, lambda _, k: Scaler(*k))
        s, x = Scaler(jnp_.float32(3.0)), jnp_.arange(4.0)
        results.append([np.asarray(s.pytree_method(x)), np.asarray(s.static_method(x))])
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(results[0][0], np.arange(4.0) * 3 + 1)
