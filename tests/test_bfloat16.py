"""bfloat16 end to end, against real JAX on the same programs.

A bf16 value lives on the device as a bf16-exact float32 (one per 32-bit lane) and every
operation rounds its float32 result to bf16, to nearest even, as XLA does; so casts, rounding,
arithmetic and random draws have JAX's exact bits, and transcendental functions, reductions and
products agree within bf16's precision (XLA's own roundings of intermediates differ by an ulp
in places).  Few compiles: most checks run many operations in one ``jit``."""
import pathlib
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax._src.backend import runtime

jax = pytest.importorskip("jax")
import jax.numpy as rjnp  # noqa: E402

BF = ml_dtypes.bfloat16
F16_OK = runtime.get().has_f16   # float16 operands only where the adapter has f16
RTOL = 1e-2     # bf16 has 8 significant bits: an ulp is 2**-8 .. 2**-7 relative


def bits(x):
    """The 16-bit patterns of a bf16 array (NaNs compared as one pattern)."""
    a = np.asarray(x)
    assert a.dtype == BF, a.dtype
    b = a.view(np.uint16).copy()
    b[np.isnan(a.astype(np.float32))] = 0x7FC0
    return b


def assert_exact(got, want):
    np.testing.assert_array_equal(bits(got), bits(want))


def assert_close(got, want, rtol=RTOL, atol=0.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=rtol,
                               atol=atol)


def test_dtype_objects_and_finfo_as_jax():
    assert np.dtype(jnp.bfloat16) == np.dtype(BF) == jnp.dtype("bfloat16")
    assert wjax.dtypes.bfloat16 is BF and jnp.bfloat16 == BF
    assert repr(jnp.bfloat16) == "<class 'wjax.numpy.bfloat16'>"
    assert jnp.issubdtype(jnp.bfloat16, jnp.floating) and not jnp.issubdtype(BF, jnp.integer)
    ours, theirs = jnp.finfo(jnp.bfloat16), rjnp.finfo(rjnp.bfloat16)
    for f in ("bits", "eps", "epsneg", "max", "min", "tiny", "smallest_subnormal", "nmant",
              "nexp", "maxexp", "minexp", "resolution", "dtype"):
        assert getattr(ours, f) == getattr(theirs, f), f
    s = jnp.bfloat16(3.3)   # a scalar type makes a 0-d array, as in JAX
    assert isinstance(s, wjax.Array) and s.dtype == BF and repr(s) == repr(rjnp.bfloat16(3.3))


def test_promotion_lattice_as_jax():
    names = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "float16",
             "float32", "complex64", "bfloat16", int, float, complex]   # dtypes: no device
    for a in names:
        assert jnp.promote_types("bfloat16", a) == rjnp.promote_types("bfloat16", a), a
        assert jnp.promote_types(a, jnp.bfloat16) == rjnp.promote_types(a, rjnp.bfloat16), a
    # binary ops: result dtype, weak type and values (all exact here)
    operands = {
        "bf16": lambda m: m.asarray([1.5, -2.0, 3.25], m.bfloat16),
        "f16": lambda m: m.asarray([1.5, 2.0, 0.1], m.float16),
        "f32": lambda m: m.asarray([1.5, 2.0, 0.1], m.float32),
        "i32": lambda m: m.asarray([1, 2, 300]), "u8": lambda m: m.asarray([1, 2, 3], m.uint8),
        "bool": lambda m: m.asarray([True, False, True]),
        "c64": lambda m: m.asarray([1 + 1j, 2, 3j], m.complex64),
        "int": lambda m: 3, "float": lambda m: 0.1, "complex": lambda m: 1j,
        "weak f32": lambda m: m.asarray(2.5) * 1,
    }
    if not F16_OK:
        del operands["f16"]
    for name, make in operands.items():
        for x, y in ((operands["bf16"], make), (make, operands["bf16"])):
            want = rjnp.multiply(x(rjnp), y(rjnp))
            got = jnp.multiply(x(jnp), y(jnp))
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), name
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=name)


