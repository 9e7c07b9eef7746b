"""Float math for kernels that a driver's fast-math cannot break.

Shader compilers may reassociate and simplify float expressions (lavapipe's LLVM does; Metal
compiles with fast-math by default), and their builtins are often coarse: lavapipe's ``log``
is off by 2e6 ulp near 1 and mishandles subnormals, ``exp`` by 60 ulp near overflow, ``sinh``,
``asinh`` and ``atanh`` lose small arguments and the sign of -0.0, ``sin(1e10)`` is -1; NVIDIA's
``sin(1e-7)`` is 0 (the WGSL spec allows an absolute 2^-11).  No helper calls a builtin outside
``ALLOWED_BUILTINS`` (the exactly specified ones, and ``sqrt``/``inverseSqrt``/``fma``).
So the helpers here follow these rules:

* **No cancellation tricks.**  Nothing relies on an intermediate rounding, such as
  ``(1 + x) - 1`` recovering the rounding error of ``1 + x``, which a compiler may fold.
  Small arguments take series/polynomials (``expm1``, ``log1p``, ``sinh``, ``tanh``);
  decompositions use the bits (``wj_log`` and ``wj_exp2`` split the exponent with integer
  ops, the trigonometric range reduction multiplies the significand by the bits of 2/pi, and
  the fraction by pi/2, in integer arithmetic).
* **Opaque values where nothing else works.**  ``wj_opq(x)`` is ``x`` xor a zero the compiler
  cannot see (a private ``wj_zero`` set at kernel start from ``num_workgroups``, inserted by
  :func:`wjax._src.backend.wgsl.finalize` into every kernel that uses it), so
  ``x - k*ln2_hi - k*ln2_lo`` is not re-factored into ``x - k*ln2``.
* **Signs and specials by the bits.**  ±0, ±inf and NaN are tested and copied with integer
  ops (``wj_copysign``), never with float compares that fast-math may assume away.
* **Division and square roots are wjax's own where they count.**  The spec lets ``x / y`` be
  2.5 ulp off (and anything for |y| outside [2^-126, 2^126]) and ``sqrt`` inherit from
  ``1.0 / inverseSqrt(x)`` (about 5.5 ulp); NVIDIA's are that loose.  ``wj_div`` and
  ``wj_sqrt`` are within 0.5 ulp (plus 2^-20) on any conformant driver: the driver's quotient
  or root of the significands, corrected by a residual computed exactly in integer arithmetic.
  The ``div`` and ``sqrt`` primitives (float32, and float16/bfloat16 before their rounding) are
  these, as XLA's are correctly rounded; so is every quotient or root a helper's accuracy
  rests on (``tanh acosh asinh atanh tan atan atan2 asin acos erf erfc lgamma logistic``, and
  the complex ``/ abs log sqrt``).  A quotient that only feeds a small term keeps the plain
  ``/`` (``wj_log1p_core``'s s enters as s (f^2/2 + ...), so its error is damped by f^2/4).

Accuracy, measured against float64 on lavapipe and with ``WJAX_STRICT_DRIVER=1`` (the loosest
conformant driver; ``tests/test_numerics.py`` checks it at the hard points: ±0, subnormals,
tiny, huge, ±inf, NaN, exact halves, integers above 2^23, and on dense samples): ``x / y`` and
``sqrt`` within 0.5 ulp (correctly rounded but where the correction's own error decides a
near-tie; a subnormal quotient on a driver keeping subnormals rounds twice, so may be a
subnormal ulp off), ``exp exp2 log log1p expm1`` within 2 ulp, ``tanh asinh acosh atanh
cbrt`` within 3, ``sinh cosh`` within 1.6, ``sin cos`` within 1.3 and ``tan`` within 3.2 for
every finite argument (the floats nearest the multiples of pi/2 included); ``pow``
within about 1 + 0.8 |y log2 x| ulp (exp2 of a float32 product of a float32 log2: 26 ulp at
x = 9.37, y = -9.97).
Subnormal inputs are handled as values; a driver that flushes subnormals to zero (XLA does on
CPU and GPU) gives the result at zero instead, which the tests accept too -- but never a third
value.  NVIDIA's flush is partial (arithmetic and comparisons flush, moves, selects and the
exact builtins see the bits: ``x == 0.0`` is true at 1e-45 while ``sign(x)`` is 1), so
"is x zero / negative / tiny" is decided by the bits, and a helper returning x below some
threshold returns it for a subnormal x too only where x is the IEEE answer there.  A quotient
by 1 is not exact on such drivers (2.5 ulp): 2^-126 / 1 may land below the normal range and
flush, so functions that round to x for small x (tanh, asin, atan, cosh to 1) return it below
2^-12 instead of computing it (``WJAX_STRICT_DRIVER=1`` emulates all of this).
"""
from __future__ import annotations

from . import wgsl as W

# The WGSL builtins a kernel may call, with the accuracy the WGSL spec ("Floating Point
# Accuracy", f32) gives each: exact or correctly rounded, or (sqrt, inverseSqrt, fma) bounded
# tightly enough for wjax.  The transcendental builtins are not here: the spec lets sin/cos be
# off by 2^-11 absolute, exp/exp2 by 3 + 2|x| ulp, log/log2 by 2^-21 absolute near 1, and tan,
# pow, the hyperbolics and the inverse functions inherit from their formulas (NVIDIA's Vulkan
# driver: sin(1e-7) = 0, cos(100) 4e-6 off).  tests/test_builtins.py reads every helper,
# template and lowered kernel and fails on a call of any builtin not listed here; the same
# table is in docs/DESIGN.md ("Builtins a kernel may call").
ALLOWED_BUILTINS = {
    # float functions
    "abs": "correctly rounded (exact)",
    "min": "correctly rounded (exact; either input when both are subnormal)",
    "max": "correctly rounded (exact; either input when both are subnormal)",
    "clamp": "correctly rounded (exact)",
    "floor": "correctly rounded (exact)",
    "ceil": "correctly rounded (exact)",
    "trunc": "correctly rounded (exact)",
    "round": "correctly rounded (exact)",
    "sign": "correctly rounded (exact)",
    "ldexp": "correctly rounded",
    "fma": "inherited from x * y + z (two correctly rounded operations, or one if fused)",
    "inverseSqrt": "2 ulp",
    "sqrt": "inherited from 1.0 / inverseSqrt(x): 2 ulp, then a 2.5 ulp division",
    # bits, conversions, selection (exact)
    "select": "exact",
    "countOneBits": "exact",
    "countLeadingZeros": "exact",
    "countTrailingZeros": "exact",
    "firstLeadingBit": "exact",
    "firstTrailingBit": "exact",
    "reverseBits": "exact",
    "extractBits": "exact",
    "insertBits": "exact",
    "pack2x16float": "exact for a value f16 holds (else either neighbour: wjax packs only those)",
    "unpack2x16float": "exact (f16 to f32)",
    "any": "exact",
    "all": "exact",
    # memory, synchronization, atomics (no float math)
    "arrayLength": "exact",
    "workgroupBarrier": "synchronization",
    "storageBarrier": "synchronization",
    "workgroupUniformLoad": "exact (a load)",
    # subgroups (GPU reductions where the adapter has ``subgroup``: words moved, no math)
    "subgroupShuffleXor": "exact (moves a value between invocations)",
    **{f"atomic{op}": "exact (integer atomics)" for op in (
        "Load", "Store", "Add", "Sub", "Max", "Min", "And", "Or", "Xor", "Exchange",
        "CompareExchangeWeak")},
}

