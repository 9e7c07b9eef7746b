"""Call overhead and eager mode in one run.

Call overhead: ``x + 1`` on 5 elements --
  * a cached ``jit`` call plus ``block_until_ready`` and the same call without waiting
    (async), an eager ``x + 1`` (with and without the wait), and reading the result back;
  * next to one bare wgpu-py dispatch of a hand-written kernel (command encoder, compute
    pass, pipeline and bind group made beforehand, ``submit``, then a blocking device poll),
    the same with a 4-byte readback (``queue.read_buffer``) as the sync, NumPy and real JAX.

Eager mode: ``selu`` on 2^23 floats op by op (6 primitives: gt, exp, mul, sub, select_n, mul)
next to ``jit(selu)`` (one fused kernel), real JAX eager and jit, and NumPy; and per
primitive, its eager call against the same primitive under ``jit`` (its kernel alone).

Times are minima over interleaved repetitions (``common.interleaved``).

    .venv/bin/python bench/bench_overhead.py [--reps N]
"""
from __future__ import annotations

import argparse

import numpy as np
from common import interleaved, ms, ratio, real_jax, table, us

import wjax
import wjax.numpy as jnp
from wjax._src.backend import runtime

N = 2 ** 23
BARE = ("@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
        "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
        "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
        "  if (g.x < 5u) { y[g.x] = x[g.x] + 1.0; } }")


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def bare_dispatch(rt, small):
    """(record, out): ``record()`` encodes and submits one dispatch of the hand-written
    ``BARE`` kernel (x + 1 on the 5 floats of wjax array ``small`` into ``out``) through
    wgpu-py alone -- command encoder, compute pass, submit: what a call costs below wjax."""
    dev = rt.device
    out = rt.alloc(20)
    pipe = dev.create_compute_pipeline(
        layout="auto", compute={"module": dev.create_shader_module(code=BARE),
                                "entry_point": "main"})
    bg = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": small.buffer.gpu, "offset": 0,
                                    "size": small.buffer.gpu.size}},
        {"binding": 1, "resource": {"buffer": out.gpu, "offset": 0, "size": out.gpu.size}}])

    def record():
        enc = dev.create_command_encoder()
        p = enc.begin_compute_pass()
        p.set_pipeline(pipe)
        p.set_bind_group(0, bg)
        p.dispatch_workgroups(1, 1, 1)
        p.end()
        dev.queue.submit([enc.finish()])
    return record, out


def overhead(reps):
    rt = runtime.get()
    dev = rt.device
    small = jnp.arange(5.0)
    f = wjax.jit(lambda v: v + 1.0)
    record, out = bare_dispatch(rt, small)

    def bare_wait():
        record()
        dev._poll(True)

    def bare_read():
        record()
        dev.queue.read_buffer(out.gpu, 0, 4)

    inner = 50          # calls per timed sample (µs-scale work)

    def many(fn, timed_wait=True):
        """``inner`` calls; an async row's sample ends before the device catches up (its
        wait, needed so the samples do not pile work up, comes after the clock stops)."""
        def run():
            for _ in range(inner):
                fn()
            if timed_wait:
                rt.synchronize()
            else:
                run.after = rt.synchronize
        return run
    fns = {
        "bare wgpu-py dispatch + submit + poll wait": many(bare_wait),
        "bare wgpu-py dispatch + submit + 4-byte read": many(bare_read),
        "jit call + block_until_ready": many(lambda: f(small).block_until_ready()),
        "jit call, async (no wait)": many(lambda: f(small), False),
        "eager x + 1 + block_until_ready": many(lambda: (small + 1.0).block_until_ready()),
        "eager x + 1, async": many(lambda: small + 1.0, False),
        "jit call + read the value (np.asarray)": many(lambda: np.asarray(f(small))),
    }
    xn = np.arange(5.0, dtype=np.float32)
    fns["NumPy x + 1"] = many(lambda: xn + 1.0)
    jax = real_jax()
    if jax is not None:
        jf = jax.jit(lambda v: v + 1.0)
        xj = jax.numpy.asarray(xn)
        fns["JAX jit call + block_until_ready"] = many(lambda: jf(xj).block_until_ready())
        fns["JAX eager x + 1 + block_until_ready"] = many(
            lambda: (xj + 1.0).block_until_ready())
    f(small).block_until_ready()
    t = {k: (w / inner, c / inner) for k, (w, c) in interleaved(fns, reps=reps).items()}
    base = t["bare wgpu-py dispatch + submit + poll wait"][0]
    rows = [[k, us(w), f"{w / base:.2f}x"] for k, (w, c) in t.items()]
    table("call overhead, x + 1 on 5 float32 (per call; ratio to one bare dispatch with "
          "submit and wait, below 1 = cheaper)", rows, ["what", "time", "/ bare dispatch"])
    sync, asy = t["jit call + block_until_ready"][0], t["jit call, async (no wait)"][0]
    print(f"  target: jit call + wait <= 1.5x bare ({sync / base:.2f}x: "
          f"{'met' if sync <= 1.5 * base else 'NOT met'}); async <= 30 us "
          f"({asy * 1e6:.1f} us: {'met' if asy <= 30e-6 else 'NOT met'})")


