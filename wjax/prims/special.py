"""More elementwise primitives: erf_inv and reduce_precision (fusable expressions)."""
from __future__ import annotations

import math

import numpy as np

from ..backend import wgsl as W
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import F, T, _check_kind, unop
from ..transforms import ad as _ad
from ..core import ops

# Giles' single-precision erfinv, the approximation XLA uses.
W.helper("wj_erfinv", """
fn wj_erfinv(x: f32) -> f32 {
  if (abs(x) >= 1.0) {
    if (x == 1.0) { return bitcast<f32>(0x7f800000u); }
    if (x == -1.0) { return bitcast<f32>(0xff800000u); }
    return bitcast<f32>(0x7fc00000u);
  }
  var w = -log((1.0 - x) * (1.0 + x));
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