# --------------------------------------------------------------------------- building blocks

W.helper(
    "wj_isnan",
    "fn wj_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }",
)
W.helper(
    "wj_isinf",
    "fn wj_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }",
)
W.helper("wj_opq", """
var<private> wj_zero: u32;
fn wj_opq(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ wj_zero); }""")
W.helper("wj_copysign", """
fn wj_copysign(m: f32, s: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(m) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}""")

# --------------------------------------------------------------------------- division, sqrt
# The spec lets ``x / y`` be 2.5 ulp off (nothing at all for |y| outside [2^-126, 2^126]) and
# ``sqrt`` inherit from 1.0 / inverseSqrt(x) (about 5.5 ulp); NVIDIA's are that loose.
# wj_div and wj_sqrt are within 0.5 ulp (and a 2^-20 ulp more) on any conformant driver: the
# operands' significands (subnormals normalized by their bits), the driver's quotient or root q
# of those (a few ulp off; for the quotient, a's times the driver's reciprocal of b's), the
# residual a - q b (x - q^2) computed EXACTLY in integer
# arithmetic -- the significands as 24-bit integers, the product's low 32 bits (u32 products
# wrap), which is all of it since the residual is small -- and q corrected by residual / b
# (residual / 2q), a correction of a few ulp that needs only a few correct bits; then the
# exponent applied in two exact steps.  No float expression a compiler could refactor, no
# intermediate that can be subnormal or overflow; zeros, infinities and NaN by the bits.

# |x|'s bits (finite, non-zero) as (M, e), |x| = M 2^(e - 23) with 2^23 <= M < 2^24
W.helper("wj_frexp_bits", """
fn wj_frexp_bits(u: u32) -> vec2<i32> {
  let b = i32(u >> 23u);
  let m = u & 0x7fffffu;
  let s = countLeadingZeros(m) - 8u;
  let sub = b == 0;
  return vec2<i32>(bitcast<i32>(select(m | 0x800000u, m << (s % 32u), sub)),
                   select(b - 127, -126 - i32(s), sub));
}""")
W.helper("wj_div", """
fn wj_div(a: f32, b: f32) -> f32 {
  let ua = bitcast<u32>(a) & 0x7fffffffu;
  let ub = bitcast<u32>(b) & 0x7fffffffu;
  let fa = wj_frexp_bits(ua);
  let fb = wj_frexp_bits(ub);
  let ma = bitcast<u32>(fa.x);
  let mb = bitcast<u32>(fb.x);
  let bm = bitcast<f32>((mb & 0x7fffffu) | 0x3f800000u);
  // one driver division, of b's significand alone: a kernel dividing by one value many
  // times (a softmax's row sum) may compute it once
  // (q opaque: q + r ib below must not become (a + r) ib)
  let ib = 1.0 / bm;
  let q = wj_opq(bitcast<f32>((ma & 0x7fffffu) | 0x3f800000u) * ib);   // in (1/2, 2], ~4 ulp off
  let uq = bitcast<u32>(q);
  let eq = clamp(i32(uq >> 23u) - 127, -2, 1);
  let mq = (uq & 0x7fffffu) | 0x800000u;
  // (a - q b) 2^(46 - eq) for the significands, exact: an integer below 2^28
  let d = bitcast<i32>((ma << u32(23 - eq)) - mq * mb);
  let r = f32(d) * bitcast<f32>(u32(eq + 81) << 23u);
  let y = q + r * ib;
  let k = clamp(fa.y - fb.y, -160, 130);
  let k1 = k / 2;
  let v = wj_opq(y * bitcast<f32>(u32(k1 + 127) << 23u)) * bitcast<f32>(u32(k - k1 + 127) << 23u);
  let nan = ua > 0x7f800000u || ub > 0x7f800000u || (ua == ub && (ua == 0u || ua == 0x7f800000u));
  var m = select(bitcast<u32>(v), 0x7f800000u, ub == 0u || ua == 0x7f800000u);
  m = select(m, 0u, ua == 0u || ub == 0x7f800000u);
  let s = (bitcast<u32>(a) ^ bitcast<u32>(b)) & 0x80000000u;
  return select(bitcast<f32>(m | s), bitcast<f32>(0x7fc00000u), nan);
}""")
# sqrt(+-0) = +-0, sqrt(inf) = inf, NaN below zero
W.helper("wj_sqrt", """
fn wj_sqrt(x: f32) -> f32 {
  let u = bitcast<u32>(x);
  let f = wj_frexp_bits(u & 0x7fffffffu);
  let mx = bitcast<u32>(f.x);
  let o = f.y & 1;
  let q = sqrt(bitcast<f32>((mx & 0x7fffffu) | (u32(127 + o) << 23u)));   // of [1, 4)
  let uq = bitcast<u32>(q);
  let eq = clamp(i32(uq >> 23u) - 127, -1, 1);
  let mq = (uq & 0x7fffffu) | 0x800000u;
  // (x - q^2) 2^(46 - 2 eq) for the significand, exact: an integer below 2^29
  let d = bitcast<i32>((mx << u32(23 + o - 2 * eq)) - mq * mq);
  let r = f32(d) * bitcast<f32>(u32(2 * eq + 81) << 23u);
  let y = q + r / (q + q);
  let v = y * bitcast<f32>(u32(((f.y - o) >> 1u) + 127) << 23u);
  let special = (u & 0x7fffffffu) == 0u || u == 0x7f800000u;
  return select(select(v, bitcast<f32>(0x7fc00000u), u > 0x7f800000u), x, special);
}""")
# --------------------------------------------------------------------------- exp family
# Branch-free where it matters: drivers that run invocations as SIMD lanes (lavapipe, and GPUs
# on divergent data) execute both sides of a branch, so special cases are selected at the end.