def test_creation_conversion_and_printing_as_jax():
    vals = [1.0, 2.5, 3.14159, -0.1, 100.3, 1e-3, 65504.0, -0.0]
    cases = [
        lambda m: m.asarray(vals, m.bfloat16),
        lambda m: m.asarray(np.asarray(vals, np.float32)).astype(m.bfloat16),
        lambda m: m.array(np.asarray(vals, BF)),
        lambda m: m.zeros((2, 2), m.bfloat16), lambda m: m.full((3,), 0.1, m.bfloat16),
        lambda m: m.arange(0, 3, 0.3, dtype=m.bfloat16),
        lambda m: m.linspace(0, 1, 7, dtype=m.bfloat16),
        lambda m: m.linspace(0, 100, 7, dtype=m.bfloat16),
        lambda m: m.linspace(m.bfloat16(0.1), m.bfloat16(2.7), 5),   # dtype from the endpoints
        lambda m: m.asarray([[1.0, 2e10], [-3.5e-5, 7.0]], m.bfloat16),
    ]
    for make in cases:
        got, want = make(jnp), make(rjnp)
        host = np.asarray(got)
        assert host.dtype == BF and got.dtype == BF
        assert_exact(host, want)
        assert repr(got) == repr(want) and str(got) == str(want)
    x = jnp.asarray(vals, jnp.bfloat16)
    assert x.tolist() == rjnp.asarray(vals, rjnp.bfloat16).tolist()
    assert float(x[2]) == float(np.asarray(vals[2], BF))
    with pytest.raises(TypeError, match="float8_e5m2"):   # other narrow formats: no storage
        jnp.zeros(2, ml_dtypes.float8_e5m2)


def _rounding_inputs():
    """float32 values at bf16 ties (even and odd), just off them, NaN/inf, overflow to inf,
    signed zeros and integers past bf16's 8 significant bits."""
    base = np.array([1.0, 1.0078125, 3.0, -5.5, 1e-3, 3.3895314e38, 1e-20, 7.0], np.float32)
    u = base.view(np.uint32)
    pats = np.concatenate([u | 0x8000, (u | 0x8000) + 1, (u | 0x8000) - 1, u | 0x7FFF,
                           np.array([0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00000, 0x7F800001, 0xFFC12345,
                                     0x7F800000, 0xFF800000, 0x80000000, 0], np.uint32)])
    return pats.astype(np.uint32).view(np.float32)


def test_casts_round_to_nearest_even_exactly_as_xla():
    f = _rounding_inputs()
    ints = np.array([2**24 + 2**16 + 2**15 + 1, 2**24 + 2**16 + 2**15, 2**31 - 1, -2**31, 257,
                     -255, 0, 65535], np.int32)
    halves = np.array([65504.0, 1e-4, -3.140625, 0.1], np.float16)
    if not F16_OK:
        halves = halves.astype(np.float32)   # (the float16 legs need shader-f16)

    def prog(m, fv, iv, hv):
        b = fv.astype(m.bfloat16)
        return {"f32": b, "i32": iv.astype(m.bfloat16), "f16": hv.astype(m.bfloat16),
                "to_f16": b.astype(m.float16 if F16_OK else m.float32),
                "to_i32": m.where(m.isfinite(b), b, 0)
                .astype(m.int32), "to_u8": m.abs(iv.astype(m.bfloat16)).astype(m.uint8),
                "back": b.astype(m.float32),
                "bits": lax(m).bitcast_convert_type(b, m.uint16),
                "from_bits": lax(m).bitcast_convert_type(
                    lax(m).bitcast_convert_type(b, m.int16) + 1, m.bfloat16)}

    want = jax.jit(lambda *a: prog(rjnp, *a))(f, ints, halves)
    args = (jnp.asarray(f), jnp.asarray(ints), jnp.asarray(halves))
    for got in (wjax.jit(lambda *a: prog(jnp, *a))(*args), prog(jnp, *args)):   # jit and eager
        for k in want:
            w, g = np.asarray(want[k]), np.asarray(got[k])
            assert g.dtype == w.dtype, k
            if w.dtype == BF:
                assert_exact(g, w)
            else:
                np.testing.assert_array_equal(g, w, err_msg=k)


