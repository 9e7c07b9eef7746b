"""The reduction and elementwise kernel forms (``prims/reduce.py``'s
``_Sequential``, ``lower.Lowering._looped``), each against NumPy and real JAX: rows with vec4
loads, columns with vec4 loads of 4 adjacent outputs, scalar lanes, reductions split in parts
with a second pass, loop-invariant reads hoisted, lane-uniform and lane-contiguous reads, the
scalar fallback when a lane placeholder leaks (iota along the vectorized dim), and the same
programs with the GPU forms (``profiles.GPU_FORMS``: strided reductions, flat elementwise
kernels)."""
from __future__ import annotations

import numpy as np
import pytest
from checks import f16_unsupported, has_f16, rjax

import wjax
import wjax.numpy as jnp
from wjax._src.backend import profiles, runtime

RS = np.random.RandomState(0)

# (shape, axis): rows (B == 1), columns (B % 4 == 0), odd columns (scalar lanes), middle axis,
# non-adjacent axes, size-1 dims, and one big enough to be split in parts (2^18 elements)
CASES = [((64, 256), 1), ((256, 64), 0), ((300, 6), 0), ((16, 40, 12), 1), ((6, 5, 7), (0, 2)),
         ((1, 64, 1, 8), 1), ((4, 65536), 1), ((65536, 4), 0), ((33, 17), None)]


def stats(np_, x, ax):
    return (x.sum(axis=ax), x.max(axis=ax), x.std(axis=ax), x.mean(axis=ax),
            np_.exp(x - x.max(axis=ax, keepdims=True)).sum(axis=ax))


def check(got, want, tol):
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,ax", CASES)
def test_reductions_against_numpy_and_jax(shape, ax):
    x = RS.randn(*shape).astype(np.float32)
    want = stats(np, x.astype(np.float64), ax)
    got = wjax.jit(lambda a: stats(jnp, a, ax))(x)
    check(got, want, 2e-5)
    if isinstance(ax, int):
        np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: a.argmax(ax))(x)),
                                      x.argmax(ax))
    J = rjax()
    check(got, J.jit(lambda a: stats(J.numpy, a, ax))(x), 2e-5)