# exp(x) = 2^k e^r, r = x - k ln2 in [-ln2/2, ln2/2] (Cody-Waite: k*LN2_HI is exact and kept
# opaque so the two-step subtraction is not refactored); e^r - 1 = r + r^2 P(r), P of degree 4
# fitted by wjax (minimax of the relative error of e^r - 1 on |r| <= 0.3468: 1.4e-8, a fifth of
# an ulp; the Taylor series needs degree 9 for that).  Callers clamp xc to |xc| <= 176.
W.helper(
    "wj_expr",
    """
fn wj_expr(xc: f32) -> vec2<f32> {
  // (e^r - 1, k) with xc = k ln2 + r
  let kf = floor(xc * 1.4426950 + 0.5);
  let r = (xc - wj_opq(kf * 0.693145751953125)) - kf * 1.4286068e-06;
  let p = 0.5 + r * (0.16666548 + r * (0.041666854 + r * (0.008366077 + r * 0.001389823)));
  return vec2<f32>(r + r * r * p, kf);
}""",
)
# m 2^k for m in [0.7, 1.42] and k in [-152, 129]: 2^k is added to the exponent bits of m for
# k in [-125, 127], which keeps m 2^k normal; the rest of 2^k (2^(k+125) below, 2 or 4 above)
# is one product (by 1.0 but at the ends), so a subnormal result is rounded once and one past
# the largest float overflows to inf: no compare-and-select for either end.
W.helper("wj_exp_scale", """
fn wj_exp_scale(m: f32, k: i32) -> f32 {
  let kb = k << 23u;
  let kc = clamp(kb, -1048576000, 1065353216);   // clamp(k, -125, 127) << 23
  return bitcast<f32>(bitcast<i32>(m) + kc) * bitcast<f32>(kb - kc + 0x3f800000);
}""")
# x clamped to [-104, 88.75]: e^88.75 overflows to inf (from x = 88.72284 on), e^-104 rounds to 0
W.helper("wj_exp", """
fn wj_exp(x: f32) -> f32 {
  let e = wj_expr(clamp(x, -104.0, 88.75));
  return select(wj_exp_scale(1.0 + e.x, i32(e.y)), x, wj_isnan(x));
}""")
# exp2(x) = 2^k 2^f, k = round(x), f = x - k in [-1/2, 1/2] (exact); 2^f - 1 = f P(f), P of
# degree 5 fitted by wjax (minimax of the error relative to 2^f: 2e-9); scaled as in wj_exp
W.helper(
    "wj_exp2",
    """
fn wj_exp2(x: f32) -> f32 {
  let xc = clamp(x, -151.0, 129.0);
  let kf = floor(xc + 0.5);
  let f = xc - kf;
  let q = f * (0.6931472 + f * (0.24022648 + f * (0.055503324 + f * (0.009618438
          + f * (0.00133989 + f * 0.00015353342)))));
  return select(wj_exp_scale(1.0 + q, i32(kf)), x, wj_isnan(x));
}""",
)
# expm1(x) = 2^k (e^r - 1) + (2^k - 1), as 2 (t (e^r - 1) + (t - 1/2)) with t = 2^(k-1):
# no cancellation for k = 0 (|x| < ln2/2), little beyond; the last product overflows to inf past
# 88.72 (k = 128) and t is 0 at x = -87 (k = -126), where expm1 rounds to -1.  Below 2^-25 (by
# the bits: ±0 and subnormals too), expm1 x rounds to x, and NaN is x: both in one unsigned
# compare (|x| - 2^-25 wraps around below 2^-25).
W.helper("wj_expm1", """
fn wj_expm1(x: f32) -> f32 {
  let e = wj_expr(clamp(x, -87.0, 88.75));
  let t = bitcast<f32>((i32(e.y) + 126) << 23u);
  let y = (e.x * t + (t - 0.5)) * 2.0;
  return select(y, x, (bitcast<u32>(x) & 0x7fffffffu) - 0x33000000u > 0x4c800000u);
}""")

# --------------------------------------------------------------------------- log family

# log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: s = f / (2 + f), the odd series of
# 2 atanh(s) (musl's logf polynomial); exact for f = +-0
W.helper("wj_log1p_core", """
fn wj_log1p_core(f: f32) -> f32 {
  let s = f / (2.0 + f);
  let z = s * s;
  let w = z * z;
  let t1 = w * (0.40000972 + w * 0.24279079);
  let t2 = z * (0.66666663 + w * 0.28498787);
  let hfsq = 0.5 * f * f;
  return select(f - (hfsq - s * (hfsq + t1 + t2)), f, f == 0.0);
}""")
# x = 2^k m with m in [sqrt(1/2), sqrt(2)), split with integer ops (subnormals scaled first);
# returns vec2(k, m - 1) (garbage for x <= 0, inf or NaN: see wj_log_fix)
W.helper("wj_logsplit", """
fn wj_logsplit(x: f32) -> vec2<f32> {
  let sub = bitcast<u32>(x) < 0x00800000u;
  var ix = select(bitcast<u32>(x), bitcast<u32>(x * 33554432.0), sub);
  ix = ix + (0x3f800000u - 0x3f3504f3u);
  let k = i32(ix >> 23u) - select(127, 152, sub);
  let m = bitcast<f32>((ix & 0x007fffffu) + 0x3f3504f3u);
  return vec2<f32>(f32(k), m - 1.0);
}""")
# log of x <= 0, +inf, NaN: -inf at zero, NaN below, x itself otherwise
W.helper("wj_log_fix", """
fn wj_log_fix(y: f32, x: f32) -> f32 {
  var r = select(y, x, bitcast<u32>(x) >= 0x7f800000u);
  r = select(r, bitcast<f32>(0xff800000u), x == 0.0);
  return select(r, bitcast<f32>(0x7fc00000u), wj_isnan(x) || x < 0.0);
}""")
W.helper("wj_log", """
fn wj_log(x: f32) -> f32 {
  let kf = wj_logsplit(x);
  return wj_log_fix(kf.x * 0.693145751953125 + (wj_log1p_core(kf.y) + kf.x * 1.4286068e-06), x);
}""")
W.helper("wj_log2", """
fn wj_log2(x: f32) -> f32 {
  let kf = wj_logsplit(x);
  return wj_log_fix(kf.x + wj_log1p_core(kf.y) * 1.4426950, x);
}""")
W.helper(
    "wj_log10",
    """
fn wj_log10(x: f32) -> f32 {
  let kf = wj_logsplit(x);
  return wj_log_fix(
      kf.x * 0.30102998 + (wj_log1p_core(kf.y) * 0.43429449 + kf.x * 7.9034151e-09), x);
}""",
)
# log1p: u = 1 + x (opaque) split as 2^k m; with k = 0 the core takes x itself (exact), else
# m - 1 plus the rounding error of u, (x - (u - 1)) / u, which the opaque u keeps from folding
W.helper(
    "wj_log1p",
    """
fn wj_log1p(x: f32) -> f32 {
  let u = wj_opq(1.0 + x);
  let kf = wj_logsplit(u);
  let k0 = kf.x == 0.0;
  let c = select((x - wj_opq(u - 1.0)) / u, 0.0, k0 || x > 1e7);
  let y = kf.x * 0.693145751953125
      + (wj_log1p_core(select(kf.y, x, k0)) + (kf.x * 1.4286068e-06 + c));
  var r = select(y, x, bitcast<u32>(x) == 0x7f800000u || x == 0.0);
  r = select(r, bitcast<f32>(0xff800000u), x == -1.0);
  return select(r, bitcast<f32>(0x7fc00000u), wj_isnan(x) || x < -1.0);
}""",
)

