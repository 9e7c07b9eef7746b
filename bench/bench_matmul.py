"""Matmul and convolution speed in one run on one adapter:

* float32 matmul 256 / 1024 / 2048: wjax with its autotuned kernel and with the default
  variant (``WJAX_AUTOTUNE=0``'s), next to the best of two hand-written WGSL kernels (the
  textbook 16x16 workgroup-memory tile; a register-blocked 8 x 8 kernel with vec4 loads),
  NumPy and real JAX on the CPU;
* a skinny product (64 x 6400 by 6400 x 64, a weight gradient's shape: split-K);
* conv 8x16x64x64 * 32x16x3x3 (NCHW, SAME): forward and value_and_grad of a conv layer, as
  GFLOP/s and as a fraction of the matmul rate at the same FLOPs;
* float16 storage with float32 accumulation (``preferred_element_type``) where the adapter
  has ``shader-f16``.

Times are the fastest of several interleaved runs (this machine is shared: compare within a
run).  The tuner's choices are cached (``WJAX_AUTOTUNE_CACHE``, default
~/.cache/wjax/autotune.json); the first call of a size class times the candidates.

    .venv/bin/python bench/bench_matmul.py [--quick]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
from common import real_jax, table
from hand_wgsl import MATMUL_TILE16

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import autotune, runtime

QUICK = "--quick" in sys.argv
REPS = 3 if QUICK else 5

# each thread: 8 rows x 8 columns of C (two vec4s per row) from global memory
HAND_BLOCK8 = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@compute @workgroup_size(16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n4 = NNu / 4u;
  let t = gid.x;
  let m0 = (t / (n4 / 2u)) * 8u;
  let j0 = (t % (n4 / 2u)) * 2u;
  if (m0 >= NNu) { return; }
  var acc: array<vec4<f32>, 16>;
  for (var k = 0u; k < NNu; k = k + 1u) {
    let b0 = b[k * n4 + j0];
    let b1 = b[k * n4 + j0 + 1u];
    for (var i = 0u; i < 8u; i = i + 1u) {
      let av = vec4<f32>(a[(m0 + i) * NNu + k]);
      acc[2u * i] = fma(av, b0, acc[2u * i]);
      acc[2u * i + 1u] = fma(av, b1, acc[2u * i + 1u]);
    }
  }
  for (var i = 0u; i < 8u; i = i + 1u) {
    c[(m0 + i) * n4 + j0] = acc[2u * i];
    c[(m0 + i) * n4 + j0 + 1u] = acc[2u * i + 1u];
  }
}
"""


