"""Small dense linear algebra on the device: ``lu``, ``triangular_solve``, ``cholesky``.

These are meant for the small matrices of ``jnp.linalg.inv/solve/det/cholesky``:
``lu`` and ``cholesky`` run one workgroup per matrix (right-looking
elimination in the output buffer, storage barriers between steps);
``triangular_solve`` gives one thread to each right-hand side.  Leading
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
    return v if W.value_type(dtype) == "f32" else f"{W.value_type(dtype)}({v})"


def _bf16r(v, dtype):
    """A value stored in place, in the buffer's own type: rounded to bf16 for bfloat16."""
    return W.wrap_narrow(v, dtype) if np.dtype(dtype) == dtypes.bfloat16 else v


def _load(v, dtype):
    return v if W.value_type(dtype) == "f32" else f"f32({v})"


def _batch(shape):
    return int(np.prod(shape[:-2], dtype=np.int64))


# --------------------------------------------------------------------------- lu

lu_p = Primitive("lu", multiple_results=True)
lu_p.fuse_inputs = (0,)


@lu_p.def_abstract_eval
def _lu_abstract(a):
    _check_float("lu", a)
    if a.ndim < 2:
        raise ValueError(f"Argument to LU decomposition must have ndims >= 2, got shape {a.shape}")
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    return [ShapedArray(a.shape, a.dtype), ShapedArray(batch + (k,), np.int32),
            ShapedArray(batch + (m,), np.int32)]


@lu_p.def_kernel
def _lu_kernel(ctx, a):
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
        {X("i", "k")} = {_bf16r(f'{X("i", "k")} / d', dt)};
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
    R, Cc = b.shape[-2:]
    B = _batch(a.shape)
    nsys = Cc if left_side else R
    dt = b.dtype
    kb = ctx.new_kb()
    rda = _reader_fn(ctx, kb, 0, a, "rdA")
    rdb = _reader_fn(ctx, kb, 1, b, "rdB")
    o = kb.bind(ctx.out_key(0), dt, "read_write")
    # effective system T x = c with T[i][j]; left: T = op(a), right: T = op(a)^T
    tr = transpose_a != (not left_side)
    T = (
        (lambda i, j: f"rdA(sg, ({j}) * {m}u + ({i}))")
        if tr
        else (lambda i, j: f"rdA(sg, ({i}) * {m}u + ({j}))")
    )
    eff_lower = lower != tr
    # position of unknown r of system s within b's matrix
    pos = (lambda r: f"({r}) * {Cc}u + sj") if left_side else (lambda r: f"sj * {Cc}u + ({r})")
    X = lambda r: f"{o}[sg * {R * Cc}u + {pos(r)}]"  # noqa: E731
    div = "" if unit_diagonal else f"v = v / {T('r', 'r')};"
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


@cholesky_p.def_kernel
def _chol_kernel(ctx, a):
    n = a.shape[-1]
    B = _batch(a.shape)
    dt = a.dtype
    kb = ctx.new_kb()
    rd = _reader_fn(ctx, kb, 0, a, "rdA")
    o = kb.bind(ctx.out_key(0), dt, "read_write")
    kb.decls.append("var<workgroup> bad: u32;")
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
      {X("k", "k")} = {_store("sqrt(max(d, 0.0))", dt)};
    }}
    storageBarrier();
    let d = {X("k", "k")};
    for (var i = k + 1u + lid; i < {n}u; i = i + {_WG}u) {{
      {X("i", "k")} = {_bf16r(f'{X("i", "k")} / d', dt)};
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