# --------------------------------------------------------------------------- hyperbolic
# e^a / 2 times c (a >= 0, clamped to 176; c finite), the big factor applied last: e^a = m 2^k
# (Cody-Waite as in wj_expr, m = e^r in [0.7, 1.42]), then m c scaled by 2^(k-1) in two ldexp
# steps of at most 2^127 each.  No intermediate overflows before the result does, whatever a
# compiler regroups: ``(0.5 * h) * h`` with h = e^(a/2) is computed as ``(h * h) * 0.5`` under
# fast-math reassociation (constants last), and overflowed on NVIDIA at cosh(89) = 2.2e38.
W.helper("wj_exph_mul", """
fn wj_exph_mul(a: f32, c: f32) -> f32 {
  let e = wj_expr(min(a, 176.0));
  let k = i32(e.y) - 1;
  let k1 = k >> 1u;
  return ldexp(ldexp((1.0 + e.x) * c, k1), k - k1);
}""")
# sinh: its series below 2; beyond, and cosh everywhere, from E = e^|x| / 2 (wj_exph_mul): E
# -+ (1/4) / E, the second term dropped past 9 (below 2^-25 of the first; and a quotient by
# |y| > 2^126 is unspecified)

W.helper("wj_sinh", """
fn wj_sinh(x: f32) -> f32 {
  let a = abs(x);
  let z = a * a;
  let small = a + a * z * (0.16666667 + z * (0.008333334 + z * (0.0001984127 + z * (2.7557319e-06
              + z * (2.5052108e-08 + z * (1.6059044e-10 + z * (7.6471637e-13 + z * (2.8114573e-15
              + z * 8.2206352e-18))))))));
  let e = wj_exph_mul(min(a, 90.0), 1.0);
  let big = select(e - 0.25 / e, e, a > 9.0);
  return select(wj_copysign(select(big, small, a < 2.0), x), x, wj_isnan(x) || x == 0.0);
}""")
# |x| < 2^-12 (by the bits): cosh x rounds to 1, exactly -- through the quotients a 2.5 ulp
# division gives 1 - 2^-23, and the complex functions' cosh(a) sin(b) then flush sin b = 2^-126
W.helper("wj_cosh", """
fn wj_cosh(x: f32) -> f32 {
  let a = min(abs(x), 90.0);
  let e = wj_exph_mul(a, 1.0);
  let y = select(select(e + 0.25 / e, e, a > 9.0), 1.0,
                 (bitcast<u32>(x) & 0x7fffffffu) < 0x39800000u);
  return select(y, x, wj_isnan(x));
}""")
# |x| < 2^-12 (by the bits, so subnormals and ±0 too): tanh x rounds to x.  The quotient
# would lose x near the smallest normal (2^-126 / 1 with a 2.5 ulp division lands below it and
# a flushing driver returns 0).
W.helper("wj_tanh", """
fn wj_tanh(x: f32) -> f32 {
  let a = min(abs(x), 9.1);
  let t = wj_expm1(2.0 * a);
  let y = select(wj_div(t, t + 2.0), 1.0, a > 9.01);
  return select(wj_copysign(y, x), x, wj_isnan(x) || (bitcast<u32>(x) & 0x7fffffffu) < 0x39800000u);
}""")
W.helper("wj_asinh", """
fn wj_asinh(x: f32) -> f32 {
  let a = abs(x);
  let huge = a > 268435456.0;
  let big = a > 2.0;
  let z = a * a;
  let arg = select(a + wj_div(z, 1.0 + wj_sqrt(1.0 + z)),
                   2.0 * a + wj_div(1.0, wj_sqrt(z + 1.0) + a) - 1.0, big);
  let r = select(wj_log1p(select(arg, 0.0, huge)), wj_log(a) + 0.6931472, huge);
  return select(wj_copysign(r, x), x, wj_isnan(x) || wj_isinf(x) || x == 0.0);
}""")
W.helper(
    "wj_acosh",
    """
fn wj_acosh(x: f32) -> f32 {
  let huge = x > 268435456.0;
  let t = x - 1.0;
  let arg = select(t + wj_sqrt(2.0 * t + t * t),
                   2.0 * x - wj_div(1.0, x + wj_sqrt(x * x - 1.0)) - 1.0, x > 2.0);
  let r = select(wj_log1p(select(arg, 0.0, huge)), wj_log(x) + 0.6931472, huge);
  return select(select(r, x, wj_isinf(x)), bitcast<f32>(0x7fc00000u), wj_isnan(x) || x < 1.0);
}""",
)
W.helper("wj_atanh", """
fn wj_atanh(x: f32) -> f32 {
  let a = abs(x);
  let d = 1.0 - a;
  let arg = select(wj_div(2.0 * a, d), 2.0 * a + wj_div(2.0 * a * a, d), a < 0.5);
  var r = select(0.5 * wj_log1p(arg), bitcast<f32>(0x7f800000u), a == 1.0);
  r = select(wj_copysign(r, x), bitcast<f32>(0x7fc00000u), a > 1.0);
  return select(r, x, wj_isnan(x) || x == 0.0);
}""")

# --------------------------------------------------------------------------- powers, roots

