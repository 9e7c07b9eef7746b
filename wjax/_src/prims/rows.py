"""Row-resident groups: softmax, logsumexp, a layer norm -- reductions over a short last axis
and the elementwise work reading their results back -- as one kernel.

``backend/passes.row_groups`` (where ``Target.row_resident`` allows: GPUs) collapses such a
group into one ``row_group`` equation whose ``jaxpr`` parameter holds the group's equations:
reductions (``reduce_sum/max/min`` over the trailing axes ``Rd`` of operands of shape
``S = Bd + Rd``) and fusable equations on values of shape ``S`` (*elements*) or ``Bd + (1,)*j``
(*rows*), each reading the group's values at its own element or row.  Its kernel gives each
row a team of ``T`` threads; thread ``t`` covers the row's units ``t, t + T, ...`` (``vec4``s
of 4 consecutive elements where the row length allows, else elements), ``K`` *slots* in all,
unrolled, so a warp reads neighbouring addresses and every value of a slot is a ``let`` in
registers for the whole kernel: the operands are loaded once, and what one stage computes
(softmax's ``exp(x - max)``) is what the next one reads.  The reductions run in *stages* (a
reduction's stage is one more than the latest stage it reads): each thread folds its slots
(one accumulator per ``vec4`` lane, compensated TwoSum sums as everywhere), then the team folds
the states -- subgroup shuffles and one barrier where the target has subgroups and the team is
the whole workgroup, else a workgroup-memory tree -- and every thread of the team reads the
same result.  Element outputs are stored by each thread at its slots, row outputs by the
team's first thread.  Straight-line code: every barrier and shuffle is in the workgroup's
uniform control flow (rows past the end are clamped and their stores skipped, never returned
from), so the kernel follows the WGSL specification rather than a driver's leniency.
"""
from __future__ import annotations

import numpy as np

from ..backend import wgsl as W
from ..backend.lower import Fuser
from ..backend.wgsl import Index
from ..core.ir import ClosedJaxpr, Lit, Var
from ..core.primitive import Primitive
from ..core.tracing import eval_jaxpr
from ..transforms import ad as _ad
from ..transforms import batching
from ..transforms.jvp import jvp_jaxpr
from ..transforms.vmap import vmap_closed_jaxpr
from .reduce import (_from_words, _main, _monoid, _to_words, reduce_max_p, reduce_min_p,
                     reduce_sum_p)


class _AllInputs(tuple):
    """fuse_inputs that contains every operand position."""

    def __contains__(self, i):
        return True


class _Body:
    """What a Fuser asks of a lowering, for the group's own equations (every one inlined)."""

    def __init__(self, jaxpr, outer):
        self.producer = {v.id: e for e in jaxpr.eqns for v in e.outvars}
        self.split, self.materialized, self.level = set(), set(), {}
        self.key_of = outer.key_of


