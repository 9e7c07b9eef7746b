"""The GPU workloads of one table: bandwidth, reductions, matmul, the MLP step, a scan RNN,
convolutions, attention, call latency and first-call time -- on wjax, or with ``--module jax``
on real JAX (whatever platform it has: CUDA on an NVIDIA machine), same code, same sizes.

    WJAX_BACKEND=vulkan python3 bench/bench_gpu.py --json wjax.json     # wjax on the adapter
    python3 bench/bench_gpu.py --module jax --json xla.json             # real JAX on its device
    python3 bench/bench_gpu.py --compare wjax.json xla.json             # one table, with ratios

Sizes: the issue's (2^26-element elementwise, 4096^2 matmul, ...) on a GPU; on a CPU adapter
(lavapipe) or JAX on CPU, small ones (``--small``, chosen automatically) so the same code runs
in seconds.  Each number is the median wall time of repeated calls after warm-up, each call
ending in ``block_until_ready``; matmuls and convolutions at ``precision=HIGHEST`` (exact
float32) unless the row says otherwise; rates count the fewest bytes a workload must move
(inputs read once, outputs written once) and 2*M*N*K flops for a product.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402


def median_time(fn, *, warmup=2, reps=10, min_time=0.3, max_time=5.0):
    """Median wall seconds of ``fn()`` (which waits for its result) after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    ts = []
    t_start = time.perf_counter()
    while len(ts) < reps or time.perf_counter() - t_start < min_time:
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        if time.perf_counter() - t_start > max_time and len(ts) >= 3:
            break
    return statistics.median(ts)


class Bench:
    def __init__(self, jax, small, profile_to=None, gaps=False):
        self.jax, self.jnp, self.small = jax, jax.numpy, small
        self.gaps = gaps                  # wjax: each workload's call split into its phases
        self.module = "jax" if jax.__name__ == "jax" else "wjax"
        self.profile_to = profile_to      # wjax: a file for each workload's profiler summary
        self.rows = []
        self.rng = np.random.default_rng(0)
        self._peak = None

    def peak(self):
        """wjax on a GPU: the profiler's measured copy bandwidth and FMA rate, against which a
        row's rate is checked (None elsewhere: a CPU adapter's probe reads what a loaded host
        gives, and XLA's side has no probe)."""
        if self._peak is None and self.module == "wjax" and not self.small:
            from wjax._src.backend import profiler, runtime
            self._peak = profiler.measure_peak(runtime.get())
        return self._peak

    def put(self, a):
        return self.jax.device_put(np.asarray(a))

    def randn(self, *shape, dtype=np.float32):
        return self.put(self.rng.standard_normal(shape).astype(dtype))

    def row(self, name, seconds, *, nbytes=None, flops=None, note=""):
        rate = ""
        if nbytes:
            rate = f"{nbytes / seconds / 1e9:,.0f} GB/s"
        elif flops:
            rate = f"{flops / seconds / 1e12:.2f} TFLOP/s"
        peak = self.peak() if (nbytes or flops) else None
        if peak and (nbytes and nbytes / seconds / 1e9 > 1.25 * peak["gbps"]
                     or flops and flops / seconds / 1e9 > 1.25 * peak["gflops"]):
            # (2026-11-28: waits that returned before the work made selu "7.7 TB/s")
            note = (note + " IMPLAUSIBLE: past the adapter's measured peak "
                    f"({peak['gbps']:,.0f} GB/s, {peak['gflops'] / 1e3:.1f} TFLOP/s)").strip()
        self.rows.append(dict(name=name, seconds=seconds, rate=rate, note=note))
        print(f"  {name:<48} {seconds * 1e3:10.3f} ms  {rate:>16}  {note}", flush=True)

    def timed(self, name, fn, args, **kw):
        jax = self.jax
        f = jax.jit(fn)

        def call():
            jax.block_until_ready(f(*args))
        try:
            self.row(name, median_time(call), **kw)
            if self.profile_to:
                self.profile(name, call)
            if self.gaps:
                self.phases(name, f, args)
        except Exception as e:     # one workload's failure must not hide the others
            msg = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
            print(f"  {name:<48} FAILED {msg}", flush=True)
            self.rows.append(dict(name=name, seconds=None, rate="", note="FAILED " + msg))


    def phases(self, name, f, args, reps=10):
        """Where a waited call's wall time goes (wjax): recording it (``f(*args)`` returning;
        early submits included), submitting the rest (``flush``), waiting for the device
        (``synchronize``) -- medians in microseconds, to set beside the profiler's GPU time;
        the wait as the target does it (on GPUs: spinning first) and asleep at once."""
        from wjax._src.backend import runtime
        rt = runtime.get()
        for how, opts in (("", {}), (", asleep at once", {"spin_wait_us": 0})):
            with rt.options(**opts):
                f(*args)               # compiled under these options before the clock
                rt.synchronize()
                ph = {"record": [], "submit": [], "wait": []}
                for _ in range(reps):
                    rt.synchronize()
                    t0 = time.perf_counter()
                    out = f(*args)
                    t1 = time.perf_counter()
                    rt.flush()
                    t2 = time.perf_counter()
                    rt.synchronize()
                    t3 = time.perf_counter()
                    del out
                    for k, v in zip(ph, (t1 - t0, t2 - t1, t3 - t2)):
                        ph[k].append(v * 1e6)
            print(f"    phases{how} (us): " + ", ".join(
                f"{k} {statistics.median(v):.0f}" for k, v in ph.items()), flush=True)

    def profile(self, name, call):
        """wjax's profiler (GPU timestamps) over three calls: its summary, appended."""
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            with self.jax.profiler.trace(d):
                for _ in range(3):
                    call()
            text = self.jax.profiler.last_summary() or ""
        with open(self.profile_to, "a") as f:
            f.write(f"\n### {name} (3 calls)\n{text}\n")


