"""Float numerics that a driver's fast-math could break (``wjax/_src/backend/wgsl_math.py``).

Each function is checked at the hard points -- ±0, subnormals, tiny, huge, ±inf, NaN, exact
halves, integers above 2^23 -- and on dense random samples, in ulps of float32 against NumPy in
float64, and against real JAX for the special values (NaN, inf, the sign of zero).

What is guaranteed about subnormals: a driver may flush them to zero (XLA does, on CPU and GPU;
lavapipe does not).  So at a subnormal input the result at zero (of the same sign) is accepted
too, and a result that is subnormal may come back as zero.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax.scipy import special
from checks import f16_uniform_want, f16_unsupported, has_f16

F = np.float32
TINY = float(np.finfo(F).tiny)            # smallest normal, 2^-126

HARD = np.array([
    0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, TINY, -TINY, 1e-30, -1e-30, 1e-7, -1e-7, 1e-4, -1e-4,
    0.3, -0.3, 0.5, -0.5, 0.999, -0.999, 1.0, -1.0, 1.001, 1.5, -1.5, 2.5, -2.5, 3.5, 10.0, -10.0,
    88.7, -87.3, 89.0, -104.0, 100.0, 1e10, -1e10, 8388607.5, -8388607.5, 8388609.0, 16777216.0,
    1e30, -1e30, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan], F)


def _vec(f):
    return lambda x: np.vectorize(f, otypes=[np.float64])(x)


def _round_away(x):
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


# name: (wjax function, float64 reference, max ulps)
UNARY = {
    "exp": (jnp.exp, np.exp, 2),
    "exp2": (jnp.exp2, np.exp2, 4),
    "expm1": (jnp.expm1, np.expm1, 3),
    "log": (jnp.log, np.log, 2),
    "log2": (jnp.log2, np.log2, 3),
    "log10": (jnp.log10, np.log10, 3),
    "log1p": (jnp.log1p, np.log1p, 3),
    "sqrt": (jnp.sqrt, np.sqrt, 1),
    "cbrt": (jnp.cbrt, np.cbrt, 3),
    "sin": (jnp.sin, np.sin, 2),
    "cos": (jnp.cos, np.cos, 2),
    "tan": (jnp.tan, np.tan, 4),
    "arcsin": (jnp.arcsin, np.arcsin, 4),
    "arccos": (jnp.arccos, np.arccos, 4),
    "arctan": (jnp.arctan, np.arctan, 3),
    "sinh": (jnp.sinh, np.sinh, 4),
    "cosh": (jnp.cosh, np.cosh, 4),
    "tanh": (jnp.tanh, np.tanh, 3),
    "arcsinh": (jnp.arcsinh, np.arcsinh, 4),
    "arccosh": (jnp.arccosh, np.arccosh, 4),
    "arctanh": (jnp.arctanh, np.arctanh, 4),
    "erf": (special.erf, _vec(math.erf), 4),
    "erfc": (special.erfc, _vec(math.erfc), 8),
    "expit": (special.expit, lambda x: 1 / (1 + np.exp(-x)), 4),
    "floor": (jnp.floor, np.floor, 0),
    "ceil": (jnp.ceil, np.ceil, 0),
    "trunc": (jnp.trunc, np.trunc, 0),
    "round": (jnp.round, np.round, 0),
    "rint": (jnp.rint, np.rint, 0),
    "lax.round": (lambda x: lax.round(x), _round_away, 0),
    "sign": (jnp.sign, lambda x: np.where(x == 0, x, np.sign(x)), 0),  # XLA: sign(-0.) = -0.
    "abs": (jnp.abs, np.abs, 0),
}


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the float32 spacing at ref (subnormal spacing below TINY)."""
    r32 = np.abs(ref).astype(F)
    sp = np.maximum(np.spacing(r32).astype(np.float64), 2.0 ** -149)
    return np.abs(got.astype(np.float64) - ref) / sp


