"""Dense linear algebra on the device: ``lu``, ``triangular_solve``, ``cholesky``.

Each has two kernel forms, chosen per shape:

* **one kernel** (small matrices): ``lu`` and ``cholesky`` run one workgroup per matrix
  (right-looking elimination in the output buffer, storage barriers between steps);
  ``triangular_solve`` gives one thread to each right-hand side.  One dispatch, but its busiest
  invocation runs O(n^3 / 64) (resp. O(n^2)) loop iterations;
* **stepped** (larger ones): a few dispatches per column, each spread over the whole grid --
  ``lu``: a pivot kernel (one workgroup per matrix: parallel arg-max, row swap, multipliers)
  and a trailing-update kernel; ``cholesky``: a diagonal/column kernel and a trailing update;
  ``triangular_solve``: one elimination kernel per unknown (every later row of every
  right-hand side in parallel) and a final division by the diagonal.  The same few pipelines
  are recorded again for every column: the column index lives in a 2-word counter buffer that
  each kernel reads and the next one's counter word is written by (ping-pong, so no dispatch
  reads a word it writes).  No invocation loops more than O(n^2 / grid) times per dispatch.

The one-kernel form is taken when its busiest invocation stays within ``Target.decomp_iters``
loop iterations (and half the driver's loop limit: lavapipe silently ends an invocation after
65535 iterations, which made 256x256 factorizations wrong before the stepped form).  Leading
dimensions are batch dimensions, as in JAX.
"""
from __future__ import annotations

import numpy as np

from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import convert_expr, kind
from ..transforms import ad as _ad
from ..core import dtypes, ops

_WG = 64


def _check_float(name, x):
    if kind(x.dtype) != "f":
        raise TypeError(f"{name} requires a floating-point operand, got {np.dtype(x.dtype).name}")


def _reader_fn(ctx, kb, i, aval, fname):
    """``fn fname(g: u32, t: u32) -> f32``: element t (row-major) of matrix g of operand i."""
    saved, kb.lines = kb.lines, []
    m = aval.shape[-2] * aval.shape[-1]
    idx = Index(kb, aval.shape, flat=kb.let(f"g * {m}u + t", "u32"))
    v = ctx.reader(kb, i, ctx.fuser(kb))(idx)
    body = kb.lines + [f"return {convert_expr(v, aval.dtype, np.float32)};"]
    kb.lines = saved
    return f"fn {fname}(g: u32, t: u32) -> f32 {{\n  " + "\n  ".join(body) + "\n}\n"


def _store(v, dtype):
    if np.dtype(dtype) == dtypes.bfloat16:   # every stored value a bf16 (as on the host)
        return W.wrap_narrow(v, dtype)
    if np.dtype(dtype) == np.float16:        # rounded by the bits (a driver may pick either)
        return f"wj_f16r({v})"
    return v if W.value_type(dtype) == "f32" else f"{W.value_type(dtype)}({v})"


# Every float division and square root of these kernels is correctly rounded (``wj_div``,
# ``wj_sqrt``): the spec lets a driver's ``/`` be 2.5 ulp off and ``sqrt`` about 5.5 (NVIDIA's
# are), and the LU multipliers, the Cholesky column and the substitution's quotients feed
# answers JAX gives exactly -- ``expm(0)`` (a solve with the identity), ``cholesky(I)``,
# ``solve(diag(d), b)`` -- or accumulate through every later column (the pivots'
# errors compound in the trailing updates).  A division is a few dozen integer ops, one per
# element a column touches, against the O(n) multiply-adds of the updates beside it.
def _div(kb, a: str, b: str) -> str:
    """``a / b`` (f32 expressions) correctly rounded."""
    kb.use_helper("wj_div")
    return f"wj_div({a}, {b})"


def _sqrt(kb, a: str) -> str:
    kb.use_helper("wj_sqrt")
    return f"wj_sqrt({a})"


def _bf16r(v, dtype):
    """A value stored in place, in the buffer's own type: rounded to bf16 for bfloat16."""
    return W.wrap_narrow(v, dtype) if np.dtype(dtype) == dtypes.bfloat16 else v


def _load(v, dtype):
    return v if W.value_type(dtype) == "f32" else f"f32({v})"


def _batch(shape):
    return int(np.prod(shape[:-2], dtype=np.int64))


