"""jnp.fft benchmark: complex64 FFTs of 2^10 .. 2^20 points (batches of rows, 2^20 points in
all), against NumPy (pocketfft), real JAX (CPU, ducc) and a hand-written WGSL radix-4
Stockham FFT (one dispatch per pass, twiddles from the builtin sin/cos) on the same adapter.
Repetitions are interleaved and the minimum of each is kept, so the ratios come from one run.

    .venv/bin/python bench/bench_fft.py [--quick]
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
from common import real_jax, table

import wjax
import wjax.numpy as jnp
from wjax._src.backend import runtime

QUICK = "--quick" in sys.argv

# one radix-4 (or radix-2) Stockham pass over ROWS rows of N points; NS: the span so far
HAND_PASS = """
@group(0) @binding(0) var<storage, read> src: array<vec2<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<f32>>;
fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
fn tw(k: u32, m: u32) -> vec2<f32> {
  let a = -6.283185307179586 * f32(k) / f32(m);
  return vec2<f32>(cos(a), sin(a));
}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let id = (wid.x + wid.y * NXu) * 64u + lid;
  if (id >= TOTALu) { return; }
  let row = id / QUARTERu;
  let j = id % QUARTERu;
  let base = row * Nu;
  let k = j % NSu;
  let o = base + (j - k) * Ru + k;