def test_elementwise_ops_as_jax():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=40) * 3, [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.5,
                                                  np.inf, -np.inf, np.nan]]).astype(BF)
    y = np.concatenate([rng.normal(size=40) * 2, [1.0, 2.0, -0.0, 3.0, np.inf, 2.0, 2.0,
                                                  1.0, np.nan, 1.0]]).astype(BF)
    # exact in bf16 (one rounding of a correctly rounded float32 result, as XLA)
    exact = {
        "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b,
        "mul": lambda m, a, b: a * b, "div": lambda m, a, b: a / b,
        "fma-like": lambda m, a, b: a * b + 1.5, "sqrt": lambda m, a, b: m.sqrt(m.abs(a)),
        "max": lambda m, a, b: m.maximum(a, b), "floor": lambda m, a, b: m.floor(a),
        "round": lambda m, a, b: m.round(a), "sign": lambda m, a, b: m.sign(a),
        "exp": lambda m, a, b: m.exp(a), "exp2": lambda m, a, b: m.exp2(a),
        "log10": lambda m, a, b: m.log10(a), "sigmoid": lambda m, a, b: jax_nn(m).sigmoid(a),
        "sin": lambda m, a, b: m.sin(a), "tanh": lambda m, a, b: m.tanh(a),
        "square": lambda m, a, b: m.square(a), "weak": lambda m, a, b: a * 0.1 + 2,
        "where": lambda m, a, b: m.where(a > 0.5, a, b), "clip": lambda m, a, b: m.clip(a, -1, 2),
        "less": lambda m, a, b: a < b, "isnan": lambda m, a, b: m.isnan(a / b),
        "logaddexp2": lambda m, a, b: m.logaddexp2(a, b),
        "frexp": lambda m, a, b: m.frexp(a)[0], "frexp_e": lambda m, a, b: m.frexp(a)[1],
        "ldexp": lambda m, a, b: m.ldexp(a, m.arange(a.size) % 7 - 3),
        "nextafter": lambda m, a, b: m.nextafter(a, b), "spacing": lambda m, a, b: m.spacing(a),
    }
    # within an ulp: XLA expands these into several bf16 operations of its own
    close = {
        "arcsinh": lambda m, a, b: m.arcsinh(a), "arctan2": lambda m, a, b: m.arctan2(a, b),
        "pow": lambda m, a, b: m.abs(a) ** 1.7, "erf": lambda m, a, b: jax_scipy(m).erf(a),
        "gelu": lambda m, a, b: jax_nn(m).gelu(a), "log1p": lambda m, a, b: m.log1p(m.abs(a)),
    }
    ops = {**exact, **close}
    want = jax.jit(lambda a, b: {k: f(rjnp, a, b) for k, f in ops.items()})(x, y)
    got = wjax.jit(lambda a, b: {k: f(jnp, a, b) for k, f in ops.items()})(x, y)
    for k in ops:
        w, g = np.asarray(want[k]), np.asarray(got[k])
        assert g.dtype == w.dtype, k
        if w.dtype != BF:
            np.testing.assert_array_equal(g, w, err_msg=k)
        elif k in exact:
            assert_exact(g, w)
        else:
            ok = np.isfinite(w.astype(np.float32))
            assert_exact(g[~ok], w[~ok])
            assert_close(g[ok], w[ok], atol=1e-30)
    assert_exact(jnp.sin(jnp.asarray(x)) * 3, np.asarray(want["sin"]) * BF(3))   # eager


def lax(m):
    return jax.lax if m is rjnp else wjax.lax


def jax_nn(m):
    return jax.nn if m is rjnp else wjax.nn


def jax_scipy(m):
    return jax.scipy.special if m is rjnp else wjax.scipy.special


