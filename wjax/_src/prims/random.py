"""Random-number primitives: threefry2x32 in WGSL and the key operations built on it.

Keys are raw ``uint32[..., 2]`` arrays here (typed keys are a thin wrapper
in ``wjax.random``).  Every primitive is *fusable*: the value at an output
index is a threefry2x32 hash (a WGSL helper, 20 rounds of u32 add/rotate/xor)
of the key and a counter derived from the index, so a sampler such as
``normal`` compiles to a single kernel with the bits computed on the device.

The counters follow JAX exactly (``jax/_src/random/threefry2x32.py``):

* partitionable mode (``jax_threefry_partitionable=True``, the default):
  the element at flat position ``n`` of the sample hashes the counter pair
  ``(n >> 32, n & 0xffffffff)`` (``iota_2x32_shape``); random bits are the
  xor of the two output words, a split key is the two words.
* original mode: ``threefry_2x32(key, iota(N))`` hashes the pairs
  ``(i, i + ceil(N/2))`` (the second half padded with a 0 when N is odd) and
  concatenates the first words then the second words.  Position ``m`` of
  that stream is therefore one word of one hash, computed per element.

``random_fold_in`` hashes ``(0, data)`` in both modes.  ``random_gamma`` runs
JAX's Marsaglia-Tsang rejection loops per element in WGSL.

Also here: ``fma`` (a correctly rounded fused multiply-add, which uniform's
scaling needs to match XLA's contraction bit for bit), and ``lgamma`` /
``digamma`` (XLA's Lanczos approximations) for ``wjax.scipy.special``.
"""
from __future__ import annotations

import math

import numpy as np

from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..core import dtypes
from ..core.ir import ShapedArray
from ..core.primitive import REGISTRY, Primitive
from ..transforms import batching as _batching
from ..core import ops
from .elementwise import T, unop
from ..transforms.ad import Zero, defjvp, defjvp_zero
from ..transforms.batching import defvectorized
from .elementwise import _check_kind, _same_dtypes, elementwise_shape
from .shape import broadcast_in_dim_p

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KS_PARITY = 0x1BD11BDA


def _threefry_wgsl() -> str:
    ks = ("k0", "k1", "k2")
    out = ["fn wj_threefry2x32(k0: u32, k1: u32, c0: u32, c1: u32) -> vec2<u32> {",
           f"  let k2 = k0 ^ k1 ^ {KS_PARITY}u;",
           "  var x0 = c0 + k0;",
           "  var x1 = c1 + k1;"]
    for g in range(5):
        for r in ROTATIONS[g % 2]:
            out.append(f"  x0 = x0 + x1; x1 = (x1 << {r}u) | (x1 >> {32 - r}u); x1 = x1 ^ x0;")
        out.append(f"  x0 = x0 + {ks[(g + 1) % 3]}; x1 = x1 + {ks[(g + 2) % 3]} + {g + 1}u;")
    out += ["  return vec2<u32>(x0, x1);", "}"]
    return "\n".join(out)


W.helper("wj_threefry2x32", _threefry_wgsl())


def threefry2x32_np(k0, k1, c0, c1):
    """NumPy threefry2x32 (the reference rules' spec): uint32 arrays in, two out."""
    with np.errstate(over="ignore"):   # uint32 arithmetic wraps, as on the device
        return _threefry2x32_np(*(np.asarray(a, np.uint32) for a in (k0, k1, c0, c1)))


def _threefry2x32_np(k0, k1, c0, c1):
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(KS_PARITY))
    x0 = c0 + ks[0]
    x1 = c1 + ks[1]
    for g in range(5):
        for r in ROTATIONS[g % 2]:
            x0 = x0 + x1
            x1 = (x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))
            x1 = x1 ^ x0
        x0 = x0 + ks[(g + 1) % 3]
        x1 = x1 + ks[(g + 2) % 3] + np.uint32(g + 1)
    return x0, x1


# --------------------------------------------------------------------------- index helpers

def _split_index(kb, idx: Index, out_shape, nk: int):
    """(key-batch coordinates, flat offset within the trailing sample dims)."""
    if nk == 0:
        return [], idx.flat()
    dims = idx.dims()
    tail = out_shape[nk:]
    st = W.strides_of(tail)
    terms = [d if s == 1 else f"{d} * {s}u" for d, s, n in zip(dims[nk:], st, tail) if n != 1]
    flat = kb.let(" + ".join(terms) if terms else "0u", "u32")
    return dims[:nk], flat