def _one_kernel(ctx, iters: int) -> bool:
    """Whether a one-kernel form whose busiest invocation runs ``iters`` loop iterations may
    be used on this target (else the stepped form)."""
    cap = ctx.target.decomp_iters
    if ctx.target.loop_limit:
        cap = min(cap, ctx.target.loop_limit // 2)
    return iters <= cap


def _with_fns(src: str, *fns: str) -> str:
    """``src`` (an elementwise kernel) with helper functions placed before its entry point."""
    head, rest = src.split("@compute", 1)
    return head + "".join(fns) + "@compute" + rest


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


_U32 = np.dtype(np.uint32)
_BW = 32                   # columns per thread of a stepped trailing update


def _counter(ctx):
    """The 2-word step counter of a stepped form (``st[0]``, ``st[1]``)."""
    return ctx.scratch(ShapedArray((2,), _U32))


def _stepped_group(kb, B: int, body: str, fns: str = "", shared: str = "") -> tuple[str, tuple]:
    """A kernel of one ``_WG``-thread workgroup per matrix ``g`` (``base`` = its offset)."""
    grid = W.grid_for(B, kb.max_groups)
    src = f"""{kb.header()}
{shared}
{fns}
@compute @workgroup_size({_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  let g = wid.x + wid.y * {grid[0]}u;
  if (g >= {B}u) {{ return; }}
{body}
}}
"""
    return src, grid


def _trailing_update(ctx, out, st, dt, B: int, M: int, N: int, cholesky: bool):
    """The stepped forms' rank-1 update of column ``k = st[1] - 1`` (and ``st[0] = k + 1``):
    ``X[r, q] -= X[r, k] * X[k, q]`` (LU) or ``X[r, k] * X[q, k]`` for ``q <= r`` (Cholesky),
    rows and columns past ``k``.  One thread per (row, block of ``_BW`` columns): each loads
    its row's multiplier once and walks contiguous columns (no division per element)."""
    CB = _ceil(N, _BW)
    ku = ctx.new_kb()
    o = ku.bind(out, dt, "read_write")
    c = ku.bind(st, _U32, "read_write")
    X = lambda i, j: f"{o}[base + ({i}) * {N}u + ({j})]"  # noqa: E731
    ku.emit(f"let rem = i % {M * CB}u;")
    ku.emit(f"let r = rem / {CB}u;")
    ku.emit(f"let cb = rem % {CB}u;")
    ku.emit(f"let k = {c}[1] - 1u;")
    ku.emit(f"if (i == 0u) {{ {c}[0] = k + 1u; }}")
    other = X("q", "k") if cholesky else X("k", "q")
    end = "r + 1u" if cholesky else f"{N}u"
    upd = f"{_load(X('r', 'q'), dt)} - l * {_load(other, dt)}"
    ku.emit(f"if (r > k) {{\n"
            f"    let base = (i / {M * CB}u) * {M * N}u;\n"
            f"    let l = {_load(X('r', 'k'), dt)};\n"
            f"    let q1 = min(cb * {_BW}u + {_BW}u, {end});\n"
            f"    for (var q = max(k + 1u, cb * {_BW}u); q < q1; q = q + 1u) {{\n"
            f"      {X('r', 'q')} = {_store(upd, dt)};\n    }}\n  }}")
    src, grid = ku.elementwise_kernel(B * M * CB)
    return ku, src, grid


# --------------------------------------------------------------------------- lu

lu_p = Primitive("lu", multiple_results=True)
lu_p.fuse_inputs = (0,)


@lu_p.def_abstract_eval
def _lu_abstract(a):
    _check_float("lu", a)
    if a.ndim < 2:
        raise TypeError(f"Input 0 to lu must have rank at least 2, but got shape={a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (k,), np.int32),
            ShapedArray(batch + (m,), np.int32)]


def _lu_iters(M: int, N: int) -> int:
    """Loop iterations of the busiest invocation (thread 0) of the one-kernel LU."""
    it = _ceil(M * N, _WG) + _ceil(M, _WG)
    for k in range(min(M, N)):
        it += 1 + (M - k - 1) + _ceil(N, _WG) + _ceil(M - k - 1, _WG)
        it += _ceil((M - k - 1) * (N - k - 1), _WG)
    return it


@lu_p.def_kernel
def _lu_kernel(ctx, a):
    M, N = a.shape[-2:]
    if _one_kernel(ctx, _lu_iters(M, N)):
        _lu_one_kernel(ctx, a)
    else:
        _lu_stepped(ctx, a)


def _lu_one_kernel(ctx, a):
    M, N = a.shape[-2:]
    K = min(M, N)
    B = _batch(a.shape)
    dt = a.dtype
    kb = ctx.new_kb()
    rd = _reader_fn(ctx, kb, 0, a, "rdA")
    o = kb.bind(ctx.out_key(0), dt, "read_write")
    pv = kb.bind(ctx.out_key(1), np.int32, "read_write")
    pm = kb.bind(ctx.out_key(2), np.int32, "read_write")
    kb.decls.append("var<workgroup> piv: u32;")
    kb.use_helper("wj_div")        # (the header below is written before the body's calls)
    X = lambda i, j: f"{o}[base + ({i}) * {N}u + ({j})]"  # noqa: E731
    grid = W.grid_for(B, kb.max_groups)
    src = f"""{kb.header()}
{rd}
@compute @workgroup_size({_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  let g = wid.x + wid.y * {grid[0]}u;
  if (g >= {B}u) {{ return; }}
  let base = g * {M * N}u;
  for (var t = lid; t < {M * N}u; t = t + {_WG}u) {{ {o}[base + t] = {_store("rdA(g, t)", dt)}; }}
  for (var t = lid; t < {M}u; t = t + {_WG}u) {{ {pm}[g * {M}u + t] = i32(t); }}
  storageBarrier();
  for (var k = 0u; k < {K}u; k = k + 1u) {{
    if (lid == 0u) {{
      var p = k;
      var best = abs({_load(X("k", "k"), dt)});
      for (var i = k + 1u; i < {M}u; i = i + 1u) {{
        let v = abs({_load(X("i", "k"), dt)});
        if (v > best) {{ best = v; p = i; }}
      }}
      piv = p;
      {pv}[g * {K}u + k] = i32(p);
      let tp = {pm}[g * {M}u + k];
      {pm}[g * {M}u + k] = {pm}[g * {M}u + p];
      {pm}[g * {M}u + p] = tp;
    }}
    let p = workgroupUniformLoad(&piv);
    if (p != k) {{
      for (var j = lid; j < {N}u; j = j + {_WG}u) {{
        let t = {X("k", "j")};
        {X("k", "j")} = {X("p", "j")};
        {X("p", "j")} = t;
      }}
    }}
    storageBarrier();
    let d = {X("k", "k")};
    if (d != {W.zero(dt) if np.dtype(dt) != dtypes.bfloat16 else "0.0"}) {{
      for (var i = k + 1u + lid; i < {M}u; i = i + {_WG}u) {{
        {X("i", "k")} = {_store(_div(kb, _load(X("i", "k"), dt), _load("d", dt)), dt)};
      }}
    }}
    storageBarrier();
    let w = {N}u - k - 1u;
    let h = {M}u - k - 1u;
    for (var t = lid; t < w * h; t = t + {_WG}u) {{
      let i = k + 1u + t / w;
      let j = k + 1u + t % w;
      {X("i", "j")} = {_bf16r(f'{X("i", "j")} - {X("i", "k")} * {X("k", "j")}', dt)};
    }}
    storageBarrier();
  }}
}}
"""
    ctx.dispatch(kb, src, grid)


def _lu_stepped(ctx, a):
    """LU with partial pivoting, two dispatches per column (see the module docstring)."""
    M, N = a.shape[-2:]
    K = min(M, N)
    B = _batch(a.shape)
    dt = a.dtype
    st = _counter(ctx)
    out, piv, perm = ctx.out_key(0), ctx.out_key(1), ctx.out_key(2)

    # copy in, identity permutation, counter = 0
    kb = ctx.new_kb()
    rd = _reader_fn(ctx, kb, 0, a, "rdA")
    o = kb.bind(out, dt, "read_write")
    pm = kb.bind(perm, np.int32, "read_write")
    c = kb.bind(st, _U32, "read_write")
    kb.emit(f"let g = i / {M * N}u;")
    kb.emit(f"let t = i % {M * N}u;")
    kb.emit(f"{o}[i] = {_store('rdA(g, t)', dt)};")
    kb.emit(f"if (t < {M}u) {{ {pm}[g * {M}u + t] = i32(t); }}")
    kb.emit(f"if (i == 0u) {{ {c}[0] = 0u; {c}[1] = 0u; }}")
    src, grid = kb.elementwise_kernel(B * M * N)
    ctx.dispatch(kb, _with_fns(src, rd), grid)

    # column k = st[0]: arg-max pivot, row swap, multipliers; st[1] = k + 1
    kp = ctx.new_kb()
    o = kp.bind(out, dt, "read_write")
    pv = kp.bind(piv, np.int32, "read_write")
    pm = kp.bind(perm, np.int32, "read_write")
    c = kp.bind(st, _U32, "read_write")
    X = lambda i, j: f"{o}[base + ({i}) * {N}u + ({j})]"  # noqa: E731
    body = f"""  let base = g * {M * N}u;
  let k = {c}[0];
  var best = -1.0;
  var bi = k;
  for (var i = k + lid; i < {M}u; i = i + {_WG}u) {{
    let v = abs({_load(X("i", "k"), dt)});
    if (v > best) {{ best = v; bi = i; }}
  }}
  sv[lid] = best;
  si[lid] = bi;
  workgroupBarrier();
  for (var h = {_WG // 2}u; h > 0u; h = h >> 1u) {{
    if (lid < h) {{
      let v = sv[lid + h];
      let j = si[lid + h];
      if (v > sv[lid] || (v == sv[lid] && j < si[lid])) {{ sv[lid] = v; si[lid] = j; }}
    }}
    workgroupBarrier();
  }}
  let p = si[0];
  if (p != k) {{
    for (var j = lid; j < {N}u; j = j + {_WG}u) {{
      let t = {X("k", "j")};
      {X("k", "j")} = {X("p", "j")};
      {X("p", "j")} = t;
    }}
  }}
  storageBarrier();
  if (lid == 0u) {{
    {pv}[g * {K}u + k] = i32(p);
    let tp = {pm}[g * {M}u + k];
    {pm}[g * {M}u + k] = {pm}[g * {M}u + p];
    {pm}[g * {M}u + p] = tp;
    if (g == 0u) {{ {c}[1] = k + 1u; }}
  }}
  let d = {_load(X("k", "k"), dt)};
  if (d != 0.0) {{
    for (var i = k + 1u + lid; i < {M}u; i = i + {_WG}u) {{
      {X("i", "k")} = {_store(_div(kp, _load(X("i", "k"), dt), "d"), dt)};
    }}
  }}"""
    shared = (f"var<workgroup> sv: array<f32, {_WG}>;\n"
              f"var<workgroup> si: array<u32, {_WG}>;")
    piv_src, piv_grid = _stepped_group(kp, B, body, shared=shared)

    ku, up_src, up_grid = _trailing_update(ctx, out, st, dt, B, M, N, cholesky=False)
    for _ in range(K):
        ctx.dispatch(kp, piv_src, piv_grid)
        ctx.dispatch(ku, up_src, up_grid)


def _lu_ref(a):
    a = np.asarray(a)
    M, N = a.shape[-2:]
    K = min(M, N)
    batch = a.shape[:-2]
    lu = a.astype(np.float64).reshape((-1, M, N)).copy()
    piv = np.zeros((lu.shape[0], K), np.int32)
    perm = np.tile(np.arange(M, dtype=np.int32), (lu.shape[0], 1))
    for b in range(lu.shape[0]):
        x = lu[b]
        for k in range(K):
            p = k + int(np.argmax(np.abs(x[k:, k])))
            piv[b, k] = p
            if p != k:
                x[[k, p]] = x[[p, k]]
                perm[b, [k, p]] = perm[b, [p, k]]
            if x[k, k] != 0:
                x[k + 1:, k] /= x[k, k]
            x[k + 1:, k + 1:] -= np.outer(x[k + 1:, k], x[k, k + 1:])
    return [
        lu.reshape(a.shape).astype(a.dtype),
        piv.reshape(batch + (K,)),
        perm.reshape(batch + (M,)),
    ]


lu_p.reference = _lu_ref
_batching.deffront(lu_p)   # vmap: one more leading batch dimension

# --------------------------------------------------------------------------- triangular_solve

triangular_solve_p = Primitive("triangular_solve")
triangular_solve_p.fuse_inputs = (0, 1)


@triangular_solve_p.def_abstract_eval
def _ts_abstract(a, b, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                 unit_diagonal=False):
    _check_float("triangular_solve", a)
    if a.dtype != b.dtype:
        raise TypeError(
            f"triangular_solve requires operands of the same dtype, got {a.dtype} and {b.dtype}"
        )
    if a.ndim < 2 or b.ndim != a.ndim:
        raise TypeError(
            f"triangular_solve requires a and b of equal rank >= 2, got shapes {a.shape} "
            f"and {b.shape}"
        )
    if a.shape[-1] != a.shape[-2]:
        raise TypeError(f"triangular_solve requires a square matrix a, got shape {a.shape}")
    if a.shape[:-2] != b.shape[:-2]:
        raise TypeError(
            f"triangular_solve requires matching batch dimensions, got {a.shape} and {b.shape}"
        )
    m = a.shape[-1]
    common = b.shape[-2] if left_side else b.shape[-1]
    if common != m:
        raise TypeError(
            f"triangular_solve: the {'-2' if left_side else '-1'} dimension of b (shape "
            f"{b.shape}) must equal the size of a (shape {a.shape})"
        )
    return ShapedArray(b.shape, b.dtype)


@triangular_solve_p.def_kernel
def _ts_kernel(ctx, a, b, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
               unit_diagonal=False):
    m = a.shape[-1]
    form = _ts_one_kernel if _one_kernel(ctx, m * (m + 1) // 2 + m) else _ts_stepped
    form(ctx, a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
         unit_diagonal=unit_diagonal)


def _ts_system(a, b, left_side, lower, transpose_a):
    """The effective system ``T x = c`` solved for each right-hand side ``sj`` of matrix
    ``sg``: ``T(i, j)`` reads ``a`` (left: ``T = op(a)``, right: ``T = op(a)^T``), ``pos(r)``
    is unknown ``r``'s offset within b's matrix, and whether ``T`` is lower triangular."""
    m = a.shape[-1]
    Cc = b.shape[-1]
    tr = transpose_a != (not left_side)
    if tr:
        T = lambda i, j: f"rdA(sg, ({j}) * {m}u + ({i}))"  # noqa: E731
    else:
        T = lambda i, j: f"rdA(sg, ({i}) * {m}u + ({j}))"  # noqa: E731
    if left_side:
        pos = lambda r: f"({r}) * {Cc}u + sj"  # noqa: E731
    else:
        pos = lambda r: f"sj * {Cc}u + ({r})"  # noqa: E731
    return T, pos, lower != tr


def _ts_stepped(ctx, a, b, *, left_side, lower, transpose_a, unit_diagonal):
    """Column-oriented substitution, one dispatch per unknown ``r``: every later row ``q`` of
    every right-hand side subtracts ``T[q, r] / T[r, r] * c[r]`` (row ``r`` itself is not
    written, so the dispatch has no races); a last dispatch divides by the diagonal."""
    m = a.shape[-1]
    R, Cc = b.shape[-2:]
    B = _batch(a.shape)
    nsys = Cc if left_side else R
    dt = b.dtype
    out = ctx.out_key(0)
    st = _counter(ctx)
    T, pos, eff_lower = _ts_system(a, b, left_side, lower, transpose_a)

    kb = ctx.new_kb()
    rdb = _reader_fn(ctx, kb, 1, b, "rdB")
    o = kb.bind(out, dt, "read_write")
    c = kb.bind(st, _U32, "read_write")
    kb.emit(f"{o}[i] = {_store(f'rdB(i / {R * Cc}u, i % {R * Cc}u)', dt)};")
    kb.emit(f"if (i == 0u) {{ {c}[0] = 0u; {c}[1] = 0u; }}")
    src, grid = kb.elementwise_kernel(B * R * Cc)
    ctx.dispatch(kb, _with_fns(src, rdb), grid)

    NB = _ceil(nsys, _BW)      # a thread: one row q, a block of _BW right-hand sides

    def thread(kb):
        kb.emit(f"let sg = i / {m * NB}u;")
        kb.emit(f"let q = (i % {m * NB}u) / {NB}u;")
        kb.emit(f"let j0 = (i % {NB}u) * {_BW}u;")
        kb.emit(f"let j1 = min(j0 + {_BW}u, {nsys}u);")

    steps = []
    for slot in (0, 1):                    # reads st[slot], writes st[1 - slot]
        kb = ctx.new_kb()
        rda = _reader_fn(ctx, kb, 0, a, "rdA")
        o = kb.bind(out, dt, "read_write")
        c = kb.bind(st, _U32, "read_write")
        X = lambda r: f"{o}[sg * {R * Cc}u + {pos(r)}]"  # noqa: E731
        thread(kb)
        kb.emit(f"let step = {c}[{slot}];")
        kb.emit(f"if (i == 0u) {{ {c}[{1 - slot}] = step + 1u; }}")
        kb.emit(f"let r = {'step' if eff_lower else f'{m - 1}u - step'};")
        f = T("q", "r") if unit_diagonal else _div(kb, T("q", "r"), T("r", "r"))
        upd = f"{_load(X('q'), dt)} - f * {_load(X('r'), dt)}"
        kb.emit(f"if ({'q > r' if eff_lower else 'q < r'}) {{\n    let f = {f};\n"
                f"    for (var sj = j0; sj < j1; sj = sj + 1u) {{ {X('q')} = {_store(upd, dt)}; }}"
                f"\n  }}")
        src, grid = kb.elementwise_kernel(B * m * NB)
        steps.append((kb, _with_fns(src, rda), grid))
    for r in range(m):
        ctx.dispatch(*steps[r % 2])
    if not unit_diagonal:
        kb = ctx.new_kb()
        rda = _reader_fn(ctx, kb, 0, a, "rdA")
        o = kb.bind(out, dt, "read_write")
        X = lambda r: f"{o}[sg * {R * Cc}u + {pos(r)}]"  # noqa: E731
        thread(kb)
        quot = _div(kb, _load(X("q"), dt), "f")
        kb.emit(f"let f = {T('q', 'q')};")
        kb.emit(f"for (var sj = j0; sj < j1; sj = sj + 1u) {{ {X('q')} = {_store(quot, dt)}; }}")
        src, grid = kb.elementwise_kernel(B * m * NB)
        ctx.dispatch(kb, _with_fns(src, rda), grid)


def _ts_one_kernel(ctx, a, b, *, left_side, lower, transpose_a, unit_diagonal):
    m = a.shape[-1]
    R, Cc = b.shape[-2:]
    B = _batch(a.shape)
    nsys = Cc if left_side else R
    dt = b.dtype
    kb = ctx.new_kb()
    rda = _reader_fn(ctx, kb, 0, a, "rdA")
    rdb = _reader_fn(ctx, kb, 1, b, "rdB")
    o = kb.bind(ctx.out_key(0), dt, "read_write")
    T, pos, eff_lower = _ts_system(a, b, left_side, lower, transpose_a)
    X = lambda r: f"{o}[sg * {R * Cc}u + {pos(r)}]"  # noqa: E731
    div = "" if unit_diagonal else f"v = {_div(kb, 'v', T('r', 'r'))};"
    if eff_lower:
        loop = (
            f"for (var r = 0u; r < {m}u; r = r + 1u) {{\n"
            f"    var v = rdB(sg, {pos('r')});\n"
            f"    for (var q = 0u; q < r; q = q + 1u) {{ v = v - {T('r', 'q')} "
            f"* {_load(X('q'), dt)}; }}\n"
            f"    {div}\n    {X('r')} = {_store('v', dt)};\n  }}"
        )
    else:
        loop = (
            f"for (var rr = 0u; rr < {m}u; rr = rr + 1u) {{\n"
            f"    let r = {m - 1}u - rr;\n"
            f"    var v = rdB(sg, {pos('r')});\n"
            f"    for (var q = r + 1u; q < {m}u; q = q + 1u) {{ v = v - {T('r', 'q')} "
            f"* {_load(X('q'), dt)}; }}\n"
            f"    {div}\n    {X('r')} = {_store('v', dt)};\n  }}"
        )
    kb.emit(f"let sg = i / {nsys}u;")
    kb.emit(f"let sj = i % {nsys}u;")
    kb.emit(loop)
    src, grid = kb.elementwise_kernel(B * nsys, wg=64)
    head, rest = src.split("@compute", 1)
    ctx.dispatch(kb, head + rda + rdb + "@compute" + rest, grid)


def _ts_ref(a, b, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
            unit_diagonal=False):
    a64 = np.asarray(a, np.float64)
    tri = np.tril(a64) if lower else np.triu(a64)
    if unit_diagonal:
        idx = np.arange(a.shape[-1])
        tri[..., idx, idx] = 1
    op = np.swapaxes(tri, -1, -2) if transpose_a else tri
    b64 = np.asarray(b, np.float64)
    if left_side:
        x = np.linalg.solve(op, b64)
    else:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b64, -1, -2)), -1, -2)
    return x.astype(b.dtype)