def workloads(b: Bench, only=None):
    jax, jnp, lax = b.jax, b.jnp, b.jax.lax
    S = b.small
    HI = lax.Precision.HIGHEST

    def want(key):
        return only is None or any(o in key for o in only)

    # -- bandwidth ------------------------------------------------------------------------
    n = 2 ** 20 if S else 2 ** 26
    if want("elementwise"):
        x, y = b.randn(n), b.randn(n)

        def selu(x, alpha=1.67, lmbda=1.05):
            return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
        b.timed(f"selu, {n} elements", selu, (x,), nbytes=8 * n)
        b.timed(f"a*2+b, {n}", lambda a, c: a * 2 + c, (x, y), nbytes=12 * n)
    if want("sum"):
        x = b.randn(n)
        b.timed(f"sum, {n}", jnp.sum, (x,), nbytes=4 * n)
        b.timed(f"max, {n}", jnp.max, (x,), nbytes=4 * n)
    if want("colnorm"):
        r = 2 ** 14 if S else 2 ** 20
        X = b.randn(r, 64)
        b.timed(f"column sum X.sum(0), {r} x 64", lambda X: X.sum(0), (X,), nbytes=4 * r * 64)
        b.timed(f"(X - mean(X,0)) / std(X,0), {r} x 64",
                lambda X: (X - X.mean(0)) / X.std(0), (X,), nbytes=8 * r * 64)
    if want("softmax"):
        r, c = (512, 1024) if S else (8192, 4096)
        X = b.randn(r, c)
        b.timed(f"softmax over rows, {r} x {c}", lambda X: jax.nn.softmax(X, axis=-1), (X,),
                nbytes=8 * r * c)
    if want("cumsum"):
        m = 2 ** 16 if S else 2 ** 24
        x = b.randn(m)
        b.timed(f"cumsum, {m}", jnp.cumsum, (x,), nbytes=8 * m)
    if want("sort"):
        m = 2 ** 14 if S else 2 ** 22
        x = b.randn(m)
        b.timed(f"sort, {m}", jnp.sort, (x,), nbytes=8 * m)
        if b.module == "wjax":       # the radix sort's chunk form (CPU adapters') beside it
            from wjax._src.backend import runtime
            with runtime.get().options(sort="registers"):
                b.timed(f"sort, {m}, chunk form", lambda a: jnp.sort(a), (x,), nbytes=8 * m)

    # -- compute --------------------------------------------------------------------------
    if want("matmul"):
        for m in ((128, 256) if S else (1024, 2048, 4096, 8192)):
            A, B = b.randn(m, m), b.randn(m, m)
            b.timed(f"matmul {m} f32 HIGHEST", lambda A, B: jnp.matmul(A, B, precision=HI),
                    (A, B), flops=2 * m ** 3)
        m = 256 if S else 4096
        A, B = b.randn(m, m), b.randn(m, m)
        b.timed(f"matmul {m} f32 DEFAULT", jnp.matmul, (A, B), flops=2 * m ** 3)
        for dt in ("bfloat16", "float16"):
            A16, B16 = A.astype(dt), B.astype(dt)
            b.timed(f"matmul {m} {dt}", jnp.matmul, (A16, B16), flops=2 * m ** 3)
    if want("mlp"):
        sizes = (784, 256, 256, 10) if S else (784, 2048, 2048, 10)
        batch = 128 if S else 1024
        params = [(b.randn(m, k) / np.sqrt(m), jnp.zeros(k)) for m, k in zip(sizes, sizes[1:])]
        xb = b.randn(batch, sizes[0])
        yb = jax.nn.one_hot(jnp.arange(batch) % 10, 10)

        def loss(params, x, y):
            h = x
            for i, (W, c) in enumerate(params):
                h = jnp.dot(h, W, precision=HI) + c
                if i < len(params) - 1:
                    h = jax.nn.relu(h)
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(h) * y, -1))

        def step(params, x, y):
            l, g = jax.value_and_grad(loss)(params, x, y)
            return l, jax.tree_util.tree_map(lambda p, q: p - 0.01 * q, params, g)
        fl = 6 * batch * sum(m * k for m, k in zip(sizes, sizes[1:]))
        b.timed(f"MLP step {'-'.join(map(str, sizes))}, batch {batch}", step, (params, xb, yb),
                flops=fl)
        if b.module == "wjax":      # the same step submitted only at block_until_ready
            from wjax._src.backend import runtime
            with runtime.get().options(submit_early=0):
                b.timed("MLP step, one submit at block_until_ready", lambda *a: step(*a),
                        (params, xb, yb), flops=fl)
    if want("rnn"):
        H, T, Bt = (64, 50, 16) if S else (256, 200, 64)
        Wh, Wx = b.randn(H, H) / np.sqrt(H), b.randn(H, H) / np.sqrt(H)
        xs = b.randn(T, Bt, H)
        h0 = jnp.zeros((Bt, H))

        def rnn(Wh, Wx, xs):
            def cell(h, x):
                h = jnp.tanh(jnp.dot(h, Wh, precision=HI) + jnp.dot(x, Wx, precision=HI))
                return h, h
            h, hs = lax.scan(cell, h0, xs)
            return jnp.sum(hs)
        b.timed(f"tanh RNN scan h{H} T{T} b{Bt}: forward", rnn, (Wh, Wx, xs))
        b.timed(f"tanh RNN scan h{H} T{T} b{Bt}: grad", jax.grad(rnn, argnums=(0, 1)),
                (Wh, Wx, xs))
        if b.module == "wjax":      # the loop without its split into blocks of rows
            from wjax._src.backend import runtime
            with runtime.get().options(loop_slices=1):
                b.timed("tanh RNN scan: forward, rows not split", lambda *a: rnn(*a),
                        (Wh, Wx, xs))
                b.timed("tanh RNN scan: grad, rows not split",
                        jax.grad(lambda *a: rnn(*a), argnums=(0, 1)), (Wh, Wx, xs))
    if want("conv"):
        N, C, HW, O = (4, 16, 28, 16) if S else (32, 64, 56, 64)
        xc = b.randn(N, C, HW, HW)
        w = b.randn(O, C, 3, 3) / np.sqrt(9 * C)

        def conv(x, w):
            return lax.conv_general_dilated(x, w, (1, 1), "SAME", precision=HI)
        fl = 2 * N * O * HW * HW * C * 9
        b.timed(f"conv {N}x{C}x{HW}x{HW} * {O}x{C}x3x3 SAME: forward", conv, (xc, w), flops=fl)

        def closs(w, x):
            return jnp.sum(jax.nn.relu(conv(x, w)) ** 2)
        b.timed(f"conv {N}x{C}x{HW}x{HW}: value_and_grad (w, x)",
                jax.value_and_grad(closs, argnums=(0, 1)), (w, xc), flops=3 * fl)
        if b.module == "wjax":      # the patches copied before the product (explicit im2col)
            from wjax._src.backend import runtime
            with runtime.get().options(operand_reads="copy"):
                b.timed(f"conv {N}x{C}x{HW}x{HW} * {O}x{C}x3x3 SAME: forward, explicit im2col",
                        lambda *a: conv(*a), (xc, w), flops=fl)
                b.timed(f"conv {N}x{C}x{HW}x{HW}: value_and_grad (w, x), explicit im2col",
                        lambda *a: jax.value_and_grad(closs, argnums=(0, 1))(*a), (w, xc),
                        flops=3 * fl)
        # first call: trace + compile + run of a fresh function of the same conv
        try:
            def conv2(x, w):
                return lax.conv_general_dilated(x, w, (1, 1), "SAME", precision=HI) * 1.0
            t0 = time.perf_counter()
            jax.block_until_ready(jax.jit(conv2)(xc, w))
            b.row("first call (trace + compile + run) of the conv", time.perf_counter() - t0)
        except Exception as e:
            print("  first call FAILED", type(e).__name__, e)
    if want("attention"):
        Bt, Hh, Sq, D = (2, 4, 128, 64) if S else (8, 16, 1024, 64)
        q, k, v = (b.randn(Bt, Hh, Sq, D) for _ in range(3))

        def attn(q, k, v):
            s = jnp.einsum("bhqd,bhkd->bhqk", q, k, precision=HI) / np.sqrt(D)
            return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v, precision=HI)
        b.timed(f"attention b{Bt} h{Hh} s{Sq} d{D}", attn, (q, k, v),
                flops=4 * Bt * Hh * Sq * Sq * D)
        if b.module == "wjax":       # the same program as one kernel (Target.attention)
            from wjax._src.backend import runtime
            with runtime.get().options(attention=64):
                b.timed(f"attention b{Bt} h{Hh} s{Sq} d{D}, one kernel", lambda *a: attn(*a),
                        (q, k, v), flops=4 * Bt * Hh * Sq * Sq * D)
        # flax's and haiku's layout: (batch, seq, heads, dim) in and out
        qs, ks, vs = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
        jax.block_until_ready((qs, ks, vs))

        def attn_bshd(q, k, v):
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=HI) / np.sqrt(D)
            return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v, precision=HI)
        b.timed(f"attention b{Bt} s{Sq} h{Hh} d{D}, (b, s, h, d) layout", attn_bshd,
                (qs, ks, vs), flops=4 * Bt * Hh * Sq * Sq * D)

    if want("cold"):
        t = cold_first_call(b.module, S)
        if t is not None:
            b.row("first call of the conv forward in a fresh process", t)

    # -- latency --------------------------------------------------------------------------
    if want("call"):
        x5 = b.put(np.arange(5, dtype=np.float32))
        f = jax.jit(lambda x: x + 1)
        jax.block_until_ready(f(x5))
        b.row("jit call of x+1 on 5 elements + block_until_ready",
              median_time(lambda: jax.block_until_ready(f(x5)), reps=200))
        if b.module == "wjax":      # waiting asleep on the fence at once (Target.spin_wait_us)
            from wjax._src.backend import runtime
            with runtime.get().options(spin_wait_us=0):
                jax.block_until_ready(f(x5))
                b.row("the same call, the wait asleep at once",
                      median_time(lambda: jax.block_until_ready(f(x5)), reps=200))
        outs = []
        t = median_time(lambda: outs.append(f(x5)), reps=200)
        jax.block_until_ready(outs)
        b.row("the same call, not waited", t)
        if b.module == "wjax":      # the floor: the same kernel through wgpu-py alone
            from bench_overhead import bare_dispatch
            from wjax._src.backend import runtime
            rt = runtime.get()
            record, _ = bare_dispatch(rt, x5)

            def bare():
                record()
                rt._wait()          # the target's wait: spinning first on GPUs
            b.row("bare wgpu-py dispatch of x+1 + submit + wait", median_time(bare, reps=200))
            with rt.options(spin_wait_us=0):
                b.row("bare wgpu-py dispatch of x+1 + submit + wait asleep at once",
                      median_time(bare, reps=200))


