"""More elementwise primitives: erf_inv, reduce_precision, and lax's special functions (erfc,
the incomplete gamma and beta functions, zeta, polygamma, Bessel i0e/i1e, nextafter, mulhi) --
all fusable expressions."""
from __future__ import annotations

import math

import numpy as np

from ..backend import wgsl as W
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import (F, T, _check_kind, _fill_f16_via_f32, _helpers_in, _same_dtypes, binop,
                          elementwise_shape, unop)
from ..transforms import ad as _ad
from ..core import dtypes, ops

# Giles' single-precision erfinv, the approximation XLA uses.
W.helper("wj_erfinv", """
fn wj_erfinv(x: f32) -> f32 {
  if (abs(x) >= 1.0) {
    if (x == 1.0) { return bitcast<f32>(0x7f800000u); }
    if (x == -1.0) { return bitcast<f32>(0xff800000u); }
    return bitcast<f32>(0x7fc00000u);
  }
  var w = -wj_log((1.0 - x) * (1.0 + x));
  var p: f32;
  if (w < 5.0) {
    w = w - 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  return p * x;
}""")


def _erfinv_ref(x):
    out = np.empty(x.shape, np.float64)
    flat = x.astype(np.float64).ravel()
    res = out.ravel()
    for i, v in enumerate(flat):
        if np.isnan(v) or abs(v) > 1:
            res[i] = np.nan
        elif abs(v) == 1:
            res[i] = math.copysign(np.inf, v)
        else:   # Newton on erf from a rough start
            y = 0.0
            for _ in range(100):
                err = math.erf(y) - v
                y -= err / (2 / math.sqrt(math.pi) * math.exp(-y * y))
                if abs(err) < 1e-16:
                    break
            res[i] = y
    return res.reshape(x.shape).astype(x.dtype)


erf_inv_p = unop("erf_inv", T(F, "wj_erfinv(f32({0}))"), _erfinv_ref)
_erf_inv_fuse = erf_inv_p.fuse


def _erf_inv_fuse_typed(kb, idx, read, in_avals, out_aval):
    e = _erf_inv_fuse(kb, idx, read, in_avals, out_aval)
    return e if W.value_type(out_aval.dtype) == "f32" else f"{W.value_type(out_aval.dtype)}({e})"


erf_inv_p.fuse = _erf_inv_fuse_typed

# --------------------------------------------------------------------------- reduce_precision

reduce_precision_p = Primitive("reduce_precision")


@reduce_precision_p.def_abstract_eval
def _rp_abstract(x, exponent_bits, mantissa_bits):
    _check_kind("reduce_precision", x.dtype, ("f",))
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(
            f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}"
        )
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _rp_expr(kb, v, exponent_bits, mantissa_bits):
    kb.use_helper("wj_isnan")
    b = kb.let(f"bitcast<u32>(f32({v}))", "u32")
    if mantissa_bits < 23:
        last = 1 << (23 - mantissa_bits)
        bias = (last >> 1) - 1
        b = kb.let(f"({b} + ((({b} & {last}u) >> {23 - mantissa_bits}u) + {bias}u)) & "
                   f"{(~(last - 1)) & 0xFFFFFFFF}u", "u32")
    if exponent_bits < 8:
        exp_mask = 0xFF << 23
        red_bias = (1 << (exponent_bits - 1)) - 1
        max_e, min_e = 127 + red_bias, 127 - red_bias
        e = kb.let(f"{b} & {exp_mask}u", "u32")
        signed_zero = kb.let(f"{b} & 0x80000000u", "u32")
        b = kb.let(f"select(select({b}, {signed_zero}, {e} <= {min_e << 23}u), "
                   f"{signed_zero} | {exp_mask}u, {e} > {max_e << 23}u)", "u32")
    return f"select(bitcast<f32>({b}), f32({v}), wj_isnan(f32({v})))"


@reduce_precision_p.def_fuse
def _rp_fuse(kb, idx, read, in_avals, out_aval, exponent_bits, mantissa_bits):
    e = _rp_expr(kb, read[0](idx), exponent_bits, mantissa_bits)
    return e if W.value_type(out_aval.dtype) == "f32" else f"{W.value_type(out_aval.dtype)}({e})"


