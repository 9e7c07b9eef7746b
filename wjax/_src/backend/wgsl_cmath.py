"""complex64 math for kernels: a complex value is a ``vec2<f32>`` of (re, im).

The helpers follow the rules of ``wgsl_math`` (no cancellation tricks, specials by the bits)
and compute each function from the real helpers there.  What they return is specified by the
NumPy references in ``wjax/_src/prims/cmath_ref.py``, which the tests hold against real JAX:

* **Finite inputs** get the accurate value (NumPy's complex128 value, rounded), computed with
  formulas that avoid overflow and cancellation where a component can be small: ``log1p`` and
  ``expm1`` near 0, ``tanh`` by Kahan's formula, ``asin``/``acos`` by Hull, Fairgrieve and Tang's
  algorithm, ``atanh`` by Kahan's, ``abs`` and ``sign`` scaled by the larger component.
* **Non-finite inputs** (an inf or NaN component) and the **branch cuts** give JAX's values, which
  differ from C99's in places: ``exp(inf + inf j)`` is NaN, ``sqrt`` and the inverse functions
  treat a -0 on their cut as +0 (``sqrt(-1 - 0j)`` is ``1j``), ``atanh(nan + yj)`` is
  ``(nan, +-pi/2)``.  Each rule is tested with an explicit select; nothing relies on a product
  with an infinity except ``wj_cmul`` itself (XLA's complex multiply is the plain formula, NaN
  from ``inf * 0`` included).

Identities used as JAX defines them: ``sin z = -i sinh(iz)``, ``cos z = cosh(iz)``,
``tan z = -i tanh(iz)``, ``asinh z = -i asin(iz)``, ``atan z = -i atanh(iz)``,
``pow(x, y) = exp(y log x)`` with XLA's cases for ``x**0``, ``0**y``, ``1**y`` and ``inf**y``.
"""
from __future__ import annotations

from . import wgsl as W
from . import wgsl_math  # noqa: F401  (the real helpers these build on)

_NAN = "bitcast<f32>(0x7fc00000u)"
_INF = "bitcast<f32>(0x7f800000u)"

W.helper("wj_isfin",
         "fn wj_isfin(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }")
W.helper("wj_cnan", f"fn wj_cnan() -> vec2<f32> {{ return vec2<f32>({_NAN}, {_NAN}); }}")
W.helper("wj_cfin", """
fn wj_cfin(z: vec2<f32>) -> bool { return wj_isfin(z.x) && wj_isfin(z.y); }""")
W.helper("wj_canynan", """
fn wj_canynan(z: vec2<f32>) -> bool { return wj_isnan(z.x) || wj_isnan(z.y); }""")

# --------------------------------------------------------------------------- arithmetic