def _check(name, x, got, ref_fn, max_ulp):
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
        ref32 = ref.astype(F)
    bad = []
    for i in range(x.size):
        g, r, r32, xi = got[i], ref[i], ref32[i], x[i]
        if np.isnan(r32):
            ok = np.isnan(g)
        elif np.isinf(r32):
            ok = g == r32
        elif r32 == 0 or abs(r) < TINY:
            # exact zero, or a subnormal result: the sign must match, zero allowed for subnormals
            ok = (g == 0 or _ulps(np.array([g]), np.array([r]))[0] <= max(max_ulp, 1)) and (
                np.signbit(g) == np.signbit(r32) or r32 != 0)
        else:
            ok = _ulps(np.array([g]), np.array([r]))[0] <= max_ulp
        if not ok and xi != 0 and abs(xi) < TINY:        # a driver flushing the input to zero
            with np.errstate(all="ignore"):
                z = ref_fn(np.array([math.copysign(0.0, xi)]))[0]
            ok = (g == z or (np.isnan(g) and np.isnan(z))) and np.signbit(g) == np.signbit(z)
        if not ok:
            bad.append(f"{name}({xi!r}) = {g!r}, want {r32!r}")
    assert not bad, "\n".join(bad[:12])


@pytest.mark.parametrize("name", sorted(UNARY))
def test_hard_points_vs_numpy(name):
    fn, ref, max_ulp = UNARY[name]
    got = np.asarray(fn(jnp.asarray(HARD)))
    assert got.dtype == F
    _check(name, HARD, got, ref, max_ulp)


RANGES = {
    "exp": [(-87, 88), (-1, 1)],
    "exp2": [(-126, 127)],
    "expm1": [(-20, 20), (-1, 1), (-1e-3, 1e-3)],
    "log": [(1e-37, 1e38), (0.5, 2), (0.99, 1.01)],
    "log2": [(1e-30, 1e30), (0.5, 2)],
    "log10": [(1e-30, 1e30), (0.5, 2)],
    "log1p": [(-0.9, 1), (-1e-3, 1e-3), (0, 1e6)],
    "sin": [(-4, 4), (-1e4, 1e4), (-3e38, 3e38)],
    "cos": [(-4, 4), (-1e4, 1e4), (-3e38, 3e38)],
    "tan": [(-1.5, 1.5), (-1e4, 1e4), (-3e38, 3e38)],
    "sinh": [(-88, 88), (-1, 1)],
    "cosh": [(-88, 88)],
    "tanh": [(-10, 10), (-1e-2, 1e-2)],
    "arcsinh": [(-1e30, 1e30), (-2, 2), (-1e-3, 1e-3)],
    "arccosh": [(1, 1e30), (1, 3)],
    "arctanh": [(-1, 1), (-1e-3, 1e-3)],
    "cbrt": [(-1e30, 1e30), (-2, 2)],
    "erf": [(-5, 5)],
    "erfc": [(-5, 9)],
    "round": [(-100, 100)],
    "rint": [(-1e7, 1e7)],
}


def _sample(lo, hi, n, rng):
    if lo > 0 and hi / lo > 1e6:                       # log-uniform over many decades
        return np.exp(rng.uniform(np.log(lo), np.log(hi), n)).astype(F)
    if lo < 0 < hi and hi > 1e6:                       # both signs, log-uniform magnitudes
        m = np.exp(rng.uniform(np.log(1e-3), np.log(hi), n))
        return (m * rng.choice([-1, 1], n)).astype(F)
    return rng.uniform(lo, hi, n).astype(F)