def _rp_ref(x, exponent_bits, mantissa_bits):
    f = x.astype(np.float32)
    b = f.view(np.uint32).astype(np.uint64)
    if mantissa_bits < 23:
        last = 1 << (23 - mantissa_bits)
        bias = (last >> 1) - 1
        b = (
            (b + (((b & last) >> (23 - mantissa_bits)) + bias)) & ((~(last - 1)) & 0xFFFFFFFF)
        ) & 0xFFFFFFFF
    if exponent_bits < 8:
        exp_mask = 0xFF << 23
        red_bias = (1 << (exponent_bits - 1)) - 1
        max_e, min_e = 127 + red_bias, 127 - red_bias
        e = b & exp_mask
        sz = b & 0x80000000
        b = np.where(e > (max_e << 23), sz | exp_mask, np.where(e <= (min_e << 23), sz, b))
    r = b.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), f, r).astype(x.dtype)


reduce_precision_p.reference = _rp_ref
_batching.defvectorized(reduce_precision_p)


# --------------------------------------------------------------------------- autodiff

_ad.defjvp2(erf_inv_p, lambda g, ans, x: ops.mul(g, ops.mul(_ad.const(x, np.sqrt(np.pi) / 2),
                                                               ops.exp(ops.mul(ans, ans)))))
_ad.deflinear(
    reduce_precision_p,
    lambda ct, x, exponent_bits, mantissa_bits: [
        reduce_precision_p.bind(ct, exponent_bits=exponent_bits, mantissa_bits=mantissa_bits)
    ],
)


# ============================================================================ special functions
# lax's special functions (JAX's ``*_p`` primitives): each a WGSL helper evaluated per element
# -- series and continued fractions run as loops inside the kernel, which a composition of lax
# operations could only express as a while_loop over the whole array.  float16 computes in
# float32 and rounds, as XLA upcasts.  Edge cases follow XLA's (NaN outside the domain).

_SPECIAL_WGSL = {}


def _wgsl(name, src):
    _SPECIAL_WGSL[name] = W.helper(name, src)


_wgsl("wj_erfc", """
fn wj_erfc(x: f32) -> f32 {
  // |x| < 0.5: 1 - erf(x); beyond, erfc(|x|) = t exp(-x^2 + P(t)), t = 1 / (1 + |x| / 2)
  // (Numerical Recipes' Chebyshev fit, fractional error < 1.2e-7), exp(-x^2) split so the
  // large argument is exact
  if (wj_isnan(x)) { return x; }
  let ax = abs(x);
  if (ax < 0.5) { return 1.0 - wj_erf(x); }
  let z = min(ax, 10.5);
  let t = wj_div(1.0, 1.0 + 0.5 * z);
  let s = bitcast<f32>(bitcast<u32>(z) & 0xfffff000u);
  let p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
          + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223
          + t * 0.17087277))))))));
  let r = t * wj_exp(-(s * s)) * wj_exp(-(z - s) * (z + s) + p);
  return select(r, 2.0 - r, x < 0.0);
}""")