W.helper("wj_cmul", """
fn wj_cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}""")
# s * v for s an exact +-inf or +-0, by the bits (inf * 0 and 0 * inf are NaN)
W.helper("wj_mulspec", f"""
fn wj_mulspec(s: f32, v: f32) -> f32 {{
  let sgn = (bitcast<u32>(s) ^ bitcast<u32>(v)) & 0x80000000u;
  let s_inf = wj_isinf(s);
  let nan = wj_isnan(v) || (s_inf && v == 0.0) || (!s_inf && wj_isinf(v));
  let mag = select(0u, 0x7f800000u, s_inf);
  return select(bitcast<f32>(sgn | mag), {_NAN}, nan);
}}""")
W.helper("wj_unit_of", """
fn wj_unit_of(v: f32) -> f32 { return wj_copysign(select(0.0, 1.0, wj_isinf(v)), v); }""")
# XLA's division: Smith's algorithm; where it gives (NaN, NaN), C99's recovery: a zero
# denominator gives copysign(inf, re q) * p, an infinite numerator over a finite denominator
# inf * (...), a finite one over an infinite denominator 0 * (...)
W.helper("wj_cdiv", f"""
fn wj_cdiv(p: vec2<f32>, q: vec2<f32>) -> vec2<f32> {{
  let a = p.x; let b = p.y; let c = q.x; let d = q.y;
  var r: vec2<f32>;
  if (abs(c) < abs(d)) {{
    let t = wj_div(c, d);
    let den = d + c * t;
    r = vec2<f32>(wj_div(a * t + b, den), wj_div(b * t - a, den));
  }} else {{
    let t = wj_div(d, c);
    let den = c + d * t;
    r = vec2<f32>(wj_div(a + b * t, den), wj_div(b - a * t, den));
  }}
  if (wj_isnan(r.x) && wj_isnan(r.y)) {{
    if (c == 0.0 && d == 0.0 && !(wj_isnan(a) && wj_isnan(b))) {{
      let s = wj_copysign({_INF}, c);
      r = vec2<f32>(wj_mulspec(s, a), wj_mulspec(s, b));
    }} else if ((wj_isinf(a) || wj_isinf(b)) && wj_isfin(c) && wj_isfin(d)) {{
      let a2 = wj_unit_of(a); let b2 = wj_unit_of(b);
      r = vec2<f32>(wj_mulspec({_INF}, a2 * c + b2 * d), wj_mulspec({_INF}, b2 * c - a2 * d));
    }} else if ((wj_isinf(c) || wj_isinf(d)) && wj_isfin(a) && wj_isfin(b)) {{
      let c3 = wj_unit_of(c); let d3 = wj_unit_of(d);
      r = vec2<f32>(wj_mulspec(0.0, a * c3 + b * d3), wj_mulspec(0.0, b * c3 - a * d3));
    }}
  }}
  return r;
}}""")
W.helper("wj_ceq", """
fn wj_ceq(a: vec2<f32>, b: vec2<f32>) -> bool { return a.x == b.x && a.y == b.y; }""")
# drivers may compile float != as an ordered compare: NaN is tested by the bits
W.helper("wj_cne", """
fn wj_cne(a: vec2<f32>, b: vec2<f32>) -> bool {
  return a.x != b.x || a.y != b.y || wj_canynan(a) || wj_canynan(b);
}""")

# --------------------------------------------------------------------------- abs, sign

# |z| = m sqrt(1 + (n/m)^2), m = max(|re|, |im|): no overflow or underflow in between;
# NaN if a component is NaN (inf beside NaN too, as JAX), inf if one is inf
W.helper("wj_cabs", f"""
fn wj_cabs(z: vec2<f32>) -> f32 {{
  if (wj_canynan(z)) {{ return {_NAN}; }}
  if (wj_isinf(z.x) || wj_isinf(z.y)) {{ return {_INF}; }}
  let m = max(abs(z.x), abs(z.y));
  let n = min(abs(z.x), abs(z.y));
  if (m == 0.0) {{ return 0.0; }}
  let r = wj_div(n, m);
  return m * wj_sqrt(1.0 + r * r);
}}""")
W.helper("wj_csign", f"""
fn wj_csign(z: vec2<f32>) -> vec2<f32> {{
  if (wj_canynan(z)) {{ return wj_cnan(); }}
  if (!wj_cfin(z)) {{   // x / inf componentwise: +-0, NaN for the infinite components
    return vec2<f32>(select(wj_copysign(0.0, z.x), {_NAN}, wj_isinf(z.x)),
                     select(wj_copysign(0.0, z.y), {_NAN}, wj_isinf(z.y)));
  }}
  // zero and subnormal by the bits: where both components are subnormal (or zero), they are
  // scaled by 2^149 through their integer significands (exact), as a flushing driver would read
  // them as zeros in z / m (NVIDIA's `m == 0.0` is true at 1e-45: sign(1e-45 + 0j) was z); the
  // larger magnitude by an integer max, as a float max flushes there too (an H200's
  // max(abs(1e-45), 0.0) was 0, and z came back)
  let mb = max(bitcast<u32>(z.x) & 0x7fffffffu, bitcast<u32>(z.y) & 0x7fffffffu);
  if (mb == 0u) {{ return z; }}
  var w = z;
  if (mb < 0x00800000u) {{
    w = vec2<f32>(wj_copysign(f32(bitcast<u32>(z.x) & 0x7fffffu), z.x),
                  wj_copysign(f32(bitcast<u32>(z.y) & 0x7fffffu), z.y));
  }}
  let u = w / max(abs(w.x), abs(w.y));
  return u / sqrt(u.x * u.x + u.y * u.y);
}}""")