@pytest.mark.parametrize("name", sorted(RANGES))
def test_dense_accuracy(name):
    fn, ref, max_ulp = UNARY[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for lo, hi in RANGES[name]:
        x = _sample(lo, hi, 20000, rng)
        got = np.asarray(fn(jnp.asarray(x))).astype(np.float64)
        with np.errstate(all="ignore"):
            r = ref(x.astype(np.float64))
        keep = np.isfinite(r) & (np.abs(r) >= TINY) & (np.abs(r) < 3.4e38)
        u = _ulps(got[keep], r[keep])
        worst = int(np.argmax(u)) if u.size else 0
        assert u.size == 0 or u.max() <= max_ulp, (
            f"{name} on [{lo}, {hi}]: {u.max():.1f} ulp at x={x[keep][worst]!r}")


def test_trigonometry_near_the_multiples_of_half_pi():
    """The floats on either side of k pi/2 (the hardest arguments to reduce: the result is the
    few bits left of a cancellation), k up to 10^5 and at powers of two up to 2^100."""
    k = np.concatenate([np.arange(1, 100001, dtype=np.float64), 2.0 ** np.arange(17, 101)])
    m = (k * np.pi / 2).astype(F)
    x = np.concatenate([m, np.nextafter(m, F(0)), np.nextafter(m, F(np.inf))])
    for name in ("sin", "cos", "tan"):
        fn, ref, max_ulp = UNARY[name]
        got = np.asarray(fn(jnp.asarray(x))).astype(np.float64)
        u = _ulps(got, ref(x.astype(np.float64)))
        assert u.max() <= max_ulp, f"{name}: {u.max():.2f} ulp at x={x[np.argmax(u)]!r}"


def test_small_angles_are_exact():
    """sin x and tan x round to x below 2^-12 and cos x to 1 (a driver's sin(1e-7) was 0)."""
    x = np.array([1e-7, -1e-7, 2.0 ** -13, 1e-20, -1e-30, TINY, -0.0, 0.0], F)
    for fn in (jnp.sin, jnp.tan):
        got = np.asarray(fn(jnp.asarray(x)))
        assert np.array_equal(got, x) and np.array_equal(np.signbit(got), np.signbit(x))
    assert np.all(np.asarray(jnp.cos(jnp.asarray(x))) == 1.0)
    got = np.asarray(jnp.sin(jnp.asarray(np.array([0.5, 100.0], F))))
    assert got.tolist() == np.sin(np.array([0.5, 100.0])).astype(F).tolist()


# Where an NVIDIA H100 gave a third value (neither IEEE nor at the flushed input), with the
# float compare or product that misled it: its `x == 0.0` is true at 1e-45, so returning x gave
# sign(1e-45) = 1e-45, cbrt(1e-40) = 1e-40, erf(1e-40) = 1e-40; its `-1e-45 < 0` is false while
# its floor sees the bits, so trunc(-1e-45) = floor(-1e-45) = -1 (modf the same); a 2.5 ulp
# quotient just below the smallest normal is flushed, so tanh and arcsin of 2^-126 were 0.
H100_POINTS = [   # (name, function, x, IEEE answer, answer at the flushed input or None)
    ("sign", jnp.sign, 1e-45, 1.0, 0.0),
    ("sign", jnp.sign, -1e-45, -1.0, -0.0),
    ("sign", jnp.sign, 1e-40, 1.0, 0.0),
    ("cbrt", jnp.cbrt, 1e-40, float(np.cbrt(np.float64(F(1e-40)))), 0.0),
    ("cbrt", jnp.cbrt, -1e-40, float(np.cbrt(np.float64(F(-1e-40)))), -0.0),
    ("cbrt", jnp.cbrt, 1e-45, float(np.cbrt(np.float64(F(1e-45)))), 0.0),
    ("erf", special.erf, 1e-40, math.erf(float(F(1e-40))), 0.0),
    ("erf", special.erf, -1e-40, math.erf(float(F(-1e-40))), -0.0),
    ("trunc", jnp.trunc, -1e-45, -0.0, -0.0),
    ("trunc", jnp.trunc, 1e-45, 0.0, 0.0),
    ("modf.whole", lambda x: jnp.modf(x)[1], -1e-45, -0.0, -0.0),
    ("modf.frac", lambda x: jnp.modf(x)[0], -1e-45, float(F(-1e-45)), 0.0),  # JAX: -0 - -0
    ("tanh", jnp.tanh, TINY, TINY, None),
    ("tanh", jnp.tanh, -TINY, -TINY, None),
    ("arcsin", jnp.arcsin, TINY, TINY, None),
    ("arcsin", jnp.arcsin, -TINY, -TINY, None),
]


@pytest.mark.parametrize("name,fn,x,ieee,flushed", H100_POINTS,
                         ids=[f"{p[0]}({p[2]:g})" for p in H100_POINTS])
def test_subnormal_inputs_give_the_ieee_or_the_flushed_answer(name, fn, x, ieee, flushed):
    """At a subnormal input a result is the IEEE one (lavapipe keeps subnormals) or the one at
    the flushed input, ±0 (XLA, and NVIDIA's arithmetic, flush) -- never a third value; a
    normal input (2^-126) gets the normal answer.  WJAX_STRICT_DRIVER=1 runs these as the H100
    did (the values in the comment above)."""
    g = float(np.asarray(fn(jnp.asarray(np.array([x], F))))[0])
    spacing = 2.0 ** -149 if abs(ieee) < TINY else float(np.spacing(F(abs(ieee))))
    is_ieee = abs(g - ieee) <= spacing and math.copysign(1, g) == math.copysign(1, ieee)
    is_flushed = flushed is not None and g == flushed and (
        math.copysign(1, g) == math.copysign(1, flushed))
    assert is_ieee or is_flushed, f"{name}({x!r}) = {g!r}: want {ieee!r}" + (
        "" if flushed is None else f" or {flushed!r}")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_specials_vs_jax(name):
    """NaN, inf and the sign of zero as JAX gives them, at the normal (non-subnormal) points."""
    rjax = pytest.importorskip("jax")
    jfn = {"erf": rjax.scipy.special.erf, "erfc": rjax.scipy.special.erfc,
           "expit": rjax.scipy.special.expit, "lax.round": lambda x: rjax.lax.round(x)}.get(
        name, getattr(rjax.numpy, name, None))
    x = HARD[~((HARD != 0) & (np.abs(HARD) < 1e-37))]   # XLA flushes near the subnormals
    want = np.asarray(jfn(x))
    got = np.asarray(UNARY[name][0](jnp.asarray(x)))
    for xi, g, w in zip(x, got, want):
        if (abs(w) < TINY and w != 0) or (abs(g) < TINY and g != 0):
            continue                                 # JAX flushes subnormal results
        assert np.isnan(g) == np.isnan(w), (name, xi, g, w)
        assert np.isinf(g) == np.isinf(w) and (not np.isinf(w) or g == w), (name, xi, g, w)
        if w == 0:
            assert g == 0 and np.signbit(g) == np.signbit(w), (name, xi, g, w)
        elif np.isfinite(w):
            np.testing.assert_allclose(g, w, rtol=2e-5, err_msg=f"{name}({xi!r})")


def test_rounding_methods():
    x = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, -0.4, 0.49999997, 8388607.5, 1e30], F)
    np.testing.assert_array_equal(np.asarray(jnp.round(x)), np.round(x))
    even = np.asarray(lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN))
    np.testing.assert_array_equal(even, np.round(x))
    away = np.asarray(lax.round(x))
    np.testing.assert_array_equal(away, _round_away(x.astype(np.float64)).astype(F))
    assert np.signbit(np.asarray(jnp.round(F(-0.4))))
    assert "rounding_method=1" in str(wjax.make_jaxpr(jnp.round)(x))


