"""jax.numpy benchmarks: reductions, matmul 256/1024/2048 (GFLOP/s) and a
convolution, against NumPy, real JAX (CPU) and hand-written WGSL on the same adapter.

    .venv/bin/python bench/bench_numpy.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np
from common import ms, real_jax, table, timeit
from hand_wgsl import MATMUL_TILE16

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import runtime

QUICK = "--quick" in sys.argv

HAND_SUM = """
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
var<workgroup> s: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  // PARTS workgroups, each thread sums a contiguous chunk of vec4s
  let n4 = arrayLength(&x);
  let per_group = (n4 + PARTSu - 1u) / PARTSu;
  let per = (per_group + 255u) / 256u;
  let lo = wid.x * per_group + lid * per;
  let hi = min(min(lo + per, (wid.x + 1u) * per_group), n4);
  var acc = vec4<f32>(0.0);
  for (var i = lo; i < hi; i = i + 1u) { acc = acc + x[i]; }
  s[lid] = acc.x + acc.y + acc.z + acc.w;
  workgroupBarrier();
  for (var k = 128u; k > 0u; k = k / 2u) {
    if (lid < k) { s[lid] = s[lid] + s[lid + k]; }
    workgroupBarrier();
  }
  if (lid == 0u) { y[wid.x] = s[0]; }
}
"""

def main():
    rt = runtime.get()
    print(f"adapter: {rt.describe()}")
    jax = real_jax()
    rng = np.random.RandomState(0)

    # reductions ------------------------------------------------------------------
    n = 2 ** 22 if QUICK else 2 ** 23
    xn = rng.rand(n).astype(np.float32)
    x = jnp.asarray(xn)
    rows = []
    for name, f, ref in [("sum", jnp.sum, np.sum), ("max", jnp.max, np.max),
                         ("argmax", jnp.argmax, np.argmax), ("mean", jnp.mean, np.mean)]:
        jf = wjax.jit(f)
        t = timeit(lambda: jf(x).block_until_ready())
        tn = timeit(lambda: ref(xn))
        row = [name, ms(t), ms(tn), f"{tn / t:.2f}x"]
        if jax is not None:
            rf = jax.jit(getattr(jax.numpy, name))
            xr = jax.numpy.asarray(xn)
            row.append(ms(timeit(lambda: rf(xr).block_until_ready())))
        rows.append(row)
    parts = 8
    y = rt.alloc(parts * 4)
    src = HAND_SUM.replace("PARTSu", f"{parts}u")

    def hand():
        rt.dispatch(src, [x.buffer, y], (parts, 1, 1))
        rt.synchronize()
    th = timeit(hand)
    rows.append(["sum (hand WGSL, 1 pass of 8 groups)", ms(th), "", "", ""])
    table(f"reductions of {n} float32", rows, ["op", "wjax jit", "NumPy", "vs NumPy", "real JAX"])

    # matmul ----------------------------------------------------------------------
    rows = []
    for n in ((256, 1024) if QUICK else (256, 1024, 2048)):
        an = rng.randn(n, n).astype(np.float32)
        bn = rng.randn(n, n).astype(np.float32)
        a, b = jnp.asarray(an), jnp.asarray(bn)
        f = wjax.jit(jnp.matmul)
        reps = 3 if n >= 1024 else 7
        t = timeit(lambda: f(a, b).block_until_ready(), reps=reps, warmup=1)
        err = float(np.abs(np.asarray(f(a, b)) - an.astype(np.float64) @ bn).max())
        tn = timeit(lambda: an @ bn, reps=reps)
        out = rt.alloc(n * n * 4)
        hsrc = MATMUL_TILE16.replace("NNu", f"{n}u")

        def hand():
            rt.dispatch(hsrc, [a.buffer, b.buffer, out], (n // 16, n // 16, 1))
            rt.synchronize()
        thand = timeit(hand, reps=reps, warmup=1)
        gf = lambda s: f"{2 * n ** 3 / s / 1e9:.1f}"
        row = [n, gf(t), gf(thand), gf(tn), f"{err:.1e}"]
        if jax is not None:
            rm = jax.jit(jax.numpy.matmul)
            ar, br = jax.numpy.asarray(an), jax.numpy.asarray(bn)
            row.append(gf(timeit(lambda: rm(ar, br).block_until_ready(), reps=reps)))
        rows.append(row)
    table("matmul n x n float32 (GFLOP/s)", rows,
          ["n", "wjax", "hand WGSL (16x16 tiles)", "NumPy", "max err", "real JAX"])

    # convolution -----------------------------------------------------------------
    if hasattr(lax, "conv_general_dilated"):
        xn = rng.randn(8, 16, 64, 64).astype(np.float32)
        wn = rng.randn(32, 16, 3, 3).astype(np.float32)
        xc, wc = jnp.asarray(xn), jnp.asarray(wn)
        f = wjax.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"))
        t = timeit(lambda: f(xc, wc).block_until_ready(), reps=3, warmup=1)
        flops = 2 * 8 * 32 * 64 * 64 * 16 * 9
        row = ["NCHW 8x16x64x64 * 32x16x3x3 SAME", f"{flops / t / 1e9:.1f}"]
        if jax is not None:
            rf = jax.jit(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"))
            xr, wr = jax.numpy.asarray(xn), jax.numpy.asarray(wn)
            tj = timeit(lambda: rf(xr, wr).block_until_ready(), reps=3)
            row.append(f"{flops / tj / 1e9:.1f}")
            err = float(np.abs(np.asarray(f(xc, wc)) - np.asarray(rf(xr, wr))).max())
            row.append(f"{err:.1e}")
        table("conv_general_dilated (GFLOP/s)", [row], ["shape", "wjax", "real JAX", "max diff"])


if __name__ == "__main__":
    main()