# --------------------------------------------------------------------------- exp, log

# e^a (cos b, sin b); e^a split as two factors past 88 so a finite result never overflows in
# between; JAX: an imaginary part of 0 stays 0 (exp(inf + 0j) = inf + 0j), 0 tested by the bits
# (a flushing driver's `b == 0.0` is true at b = 1e-45, which kept b: neither e^a b nor 0);
# NaN for a non-finite imaginary part
W.helper("wj_cexp", """
fn wj_cexp(z: vec2<f32>) -> vec2<f32> {
  if (!wj_isfin(z.y)) { return wj_cnan(); }
  let c = wj_cos(z.y);
  let s = wj_sin(z.y);
  var r: vec2<f32>;
  if (z.x < 88.0) {
    let e = wj_exp(z.x);
    r = vec2<f32>(e * c, e * s);
  } else {
    let h = wj_exp(0.5 * z.x);
    r = vec2<f32>((h * c) * h, (h * s) * h);
  }
  return vec2<f32>(r.x, select(r.y, z.y, (bitcast<u32>(z.y) & 0x7fffffffu) == 0u));
}""")
# expm1(a) cos b - 2 sin^2(b/2) + i e^a sin b: no cancellation near 0
W.helper("wj_cexpm1", """
fn wj_cexpm1(z: vec2<f32>) -> vec2<f32> {
  if (!wj_isfin(z.y)) { return wj_cnan(); }
  if (z.x > 80.0) { return wj_cexp(z) - vec2<f32>(1.0, 0.0); }
  let c = wj_cos(z.y);
  let s = wj_sin(z.y);
  let h = wj_sin(0.5 * z.y);
  let re = wj_expm1(z.x) * c - 2.0 * h * h;
  let im = wj_exp(z.x) * s;
  return vec2<f32>(re, select(im, z.y, (bitcast<u32>(z.y) & 0x7fffffffu) == 0u));
}""")
# log|z| = log m + log1p((n/m)^2) / 2: no overflow or underflow
W.helper("wj_clogabs", f"""
fn wj_clogabs(z: vec2<f32>) -> f32 {{
  let m = max(abs(z.x), abs(z.y));
  let n = min(abs(z.x), abs(z.y));
  if (wj_isinf(m)) {{ return {_INF}; }}
  if (m == 0.0) {{ return bitcast<f32>(0xff800000u); }}
  let r = wj_div(n, m);
  return wj_log(m) + 0.5 * wj_log1p(r * r);
}}""")
W.helper("wj_clog", """
fn wj_clog(z: vec2<f32>) -> vec2<f32> {
  if (wj_canynan(z)) { return wj_cnan(); }
  return vec2<f32>(wj_clogabs(z), wj_atan2(z.y, z.x));
}""")
# small |z|: log|1 + z| = log1p(a (2 + a) + b^2) / 2; beyond, the log of |1 + z| itself (1 + a
# is exact where it is small).  The imaginary part atan2(b, 1) is b itself for |b| < 2^-12 (by
# the bits): the quotient b / 1 of a 2.5 ulp division would move b = 2^-126 below the normal
# range, and a flushing driver return 0.
W.helper("wj_clog1p", """
fn wj_clog1p(z: vec2<f32>) -> vec2<f32> {
  if (wj_canynan(z)) { return wj_cnan(); }
  // both components subnormal or zero (by the bits): log1p z = z - z^2/2 rounds to z (a zero
  // real part is +0: log|1 + z| = log 1), on every driver
  let ux = bitcast<u32>(z.x) & 0x7fffffffu;
  if (max(ux, bitcast<u32>(z.y) & 0x7fffffffu) < 0x00800000u) {
    return vec2<f32>(select(z.x, 0.0, ux == 0u), z.y);
  }
  let w = vec2<f32>(1.0 + z.x, z.y);
  let im = select(wj_atan2(z.y, w.x), z.y,
                  w.x == 1.0 && (bitcast<u32>(z.y) & 0x7fffffffu) < 0x39800000u);
  if (max(abs(z.x), abs(z.y)) < 0.5) {
    return vec2<f32>(0.5 * wj_log1p(z.x * (2.0 + z.x) + z.y * z.y), im);
  }
  return vec2<f32>(wj_clogabs(w), im);
}""")
W.helper("wj_cexp2", """
fn wj_cexp2(z: vec2<f32>) -> vec2<f32> {
  if (!wj_cfin(z)) { return wj_cnan(); }
  return wj_cexp(z * 0.6931472);
}""")