# A subnormal |x| = m 2^-149 is scaled by the bits, never by float arithmetic (which a
# flushing driver reads as 0): a = f32(2m) is exact and normal, and cbrt x = cbrt(a) 2^-50.
# So every driver gives the IEEE answer; ±0 is tested by the bits too (NVIDIA's
# `x == 0.0` is true at 1e-45, which returned x itself: neither answer).
W.helper("wj_cbrt", """
fn wj_cbrt(x: f32) -> f32 {
  let u = bitcast<u32>(x) & 0x7fffffffu;
  let sub = u < 0x00800000u;
  let a = select(bitcast<f32>(u), f32(u << 1u), sub);
  var y = wj_exp2(wj_log2(a) * 0.33333334);
  y = y + (a / (y * y) - y) * 0.33333334;
  y = select(y, y * 8.8817842e-16, sub);
  return select(wj_copysign(y, x), x, wj_isnan(x) || wj_isinf(x) || u == 0u);
}""")

# --------------------------------------------------------------------------- trigonometry
# No trigonometric builtin is called (their accuracy is an absolute 2^-11 on [-pi, pi] in the
# WGSL spec, and NVIDIA's are that coarse).  Every argument from pi/4 up is reduced exactly in
# integer arithmetic (Payne-Hanek): |x| = M 2^E (24-bit M); x * 2/pi mod 4 is M times a 96-bit
# window of the bits of 2/pi (bits above the window add multiples of 4): a 120-bit integer
# product whose bits from 2^94 up are the quadrant and the 64 below the fraction of a quarter
# turn.  The window starts at bit E - 2 of 2/pi (64 zero bits pad the front, for small E), so
# the bit positions in the product are constants; the table words are picked with selects, not
# by indexing (SIMD drivers would gather per lane).  The fraction times pi/2 (a 64-bit fixed
# point constant) is r, normalized with its leading zeros and cut into two floats r_hi + r_lo
# (48 bits): no float rounding anywhere in the reduction.  On |r| <= pi/4 the Taylor
# polynomials of sin and cos (truncation below 0.05 ulp) use only + - *.  One path for every
# argument: SIMD drivers would run both sides of a branch anyway.

W.helper("wj_mul32", """
fn wj_mul32(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  let lo = (p00 & 0xffffu) | (mid << 16u);
  let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
  return vec2<u32>(lo, hi);
}""")
# the high 64 bits (high word, low word) of the 128-bit product (ah al) * (bh bl)
W.helper("wj_mulhi64", """
fn wj_mulhi64(ah: u32, al: u32, bh: u32, bl: u32) -> vec2<u32> {
  let hh = wj_mul32(ah, bh); let hl = wj_mul32(ah, bl);
  let lh = wj_mul32(al, bh); let ll = wj_mul32(al, bl);
  let s1 = ll.y + hl.x; let c1 = select(0u, 1u, s1 < ll.y);
  let s2 = s1 + lh.x; let c2 = select(0u, 1u, s2 < s1);
  let t1 = hh.x + hl.y; let c3 = select(0u, 1u, t1 < hh.x);
  let t2 = t1 + lh.y; let c4 = select(0u, 1u, t2 < t1);
  let t3 = t2 + (c1 + c2); let c5 = select(0u, 1u, t3 < t2);
  return vec2<u32>(hh.y + c3 + c4 + c5, t3);
}""")
# word w (0-based) of the 2/pi bits after 64 zero bits: 0, 0, a2f9836e, 4e441529, ...
W.helper("wj_2opi_word", """
fn wj_2opi_word(w: u32) -> u32 {
  var v = select(0u, 0xa2f9836eu, w == 2u);
  v = select(v, 0x4e441529u, w == 3u); v = select(v, 0xfc2757d1u, w == 4u);
  v = select(v, 0xf534ddc0u, w == 5u); v = select(v, 0xdb629599u, w == 6u);
  v = select(v, 0x3c439041u, w == 7u); v = select(v, 0xfe5163abu, w == 8u);
  return select(v, 0xdebbc561u, w == 9u);
}""")
W.helper("wj_rem_pio2", """
fn wj_rem_pio2(a: f32) -> vec3<f32> {
  // a = |x| (finite): (r_hi, r_lo, quadrant) with |x| = (4n + quadrant) pi/2 + r_hi + r_lo,
  // |r| <= pi/4, |r_lo| below an ulp of r_hi; below pi/4, (a, 0, 0)
  let small = a < 0.78539816;
  let u = bitcast<u32>(select(a, 1.0, small));
  let e = i32(u >> 23u) - 150;                // a = m 2^e, e in [-24, 104]
  let m = (u & 0x7fffffu) | 0x800000u;
  let q = u32(e + 62);                        // window start in the padded bits
  let w = q / 32u; let s = q % 32u;
  let t0 = wj_2opi_word(w); let t1 = wj_2opi_word(w + 1u);
  let t2 = wj_2opi_word(w + 2u); let t3 = wj_2opi_word(w + 3u);
  let sh = (32u - s) % 32u;
  let sm = select(0xffffffffu, 0u, s == 0u);  // (a shift by 32 is not 0 in WGSL)
  let w0 = (t0 << s) | ((t1 >> sh) & sm);
  let w1 = (t1 << s) | ((t2 >> sh) & sm);
  let w2 = (t2 << s) | ((t3 >> sh) & sm);
  // P = m * (w0 w1 w2), little-endian words p0..p3
  let c2 = wj_mul32(m, w2); let c1 = wj_mul32(m, w1); let c0 = wj_mul32(m, w0);
  let p1 = c2.y + c1.x;
  let k1 = select(0u, 1u, p1 < c2.y);
  let s2 = c1.y + c0.x;
  let p2 = s2 + k1;
  // quadrant: bits 94, 95; fraction: bits 30..93
  var quad = p2 >> 30u;
  var fh = (p2 << 2u) | (p1 >> 30u);
  var fl = (p1 << 2u) | (c2.x >> 30u);
  let neg = fh >= 0x80000000u;                // fraction >= 1/2: r = fraction - 1, exactly
  let nfl = ~fl + 1u;
  let nfh = ~fh + select(0u, 1u, nfl == 0u);
  fh = select(fh, nfh, neg);
  fl = select(fl, nfl, neg);
  quad = (quad + select(0u, 1u, neg)) & 3u;
  // r = (fh fl) 2^-64 pi/2 = (high 64 bits of (fh fl) * round(pi/2 2^63)) 2^-63
  let pr = wj_mulhi64(fh, fl, 0xc90fdaa2u, 0x2168c235u);
  let lz = select(countLeadingZeros(pr.x), 32u + countLeadingZeros(pr.y), pr.x == 0u);
  let ls = lz % 32u;
  let nh = select(pr.x, pr.y, lz >= 32u);
  let nl = select(pr.y, 0u, lz >= 32u);
  let hi = (nh << ls) | ((nl >> ((32u - ls) % 32u)) & select(0xffffffffu, 0u, ls == 0u));
  let lo = nl << ls;
  let sc = bitcast<f32>(u32(104 - i32(lz)) << 23u);     // 2^(-23 - lz)
  let rh = f32(hi >> 8u) * sc;
  let rl = f32(((hi & 0xffu) << 16u) | (lo >> 16u)) * (sc * 5.9604645e-08);
  return select(vec3<f32>(select(rh, -rh, neg), select(rl, -rl, neg), f32(quad)),
                vec3<f32>(a, 0.0, 0.0), small);
}""")
# sin and cos of r + rl, |r| <= pi/4 (rl below an ulp of r): Taylor to r^11 and r^12
W.helper("wj_sin_k", """
fn wj_sin_k(r: f32, rl: f32) -> f32 {
  let z = r * r;
  let p = z * (-0.16666667 + z * (0.008333334 + z * (-0.0001984127 + z * (2.7557319e-06
          + z * -2.5052108e-08))));
  return r + (r * p + rl * (1.0 - 0.5 * z));
}""")
# 1 - z/2 rounds; its error (1 - w) - z/2 is exact, and kept from folding by the opaque 1 - w
W.helper("wj_cos_k", """
fn wj_cos_k(r: f32, rl: f32) -> f32 {
  let z = r * r;
  let hz = 0.5 * z;
  let w = 1.0 - hz;
  let p = z * z * (0.041666668 + z * (-0.0013888889 + z * (2.4801588e-05 + z * (-2.7557320e-07
          + z * 2.0876756e-09))));
  return w + ((wj_opq(1.0 - w) - hz) + (p - r * rl));
}""")
# |x| < 2^-12: sin x and tan x round to x (which keeps -0.0 and subnormals as they are)
W.helper("wj_sin", """
fn wj_sin(x: f32) -> f32 {
  let a = abs(x);
  let bad = wj_isinf(x) || wj_isnan(x);
  let rq = wj_rem_pio2(select(a, 1.0, bad));
  let q = u32(rq.z);
  let v = select(wj_sin_k(rq.x, rq.y), wj_cos_k(rq.x, rq.y), (q & 1u) == 1u);
  let h = bitcast<u32>(v) ^ select(0u, 0x80000000u, (q & 2u) == 2u);
  let y = select(bitcast<f32>(h ^ (bitcast<u32>(x) & 0x80000000u)), x, a < 0.000244140625);
  return select(y, bitcast<f32>(0x7fc00000u), bad);
}""")
W.helper("wj_cos", """
fn wj_cos(x: f32) -> f32 {
  let bad = wj_isinf(x) || wj_isnan(x);
  let rq = wj_rem_pio2(select(abs(x), 1.0, bad));
  let q = u32(rq.z);
  let v = select(wj_cos_k(rq.x, rq.y), wj_sin_k(rq.x, rq.y), (q & 1u) == 1u);
  let y = select(v, -v, ((q + 1u) & 2u) == 2u);
  return select(y, bitcast<f32>(0x7fc00000u), bad);
}""")
# tan r = sin r / cos r; in odd quadrants -cos r / sin r
W.helper("wj_tan", """
fn wj_tan(x: f32) -> f32 {
  let a = abs(x);
  let bad = wj_isinf(x) || wj_isnan(x);
  let rq = wj_rem_pio2(select(a, 1.0, bad));
  let s = wj_sin_k(rq.x, rq.y);
  let c = wj_cos_k(rq.x, rq.y);
  let t = select(wj_div(s, c), wj_div(-c, s), (u32(rq.z) & 1u) == 1u);
  let y = select(bitcast<f32>(bitcast<u32>(t) ^ (bitcast<u32>(x) & 0x80000000u)), x,
                 a < 0.000244140625);
  return select(y, bitcast<f32>(0x7fc00000u), bad);
}""")

