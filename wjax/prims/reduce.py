"""Reductions: reduce_{sum,prod,max,min,and,or} and argmax/argmin.

One kernel template (shaders/reduce.wgsl) serves them all: a reduction is a
state type, an identity, a ``combine`` and a way to lift an element into a
state.  Large reductions with few outputs run in two passes (partial states
into a scratch buffer, then one more fold), as DESIGN.md measured fastest.
Elementwise producers of the operand are fused into the loop that reads it.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..ir import ShapedArray
from ..primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import kind

_TEMPLATE = None


def _template():
    global _TEMPLATE
    if _TEMPLATE is None:
        _TEMPLATE = W.load_shader("reduce.wgsl")
    return _TEMPLATE


def _check_axes(name, x, axes):
    axes = tuple(axes)
    for a in axes:
        if not 0 <= a < x.ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for array of dimension {x.ndim}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in 'axes': {axes}")
    return axes


class Monoid:
    """state type, identity, combine body, and how to lift an element (value, index)."""

    def __init__(self, state, identity, combine, lift, result, helpers=(), kahan=False):
        self.state, self.identity, self.combine = state, identity, combine
        self.lift, self.result, self.helpers, self.kahan = lift, result, helpers, kahan


def _monoid(op: str, dtype, index_dtype=None) -> Monoid:
    k = kind(dtype)
    vt = W.value_type(dtype)
    if op == "sum":
        if k == "f":
            # compensated (TwoSum) accumulation: hi + lo carried through the whole tree, so
            # e.g. sum(ones(10**6) * 0.1) rounds to 100000.0 as XLA's does
            return Monoid("vec2<f32>", "vec2<f32>(0.0, 0.0)",
                          "  let s = wj_opq(a.x + b.x);\n  let bp = wj_opq(s - a.x);\n"
                          "  let err = (a.x - wj_opq(s - bp)) + (b.x - bp);\n"
                          "  return vec2<f32>(s, err + a.y + b.y);",
                          lambda v, r: f"vec2<f32>(f32({v}), 0.0)",
                          lambda s: f"{vt}({s}.x + {s}.y)", helpers=("wj_opq",), kahan=True)
        return Monoid(vt, W.zero(dtype), "  return a + b;", lambda v, r: v, lambda s: s)
    if op == "prod":
        return Monoid(vt, W.literal(1, dtype), "  return a * b;", lambda v, r: v, lambda s: s)
    if op in ("max", "min"):
        if k == "f":
            ident = W.literal(-np.inf if op == "max" else np.inf, dtype)
            return Monoid(vt, ident, f"  return wj_{op}_f(a, b);", lambda v, r: v, lambda s: s,
                          helpers=("wj_isnan", f"wj_{op}_f"))
        if k == "b":
            return Monoid(vt, "false" if op == "max" else "true",
                          "  return a || b;" if op == "max" else "  return a && b;",
                          lambda v, r: v, lambda s: s)
        info = np.iinfo(dtype)
        ident = W.literal(info.min if op == "max" else info.max, dtype)
        return Monoid(vt, ident, f"  return {op}(a, b);", lambda v, r: v, lambda s: s)
    if op in ("and", "or"):
        if k == "b":
            return Monoid("bool", "true" if op == "and" else "false",
                          "  return a && b;" if op == "and" else "  return a || b;",
                          lambda v, r: v, lambda s: s)
        ident = W.literal(-1 if op == "and" else 0, dtype) if k == "i" else (
            W.literal(np.iinfo(dtype).max, dtype) if op == "and" else W.zero(dtype))
        return Monoid(vt, ident, f"  return a {'&' if op == 'and' else '|'} b;", lambda v, r: v, lambda s: s)
    if op in ("argmax", "argmin"):
        # state: (value as f32/i32/u32, index); NaN wins (first NaN); ties -> lower index
        better = ">" if op == "argmax" else "<"
        if k == "f":
            cmp = (f"  let an = a.v != a.v; let bn = b.v != b.v;\n"
                   f"  if (an && bn) {{ if (a.i < b.i) {{ return a; }} return b; }}\n"
                   f"  if (an) {{ return a; }}\n  if (bn) {{ return b; }}\n")
        else:
            cmp = ""
        state = f"ArgState_{vt}"
        body = (cmp + f"  if (a.v {better} b.v) {{ return a; }}\n  if (b.v {better} a.v) {{ return b; }}\n"
                      f"  if (a.i < b.i) {{ return a; }}\n  return b;")
        if k == "b":
            vt2 = "u32"
            lift = lambda v, r: f"{state}(select(0u, 1u, {v}), {r})"
        else:
            vt2 = vt
            lift = lambda v, r: f"{state}({v}, {r})"
        ident_v = W.literal(-np.inf if op == "argmax" else np.inf, dtype) if k == "f" else (
            W.literal(np.iinfo(dtype).min if op == "argmax" else np.iinfo(dtype).max, dtype) if k in "iu"
            else ("0u" if op == "argmax" else "1u"))
        m = Monoid(state, f"{state}({ident_v}, 0xffffffffu)", body, lift,
                   lambda s: W.literal(0, index_dtype) if False else f"{W.value_type(index_dtype)}({s}.i)")
        m.struct = f"struct {state} {{ v: {vt2}, i: u32 }}"
        return m
    raise ValueError(op)


# An opaque identity: the driver's compiler may reassociate float math (lavapipe does),
# which would fold TwoSum's error term to zero; a bit-xor with a zero it cannot see
# (wid.z of a 1-deep grid, stored in wj_zero at kernel start) keeps each rounding.
W.helper("wj_opq", """
var<private> wj_zero: u32;
fn wj_opq(x: f32) -> f32 { return bitcast<f32>(bitcast<u32>(x) ^ wj_zero); }""")


def _is_cpu(ctx) -> bool:
    from ..backend import runtime
    try:
        return runtime.get().info["adapter_type"] == "CPU"
    except Exception:
        return True


def emit_reduction(ctx, op, x_aval: ShapedArray, axes, out_key, out_dtype, index_dtype=None,
                   reader_index=0, wg=256):
    """Emits the dispatches of one reduction over ``axes`` of operand ``reader_index``."""
    axes = tuple(sorted(axes))
    kept = [d for d in range(x_aval.ndim) if d not in axes]
    kept_shape = [x_aval.shape[d] for d in kept]
    red_shape = [x_aval.shape[d] for d in axes]
    M = int(np.prod(kept_shape, dtype=np.int64))
    N = int(np.prod(red_shape, dtype=np.int64))
    mono = _monoid(op, x_aval.dtype, index_dtype)
    cpu = _is_cpu(ctx)
    target = 16 if cpu else 2048
    # two passes only when few outputs each reduce many elements
    parts = 1 if N <= wg * 64 else int(min(256, max(1, -(-target // max(M, 1))), -(-N // (wg * 4))))
    slice_n = -(-N // parts) if N else 0
    trailing = tuple(axes) == tuple(range(x_aval.ndim - len(axes), x_aval.ndim))

    def element(kb, fuser, o, r):
        if trailing:
            idx = Index(kb, x_aval.shape, flat=kb.let(f"{o} * {N}u + {r}", "u32"))
        else:
            od = Index(kb, kept_shape, flat=o).dims() if kept_shape else []
            rd = Index(kb, red_shape, flat=r).dims() if red_shape else []
            dims = [None] * x_aval.ndim
            for d, e in zip(kept, od):
                dims[d] = e
            for d, e in zip(axes, rd):
                dims[d] = e
            idx = Index(kb, x_aval.shape, dims=dims)
        return ctx.reader(kb, reader_index, fuser)(idx)

    two_pass = parts > 1
    partial_key = ctx.scratch(ShapedArray((M * parts,), np.float32)) if two_pass else None
    # pass 1 -----------------------------------------------------------------
    kb = ctx.new_kb()
    fuser = ctx.fuser(kb)
    saved = kb.lines
    kb.lines = []
    v = element(kb, fuser, "o", "r")
    lifted = mono.lift(v, "r")
    body = kb.lines
    kb.lines = saved
    if two_pass:
        # partial states are stored in scratch as raw 32-bit words (2 per arg state)
        words = 2 if op in ("argmax", "argmin") or mono.kahan else 1
        ctx.lw.plan.avals[partial_key] = ShapedArray((M * parts * words,), np.uint32)
        out_name = kb.bind(partial_key, np.uint32, "read_write")
        write = _write_state(mono, out_name, "g", words)
    else:
        out_name = kb.bind(out_key, out_dtype, "read_write")
        write = f"    {out_name}[o] = {W.store_expr(W.wrap_narrow(mono.result('res'), out_dtype), out_dtype)};"
    loop = _loop(mono, body, lifted, cpu, wg)
    src = _fill(kb, mono, wg, M * parts, parts, slice_n, N, loop, write)
    ctx.dispatch(kb, src[0], src[1])
    if not two_pass:
        return
    # pass 2: fold the partial states ----------------------------------------
    kb = ctx.new_kb()
    words = 2 if op in ("argmax", "argmin") or mono.kahan else 1
    inp = kb.bind(partial_key, np.uint32, "read")
    out_name = kb.bind(out_key, out_dtype, "read_write")
    read_state = _read_state(mono, inp, "(o * {P}u + r)".replace("{P}", str(parts)), words)
    loop = _loop(mono, [], read_state, cpu, wg, lifted_is_state=True)
    write = f"    {out_name}[o] = {W.store_expr(W.wrap_narrow(mono.result('res'), out_dtype), out_dtype)};"
    src = _fill(kb, mono, wg, M, 1, parts, parts, loop, write)
    ctx.dispatch(kb, src[0], src[1])


def _bits(expr, ty):
    return f"bitcast<u32>({expr})" if ty in ("f32", "i32") else (f"select(0u, 1u, {expr})" if ty == "bool" else expr)


def _from_bits(expr, ty):
    return f"bitcast<{ty}>({expr})" if ty in ("f32", "i32") else (f"({expr} != 0u)" if ty == "bool" else expr)


def _write_state(mono, name, at, words):
    if mono.kahan:
        return (f"    {name}[{at} * 2u] = bitcast<u32>(res.x);\n"
                f"    {name}[{at} * 2u + 1u] = bitcast<u32>(res.y);")
    if words == 2:
        vt = mono.struct.split("v: ")[1].split(",")[0]
        return (f"    {name}[{at} * 2u] = {_bits('res.v', vt)};\n"
                f"    {name}[{at} * 2u + 1u] = res.i;")
    return f"    {name}[{at}] = {_bits('res', mono.state)};"


def _read_state(mono, name, at, words):
    if mono.kahan:
        return f"vec2<f32>(bitcast<f32>({name}[{at} * 2u]), bitcast<f32>({name}[{at} * 2u + 1u]))"
    if words == 2:
        vt = mono.struct.split("v: ")[1].split(",")[0]
        return f"{mono.state}({_from_bits(f'{name}[{at} * 2u]', vt)}, {name}[{at} * 2u + 1u])"
    return _from_bits(f"{name}[{at}]", mono.state)


def _loop(mono, body_lines, lifted, cpu, wg, lifted_is_state=False):
    inner = "\n      ".join(body_lines)
    step = f"acc = combine(acc, {lifted});"
    if cpu:
        first, nxt = "lo + lid * per", "r + 1u"
        pre = (f"let per = (hi - lo + {wg - 1}u) / {wg}u;\n  let r1 = min(lo + lid * per + per, hi);\n  ")
        stop = "r1"
    else:
        first, nxt, pre, stop = "lo + lid", f"r + {wg}u", "", "hi"
    return f"{pre}for (var r = {first}; r < {stop}; r = {nxt}) {{\n      {inner}\n      {step}\n  }}"


def _fill(kb, mono, wg, groups, parts, slice_n, n, loop, write):
    for h in mono.helpers:
        kb.use_helper(h)
    if hasattr(mono, "struct"):
        kb.decls.append(mono.struct)
    grid = W.grid_for(groups, kb.max_groups)
    src = _template()
    for k, v in {"HEADER": kb.header(), "STATE": mono.state, "WG": str(wg), "EXTRA_SHARED": "",
                 "COMBINE": mono.combine, "NX": str(grid[0]), "GROUPS": str(groups),
                 "PARTS": str(parts), "SLICE": str(max(slice_n, 1)), "N": str(n),
                 "IDENTITY": mono.identity, "LOOP": loop, "WRITE": write,
                 "PROLOGUE": "wj_zero = wid.z;" if "wj_opq" in mono.helpers else ""}.items():
        src = src.replace("{{" + k + "}}", v)
    return src, grid


# --------------------------------------------------------------------------- primitives

def _reducer(name, op, np_ref, accepts):
    p = Primitive(name)
    p.fuse_inputs = (0,)

    def abstract(x, axes, out_sharding=None):
        axes = _check_axes(name, x, axes)
        if kind(x.dtype) not in accepts:
            raise TypeError(f"{name} does not accept dtype {np.dtype(x.dtype).name}")
        return ShapedArray([s for i, s in enumerate(x.shape) if i not in axes], x.dtype, x.weak_type)

    def kernel(ctx, x, axes, out_sharding=None):
        emit_reduction(ctx, op, x, axes, ctx.out_key(0), ctx.eqn.outvars[0].aval.dtype)

    def reference(x, axes, out_sharding=None):
        return np.asarray(np_ref(x, axis=tuple(axes)), dtype=x.dtype)

    p.abstract_eval, p.kernel, p.reference = abstract, kernel, reference
    p.monoid = op
    _batching.defreducer(p)   # vmap: shift the axes past the batch axis
    return p


reduce_sum_p = _reducer("reduce_sum", "sum", np.sum, "fiu")
reduce_prod_p = _reducer("reduce_prod", "prod", np.prod, "fiu")
reduce_max_p = _reducer("reduce_max", "max", np.max, "fiub")
reduce_min_p = _reducer("reduce_min", "min", np.min, "fiub")
reduce_and_p = _reducer("reduce_and", "and", lambda x, axis: np.all(x, axis=axis) if x.dtype == bool
                        else np.bitwise_and.reduce(x, axis=axis), "iub")
reduce_or_p = _reducer("reduce_or", "or", lambda x, axis: np.any(x, axis=axis) if x.dtype == bool
                       else np.bitwise_or.reduce(x, axis=axis), "iub")


def _arg(name, op):
    p = Primitive(name)
    p.fuse_inputs = (0,)

    def abstract(x, axes, index_dtype):
        axes = _check_axes(name, x, axes)
        if len(axes) != 1:
            raise TypeError(f"{name} takes exactly one axis, got {axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: attempt to get {op} of an empty sequence")
        return ShapedArray([s for i, s in enumerate(x.shape) if i not in axes], index_dtype, False)

    def kernel(ctx, x, axes, index_dtype):
        emit_reduction(ctx, op, x, axes, ctx.out_key(0), index_dtype, index_dtype=index_dtype)

    def reference(x, axes, index_dtype):
        a = axes[0]
        if x.dtype.kind == "f":
            nan = np.isnan(x)
            r = (np.nanargmax if op == "argmax" else np.nanargmin)(np.where(nan, 0, x), axis=a)
            anynan = nan.any(axis=a)
            r = np.where(anynan, np.argmax(nan, axis=a), (np.argmax if op == "argmax" else np.argmin)(x, axis=a))
            return r.astype(index_dtype)
        return (np.argmax if op == "argmax" else np.argmin)(x, axis=a).astype(index_dtype)

    p.abstract_eval, p.kernel, p.reference = abstract, kernel, reference
    _batching.defreducer(p)   # vmap: shift the axes past the batch axis
    return p


argmax_p = _arg("argmax", "argmax")
argmin_p = _arg("argmin", "argmin")