BODY
}
"""
RADIX4 = """
  let a0 = src[base + j];
  let a1 = cmul(src[base + j + QUARTERu], tw(k, NSu * 4u));
  let a2 = cmul(src[base + j + 2u * QUARTERu], tw(2u * k, NSu * 4u));
  let a3 = cmul(src[base + j + 3u * QUARTERu], tw(3u * k, NSu * 4u));
  let t0 = a0 + a2; let t1 = a0 - a2; let t2 = a1 + a3; let d = a1 - a3;
  let t3 = vec2<f32>(d.y, -d.x);
  dst[o] = t0 + t2; dst[o + NSu] = t1 + t3; dst[o + 2u * NSu] = t0 - t2;
  dst[o + 3u * NSu] = t1 - t3;"""
RADIX2 = """
  let a0 = src[base + j];
  let a1 = cmul(src[base + j + QUARTERu], tw(k, NSu * 2u));
  dst[o] = a0 + a1; dst[o + NSu] = a0 - a1;"""


class HandFFT:
    """The hand-written kernel: log4(N) radix-4 passes (and one radix-2), ping-pong buffers."""

    def __init__(self, rt, rows, n):
        self.rt, self.passes = rt, []
        self.bufs = [rt.alloc(rows * n * 8) for _ in range(2)]
        ns, lg = 1, int(math.log2(n))
        for r in [4] * (lg // 2) + [2] * (lg % 2):
            q = n // r
            total = rows * q
            groups = -(-total // 64)
            grid = (groups, 1, 1) if groups <= 65535 else (65535, -(-groups // 65535), 1)
            src = HAND_PASS.replace("BODY", RADIX4 if r == 4 else RADIX2)
            for k, v in (("QUARTER", q), ("TOTAL", total), ("NX", grid[0]), ("NS", ns),
                         ("R", r), ("N", n)):
                src = src.replace(f"{k}u", f"{v}u")
            self.passes.append((src, grid))
            ns *= r

    def __call__(self, x_buffer):
        src_buf = x_buffer
        for i, (src, grid) in enumerate(self.passes):
            dst = self.bufs[i % 2]
            self.rt.dispatch(src, [src_buf, dst], grid)
            src_buf = dst
        self.rt.synchronize()
        return src_buf


def bench_many(fns, reps):
    """Minimum time of each function, repetitions interleaved."""
    for f in fns:
        f()
    best = [float("inf")] * len(fns)
    for _ in range(reps):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def main():
    rt = runtime.get()
    print(f"adapter: {rt.describe()} (FFT strategy: {rt.target().fft})")
    jax = real_jax()
    rng = np.random.RandomState(0)
    total = 1 << (16 if QUICK else 20)
    rows_out = []
    for lg in range(10, 21, 2):
        n = 1 << lg
        if n > total:
            break
        rows = total // n
        xn = (rng.randn(rows, n) + 1j * rng.randn(rows, n)).astype(np.complex64)
        want = np.fft.fft(xn.astype(np.complex128))
        x = jnp.asarray(xn)
        f = wjax.jit(jnp.fft.fft)
        hand = HandFFT(rt, rows, n)
        nbytes = rows * n * 8
        fns = [lambda: f(x).block_until_ready(), lambda: hand(x.buffer), lambda: np.fft.fft(xn)]
        if jax is not None:
            jf = jax.jit(jax.numpy.fft.fft)
            xj = jax.numpy.asarray(xn)
            fns.append(lambda: jf(xj).block_until_ready())
        ts = bench_many(fns, 3 if lg >= 18 else 5)
        err = lambda g: float(np.linalg.norm(g - want) / np.linalg.norm(want))  # noqa: E731
        hand_out = hand(x.buffer)
        hv = np.frombuffer(rt.read(hand_out, nbytes), np.complex64).reshape(rows, n)
        gflops = lambda t: f"{5 * rows * n * lg / t / 1e9:.2f}"  # noqa: E731
        row = [f"{rows} x 2^{lg}", f"{ts[0] * 1e3:.2f}", f"{ts[1] * 1e3:.2f}",
               f"{ts[2] * 1e3:.2f}", f"{ts[3] * 1e3:.2f}" if jax is not None else "-",
               f"{ts[1] / ts[0]:.2f}", f"{ts[2] / ts[0]:.2f}",
               f"{ts[3] / ts[0]:.2f}" if jax is not None else "-",
               gflops(ts[0]), f"{err(np.asarray(f(x))):.1e}", f"{err(hv):.1e}"]
        rows_out.append(row)
    table(f"complex64 FFT, {total} points per call (ms; ratios > 1: wjax faster)", rows_out,
          ["rows x n", "wjax", "hand WGSL", "NumPy", "real JAX", "hand/wjax", "NumPy/wjax",
           "JAX/wjax", "wjax GFLOP/s", "err wjax", "err hand"])

    # the other transforms at one size
    n = 1 << 12
    rows = total // n
    xr = rng.randn(rows, n).astype(np.float32)
    cases = [("rfft", jnp.fft.rfft, np.fft.rfft, xr), ("irfft", jnp.fft.irfft, np.fft.irfft,
                                                       np.fft.rfft(xr).astype(np.complex64)),
             ("fft2 (64 x 64 tiles)", jnp.fft.fft2, np.fft.fft2,
              (xr + 1j).astype(np.complex64).reshape(-1, 64, 64)),
             ("fft n=1000 (mixed radix)", jnp.fft.fft, np.fft.fft,
              (xr[:, :1000] + 1j).astype(np.complex64)),
             ("fft n=1031 (Bluestein)", jnp.fft.fft, np.fft.fft,
              (xr[:, :1031] + 1j).astype(np.complex64))]
    out = []
    for name, fw, fnp, a in cases:
        f = wjax.jit(fw)
        ad = jnp.asarray(a)
        fns = [lambda: f(ad).block_until_ready(), lambda: fnp(a)]
        if jax is not None:
            jf = jax.jit(getattr(jax.numpy.fft, fw.__name__))
            aj = jax.numpy.asarray(a)
            fns.append(lambda: jf(aj).block_until_ready())
        ts = bench_many(fns, 5)
        want = fnp(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        e = float(np.linalg.norm(np.asarray(f(ad)) - want) / np.linalg.norm(want))
        out.append([f"{name} {a.shape}", f"{ts[0] * 1e3:.2f}", f"{ts[1] * 1e3:.2f}",
                    f"{ts[2] * 1e3:.2f}" if jax is not None else "-", f"{ts[1] / ts[0]:.2f}",
                    f"{ts[2] / ts[0]:.2f}" if jax is not None else "-", f"{e:.1e}"])
    table("other transforms (ms)", out,
          ["transform", "wjax", "NumPy", "real JAX", "NumPy/wjax", "JAX/wjax", "err wjax"])


if __name__ == "__main__":
    main()
