"""The strict-driver emulation (``WJAX_STRICT_DRIVER=1``, ``backend/strict_driver.py``) does
what the loosest conformant driver may do, and nothing else.

A kernel rewritten by ``strict_driver.rewrite`` is dispatched here on the local driver (the
runtime's own rewrite is off in this module, whatever the setting): its results are compared
with float64 references for what the WGSL spec allows -- division 2.5 ulp, ``inverseSqrt``
2 ulp, ``sqrt`` inherited from ``1.0 / inverseSqrt(x)`` -- and with the NVIDIA behaviour the
emulation copies (subnormals flushed in arithmetic and comparisons, not in moves, selects or
bit casts; products contracted into one rounding).  scripts/test.sh runs the kernel-heavy
tests with the setting on, as a third driver.
"""
from __future__ import annotations

import numpy as np
import pytest

from wjax._src.backend import runtime
from wjax._src.backend import strict_driver as SD


@pytest.fixture(autouse=True)
def _local_driver(monkeypatch):
    """The kernels here are rewritten (or not) by the tests themselves: under
    WJAX_STRICT_DRIVER=1 the runtime would rewrite them a second time."""
    monkeypatch.setattr(runtime.get(), "strict_driver", False)


_HEAD = """@group(0) @binding(0) var<storage, read> xs: array<f32>;
@group(0) @binding(1) var<storage, read> ys: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let i = g.x;
  if (i >= arrayLength(&out)) { return; }
  let x = xs[i];
  let y = ys[i];
"""