# The regularized incomplete gamma function and its derivatives: the power series of
# P(a, x) for x < max(1, a), the continued fraction of Q(a, x) (Legendre's, evaluated by
# the three-term recurrence with rescaling) beyond; the derivatives in ``a`` are carried
# through the same recurrences (forward mode).  mode 0: P; 1: Q; 2: dP/da; 3: dx/da along
# P(a, x) = const (the reparameterization gradient of a Gamma(a, 1) sample).
_wgsl("wj_igamma_impl", """
fn wj_igamma_impl(a: f32, x: f32, mode: u32) -> f32 {
  let nan = bitcast<f32>(0x7fc00000u);
  let eps = 1.1920929e-07;
  let deriv = mode >= 2u;
  let is_nan = wj_isnan(a) || wj_isnan(x);
  if (is_nan || x < 0.0 || a < 0.0) { return nan; }
  if (deriv && a == 0.0) { return nan; }
  if (!deriv && a == 0.0 && x == 0.0) { return nan; }
  if (x == 0.0) { return select(0.0, 1.0, mode == 1u); }
  if (!deriv && wj_isinf(x)) { return select(1.0, 0.0, mode == 1u); }
  if (mode == 1u && a == 0.0) { return 0.0; }
  var use_cf: bool;
  if (mode == 0u) { use_cf = x >= 1.0 && x > a; }
  else if (mode == 1u) { use_cf = x >= 1.0 && x >= a; }
  else { use_cf = x > 1.0 && x > a; }
  let lx = wj_log(x);
  let logax = a * lx - x - wj_lgamma(a);
  let enabled = !(logax < -88.72284);
  let ax = wj_exp(logax);
  if (!use_cf) {
    var r = a;
    var c: f32 = 1.0;
    var ans: f32 = 1.0;
    var dc: f32 = 0.0;
    var dans: f32 = 0.0;
    if (enabled) {
      for (var i = 0; i < 2000; i = i + 1) {
        r = r + 1.0;
        dc = dc * (x / r) - (c * x) / (r * r);
        dans = dans + dc;
        c = c * (x / r);
        ans = ans + c;
        if (deriv) {
          if (!(abs(dc / dans) > eps)) { break; }
        } else if (!(c / ans > eps)) { break; }
      }
    }
    if (mode == 0u) { return ans * ax / a; }
    if (mode == 1u) { return 1.0 - ans * ax / a; }
    let dl = lx - wj_digamma(a + 1.0);
    if (mode == 2u) { return ax * (ans * dl + dans) / a; }
    return -(dans + ans * dl) * x / a;
  }
  var y = 1.0 - a;
  var z = x + y + 1.0;
  var c: f32 = 0.0;
  var pkm2: f32 = 1.0;
  var qkm2 = x;
  var pkm1 = x + 1.0;
  var qkm1 = z * x;
  var ans = pkm1 / qkm1;
  var dpkm2: f32 = 0.0;
  var dqkm2: f32 = 0.0;
  var dpkm1: f32 = 0.0;
  var dqkm1 = -x;
  var dans = (dpkm1 - ans * dqkm1) / qkm1;
  if (enabled) {
    for (var i = 0; i < 2000; i = i + 1) {
      c = c + 1.0;
      y = y + 1.0;
      z = z + 2.0;
      let yc = y * c;
      let pk = pkm1 * z - pkm2 * yc;
      let qk = qkm1 * z - qkm2 * yc;
      let dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c;
      let dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c;
      var t: f32 = 1.0;
      var g: f32 = 1.0;
      if (qk != 0.0) {
        let r = pk / qk;
        t = abs((ans - r) / r);
        ans = r;
        let nd = (dpk - ans * dqk) / qk;
        g = abs(nd - dans);
        dans = nd;
      }
      pkm2 = pkm1; pkm1 = pk; qkm2 = qkm1; qkm1 = qk;
      dpkm2 = dpkm1; dpkm1 = dpk; dqkm2 = dqkm1; dqkm1 = dqk;
      if (abs(pk) > 8388608.0) {
        pkm2 = pkm2 * eps; pkm1 = pkm1 * eps; qkm2 = qkm2 * eps; qkm1 = qkm1 * eps;
        dpkm2 = dpkm2 * eps; dpkm1 = dpkm1 * eps; dqkm2 = dqkm2 * eps; dqkm1 = dqkm1 * eps;
      }
      if (deriv) {
        if (!(g > eps)) { break; }
      } else if (!(t > eps)) { break; }
    }
  }
  if (mode == 0u) { return 1.0 - ans * ax; }
  if (mode == 1u) { return ans * ax; }
  let dl = lx - wj_digamma(a);
  if (mode == 2u) { return -(ax * (ans * dl + dans)); }
  return (dans + ans * dl) * x;
}""")