@pytest.mark.parametrize("shape,ax", [c for c in CASES if c[1] is not None])
def test_broadcast_consumers(shape, ax):
    """softmax and norm: the normalizations read per-row / per-column values (looped
    elementwise kernels, vec4 along the last dim where it divides)."""
    x = RS.randn(*shape).astype(np.float32)

    def progs(np_, softmax, a):
        m = a - a.mean(axis=ax, keepdims=True)
        return softmax(a, ax), m / (1 + a.std(axis=ax, keepdims=True)), m * a[..., :1]

    def np_softmax(a, axis):
        e = np.exp(a - a.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    want = progs(np, np_softmax, x.astype(np.float64))
    got = wjax.jit(lambda a: progs(jnp, wjax.nn.softmax, a))(x)
    check(got, want, 2e-5)
    eager = progs(jnp, wjax.nn.softmax, jnp.asarray(x))
    check(eager, want, 2e-5)


def test_lane_placeholders_fall_back_to_scalar_kernels():
    """An iota along the vectorized dim cannot be a lane-uniform or contiguous read: the vec4
    form fails to compile and the scalar kernel gives the right answer."""
    x = RS.randn(512, 8).astype(np.float32)
    col = np.arange(8, dtype=np.float32)
    f = lambda a: ((a * jnp.arange(8.0)).sum(0),                             # noqa: E731
                   a - a.mean(0) + jnp.arange(8.0),
                   (a - a.mean(-1, keepdims=True)) * jnp.arange(8.0))
    want = ((x * col).sum(0), x - x.mean(0) + col, (x - x.mean(-1, keepdims=True)) * col)
    check(wjax.jit(f)(x), want, 1e-4)


def test_dead_coordinates_keep_the_vec4_column_form():
    """A column softmax's sum reads the column max through an index whose lane coordinate
    (``wj_vb``) it never uses: that dead ``let`` is dropped (``wgsl.drop_dead_lets``), so
    the kernel keeps its vec4 loads instead of failing to compile and falling back to four
    scalar reads a row -- with JAX's answers; a used lane coordinate still falls back (the
    test above)."""
    from wjax._src.backend import wgsl as W
    assert W.drop_dead_lets(["let a = x;", "let b: u32 = wj_vb;", "let c = a + 1.0;",
                             "y[0] = c;", "let d = 2.0;"], ["d"]) == [
        "let a = x;", "let c = a + 1.0;", "y[0] = c;", "let d = 2.0;"]
    kept = ["let o = atomicAdd(&b0[0], 1u);", "let p = 1u;\n  b1[0] = p;"]   # side effects
    assert W.drop_dead_lets(kept, []) == kept
    rt = runtime.get()
    x = RS.randn(1024, 64).astype(np.float32)
    J = rjax()
    with rt.options(**dict(profiles.CPU_STRATEGIES)):
        for f, g in ((lambda a: wjax.nn.softmax(a, axis=0), lambda a: J.nn.softmax(a, axis=0)),
                     (lambda a: wjax.nn.logsumexp(a, axis=0), lambda a: J.nn.logsumexp(a, axis=0))):
            text = wjax.jit(f).lower(x).as_text()
            reductions = [k for k in text.split("// ---- kernel")[1:] if "RState" in k]
            assert len(reductions) == 2 and all(
                "vec4<f32> = b0[" in k for k in reductions), "a column fold lost its vec4 form"
            np.testing.assert_allclose(np.asarray(wjax.jit(f)(x)), np.asarray(J.jit(g)(x)),
                                       rtol=2e-6, atol=1e-7)
    wjax.clear_caches()


@pytest.mark.parametrize("elementwise", ["flat", "looped"])
def test_broadcast_operands_keep_vec4_kernels(elementwise):
    """A flat elementwise kernel's vec4 lanes are 4 adjacent positions of the last dim: an
    operand broadcast along it (a bias) is a vec4 load, one constant over it (a row's scale)
    a splat, so ``x + b`` stays a vec4 kernel (it was one element a thread); the looped form
    (CPU adapters) keeps its vec4 loads along the last dim too (a column softmax's last
    kernel). Reads the lanes cannot share (a transposed operand, an odd last dim) fall back
    to the scalar kernel. Each against NumPy and real JAX, float32, int32, bfloat16."""
    import ml_dtypes
    rt = runtime.get()
    J = rjax()
    x = RS.randn(64, 96).astype(np.float32)
    b, c = RS.randn(96).astype(np.float32), RS.randn(64, 1).astype(np.float32)
    sq = RS.randn(96, 96).astype(np.float32)
    cases = [(lambda x, b, c: x + b, True), (lambda x, b, c: x * c - b, True),
             (lambda x, b, c: (x - x.mean(1, keepdims=True)) * b, True),
             (lambda x, b, c: x * 2.0 + x.T, False)]       # (x: the square one)
    with rt.options(**dict(profiles.CPU_STRATEGIES, elementwise=elementwise)):
        for k, (f, vec) in enumerate(cases):
            if k == 3:
                x = sq
            text = wjax.jit(f).lower(x, b, c).as_text()
            last = text.split("// ---- kernel")[-1]
            if elementwise == "flat":
                assert ("vec4<f32> = b0[i]" in last) == vec, last
            want = np.asarray(J.jit(f)(x, b, c))
            np.testing.assert_allclose(np.asarray(wjax.jit(f)(x, b, c)), want, rtol=1e-6,
                                       atol=1e-6)
        # other dtypes, 3-D with a middle-axis broadcast, a last dim that is not a multiple of 4
        xi, bi = RS.randint(-9, 9, (8, 16, 12)).astype(np.int32), RS.randint(-9, 9, (16, 1))
        g = lambda a, v: a * v.astype(a.dtype) + a[:, :1, :]        # noqa: E731
        np.testing.assert_array_equal(np.asarray(wjax.jit(g)(xi, bi)), g(xi, bi))
        xb = x.astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a, v: a + v)(xb, b[None])),
                                      np.asarray(J.jit(lambda a, v: a + v)(xb, b[None])))
        x5, b5 = RS.randn(64, 7).astype(np.float32), RS.randn(7).astype(np.float32)
        np.testing.assert_allclose(np.asarray(wjax.jit(lambda a, v: a - v)(x5, b5)), x5 - b5)
        soft = wjax.jit(lambda a: wjax.nn.softmax(a, axis=0))
        big = RS.randn(512, 256).astype(np.float32)
        if elementwise == "looped":
            last = soft.lower(big).as_text().split("// ---- kernel")[-1]
            assert "vec4<f32> = b0[i]" in last and "for (var l" in last, last
        np.testing.assert_allclose(np.asarray(soft(big)),
                                   np.asarray(J.jit(lambda a: J.nn.softmax(a, axis=0))(big)),
                                   rtol=2e-6, atol=1e-8)
    wjax.clear_caches()