def test_reductions_products_and_indexing_as_jax():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(6, 40)).astype(BF)
    b = rng.normal(size=(40, 5)).astype(BF)
    v = (rng.normal(size=300) * 10 + 3).astype(BF)

    def prog(m, a, b, v):
        nn = jax_nn(m)
        return {
            "sum": m.sum(v), "sum0": m.sum(a, 0), "mean": m.mean(a, 1), "var": m.var(v),
            "std": m.std(a, axis=1), "prod": m.prod(a[:, :5], 1), "max": m.max(a, 1),
            "argmax": m.argmax(a, 1), "sum_f32": m.sum(a, dtype=m.float32),
            "cumsum": m.cumsum(v[:20]), "matmul": a @ b, "dot": m.dot(v, v),
            "matmul_f32": m.matmul(a, b, preferred_element_type=m.float32),
            "einsum": m.einsum("ij,jk->ik", a, b), "softmax": nn.softmax(a, axis=1),
            "logsumexp": nn.logsumexp(a, axis=1), "sort": m.sort(v), "argsort": m.argsort(v),
            "at_add": v.at[::3].add(1.5), "at_set": v.at[m.array([1, 5])].set(-0.1),
            "at_mul": v.at[2].mul(3), "gather": a[m.array([0, 2, 5]), 3:7],
            "concat": m.concatenate([v[:3], a[0, :3]]), "T": a.T[:2],
        }

    want = jax.jit(lambda *x: prog(rjnp, *x))(a, b, v)
    got = wjax.jit(lambda *x: prog(jnp, *x))(jnp.asarray(a), jnp.asarray(b), jnp.asarray(v))
    for k in want:
        w, g = np.asarray(want[k]), np.asarray(got[k])
        assert (g.dtype, g.shape) == (w.dtype, w.shape), k
        if k in ("at_add", "at_set", "at_mul", "gather", "concat", "T", "sort", "max",
                 "argmax", "sum0"):
            np.testing.assert_array_equal(g, w, err_msg=k)
        elif k == "cumsum":   # XLA sums windows in bf16 steps; wjax accumulates in float32
            assert_close(g, w, atol=0.25)
        elif k != "argsort":  # (ties of equal bf16 values may order either way)
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=RTOL,
                                       atol=1e-2, err_msg=k)
    np.testing.assert_array_equal(v[np.asarray(got["argsort"])], np.asarray(got["sort"]))
    assert np.asarray(got["matmul_f32"]).dtype == np.float32


def test_random_draws_have_jax_bits():
    for draw in (lambda r, k: r.normal(k, (64,), BF),
                 lambda r, k: r.uniform(k, (64,), BF, -3.7, 5.1),
                 lambda r, k: r.uniform(k, (3, 5), BF),
                 lambda r, k: r.gumbel(k, (64,), BF)):
        want = draw(jax.random, jax.random.key(7))
        got = draw(wjax.random, wjax.random.key(7))
        assert_exact(got, want)


def test_grad_vmap_jit_through_bf16():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(4, 8)).astype(BF)
    w = (rng.normal(size=(8, 3)) * 0.5).astype(BF)

    def loss(m, w, a):
        h = jax_nn(m).relu(a @ w)
        return m.mean(m.sin(h) * h + 0.1 * w.sum())

    def prog(m, api):
        return {"grad": api.grad(lambda w: loss(m, w, a))(w),
                "grad_a": api.grad(lambda a: loss(m, w, a))(a),
                "vmap": api.vmap(lambda r: m.tanh(r @ w))(a),
                "vjp": api.vjp(lambda t: m.exp(t) * 2, a[0])[1](m.ones(8, m.bfloat16))[0]}

    want = prog(rjnp, jax)
    got = prog(jnp, wjax)
    got_jit = wjax.jit(lambda: prog(jnp, wjax))()
    for k in want:
        for g in (got[k], got_jit[k]):
            assert g.dtype == BF, k   # cotangents stay bf16, as in JAX
            assert_close(g, want[k], atol=2e-2)