triangular_solve_p.reference = _ts_ref
_batching.deffront(triangular_solve_p)   # vmap: one more leading batch dimension

# --------------------------------------------------------------------------- cholesky

cholesky_p = Primitive("cholesky")
cholesky_p.fuse_inputs = (0,)


@cholesky_p.def_abstract_eval
def _chol_abstract(a):
    _check_float("cholesky", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to cholesky must have shape [..., n, n], got {a.shape}")
    return ShapedArray(a.shape, a.dtype)


def _chol_iters(n: int) -> int:
    """Loop iterations of the busiest invocation (thread 0) of the one-kernel Cholesky."""
    it = 2 * _ceil(n * n, _WG)
    for k in range(n):
        it += 1 + _ceil(n - k - 1, _WG) + _ceil((n - k - 1) ** 2, _WG)
    return it


@cholesky_p.def_kernel
def _chol_kernel(ctx, a):
    n = a.shape[-1]
    (_chol_one_kernel if _one_kernel(ctx, _chol_iters(n)) else _chol_stepped)(ctx, a)


_NAN = "bitcast<f32>(0x7fc00000u)"


def _chol_stepped(ctx, a):
    """Right-looking Cholesky, two dispatches per column (see the module docstring); a
    matrix whose pivot is not positive gets NaN in its lower triangle, as the one kernel."""
    n = a.shape[-1]
    B = _batch(a.shape)
    dt = a.dtype
    out = ctx.out_key(0)
    st = _counter(ctx)
    bad = ctx.scratch(ShapedArray((B,), _U32))

    kb = ctx.new_kb()
    rd = _reader_fn(ctx, kb, 0, a, "rdA")
    o = kb.bind(out, dt, "read_write")
    c = kb.bind(st, _U32, "read_write")
    bd = kb.bind(bad, _U32, "read_write")
    kb.emit(f"let t = i % {n * n}u;")
    kb.emit(f"{o}[i] = {_store(f'select(0.0, rdA(i / {n * n}u, t), t % {n}u <= t / {n}u)', dt)};")
    kb.emit(f"if (t == 0u) {{ {bd}[i / {n * n}u] = 0u; }}")
    kb.emit(f"if (i == 0u) {{ {c}[0] = 0u; {c}[1] = 0u; }}")
    src, grid = kb.elementwise_kernel(B * n * n)
    ctx.dispatch(kb, _with_fns(src, rd), grid)

    # column k = st[0]: its square root and the column below it; st[1] = k + 1
    kd = ctx.new_kb()
    o = kd.bind(out, dt, "read_write")
    c = kd.bind(st, _U32, "read_write")
    bd = kd.bind(bad, _U32, "read_write")
    X = lambda i, j: f"{o}[base + ({i}) * {n}u + ({j})]"  # noqa: E731
    body = f"""  let base = g * {n * n}u;
  let k = {c}[0];
  let d = {_load(X("k", "k"), dt)};
  storageBarrier();
  let s = {_sqrt(kd, "max(d, 0.0)")};
  if (lid == 0u) {{
    if (!(d > 0.0)) {{ {bd}[g] = 1u; }}
    {X("k", "k")} = {_store("s", dt)};
    if (g == 0u) {{ {c}[1] = k + 1u; }}
  }}
  for (var i = k + 1u + lid; i < {n}u; i = i + {_WG}u) {{
    {X("i", "k")} = {_store(_div(kd, _load(X("i", "k"), dt), "s"), dt)};
  }}"""
    d_src, d_grid = _stepped_group(kd, B, body)

    ku, u_src, u_grid = _trailing_update(ctx, out, st, dt, B, n, n, cholesky=True)
    for _ in range(n):
        ctx.dispatch(kd, d_src, d_grid)
        ctx.dispatch(ku, u_src, u_grid)

    kb = ctx.new_kb()
    o = kb.bind(out, dt, "read_write")
    bd = kb.bind(bad, _U32, "read_write")
    kb.emit(f"let t = i % {n * n}u;")
    kb.emit(f"if ({bd}[i / {n * n}u] != 0u) {{ "
            f"{o}[i] = {_store(f'select(0.0, {_NAN}, t % {n}u <= t / {n}u)', dt)}; }}")
    src, grid = kb.elementwise_kernel(B * n * n)
    ctx.dispatch(kb, src, grid)


def _chol_one_kernel(ctx, a):
    n = a.shape[-1]
    B = _batch(a.shape)
    dt = a.dtype
    kb = ctx.new_kb()
    rd = _reader_fn(ctx, kb, 0, a, "rdA")
    o = kb.bind(ctx.out_key(0), dt, "read_write")
    kb.decls.append("var<workgroup> bad: u32;")
    kb.use_helper("wj_div")        # (the header below is written before the body's calls)
    kb.use_helper("wj_sqrt")
    X = lambda i, j: f"{o}[base + ({i}) * {n}u + ({j})]"  # noqa: E731
    nan = "bitcast<f32>(0x7fc00000u)"
    grid = W.grid_for(B, kb.max_groups)
    src = f"""{kb.header()}
{rd}
@compute @workgroup_size({_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
  let g = wid.x + wid.y * {grid[0]}u;
  if (g >= {B}u) {{ return; }}
  let base = g * {n * n}u;
  if (lid == 0u) {{ bad = 0u; }}
  for (var t = lid; t < {n * n}u; t = t + {_WG}u) {{
    let i = t / {n}u;
    let j = t % {n}u;
    {o}[base + t] = {_store("select(0.0, rdA(g, t), j <= i)", dt)};
  }}
  storageBarrier();
  for (var k = 0u; k < {n}u; k = k + 1u) {{
    if (lid == 0u) {{
      let d = {_load(X("k", "k"), dt)};
      if (!(d > 0.0)) {{ bad = 1u; }}
      {X("k", "k")} = {_store(_sqrt(kb, "max(d, 0.0)"), dt)};
    }}
    storageBarrier();
    let d = {X("k", "k")};
    for (var i = k + 1u + lid; i < {n}u; i = i + {_WG}u) {{
      {X("i", "k")} = {_store(_div(kb, _load(X("i", "k"), dt), _load("d", dt)), dt)};
    }}
    storageBarrier();
    let w = {n}u - k - 1u;
    for (var t = lid; t < w * w; t = t + {_WG}u) {{
      let i = k + 1u + t / w;
      let j = k + 1u + t % w;
      if (j <= i) {{
        {X("i", "j")} = {_bf16r(f'{X("i", "j")} - {X("i", "k")} * {X("j", "k")}', dt)};
      }}
    }}
    storageBarrier();
  }}
  if (workgroupUniformLoad(&bad) != 0u) {{
    for (var t = lid; t < {n * n}u; t = t + {_WG}u) {{
      {o}[base + t] = {_store(f"select(0.0, {nan}, t % {n}u <= t / {n}u)", dt)};
    }}
  }}
}}
"""
    ctx.dispatch(kb, src, grid)


def _chol_ref(a):
    a64 = np.asarray(a, np.float64)
    try:
        return np.linalg.cholesky(a64).astype(a.dtype)
    except np.linalg.LinAlgError:
        out = np.empty(a.shape, a.dtype)
        flat_in, flat_out = a64.reshape((-1,) + a.shape[-2:]), out.reshape((-1,) + a.shape[-2:])
        for i in range(flat_in.shape[0]):
            try:
                flat_out[i] = np.linalg.cholesky(flat_in[i])
            except np.linalg.LinAlgError:
                flat_out[i] = np.where(np.tri(a.shape[-1], dtype=bool), np.nan, 0)
        return out


cholesky_p.reference = _chol_ref
_batching.deffront(cholesky_p)   # vmap: one more leading batch dimension


# --------------------------------------------------------------------------- autodiff (JAX's rules)


def _tril(x, k=0):
    return ops.tril(x, k)


def _triu(x, k=0):
    return ops.triu(x, k)


def _ts(a, b, **kw):
    return triangular_solve_p.bind(a, b, **kw)


def _ts_jvp_a(g_a, ans, a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
              unit_diagonal=False):
    m, n = _ad.aval_of(b).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = _tril(g_a, -k) if lower else _triu(g_a, k)
    g_a = -g_a
    if transpose_a:
        g_a = ops.swapaxes(g_a, -1, -2)
    kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
              unit_diagonal=unit_diagonal)
    if left_side:
        return _ts(a, ops.matmul(g_a, ans), **kw) if m > n else ops.matmul(_ts(a, g_a, **kw), ans)
    return _ts(a, ops.matmul(ans, g_a), **kw) if m < n else ops.matmul(ans, _ts(a, g_a, **kw))


