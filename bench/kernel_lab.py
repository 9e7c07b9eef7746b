"""Where a kernel's time goes: each kernel of a few of bench_gpu.py's workloads (a matmul,
selu, a*2+b, sum, softmax, attention, a column normalisation) timed as lowered and again with
one of its driver-proof helpers swapped for the plain WGSL builtin it stands in for, and
under wgpu's other shader checks, by GPU timestamps (the profiler's timer) where the adapter
has them.  (The tiled matmul's slab loop written out, once a variant here, is how the kernel
is lowered since an H200 ran it 13% faster.)

    WJAX_BACKEND=vulkan python3 bench/kernel_lab.py            # the issue's sizes on a GPU
    python3 bench/kernel_lab.py --only softmax                 # one workload

The swapped kernels compute what the builtins compute (a division at the driver's 2.5 ulp,
the driver's exp, a plain float sum, no NaN-aware max, no opaque values), so they are not
wjax's answers: the table says what each exact helper costs on this adapter, e.g. whether the
softmax kernel's 322 us on an H200 (a copy of its bytes: ~90 us) is its division, its exp, its
compensated sum, or none of them (then: latency and occupancy).  Nothing here is used by wjax.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import wjax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402
from wjax._src.backend import profiler, runtime  # noqa: E402


def replace_fn(src: str, name: str, body: str) -> str:
    """``src`` with the body of WGSL function ``name`` (a helper: its closing brace alone on
    a line) replaced by ``body``; unchanged where there is no such function."""
    one = re.search(r"^(fn " + re.escape(name) + r"\(.*?\{) .* \}$", src, re.M)
    if one is not None:                      # a helper on one line
        return src[:one.start()] + one.group(1) + "\n" + body + "\n}" + src[one.end():]
    m = re.search(r"^fn " + re.escape(name) + r"\(.*?\{\n", src, re.M)
    if m is None:
        return src
    end = src.index("\n}", m.end() - 1)
    return src[:m.end()] + body + src[end:]


def plain_sums(src: str) -> str:
    """Compensated (2Sum) combines of float sums made plain additions (the error term 0)."""
    for m in re.finditer(r"^fn (wj_comb\w+)\(a: vec2<f32>, b: vec2<f32>\) -> vec2<f32> \{\n",
                         src, re.M):
        if "let err" in src[m.end():src.index("\n}", m.end())]:
            src = replace_fn(src, m.group(1), "  return vec2<f32>(a.x + b.x, 0.0);")
    return src


VARIANTS = {
    "opaque values as they are": lambda s: replace_fn(s, "wj_opq", "  return x;"),
    "division: a / b": lambda s: replace_fn(s, "wj_div", "  return a / b;"),
    "exp, expm1: the builtin": lambda s: replace_fn(
        replace_fn(s, "wj_exp", "  return exp(x);"), "wj_expm1", "  return exp(x) - 1.0;"),
    "max: the builtin": lambda s: replace_fn(s, "wj_max_f", "  return max(a, b);"),
    "sums: plain": plain_sums,
}


# the run-time checks naga compiles into a kernel (``Target.shader_checks``; wjax's GPU
# profiles take "bounds": indices clamped, no loop counters)
CHECKS = {"shader checks: all (wgpu's default)": "all", "shader checks: none": "none"}


def all_swapped(src: str) -> str:
    for f in VARIANTS.values():
        src = f(src)
    return src


def _attention(q, k, v):
    """bench_gpu.py's attention: two einsums and the softmax between them (one fused kernel
    on GPU profiles, ``prims/attention.py``)."""
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, precision="highest") / np.sqrt(q.shape[-1])
    return jnp.einsum("bhqk,bhkd->bhqd", wjax.nn.softmax(s, axis=-1), v, precision="highest")


def workloads(small: bool):
    rs = np.random.default_rng(0)
    n = 1 << (20 if small else 26)
    rows, cols = (512, 1024) if small else (8192, 4096)
    tall = (1 << 14, 64) if small else (1 << 20, 64)

    def put(*shape):
        return wjax.device_put(rs.standard_normal(shape).astype(np.float32))
    x, y = put(n), put(n)
    mm = 256 if small else 4096
    ab, ah, asq = (1, 2, 256) if small else (8, 16, 1024)
    return {
        "matmul": [(f"matmul {mm} f32 HIGHEST",
                    lambda a, b: jnp.dot(a, b, precision="highest"), (put(mm, mm), put(mm, mm)),
                    12 * mm * mm)],
        "elementwise": [(f"selu, {n}", wjax.nn.selu, (x,), 8 * n),
                        (f"a*2+b, {n}", lambda a, b: a * 2 + b, (x, y), 12 * n)],
        "sum": [(f"sum, {n}", jnp.sum, (x,), 4 * n)],
        "softmax": [(f"softmax over rows, {rows} x {cols}",
                     lambda a: wjax.nn.softmax(a, axis=-1), (put(rows, cols),),
                     8 * rows * cols)],
        "attention": [(f"attention b{ab} h{ah} s{asq} d64", _attention,
                       tuple(put(ab, ah, asq, 64) for _ in range(3)), 16 * ab * ah * asq * 64)],
        "colnorm": [(f"(X - mean(X,0)) / std(X,0), {tall[0]} x {tall[1]}",
                     lambda a: (a - a.mean(0)) / a.std(0), (put(*tall),),
                     8 * tall[0] * tall[1])],
    }


def capture(rt, f, args):
    """The dispatches of one call of jitted ``f``: [(wgsl, buffers, grid, ranges)], and its
    outputs (kept, so that the buffers stay theirs while the kernels are timed again)."""
    got, real = [], rt.dispatch
    jf = wjax.jit(f)
    labels = {getattr(st, "wgsl", None): getattr(st, "label", "kernel")
              for st in jf.lower(*args).compile().plan.steps}

    def spy(wgsl, buffers, grid, ranges=None, indirect=None, meta=None):
        if indirect is None:
            got.append((wgsl, list(buffers), tuple(grid), ranges, labels.get(wgsl, "kernel")))
        return real(wgsl, buffers, grid, ranges, indirect, meta)
    wjax.block_until_ready(jf(*args))        # compiled (and tuned) before the capture
    rt.dispatch = spy
    try:
        out = jf(*args)
        wjax.block_until_ready(out)
    finally:
        del rt.dispatch
    return got, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*",
                    help="workloads: matmul elementwise sum softmax attention colnorm")
    ap.add_argument("--small", action="store_true", default=None)
    ap.add_argument("--full", dest="small", action="store_false")
    ap.add_argument("--gpu-forms", action="store_true",
                    help="the GPU kernel strategies on any adapter (lavapipe: to try it)")
    a = ap.parse_args()
    rt = runtime.get()
    forms = {}
    if a.gpu_forms:
        from wjax._src.backend import profiles
        forms = dict(profiles.GPU_STRATEGIES, spin_wait_us=0)
    small = a.small
    if small is None:
        small = rt.target().profile in ("lavapipe", "llvmpipe-gl", "generic-cpu")
    with rt.options(**forms):
        lab(rt, small, a.only)


def lab(rt, small: bool, only) -> None:
    """Prints, for each workload (``only``: those keys), each kernel's time as lowered and
    under every variant that changes it."""
    timer = "GPU timestamps" if profiler.uses_timestamps(rt) else "host"
    print(f"# kernel_lab: {rt.target().name} (profile {rt.target().profile}); "
          f"{'small' if small else 'full'} sizes; timer: {timer}; best of 5")
    names = ["as lowered"] + list(VARIANTS) + ["all of them swapped"]
    for key, cases in workloads(small).items():
        if only and key not in only:
            continue
        for title, f, args, nbytes in cases:
            print(f"\n## {title} (the call moves {nbytes / 2**20:.0f} MiB at least)")
            disp, out = capture(rt, f, args)
            for wgsl, bufs, grid, ranges, label in disp:
                srcs = [wgsl] + [v(wgsl) for v in VARIANTS.values()] + [all_swapped(wgsl)]
                runs, shown = [], []
                checked = [(name, f"{wgsl}\n// kernel_lab: checks {mode}\n", mode)
                           for name, mode in CHECKS.items()]
                for name, src, mode in [(n, x, None) for n, x in zip(names, srcs)] + checked:
                    if name != names[0] and src == wgsl:
                        continue                     # the kernel has no such helper
                    try:
                        with rt.options(**({"shader_checks": mode} if mode else {})):
                            rt.pipeline(src)         # (cached by its text: a tag per mode)
                    except Exception as e:           # noqa: BLE001 (a variant that fails)
                        print(f"  {name}: does not compile: {str(e).splitlines()[0][:80]}")
                        continue
                    runs.append((src, bufs, grid, ranges))
                    shown.append(name)
                ts = profiler.time_dispatches(rt, runs)
                print(f"  {label}  grid {grid}")
                for name, t in zip(shown, ts):
                    print(f"    {name:<36} {t * 1e6:10.1f} us  {t / ts[0]:6.2f}x")
            del out


if __name__ == "__main__":
    main()