def test_every_kernel_family_stores_bf16_exact_values():
    """The device invariant: a bf16 buffer holds float32 words whose low 16 bits are zero (each
    kernel rounds what it stores), so a consumer never sees more precision than bf16."""
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.normal(size=(6, 40)), BF)
    b = jnp.asarray(rng.normal(size=(40, 5)), BF)
    v = jnp.asarray(rng.normal(size=200) * 5, BF)
    m = jnp.asarray(np.eye(4) * 2.3 + 0.1, BF)
    big_a = rng.normal(size=(32, 64)).astype(BF)
    big_b = rng.normal(size=(64, 36)).astype(BF)
    lax_ = wjax.lax
    outs = {
        "reduce_sum": lax_.reduce_sum(a, (1,)), "reduce_prod": lax_.reduce_prod(a[:, :4], (1,)),
        "matmul": a @ b, "cumsum": jnp.cumsum(v), "cumlogsumexp": lax_.cumlogsumexp(v),
        # the register-blocked kernel (M N K >= 32768)
        "matmul_blocked": jnp.asarray(big_a) @ jnp.asarray(big_b),
        "sort": jnp.sort(v), "scatter_add": v.at[jnp.array([1, 1, 2])].add(BF(0.1)),
        "scatter_mul": v.at[jnp.array([1, 1, 2])].multiply(BF(1.1)),
        "conv": lax_.conv(a.reshape(1, 1, 6, 40), jnp.ones((2, 1, 3, 3), BF) * 0.3, (1, 1),
                          "SAME"),
        "window": lax_.reduce_window(a, BF(0), lax_.add, (2, 2), (1, 1), "VALID"),
        "scan": lax_.scan(lambda c, x: (c * 0.9 + x, (c * x).sum()), jnp.zeros(4, BF),
                          a[:, :4])[1],
        "fori": lax_.fori_loop(0, 5, lambda i, c: c * 0.7 + c.sum() * 0.01, a[0]),
        "solve": jnp.linalg.solve(m, jnp.ones(4, BF) * 1.3),
        "cholesky": jnp.linalg.cholesky(m),
    }
    rt = runtime.get()
    for k, x in outs.items():
        assert x.dtype == BF, k
        words = np.frombuffer(rt.read(x.buffer, x.size * 4), np.uint32, count=x.size)
        assert not (words & 0xFFFF).any(), k
    assert_exact(outs["matmul_blocked"], jax.jit(lambda x, y: x @ y)(big_a, big_b))
    want = np.linalg.solve(np.asarray(m, np.float64), np.full(4, 1.3))
    np.testing.assert_allclose(np.asarray(outs["solve"], np.float32), want, rtol=RTOL)


def test_optax_adam_on_bf16_params_matches_jax():
    """tests/programs/optax_bf16.py under real JAX and under wjax (``python -m wjax run``):
    the same losses, gradients, parameters and state dtypes, within bf16's precision."""
    path = str(pathlib.Path(__file__).parent / "programs" / "optax_bf16.py")

    def run(args):
        p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout.split()

    ours, theirs = run(["-m", "wjax", "run", path]), run([path])
    assert len(ours) == len(theirs)
    num = 0
    for a, b in zip(ours, theirs):
        a, b = a.strip("[],'"), b.strip("[],'")
        try:
            fa, fb = float(a), float(b)
        except ValueError:
            assert a == b, (ours, theirs)
            continue
        num += 1
        np.testing.assert_allclose(fa, fb, rtol=2e-2, atol=2e-3, err_msg=f"{ours} vs {theirs}")
    assert num > 30 and "bfloat16" in theirs


def test_bad_uses_raise_jax_errors():
    cases = {
        "bitwise": (lambda m, jn: lax(jn).bitwise_and(jn.ones(2, BF), jn.ones(2, BF)),
                    "bfloat16"),
        "float index": (lambda m, jn: jn.arange(3)[np.array([1.0], BF)], "integer or boolean"),
        "cond pred": (lambda m, jn: lax(jn).cond(jn.asarray(0.5, BF), lambda: 1, lambda: 2),
                      "Pred type"),
        "shift": (lambda m, jn: jn.left_shift(jn.ones(2, BF), 1), "bfloat16"),
    }
    for name, (f, words) in cases.items():
        with pytest.raises(TypeError):
            f(jax, rjnp)
        with pytest.raises(TypeError, match=words):
            f(wjax, jnp)