# --------------------------------------------------------------------------- rounding
# Exact by construction below 2^23 (x - floor(x) is exact there); above, every float is an
# integer.  The sign of a zero result follows x (round(-0.4) is -0.0).
W.helper("wj_round_even", """
fn wj_round_even(x: f32) -> f32 {
  if (!(abs(x) < 8388608.0)) { return x; }
  let fl = floor(x);
  let d = x - fl;
  var r = fl;
  if (d > 0.5 || (d == 0.5 && (i32(fl) & 1) != 0)) { r = fl + 1.0; }
  return wj_copysign(r, x);
}""")
W.helper("wj_round_away", """
fn wj_round_away(x: f32) -> f32 {
  if (!(abs(x) < 8388608.0)) { return x; }
  let a = abs(x);
  let t = floor(a);
  return wj_copysign(select(t, t + 1.0, a - t >= 0.5), x);
}""")

# --------------------------------------------------------------------------- float16
# float16 math is done in f32 and rounded to f16 after every operation, as XLA does; the f32
# result is made opaque first so no compiler shrinks the operation to native f16 and fuses it
# with the next one (a fused f16 multiply-add rounds once, XLA rounds twice).
# f32 rounded to f16 (nearest-even) by the bits, so that the conversion is exact: the spec lets
# a driver convert a value f16 cannot hold to either neighbour (an H100's differed from
# nearest-even in a quarter of a*b+c), and computing by the bits also keeps a compiler from
# fusing two f16 ops into one rounding.  Below 2^-25, +-0; from 65520 on, +-inf.
W.helper("wj_f16r", """fn wj_f16r(x: f32) -> f16 {
  let u = bitcast<u32>(x);
  let a = u & 0x7fffffffu;
  let e = a >> 23u;
  if (e == 255u || e < 102u) { return f16(bitcast<f32>(select(u & 0x80000000u, u, e == 255u))); }
  let d = select(13u, 126u - e, e < 113u);          // bits below f16's last place
  let m = (a & 0x7fffffu) | 0x800000u;
  let r = ((m + (1u << (d - 1u)) - 1u + ((m >> d) & 1u)) >> d) << d;
  let v = f32(r) * bitcast<f32>((e - 23u) << 23u);  // exact: r times 2^(e - 150)
  let mag = select(v, bitcast<f32>(0x7f800000u), v > 65504.0);
  return f16(bitcast<f32>(bitcast<u32>(mag) | (u & 0x80000000u)));
}""")


# --------------------------------------------------------------------------- elementwise ops
# The helpers of the elementwise primitives' templates (``wjax/_src/prims/elementwise.py``): integer
# division and remainder with XLA's results at zero divisors and overflow, NaN-propagating
# max/min (and complex orderings), and the other functions whose WGSL needs more than one line.