# The regularized incomplete beta function: the continued fraction of DLMF 8.17.22 by the
# modified Lentz method (two partial numerators per step), on the side of the symmetry
# I_x(a, b) = 1 - I_{1-x}(b, a) where it converges quickly.
_wgsl("wj_betainc", """
fn wj_betainc(a0: f32, b0: f32, x0: f32) -> f32 {
  let nan = bitcast<f32>(0x7fc00000u);
  let tiny = 5.9604645e-08;
  let a_zero = a0 == 0.0 || wj_isinf(b0);
  let b_zero = b0 == 0.0 || wj_isinf(a0);
  if (wj_isnan(a0) || wj_isnan(b0) || wj_isnan(x0) || a0 < 0.0 || b0 < 0.0 || x0 < 0.0
      || x0 > 1.0 || (a_zero && b_zero)) { return nan; }
  if ((a_zero && x0 != 0.0) || (b_zero && x0 == 1.0)) { return 1.0; }
  if ((b_zero && x0 != 1.0) || (a_zero && x0 == 0.0)) { return 0.0; }
  let swap = !(x0 < (a0 + 1.0) / (a0 + b0 + 2.0));
  let a = select(a0, b0, swap);
  let b = select(b0, a0, swap);
  let x = select(x0, 1.0 - x0, swap);
  var c: f32 = 1.0;
  var d = 1.0 - (a + b) * x / (a + 1.0);
  if (abs(d) < tiny) { d = tiny; }
  d = 1.0 / d;
  var h = d;
  for (var m = 1; m < 100; m = m + 1) {
    let fm = f32(m);
    let m2 = 2.0 * fm;
    var aa = fm * (b - fm) * x / ((a - 1.0 + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (abs(d) < tiny) { d = tiny; }
    c = 1.0 + aa / c;
    if (abs(c) < tiny) { c = tiny; }
    d = 1.0 / d;
    h = h * d * c;
    aa = -(a + fm) * (a + b + fm) * x / ((a + m2) * (a + 1.0 + m2));
    d = 1.0 + aa * d;
    if (abs(d) < tiny) { d = tiny; }
    c = 1.0 + aa / c;
    if (abs(c) < tiny) { c = tiny; }
    d = 1.0 / d;
    let del = d * c;
    h = h * del;
    if (abs(del - 1.0) < tiny) { break; }
  }
  let l1mx = wj_log1p(-x);
  let lb_small = wj_lgamma(b) - wj_lgamma(a + b);
  var r: f32;
  if (a < 2.3509887e-38) {
    r = h * wj_exp(l1mx * b - lb_small);
  } else {
    r = h * wj_exp(wj_log(x) * a + l1mx * b - (wj_lgamma(a) + lb_small)) / a;
  }
  return select(r, 1.0 - r, swap);
}""")

# The Hurwitz zeta function (Euler-Maclaurin summation: terms to q + N >= 9, then the tail
# integral and its Bernoulli corrections); negative q is summed directly for integer s.
_wgsl("wj_zeta", """
fn wj_zeta(s: f32, q: f32) -> f32 {
  let nan = bitcast<f32>(0x7fc00000u);
  let inf = bitcast<f32>(0x7f800000u);
  let eps = 1.1920929e-07;
  if (s == 1.0) { return inf; }
  if (wj_isnan(s) || wj_isnan(q)) { return nan; }
  if (q <= 0.0 && q == floor(q)) {
    // a pole: (q + k)^-s changes sign with k unless s is an even integer
    return select(nan, inf, s - 2.0 * floor(0.5 * s) == 0.0);
  }
  if (s < 1.0 || (q < 0.0 && s != floor(s))) { return nan; }
  var sum = wj_pow_f(q, -s);
  var a = q;
  var b: f32 = 0.0;
  var i = 0;
  loop {
    if (!((i < 9 || a <= 9.0) && i < 16384)) { break; }
    i = i + 1;
    a = a + 1.0;
    b = wj_pow_f(a, -s);
    sum = sum + b;
    if (a > 0.0 && abs(b) <= eps * abs(sum)) { return sum; }
  }
  let w = a;
  sum = sum + b * w / (s - 1.0) - 0.5 * b;
  var fac: f32 = 1.0;
  var k: f32 = 0.0;
  let den = array<f32, 12>(12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
    -1.8924375803183791606e9, 7.47242496e10, -2.950130727918164224e12,
    1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
    -7.1661652561756670113e18);
  for (var j = 0; j < 12; j = j + 1) {
    fac = fac * (s + k);
    b = b / w;
    let t = fac * b / den[j];
    sum = sum + t;
    if (abs(t / sum) < eps) { break; }
    k = k + 1.0;
    fac = fac * (s + k);
    b = b / w;
    k = k + 1.0;
  }
  return sum;
}""")

# polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for integer n >= 1, digamma for n = 0.
_wgsl("wj_polygamma", """
fn wj_polygamma(n: f32, x: f32) -> f32 {
  if (wj_isnan(n) || wj_isnan(x) || wj_isinf(n) || n != floor(n) || n < 0.0) {
    return bitcast<f32>(0x7fc00000u);
  }
  if (n == 0.0) { return wj_digamma(x); }
  let odd = n - 2.0 * floor(0.5 * n) == 1.0;
  return select(-1.0, 1.0, odd) * wj_exp(wj_lgamma(n + 1.0)) * wj_zeta(n + 1.0, x);
}""")

# exp(-|x|) I0(x) and exp(-|x|) I1(x): the power series (positive terms) times exp(-|x|) up to
# |x| = 12, Hankel's asymptotic expansion beyond (its terms fall below 2e-8 by then).
_wgsl("wj_i0e", """
fn wj_i0e(x0: f32) -> f32 {
  if (wj_isnan(x0)) { return x0; }
  let x = abs(x0);
  if (x <= 12.0) {
    let q = 0.25 * x * x;
    var term: f32 = 1.0;
    var sum: f32 = 1.0;
    for (var k = 1; k < 64; k = k + 1) {
      let fk = f32(k);
      term = term * q / (fk * fk);
      sum = sum + term;
      if (term < sum * 2e-8) { break; }
    }
    return sum * wj_exp(-x);
  }
  let u = 1.0 / (8.0 * x);
  var term: f32 = 1.0;
  var sum: f32 = 1.0;
  for (var k = 1; k < 24; k = k + 1) {
    let o = f32(2 * k - 1);
    term = term * o * o * u / f32(k);
    sum = sum + term;
    if (term < sum * 2e-8) { break; }
  }
  return sum / sqrt(6.2831853 * x);
}""")
_wgsl("wj_i1e", """
fn wj_i1e(x0: f32) -> f32 {
  if (wj_isnan(x0) || x0 == 0.0) { return x0; }
  let x = abs(x0);
  var r: f32;
  if (x <= 12.0) {
    let q = 0.25 * x * x;
    var term = 0.5 * x;
    var sum = term;
    for (var k = 1; k < 64; k = k + 1) {
      let fk = f32(k);
      term = term * q / (fk * (fk + 1.0));
      sum = sum + term;
      if (term < sum * 2e-8) { break; }
    }
    r = sum * wj_exp(-x);
  } else {
    let u = 1.0 / (8.0 * x);
    var term: f32 = 1.0;
    var sum: f32 = 1.0;
    for (var k = 1; k < 24; k = k + 1) {
      let o = f32(2 * k - 1);
      term = term * (o * o - 4.0) * u / f32(k);
      sum = sum + term;
      if (abs(term) < sum * 2e-8) { break; }
    }
    r = sum / sqrt(6.2831853 * x);
  }
  return wj_copysign(r, x0);
}""")