def _read_key(kb, read, key_aval, kdims):
    """The two u32 words of the key at key-batch coordinates ``kdims``."""
    if not kdims:
        return (read(Index(kb, key_aval.shape, flat="0u")),
                read(Index(kb, key_aval.shape, flat="1u")))
    return (read(Index(kb, key_aval.shape, dims=list(kdims) + ["0u"])),
            read(Index(kb, key_aval.shape, dims=list(kdims) + ["1u"])))


def _hash(kb, k0, k1, c0, c1) -> str:
    kb.use_helper("wj_threefry2x32")
    return kb.let(f"wj_threefry2x32({k0}, {k1}, {c0}, {c1})", "vec2<u32>")


def _iota_stream_word(kb, k0, k1, m: str, n: int) -> str:
    """Word ``m`` of ``threefry_2x32(key, iota(n))`` (JAX's original layout)."""
    h = (n + 1) // 2
    lo = kb.let(f"{m} < {h}u", "bool")
    i = kb.let(f"select({m} - {h}u, {m}, {lo})", "u32")
    c1 = f"{i} + {h}u"
    if n % 2:   # the odd element is paired with a padding 0
        c1 = kb.let(f"select(0u, {c1}, {c1} < {n}u)", "u32")
    w = _hash(kb, k0, k1, i, c1)
    return f"select({w}.y, {w}.x, {lo})"


def _iota_stream_np(k0, k1, n: int):
    c = np.arange(n, dtype=np.uint32)
    if n % 2:
        c = np.concatenate([c, np.zeros(1, np.uint32)])
    h = c.size // 2
    a, b = threefry2x32_np(k0, k1, c[:h], c[h:])
    return np.concatenate([a, b])[:n]


def _check_keys(name, keys):
    if np.dtype(keys.dtype) != np.uint32 or keys.ndim < 1 or keys.shape[-1] != 2:
        raise TypeError(
            f"{name} expects threefry key data of dtype uint32 and trailing shape (2,), "
            f"got {keys.str_short()}"
        )


UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32)}


# --------------------------------------------------------------------------- random_bits

random_bits_p = Primitive("random_bits")


@random_bits_p.def_abstract_eval
def _bits_abstract(keys, bit_width, shape, _partitionable=True):
    _check_keys("random_bits", keys)
    if bit_width not in UINT_DTYPES:
        raise TypeError(f"random_bits: bit_width must be 8, 16 or 32 (wjax has no 64-bit types), "
                        f"got {bit_width}")
    return ShapedArray(keys.shape[:-1] + tuple(shape), UINT_DTYPES[bit_width])