def _ts_transpose(ct, a, b, *, left_side=False, lower=False, transpose_a=False, conjugate_a=False,
                  unit_diagonal=False):
    if _ad.is_undefined_primal(a):
        raise TypeError("triangular_solve is not linear in its matrix operand")
    return [None, _ts(a, ct, left_side=left_side, lower=lower, transpose_a=not transpose_a,
                      conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)]


_ad.defjvp2(triangular_solve_p, _ts_jvp_a, lambda g_b, ans, a, b, **kw: _ts(a, g_b, **kw))
triangular_solve_p.transpose = _ts_transpose


def _chol_jvp(primals, tangents):
    x, = primals
    sigma_dot, = tangents
    L = _tril(cholesky_p.bind(x))
    n = _ad.aval_of(x).shape[-1]
    dt = _ad.aval_of(x).dtype

    def phi(X):
        return _tril(X) / (1.0 + ops.eye(n, dt))

    tmp = _ts(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True, lower=True)
    L_dot = ops.matmul(L, phi(_ts(L, tmp, left_side=True, transpose_a=False, lower=True)))
    return L, L_dot


def _lu_jvp(primals, tangents):
    a, = primals
    a_dot, = tangents
    lu, pivots, perm = lu_p.bind(a)
    shape = _ad.aval_of(a).shape
    m, n = shape[-2:]
    dt = _ad.aval_of(a).dtype
    k = min(m, n)
    nd = len(shape)
    idx = ops.broadcast_in_dim(perm, tuple(shape[:-2]) + (m, n), tuple(range(nd - 1)))
    x = ops.take_along_axis(a_dot, idx, nd - 2)
    zero = np.zeros((), dt)
    lpad = [(0, 0, 0)] * nd
    lpad[-1] = (0, m - k, 0)
    l = ops.pad(_tril(lu[..., :, :k], -1), zero, lpad) + ops.eye(m, dt)
    u_eye = ops.pad(ops.eye(n - k, dt), zero, ((k, 0, 0), (k, 0, 0)))
    upad = [(0, 0, 0)] * nd
    upad[-2] = (0, n - k, 0)
    u = ops.pad(_triu(lu[..., :k, :]), zero, upad) + u_eye
    la = _ts(l, x, left_side=True, transpose_a=False, lower=True, unit_diagonal=True)
    lau = _ts(u, la, left_side=False, transpose_a=False, lower=False)
    lu_dot = ops.matmul(l, _tril(lau, -1)) + ops.matmul(_triu(lau), u)
    return [lu, pivots, perm], [lu_dot, _ad.Zero(_ad.aval_of(pivots)), _ad.Zero(_ad.aval_of(perm))]