_COLD = """
import sys, time
sys.path[:0] = {paths!r}
import numpy as np
import {module} as jax
from {module} import lax
N, C, HW, O = {sizes}
rs = np.random.RandomState(0)
x = jax.device_put(rs.randn(N, C, HW, HW).astype(np.float32))
w = jax.device_put((rs.randn(O, C, 3, 3) / np.sqrt(9 * C)).astype(np.float32))
jax.block_until_ready((x, w))          # the device is up before the clock starts
t0 = time.perf_counter()
jax.block_until_ready(jax.jit(lambda x, w: lax.conv_general_dilated(
    x, w, (1, 1), "SAME", precision=lax.Precision.HIGHEST))(x, w))
print("SECONDS", time.perf_counter() - t0)
"""


def cold_first_call(module, small):
    """Seconds of the first call (trace, compile, run) of the conv forward in a fresh process
    with empty caches (wjax: no autotune choices, no persistent compilation cache; the
    driver's own shader cache is whatever the machine has)."""
    import subprocess
    import tempfile
    sizes = (4, 16, 28, 16) if small else (32, 64, 56, 64)
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, WJAX_AUTOTUNE_CACHE=os.path.join(d, "autotune.json"),
                   XDG_CACHE_HOME=d)
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
        code = _COLD.format(paths=sys.path[:2], module=module, sizes=sizes)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=600)
    got = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("SECONDS")]
    if not got:
        print("  cold first call FAILED", (r.stderr or r.stdout).strip().splitlines()[-1:])
        return None
    return float(got[0])