@random_bits_p.def_fuse
def _bits_fuse(kb, idx, read, in_avals, out_aval, bit_width, shape, _partitionable=True):
    key_aval = in_avals[0]
    nk = key_aval.ndim - 1
    kdims, n = _split_index(kb, idx, out_aval.shape, nk)
    k0, k1 = _read_key(kb, read[0], key_aval, kdims)
    mask = (1 << bit_width) - 1
    if _partitionable:
        w = _hash(kb, k0, k1, "0u", n)
        v = f"({w}.x ^ {w}.y)"
        return v if bit_width == 32 else f"({v} & {mask}u)"
    size = int(np.prod(shape, dtype=np.int64))
    count = -(-bit_width * size // 32)
    if bit_width == 32:
        return _iota_stream_word(kb, k0, k1, n, count)
    per = 32 // bit_width
    word = _iota_stream_word(kb, k0, k1, f"({n} / {per}u)", count)
    return f"(({word} >> ({bit_width}u * ({n} % {per}u))) & {mask}u)"


def _bits_ref(keys, bit_width, shape, _partitionable=True):
    kshape = keys.shape[:-1]
    flat = keys.reshape(-1, 2)
    size = int(np.prod(shape, dtype=np.int64))
    outs = []
    for k0, k1 in flat:
        if _partitionable:
            a, b = threefry2x32_np(
                k0, k1, np.zeros(size, np.uint32), np.arange(size, dtype=np.uint32)
            )
            bits = a ^ b
        else:
            count = -(-bit_width * size // 32)
            words = _iota_stream_np(k0, k1, count)
            if bit_width == 32:
                bits = words
            else:
                per = 32 // bit_width
                j = np.arange(size)
                bits = words[j // per] >> (bit_width * (j % per)).astype(np.uint32)
        outs.append((bits & np.uint32((1 << bit_width) - 1)).astype(UINT_DTYPES[bit_width]))
    return np.stack(outs).reshape(kshape + tuple(shape)) if outs else \
        np.zeros(kshape + tuple(shape), UINT_DTYPES[bit_width])


random_bits_p.reference = _bits_ref
_batching.deffront(random_bits_p)   # vmap: keys' leading dims batch the result

# --------------------------------------------------------------------------- random_split

random_split_p = Primitive("random_split")


@random_split_p.def_abstract_eval
def _split_abstract(keys, shape, _partitionable=True):
    _check_keys("random_split", keys)
    return ShapedArray(keys.shape[:-1] + tuple(shape) + (2,), np.uint32)


@random_split_p.def_fuse
def _split_fuse(kb, idx, read, in_avals, out_aval, shape, _partitionable=True):
    key_aval = in_avals[0]
    nk = key_aval.ndim - 1
    kdims, m = _split_index(kb, idx, out_aval.shape, nk)   # m = flat over shape + (2,)
    k0, k1 = _read_key(kb, read[0], key_aval, kdims)
    if _partitionable:
        n = kb.let(f"{m} >> 1u", "u32")
        w = _hash(kb, k0, k1, "0u", n)
        return f"select({w}.y, {w}.x, ({m} & 1u) == 0u)"
    num = int(np.prod(shape, dtype=np.int64))
    return _iota_stream_word(kb, k0, k1, m, 2 * num)


def _split_ref(keys, shape, _partitionable=True):
    kshape = keys.shape[:-1]
    num = int(np.prod(shape, dtype=np.int64))
    outs = []
    for k0, k1 in keys.reshape(-1, 2):
        if _partitionable:
            a, b = threefry2x32_np(
                k0, k1, np.zeros(num, np.uint32), np.arange(num, dtype=np.uint32)
            )
            outs.append(np.stack([a, b], -1))
        else:
            outs.append(_iota_stream_np(k0, k1, 2 * num).reshape(num, 2))
    return np.stack(outs).reshape(kshape + tuple(shape) + (2,)).astype(np.uint32) if outs else \
        np.zeros(kshape + tuple(shape) + (2,), np.uint32)


random_split_p.reference = _split_ref
_batching.deffront(random_split_p)

# --------------------------------------------------------------------------- random_fold_in

random_fold_in_p = Primitive("random_fold_in")


@random_fold_in_p.def_abstract_eval
def _fold_abstract(keys, msgs):
    _check_keys("random_fold_in", keys)
    if np.dtype(msgs.dtype) != np.uint32:
        raise TypeError(f"random_fold_in expects uint32 data, got {msgs.str_short()}")
    if msgs.ndim and msgs.shape != keys.shape[:-1]:
        raise TypeError(f"random_fold_in: data of shape {msgs.shape} does not match keys of shape "
                        f"{keys.shape[:-1]}")
    return ShapedArray(keys.shape, np.uint32)


@random_fold_in_p.def_fuse
def _fold_fuse(kb, idx, read, in_avals, out_aval):
    key_aval, msg_aval = in_avals
    nk = key_aval.ndim - 1
    kdims, j = _split_index(kb, idx, out_aval.shape, nk)
    k0, k1 = _read_key(kb, read[0], key_aval, kdims)
    if msg_aval.ndim == 0:
        d = read[1](Index(kb, ()))
    else:
        d = read[1](Index(kb, msg_aval.shape, dims=kdims))
    w = _hash(kb, k0, k1, "0u", d)
    return f"select({w}.y, {w}.x, {j} == 0u)"


def _fold_ref(keys, msgs):
    msgs = np.broadcast_to(msgs, keys.shape[:-1])
    a, b = threefry2x32_np(keys[..., 0], keys[..., 1], np.zeros_like(msgs, np.uint32), msgs)
    return np.stack([a, b], -1).astype(np.uint32)


random_fold_in_p.reference = _fold_ref


def _fold_batch(args, dims):
    (keys, msgs), (dk, dm) = args, dims
    n = _batching.axis_size(args, dims)
    keys = _batching.bdim_at_front(keys, dk, n)
    target = _batching.aval_of(keys).shape[:-1]
    if dm is not None or _batching.aval_of(msgs).ndim:
        msgs = _batching.bdim_at_front(msgs, dm, n)
        if _batching.aval_of(msgs).shape != target:  # a batched scalar: [n] -> keys' shape
            msgs = broadcast_in_dim_p.bind(
                msgs, shape=target, broadcast_dimensions=(0,), sharding=None
            )
    return random_fold_in_p.bind(keys, msgs), 0


random_fold_in_p.batch = _fold_batch


# --------------------------------------------------------------------------- fma
# ``uniform`` scales its [0, 1) floats by ``u * (maxval - minval) + minval``.  XLA contracts that
# multiply-add into one fused multiply-add on CPU and GPU, so matching JAX's uniforms bit for bit
# takes a real fma (a single rounding).

fma_p = Primitive("fma")


@fma_p.def_abstract_eval
def _fma_abstract(x, y, z):
    _same_dtypes("fma", [x, y, z])
    _check_kind("fma", x.dtype, ("f",))
    return ShapedArray(elementwise_shape("fma", x, y, z), x.dtype,
                       x.weak_type and y.weak_type and z.weak_type)


# A correctly rounded fma in integer arithmetic.  WGSL's fma() is not fused on every adapter
# (lavapipe rounds twice), and error-free float tricks (TwoSum, Dekker) are not safe either: shader
# compilers may reassociate float expressions.  So: the 48-bit product of the 24-bit significands
# in two u32 words, aligned with the addend in a 64-bit window (lost bits kept as a sticky bit),
# added or subtracted, then rounded to nearest-even.  Results that would be subnormal or overflow
# (never the case for uniform()) fall back to a * b + c.
W.helper("wj_u64_shl", """
fn wj_u64_shl(v: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) { return v; }
  if (n >= 64u) { return vec2<u32>(0u, 0u); }
  if (n >= 32u) { return vec2<u32>(0u, v.x << (n - 32u)); }
  return vec2<u32>(v.x << n, (v.y << n) | (v.x >> (32u - n)));
}""")
W.helper("wj_u64_shr_sticky", """
fn wj_u64_shr_sticky(v: vec2<u32>, n: u32) -> vec2<u32> {
  if (n == 0u) { return v; }
  if (n >= 64u) { return vec2<u32>(select(0u, 1u, (v.x | v.y) != 0u), 0u); }
  var r: vec2<u32>;
  var lost: u32;
  if (n >= 32u) {
    let k = n - 32u;
    r = vec2<u32>(v.y >> k, 0u);
    lost = v.x;
    if (k > 0u) { lost = lost | (v.y << (32u - k)); }
  } else {
    r = vec2<u32>((v.x >> n) | (v.y << (32u - n)), v.y >> n);
    lost = v.x << (32u - n);
  }
  if (lost != 0u) { r.x = r.x | 1u; }
  return r;
}""")
W.helper("wj_u64_msb", """
fn wj_u64_msb(v: vec2<u32>) -> u32 {
  if (v.y != 0u) { return 63u - countLeadingZeros(v.y); }
  return 31u - countLeadingZeros(v.x);
}""")
W.helper("wj_fma", """
fn wj_fma(a: f32, b: f32, c: f32) -> f32 {
  let ua = bitcast<u32>(a);
  let ub = bitcast<u32>(b);
  let uc = bitcast<u32>(c);
  let ea = (ua >> 23u) & 0xffu;
  let eb = (ub >> 23u) & 0xffu;
  let ec = (uc >> 23u) & 0xffu;
  if (ea == 255u || eb == 255u || ec == 255u || (ua & 0x7fffffffu) == 0u
      || (ub & 0x7fffffffu) == 0u) { return a * b + c; }
  if ((uc & 0x7fffffffu) == 0u) { return a * b; }
  let ma = select((ua & 0x7fffffu) | 0x800000u, ua & 0x7fffffu, ea == 0u);
  let mb = select((ub & 0x7fffffu) | 0x800000u, ub & 0x7fffffu, eb == 0u);
  let mc = select((uc & 0x7fffffu) | 0x800000u, uc & 0x7fffffu, ec == 0u);
  // exact 48-bit product of the significands
  let a0 = ma & 0xffffu;
  let a1 = ma >> 16u;
  let b0 = mb & 0xffffu;
  let b1 = mb >> 16u;
  let p00 = a0 * b0;
  let mid = a0 * b1 + a1 * b0;
  let lo = p00 + (mid << 16u);
  let hi = a1 * b1 + (mid >> 16u) + select(0u, 1u, lo < p00);
  var P = vec2<u32>(lo, hi);
  let sp = wj_u64_msb(P);
  P = wj_u64_shl(P, 61u - sp);
  let EP = i32(max(ea, 1u)) + i32(max(eb, 1u)) - 300 - i32(61u - sp);
  var C = vec2<u32>(mc, 0u);
  let sc = wj_u64_msb(C);
  C = wj_u64_shl(C, 61u - sc);
  let EC = i32(max(ec, 1u)) - 150 - i32(61u - sc);
  let negP = ((ua ^ ub) >> 31u) != 0u;
  let negC = (uc >> 31u) != 0u;
  let p_big = EP > EC || (EP == EC && !(P.y < C.y || (P.y == C.y && P.x < C.x)));
  var big = select(C, P, p_big);
  var small = select(P, C, p_big);
  let Ebig = select(EC, EP, p_big);
  let neg = select(negC, negP, p_big);
  small = wj_u64_shr_sticky(small, u32(select(EC - EP, EP - EC, p_big)));
  var R: vec2<u32>;
  if (negP == negC) {
    let l = big.x + small.x;
    R = vec2<u32>(l, big.y + small.y + select(0u, 1u, l < big.x));
  } else {
    R = vec2<u32>(big.x - small.x, big.y - small.y - select(0u, 1u, big.x < small.x));
  }
  if ((R.x | R.y) == 0u) { return 0.0; }
  let r = wj_u64_msb(R);
  var m: u32;
  var e: i32;
  if (r <= 23u) {
    m = R.x << (23u - r);
    e = Ebig - i32(23u - r);
  } else {
    let s = r - 23u;
    var u: vec2<u32>;
    if (s >= 2u) { u = wj_u64_shr_sticky(R, s - 2u); } else { u = wj_u64_shl(R, 1u); }
    m = u.x >> 2u;
    let guard = (u.x >> 1u) & 1u;
    let sticky = u.x & 1u;
    if (guard == 1u && (sticky == 1u || (m & 1u) == 1u)) { m = m + 1u; }
    e = Ebig + i32(s);
    if (m == 0x1000000u) { m = 0x800000u; e = e + 1; }
  }
  let be = e + 150;
  if (be <= 0 || be >= 255) { return a * b + c; }
  return bitcast<f32>(select(0u, 0x80000000u, neg) | (u32(be) << 23u) | (m & 0x7fffffu));
}""")


@fma_p.def_fuse
def _fma_fuse(kb, idx, read, in_avals, out_aval):
    args = [r(idx) for r in read]
    if out_aval.dtype == dtypes.bfloat16:
        # the product rounded to bf16 (exact in f32), the sum in f32 rounded to bf16 (as XLA
        # evaluates bf16 multiply and add; uniform() binds those two for bf16, not fma)
        return f"wj_bf16r(wj_bf16r({args[0]} * {args[1]}) + {args[2]})"
    if W.value_type(out_aval.dtype) == "f32":
        kb.use_helper("wj_fma")
        return f"wj_fma({', '.join(args)})"
    # float16: XLA rounds the product to f16, then the sum (no fused f16 multiply-add);
    # both roundings explicit and opaque, so no driver fuses them (wgsl_math.wj_f16r)
    kb.use_helper("wj_f16r")
    a, b, c = (f"f32({x})" for x in args)
    return f"wj_f16r(f32(wj_f16r({a} * {b})) + {c})"


def _fma_ref(x, y, z):
    if x.dtype == dtypes.bfloat16:   # the product rounded, then the sum (as the kernel)
        return ((x * y).astype(np.float32) + z.astype(np.float32)).astype(x.dtype)
    return (x.astype(np.float64) * y.astype(np.float64) + z.astype(np.float64)).astype(x.dtype)


fma_p.reference = _fma_ref
_batching.defbroadcasting(fma_p)


def _fma_rules():
    defjvp(fma_p, lambda g, x, y, z: g * y, lambda g, x, y, z: x * g, lambda g, x, y, z: g)


_fma_rules()


# --------------------------------------------------------------------------- random_gamma
# JAX's _gamma_one (Marsaglia-Tsang with rejection loops) per element, in WGSL: each element
# has its own key (the caller splits the key to the shape of ``a``) and runs the loops with
# exactly JAX's key splits, uniform and normal draws, so the samples agree with JAX's up to
# float32 rounding of log/erf_inv (which could, rarely, flip an accept/reject decision).

W.helper("wj_tf_stream", """
fn wj_tf_stream(k0: u32, k1: u32, m: u32, n: u32) -> u32 {
  // word m of threefry_2x32(key, iota(n)) (the original counter layout)
  let h = (n + 1u) / 2u;
  let lo = m < h;
  let i = select(m - h, m, lo);
  var c1 = i + h;
  if (c1 >= n) { c1 = 0u; }
  let w = wj_threefry2x32(k0, k1, i, c1);
  return select(w.y, w.x, lo);
}""")

W.helper("wj_u01", """
fn wj_u01(b: u32) -> f32 { return bitcast<f32>((b >> 9u) | 0x3f800000u) - 1.0; }""")


def _gamma_helpers(part: bool, log_space: bool) -> str:
    """Registers the WGSL helper drawing one gamma sample (and the key-split and draw helpers
    it calls, for the partitionable or the original threefry layout); returns its name."""
    sfx = "p" if part else "o"
    name = f"wj_gamma_{'log' if log_space else 'lin'}_{sfx}"
    if name in W.HELPERS:
        return name
    _gamma_key_helpers(part, sfx)
    _gamma_sampler(name, sfx, _gamma_tail(sfx, log_space))
    return name


def _gamma_key_helpers(part: bool, sfx: str):
    """wj_ksplit_{sfx} (subkey i of n), wj_bits1_{sfx} (one 32-bit draw) and wj_normal1_{sfx}
    (one standard normal), as JAX's split / bits / normal compute them."""
    if part:
        W.helper(f"wj_ksplit_{sfx}", f"""
fn wj_ksplit_{sfx}(k0: u32, k1: u32, i: u32, n: u32) -> vec2<u32> {{
  return wj_threefry2x32(k0, k1, 0u, i);
}}""")
        W.helper(f"wj_bits1_{sfx}", f"""
fn wj_bits1_{sfx}(k0: u32, k1: u32) -> u32 {{
  let w = wj_threefry2x32(k0, k1, 0u, 0u);
  return w.x ^ w.y;
}}""")
    else:
        W.helper(f"wj_ksplit_{sfx}", f"""
fn wj_ksplit_{sfx}(k0: u32, k1: u32, i: u32, n: u32) -> vec2<u32> {{
  return vec2<u32>(wj_tf_stream(k0, k1, 2u * i, 2u * n), wj_tf_stream(k0, k1, 2u * i + 1u, 2u * n));
}}""")
        W.helper(f"wj_bits1_{sfx}", f"""
fn wj_bits1_{sfx}(k0: u32, k1: u32) -> u32 {{
  return wj_threefry2x32(k0, k1, 0u, 0u).x;
}}""")
    W.helper(f"wj_normal1_{sfx}", f"""
fn wj_normal1_{sfx}(k0: u32, k1: u32) -> f32 {{
  let lo = bitcast<f32>(0xbf7fffffu);
  let hi: f32 = 1.0;
  let span = hi - lo;
  let u = max(lo, wj_u01(wj_bits1_{sfx}(k0, k1)) * span + lo);
  return 1.4142135 * wj_erfinv(u);
}}""")


def _gamma_tail(sfx: str, log_space: bool) -> str:
    """The end of the sampler: the boost for alpha < 1 and the sample, or its log."""
    if log_space:
        return f"""
  let u = wj_u01(wj_bits1_{sfx}(sub.x, sub.y));
  let log_samples = wj_log1p(-u);
  var log_boost = log_samples * (1.0 / alpha_orig);
  if (boost_mask || log_samples == 0.0) {{ log_boost = 0.0; }}
  return (wj_log(d) + wj_log(V)) + log_boost;"""
    return f"""
  let samples = 1.0 - wj_u01(wj_bits1_{sfx}(sub.x, sub.y));
  var boost: f32 = 1.0;
  if (!boost_mask) {{ boost = wj_pow_f(samples, 1.0 / alpha_orig); }}
  return (d * V) * boost;"""


def _gamma_sampler(name: str, sfx: str, tail: str):
    """Marsaglia-Tsang with JAX's rejection loops and key splits, ending in ``tail``."""
    W.helper(name, f"""
fn {name}(k0: u32, k1: u32, alpha_orig: f32) -> f32 {{
  let boost_mask = alpha_orig >= 1.0;
  let alpha = select(alpha_orig + 1.0, alpha_orig, boost_mask);
  let third: f32 = 0.33333334;
  let d = alpha - third;
  let c = third / sqrt(d);
  var key = wj_ksplit_{sfx}(k0, k1, 0u, 2u);
  let sub = wj_ksplit_{sfx}(k0, k1, 1u, 2u);
  var X: f32 = 0.0;
  var V: f32 = 1.0;
  var U: f32 = 2.0;
  loop {{
    let c1 = U >= 1.0 - 0.0331 * (X * X);
    let c2 = wj_log(U) >= X * 0.5 + d * ((1.0 - V) + wj_log(V));
    if (!(c1 && c2)) {{ break; }}
    let xkey0 = wj_ksplit_{sfx}(key.x, key.y, 1u, 3u);
    let ukey = wj_ksplit_{sfx}(key.x, key.y, 2u, 3u);
    key = wj_ksplit_{sfx}(key.x, key.y, 0u, 3u);
    var xk = xkey0;
    var x: f32 = 0.0;
    var v: f32 = -1.0;
    loop {{
      if (!(v <= 0.0)) {{ break; }}
      let nsub = wj_ksplit_{sfx}(xk.x, xk.y, 1u, 2u);
      xk = wj_ksplit_{sfx}(xk.x, xk.y, 0u, 2u);
      x = wj_normal1_{sfx}(nsub.x, nsub.y);
      v = 1.0 + x * c;
    }}
    X = x * x;
    V = (v * v) * v;
    U = wj_u01(wj_bits1_{sfx}(ukey.x, ukey.y));
  }}{tail}
}}""")


random_gamma_p = Primitive("random_gamma")


@random_gamma_p.def_abstract_eval
def _gamma_abstract(keys, a, log_space=False, _partitionable=True):
    _check_keys("random_gamma", keys)
    if np.dtype(a.dtype) != np.float32:
        raise TypeError(f"random_gamma: wjax samples gamma in float32, got {a.str_short()}")
    if keys.shape[:-1] != a.shape:
        raise TypeError(f"random_gamma: keys of shape {keys.shape[:-1]} do not match a of shape "
                        f"{a.shape}")
    return ShapedArray(a.shape, a.dtype)


@random_gamma_p.def_fuse
def _gamma_fuse(kb, idx, read, in_avals, out_aval, log_space=False, _partitionable=True):
    key_aval = in_avals[0]
    kdims, _ = _split_index(kb, idx, out_aval.shape, key_aval.ndim - 1)
    k0, k1 = _read_key(kb, read[0], key_aval, kdims)
    a = read[1](idx)
    name = _gamma_helpers(bool(_partitionable), bool(log_space))
    kb.use_helper(name)
    return f"{name}({k0}, {k1}, {a})"


random_gamma_p.reference = None
_batching.deffront(random_gamma_p)


# --------------------------------------------------------------------------- autodiff (keys)
# Keys and bits are integers: their tangents are symbolic zeros.

def _zero_jvps():
    for p in (random_bits_p, random_split_p, random_fold_in_p):
        defjvp_zero(p)


_zero_jvps()


# --------------------------------------------------------------------------- lgamma, digamma
# XLA's Lanczos-based lgamma and digamma (g = 7), which wjax.scipy.special.gammaln/digamma need.
# Registered here only when no other module has registered them first.

_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354,
            12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)
_LOG_PI = math.log(math.pi)
_LOG_SQRT_2PI = (math.log(2) + math.log(math.pi)) / 2
_LOG_G_HALF = math.log(7.5)


def _lgamma_wgsl() -> str:
    terms = "\n".join(
        f"  x = x + wj_div({c!r}, (z + {float(i)!r}) + 1.0);" for i, c in enumerate(_LANCZOS)
    )
    return f"""
fn wj_lgamma(v: f32) -> f32 {{
  if (wj_isnan(v)) {{ return v; }}
  if (wj_isinf(v)) {{ return bitcast<f32>(0x7f800000u); }}
  let reflect = v < 0.5;
  let z = select(v - 1.0, -v, reflect);
  var x: f32 = 0.99999999999980993227684700473478;
{terms}
  let t = 7.5 + z;
  let log_t = {_LOG_G_HALF!r} + wj_log1p(wj_div(z, 7.5));
  let log_y = {_LOG_SQRT_2PI!r} + (z + 0.5 - wj_div(t, log_t)) * log_t + wj_log(x);
  if (!reflect) {{ return log_y; }}
  let a = abs(v);
  let frac = a - floor(a);
  let red = select(frac, 1.0 - frac, frac > 0.5);
  if (red == 0.0) {{ return bitcast<f32>(0x7f800000u); }}
  let denom = wj_log(wj_sin({math.pi!r} * red));
  return {_LOG_PI!r} - denom - log_y;
}}"""


def _digamma_wgsl() -> str:
    # every quotient correctly rounded (``wj_div``): the Lanczos terms cancel, and a driver's
    # 2.5-ulp builtin division put digamma(1) 22 ulp off (the strict driver emulation)
    terms = "\n".join(f"  zi = (z + {float(i)!r}) + 1.0; num = num - wj_div({c!r}, zi * zi); "
                      f"den = den + wj_div({c!r}, zi);" for i, c in enumerate(_LANCZOS))
    return f"""
fn wj_digamma(v: f32) -> f32 {{
  if (v <= 0.0 && v == floor(v)) {{ return bitcast<f32>(0x7fc00000u); }}
  let reflect = v < 0.5;
  let z = select(v - 1.0, -v, reflect);
  var num: f32 = 0.0;
  var den: f32 = 0.99999999999980993227684700473478;
  var zi: f32;
{terms}
  let t = 7.5 + z;
  let log_t = {_LOG_G_HALF!r} + wj_log1p(wj_div(z, 7.5));
  let y = log_t + wj_div(num, den) - wj_div(7.0, t);
  if (!reflect) {{ return y; }}
  let r = v + abs(floor(v + 0.5));
  return y - wj_div({math.pi!r} * wj_cos({math.pi!r} * r), wj_sin({math.pi!r} * r));
}}"""


W.helper("wj_lgamma", _lgamma_wgsl())
W.helper("wj_digamma", _digamma_wgsl())


def _lgamma_ref(x):
    return np.vectorize(lambda v: math.lgamma(v) if np.isfinite(v) and not (v <= 0 and v == int(v))
                        else (np.inf if not np.isnan(v) else np.nan), otypes=[x.dtype])(x)


def _digamma_ref(x):
    from scipy import special
    # XLA's digamma is NaN at every pole, 0.0 and -0.0 included (scipy gives -inf/+inf there)
    return np.where(x == 0, np.nan, special.digamma(x)).astype(x.dtype)


def _special_unop(name, table, ref):
    if name in REGISTRY:
        return REGISTRY[name], False
    return unop(name, table, ref), True


lgamma_p, _own_lgamma = _special_unop("lgamma", T("f", "wj_lgamma({0})"), _lgamma_ref)
digamma_p, _own_digamma = _special_unop("digamma", T("f", "wj_digamma({0})"), _digamma_ref)


def _special_rules():
    if _own_lgamma:
        defvectorized(lgamma_p)
        defjvp(lgamma_p, lambda g, x: g * digamma_p.bind(x))
    if _own_digamma:
        defvectorized(digamma_p)


_special_rules()


# ----------------------------------------------------------------------- autodiff (gamma, digamma)

def _random_gamma_jvp(primals, tangents, **params):
    """d(sample)/da by implicit differentiation of the CDF (``random_gamma_grad``, as JAX); in
    log space d(log sample) = d(sample) / sample, the sample kept above zero."""
    keys, a = primals
    ans = random_gamma_p.bind(keys, a, **params)
    if isinstance(tangents[1], Zero):
        return ans, Zero(ShapedArray(ans.shape, ans.dtype))
    sample = ans
    if params.get("log_space"):
        sample = ops.exp(ans)
        tiny = np.asarray(np.finfo(np.dtype(ans.dtype)).tiny, ans.dtype)
        sample = ops.select(ops.eq(sample, ops.zeros_like(sample)),
                            ops.add(ops.zeros_like(sample), tiny), sample)
    grad = ops.random_gamma_grad(a, sample)
    if params.get("log_space"):
        grad = ops.div(grad, sample)
    return ans, ops.mul(tangents[1], grad)


def _trigamma(x):
    """polygamma(1, x): recurrence up to x >= 6, then the asymptotic series; reflection for
    x < 0.5."""
    refl = x < 0.5
    y = ops.where(refl, 1.0 - x, x)
    acc = ops.zeros_like(y)
    for k in range(6):
        acc = acc + 1.0 / ((y + k) * (y + k))
    z = y + 6.0
    iz = 1.0 / z
    iz2 = iz * iz
    asym = iz + 0.5 * iz2 + iz * iz2 * (1.0 / 6 - iz2 * (1.0 / 30 - iz2 * (1.0 / 42 - iz2 / 30)))
    t = acc + asym
    s = ops.sin(np.pi * x)
    return ops.where(refl, (np.pi * np.pi) / (s * s) - t, t)


def _digamma_rules():
    if digamma_p.jvp is None:
        defjvp(digamma_p, lambda g, x: g * _trigamma(x))


random_gamma_p.jvp = _random_gamma_jvp
_digamma_rules()