def test_float16_rounds_after_every_op():
    """f16 math is f32 rounded to f16 after each operation (XLA's, and NumPy's, rule): a product
    and a sum are not fused into one rounding, on any driver."""
    if not has_f16():                  # wgpu's GL backend: float16 is a clean TypeError
        return f16_unsupported(lambda: jnp.ones(3, jnp.float16))
    rng = np.random.default_rng(0)
    a, b, c = (rng.uniform(-3, 3, 4096).astype(np.float16) for _ in range(3))
    want = a * b + c                                   # NumPy: two roundings
    f = wjax.jit(lambda a, b, c: a * b + c)
    np.testing.assert_array_equal(np.asarray(f(a, b, c)), want)
    np.testing.assert_array_equal(np.asarray(jnp.asarray(a) * b + c), want)
    from wjax._src.prims.random import fma_p

    np.testing.assert_array_equal(
        np.asarray(fma_p.bind(jnp.asarray(a), jnp.asarray(b), jnp.asarray(c))), want
    )


def test_uniform_float16_bits_vs_jax():
    rjax = pytest.importorskip("jax")
    if not has_f16():
        return f16_unsupported(lambda: wjax.random.uniform(wjax.random.key(0), (3,), jnp.float16))
    for seed in (0, 3, 11):
        got = wjax.random.uniform(wjax.random.key(seed), (20000,), jnp.float16, -2, 3)
        want = f16_uniform_want(rjax, rjax.random.key(seed), (20000,), -2, 3)
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("shape,axis", [((10**6,), None), ((10**5, 4), 0), ((4, 10**5), 1),
                                        ((50, 2000, 4), 1)])
def test_float_sums_are_compensated(shape, axis):
    # TwoSum accumulation in every reduction form (rows, columns, split in parts, eager and
    # jit): the correctly rounded sum, as XLA's (jnp.sum(jnp.ones(10**6) * 0.1) == 100000.0)
    want = np.float32(np.full(shape, np.float32(0.1)).astype(np.float64).sum(axis=axis))
    x = jnp.ones(shape) * 0.1
    np.testing.assert_array_equal(np.asarray(jnp.sum(x, axis=axis)), want)
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.sum(a, axis=axis))(x)), want)
    if shape == (10**6,):
        assert float(jnp.sum(x)) == 100000.0
        rjax = pytest.importorskip("jax")
        assert float(rjax.numpy.sum(rjax.numpy.ones(10**6) * 0.1)) == 100000.0