# --------------------------------------------------------------------------- roots, powers

# t = sqrt((|a| + |z|) / 2) on a scaled z; (t, b / 2t) for a >= 0, (|b| / 2t, +-t) else.
# ``signed``: the sign of a zero imaginary part picks the side of the cut (NumPy, and JAX's
# rsqrt); else -0 counts as +0 (JAX's sqrt)
W.helper("wj_csqrt_s", f"""
fn wj_csqrt_s(z: vec2<f32>, signed: bool) -> vec2<f32> {{
  if (wj_canynan(z)) {{ return wj_cnan(); }}
  let b = select(z.y, 0.0, z.y == 0.0 && !signed);
  if (wj_isinf(b)) {{ return vec2<f32>({_INF}, b); }}
  if (wj_isinf(z.x)) {{
    if (z.x > 0.0) {{ return vec2<f32>(z.x, wj_copysign(0.0, b)); }}
    return vec2<f32>(0.0, wj_copysign({_INF}, b));
  }}
  let m = max(abs(z.x), abs(b));
  if (m == 0.0) {{ return vec2<f32>(0.0, b); }}
  // scale by an even power of two into [2^-40, 2^40]: the result scales by its square root
  var sc = 1.0;
  var un = 1.0;
  if (m > 1e30) {{ sc = 7.888609e-31; un = 1.1258999e15; }}       // 2^-100, 2^50
  else if (m < 1e-30) {{ sc = 1.2676506e30; un = 8.881784e-16; }}  // 2^100, 2^-50
  let a = z.x * sc;
  let bb = b * sc;
  let t = wj_sqrt(0.5 * (abs(a) + wj_cabs(vec2<f32>(a, bb))));
  var r: vec2<f32>;
  if (a >= 0.0) {{ r = vec2<f32>(t, wj_div(bb, 2.0 * t)); }}
  else {{ r = vec2<f32>(wj_div(abs(bb), 2.0 * t), wj_copysign(t, bb)); }}
  return r * un;
}}""")
W.helper("wj_csqrt", "fn wj_csqrt(z: vec2<f32>) -> vec2<f32> { return wj_csqrt_s(z, false); }")
W.helper("wj_crsqrt", """
fn wj_crsqrt(z: vec2<f32>) -> vec2<f32> {
  if (wj_isinf(z.x) || wj_isinf(z.y)) { return vec2<f32>(0.0, 0.0); }
  if (wj_canynan(z)) { return wj_cnan(); }
  return wj_cdiv(vec2<f32>(1.0, 0.0), wj_csqrt_s(z, true));
}""")
# XLA's sqrt inside its complex expansions (atan2): sqrt|z| (cos(t/2), sin(t/2)) for finite z
W.helper("wj_csqrt_polar", """
fn wj_csqrt_polar(z: vec2<f32>) -> vec2<f32> {
  if (!wj_cfin(z)) { return wj_csqrt(z); }
  if (z.x == 0.0 && z.y == 0.0) { return vec2<f32>(0.0, 0.0); }
  let r = wj_sqrt(wj_cabs(z));
  let t = 0.5 * wj_atan2(z.y, z.x);
  return vec2<f32>(r * wj_cos(t), r * wj_sin(t));
}""")
# z^2 by XLA's plain product formula, every product rounded on its own (a driver contracting
# x^2 - y^2 into a fused multiply-add changes x^2 + y^2 where it cancels, as in atan2)
W.helper("wj_csq_plain", """
fn wj_csq_plain(z: vec2<f32>) -> vec2<f32> {
  return vec2<f32>(wj_opq(z.x * z.x) - wj_opq(z.y * z.y), 2.0 * (z.x * z.y));
}""")
# XLA's atan2(y, x) = -i log(q), q = (x + i y) / sqrt(x^2 + y^2); the products by +-i written
# out with the 0 * v terms by the bits (NaN for 0 * inf, as XLA's plain product); a q within
# 2^-21 of log's cut (the negative reals) is on it, from above (cmath_ref.atan2)
W.helper("wj_catan2", """
fn wj_catan2(y: vec2<f32>, x: vec2<f32>) -> vec2<f32> {
  let s = wj_csqrt_polar(wj_csq_plain(x) + wj_csq_plain(y));
  let iy = vec2<f32>(wj_mulspec(0.0, y.x) - y.y, wj_mulspec(0.0, y.y) + y.x);
  var q = wj_cdiv(x + iy, s);
  if (q.x < 0.0 && q.y != 0.0 && abs(q.y) <= 4.7683716e-7 * -q.x) { q.y = 0.0; }
  let l = wj_clog(q);
  return vec2<f32>(wj_mulspec(0.0, l.x) + l.y, wj_mulspec(0.0, l.y) - l.x);
}""")
W.helper("wj_cpow", f"""
fn wj_cpow(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {{
  if (y.x == 0.0 && y.y == 0.0) {{ return vec2<f32>(1.0, 0.0); }}
  if (x.x == 1.0 && x.y == 0.0) {{ return vec2<f32>(1.0, 0.0); }}
  if (x.x == 0.0 && x.y == 0.0) {{
    if (y.y == 0.0 && y.x > 0.0) {{ return vec2<f32>(0.0, 0.0); }}
    return wj_cnan();
  }}
  if (bitcast<u32>(x.x) == 0x7f800000u && x.y == 0.0 && y.y == 0.0 && !wj_isnan(y.x)) {{
    return vec2<f32>(select(0.0, {_INF}, y.x > 0.0), 0.0);
  }}
  return wj_cexp(wj_cmul(y, wj_clog(x)));
}}""")

