"""Hand-written WGSL reduction kernels: the comparison points of ``bench_reduce.py``.

Each kernel is what one would write by hand for that workload on this adapter, with the
shapes baked in as constants (as wjax does):

* an array viewed as ``[A, R, B]`` is reduced over ``R``: one thread per output (per 4
  adjacent outputs, with ``vec4`` loads, when ``B`` is a multiple of 4; per row, with
  ``vec4`` loads along ``R``, when ``B == 1``), each folding its part of ``R`` sequentially;
  ``R`` is split into ``P`` parts when there are too few outputs to keep the adapter busy (or
  a part would pass lavapipe's 65535-iteration limit), and a tiny second pass folds the
  parts;
* statistics take one pass for the sum and the sum of squares together (plain float sums);
* softmax and logsumexp take the *online* form: one pass keeps the running maximum and the
  sum of ``exp(x - max)`` rescaled as the maximum grows (Milakov & Gimelshein 2018), and
  softmax writes ``exp(x - m) / s`` in a second loop over the same row.

``Hand(rt)`` compiles and dispatches them through the runtime (``rt.dispatch``), so they run
on the same device, buffers and submission path as wjax's own kernels.
"""
from __future__ import annotations

WG = 64

# C = A B for NN x NN row-major float32 (NNu replaced by the size), one thread per element of
# C: the comparison point of bench_matmul.py and bench_numpy.py
MATMUL_TILE16 = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
var<workgroup> ta: array<array<f32, 16>, 16>;
var<workgroup> tb: array<array<f32, 16>, 16>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  // the textbook 16x16 workgroup-memory tiled matmul of two NN x NN matrices
  let row = wid.y * 16u + lid.y;
  let col = wid.x * 16u + lid.x;
  var acc = 0.0;
  for (var t = 0u; t < NNu; t = t + 16u) {
    ta[lid.y][lid.x] = a[row * NNu + t + lid.x];
    tb[lid.y][lid.x] = b[(t + lid.y) * NNu + col];
    workgroupBarrier();
    for (var k = 0u; k < 16u; k = k + 1u) { acc = acc + ta[lid.y][k] * tb[k][lid.x]; }
    workgroupBarrier();
  }
  c[row * NNu + col] = acc;
}
"""



def _split(A, R, B, vec):
    """(column groups per row, parts P, units per part): a unit is a vec4 (or element) along
    R when B == 1, else one row of R."""
    nb = (B // 4 if vec else B) if B > 1 else 1
    units = R // 4 if (vec and B == 1) else R
    outs = A * nb
    P = 1
    while outs * P < 1024 and units // (P * 2) >= 64:
        P *= 2
    while -(-units // P) > 16384:
        P *= 2
    return nb, P, -(-units // P), units


def _grid(threads):
    g = -(-threads // WG)
    if g <= 65535:
        return (g, 1, 1)
    y = -(-g // 65535)
    return (-(-g // y), y, 1)


_HEAD = """@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let t = (wid.x + wid.y * nwg.x) * 64u + lid;
"""


class Kernel:
    """One or more dispatches over named buffers."""

    def __init__(self, steps, scratch):
        self.steps, self.scratch = steps, scratch       # [(wgsl, [buffer names], grid)]


def _index(A, R, B, vec):
    """WGSL decomposing the thread id ``t`` into (a, bv, p) and giving the first load index
    ``i``, the stride ``st`` between units and the unit count ``n`` of this thread's part."""
    nb, P, per, units = _split(A, R, B, vec)
    if B == 1:
        head = (f"  let p = t % {P}u; let a = t / {P}u; let bv = 0u;\n"
                f"  let base = a * {units}u; let st = 1u;\n")
    else:
        head = (f"  let p = t % {P}u; let ab = t / {P}u; let bv = ab % {nb}u; let a = ab / {nb}u;\n"
                f"  let base = a * {R * nb}u + bv; let st = {nb}u;\n")
    head += (f"  let lo = min(p * {per}u, {units}u); let n = min(lo + {per}u, {units}u) - lo;\n"
             f"  var i = base + lo * st;\n")
    return nb, P, head