W.helper("wj_div_i", """
fn wj_div_i(a: i32, b: i32) -> i32 {
  if (b == 0) { return -1; }
  if (a == i32(-2147483647 - 1) && b == -1) { return a; }
  return a / b;
}""")
# on magnitudes, in u32: GLSL (wgpu's GL backend) leaves % of negative ints undefined
W.helper("wj_rem_i", """
fn wj_rem_i(a: i32, b: i32) -> i32 {
  if (b == 0) { return a; }
  let r = bitcast<i32>(bitcast<u32>(abs(a)) % bitcast<u32>(abs(b)));
  return select(r, -r, a < 0);
}""")
W.helper(
    "wj_div_u",
    "fn wj_div_u(a: u32, b: u32) -> u32 { if (b == 0u) { return 0xffffffffu; } return a / b; }",
)
W.helper(
    "wj_rem_u", "fn wj_rem_u(a: u32, b: u32) -> u32 { if (b == 0u) { return a; } return a % b; }"
)
W.helper("wj_max_f", """
fn wj_max_f(a: f32, b: f32) -> f32 {
  if (wj_isnan(a) || wj_isnan(b)) { return a + b; }
  if (a == 0.0 && b == 0.0) { return select(b, a, bitcast<u32>(a) == 0u); }
  return max(a, b);
}""")
W.helper("wj_min_f", """
fn wj_min_f(a: f32, b: f32) -> f32 {
  if (wj_isnan(a) || wj_isnan(b)) { return a + b; }
  if (a == 0.0 && b == 0.0) { return select(a, b, bitcast<u32>(b) == 0x80000000u); }
  return min(a, b);
}""")
# max/min reductions fold integer keys instead (prims/reduce.py): a float's bits made monotone
# as an i32 (negative floats' magnitude bits flipped: -0 sorts below +0), NaN mapped to the
# key that wins (i32's largest for max, its least for min), so the fold is one integer max or
# min -- no branch, no float compare a driver may flush -- and the result the key's float,
# NaN canonical.
W.helper("wj_okey", """
fn wj_okey(x: f32) -> i32 {
  let u = bitcast<u32>(x);
  return bitcast<i32>(u ^ (bitcast<u32>(bitcast<i32>(u) >> 31u) >> 1u));
}""")
W.helper("wj_okey_max", """
fn wj_okey_max(x: f32) -> i32 {
  return select(wj_okey(x), 2147483647, (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u);
}""")
W.helper("wj_okey_min", """
fn wj_okey_min(x: f32) -> i32 {
  let nan = (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
  return select(wj_okey(x), bitcast<i32>(0x80000000u), nan);
}""")
# argmax/argmin: -0 and +0 tie (one key), NaN wins (the first one, by the index)
W.helper("wj_okey_argmax", """
fn wj_okey_argmax(x: f32) -> i32 {
  return select(wj_okey_max(x), 0, bitcast<u32>(x) == 0x80000000u);
}""")
W.helper("wj_okey_argmin", """
fn wj_okey_argmin(x: f32) -> i32 {
  return select(wj_okey_min(x), 0, bitcast<u32>(x) == 0x80000000u);
}""")
W.helper("wj_okey_f", """
fn wj_okey_f(k: i32) -> f32 {
  let u = bitcast<u32>(k) ^ (bitcast<u32>(k >> 31u) >> 1u);
  return select(bitcast<f32>(u), bitcast<f32>(0x7fc00000u), (u & 0x7fffffffu) > 0x7f800000u);
}""")
# complex max/min: XLA's lexicographic order (real parts, then imaginary parts) as a select
# of the second operand unless the first compares greater (less): a NaN part compares false,
# so it picks ``b``; NaN is tested by the bits (drivers may fold ordered compares)
W.helper("wj_cgt", """
fn wj_cgt(a: vec2<f32>, b: vec2<f32>) -> bool {
  if (wj_isnan(a.x) || wj_isnan(b.x)) { return false; }
  if (a.x != b.x) { return a.x > b.x; }
  return !(wj_isnan(a.y) || wj_isnan(b.y)) && a.y > b.y;
}""")
W.helper("wj_clt", """
fn wj_clt(a: vec2<f32>, b: vec2<f32>) -> bool {
  if (wj_isnan(a.x) || wj_isnan(b.x)) { return false; }
  if (a.x != b.x) { return a.x < b.x; }
  return !(wj_isnan(a.y) || wj_isnan(b.y)) && a.y < b.y;
}""")
W.helper(
    "wj_pow_f",
    """
fn wj_pow_f(x: f32, y: f32) -> f32 {
  if (y == 0.0) { return 1.0; }
  if (x == 1.0) { return 1.0; }
  if (wj_isnan(x) || wj_isnan(y)) { return x + y; }
  let ay = abs(y);
  let yi = floor(y);
  let is_int = yi == y;
  let odd = is_int && (abs(yi % 2.0) == 1.0);
  if (x == 0.0) {
    if (y < 0.0) {
      let inf = bitcast<f32>(0x7f800000u);
      let neg_inf = select(inf, bitcast<f32>(0xff800000u), bitcast<u32>(x) == 0x80000000u);
      return select(inf, neg_inf, odd);
    }
    return select(0.0, x, odd);
  }
  if (wj_isinf(y)) {
    let ax = abs(x);
    if (ax == 1.0) { return 1.0; }
    if ((ax > 1.0) == (y > 0.0)) { return bitcast<f32>(0x7f800000u); }
    return 0.0;
  }
  if (wj_isinf(x)) {
    if (y > 0.0) { return select(bitcast<f32>(0x7f800000u), x, odd); }
    return select(0.0, bitcast<f32>(bitcast<u32>(x) & 0x80000000u), odd);
  }
  if (x < 0.0) {
    if (!is_int) { return bitcast<f32>(0x7fc00000u); }
    let m = wj_exp2(y * wj_log2(-x));
    return select(m, -m, odd);
  }
  return wj_exp2(y * wj_log2(x));
}""",
)
# by the bits: a subnormal is not zero and its sign is ±1 (the IEEE answer) on every driver
# (NVIDIA's `x == 0.0` is true at 1e-45, and returning x gave 1e-45)
W.helper("wj_sign_f", """
fn wj_sign_f(x: f32) -> f32 {
  let u = bitcast<u32>(x);
  let one = bitcast<f32>((u & 0x80000000u) | 0x3f800000u);
  return select(one, x, wj_isnan(x) || (u & 0x7fffffffu) == 0u);
}""")
W.helper("wj_atan2", """
fn wj_atan2(y: f32, x: f32) -> f32 {
  if (wj_isnan(y) || wj_isnan(x)) { return bitcast<f32>(0x7fc00000u); }
  let neg = (bitcast<u32>(y) & 0x80000000u) != 0u;
  var r: f32;
  if (wj_isinf(x)) {
    if (wj_isinf(y)) { r = select(0.78539816, 2.3561945, x < 0.0); }
    else { r = select(0.0, 3.1415927, x < 0.0); }
  } else if (wj_isinf(y)) {
    r = 1.5707964;
  } else if (y == 0.0) {
    r = select(0.0, 3.1415927, (bitcast<u32>(x) & 0x80000000u) != 0u);
  } else if (x == 0.0) {
    r = 1.5707964;
  } else {
    let a = wj_atan_pos(abs(wj_div(y, x)));
    r = select(a, 3.1415927 - a, x < 0.0);
  }
  return bitcast<f32>(bitcast<u32>(r) | select(0u, 0x80000000u, neg));
}""")
# Cephes' atanf (|rel err| ~2e-7): the atan builtin of some drivers (lavapipe) is off by 1e-5
W.helper("wj_atan_pos", """
fn wj_atan_pos(x: f32) -> f32 {
  var y = 0.0;
  var z = x;
  if (x > 2.4142137) { y = 1.5707964; z = wj_div(-1.0, x); }
  else if (x > 0.41421357) { y = 0.7853982; z = wj_div(x - 1.0, x + 1.0); }
  let zz = z * z;
  return y + ((((0.0805374449538 * zz - 0.138776856032) * zz + 0.199777106478) * zz
               - 0.333329491539) * zz * z + z);
}""")
# |x| < 2^-12 (by the bits: ±0 and subnormals too): atan x rounds to x; the sign by the bits
W.helper("wj_atan", """
fn wj_atan(x: f32) -> f32 {
  if (wj_isnan(x) || (bitcast<u32>(x) & 0x7fffffffu) < 0x39800000u) { return x; }
  return wj_copysign(wj_atan_pos(abs(x)), x);
}""")
# asin/acos through atan2: some drivers' (lavapipe's) builtins are off by ~6e-5.  asin x
# rounds to x for |x| < 2^-12 (tested by the bits: ±0 and subnormals too); through atan2 the
# 2.5 ulp quotient x / 1 would leave the smallest normal and a flushing driver return 0.
W.helper("wj_asin", """
fn wj_asin(x: f32) -> f32 {
  if ((bitcast<u32>(x) & 0x7fffffffu) < 0x39800000u) { return x; }
  if (wj_isnan(x) || abs(x) > 1.0) { return bitcast<f32>(0x7fc00000u); }
  return wj_atan2(x, wj_sqrt((1.0 - x) * (1.0 + x)));
}""")
W.helper("wj_acos", """
fn wj_acos(x: f32) -> f32 {
  if (wj_isnan(x) || abs(x) > 1.0) { return bitcast<f32>(0x7fc00000u); }
  return wj_atan2(wj_sqrt((1.0 - x) * (1.0 + x)), x);
}""")
# fmod, exact like C's (musl's fmodf on the bits): float tricks such as x - y * trunc(x / y)
# lose the low bits once x / y rounds, and drivers may not fuse fma
W.helper("wj_rem_f", """
fn wj_rem_f(x: f32, y: f32) -> f32 {
  if (wj_isnan(x) || wj_isnan(y) || wj_isinf(x) || y == 0.0) { return bitcast<f32>(0x7fc00000u); }
  if (wj_isinf(y)) { return x; }
  let ux = bitcast<u32>(x);
  let uy = bitcast<u32>(y);
  let sx = ux & 0x80000000u;
  if ((ux << 1u) <= (uy << 1u)) {
    if ((ux << 1u) == (uy << 1u)) { return bitcast<f32>(sx); }
    return x;
  }
  var ex = i32((ux >> 23u) & 0xffu);
  var ey = i32((uy >> 23u) & 0xffu);
  var mx = ux;
  var my = uy;
  if (ex == 0) {
    var t = mx << 9u;
    loop { if ((t >> 31u) != 0u) { break; } ex = ex - 1; t = t << 1u; }
    mx = mx << u32(1 - ex);
  } else { mx = (mx & 0x7fffffu) | 0x800000u; }
  if (ey == 0) {
    var t = my << 9u;
    loop { if ((t >> 31u) != 0u) { break; } ey = ey - 1; t = t << 1u; }
    my = my << u32(1 - ey);
  } else { my = (my & 0x7fffffu) | 0x800000u; }
  loop {
    if (ex <= ey) { break; }
    let d = mx - my;
    if ((d >> 31u) == 0u) {
      if (d == 0u) { return bitcast<f32>(sx); }
      mx = d;
    }
    mx = mx << 1u;
    ex = ex - 1;
  }
  let d = mx - my;
  if ((d >> 31u) == 0u) {
    if (d == 0u) { return bitcast<f32>(sx); }
    mx = d;
  }
  loop { if ((mx >> 23u) != 0u) { break; } mx = mx << 1u; ex = ex - 1; }
  if (ex > 0) { mx = (mx - 0x800000u) | (u32(ex) << 23u); } else { mx = mx >> u32(1 - ex); }
  return bitcast<f32>(mx | sx);
}""")
W.helper(
    "wj_erf",
    """
fn wj_erf(x: f32) -> f32 {
  // |x| < 0.5: the Maclaurin series to x^15; beyond, 1 - erfc with Numerical Recipes'
  // Chebyshev fit of erfc (fractional error < 1.2e-7).  ±0 by the bits: a subnormal x goes
  // through the series, giving 1.128 x or, on a flushing driver, the ±0 of erf(±0) (NVIDIA's
  // `x == 0.0` is true at 1e-40, and returning x gave 1e-40: neither)
  if (wj_isnan(x) || (bitcast<u32>(x) & 0x7fffffffu) == 0u) { return x; }
  let z = abs(x);
  if (z > 4.0) { return wj_copysign(1.0, x); }   // 1 - erfc(4) rounds to 1
  var e: f32;
  if (z < 0.5) {
    let z2 = z * z;
    e = z * (1.1283791671 + z2 * (-0.3761263890 + z2 * (0.1128379167 + z2 * (-0.0268661706
        + z2 * (0.0052239776 + z2 * (-0.00085483270
        + z2 * (0.00012055332 + z2 * -1.4925650e-05)))))));
  } else {
    let t = wj_div(1.0, 1.0 + 0.5 * z);
    let s = bitcast<f32>(bitcast<u32>(z) & 0xfffff000u);   // s*s exact: see scipy.special._erfc
    let r = t * wj_exp(-(s * s)) * wj_exp(-(z - s) * (z + s) - 1.26551223 + t * (1.00002368
            + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807
            + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    e = 1.0 - r;
  }
  return wj_copysign(e, x);
}""",
)