cholesky_p.jvp = _chol_jvp
lu_p.jvp = _lu_jvp


# ----------------------------------------------------------------- lu_pivots_to_permutation

lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")


@lu_pivots_to_permutation_p.def_abstract_eval
def _l2p_abstract(pivots, permutation_size):
    if np.dtype(pivots.dtype) != np.int32 or pivots.ndim < 1:
        raise TypeError(f"lu_pivots_to_permutation requires int32 pivots of rank >= 1, got "
                        f"{np.dtype(pivots.dtype).name}{list(pivots.shape)}")
    if permutation_size < pivots.shape[-1]:
        raise ValueError(f"Output permutation size {permutation_size} has to exceed the trailing "
                         f"dimension of the pivots. Got pivots size {pivots.shape[-1]}")
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.int32)


@lu_pivots_to_permutation_p.def_kernel
def _l2p_kernel(ctx, pivots, permutation_size):
    """One thread per matrix: the identity, then LAPACK's row swaps in order."""
    P, K = permutation_size, pivots.shape[-1]
    B = int(np.prod(pivots.shape[:-1], dtype=np.int64))
    kb = ctx.new_kb()
    pv = kb.bind(ctx.in_key(0), np.int32, "read")
    o = kb.bind(ctx.out_key(0), np.int32, "read_write")
    kb.emit(f"for (var t = 0u; t < {P}u; t = t + 1u) {{ {o}[i * {P}u + t] = i32(t); }}")
    kb.emit(f"for (var k = 0u; k < {K}u; k = k + 1u) {{\n"
            f"    let p = u32({pv}[i * {K}u + k]);\n"
            f"    if (p < {P}u && p != k) {{\n"
            f"      let t = {o}[i * {P}u + k];\n"
            f"      {o}[i * {P}u + k] = {o}[i * {P}u + p];\n"
            f"      {o}[i * {P}u + p] = t;\n    }}\n  }}")
    src, grid = kb.elementwise_kernel(B, wg=64)
    ctx.dispatch(kb, src, grid)


def _l2p_ref(pivots, permutation_size):
    piv = np.asarray(pivots)
    piv = piv.reshape(int(np.prod(piv.shape[:-1], dtype=np.int64)), piv.shape[-1])
    out = np.tile(np.arange(permutation_size, dtype=np.int32), (piv.shape[0], 1))
    for b in range(piv.shape[0]):
        for k, p in enumerate(piv[b]):
            if 0 <= p < permutation_size:
                out[b, [k, p]] = out[b, [p, k]]
    return out.reshape(pivots.shape[:-1] + (permutation_size,))


lu_pivots_to_permutation_p.reference = _l2p_ref
_batching.deffront(lu_pivots_to_permutation_p)
_ad.defjvp_zero(lu_pivots_to_permutation_p)
