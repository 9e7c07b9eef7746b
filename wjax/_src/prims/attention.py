"""Attention as one kernel: ``softmax(f(Q K^T)) V`` without the (queries x keys) scores in
memory.

``backend/passes.attention_groups`` (where ``Target.attention`` allows: GPUs) collapses a
product of queries and keys, the elementwise math on its scores (a scale, a mask: ``f``, the
first ``n_math`` equations after the product), a softmax over the keys and the product of the
probabilities with the values into one ``attention`` equation.  Its ``jaxpr`` parameter holds
those equations, so its reference, derivative and batched forms are theirs (as a row
group's).

The kernel gives each query row one thread: it holds the row of ``Q`` and its output row in
registers (``vec4``s) and walks the keys in blocks that the workgroup stages in workgroup
memory (``BK`` rows of ``K`` and of ``V``).  For each key it computes the score, ``x = f(s)``
(read through the fused producers of any other operand, e.g. a mask), and folds it into an
*online softmax*: a reference ``m`` (the running maximum, allowed to trail it by ``LAG``), the
sum ``l`` of ``exp(x - m)``, and the output ``o`` = the sum of ``exp(x - m) v``, both
rescaled by ``exp(m_old - m)`` when ``m`` moves up (a score above ``m + LAG``).
At the end ``o / l`` is the row of ``softmax(x) V``.  JAX's values at the edges follow: a row
whose scores are all ``-inf`` (fully masked) gives ``0 / 0 = NaN``, as ``exp(-inf - -inf)``
does in JAX; a NaN or ``+inf`` score makes the row NaN.  Rounding differs from the three-pass
form only by the order of the sums and the one division per output element instead of one
per probability.
"""
from __future__ import annotations

import numpy as np

from ..backend import wgsl as W
from ..backend.lower import Fuser
from ..backend.wgsl import Index
from ..core.ir import Jaxpr, Var
from ..core.primitive import Primitive
from .dot import _canonical, _dims, _held
from .rows import _abstract, _AllInputs, _batch, _Body, _jvp, _reference

BQ = 64            # query rows (threads) per workgroup
MAX_BK = 64        # keys a workgroup stages at a time (fewer where workgroup memory is short)
_NEG_INF = "bitcast<f32>(0xff800000u)"
LAG = 8.0          # how far the online softmax's reference may trail the running maximum