def eager(reps):
    xn = np.random.RandomState(0).randn(N).astype(np.float32)
    x = jnp.asarray(xn)
    jselu = wjax.jit(selu)
    # selu's primitives, each eagerly and each alone under jit, on the values it sees
    p = x > 0
    e = jnp.exp(x)
    m = 1.67 * e
    s = m - 1.67
    w = jnp.where(p, x, s)
    ops = {
        "gt (x > 0)": (lambda: x > 0, wjax.jit(lambda a: a > 0), (x,)),
        "exp": (lambda: jnp.exp(x), wjax.jit(jnp.exp), (x,)),
        "mul (1.67 * e)": (lambda: 1.67 * e, wjax.jit(lambda a: 1.67 * a), (e,)),
        "sub (m - 1.67)": (lambda: m - 1.67, wjax.jit(lambda a: a - 1.67), (m,)),
        "select_n (where)": (lambda: jnp.where(p, x, s), wjax.jit(jnp.where), (p, x, s)),
        "mul (1.05 * w)": (lambda: 1.05 * w, wjax.jit(lambda a: 1.05 * a), (w,)),
    }
    fns = {"eager selu (6 ops)": lambda: selu(x).block_until_ready(),
           "jit selu (1 kernel)": lambda: jselu(x).block_until_ready(),
           "NumPy selu": lambda: 1.05 * np.where(xn > 0, xn, 1.67 * np.exp(xn) - 1.67)}
    for name, (eg, jt, args) in ops.items():
        fns[f"eager {name}"] = lambda eg=eg: eg().block_until_ready()
        fns[f"jit {name}"] = lambda jt=jt, args=args: jt(*args).block_until_ready()
    jax = real_jax()
    if jax is not None:
        import jax.numpy as rjnp

        def rselu(v):
            return 1.05 * rjnp.where(v > 0, v, 1.67 * rjnp.exp(v) - 1.67)
        xr = rjnp.asarray(xn)
        jr = jax.jit(rselu)
        fns["JAX eager selu"] = lambda: rselu(xr).block_until_ready()
        fns["JAX jit selu"] = lambda: jr(xr).block_until_ready()
    t = interleaved(fns, reps=reps)
    rows = []
    worst = 0.0
    for name in ops:
        we, wj = t[f"eager {name}"][0], t[f"jit {name}"][0]
        ce, cj = t[f"eager {name}"][1], t[f"jit {name}"][1]
        worst = max(worst, we / wj)
        rows.append([name, ms(we), ms(wj), f"{we / wj:.2f}x", f"{ce / cj:.2f}x"])
    kernels = sum(t[f"jit {n}"][0] for n in ops)
    rows.append(["selu: 6 ops", ms(t["eager selu (6 ops)"][0]), ms(kernels),
                 f"{t['eager selu (6 ops)'][0] / kernels:.2f}x", ""])
    table(f"eager ops on 2^{N.bit_length() - 1} float32: each op eagerly vs the same op's "
          "kernel alone (jit of that op)", rows,
          ["op", "eager", "its kernel (jit)", "eager / kernel", "(CPU time)"])
    print(f"  target: each eager op <= 1.3x its kernel alone (worst {worst:.2f}x: "
          f"{'met' if worst <= 1.3 else 'NOT met'})")
    ref = t["jit selu (1 kernel)"][0]
    rows = [[k, ms(v[0]), ratio(ref, v[0])] for k, v in t.items()
            if "selu" in k]
    table("selu on 2^23 float32 (speed relative to wjax jit)", rows, ["impl", "time", "speed"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    print(f"adapter: {runtime.get().describe()}")
    overhead(args.reps)
    eager(max(3, args.reps // 2))


if __name__ == "__main__":
    main()