# nextafter on the bits: floats ordered as sign-magnitude integers (no float compare, so a
# driver flushing subnormals still steps through them)
_wgsl("wj_fkey", """
fn wj_fkey(b: u32) -> i32 {
  let m = i32(b & 0x7fffffffu);
  return select(m, -m, (b & 0x80000000u) != 0u);
}""")
# one step of ``ulp`` in the f32 bits toward y: 1 for float32; bfloat16 (an f32 with 16 zero
# low bits) steps by 1 << 16
_wgsl("wj_nextafter_by", """
fn wj_nextafter_by(x: f32, y: f32, ulp: u32) -> f32 {
  if (wj_isnan(x) || wj_isnan(y)) { return bitcast<f32>(0x7fc00000u); }
  let bx = bitcast<u32>(x);
  let by = bitcast<u32>(y);
  let kx = wj_fkey(bx);
  let ky = wj_fkey(by);
  if (kx == ky) { return y; }
  if ((bx & 0x7fffffffu) == 0u) { return bitcast<f32>((by & 0x80000000u) | ulp); }
  let away = (ky > kx) == ((bx & 0x80000000u) == 0u);
  return bitcast<f32>(select(bx - ulp, bx + ulp, away));
}""")
_wgsl("wj_nextafter", """
fn wj_nextafter(x: f32, y: f32) -> f32 { return wj_nextafter_by(x, y, 1u); }""")
_wgsl("wj_nextafter_bf16", """
fn wj_nextafter_bf16(x: f32, y: f32) -> f32 { return wj_nextafter_by(x, y, 0x10000u); }""")
# float16 steps on its own bits (packed through u32; the result's bits are unpacked, so a
# signed zero keeps its sign)
_wgsl("wj_nextafter16", """
fn wj_nextafter16(x: f32, y: f32) -> f32 {
  let bx = pack2x16float(vec2<f32>(x, 0.0)) & 0xffffu;
  let by = pack2x16float(vec2<f32>(y, 0.0)) & 0xffffu;
  if ((bx & 0x7fffu) > 0x7c00u || (by & 0x7fffu) > 0x7c00u) { return bitcast<f32>(0x7fc00000u); }
  let kx = select(i32(bx & 0x7fffu), -i32(bx & 0x7fffu), (bx & 0x8000u) != 0u);
  let ky = select(i32(by & 0x7fffu), -i32(by & 0x7fffu), (by & 0x8000u) != 0u);
  var r: u32;
  if (kx == ky) { r = by; }
  else if ((bx & 0x7fffu) == 0u) { r = (by & 0x8000u) | 1u; }
  else { r = select(bx - 1u, bx + 1u, (ky > kx) == ((bx & 0x8000u) == 0u)); }
  return unpack2x16float(r).x;
}""")
# the high half of the double-width product (16-bit limbs; narrow types fit one i32/u32 product)
_wgsl("wj_mulhi_u", """
fn wj_mulhi_u(a: u32, b: u32, bits: u32) -> u32 {
  if (bits < 32u) { return (a * b) >> bits; }
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let lo = a0 * b0;
  let m1 = a1 * b0 + (lo >> 16u);
  let m2 = a0 * b1 + (m1 & 0xffffu);
  return a1 * b1 + (m1 >> 16u) + (m2 >> 16u);
}""")
_wgsl("wj_mulhi_i", """
fn wj_mulhi_i(a: i32, b: i32, bits: u32) -> i32 {
  if (bits < 32u) { return (a * b) >> bits; }
  var h = wj_mulhi_u(bitcast<u32>(a), bitcast<u32>(b), 32u);
  if (a < 0) { h = h - bitcast<u32>(b); }
  if (b < 0) { h = h - bitcast<u32>(a); }
  return bitcast<i32>(h);
}""")


def _float_op(name, nargs, template, reference):
    """An elementwise float primitive of ``nargs`` operands evaluated by a WGSL helper call
    (``template`` over ``{0}``, ``{1}``, ...); rank-0 operands broadcast, as lax's scalars."""
    p = Primitive(name)

    def abstract(*avals):
        if len(avals) != nargs:
            raise TypeError(f"{name} takes {nargs} operands, got {len(avals)}")
        for a in avals:
            _check_kind(name, a.dtype, ("f",))
        _same_dtypes(name, avals)
        shape = elementwise_shape(name, *avals)
        return ShapedArray(shape, avals[0].dtype, all(a.weak_type for a in avals))

    def fuse(kb, idx, read, in_avals, out_aval):
        for h in _helpers_in(template):
            kb.use_helper(h)
        return _fill_f16_via_f32(kb, template, [r(idx) for r in read], in_avals[0].dtype,
                                 out_aval.dtype)

    def ref(*xs):
        out = np.asarray(reference(*[np.asarray(x, np.float64) for x in xs]))
        return out.astype(np.result_type(*xs))

    p.abstract_eval, p.fuse, p.reference = abstract, fuse, ref
    _batching.defbroadcasting(p)
    return p