# --------------------------------------------------------------------------- hyperbolic, trig

# past |re| = 88, sinh and cosh of the real part times cos b / sin b as wj_exph_mul (e^|a| / 2
# times the factor, scaled last): no overflow before a finite result, however a compiler
# regroups; a zero imaginary part (by the bits, as in wj_cexp) is kept
W.helper("wj_csinh", """
fn wj_csinh(z: vec2<f32>) -> vec2<f32> {
  if (!wj_isfin(z.y)) { return wj_cnan(); }
  if ((bitcast<u32>(z.y) & 0x7fffffffu) == 0u) { return vec2<f32>(wj_sinh(z.x), z.y); }
  let c = wj_cos(z.y);
  let s = wj_sin(z.y);
  if (abs(z.x) > 88.0) {
    let re = wj_exph_mul(abs(z.x), c);
    return vec2<f32>(select(re, -re, z.x < 0.0), wj_exph_mul(abs(z.x), s));
  }
  return vec2<f32>(wj_sinh(z.x) * c, wj_cosh(z.x) * s);
}""")
W.helper("wj_ccosh", """
fn wj_ccosh(z: vec2<f32>) -> vec2<f32> {
  if (!wj_isfin(z.y)) { return wj_cnan(); }
  if ((bitcast<u32>(z.y) & 0x7fffffffu) == 0u) { return vec2<f32>(wj_cosh(z.x), z.y); }
  let c = wj_cos(z.y);
  let s = wj_sin(z.y);
  if (abs(z.x) > 88.0) {
    let im = wj_exph_mul(abs(z.x), s);
    return vec2<f32>(wj_exph_mul(abs(z.x), c), select(im, -im, z.x < 0.0));
  }
  return vec2<f32>(wj_cosh(z.x) * c, wj_sinh(z.x) * s);
}""")
# Kahan: with t = tan b, s = sinh a, beta = 1 + t^2: (beta cosh(a) s + i t) / (1 + beta s^2);
# (+-1, 4 sin b cos b e^-2|a|) once tanh a rounds to +-1
W.helper("wj_ctanh", """
fn wj_ctanh(z: vec2<f32>) -> vec2<f32> {
  if (wj_isinf(z.x)) { return vec2<f32>(wj_copysign(1.0, z.x), 0.0); }
  if (wj_isnan(z.x)) {
    if (z.y == 0.0) { return vec2<f32>(z.x, z.y); }
    return wj_cnan();
  }
  if (!wj_isfin(z.y)) { return wj_cnan(); }
  // |re|, |im| < 2^-12 (by the bits): tanh z = z - z^3/3 rounds to z; the quotients by
  // den = 1 would move a component at 2^-126 below the normal range (then flushed)
  if (max(bitcast<u32>(z.x) & 0x7fffffffu, bitcast<u32>(z.y) & 0x7fffffffu) < 0x39800000u) {
    return z;
  }
  if (abs(z.x) > 9.1) {
    let e = wj_exp(-2.0 * abs(z.x));
    return vec2<f32>(wj_copysign(1.0, z.x), 4.0 * wj_sin(z.y) * wj_cos(z.y) * e);
  }
  let t = wj_tan(z.y);
  let s = wj_sinh(z.x);
  let beta = 1.0 + t * t;
  let den = 1.0 + beta * s * s;
  return vec2<f32>(beta * wj_cosh(z.x) * s / den, t / den);
}""")
# sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz): iz = (-b, a); -i (p, q) = (q, -p)
W.helper("wj_csin", """
fn wj_csin(z: vec2<f32>) -> vec2<f32> {
  let h = wj_csinh(vec2<f32>(-z.y, z.x));
  return vec2<f32>(h.y, -h.x);
}""")
W.helper("wj_ccos", """
fn wj_ccos(z: vec2<f32>) -> vec2<f32> { return wj_ccosh(vec2<f32>(-z.y, z.x)); }""")
W.helper("wj_ctan", """
fn wj_ctan(z: vec2<f32>) -> vec2<f32> {
  let h = wj_ctanh(vec2<f32>(-z.y, z.x));
  return vec2<f32>(h.y, -h.x);
}""")