def block_keys(target, D: int, E: int) -> int:
    """Keys staged per block: the most (a power of two, 8 to 64) whose rows of K and V fit
    the workgroup memory."""
    per_key = 16 * (-(-D // 4) + -(-E // 4))
    bk = MAX_BK
    while bk > 8 and bk * per_key > target.workgroup_memory:
        bk //= 2
    return bk


def _parts(jaxpr: Jaxpr, n_math: int):
    """(scores product, scores math, values product) of an attention body."""
    eqns = jaxpr.eqns
    return eqns[0], eqns[1:1 + n_math], eqns[-1]


def _free(aval, *used):
    return tuple(d for d in range(aval.ndim) if all(d not in u for u in used))


def _size(shape, dims) -> int:
    return int(np.prod([shape[d] for d in dims], dtype=np.int64))


def _kernel(ctx, *avals, jaxpr, n_math):
    A, chain, B = _parts(jaxpr, n_math)
    q, k, v = (a.aval for a in ctx.eqn.invars[:3])
    lc, rc, lb, rb = _dims(A.params["dimension_numbers"])
    _, vc, _, vb = _dims(B.params["dimension_numbers"])
    qf, kf, vf = _free(q, lc, lb), _free(k, rc, rb), _free(v, vc, vb)
    S = tuple(A.outvars[0].aval.shape)
    nb = len(lb)
    Bsh, Qsh, Ksh = S[:nb], S[nb:nb + len(qf)], S[nb + len(qf):]
    Bn, Sq, T = _size(S, range(nb)), _size(q.shape, qf), _size(k.shape, kf)
    D, E = _size(q.shape, lc), _size(v.shape, vf)
    D4, E4 = -(-D // 4), -(-E // 4)
    BK = block_keys(ctx.target, D, E)
    places = [_place(ctx, 0, q, lb, qf, lc, True),     # Q as [B, Sq, D]
              _place(ctx, 1, k, rb, kf, rc, True),     # K as [B, T, D]
              _place(ctx, 2, v, vb, vc, vf, False)]    # V as [B, T, E]

    kb = ctx.new_kb()
    kb.ops.extend(jaxpr.eqns)
    emit = kb.emit

    def rows_of(place, n, name):
        """A function (row expr, vec4 chunk c) -> the vec4 of columns 4c..4c+3 of row ``row``
        of batch ``wj_b`` (zeros past n), bound as vec4s where n and the strides allow."""
        key, bstrides, rstride = place
        terms = [f"{c} * {st}u" for c, st in zip(bdims, bstrides) if st] or ["0u"]
        emit(f"let wj_{name}b = {' + '.join(terms)};")
        base = f"wj_{name}b + ({{}}) * {rstride}u"
        if n % 4 == 0 and rstride % 4 == 0 and all(st % 4 == 0 for st in bstrides):
            kb.vec = 4
            b = kb.bind(key, np.float32, "read")
            kb.vec = 1
            return lambda row, c: f"{b}[({base.format(row)}) / 4u + {c}]"
        b = kb.bind(key, np.float32, "read")

        def rd(row, c):
            lanes = []
            for lane in range(4):
                col = f"({c}) * 4u + {lane}u"
                lanes.append(f"select(0.0, {b}[{base.format(row)} + min({col}, {n - 1}u)], "
                             f"{col} < {n}u)")
            return f"vec4<f32>({', '.join(lanes)})"
        return rd
    QB = -(-Sq // BQ)
    groups = Bn * QB
    grid = W.grid_for(groups, kb.max_groups)
    kb.decls.append(f"var<workgroup> wj_ks: array<vec4<f32>, {BK * D4}>;")
    kb.decls.append(f"var<workgroup> wj_vs: array<vec4<f32>, {BK * E4}>;")
    kb.use_helper("wj_exp")
    kb.use_helper("wj_div")
    emit(f"let g = wid.x + wid.y * {grid[0]}u;")
    emit(f"if (g >= {groups}u) {{ return; }}")          # the workgroup's uniform exit
    emit(f"let wj_b = g / {QB}u;")
    emit(f"let wj_iq = (g % {QB}u) * {BQ}u + lid;")
    emit(f"let wj_act = wj_iq < {Sq}u;")
    emit(f"let wj_i = min(wj_iq, {Sq - 1}u);")
    bdims = Index(kb, Bsh, flat="wj_b").dims() if Bsh else []
    rq, rk, rv = [rows_of(pl, n, nm) for pl, n, nm in zip(places, (D, D, E), "qkv")]
    emit(f"let wj_qrow = wj_b * {Sq}u + wj_i;")
    for c in range(D4):
        emit(f"let wj_q{c} = {rq('wj_i', f'{c}u')};")
    emit(f"var wj_m = {_NEG_INF};")
    emit("var wj_l = 0.0;")
    for c in range(E4):
        emit(f"var wj_o{c} = vec4<f32>(0.0);")
    qdims = Index(kb, Qsh, flat="wj_i").dims()
    emit(f"for (var wj_j0 = 0u; wj_j0 < {T}u; wj_j0 = wj_j0 + {BK}u) {{")
    emit("workgroupBarrier();")      # the last block's reads are done
    for name, rd, n4 in (("wj_ks", rk, D4), ("wj_vs", rv, E4)):
        emit(f"for (var wj_u = lid; wj_u < {BK * n4}u; wj_u = wj_u + {BQ}u) {{")
        emit(f"  let wj_r = wj_j0 + wj_u / {n4}u;")
        emit(f"  {name}[wj_u] = select(vec4<f32>(0.0), "
             f"{rd(f'min(wj_r, {T - 1}u)', f'wj_u % {n4}u')}, wj_r < {T}u);")
        emit("}")
    emit("workgroupBarrier();")
    emit(f"let wj_nk = min({BK}u, {T}u - wj_j0);")
    emit("for (var wj_jj = 0u; wj_jj < wj_nk; wj_jj = wj_jj + 1u) {")
    # the score's products summed as a balanced tree: a left-to-right sum is one chain of
    # D4 dependent multiply-adds per key, which a driver may not reorder (the H200 ran this
    # kernel at 5 TFLOP/s: latency, not arithmetic)
    emit(f"let wj_sv = {W.tree_sum(f'wj_q{c} * wj_ks[wj_jj * {D4}u + {c}u]' for c in range(D4))};")
    emit("let wj_s = (wj_sv.x + wj_sv.y) + (wj_sv.z + wj_sv.w);")
    emit("let wj_j = wj_j0 + wj_jj;")
    x = _scores_math(ctx, kb, A, chain, S, bdims + qdims + Index(kb, Ksh, flat="wj_j").dims())
    emit(f"let wj_x = {x};")
    # the online softmax: rescale what was summed when the maximum grows by more than
    # LAG (the reference may trail the true maximum: softmax does not depend on it, and
    # exp(x - m) <= e^LAG stays far from overflow), so rising scores rescale rarely
    emit(f"if (wj_x > wj_m + {LAG:.1f}) {{")
    emit("  let wj_c = wj_exp(wj_m - wj_x);")
    emit("  wj_l = wj_l * wj_c;")
    for c in range(E4):
        emit(f"  wj_o{c} = wj_o{c} * wj_c;")
    emit("  wj_m = wj_x;")
    emit("}")
    emit(f"let wj_p = select(wj_exp(wj_x - wj_m), 0.0, wj_x == {_NEG_INF});")
    emit("wj_l = wj_l + wj_p;")
    for c in range(E4):
        emit(f"wj_o{c} = wj_o{c} + wj_p * wj_vs[wj_jj * {E4}u + {c}u];")
    emit("}")
    emit("}")
    # the output itself is not stored where only the epilogue reads it (the transpose back to
    # flax's (batch, query, head, dim) layout: stored at its own position)
    out = None if ctx.output_dead else kb.bind(ctx.out_key(0), np.float32, "read_write")
    emit("if (wj_act) {")
    emit(f"let wj_ob = wj_qrow * {E}u;")
    for e in range(E):
        emit("{")
        emit(f"let o = wj_ob + {e}u;")
        emit(f"let val = wj_div(wj_o{e // 4}.{'xyzw'[e % 4]}, wj_l);")
        if out is not None:
            emit(f"{out}[o] = val;")
        for line in ctx.epilogue_code(kb, "val", "o"):
            emit(line)
        emit("}")
    emit("}")
    body = "  " + "\n  ".join(kb.lines)
    params = "@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32"
    src = f"{kb.header()}\n@compute @workgroup_size({BQ})\nfn main({params}) {{\n{body}\n}}\n"
    ctx.dispatch(kb, src, grid)


def _place(ctx, i, aval, batch, rows, cols, rows_first):
    """(buffer key, stride of each batch axis, row stride) of operand ``i`` read as
    [batch..., row, col] with contiguous columns: the buffer holding it in its own order
    (its own, or a reshaped value's: flax's ``(x @ w).reshape(b, s, h, d)``) where it has
    one row axis and one column axis, the last (the (b, s, h, d) layout of flax and haiku as
    well as (b, h, s, d)), else a copy laid out by ``_canonical``."""
    a = ctx.eqn.invars[i]
    held = _held(ctx.lowering, a) if isinstance(a, Var) else None
    if (held is not None and held[1] == tuple(range(aval.ndim)) and len(rows) == 1
            and len(cols) == 1 and cols[0] == aval.ndim - 1):
        st = W.strides_of(aval.shape)
        return held[0], [st[d] for d in batch], st[rows[0]]
    key = _canonical(ctx, i, aval, batch, rows if rows_first else cols,
                     cols if rows_first else rows, rows_first)
    R, C = _size(aval.shape, rows), _size(aval.shape, cols)
    bshape = [aval.shape[d] for d in batch]
    return key, [st * R * C for st in W.strides_of(bshape)], C


def _scores_math(ctx, kb, A, chain, S, dims) -> str:
    """WGSL of ``f(s)`` at the score (dims) whose value is ``wj_s``: the chain's equations
    inlined, its other operands (the attention equation's operands 3...) read through their
    fused producers."""
    if not chain:
        return "wj_s"
    outer = Fuser(kb, ctx.lowering, None)
    subst = {A.outvars[0].id: (lambda idx: "wj_s")}
    for j, a in enumerate(ctx.eqn.invars[3:], start=3):
        subst[a.id] = (lambda idx, j=j: ctx.reader(kb, j, outer)(idx))
    inner = Jaxpr([], [], [chain[-1].outvars[0]], chain)
    f = Fuser(kb, _Body(inner, ctx.lowering), None, subst=subst)
    return f.read(chain[-1].outvars[0], Index(kb, S, dims=dims))


attention_p = Primitive("attention", multiple_results=True)     # one result, as a row group
# every operand may come through fused producers: a mask or scale is read at each score's
# position; queries, keys and values are laid out by ``_canonical`` -- their own buffers where
# they are materialized as [batch, rows, dim] already, else one copy kernel each that also
# computes their fused producers (a ``q / sqrt(d)``)
attention_p.fuse_inputs = _AllInputs()
attention_p.epilogue = True
attention_p.epilogue_layouts = True   # one value at a time: a transposed consumer fuses too


def _without(rule):
    """A row group's rule (rows.py: the body's equations evaluated, differentiated or
    batched in place) for an attention equation (whose ``n_math`` it does not need)."""
    def wrapped(*args, jaxpr, n_math):
        return rule(*args, jaxpr=jaxpr)
    return wrapped


attention_p.abstract_eval, attention_p.reference = _without(_abstract), _without(_reference)
attention_p.kernel, attention_p.jvp = _kernel, _without(_jvp)
attention_p.batch = _without(_batch)