class _RowKernel:
    KT = 4          # units a thread aims to hold: the team is the row's units / KT (<= WG)
    WG = 256

    def __init__(self, ctx, jaxpr):
        self.ctx, self.body, self.target = ctx, jaxpr, ctx.target
        reds = [e for e in jaxpr.eqns if e.prim.fuse is None]
        x = reds[0].invars[0].aval
        self.S = tuple(x.shape)
        nb = len(self.S) - len(reds[0].params["axes"])
        self.Bd, self.Rd = self.S[:nb], self.S[nb:]
        self.M = int(np.prod(self.Bd, dtype=np.int64))
        self.N = int(np.prod(self.Rd, dtype=np.int64))
        level: dict = {}
        stage_of: dict = {}
        for e in jaxpr.eqns:
            lv = max([level.get(a.id, 0) for a in e.invars if isinstance(a, Var)], default=0)
            if e.prim.fuse is None:
                lv += 1
                stage_of[id(e)] = lv
            for v in e.outvars:
                level[v.id] = lv
        self.stages = [[e for e in reds if stage_of[id(e)] == s]
                       for s in sorted(set(stage_of.values()))]
        self.rname = {e.outvars[0].id: f"wj_r{k}" for k, e in enumerate(reds)}
        self.reds = reds

    # ------------------------------------------------------------------ the kernel
    def emit(self):
        if self.N % 4 == 0:
            kb, src, grid = self._build(4)
            if kb.vec_ok and self.target.compiles(src):
                return self.ctx.dispatch(kb, src, grid)
        kb, src, grid = self._build(1)
        self.ctx.dispatch(kb, src, grid)

    def _fusers(self, kb):
        """(reader of the group's values, with its operands read through the outer lowering's
        fused producers and its reductions' results from registers)."""
        ctx = self.ctx
        outer = Fuser(kb, ctx.lowering, None)
        subst = {v.id: (lambda idx, j=j: ctx.reader(kb, j, outer)(idx))
                 for j, v in enumerate(self.body.invars)}
        for vid, name in self.rname.items():
            dt = self._dtype[vid]
            subst[vid] = (lambda idx, name=name, dt=dt:
                          name if kb.vec == 1 else f"vec{kb.vec}<{W.value_type(dt)}>({name})")
        return Fuser(kb, _Body(self.body, ctx.lowering), None, subst=subst)

    def _build(self, vec: int):
        ctx, M, N, S, Bd, Rd = self.ctx, self.M, self.N, self.S, self.Bd, self.Rd
        self._dtype = {e.outvars[0].id: e.outvars[0].aval.dtype for e in self.reds}
        kb = ctx.new_kb()
        kb.vec = vec
        U = N // vec
        T = 1
        while T < self.WG and T * self.KT < U:
            T *= 2
        K = -(-U // T)
        WG = self.WG
        sgsz = self.target.subgroup_size
        if sgsz and 64 <= T < WG and T % (2 * sgsz) == 0:
            # a workgroup per row (rows of 256 to 1023 units): its team folds by subgroup
            # shuffles and one barrier, where several teams a workgroup fold through a
            # workgroup-memory tree (a barrier a level)
            WG = T
        R = WG // T
        groups = -(-M // R)
        grid = W.grid_for(groups, kb.max_groups)
        # subgroups only where every one is whole: the workgroup a multiple of any subgroup
        # size (128), or of twice the profile's
        sg = bool(T == WG and sgsz and (WG % 128 == 0 or WG % (2 * sgsz) == 0))
        emit = kb.emit
        emit(f"let g = wid.x + wid.y * {grid[0]}u;")
        emit(f"if (g >= {groups}u) {{ return; }}")       # the workgroup's uniform exit
        emit(f"let wj_tl = lid % {T}u;")
        emit(f"let wj_w = g * {R}u + lid / {T}u;")
        emit(f"let wj_act = wj_w < {M}u;")
        emit(f"let wj_row = min(wj_w, {M - 1}u);")
        od = Index(kb, Bd, flat="wj_row").dims() if Bd else []
        slots = []
        for s in range(K):
            guard = (s + 1) * T > U
            emit(f"let wj_u{s} = wj_tl + {s * T}u;")
            emit(f"let wj_c{s} = {f'min(wj_u{s}, {U - 1}u)' if guard else f'wj_u{s}'};")
            emit(f"let wj_i{s} = wj_row * {U}u + wj_c{s};")
            kb.flat_names.add(f"wj_i{s}")
            lane = None
            if vec > 1:
                kb.varying |= {f"wj_i{s}", f"wj_vb{s}", "wj_vr"}
                if len(Rd) == 1:
                    emit(f"let wj_cb{s} = wj_c{s} * 4u;")
                    lane = (f"wj_vb{s}", f"wj_cb{s}")
                    dims = od + [f"wj_vb{s}"]
                else:
                    dims = od + ["wj_vr"] * len(Rd)
                idx = Index(kb, S, flat=f"wj_i{s}", dims=dims, lanes=True)
            else:
                idx = Index(kb, S, flat=f"wj_i{s}",
                            dims=od + Index(kb, Rd, flat=f"wj_c{s}").dims())
            slots.append((idx, f"wj_u{s} < {U}u" if guard else None, lane))

        def at(slot):
            kb.lane_dim, kb.lane_base = slot[2] if slot[2] else (None, None)
            return slot[0]
        f = self._fusers(kb)
        for st, reds in enumerate(self.stages):
            self._stage(kb, f, st, reds, slots, at, vec, T, WG, sg)
        outs = list(zip(self.body.outvars, [ctx.out_key(j) for j in
                                            range(len(self.body.outvars))]))
        for v, key in outs:
            if tuple(v.aval.shape) != S:
                continue
            for slot in slots:
                val = f.read(v, at(slot))
                name = kb.bind(key, v.aval.dtype, "read_write")
                cond = "wj_act" + (f" && {slot[1]}" if slot[1] else "")
                emit(f"if ({cond}) {{ {name}[{slot[0].flat()}] = "
                     f"{kb.store(val, v.aval.dtype)}; }}")
        vec_ok, kb.vec = kb.vec_ok, 1     # row outputs: scalars, by the team's first thread
        kb.lane_dim = kb.lane_base = None
        f1 = self._fusers(kb)
        for v, key in outs:
            if tuple(v.aval.shape) == S:
                continue
            idx = Index(kb, v.aval.shape, flat="wj_row",
                        dims=od + ["0u"] * (len(v.aval.shape) - len(Bd)))
            val = f1.read(v, idx)
            name = kb.bind(key, v.aval.dtype, "read_write")
            emit(f"if (wj_act && wj_tl == 0u) {{ {name}[wj_row] = "
                 f"{kb.store(val, v.aval.dtype)}; }}")
        kb.vec_ok = vec_ok
        kb.sg = sg and T > 1      # ``_main`` passes the subgroup builtins
        kb.ops.extend(self.reds)
        src = _main(kb, WG, "  " + "\n  ".join(kb.lines))
        return kb, src, grid

    def _stage(self, kb, f, st, reds, slots, at, vec, T, WG, sg):
        """The reductions of one stage: each thread folds its slots, the team folds the
        threads' states, and every thread of the team gets the results (``wj_rK``)."""
        monos = [_monoid(e.prim.monoid, e.invars[0].aval.dtype) for e in reds]
        st_t = f"RS{st}"
        for m in monos:
            for h in m.helpers:
                kb.use_helper(h)
        kb.decls.append(f"struct {st_t} {{ " + ", ".join(f"m{k}: {m.state}"
                                                         for k, m in enumerate(monos)) + " }")
        for k, m in enumerate(monos):
            kb.decls.append(f"fn wj_comb{st}_{k}(a: {m.state}, b: {m.state}) -> {m.state} "
                            f"{{\n{m.combine}\n}}")

        def comb(a, b):
            return f"{st_t}(" + ", ".join(f"wj_comb{st}_{k}({a}.m{k}, {b}.m{k})"
                                          for k in range(len(monos))) + ")"
        ident = f"{st_t}(" + ", ".join(m.identity for m in monos) + ")"
        n_acc = 4 if vec > 1 else min(len(slots), 4)
        accs = [f"wj_a{st}_{q}" for q in range(n_acc)]
        for a in accs:
            kb.emit(f"var {a} = {ident};")
        for s, slot in enumerate(slots):
            vals = [f.read(e.invars[0], at(slot)) if not isinstance(e.invars[0], Lit)
                    else kb.lit(e.invars[0].val, e.invars[0].aval.dtype) for e in reds]
            if vec > 1:
                steps = [f"{accs[q]} = " + comb(accs[q], f"{st_t}(" + ", ".join(
                    m.lift(f"{v}.{c}", "0u") for m, v in zip(monos, vals)) + ")") + ";"
                    for q, c in enumerate("xyzw")]
            else:
                a = accs[s % n_acc]
                steps = [f"{a} = " + comb(a, f"{st_t}(" + ", ".join(
                    m.lift(v, "0u") for m, v in zip(monos, vals)) + ")") + ";"]
            if slot[1]:
                kb.emit(f"if ({slot[1]}) {{ " + " ".join(steps) + " }")
            else:
                for line in steps:
                    kb.emit(line)
        fold = accs
        while len(fold) > 1:
            fold = [comb(fold[k], fold[k + 1]) if k + 1 < len(fold) else fold[k]
                    for k in range(0, len(fold), 2)]
        kb.emit(f"let wj_f{st} = {fold[0]};")
        res = f"wj_f{st}"
        if T > 1 and sg:
            kb.decls.append(f"var<workgroup> wj_sv{st}: array<{st_t}, {WG}>;")
            words = []
            for k, m in enumerate(monos):
                ws = [f"subgroupShuffleXor({w}, wj_s)" for w in _to_words(m, f"wj_b{st}.m{k}")]
                words.append(_from_words(m, ws))
            shfl = f"{st_t}(" + ", ".join(words) + ")"
            kb.emit(f"var wj_b{st} = wj_f{st};")
            kb.emit(f"for (var wj_s = 1u; wj_s < wj_sgs; wj_s = wj_s * 2u) {{ "
                    f"wj_b{st} = {comb(f'wj_b{st}', shfl)}; }}")
            kb.emit(f"if (wj_sid == 0u) {{ wj_sv{st}[wj_sgi] = wj_b{st}; }}")
            kb.emit("workgroupBarrier();")
            kb.emit(f"var wj_g{st} = {ident};")
            kb.emit(f"for (var wj_k = 0u; wj_k < wj_nsg; wj_k = wj_k + 1u) {{ "
                    f"wj_g{st} = {comb(f'wj_g{st}', f'wj_sv{st}[wj_k]')}; }}")
            res = f"wj_g{st}"
        elif T > 1:
            sv = f"wj_sv{st}"
            kb.decls.append(f"var<workgroup> {sv}: array<{st_t}, {WG}>;")
            kb.emit(f"{sv}[lid] = wj_f{st};")
            kb.emit("workgroupBarrier();")
            s = T // 2
            while s >= 1:
                kb.emit(f"if (wj_tl < {s}u) {{ {sv}[lid] = "
                        f"{comb(f'{sv}[lid]', f'{sv}[lid + {s}u]')}; }}")
                kb.emit("workgroupBarrier();")
                s //= 2
            kb.emit(f"let wj_h{st} = {sv}[lid - wj_tl];")
            res = f"wj_h{st}"
        for k, (e, m) in enumerate(zip(reds, monos)):
            dt = e.outvars[0].aval.dtype
            val = W.wrap_narrow(m.result(f"{res}.m{k}"), dt)
            kb.emit(f"let {self.rname[e.outvars[0].id]}: {W.value_type(dt)} = {val};")


# --------------------------------------------------------------------------- the primitive

row_group_p = Primitive("row_group", multiple_results=True)
row_group_p.fuse_inputs = _AllInputs()


def _abstract(*avals, jaxpr):
    return [v.aval for v in jaxpr.outvars]


def _reference(*args, jaxpr):
    env = {v.id: np.asarray(a) for v, a in zip(jaxpr.invars, args)}

    def rd(a):
        return a.val if isinstance(a, Lit) else env[a.id]
    for e in jaxpr.eqns:
        out = e.prim.reference(*[rd(a) for a in e.invars], **e.params)
        outs = out if e.prim.multiple_results else [out]
        for v, o in zip(e.outvars, outs):
            env[v.id] = np.asarray(o).astype(v.aval.dtype)
    return [rd(v) for v in jaxpr.outvars]


def _kernel(ctx, *avals, jaxpr):
    _RowKernel(ctx, jaxpr).emit()


# A group is its equations: it only exists inside the lowering, but were one transformed, its
# derivative and batched form are those of its body, evaluated in place.
def _jvp(primals, tangents, *, jaxpr):
    nz = tuple(not isinstance(t, _ad.Zero) for t in tangents)
    jc, out_nz = jvp_jaxpr(ClosedJaxpr(jaxpr, []), nz)
    outs = eval_jaxpr(jc.jaxpr, jc.consts, *primals,
                      *[t for t in tangents if not isinstance(t, _ad.Zero)])
    n = len(jaxpr.outvars)
    it = iter(outs[n:])
    return list(outs[:n]), [next(it) if z else _ad.Zero(v.aval)
                            for z, v in zip(out_nz, jaxpr.outvars)]


def _batch(args, dims, *, jaxpr):
    bj, out_dims = vmap_closed_jaxpr(ClosedJaxpr(jaxpr, []), list(dims),
                                     batching.axis_size(args, dims))
    return list(eval_jaxpr(bj.jaxpr, bj.consts, *args)), list(out_dims)


row_group_p.abstract_eval, row_group_p.reference = _abstract, _reference
row_group_p.kernel, row_group_p.jvp, row_group_p.batch = _kernel, _jvp, _batch
for _p in (reduce_sum_p, reduce_max_p, reduce_min_p):
    _p.row_group = row_group_p