def run(body: str, x, y, strict=True) -> np.ndarray:
    """``out[i]`` of the kernel ``body`` (reading ``x``, ``y``) over float32 arrays."""
    src = _HEAD + body + "\n}\n"
    if strict:
        src = SD.rewrite(src)
    r = runtime.get()
    x = np.ascontiguousarray(x, np.float32)
    y = np.ascontiguousarray(y, np.float32)
    bx, by, bo = r.upload(x), r.upload(y), r.alloc(x.nbytes)
    r.dispatch(src, [bx, by, bo], ((x.size + 63) // 64, 1, 1))
    return np.frombuffer(r.read(bo, x.nbytes), np.float32).copy()


def ulps(got, want64) -> np.ndarray:
    """|got - want| in units of the last place of float32 at ``want``."""
    want32 = want64.astype(np.float32)
    ulp = np.spacing(np.abs(want32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want64) / ulp


def _normals(n, seed, lo=-30, hi=30):
    rs = np.random.RandomState(seed)
    return (rs.uniform(1, 2, n) * 2.0 ** rs.randint(lo, hi, n)
            * rs.choice([-1, 1], n)).astype(np.float32)


def test_division_is_off_by_two_ulp_within_the_spec_bound():
    x, y = _normals(4096, 0), _normals(4096, 1)
    got = run("out[i] = x / y;", x, y)
    exact = x.astype(np.float64) / y.astype(np.float64)
    err = ulps(got, exact)
    assert err.max() <= 2.5
    # every quotient is moved off the correctly rounded one, both ways
    steps = got.view(np.int32) - (x / y).view(np.int32)
    assert set(np.unique(np.abs(steps))) == {2}
    assert (steps * np.sign(got) > 0).any() and (steps * np.sign(got) < 0).any()
    # the local driver's own division (no rewrite) is correctly rounded: the emulation is what
    # differs
    assert np.array_equal(run("out[i] = x / y;", x, y, strict=False), x / y)


def test_sqrt_is_inherited_from_a_loose_inverse_sqrt_and_a_loose_division():
    x = np.abs(_normals(4096, 2))
    got_sqrt = run("out[i] = sqrt(x);", x, x)
    got_rsqrt = run("out[i] = inverseSqrt(x);", x, x)
    exact = np.sqrt(x.astype(np.float64))
    err = ulps(got_rsqrt, 1 / exact)
    assert 1.0 < err.max() <= 1.5 and err.min() >= 0.5
    err = ulps(got_sqrt, exact)
    assert err.max() <= 5.5 and err.max() > 2         # 2 ulp of inverseSqrt, then 2.5 of 1/r
    assert (err > 0.5).mean() > 0.5                   # mostly not correctly rounded
    special = np.array([0.0, -0.0, np.inf, -1.0, np.nan], np.float32)
    got = run("out[i] = sqrt(x);", special, special)
    np.testing.assert_array_equal(got[:3], [0.0, -0.0, np.inf])
    assert np.signbit(got[1]) and np.isnan(got[3:]).all()


def test_subnormals_flush_in_arithmetic_and_comparisons_but_not_in_moves():
    tiny = np.array([1e-45, -1e-45, 1e-40, -3e-39], np.float32)
    zero = np.zeros(4, np.float32)
    # arithmetic reads a subnormal as a zero of its sign, and writes none
    got = run("out[i] = x + y;", tiny, zero)
    np.testing.assert_array_equal(got, 0.0)
    assert list(np.signbit(got)) == [False, False, False, False]   # +0 + -0 is +0
    got = run("out[i] = x * 1.0;", tiny, zero)
    assert list(np.signbit(got)) == [False, True, False, True] and not got.any()
    got = run("out[i] = x * y;", np.full(4, 1e-20, np.float32), np.full(4, 1e-20, np.float32))
    np.testing.assert_array_equal(got, 0.0)                       # 1e-40 flushed
    # a comparison sees zero; a select, a load, a store and a bit cast move the bits
    got = run("out[i] = select(7.0, x, x == 0.0);", tiny, zero)
    np.testing.assert_array_equal(got.view(np.int32), tiny.view(np.int32))
    got = run("out[i] = bitcast<f32>(bitcast<u32>(x));", tiny, zero)
    np.testing.assert_array_equal(got.view(np.int32), tiny.view(np.int32))
    # the exact builtins see the subnormal too (NVIDIA: floor(-1e-45) = -1, yet -1e-45 < 0 is
    # false), and their exact results then flow on
    got = run("out[i] = floor(x);", tiny, zero)
    np.testing.assert_array_equal(got, [0.0, -1.0, 0.0, -1.0])
    got = run("out[i] = select(0.0, 1.0, x < 0.0) + sign(x) * 4.0;", tiny, zero)
    np.testing.assert_array_equal(got, [4.0, -4.0, 4.0, -4.0])
    got = run("out[i] = abs(x);", tiny, zero)
    np.testing.assert_array_equal(got.view(np.int32), np.abs(tiny).view(np.int32))
    # but min, max and clamp flush theirs (an H200: max(abs(1e-45), 0.0) was 0)
    for body in ("out[i] = max(abs(x), y);", "out[i] = min(abs(x), 1.0);",
                 "out[i] = clamp(abs(x), 0.0, 1.0);"):
        assert not run(body, tiny, zero).view(np.int32).any(), body
    # the same kernel on the local driver keeps them (lavapipe computes with subnormals)
    assert run("out[i] = x * 1.0;", tiny, zero, strict=False).view(np.int32).tolist() == \
        tiny.view(np.int32).tolist()


_A = np.float32(1 + 2.0 ** -12)
_C = np.float32(-(1 + 2.0 ** -11))


@pytest.mark.parametrize("body", [
    "out[i] = x * x + y;",                       # in one expression
    "let p = x * x;\n  out[i] = p + y;",         # through a let
    "var s = y;\n  s += x * x;\n  out[i] = s;",  # into a compound assignment
    "out[i] = fma(x, x, y);",                    # fma itself is fused
])
def test_products_contract_into_one_rounding(body):
    # (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 exactly; two roundings lose it
    x, y = np.full(64, _A), np.full(64, _C)
    np.testing.assert_array_equal(run(body, x, y), 2.0 ** -24)
    if "fma" not in body:
        np.testing.assert_array_equal(run(body, x, y, strict=False), 0.0)


def test_contraction_recomputes_a_let_product_only_while_its_names_are_unchanged():
    src = SD.rewrite(_HEAD + "let p = x * y;\n  var z = x;\n  { let x = 2.0f; out[i] = p + x; }"
                     "\n  let q = z * y;\n  z = 1.0;\n  out[i] = q + z;\n}\n")
    # an inner x shadows the product's factor, and z is a var: neither sum is contracted
    assert "wj_sd_fma" not in src


@pytest.mark.parametrize("body", [
    "out[i] = (0.5 * x) * x;",                   # constant first
    "out[i] = x * (x * 0.5);",                   # constant inside the second factor
    "let h = 0.5 * x;\n  out[i] = (h * y) * x;",  # through a let, three factors
    "out[i] = (0.5 * x) * x + y;",               # then contracted: fma(x * x, 0.5, y)
])
def test_constant_factors_are_gathered_last(body):
    # LLVM's fast-math reassociation (NVIDIA: cosh(89) = (0.5 h) h was inf): the product of
    # the variables first, so 2^64 * 2^64 overflows before the 0.5 applies
    x, y = np.full(64, 2.0 ** 64, np.float32), np.full(64, 1.0, np.float32)
    assert np.isinf(run(body, x, y)).all()
    assert np.isfinite(run(body, x, y, strict=False)).all()
    # products of variables only keep their order: (x * y) * x, not (x * x) * y
    y = np.full(64, 2.0 ** -64, np.float32)
    np.testing.assert_array_equal(run("out[i] = (x * y) * x;", x, y), 2.0 ** 64)


def test_fused_multiply_add_is_rounded_once():
    rs = np.random.RandomState(3)
    a, b = _normals(8192, 4, -20, 20), _normals(8192, 5, -20, 20)
    c = (-(a.astype(np.float64) * b) * rs.uniform(0.5, 1.5, 8192)).astype(np.float32)
    r = runtime.get()
    src = SD.rewrite(_HEAD.replace("let y = ys[i];", "let y = ys[i];\n  let z = out[i];")
                     + "out[i] = fma(x, y, z);\n}\n")
    bx, by, bo = r.upload(a), r.upload(b), r.upload(c)
    r.dispatch(src, [bx, by, bo], (8192 // 64, 1, 1))
    got = np.frombuffer(r.read(bo, c.nbytes), np.float32)
    exact = a.astype(np.float64) * b + c          # exact: 48-bit product plus c
    want = exact.astype(np.float32)
    assert ulps(got, exact).max() <= 1.0
    assert (got == want).mean() > 0.999            # once-rounded (Dekker's split is exact)


def test_float16_products_are_added_before_rounding():
    src = """enable f16;
@group(0) @binding(0) var<storage, read_write> out: array<f16>;
@compute @workgroup_size(1)
fn main() {
  let a = out[0];
  let c = out[1];
  out[2] = a * a + c;
}
"""
    a = np.float16(1 + 2.0 ** -6)
    c = np.float16(-(1 + 2.0 ** -5))
    r = runtime.get()
    if not r.has_f16:
        pytest.skip("this adapter has no shader-f16")
    for text, want in ((SD.rewrite(src), 2.0 ** -12), (src, 0.0)):
        buf = r.upload(np.array([a, c, 0, 0], np.float16))
        r.dispatch(text, [buf], (1, 1, 1))
        assert np.frombuffer(r.read(buf, 8), np.float16)[2] == np.float16(want)


def test_a_kernel_outside_the_subset_is_an_error_naming_it():
    with pytest.raises(SD.StrictDriverError, match="switch"):
        SD.rewrite(_HEAD + "switch (i) { default: { out[i] = x; } }\n}\n")
    with pytest.raises(SD.StrictDriverError, match="unknown function 'mystery'"):
        SD.rewrite(_HEAD + "out[i] = mystery(x);\n}\n")


def test_the_setting_is_read_from_the_environment(monkeypatch):
    from wjax._src.core import config
    monkeypatch.setenv("WJAX_STRICT_DRIVER", "1")
    assert config.settings().strict_driver
    monkeypatch.setenv("WJAX_STRICT_DRIVER", "0")
    assert not config.settings().strict_driver


def test_transcendental_builtins_are_as_coarse_as_the_spec_allows():
    # no kernel calls them (tests/test_builtins.py); one that did would fail the strict run
    x = np.array([1e-7, 0.5, 100.0, -2.0], np.float32)
    got = run("out[i] = sin(x);", x, x)
    err = np.abs(got - np.sin(x.astype(np.float64)))
    assert (err > 4e-4).all() and (err <= 2.0 ** -11).all()
    x = np.array([1e-7, 0.5, 10.0, -2.0], np.float32)
    got = run("out[i] = exp(x);", x, x)
    steps = np.abs(got.view(np.int32) - np.exp(x).view(np.int32))
    assert (steps >= 3).all() and (steps <= 3 + 2 * np.abs(x) + 1).all()
    got = run("out[i] = pow(2.0, x) + log2(x + 4.0);", x, x)
    assert np.all(np.isfinite(got))


def test_float16_conversions_take_the_other_neighbour():
    r = runtime.get()
    x = np.array([1 + 2.0 ** -12, 1 + 3 * 2.0 ** -12, 1.0, -(1 + 2.0 ** -12), 2.0 ** -26,
                  1000.3, 1e-6, np.inf], np.float32)
    src = """enable f16;
@group(0) @binding(0) var<storage, read> xs: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f16>;
@compute @workgroup_size(8)
fn main(@builtin(local_invocation_index) i: u32) {
  out[i] = f16(xs[i] * 1.0);
}
"""
    bx, bo = r.upload(x), r.alloc(16)
    r.dispatch(SD.rewrite(src), [bx, bo], (1, 1, 1))
    got = np.frombuffer(r.read(bo, 16), np.float16)
    nearest = x.astype(np.float16)
    # exact values stay; others go to the neighbour nearest-even does not pick
    assert got[2] == 1.0 and got[7] == np.inf
    for i in (0, 1, 3, 4, 5, 6):
        assert got[i] != nearest[i]
        assert abs(float(got[i]) - float(x[i])) <= float(np.spacing(np.abs(nearest[i])))