def warm_up(b: Bench, seconds=1.0):
    """A second of matmuls first: a GPU clocks up under load, and the first workload of a
    cold process otherwise measures the clock ramp (seen on an H100: selu at half speed)."""
    jax, jnp = b.jax, b.jnp
    m = 256 if b.small else 2048
    A = b.randn(m, m)
    f = jax.jit(lambda A: jnp.tanh(A @ A))
    t_end = time.perf_counter() + (0.1 if b.small else seconds)
    while time.perf_counter() < t_end:
        jax.block_until_ready(f(A))


def describe(module):
    if module == "jax":
        import jax
        d = jax.devices()[0]
        return jax, f"JAX {jax.__version__} on {d.platform}: {getattr(d, 'device_kind', d)}"
    import wjax
    from wjax._src.backend import runtime
    rt = runtime.get()
    return wjax, f"wjax on {rt.target().name} (profile {rt.target().profile})"


def compare(paths):
    runs = [json.load(open(p)) for p in paths]
    names = []
    for r in runs:
        for row in r["rows"]:
            if row["name"] not in names:
                names.append(row["name"])
    print("\n" + " | ".join(["workload"] + [r["who"] for r in runs]
                            + ([f"{runs[0]['short']} / {runs[1]['short']}"] if len(runs) == 2
                               else [])))
    for nm in names:
        cells, secs = [], []
        for r in runs:
            row = next((x for x in r["rows"] if x["name"] == nm), None)
            s = None if row is None else row["seconds"]
            secs.append(s)
            cells.append("-" if s is None else
                         f"{s * 1e3:.3f} ms" + (f" ({row['rate']})" if row["rate"] else ""))
        if len(runs) == 2:
            a, c = secs
            # speed of the first relative to the second: above 1 = the first is faster
            cells.append(f"{c / a:.2f}" if a and c else "-")
        print(" | ".join([nm] + cells))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", default="wjax", choices=("wjax", "jax"))
    ap.add_argument("--small", action="store_true", default=None)
    ap.add_argument("--full", dest="small", action="store_false")
    ap.add_argument("--only", nargs="*", help="workload keys: elementwise sum colnorm softmax "
                    "cumsum sort matmul mlp rnn conv cold attention call")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--profile", help="wjax: append each workload's profiler summary here")
    ap.add_argument("--phases", action="store_true",
                    help="wjax: also split each workload's waited call into record / submit / "
                         "wait (medians, us)")
    ap.add_argument("--compare", nargs="+", help="print the table of these --json files")
    a = ap.parse_args()
    if a.compare:
        compare(a.compare)
        return
    jax, who = describe(a.module)
    small = a.small
    if small is None:
        if a.module == "jax":
            small = jax.devices()[0].platform == "cpu"
        else:
            from wjax._src.backend import runtime
            small = runtime.get().target().profile in ("lavapipe", "llvmpipe-gl", "generic-cpu")
    print(f"# bench_gpu: {who}; {'small' if small else 'full'} sizes; "
          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC; {platform.node()}")
    b = Bench(jax, small, a.profile if a.module == "wjax" else None,
              gaps=a.phases and a.module == "wjax")
    warm_up(b)
    workloads(b, a.only)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(who=who, short=a.module, small=small, rows=b.rows), f, indent=1)


if __name__ == "__main__":
    main()