def _scipy(fname):
    def f(*xs):
        from scipy import special as sp        # reference rules only (tests, folding)
        with np.errstate(all="ignore"):
            return getattr(sp, fname)(*xs)
    return f


def _igamma_ref(mode):
    def f(a, x):
        from scipy import special as sp
        with np.errstate(all="ignore"):
            if mode == 0:      # XLA: a = 0 takes the series below x = 1 (0 / 0)
                return np.where((a == 0) & (x > 0) & (x < 1), np.nan, sp.gammainc(a, x))
            if mode == 1:
                return sp.gammaincc(a, x)
            # central differences in float64 of the smaller of P and Q (kept to relative
            # precision in either tail)
            h = 1e-6 * np.maximum(np.abs(a), 1e-3)
            dp = np.where(x > a, -(sp.gammaincc(a + h, x) - sp.gammaincc(a - h, x)),
                          sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
            if mode == 2:
                return dp
            dens = np.exp((a - 1) * np.log(x) - x - sp.gammaln(a))
            return -dp / dens
    return f


def _polygamma_ref(n, x):
    from scipy import special as sp
    with np.errstate(all="ignore"):
        ok = (n >= 0) & (n == np.floor(n))
        return np.where(ok, sp.polygamma(np.where(ok, n, 0).astype(np.int64), x), np.nan)


def _zeta_ref(s, q):
    from scipy import special as sp
    with np.errstate(all="ignore"):     # XLA's poles: inf for even integer s, else NaN
        pole = (q <= 0) & (q == np.floor(q))
        out = np.where(s < 1, np.nan, sp.zeta(s, q))
        out = np.where(pole, np.where(s % 2 == 0, np.inf, np.nan), out)
        return np.where(s == 1, np.inf, out)


erfc_p = _float_op("erfc", 1, "wj_erfc({0})", lambda x: _erfc64(x))
igamma_p = _float_op("igamma", 2, "wj_igamma_impl({0}, {1}, 0u)", _igamma_ref(0))
igammac_p = _float_op("igammac", 2, "wj_igamma_impl({0}, {1}, 1u)", _igamma_ref(1))
igamma_grad_a_p = _float_op("igamma_grad_a", 2, "wj_igamma_impl({0}, {1}, 2u)", _igamma_ref(2))
random_gamma_grad_p = _float_op("random_gamma_grad", 2, "wj_igamma_impl({0}, {1}, 3u)",
                                _igamma_ref(3))
regularized_incomplete_beta_p = _float_op("regularized_incomplete_beta", 3,
                                          "wj_betainc({0}, {1}, {2})", _scipy("betainc"))
zeta_p = _float_op("zeta", 2, "wj_zeta({0}, {1})", _zeta_ref)
polygamma_p = _float_op("polygamma", 2, "wj_polygamma({0}, {1})", _polygamma_ref)
bessel_i0e_p = _float_op("bessel_i0e", 1, "wj_i0e({0})", _scipy("i0e"))
bessel_i1e_p = _float_op("bessel_i1e", 1, "wj_i1e({0})", _scipy("i1e"))


def _erfc64(x):
    import math
    return np.vectorize(math.erfc, otypes=[np.float64])(x)


# nextafter: float32, float16 and bfloat16 each step on their own bits
nextafter_p = _float_op("nextafter", 2, "wj_nextafter({0}, {1})", np.nextafter)


@nextafter_p.def_fuse
def _nextafter_fuse(kb, idx, read, in_avals, out_aval):
    a, b = read[0](idx), read[1](idx)
    if np.dtype(in_avals[0].dtype) == np.float16:
        kb.use_helper("wj_nextafter16")
        return f"f16(wj_nextafter16(f32({a}), f32({b})))"
    if np.dtype(in_avals[0].dtype) == dtypes.bfloat16:
        kb.use_helper("wj_nextafter_bf16")
        return f"wj_nextafter_bf16({a}, {b})"
    kb.use_helper("wj_nextafter")
    return _fill_f16_via_f32(kb, "wj_nextafter({0}, {1})", [a, b], in_avals[0].dtype,
                             out_aval.dtype)


# y where x == y (NumPy's float16 nextafter returns x there; XLA and C return y)
nextafter_p.reference = lambda x, y: np.where(x == y, y, np.nextafter(x, y))

mulhi_p = binop("mulhi", {"i": "wj_mulhi_i({0}, {1}, {B}u)", "u": "wj_mulhi_u({0}, {1}, {B}u)"},
                lambda x, y: _mulhi_ref(x, y))


def _mulhi_ref(x, y):
    bits = x.dtype.itemsize * 8
    p = x.astype(np.int64) * y.astype(np.int64)
    if x.dtype.kind == "u" and bits == 32:
        p = x.astype(np.uint64) * y.astype(np.uint64)
    return (p >> bits).astype(x.dtype)


# ----------------------------------------------------------------------- their derivatives

def _c(x, v):
    return _ad.const(x, v)


def _igamma_dx(g, a, x):
    return ops.mul(g, ops.exp(ops.sub(ops.mul(ops.sub(a, _c(a, 1)), ops.log(x)),
                                      ops.add(x, ops.lgamma(a)))))


_ad.defjvp(erfc_p, lambda g, x: ops.mul(_c(x, -2 / np.sqrt(np.pi)),
                                        ops.mul(g, ops.exp(ops.neg(ops.mul(x, x))))))
_ad.defjvp(igamma_p, lambda g, a, x: ops.mul(g, igamma_grad_a_p.bind(a, x)), _igamma_dx)
_ad.defjvp(igammac_p, lambda g, a, x: ops.neg(ops.mul(g, igamma_grad_a_p.bind(a, x))),
           lambda g, a, x: ops.neg(_igamma_dx(g, a, x)))


def _not_differentiable(what):
    def rule(g, *args):
        raise ValueError(what)
    return rule


def _betainc_dx(g, a, b, x):
    lbeta = ops.sub(ops.add(ops.lgamma(a), ops.lgamma(b)), ops.lgamma(ops.add(a, b)))
    return ops.mul(g, ops.exp(ops.sub(ops.add(ops.mul(ops.sub(b, _c(b, 1)), ops.log1p(ops.neg(x))),
                                              ops.mul(ops.sub(a, _c(a, 1)), ops.log(x))), lbeta)))


_betainc_ab = _not_differentiable("Betainc gradient with respect to a and b not supported.")
_ad.defjvp(regularized_incomplete_beta_p, _betainc_ab, _betainc_ab, _betainc_dx)
_ad.defjvp(polygamma_p,
           _not_differentiable("polygamma gradient with respect to m is not supported"),
           lambda g, m, x: ops.mul(g, polygamma_p.bind(ops.add(m, _c(m, 1)), x)))
_ad.defjvp2(bessel_i0e_p, lambda g, y, x: ops.mul(g, ops.sub(bessel_i1e_p.bind(x),
                                                             ops.mul(ops.sign(x), y))))


def _i1e_jvp(g, y, x):
    eps = float(np.finfo(np.dtype(_ad.aval_of(x).dtype)).eps)
    not_tiny = ops.gt(ops.abs(x), _c(x, eps))
    safe = ops.select(not_tiny, x, ops.add(ops.zeros_like(x), _c(x, eps)))
    dy = ops.sub(bessel_i0e_p.bind(safe), ops.mul(y, ops.add(ops.sign(safe), ops.div(_c(x, 1),
                                                                                        safe))))
    return ops.mul(g, ops.select(not_tiny, dy, ops.add(ops.zeros_like(x), _c(x, 0.5))))


_ad.defjvp2(bessel_i1e_p, _i1e_jvp)
_ad.defjvp_zero(mulhi_p)
