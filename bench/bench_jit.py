"""jit benchmarks: selu on 2^23 floats (jit, eager, NumPy, real JAX, a
hand-written WGSL kernel on the same adapter), norm(X) jit vs eager, and the
cached-call overhead of a jit function next to one bare wgpu-py dispatch.

    .venv/bin/python bench/bench_jit.py
"""
from __future__ import annotations

import numpy as np
from common import ms, real_jax, table, timeit, us

import wjax
import wjax.numpy as jnp
from wjax._src.backend import runtime

N = 2 ** 23


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def norm(X):
    X = X - X.mean(0)
    return X / X.std(0)


HAND_SELU = """
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> y: array<vec4<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
  // each thread: a contiguous chunk of 4 vec4s
  let base = (g.x + g.y * nw.x * 64u) * 4u;
  for (var k = 0u; k < 4u; k = k + 1u) {
    let i = base + k;
    if (i < arrayLength(&y)) {
      let v = x[i];
      y[i] = 1.05 * select(1.67 * exp(v) - 1.67, v, v > vec4<f32>(0.0));
    }
  }
}
"""


def hand_kernel(rt, xbuf, ybuf, n):
    threads = n // 16
    groups = -(-threads // 64)
    gx = min(groups, 65535)
    gy = -(-groups // gx)

    def run():
        rt.dispatch(HAND_SELU, [xbuf, ybuf], (gx, gy, 1))
        rt.synchronize()
    return run


def main():
    rt = runtime.get()
    print(f"adapter: {rt.describe()}")
    xn = np.random.RandomState(0).randn(N).astype(np.float32)
    x = jnp.asarray(xn)
    jselu = wjax.jit(selu)
    rows = []
    t_jit = timeit(lambda: jselu(x).block_until_ready())
    t_eager = timeit(lambda: selu(x).block_until_ready(), reps=5)
    t_np = timeit(lambda: 1.05 * np.where(xn > 0, xn, 1.67 * np.exp(xn) - 1.67))
    y = jnp.zeros(N)
    t_hand = timeit(hand_kernel(rt, x.buffer, y.buffer, N))
    # same answer from the hand kernel
    np.testing.assert_allclose(
        np.asarray(y)[:1000], np.asarray(jselu(x))[:1000], rtol=1e-5, atol=1e-6
    )
    rows += [("wjax jit", ms(t_jit), f"{t_hand / t_jit:.2f}x"),
             ("wjax eager", ms(t_eager), f"{t_hand / t_eager:.2f}x"),
             ("hand WGSL (vec4)", ms(t_hand), "1.00x"),
             ("NumPy", ms(t_np), f"{t_hand / t_np:.2f}x")]
    jax = real_jax()
    if jax is not None:
        import jax.numpy as rjnp
        rsel = jax.jit(lambda x: 1.05 * rjnp.where(x > 0, x, 1.67 * rjnp.exp(x) - 1.67))
        xr = rjnp.asarray(xn)
        t_jax = timeit(lambda: rsel(xr).block_until_ready())
        rows.append(("real JAX jit (CPU)", ms(t_jax), f"{t_hand / t_jax:.2f}x"))
    table(
        "selu on 2^23 float32 (speed relative to the hand kernel)",
        rows,
        ["impl", "median", "speed"],
    )

    X = jnp.asarray(np.random.RandomState(1).randn(10000, 10).astype(np.float32))
    jnorm = wjax.jit(norm)
    t1 = timeit(lambda: jnorm(X).block_until_ready())
    t2 = timeit(lambda: norm(X).block_until_ready())
    kernels = len(jnorm.lower(X).compile().plan.steps)
    table(
        "norm(X), X 10000x10",
        [("jit", ms(t1), kernels), ("eager", ms(t2), "-"), ("speed-up", f"{t2 / t1:.1f}x", "")],
        ["impl", "median", "kernels"],
    )

    small = jnp.arange(5.0)
    f = wjax.jit(lambda v: v * 2.0 + 1.0)
    t_call = timeit(lambda: f(small).block_until_ready(), reps=200)
    src = ("@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
           "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
           "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
           "  if (g.x < 5u) { y[g.x] = x[g.x] * 2.0 + 1.0; } }")
    out = rt.alloc(20)

    def bare():
        rt.dispatch(src, [small.buffer, out], (1, 1, 1))
        rt.synchronize()
    t_bare = timeit(bare, reps=200)
    table("cached-call overhead (5 elements, dispatch + sync)",
          [("jit call", us(t_call)), ("bare wgpu-py dispatch", us(t_bare)),
           ("ratio", f"{t_call / t_bare:.2f}x")], ["what", "median"])


if __name__ == "__main__":
    main()