@pytest.mark.parametrize("shape,ax", [((64, 256), 1), ((256, 64), 0), ((16, 40, 12), 1),
                                      ((4, 65536), 1)])
def test_gpu_forms(shape, ax):
    rt = runtime.get()
    x = RS.randn(*shape).astype(np.float32)
    with rt.options(**profiles.GPU_FORMS):
        got = wjax.jit(lambda a: stats(jnp, a, ax))(x)
        soft = wjax.jit(lambda a: wjax.nn.softmax(a, axis=ax))(x)
        check(got, stats(np, x.astype(np.float64), ax), 2e-5)
        e = np.exp(x - x.max(ax, keepdims=True))
        check([soft], [e / e.sum(ax, keepdims=True)], 2e-5)
    wjax.clear_caches()


def test_kernel_counts():
    """The kernels each target form gives.  CPU forms: norm over a small leading axis stays 3
    kernels (no split: not worth a second dispatch); a big one-row sum is split in parts and
    folded by a second pass.  GPU forms (strided reductions split over many workgroups): norm
    takes 5 -- each of its two column reductions (the sum, then the shifted sums of x and x^2
    that jnp.var takes together) is split in parts and folded by a second pass, whose epilogue
    computes the 10-element values read by every element later (the mean, the standard
    deviation: once per column, not per element); the shift row x[0] - mean that jnp.var
    uses is recomputed by its reduction's first pass; then the elementwise kernel."""
    n_kernels = lambda f, *a: len(wjax.jit(f).lower(*a).compile().plan.steps)   # noqa: E731

    def norm(X):
        X = X - X.mean(0)
        return X / X.std(0)
    rt = runtime.get()
    standardize = lambda X: wjax.nn.standardize(X, axis=0)   # noqa: E731
    for strategies, counts in ((profiles.CPU_STRATEGIES, (3, 2, 1, 2)),
                               (profiles.GPU_STRATEGIES, (5, 2, 1, 3))):
        with rt.options(**dict(strategies)):
            assert n_kernels(norm, jnp.ones((10000, 10))) == counts[0], strategies
            # one split column reduction of x and x^2 (merged), whose second pass computes
            # the mean and rsqrt(var + eps) once per column on GPU forms
            assert n_kernels(standardize, jnp.ones((10000, 10))) == counts[3], strategies
            assert n_kernels(jnp.sum, jnp.ones(1 << 20)) == counts[1], strategies
            assert n_kernels(lambda a: a.sum(1), jnp.ones((4096, 256))) == counts[2], strategies
    wjax.clear_caches()


# --------------------------------------------------------------------------- GPU strided forms
# prims/reduce.py's ``_Strided``: columns (a workgroup of column threads by row lanes, split
# in parts over a tall axis, the [P, M] partial states folded as a column reduction) and rows
# (a team of threads per output or part, vec4 loads, folded with subgroup shuffles or a
# workgroup tree).  ``threads`` is lowered so that modest sizes are split into several parts.

STRIDED_CASES = [((4099, 64), 0), ((1 << 15, 12), 0), ((20000, 7), 0), ((513, 3, 36), 1),
                 ((3, 5000, 8), 1), ((64, 1000), 1), ((5, 4097), 1), ((1 << 17,), 0),
                 ((100003,), 0), ((37, 5, 11), (0, 2)), ((9, 0), 1), ((2, 3), 1)]