def sum_all(N):
    """sum of N floats (N % 4 == 0): vec4 chunks, then one workgroup folds the partials."""
    T = 1024
    per = -(-N // 4 // T)
    p1 = f"""@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> part: array<f32>;
{_HEAD}  let lo = t * {per}u; let hi = min(lo + {per}u, {N // 4}u);
  var s = vec4<f32>(0.0);
  for (var i = lo; i < hi; i++) {{ s += x[i]; }}
  part[t] = (s.x + s.y) + (s.z + s.w);
}}"""
    p2 = f"""@group(0) @binding(0) var<storage, read> part: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
var<workgroup> sh: array<f32, 64>;
{_HEAD}  var s = 0.0;
  for (var i = lid; i < {T}u; i += 64u) {{ s += part[i]; }}
  sh[lid] = s; workgroupBarrier();
  for (var k = 32u; k > 0u; k /= 2u) {{
    if (lid < k) {{ sh[lid] += sh[lid + k]; }}
    workgroupBarrier();
  }}
  if (lid == 0u) {{ y[0] = sh[0]; }}
}}"""
    return Kernel([(p1, ["x", "part"], (T // WG, 1, 1)), (p2, ["part", "y"], (1, 1, 1))],
                  {"part": T * 4})


def moments(A, R, B, finish):
    """Per output of ``[A, R, B]`` reduced over R: the sum and the sum of squares in one
    pass (vec4 loads), then ``finish`` (WGSL using ``s``, ``q``, ``n``, writing ``y[o]`` -- or,
    for ``norm``, ``y[o]`` and ``y[M + o]``) per output in a tiny second pass."""
    vec = (B == 1 and R % 4 == 0) or (B > 1 and B % 4 == 0)
    nb, P, head = _index(A, R, B, vec)
    ty = "vec4<f32>" if vec else "f32"
    w = 4 if vec else 1
    M = A * B
    threads = A * nb * P
    p1 = f"""@group(0) @binding(0) var<storage, read> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> part: array<{ty}>;
{_HEAD}  if (t >= {threads}u) {{ return; }}
{head}  var s = {ty}(0.0); var q = {ty}(0.0);
  for (var k = 0u; k < n; k++) {{ let v = x[i]; s += v; q += v * v; i += st; }}
  part[2u * t] = s; part[2u * t + 1u] = q;
}}"""
    # second pass: one thread per output folds the P parts (and the vec4 lanes of a row)
    if B == 1:
        fold = "  let a = t;\n"
        at = f"a * {P}u + p"
        lane = ("(u.x + u.y) + (u.z + u.w)", "(v.x + v.y) + (v.z + v.w)") if vec else ("u", "v")
    else:
        fold = f"  let a = t / {B}u; let b = t % {B}u; let bv = b / {w}u;\n"
        at = f"(a * {nb}u + bv) * {P}u + p"
        lane = ("u[b % 4u]", "v[b % 4u]") if vec else ("u", "v")
    p2 = f"""@group(0) @binding(0) var<storage, read> part: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
{_HEAD}  if (t >= {M}u) {{ return; }}
  let o = t;
{fold}  var s = 0.0; var q = 0.0; let n = f32({R});
  for (var p = 0u; p < {P}u; p++) {{ let j = {at}; let u = part[2u * j]; let v = part[2u * j + 1u];
    s += {lane[0]}; q += {lane[1]}; }}
{finish}
}}"""
    return Kernel([(p1, ["x", "part"], _grid(threads)), (p2, ["part", "y"], _grid(M))],
                  {"part": threads * 2 * 4 * w})


def std(A, R, B):
    return moments(A, R, B, "  let m = s / n; y[o] = sqrt(max(q / n - m * m, 0.0));")


def norm(R, B):
    """``(X - mean) / std`` over axis 0 of ``X[R, B]``: statistics, then one thread per
    (column, chunk of rows) normalizes with its column's mean and 1/std in registers."""
    st = moments(1, R, B, f"  let m = s / n; y[o] = m; "
                          f"y[{B}u + o] = 1.0 / sqrt(max(q / n - m * m, 0.0));")
    chunk = 256
    nch = -(-R // chunk)
    p3 = f"""@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> stat: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
{_HEAD}  if (t >= {B * nch}u) {{ return; }}
  let b = t % {B}u; let c = t / {B}u;
  let m = stat[b]; let inv = stat[{B}u + b];
  let lo = c * {chunk}u; let hi = min(lo + {chunk}u, {R}u);
  for (var r = lo; r < hi; r++) {{ let i = r * {B}u + b; y[i] = (x[i] - m) * inv; }}
}}"""
    steps = [(st.steps[0][0], ["x", "part"], st.steps[0][2]),
             (st.steps[1][0], ["part", "stat"], st.steps[1][2]),
             (p3, ["x", "stat", "y"], _grid(B * nch))]
    return Kernel(steps, dict(st.scratch, stat=2 * B * 4))


def norm_exact(R, B):
    """``(X - mean) / std(X - mean)`` as the program states it: the mean first (sums and a
    tiny pass), then the centered sum of squares reading the mean once per thread (and a
    tiny pass), then the normalization -- each pass as ``moments``/``norm`` above."""
    mean = moments(1, R, B, "  y[o] = s / n;")
    vec = B % 4 == 0
    nb, P, head = _index(1, R, B, vec)
    ty = "vec4<f32>" if vec else "f32"
    threads = nb * P
    cen = f"""@group(0) @binding(0) var<storage, read> x: array<{ty}>;
@group(0) @binding(1) var<storage, read> c: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> part: array<{ty}>;
{_HEAD}  if (t >= {threads}u) {{ return; }}
{head}  let m = c[bv]; var q = {ty}(0.0);
  for (var k = 0u; k < n; k++) {{ let v = x[i] - m; q += v * v; i += st; }}
  part[2u * t] = {ty}(0.0); part[2u * t + 1u] = q;
}}"""
    fin = moments(1, R, B, f"  y[o] = c[o]; y[{B}u + o] = 1.0 / sqrt(q / n);")
    p2 = fin.steps[1][0].replace(
        "@group(0) @binding(1) var<storage, read_write> y: array<f32>;",
        "@group(0) @binding(1) var<storage, read> c: array<f32>;\n"
        "@group(0) @binding(2) var<storage, read_write> y: array<f32>;")
    nrm = norm(R, B).steps[2]
    steps = [(mean.steps[0][0], ["x", "part"], mean.steps[0][2]),
             (mean.steps[1][0], ["part", "mean"], mean.steps[1][2]),
             (cen, ["x", "mean", "part"], _grid(threads)),
             (p2, ["part", "mean", "stat"], fin.steps[1][2]),
             nrm]
    return Kernel(steps, dict(mean.scratch, mean=max(B * 4, 16), stat=2 * B * 4))


def online(A, R, B, kind):
    """softmax / logsumexp over R of ``[A, R, B]`` (R not split: one thread per output, per
    4 adjacent outputs with vec4 loads when B % 4 == 0, per row with vec4 loads when B == 1).
    ``kind``: "softmax" writes exp(x - m) / s over the row in a second loop, "logsumexp"
    writes m + log(s)."""
    vec = (B == 1 and R % 4 == 0) or (B > 1 and B % 4 == 0)
    w = 4 if vec else 1
    ty = "vec4<f32>" if vec else "f32"
    nb = B // w if B > 1 else 1
    threads = A * nb
    if B == 1:
        idx = f"  let base = t * {R // w}u; let st = 1u; let n = {R // w}u;\n"
    else:
        idx = (f"  let bv = t % {nb}u; let a = t / {nb}u; let base = a * {R * nb}u + bv;\n"
               f"  let st = {nb}u; let n = {R}u;\n")
    merge = ""
    if vec and B == 1:     # the 4 lanes are parts of one row: merge them
        merge = ("let mm = max(max(m.x, m.y), max(m.z, m.w));\n"
                 "  let ss = dot(s, exp(m - vec4<f32>(mm)));\n")
        if kind == "softmax":
            merge += "  m = vec4<f32>(mm); s = vec4<f32>(ss);\n"
    if kind == "logsumexp":
        out_ty = ty if B > 1 else "f32"
        tail = "y[t] = mm + log(ss);" if (vec and B == 1) else "y[t] = m + log(s);"
    else:
        out_ty = ty
        tail = ("i = base;\n  for (var k = 0u; k < n; k++) { y[i] = exp(x[i] - m) / s; "
                "i += st; }")
    src = f"""@group(0) @binding(0) var<storage, read> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> y: array<{out_ty}>;
{_HEAD}  if (t >= {threads}u) {{ return; }}
{idx}  var m = {ty}(-3.0e38); var s = {ty}(0.0);
  var i = base;
  for (var k = 0u; k < n; k++) {{
    let v = x[i]; let mn = max(m, v); s = s * exp(m - mn) + exp(v - mn); m = mn; i += st; }}
  {merge}  {tail}
}}"""
    return Kernel([(src, ["x", "y"], _grid(threads))], {})


def _accurate_exp() -> str:
    """wjax's own exp (``backend/wgsl_math.py``: within 2 ulp, where lavapipe's builtin is
    not) as WGSL helpers, with ``exp4`` for vec4s."""
    from wjax._src.backend import wgsl as W
    from wjax._src.backend import wgsl_math  # noqa: F401  (registers the helpers)
    kb = W.KernelBuilder()
    kb.use_helper("wj_exp")
    return (kb.header() + "\nfn exp4(v: vec4<f32>) -> vec4<f32> { return vec4<f32>("
            "wj_exp(v.x), wj_exp(v.y), wj_exp(v.z), wj_exp(v.w)); }\n")


def exact(A, R, B, kind):
    """softmax / logsumexp as JAX defines them (the max first, then the sum of exp(x - max))
    by one thread per output in one dispatch: a loop for the max, one for the sum, and for
    softmax one writing exp(x - max) / sum -- with wjax's accurate exp (the builtin is
    coarse on lavapipe), so that it computes what wjax computes."""
    vec = (B == 1 and R % 4 == 0) or (B > 1 and B % 4 == 0)
    w = 4 if vec else 1
    ty = "vec4<f32>" if vec else "f32"
    nb = B // w if B > 1 else 1
    threads = A * nb
    if B == 1:
        idx = f"  let base = t * {R // w}u; let st = 1u; let n = {R // w}u;\n"
    else:
        idx = (f"  let bv = t % {nb}u; let a = t / {nb}u; let base = a * {R * nb}u + bv;\n"
               f"  let st = {nb}u; let n = {R}u;\n")
    row = vec and B == 1
    fold_m = "  let mm = max(max(m.x, m.y), max(m.z, m.w)); let mv = vec4<f32>(mm);\n" if row \
        else "  let mv = m;\n"
    fold_s = "  let ss = (s.x + s.y) + (s.z + s.w); let sv = vec4<f32>(ss);\n" if row \
        else "  let sv = s;\n"
    if kind == "logsumexp":
        out_ty = ty if B > 1 else "f32"
        tail = "y[t] = mm + log(ss);" if row else "y[t] = mv + log(sv);"
    else:
        out_ty = ty
        tail = ("i = base;\n  for (var k = 0u; k < n; k++) { y[i] = EXP(x[i] - mv) / sv; "
                "i += st; }")
    ex = "exp4" if vec else "wj_exp"
    src = f"""@group(0) @binding(0) var<storage, read> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> y: array<{out_ty}>;
{_accurate_exp()}{_HEAD}  if (t >= {threads}u) {{ return; }}
{idx}  var m = {ty}(-3.0e38); var s = {ty}(0.0);
  var i = base;
  for (var k = 0u; k < n; k++) {{ m = max(m, x[i]); i += st; }}
{fold_m}  i = base;
  for (var k = 0u; k < n; k++) {{ s += {ex}(x[i] - mv); i += st; }}
{fold_s}  {tail.replace("EXP", ex)}
}}"""
    return Kernel([(src, ["x", "y"], _grid(threads))], {})


class Hand:
    """Compiles and runs hand kernels on the wjax runtime."""

    def __init__(self, rt):
        self.rt = rt

    def prepare(self, kernel: Kernel, buffers: dict):
        bufs = dict(buffers)
        for name, n in kernel.scratch.items():
            bufs[name] = self.rt.alloc(n)
        for src, _, _ in kernel.steps:
            self.rt.pipeline(src)

        def run():
            for src, names, grid in kernel.steps:
                self.rt.dispatch(src, [bufs[n] for n in names], grid)
            self.rt.synchronize()
        run.buffers = bufs
        return run