def best_of(fns: dict, reps=REPS) -> dict:
    """Fastest wall time of each function, the functions run interleaved ``reps`` times."""
    for f in fns.values():
        f()
    best = {k: float("inf") for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def gf(flops, t):
    return f"{flops / t / 1e9:.1f}"


def matmuls(rt, jax, rng):
    rows, rates = [], {}
    for n in ((256, 1024) if QUICK else (256, 1024, 2048)):
        an, bn = rng.randn(n, n).astype(np.float32), rng.randn(n, n).astype(np.float32)
        a, b = jnp.asarray(an), jnp.asarray(bn)
        tuned = wjax.jit(lambda x, y: x @ y)
        t0 = time.perf_counter()
        got = np.asarray(tuned(a, b))
        first = time.perf_counter() - t0
        err = float(np.abs(got - an.astype(np.float64) @ bn).max())
        with rt.options(name=rt.describe() + " (defaults)"):   # its own compile cache
            os.environ["WJAX_AUTOTUNE"] = "0"
            default = wjax.jit(lambda x, y: x @ y)
            default(a, b).block_until_ready()
            os.environ["WJAX_AUTOTUNE"] = "1"
            dtarget = rt.target()
        out = rt.alloc(n * n * 4)
        h16 = MATMUL_TILE16.replace("NNu", f"{n}u")
        h8 = HAND_BLOCK8.replace("NNu", f"{n}u")

        def hand(src, grid):
            def f():
                rt.dispatch(src, [a.buffer, b.buffer, out], grid)
                rt.synchronize()
            return f

        def run_default():
            with rt.options(name=dtarget.name):
                default(a, b).block_until_ready()
        fns = {"tuned": lambda: tuned(a, b).block_until_ready(), "default": run_default,
               "hand16": hand(h16, (n // 16, n // 16, 1)),
               "hand8": hand(h8, (-(-(n // 8) * (n // 8) // 16), 1, 1)),
               "numpy": lambda: an @ bn}
        if jax is not None:
            ar, br = jax.numpy.asarray(an), jax.numpy.asarray(bn)
            rm = jax.jit(jax.numpy.matmul)
            fns["jax"] = lambda: rm(ar, br).block_until_ready()
        hand_ok = {}
        for k, src, grid in (("hand16", h16, (n // 16, n // 16, 1)),
                             ("hand8", h8, (-(-(n // 8) * (n // 8) // 16), 1, 1))):
            hand(src, grid)()
            hv = np.frombuffer(rt.read(out, n * n * 4), np.float32).reshape(n, n)
            hand_ok[k] = float(np.abs(hv - got).max()) < 1e-2 * n
        t = best_of(fns)
        fl = 2 * n ** 3
        hb = min(t["hand16"], t["hand8"])
        rates[n] = fl / t["tuned"]
        rows.append([n, gf(fl, t["tuned"]), gf(fl, t["default"]), gf(fl, t["hand16"]),
                     gf(fl, t["hand8"]), f"{hb / t['tuned']:.2f}x", gf(fl, t["numpy"]),
                     gf(fl, t["jax"]) if "jax" in t else "-", f"{err:.1e}",
                     f"{first:.1f} s", "ok" if all(hand_ok.values()) else "MISMATCH"])
    table("matmul n x n float32 (GFLOP/s; first call includes tuning or a cache hit)", rows,
          ["n", "wjax tuned", "wjax default", "hand 16x16 tile", "hand 8x8 block",
           "tuned / best hand", "NumPy", "real JAX", "max err", "first call", "hand check"])
    return rates


def skinny(rt, jax, rng):
    an = rng.randn(64, 6400).astype(np.float32)
    bn = rng.randn(6400, 64).astype(np.float32)
    a, b = jnp.asarray(an), jnp.asarray(bn)
    f = wjax.jit(lambda x, y: x @ y)
    err = float(np.abs(np.asarray(f(a, b)) - an.astype(np.float64) @ bn).max())
    fns = {"wjax": lambda: f(a, b).block_until_ready(), "numpy": lambda: an @ bn}
    if jax is not None:
        ar, br = jax.numpy.asarray(an), jax.numpy.asarray(bn)
        rm = jax.jit(jax.numpy.matmul)
        fns["jax"] = lambda: rm(ar, br).block_until_ready()
    t = best_of(fns)
    fl = 2 * 64 * 64 * 6400
    table("skinny product 64 x 6400 @ 6400 x 64 (GFLOP/s)",
          [[gf(fl, t["wjax"]), gf(fl, t["numpy"]), gf(fl, t["jax"]) if "jax" in t else "-",
            f"{err:.1e}"]], ["wjax", "NumPy", "real JAX", "max err"])


def convs(rt, jax, rng, rates):
    xn = rng.randn(8, 16, 64, 64).astype(np.float32)
    wn = (rng.randn(32, 16, 3, 3) * 0.1).astype(np.float32)
    xc, wc = jnp.asarray(xn), jnp.asarray(wn)

    def layer(L, N):
        def loss(w, x):
            return N.sum(N.tanh(L.conv_general_dilated(x, w, (1, 1), "SAME")) ** 2)
        return loss
    fwd = wjax.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"))
    vg = wjax.jit(wjax.value_and_grad(layer(lax, jnp), argnums=(0, 1)))
    fns = {"fwd": lambda: fwd(xc, wc).block_until_ready(),
           "vg": lambda: wjax.block_until_ready(vg(wc, xc))}
    errs = ["-", "-"]
    if jax is not None:
        xr, wr = jax.numpy.asarray(xn), jax.numpy.asarray(wn)
        rf = jax.jit(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"))
        rvg = jax.jit(jax.value_and_grad(layer(jax.lax, jax.numpy), argnums=(0, 1)))
        fns["jfwd"] = lambda: rf(xr, wr).block_until_ready()
        fns["jvg"] = lambda: jax.block_until_ready(rvg(wr, xr))
        errs[0] = f"{float(np.abs(np.asarray(fwd(xc, wc)) - np.asarray(rf(xr, wr))).max()):.1e}"
        got, want = vg(wc, xc), rvg(wr, xr)
        rel = [float(np.abs(np.asarray(g) - np.asarray(w)).max() / np.abs(np.asarray(w)).max())
               for g, w in zip(wjax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want))]
        errs[1] = f"{max(rel):.1e} (rel)"
    t = best_of(fns)
    fl = 2 * 8 * 32 * 64 * 64 * 16 * 9
    # a product of the same FLOPs: M = 8*64*64 rows, K = 16*9, N = 32
    mm = wjax.jit(lambda x, y: x @ y)
    am = jnp.asarray(rng.randn(8 * 64 * 64, 16 * 9).astype(np.float32))
    bm = jnp.asarray(rng.randn(16 * 9, 32).astype(np.float32))
    tm = best_of({"mm": lambda: mm(am, bm).block_until_ready()})["mm"]
    rows = [["forward", gf(fl, t["fwd"]), gf(fl, tm), f"{tm / t['fwd']:.2f}x",
             gf(fl, t["jfwd"]) if "jfwd" in t else "-", errs[0]],
            ["value_and_grad (3 convs)", gf(3 * fl, t["vg"]), gf(fl, tm),
             f"{3 * tm / t['vg']:.2f}x", gf(3 * fl, t["jvg"]) if "jvg" in t else "-", errs[1]]]
    table("conv 8x16x64x64 * 32x16x3x3 NCHW SAME (GFLOP/s; 'vs matmul': against a 32768 x 144 "
          "by 144 x 32 product of the same FLOPs)", rows,
          ["", "wjax", "matmul same FLOPs", "vs matmul", "real JAX", "max diff"])


def half(rt, jax, rng):
    if not rt.has_f16:
        print("\nfloat16: this adapter has no shader-f16; float16 programs raise TypeError")
        return
    n = 512 if QUICK else 1024
    an, bn = rng.randn(n, n).astype(np.float16), rng.randn(n, n).astype(np.float16)
    a, b = jnp.asarray(an), jnp.asarray(bn)
    f16 = wjax.jit(lambda x, y: lax.dot(x, y, preferred_element_type=jnp.float32))
    a32, b32 = jnp.asarray(an.astype(np.float32)), jnp.asarray(bn.astype(np.float32))
    f32 = wjax.jit(lambda x, y: x @ y)
    want = an.astype(np.float64) @ bn.astype(np.float64)
    err = float(np.abs(np.asarray(f16(a, b)) - want).max())
    t = best_of({"f16": lambda: f16(a, b).block_until_ready(),
                 "f32": lambda: f32(a32, b32).block_until_ready()})
    fl = 2 * n ** 3
    table(f"float16 storage, float32 accumulation ({n}^2, preferred_element_type=float32)",
          [[gf(fl, t["f16"]), gf(fl, t["f32"]), f"{err:.1e}"]],
          ["f16 in, f32 out (GFLOP/s)", "f32 (GFLOP/s)", "max err vs float64"])


def main():
    rt = runtime.get()
    print(f"adapter: {rt.describe()}; autotune cache: {autotune.cache_path()}"
          f"{'' if autotune.enabled() else ' (tuning off)'}")
    jax = real_jax()
    rng = np.random.RandomState(0)
    rates = matmuls(rt, jax, rng)
    skinny(rt, jax, rng)
    convs(rt, jax, rng, rates)
    half(rt, jax, rng)


if __name__ == "__main__":
    main()