# --------------------------------------------------------------------------- inverse functions

# Hull, Fairgrieve and Tang's asin/acos for x = |re|, y = |im| (finite, |z| < 1e5):
# (real part of asin, real part of acos, |imaginary part|)
W.helper("wj_casin_core", """
fn wj_casin_core(x: f32, y: f32) -> vec3<f32> {
  let r = wj_cabs(vec2<f32>(x + 1.0, y));
  let s = wj_cabs(vec2<f32>(x - 1.0, y));
  let A = 0.5 * r + 0.5 * s;
  let B = x / A;
  let y2 = y * y;
  let apx = A + x;
  var re_s: f32;
  var re_c: f32;
  if (B <= 0.6417) {
    re_s = wj_asin(B);
    re_c = wj_acos(B);
  } else if (x <= 1.0) {
    let d = sqrt(0.5 * apx * (y2 / (r + (x + 1.0)) + (s + (1.0 - x))));
    re_s = wj_atan(x / d);
    re_c = wj_atan(d / x);
  } else {
    let d = y * sqrt(0.5 * (apx / (r + (x + 1.0)) + apx / (s + (x - 1.0))));
    re_s = wj_atan2(x, d);
    re_c = wj_atan2(d, x);
  }
  var im: f32;
  if (A <= 1.5) {
    // t = 2 (A - 1); (A - 1)(A + 1) as t times the exact half of A + 1: halving a subnormal t
    // first rounds it away (on a driver keeping subnormals, acos(1 + 1e-45j) lost its
    // imaginary part, 3.7e-23); for a normal t the same product as (t / 2)(A + 1)
    var t: f32;
    if (x < 1.0) { t = y2 / (r + (x + 1.0)) + y2 / (s + (1.0 - x)); }
    else { t = y2 / (r + (x + 1.0)) + (s + (x - 1.0)); }
    im = wj_log1p(0.5 * t + sqrt(t * (0.5 * (A + 1.0))));
    if (x < 1.0 && y < 1e-18) { im = y / sqrt((1.0 - x) * (1.0 + x)); }
  } else if (A < 4096.0) {
    im = wj_log(A + sqrt(A * A - 1.0));
  } else {
    im = wj_log(A) + 0.6931472;
  }
  return vec3<f32>(re_s, re_c, im);
}""")
# asin and acos (``cos`` picks acos) of finite z, imaginary -0 counted as +0 (JAX's cut);
# |z| >= 1e5 and infinities: asin ~ (atan2(|a|, |b|), log 2|z|) with signs
W.helper("wj_casin_acos", f"""
fn wj_casin_acos(z: vec2<f32>, cos: bool) -> vec2<f32> {{
  let a = z.x;
  let b = select(z.y, 0.0, (bitcast<u32>(z.y) & 0x7fffffffu) == 0u);   // -0 by the bits
  let x = abs(a);
  let y = abs(b);
  let neg_b = b < 0.0;
  if (max(x, y) >= 1e5) {{
    let L = select(wj_log(max(x, y)) + 0.5 * wj_log1p((min(x, y) / max(x, y))
                   * (min(x, y) / max(x, y))), {_INF}, wj_isinf(x) || wj_isinf(y)) + 0.6931472;
    let im = select(L, -L, neg_b);
    if (cos) {{ return vec2<f32>(wj_atan2(y, a), -im); }}
    return vec2<f32>(wj_copysign(wj_atan2(x, y), a), im);
  }}
  // |re|, |im| < 2^-12 (by the bits): asin z = z + z^3/6 rounds to z, acos z to pi/2 - z; in
  // the core, x / A and y / sqrt(..) are quotients by 1 that would move 2^-126 below the
  // normal range (then flushed)
  if (max(bitcast<u32>(x), bitcast<u32>(y)) < 0x39800000u) {{
    if (cos) {{ return vec2<f32>(1.5707964 - a, -b); }}
    return vec2<f32>(a, b);
  }}
  let c = wj_casin_core(x, y);
  let im = select(c.z, -c.z, neg_b);
  if (cos) {{ return vec2<f32>(select(c.y, 3.1415927 - c.y, a < 0.0), -im); }}
  return vec2<f32>(wj_copysign(c.x, a), im);
}}""")
# NaN rules (JAX): a NaN imaginary part beside a real part >= sqrt(max)/8 (or inf) keeps
# log(2|re|); a NaN real part beside an infinite imaginary one keeps inf
W.helper("wj_clog2x", """
fn wj_clog2x(v: f32) -> f32 { return wj_log(abs(v)) + 0.6931472; }""")
W.helper("wj_casin", f"""
fn wj_casin(z: vec2<f32>) -> vec2<f32> {{
  if (wj_canynan(z)) {{
    if (wj_isnan(z.y) && !wj_isnan(z.x) && abs(z.x) >= 2.3058430e18) {{
      return vec2<f32>({_NAN}, wj_clog2x(z.x));
    }}
    if (wj_isnan(z.x) && wj_isinf(z.y)) {{ return vec2<f32>({_NAN}, z.y); }}
    return wj_cnan();
  }}
  return wj_casin_acos(z, false);
}}""")
W.helper("wj_cacos", f"""
fn wj_cacos(z: vec2<f32>) -> vec2<f32> {{
  if (wj_canynan(z)) {{
    if (wj_isnan(z.y) && !wj_isnan(z.x) && abs(z.x) >= 2.3058430e18) {{
      return vec2<f32>({_NAN}, -wj_clog2x(z.x));
    }}
    if (wj_isnan(z.x) && wj_isinf(z.y)) {{ return vec2<f32>({_NAN}, -z.y); }}
    return wj_cnan();
  }}
  return wj_casin_acos(z, true);
}}""")
# acosh z = +-i acos z, the sign making the real part >= 0
W.helper("wj_cacosh", f"""
fn wj_cacosh(z: vec2<f32>) -> vec2<f32> {{
  if (wj_canynan(z)) {{
    if (wj_isnan(z.y) && !wj_isnan(z.x) && abs(z.x) >= 2.3058430e18) {{
      return vec2<f32>(wj_clog2x(z.x), {_NAN});
    }}
    if (wj_isnan(z.x) && wj_isinf(z.y)) {{ return vec2<f32>({_INF}, {_NAN}); }}
    return wj_cnan();
  }}
  let w = wj_casin_acos(z, true);
  let b = select(z.y, 0.0, z.y == 0.0);
  if (b < 0.0) {{ return vec2<f32>(w.y, -w.x); }}
  return vec2<f32>(-w.y, w.x);
}}""")
# asinh z = -i asin(iz), real -0 counted as +0 (JAX's cut)
W.helper("wj_casinh", f"""
fn wj_casinh(z: vec2<f32>) -> vec2<f32> {{
  if (wj_canynan(z)) {{
    if (wj_isnan(z.x) && !wj_isnan(z.y) && abs(z.y) >= 2.3058430e18) {{
      return vec2<f32>(wj_clog2x(z.y), {_NAN});
    }}
    if (wj_isnan(z.y) && wj_isinf(z.x)) {{ return vec2<f32>(z.x, {_NAN}); }}
    return wj_cnan();
  }}
  let a = select(z.x, 0.0, (bitcast<u32>(z.x) & 0x7fffffffu) == 0u);   // -0 by the bits
  let w = wj_casin_acos(vec2<f32>(-z.y, a), false);
  return vec2<f32>(w.y, -w.x);
}}""")
# on a >= 0 (atanh(-z) = -atanh(z)): Kahan's (log1p(4a / ((1 - a)^2 + b^2)) / 4,
# atan2(2b, (1 - a)(1 + a) - b^2) / 2), the real part as (log|1 + z| - log|1 - z|) / 2 near 1;
# for large |z| (a / |z|^2, +-pi/2), +pi/2 on the real axis past 2^48 whatever the zero's
# sign (JAX).  NaN rules as JAX's: NaN real part (0 beside an inf), imaginary part pi/2 signed
# by b (-1 for a NaN b, +1 for a zero)
W.helper("wj_catanh_pos", """
fn wj_catanh_pos(a: f32, b: f32) -> vec2<f32> {
  let m = max(a, abs(b));
  if (m >= 1e9) {
    var re = 0.0;
    if (!wj_isinf(m)) { let r = wj_cabs(vec2<f32>(a, b)); re = (a / m) * (m / r) / r; }
    return vec2<f32>(re, wj_copysign(1.5707964, b));
  }
  let om = 1.0 - a;
  var re: f32;
  if (max(abs(om), abs(b)) < 0.5) {
    re = 0.5 * (wj_clogabs(vec2<f32>(1.0 + a, b)) - wj_clogabs(vec2<f32>(om, b)));
  } else {
    re = 0.25 * wj_log1p(4.0 * a / (om * om + b * b));
  }
  return vec2<f32>(re, 0.5 * wj_atan2(2.0 * b, om * (1.0 + a) - b * b));
}""")
W.helper("wj_catanh", f"""
fn wj_catanh(z: vec2<f32>) -> vec2<f32> {{
  let a = z.x;
  let b = z.y;
  if (wj_canynan(z)) {{
    let sb = select(select(wj_copysign(1.0, b), 1.0, b == 0.0), -1.0, wj_isnan(b));
    var re = {_NAN};
    if (wj_isinf(a)) {{ re = wj_copysign(0.0, a); }}
    else if (wj_isinf(b)) {{ re = 0.0; }}
    return vec2<f32>(re, sb * 1.5707964);
  }}
  // |re|, |im| < 2^-12 (by the bits): atanh z = z + z^3/3 rounds to z (Kahan's quotients by 1
  // would move a component at 2^-126 below the normal range, then flushed)
  if (max(bitcast<u32>(a) & 0x7fffffffu, bitcast<u32>(b) & 0x7fffffffu) < 0x39800000u) {{
    return z;
  }}
  var w: vec2<f32>;
  if ((bitcast<u32>(a) & 0x80000000u) != 0u) {{ w = -wj_catanh_pos(-a, -b); }}
  else {{ w = wj_catanh_pos(a, b); }}
  if (b == 0.0 && abs(a) >= 281474976710656.0) {{ w.y = 1.5707964; }}
  return w;
}}""")
W.helper("wj_catan", """
fn wj_catan(z: vec2<f32>) -> vec2<f32> {
  let h = wj_catanh(vec2<f32>(-z.y, z.x));
  return vec2<f32>(h.y, -h.x);
}""")
W.helper("wj_clogistic", """
fn wj_clogistic(z: vec2<f32>) -> vec2<f32> {
  return wj_cdiv(vec2<f32>(1.0, 0.0), vec2<f32>(1.0, 0.0) + wj_cexp(-z));
}""")