def test_select_of_a_comparison_keeps_nans():
    """``where(a > b, a, b)`` is a select, not a max: a NaN operand picks the branch the
    comparison (false with a NaN) gives.  wgpu's GL path folded it into a NaN-dropping max
    (docs/DESIGN.md "Driver findings"); the float comparisons read an opaque operand since.
    The scalar (odd length) and vec4 (multiple of 4) kernel forms both, against JAX."""
    jax = pytest.importorskip("jax")
    a = np.array([1, np.nan, 3, np.nan, -2, 5, 0.0, -0.0], F)
    b = np.array([np.nan, 1, 2, np.nan, 7, np.inf, -0.0, 0.0], F)
    for n in (7, 8):
        x, y = a[:n], b[:n]
        for op in ("greater", "less", "greater_equal", "less_equal"):
            def f(m, x, y, op=op):
                c = getattr(m.numpy, op)(x, y)
                return m.numpy.where(c, x, y), m.numpy.where(c, y * 2, x * 2)
            got = wjax.jit(lambda x, y: f(wjax, x, y))(x, y)
            want = jax.jit(lambda x, y: f(jax, x, y))(x, y)
            for g, w in zip(got, want):
                assert np.array_equal(np.asarray(g), np.asarray(w), equal_nan=True), (op, n, g, w)


def _floats_between(lo, hi, stride):
    """Every stride-th float32 of [lo, hi] (by the bits, both signs), with lo and hi."""
    out = [np.array([lo, hi], F)]
    for a, b, s in ((max(lo, 0.0), hi, 1), (max(-hi, 0.0), -lo, -1)):
        if a <= b:
            ia, ib = np.array([a, b], F).view(np.int32)
            out.append(s * np.arange(ia, ib + 1, stride, dtype=np.int32).view(F))
    return np.concatenate(out)


# name: (function, float64 reference, argument range, max ulp on lavapipe and as the strict
# driver, measured at a stride of 401: 1.26, 1.59, 1.21).  docs/DESIGN.md "Driver-proof math".
EXP_FAMILY = {
    "exp": (jnp.exp, np.exp, (-104.0, 89.0), 1.4),
    "expm1": (jnp.expm1, np.expm1, (-104.0, 89.0), 1.75),
    "exp2": (jnp.exp2, np.exp2, (-152.0, 129.0), 1.4),
}


@pytest.mark.parametrize("name", sorted(EXP_FAMILY))
def test_exp_family_every_1009th_float(name):
    """The exp family's error bound over its whole range (every 1009th float32, 2.2M arguments:
    the reduced argument's polynomial is wjax's own degree-6 minimax fit), the overflow and
    underflow ends to the last float (a subnormal result rounded once, or 0 where the driver
    flushes it), and the arguments where expm1 returns x (below 2^-25)."""
    fn, ref_fn, (lo, hi), max_ulp = EXP_FAMILY[name]
    edges = {"exp": [88.72283, 88.72284, -87.33654, -87.33655, -103.27893, -103.97207,
                     -103.97208, -103.97209, -103.9721],
             "expm1": [88.72283, 88.72284, 2.0 ** -25, -(2.0 ** -25), 3e-8, -3e-8, -87.0,
                       -17.0, 17.0, 0.34657356, 0.34657362],
             "exp2": [128.0, 127.99999, -126.0, -126.00001, -149.0, -149.5, -150.0,
                      -149.99998, -150.00002]}[name]
    x = np.concatenate([_floats_between(lo, hi, 1009), np.array(edges, F)])
    got = np.asarray(fn(jnp.asarray(x))).astype(np.float64)
    ref = ref_fn(x.astype(np.float64))
    with np.errstate(over="ignore"):
        r32 = ref.astype(F)
    big = np.isinf(r32)
    assert np.all(got[big] == np.inf), f"{name}({x[big & (got != np.inf)][:4]}) not inf"
    normal = ~big & (np.abs(ref) >= TINY)
    u = _ulps(got[normal], ref[normal])
    worst = int(np.argmax(u))
    assert u.max() <= max_ulp, f"{name}: {u.max():.3f} ulp at x={x[normal][worst]!r}"
    sub = ~big & ~normal                     # exp and exp2 below the smallest normal
    us = _ulps(got[sub], ref[sub])
    assert np.all((got[sub] == 0) | (us <= 1)), (
        f"{name}({x[sub][np.argmax(us)]!r}) = {got[sub][np.argmax(us)]!r}: {us.max():.2f} ulp")
    assert np.all(np.signbit(got[sub]) == np.signbit(ref[sub]))