def _strided_options(rt, subgroups):
    if subgroups and "subgroup" not in rt.features:
        # no subgroups on this adapter (wgpu's GL backend): its target must never ask for
        # them, and the test runs the workgroup-tree fold instead
        assert rt.target().subgroup_size is None
        subgroups = False
    return dict(profiles.GPU_FORMS, threads=1 << 14, subgroup_size=8 if subgroups else None)


@pytest.mark.parametrize("subgroups", [False, True])
@pytest.mark.parametrize("shape,ax", STRIDED_CASES)
def test_strided_reductions(shape, ax, subgroups):
    rt = runtime.get()
    x = RS.randn(*shape).astype(np.float32)
    xi = RS.randint(-1000, 1000, size=shape).astype(np.int32)
    xb = xi > 300

    def f(np_, a, ai, ab):
        out = (a.sum(axis=ax), a.std(axis=ax), ai.sum(axis=ax), ab.any(axis=ax),
               ab.all(axis=ax))
        if a.size:
            out += (a.max(axis=ax), a.min(axis=ax), ai.max(axis=ax), ai.min(axis=ax))
        if isinstance(ax, int) and a.shape[ax]:
            out += (a.argmax(ax), a.argmin(ax), ai.argmax(ax))
        return out
    with rt.options(**_strided_options(rt, subgroups)):
        got = wjax.jit(lambda *a: f(jnp, *a))(x, xi, xb)
    want = f(np, x.astype(np.float64), xi, xb)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = np.asarray(g)
        if np.issubdtype(g.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
        else:
            np.testing.assert_array_equal(g, w)
    J = rjax()
    jw = J.jit(lambda *a: f(J.numpy, *a))(x, xi, xb)
    for g, w in zip(got, jw):
        if np.issubdtype(np.asarray(w).dtype, np.floating):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
        else:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    wjax.clear_caches()


@pytest.mark.parametrize("subgroups", [False, True])
def test_strided_sums_stay_compensated(subgroups):
    """Every lane, tree level and shuffle of the strided forms carries TwoSum's error term:
    a sum of 0.1s over many parts, rows and columns is as exact as XLA's; NaN and inf
    propagate; argmax takes the first NaN and the lowest index of ties."""
    rt = runtime.get()
    with rt.options(**_strided_options(rt, subgroups)):
        assert float(wjax.jit(jnp.sum)(jnp.ones(10 ** 6) * 0.1)) == np.float32(100000.0)
        cols = np.asarray(wjax.jit(lambda a: a.sum(0))(jnp.ones((1 << 16, 8)) * 0.1))
        np.testing.assert_array_equal(cols, np.float32(6553.6))
        x = np.zeros((3, 70000), np.float32)
        x[0, 5], x[1, 9] = np.nan, np.inf
        x[2, [7, 60000]] = 5.0
        x[1, 69999] = np.inf
        s = np.asarray(wjax.jit(lambda a: a.sum(1))(x))
        assert np.isnan(s[0]) and s[1] == np.inf and s[2] == 10.0
        am = np.asarray(wjax.jit(lambda a: a.argmax(1))(x))
        np.testing.assert_array_equal(am, [5, 9, 7])
        m = np.asarray(wjax.jit(lambda a: a.max(0))(x.T.copy()))
        assert np.isnan(m[0]) and m[1] == np.inf and m[2] == 5.0
    wjax.clear_caches()


@pytest.mark.parametrize("form", ["cpu", "strided", "strided+subgroups", "rows"])
def test_max_and_min_fold_order_keys(form):
    """Float max/min reductions (and argmax/argmin, where -0 and +0 tie) fold integer keys
    of the values (``wj_okey``): a NaN of either sign wins, +0 beats -0 in max and -0 wins
    min, infinities and subnormals keep their bits (no float compare a driver may flush),
    an empty fold gives -inf / inf, and
    float16 / bfloat16 fold through float32 -- bit for bit NumPy's answers (JAX's where it
    does not flush subnormals), in every reduction form: rows, vec4 columns, scalar lanes, a
    middle axis, full folds split in parts, row-resident groups."""
    rt = runtime.get()
    opts = {"cpu": dict(profiles.CPU_STRATEGIES),
            "strided": _strided_options(rt, False),
            "strided+subgroups": _strided_options(rt, True),
            "rows": dict(profiles.GPU_STRATEGIES)}[form]
    rs = np.random.RandomState(7)
    specials = np.array([np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3e-39,
                         -3e-39, 3.4e38, -3.4e38], np.float32)

    def data(shape, nan):
        x = (rs.randn(*shape) * 10.0 ** rs.randint(-3, 4, shape)).astype(np.float32)
        k = x.size // 50 + 1 if x.size else 0
        x.flat[rs.randint(0, max(x.size, 1), k)] = rs.choice(specials if nan else specials[2:], k)
        return x

    def fold(mod, name, x, ax):
        """``mod``'s max/min of x over ``ax`` (jitted), -inf/inf as the initial of empty ones."""
        init = {} if x.size else {"initial": -np.inf if name == "max" else np.inf}
        f = lambda a: getattr(mod.numpy if mod is not np else np, name)(a, axis=ax, **init)  # noqa: E731
        return np.asarray(f(x) if mod is np else mod.jit(f)(x))
    J = rjax()
    with rt.options(**opts):
        for shape, ax in [((64, 256), 1), ((256, 64), 0), ((300, 6), 0), ((16, 40, 12), 1),
                          ((1 << 17,), 0), ((3, 70000), 1), ((4099, 64), 0), ((8, 0), 1)]:
            for nan in (False, True):
                x = data(shape, nan)
                for name in ("max", "min"):
                    got, want = fold(wjax, name, x, ax), fold(np, name, x, ax)
                    assert got.dtype == np.float32
                    np.testing.assert_array_equal(got, want)
                    ok = ~np.isnan(want)             # zeros keep their signs
                    assert (np.signbit(got)[ok] == np.signbit(want)[ok]).all(), (shape, ax)
                    if x.size:                       # argmax/argmin: the same keys, -0 = +0
                        arg = "arg" + name
                        np.testing.assert_array_equal(
                            np.asarray(wjax.jit(lambda a: getattr(jnp, arg)(a, axis=ax))(x)),
                            getattr(np, arg)(x, axis=ax))
                    if not nan:                      # JAX flushes subnormals: none here
                        xn = np.where(np.abs(x) < 1.2e-38, np.float32(0), x)
                        np.testing.assert_array_equal(fold(wjax, name, xn, ax),
                                                      fold(J, name, xn, ax))
        # only zeros: the sign decides
        z = np.array([[-0.0, 0.0, -0.0], [-0.0, -0.0, -0.0], [0.0, 0.0, 0.0]], np.float32)
        for name, want in (("max", [0.0, -0.0, 0.0]), ("min", [-0.0, -0.0, 0.0])):
            got = np.asarray(wjax.jit(lambda a, n=name: getattr(jnp, n)(a, axis=1))(z))
            assert list(np.signbit(got)) == list(np.signbit(np.array(want, np.float32))), name
        # softmax's row max (row-resident on GPU forms) of a row holding NaN or -inf only
        sm = np.asarray(wjax.jit(lambda a: wjax.nn.softmax(a, axis=-1))(
            np.array([[1.0, np.nan, 2.0], [-np.inf, 0.0, 1.0]], np.float32)))
        assert np.isnan(sm[0]).all() and np.allclose(sm[1], [0.0, 0.26894143, 0.7310586])
        import ml_dtypes
        for dt in (np.float16, ml_dtypes.bfloat16):
            h = data((33, 100), True).astype(dt)
            if dt == np.float16 and not has_f16():       # wgpu's GL backend: no float16
                f16_unsupported(lambda: wjax.jit(lambda a: jnp.max(a, axis=1))(h))
                continue
            for name in ("max", "min"):
                got = np.asarray(wjax.jit(lambda a, n=name: getattr(jnp, n)(a, axis=1))(h))
                assert got.dtype == dt
                np.testing.assert_array_equal(got.astype(np.float32),
                                              getattr(np, name)(h.astype(np.float32), axis=1))
    wjax.clear_caches()


@pytest.mark.parametrize("form", ["cpu", "strided", "rows"])
def test_sums_keep_infinities_and_nan(form):
    """A compensated sum's error term turns NaN once its partial sum is inf or NaN; the
    result then reads the partial sum alone (``wj_sum_result``): inf + finite values is inf,
    inf + -inf and NaN are NaN, overflow is inf, the sign kept -- as JAX has them, in every
    form (a row, a column of vec4s, a full fold in parts, a row-resident group), float32 and
    complex64."""
    rt = runtime.get()
    opts = {"cpu": dict(profiles.CPU_STRATEGIES), "strided": _strided_options(rt, False),
            "rows": dict(profiles.GPU_STRATEGIES)}[form]
    rows = [[np.inf, 1.0, 2.0], [1.0, -np.inf, 2.0], [np.inf, -np.inf, 0.0], [np.nan, np.inf, 1.0],
            [3e38, 3e38, 3e38], [-3e38, -3e38, -3e38], [0.1, 0.2, 0.3], [1.0, 2.0, -4.0]]
    x = np.repeat(np.array(rows, np.float32), 700, axis=1)       # 8 x 2100: long rows
    c = (x + 1j * x[::-1]).astype(np.complex64)
    J = rjax()
    with rt.options(**opts):
        for a in (x, x.T.copy(), c):
            ax = 1 if a.shape[0] == 8 else 0
            got = np.asarray(wjax.jit(lambda v: v.sum(ax))(a)).view(np.float32)
            want = np.asarray(J.jit(lambda v: v.sum(ax))(a)).view(np.float32)  # re, im apart
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            fin = np.isfinite(want)
            np.testing.assert_array_equal(got[~fin & ~np.isnan(want)],
                                          want[~fin & ~np.isnan(want)])
            np.testing.assert_allclose(got[fin], want[fin], rtol=1e-6)
        full = np.asarray(wjax.jit(jnp.sum)(np.repeat(np.float32([np.inf, 1.0]), 1 << 16)))
        assert full == np.inf
        sm = np.asarray(wjax.jit(lambda v: wjax.nn.softmax(v, axis=-1))(x[:, :1024]))
        want = np.asarray(J.jit(lambda v: J.nn.softmax(v, axis=-1))(x[:, :1024]))
        np.testing.assert_allclose(sm, want, rtol=1e-6, atol=1e-7)      # NaN where JAX has
        assert np.isnan(sm[[0, 2, 3]]).all() and not np.isnan(sm[[1, 4, 5, 6, 7]]).any()
    wjax.clear_caches()


def test_strided_forms_are_what_gpus_get():
    """What the GPU profiles' lowering emits: a tall-skinny column sum (2^20 x 64) and a
    full sum of 2^26 each split over many workgroups (two kernels, the first with hundreds of
    workgroups of 256 invocations); the full sum folds with subgroup shuffles where the
    profile has subgroups (``nvidia``) and in a workgroup tree where it has none
    (``webgpu-default``); softmax's row reductions run a workgroup per row."""
    from wjax._src.backend import execute
    from wjax._src.backend.target import Target

    def kernels(f, shape, profile, **options):
        closed = wjax.make_jaxpr(f)(wjax.ShapeDtypeStruct(shape, np.float32))
        return execute.Executable(closed.jaxpr,
                                  Target.for_profile(profile, **options)).plan.steps
    for profile, sg in (("nvidia", True), ("webgpu-default", False)):
        cols = kernels(lambda a: a.sum(0), (1 << 20, 64), profile)
        assert len(cols) == 2
        assert cols[0].grid[0] * cols[0].grid[1] >= 512 and "@workgroup_size(256)" in cols[0].wgsl
        assert "vec4<f32>" in cols[0].wgsl and "var<workgroup> sv" in cols[0].wgsl
        full = kernels(jnp.sum, (1 << 26,), profile)
        assert len(full) == 2 and full[0].grid[0] * full[0].grid[1] >= 512
        assert ("subgroupShuffleXor" in full[0].wgsl) == sg
        assert ("subgroupShuffleXor" in full[1].wgsl) == sg
        soft = kernels(lambda a: wjax.nn.softmax(a, axis=1), (8192, 4096), profile,
                       row_resident=0)
        assert len(soft) == 3 and soft[0].grid[0] * soft[0].grid[1] == 8192
        # (with row-resident groups: one kernel, tests/test_row_resident.py)
        soft = kernels(lambda a: wjax.nn.softmax(a, axis=1), (8192, 4096), profile)
        assert len(soft) == 1 and soft[0].grid[0] * soft[0].grid[1] == 8192


def test_gpu_elementwise_forms():
    """Under the GPU forms: the normalization's mean and std (a division and a square root
    of reductions, broadcast over 2^20 x 64) are computed once per column, by the epilogue of
    the reductions' second pass, rather than per element or in a kernel of their own (three
    kernels: the merged sums' two passes and the elementwise one), a cheap clamp (softmax's
    ``max(m, -inf)``) stays inlined, and flat vec4 kernels take 4 vec4s a grid apart per
    thread; the results agree with NumPy and JAX."""
    from wjax._src.backend import execute
    from wjax._src.backend.target import Target

    def norm(X):
        return (X - X.mean(0)) / X.std(0)

    def steps(f, shapes, profile="nvidia", **options):
        closed = wjax.make_jaxpr(f)(*[wjax.ShapeDtypeStruct(s, np.float32) for s in shapes])
        return execute.Executable(closed.jaxpr,
                                  Target.for_profile(profile, **options)).plan.steps
    st = steps(norm, [(1 << 20, 64)])
    assert len(st) == 3 and st[1].grid[0] < 64 and "wj_sqrt" in st[1].wgsl
    assert "wj_sqrt" not in st[2].wgsl
    assert len(steps(lambda a: wjax.nn.softmax(a, axis=1), [(8192, 4096)],
                     row_resident=0)) == 3
    assert len(steps(lambda a: wjax.nn.softmax(a, axis=1), [(8192, 4096)])) == 1
    (ax,) = steps(lambda a, b: a * 2 + b, [(1 << 22,), (1 << 22,)])
    assert "q * 262144u" in ax.wgsl and "@workgroup_size(256)" in ax.wgsl
    # ... where one vec4 a thread would exceed the threads in flight (4 x 2^18 vec4s); a
    # scan step's 64 x 256 takes 16 workgroups of one vec4 a thread, not 4 of four
    (ax,) = steps(lambda a, b: a * 2 + b, [(1 << 20,), (1 << 20,)])
    assert "var q" not in ax.wgsl and ax.grid[0] * ax.grid[1] == 1024
    (ax,) = steps(lambda a, b: a * 2 + b, [(64, 256), (64, 256)])
    assert "var q" not in ax.wgsl and ax.grid[0] * ax.grid[1] == 16
    rt = runtime.get()
    x = RS.randn(1 << 16, 12).astype(np.float32) * 3 + 1
    a, b = RS.randn(2, 1 << 15).astype(np.float32)
    with rt.options(**profiles.GPU_FORMS):
        got = wjax.jit(norm)(x)
        got2 = wjax.jit(lambda a, b: (a * 2 + b, wjax.nn.selu(a)))(a, b)
        got3 = wjax.jit(lambda x: wjax.nn.standardize(x, axis=0))(x)
    with rt.options(**profiles.GPU_FORMS, threads=1 << 18):     # one vec4 a thread
        got4 = wjax.jit(lambda a, b: (a * 2 + b, wjax.nn.selu(a)))(a, b)
    check(list(got4), list(got2), 0)
    xd = x.astype(np.float64)
    check([got], [(xd - xd.mean(0)) / xd.std(0)], 2e-5)
    check([got3], [(xd - xd.mean(0)) / np.sqrt(xd.var(0) + 1e-5)], 2e-5)
    check([got3], [rjax().nn.standardize(x, axis=0)], 2e-5)
    check([got2[0]], [a * 2 + b], 1e-6)
    J = rjax()
    check([got, got2[1]], [J.jit(norm)(x), J.nn.selu(a)], 2e-5)
    wjax.clear_caches()
