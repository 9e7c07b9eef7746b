"""Graph passes on a jaxpr before it is lowered: calls inlined (``pjit``, checkpoint, custom
derivative calls, user primitives' ``expand`` and the Target's ``decompose`` choices),
common subexpressions merged and constants folded, concatenates wider than a kernel's
bindings chunked, fusion chains cut at a bounded depth, and every array checked against the
adapter's buffer limit.  Each is ``Jaxpr -> Jaxpr`` (or a set of vars); ``lower.py`` plans
the result into kernels."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var, params_key
from ..core.primitive import REGISTRY
from ..core.tracing import trace_flat
from ..transforms.dce import has_effects
from . import wgsl as W
from .target import Target


def _expansion(e: Eqn, fn: Callable) -> ClosedJaxpr:
    """The trace of ``fn`` (a function of the equation's operands) at their avals."""

    def flat(*xs):
        out = fn(*xs)
        return list(out) if e.prim.multiple_results else [out]
    return trace_flat(flat, [a.aval for a in e.invars])


def _composition(e: Eqn, target: Target | None) -> Callable | None:
    """What equation ``e`` is inlined as, if anything (a function of its operands): its
    ``expand`` rule, or the composition its ``decompose`` rule chooses for ``target`` (with
    no target, none is chosen)."""
    if e.prim.expand is not None:
        return lambda *xs: e.prim.expand(*xs, **e.params)
    if target is not None and e.prim.decompose is not None:
        return e.prim.decompose(target, *[a.aval for a in e.invars], **e.params)
    return None


def inline_calls(jaxpr: Jaxpr, extra_consts: list, target: Target | None = None) -> Jaxpr:
    """Inlines nested ``pjit`` (and other call) equations, and expands primitives defined as
    compositions, into one flat jaxpr; with a ``target``, also the equations whose
    ``decompose`` rule picks a composition for it.  Concrete consts of inner jaxprs are
    appended to ``extra_consts`` as (new outer constvar, value)."""
    rules = {id(e): _composition(e, target) for e in jaxpr.eqns if not e.prim.call}
    if not any(e.prim.call or rules.get(id(e)) is not None for e in jaxpr.eqns):
        return jaxpr
    eqns = []
    sub: dict[int, object] = {}

    def rd(a):
        return sub.get(a.id, a) if isinstance(a, Var) else a

    for e in jaxpr.eqns:
        rule = rules.get(id(e))
        if e.prim.call or rule is not None:
            closed = e.params["jaxpr"] if e.prim.call else _expansion(e, rule)
            inner = inline_calls(closed.jaxpr, extra_consts, target)
            env = {}
            consts = [
                Lit(c) if np.ndim(c) == 0 and isinstance(c, np.ndarray) else c
                for c in closed.consts
            ]
            for v, c in zip(inner.constvars, consts):
                if isinstance(c, (Var, Lit)):
                    env[v.id] = c
                else:   # a concrete const: keep it as a constvar of the outer jaxpr
                    nv = Var(v.aval)
                    extra_consts.append((nv, c))
                    env[v.id] = nv
            for v, a in zip(inner.invars, e.invars):
                env[v.id] = rd(a)
            for ie in inner.eqns:
                outs = [Var(v.aval) for v in ie.outvars]
                eqns.append(
                    Eqn(
                        ie.prim,
                        [env.get(a.id, a) if isinstance(a, Var) else a for a in ie.invars],
                        outs,
                        ie.params,
                    )
                )
                for v, nv in zip(ie.outvars, outs):
                    env[v.id] = nv
            for v, o in zip(e.outvars, inner.outvars):
                sub[v.id] = env.get(o.id, o) if isinstance(o, Var) else o
        else:
            eqns.append(Eqn(e.prim, [rd(a) for a in e.invars], e.outvars, e.params))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [rd(a) for a in jaxpr.outvars], eqns)


def flatten_closed(closed: ClosedJaxpr, target: Target | None = None) -> tuple[Jaxpr, list]:
    """Inlines calls (and, for a ``target``, the compositions its ``decompose`` rules choose);
    concrete consts of inner jaxprs become extra outer constvars."""
    extra: list = []
    j = inline_calls(closed.jaxpr, extra, target)
    consts = list(closed.consts) + [c for _, c in extra]
    j = Jaxpr(j.constvars + [v for v, _ in extra], j.invars, j.outvars, j.eqns)
    return j, consts


def cse_and_fold(jaxpr: Jaxpr) -> Jaxpr:
    """Common-subexpression elimination, and folding of scalar all-literal equations."""
    sub: dict[int, object] = {}
    seen: dict = {}
    eqns = []
    keep: list = []     # objects keyed by identity stay alive while keys are compared

    def rd(a):
        return sub.get(a.id, a) if isinstance(a, Var) else a

    def akey(a):
        return (
            ("v", a.id)
            if isinstance(a, Var)
            else ("l", a.val.tobytes(), str(a.val.dtype), a.aval.weak_type)
        )

    for e in jaxpr.eqns:
        invars = [rd(a) for a in e.invars]
        if (not e.prim.multiple_results and e.prim.reference is not None and invars
                and all(isinstance(a, Lit) for a in invars) and e.outvars[0].aval.shape == ()
                and e.prim.fuse is not None):
            try:
                val = np.asarray(e.prim.reference(*[a.val for a in invars], **e.params))
                sub[e.outvars[0].id] = Lit(val.astype(e.outvars[0].aval.dtype).reshape(()),
                                           e.outvars[0].aval)
                continue
            except Exception:
                pass
        if e.prim.name == "div":
            e = _div_by_power_of_two(e, invars) or e
            invars = [rd(a) for a in e.invars]
        key = None
        if not has_effects(e):
            key = (e.prim.key, tuple(akey(a) for a in invars), params_key(e.params, keep))
            prev = seen.get(key)
            if prev is not None:
                for v, p in zip(e.outvars, prev.outvars):
                    sub[v.id] = p
                continue
        ne = Eqn(e.prim, invars, e.outvars, e.params)
        if key is not None:
            seen[key] = ne
        eqns.append(ne)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, [rd(a) for a in jaxpr.outvars], eqns)


def _div_by_power_of_two(e: Eqn, invars) -> Eqn | None:
    """``x / 2^k`` as ``x * 2^-k`` (a float literal divisor whose reciprocal is a normal
    number): the same value for every ``x`` -- both round the one real number ``x 2^-k`` --
    at the cost of a multiply instead of a correctly rounded division (``wj_div``)."""
    c = invars[1]
    if not isinstance(c, Lit) or c.aval.shape != () or W.value_type(c.aval.dtype) not in (
            "f32", "f16"):        # (complex values are vec2s)
        return None
    val = float(c.val)
    if not np.isfinite(val) or val == 0.0:
        return None
    m, ex = np.frexp(abs(val))
    lo = -14 if np.dtype(c.aval.dtype) == np.float16 else -126     # the least normal 2^lo
    if m != 0.5 or not lo <= 1 - ex <= -lo:
        return None
    inv = np.asarray(1.0 / val, dtype=c.aval.dtype)
    return Eqn(REGISTRY["mul"], [invars[0], Lit(inv, c.aval)], e.outvars, {}, e.source)


def chunk_wide_concats(jaxpr: Jaxpr, max_operands: int) -> Jaxpr:
    """Rewrites a concatenate of more operands than one kernel can bind into a tree of
    concatenates (whose inner nodes the split logic then gives kernels of their own)."""
    if not any(e.prim.name == "concatenate" and len(e.invars) > max_operands for e in jaxpr.eqns):
        return jaxpr
    eqns = []
    for e in jaxpr.eqns:
        if e.prim.name != "concatenate" or len(e.invars) <= max_operands:
            eqns.append(e)
            continue
        d = e.params["dimension"]
        parts = list(e.invars)
        while len(parts) > max_operands:
            nxt = []
            for i in range(0, len(parts), max_operands):
                chunk = parts[i:i + max_operands]
                if len(chunk) == 1:
                    nxt.append(chunk[0])
                    continue
                aval = e.prim.abstract_eval(*[a.aval for a in chunk], dimension=d)
                v = Var(aval)
                eqns.append(Eqn(e.prim, chunk, [v], e.params))
                nxt.append(v)
            parts = nxt
        eqns.append(Eqn(e.prim, parts, e.outvars, e.params))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)


def check_avals(jaxpr: Jaxpr, target: Target) -> None:
    """Every array must fit one device buffer (and be indexable in 32 bits), and float16 needs
    the adapter's ``shader-f16``."""
    max_buffer = int(target["max-buffer-size"])
    f16 = target.has_f16
    for v in jaxpr.invars + [o for e in jaxpr.eqns for o in e.outvars]:
        if not f16 and v.aval.dtype == np.float16:
            raise TypeError("float16 needs the adapter feature 'shader-f16', which this adapter "
                            "does not have")
        n = (
            v.aval.size * W.storage_itemsize(v.aval.dtype)
            if not getattr(v.aval.dtype, "is_key", False)
            else 0
        )
        if n > max_buffer or v.aval.size >= 1 << 32:
            raise MemoryError(
                f"wjax: an array of shape {v.aval.shape} and dtype {v.aval.dtype} needs {n} bytes; "
                f"the adapter's max-buffer-size is {max_buffer} bytes")


MAX_FUSE_DEPTH = 64


def deep_fusion_splits(jaxpr: Jaxpr, max_depth: int = MAX_FUSE_DEPTH) -> set:
    """Vars where a chain of fused elementwise ops gets deeper than ``max_depth``: they are
    materialized, so no kernel inlines an unbounded expression (a Python loop of 500 updates
    under jit stays a few kernels of bounded size, and code generation never recurses deeper
    than the bound)."""
    depth: dict[int, int] = {}
    split: set[int] = set()
    for e in jaxpr.eqns:
        if e.prim.fuse is None:
            continue
        d = 1 + max([depth.get(a.id, 0) for a in e.invars if isinstance(a, Var)], default=0)
        for v in e.outvars:
            if d > max_depth:
                split.add(v.id)
                depth[v.id] = 0
            else:
                depth[v.id] = d
    return split


BROADCAST_RATIO = 16        # a broadcast this many times larger than its operand ...
BROADCAST_MIN = 1 << 16     # ... and at least this many elements
# operations worth computing once rather than per element (a clamp of a kernel's output,
# ``max(m, -inf)``, is cheaper than a kernel of its own)
_COSTLY = {"div", "rem", "sqrt", "rsqrt", "cbrt", "exp", "exp2", "expm1", "log", "log1p",
           "pow", "tanh", "logistic", "erf", "erfc", "erf_inv", "sin", "cos", "tan", "atan2",
           "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma",
           "digamma", "integer_pow"}


def broadcast_splits(jaxpr: Jaxpr) -> set:
    """Fused values computed from a kernel's output and broadcast into a much larger kernel
    (``mean = sum / n`` and ``std = sqrt(...)`` read by every element of ``(X - mean) / std``):
    they are materialized, computed once in a small kernel of their own instead of once per
    element of the large one (on GPUs the divisions and square roots per element made the
    normalization compute-bound).  Views and values of the inputs alone stay inlined, and so
    do cheap values of split ones: a value split earlier counts as a kernel's output, so
    ``jnp.var``'s shift row ``x[0] - mean`` (a subtraction once ``mean`` has a buffer) is
    recomputed where it is read, not given a kernel of its own.  The lowering computes a
    split value inside the kernel whose output it is derived from where it can (an epilogue
    of that reduction's last pass, ``Lowering._try_epilogue``), so it costs no dispatch.
    Only for ``Target.elementwise == "flat"`` (GPUs; ``lower.lower_jaxpr``)."""
    producer = {v.id: e for e in jaxpr.eqns for v in e.outvars}
    memo: dict[tuple, bool] = {}
    split: set[int] = set()

    def walk(v, what) -> bool:
        """what == "derived": v is computed (not only viewed) from a kernel's output through
        fused operations; what == "costly": v's fused expression holds a ``_COSTLY`` op."""
        if not isinstance(v, Var):
            return False
        if (v.id, what) in memo:
            return memo[v.id, what]
        e = producer.get(v.id)
        r = False
        if e is not None and e.prim.fuse is not None:
            args = [a for a in e.invars if isinstance(a, Var)]
            inner = [a for a in args if not _from_kernel(a, producer, split)]
            if what == "costly":
                r = (not e.prim.view and e.prim.name in _COSTLY) or any(
                    walk(a, what) for a in inner)
            else:
                r = any(walk(a, what) for a in inner) or (
                    not e.prim.view and len(inner) < len(args))
        memo[v.id, what] = r
        return r

    def computed(v) -> bool:
        return walk(v, "derived") and walk(v, "costly")
    for e in jaxpr.eqns:
        if e.prim.name != "broadcast_in_dim" or not isinstance(e.invars[0], Var):
            continue
        a, out = e.invars[0], e.outvars[0]
        if (out.aval.size >= BROADCAST_MIN and out.aval.size >= BROADCAST_RATIO * a.aval.size
                and computed(a)):
            split.add(a.id)
    return split


def _from_kernel(v: Var, producer: dict, split=frozenset()) -> bool:
    """``v`` is the output of a kernel op or a ``split`` value, or a view of one."""
    e = producer.get(v.id)
    while e is not None and e.prim.fuse is not None and e.prim.view:
        a = e.invars[0]
        if not isinstance(a, Var):
            return False
        if a.id in split:
            return True
        e = producer.get(a.id)
    return v.id in split or (e is not None and e.prim.kernel is not None)


# --------------------------------------------------------------------------- row-resident groups

# views that read their operand at the output's own position
_SAME_POSITION = {"convert_element_type", "stop_gradient", "name", "conj"}
# views that keep a row's values in that row when both shapes are row shapes (``Bd + (1,)*j``)
_ROW_VIEWS = {"reshape", "squeeze", "expand_dims"}
MAX_ROW_REDUCTIONS = 6      # reductions one row-resident kernel folds (workgroup memory)


def row_groups(jaxpr: Jaxpr, target: Target) -> Jaxpr:
    """Where ``Target.row_resident`` allows (GPUs), collapses each *row-resident group* into one
    equation of the reductions' ``row_group`` primitive, whose kernel (``prims/rows.py``) gives
    each row a team of threads that loads it once, folds every reduction of the group in
    workgroup memory or subgroup shuffles, and writes the results once.

    A group grows from a seed reduction (``reduce_sum/max/min`` of a float operand of shape
    ``S = Bd + Rd`` over the trailing axes ``Rd``, ``2 <= prod(Rd) <= row_resident``): the
    later reductions of the same ``S`` and axes, and every fusable equation that reads a
    value of the group through same-position elementwise math (operands of its own shape or
    0-d), same-position views, or the row views and leading-identity broadcasts that carry a
    row's values (shape ``Bd + (1,)*j``) back over the row (shape ``S``).  Values computed
    outside the group from group values are *tainted* and never read by it, so the group is
    one equation after the untainted rest and before the tainted rest.  A group is kept when
    it saves a pass: some reduction or element of it reads a reduction of it (softmax's sum
    reads its max, the normalization reads both).  Softmax, log_softmax, logsumexp, layer
    norm and their gradients each become one kernel."""
    bound = int(getattr(target, "row_resident", 0) or 0)
    if not bound or any(has_effects(e) for e in jaxpr.eqns):
        return jaxpr
    if not any(getattr(e.prim, "row_group", None) is not None for e in jaxpr.eqns):
        return jaxpr
    deep = deep_fusion_splits(jaxpr)
    limits = (int(target["max-storage-buffers-per-shader-stage"]),
              int(target["max-storage-buffer-binding-size"]),
              min(MAX_ROW_REDUCTIONS, target.workgroup_memory // 2048))
    tried: set = set()
    while True:
        new = _one_row_group(jaxpr, bound, deep, limits, tried)
        if new is None:
            return jaxpr
        jaxpr = new


def _row_key(e: Eqn, bound: int):
    """(S, axes) of a reduction a row-resident group may hold, or None."""
    if getattr(e.prim, "row_group", None) is None or len(e.invars) != 1:
        return None
    a = e.invars[0]
    shape, nd = tuple(a.aval.shape), len(a.aval.shape)
    axes = tuple(sorted(e.params.get("axes", ())))
    if (not axes or axes != tuple(range(nd - len(axes), nd))
            or W.value_type(a.aval.dtype) not in ("f32", "f16")
            or getattr(a.aval.dtype, "is_key", False)):
        return None
    n = int(np.prod([shape[d] for d in axes], dtype=np.int64))
    if not 2 <= n <= bound or a.aval.size == 0:
        return None
    return shape, axes


def _row_shapes(S, axes) -> set:
    bd = S[:len(S) - len(axes)]
    return {bd + (1,) * j for j in range(len(axes) + 1)}


def _joins(e: Eqn, gvals: set, S, rows: set) -> bool:
    """Whether fusable ``e``, reading group values, computes a group value: of shape ``S``
    or a row shape, reading each group value at its own element or row."""
    if len(e.outvars) != 1:
        return False
    out = tuple(e.outvars[0].aval.shape)
    if out != S and out not in rows:
        return False
    if getattr(e.outvars[0].aval.dtype, "is_key", False):
        return False
    ins = [a for a in e.invars if isinstance(a, Var)]
    name = e.prim.name
    if name == "broadcast_in_dim":
        a = e.invars[0]
        src = tuple(a.aval.shape)
        return (src in rows or src == S) and tuple(
            e.params["broadcast_dimensions"]) == tuple(range(len(src)))
    if name in _ROW_VIEWS:
        src = tuple(e.invars[0].aval.shape)
        return (src in rows and out in rows or src == out) and (
            name != "reshape" or e.params.get("dimensions") is None)
    if e.prim.view and name not in _SAME_POSITION:
        return False
    if name == "gather":        # reads its operand where its indices say
        return False
    return all(tuple(a.aval.shape) == out or a.aval.ndim == 0
               for a in ins if a.id in gvals)


def _one_row_group(jaxpr: Jaxpr, bound: int, deep: set, limits, tried: set):
    """The jaxpr with the first worthwhile row-resident group collapsed, or None."""
    eqns = jaxpr.eqns
    max_storage, max_binding, max_reds = limits
    for si, seed in enumerate(eqns):
        key = _row_key(seed, bound)
        if key is None or id(seed) in tried:
            continue
        tried.add(id(seed))
        S, axes = key
        rows = _row_shapes(S, axes)
        members: list[int] = []
        gvals: set = set()
        reds: set = set()          # outputs of the group's reductions
        after: set = set()         # group values computed from a group reduction
        taint: set = set()
        tainted: set = set()       # equation indices computed from the group outside it
        gain = False
        for k in range(si, len(eqns)):
            e = eqns[k]
            vids = [a.id for a in e.invars if isinstance(a, Var)]
            g = any(v in gvals for v in vids)
            t = any(v in taint for v in vids)
            join = False
            if not t:
                if _row_key(e, bound) == key and len(reds) < max_reds:
                    join = True
                    if vids and vids[0] in after:
                        gain = True
                elif (g and e.prim.fuse is not None and not any(v.id in deep for v in e.outvars)
                        and _joins(e, gvals, S, rows)):
                    join = True
                    if tuple(e.outvars[0].aval.shape) == S and any(v in after for v in vids):
                        gain = True
            if join:
                members.append(k)
                for v in e.outvars:
                    gvals.add(v.id)
                    if e.prim.fuse is None:
                        reds.add(v.id)
                        after.add(v.id)
                    elif any(x in after for x in vids):
                        after.add(v.id)
            elif g or t:
                tainted.add(k)
                taint.update(v.id for v in e.outvars)
        if not gain:
            continue
        new = _collapse(jaxpr, members, tainted, max_storage, max_binding)
        if new is not None:
            return new
    return None


def run_inputs(run: list) -> list:
    """The variables a run of equations reads that none of them defines, in first-use order."""
    defined = {v.id for e in run for v in e.outvars}
    ins, seen = [], set()
    for e in run:
        for a in e.invars:
            if isinstance(a, Var) and a.id not in defined and a.id not in seen:
                seen.add(a.id)
                ins.append(a)
    return ins


def _collapse(jaxpr: Jaxpr, members, tainted, max_storage, max_binding):
    """The jaxpr with equations ``members`` made one ``row_group`` equation (None when it
    would bind too many buffers, or one larger than a binding)."""
    eqns = jaxpr.eqns
    mset = set(members)
    body = [eqns[k] for k in members]
    ins = run_inputs(body)
    used = {a.id for k, e in enumerate(eqns) if k not in mset
            for a in e.invars if isinstance(a, Var)}
    used |= {a.id for a in jaxpr.outvars if isinstance(a, Var)}
    outs = [v for e in body for v in e.outvars if v.id in used]
    if not outs or len(ins) + len(outs) > max_storage - 1:
        return None
    for v in ins + outs:
        if v.aval.size * W.storage_itemsize(v.aval.dtype) > max_binding:
            return None
    prim = next(e.prim.row_group for e in body if e.prim.fuse is None)
    geqn = Eqn(prim, list(ins), list(outs), {"jaxpr": Jaxpr([], list(ins), list(outs), body)})
    rest = [e for k, e in enumerate(eqns) if k not in mset and k not in tainted]
    late = [e for k, e in enumerate(eqns) if k in tainted]
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, rest + [geqn] + late)


# --------------------------------------------------------------------------- attention

# what each equation of a softmax makes of the kinds it reads: X its input, M the row maximum,
# Z = X - M, E = exp(Z), L the row sum of E, P = E / L; views of row values keep their kind
_SOFTMAX_STEPS = {("reduce_max", ("X",)): "M", ("max", ("M", "-inf")): "M",
                  ("max", ("-inf", "M")): "M", ("sub", ("X", "M")): "Z", ("exp", ("Z",)): "E",
                  ("reduce_sum", ("E",)): "L", ("div", ("E", "L")): "P"}
_KIND_VIEWS = {"broadcast_in_dim", "reshape", "expand_dims", "squeeze", "stop_gradient"}


def _neg_inf(v) -> bool:
    """Whether literal ``v`` is a real -inf (complex and integer literals are not)."""
    v = np.asarray(v)
    return v.dtype.kind not in "cbiu" and bool(np.isneginf(v.astype(np.float32)).all())


def _softmax_after(eqns, start: int, x: Var, axes: tuple, users, outs):
    """The equations (indices, in order) that compute exactly ``softmax(x)`` over ``axes``
    from equation ``start`` on -- ``exp(x - max x) / sum(exp(x - max x))``, in float32, as
    ``jax.nn.softmax`` or written out -- and its result ``P``; None unless every value of
    it but ``P`` is read only by the others."""
    kind = {x.id: "X"}
    members, p = [], None
    for k in range(start, len(eqns)):
        e = eqns[k]
        ins = []
        for a in e.invars:
            if isinstance(a, Lit):
                ins.append("-inf" if _neg_inf(a.val) else "lit")
            else:
                ins.append(kind.get(a.id, "."))
        if all(c in (".", "lit", "-inf") for c in ins):
            continue                                     # not computed from x
        name = e.prim.name
        if len(e.outvars) != 1 or e.outvars[0].aval.dtype != np.float32:
            return None
        if name in _KIND_VIEWS and len(ins) == 1 and ins[0] in ("M", "L"):
            got = ins[0]
        else:
            got = _SOFTMAX_STEPS.get((name, tuple(ins)))
            if got is None or (name.startswith("reduce_")
                               and tuple(sorted(e.params["axes"])) != axes):
                return None
        kind[e.outvars[0].id] = got
        members.append(k)
        if got == "P":
            p = e.outvars[0]
            break
    if p is None or {kind[eqns[k].outvars[0].id] for k in members} != set("MZELP"):
        return None
    mset = set(members)
    for k in members:
        v = eqns[k].outvars[0]
        if v is not p and (v.id in outs or not users.get(v.id, set()) <= mset):
            return None
    return members, p


def _dot_dims(e: Eqn):
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    return tuple(lc), tuple(rc), tuple(lb), tuple(rb)


def _size_of(shape, dims) -> int:
    return int(np.prod([shape[d] for d in dims], dtype=np.int64))


def _readers(jaxpr: Jaxpr):
    """(var id -> indices of the equations reading it, ids of the program's outputs)."""
    users: dict[int, set] = {}
    for k, e in enumerate(jaxpr.eqns):
        for a in e.invars:
            if isinstance(a, Var):
                users.setdefault(a.id, set()).add(k)
    return users, {a.id for a in jaxpr.outvars if isinstance(a, Var)}


def deferred_normalization(jaxpr: Jaxpr) -> Jaxpr:
    """A softmax whose probabilities only a product reads, contracting the softmax's axes --
    ``softmax(x) @ v``, attention's second product -- is not normalized before the product:
    the product takes the exponentials and its result is divided by their sums, one division
    per output where there was one per probability (``exp(z)_k / s`` summed against ``v_k``
    is ``(sum_k exp(z)_k v_k) / s``: the values differ by rounding alone).  The correctly
    rounded division was 45% of the H200's softmax kernel; attention's scores (s x s) far
    outnumber its outputs (s x d).  Matches what ``_softmax_after`` recognises, when the
    probabilities are read by that one product alone and its batch axes come first, in
    order (so the sums line up with the product's leading axes)."""
    if any(has_effects(e) for e in jaxpr.eqns):
        return jaxpr
    while True:
        new = _one_deferral(jaxpr)
        if new is None:
            return jaxpr
        jaxpr = new


def _one_deferral(jaxpr: Jaxpr):
    """The jaxpr with its first softmax-then-product normalized after the product, or None."""
    eqns = jaxpr.eqns
    users, outs = _readers(jaxpr)
    for mi, e in enumerate(eqns):
        if e.prim.name != "reduce_max" or not isinstance(e.invars[0], Var):
            continue
        axes = tuple(sorted(int(a) for a in e.params["axes"]))
        found = _softmax_after(eqns, mi, e.invars[0], axes, users, outs)
        if found is None:
            continue
        members, p = found
        u = users.get(p.id, set())
        sums = [k for k in members if eqns[k].prim.name == "reduce_sum"]
        if len(u) != 1 or p.id in outs or len(sums) != 1:
            continue
        di = next(k for k in members if eqns[k].outvars[0] is p)
        ev, total = eqns[di].invars[0], eqns[sums[0]].outvars[0]
        bi = next(iter(u))
        B = eqns[bi]
        if (not isinstance(ev, Var) or ev.aval.shape != p.aval.shape
                or B.prim.name != "dot_general" or B.invars[0] is not p or B.invars[1] is p):
            continue
        lc, _, lb, _ = _dot_dims(B)
        S, o = tuple(p.aval.shape), B.outvars[0]
        free = [d for d in range(len(S)) if d not in axes and d not in lb]
        nl = len(S) - len(axes)
        if (tuple(sorted(lc)) != axes or list(lb) != sorted(lb)
                or (lb and free and max(lb) > min(free)) or o.aval.dtype != np.float32
                or tuple(total.aval.shape) != tuple(o.aval.shape[:nl])):
            continue
        raw, spread = Var(o.aval), Var(o.aval)
        new = [B.replace(invars=[ev, B.invars[1]], outvars=[raw]),
               Eqn(REGISTRY["broadcast_in_dim"], [total], [spread],
                   {"shape": tuple(o.aval.shape), "broadcast_dimensions": tuple(range(nl)),
                    "sharding": None}, source=B.source),
               Eqn(eqns[di].prim, [raw, spread], [o], dict(eqns[di].params), source=B.source)]
        rest = []
        for j, q in enumerate(eqns):
            if j == bi:
                rest += new
            elif j != di:
                rest.append(q)
        return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, rest)
    return None


def attention_groups(jaxpr: Jaxpr, target: Target) -> Jaxpr:
    """Where ``Target.attention`` allows (GPUs), collapses *attention* -- a product of
    queries and keys, elementwise math on its scores (a scale, a mask), a softmax over the
    keys and the product of the probabilities with the values -- into one ``attention``
    equation, whose kernel (``prims/attention.py``) streams the keys
    and values past each query row with an online softmax: the (queries x keys) scores never
    reach memory.  Runs before ``row_groups``.  Matches only when every value between the
    products (scores, probabilities) is read by the next step alone, the head dimensions are
    at most ``Target.attention``, and there are query rows (one thread each) for a sixteenth
    of ``Target.threads`` at least (a decoding step's one query row per head would walk all
    keys in one thread: its scores are better spread over the three kernels' threads)."""
    bound = int(getattr(target, "attention", 0) or 0)
    if not bound or any(has_effects(e) for e in jaxpr.eqns):
        return jaxpr
    while True:
        new = _one_attention(jaxpr, bound, target.loop_limit, max(1, target.threads // 16))
        if new is None:
            return jaxpr
        jaxpr = new


def _one_attention(jaxpr: Jaxpr, bound: int, loop_limit, min_rows: int):
    """The jaxpr with its first attention collapsed, or None."""
    eqns = jaxpr.eqns
    users, outs = _readers(jaxpr)

    def next_step(v):
        """The one equation reading ``v`` (None: several, or an output of the program)."""
        u = users.get(v.id, set())
        return next(iter(u)) if len(u) == 1 and v.id not in outs else None
    for ai, A in enumerate(eqns):
        if A.prim.name != "dot_general":
            continue
        q, kk = A.invars
        lc, rc, lb, rb = _dot_dims(A)
        s = A.outvars[0]
        S = tuple(s.aval.shape)
        nb, nk = len(lb), kk.aval.ndim - len(rc) - len(rb)
        axes = tuple(range(len(S) - nk, len(S)))        # the keys: the scores' last axes
        if not (isinstance(q, Var) and isinstance(kk, Var)) or not nk or s.aval.size == 0:
            continue
        chain, x = [], s
        while True:      # the scores' elementwise math, up to the softmax
            k = next_step(x)
            e = eqns[k] if k is not None else None
            if (e is None or e.prim.fuse is None or len(e.outvars) != 1
                    or (e.prim.view and e.prim.name not in _SAME_POSITION)
                    or tuple(e.outvars[0].aval.shape) != S
                    or e.outvars[0].aval.dtype != np.float32
                    or e.prim.name == "reduce_max"):
                break
            chain.append(k)
            x = e.outvars[0]
        start = chain[-1] + 1 if chain else ai + 1
        found = _softmax_after(eqns, start, x, axes, users, outs)
        if found is None:
            continue
        soft, p = found
        if not users.get(x.id, set()) <= set(soft):
            continue                                     # x is read outside the softmax
        bi = next_step(p)
        if bi is None or eqns[bi].prim.name != "dot_general":
            continue
        B = eqns[bi]
        blc, brc, blb, brb = _dot_dims(B)
        vv = B.invars[1]
        # the values' product contracts the keys, and the batch axes stay in place
        if (B.invars[0] is not p or not isinstance(vv, Var) or vv is p
                or blb != tuple(range(nb)) or blc != axes):
            continue
        if not (q.aval.dtype == kk.aval.dtype == vv.aval.dtype == B.outvars[0].aval.dtype
                == s.aval.dtype == np.float32):
            continue
        D = _size_of(q.aval.shape, lc)
        E = _size_of(vv.aval.shape, [d for d in range(vv.aval.ndim) if d not in brb + brc])
        keys = _size_of(S, axes)
        if not (1 <= D <= bound and 1 <= E <= bound):
            continue
        if loop_limit and 4 * keys > loop_limit:    # a thread's loop walks every key
            continue
        if _size_of(S, range(len(S) - nk)) < min_rows:
            continue        # too few query rows (threads) to fill the device: keep the scores
        members = [ai] + chain + soft + [bi]
        deps = {s.id} | {eqns[j].outvars[0].id for j in chain}
        extras = [a for a in run_inputs([eqns[j] for j in chain]) if a.id not in deps]
        ins = [q, kk, vv] + extras
        o = B.outvars[0]
        aeqn = Eqn(REGISTRY["attention"], ins, [o],
                   {"jaxpr": Jaxpr([], ins, [o], [eqns[j] for j in members]),
                    "n_math": len(chain)}, source=B.source)
        drop = set(members) - {bi}
        rest = [aeqn if j == bi else e for j, e in enumerate(eqns) if j not in drop]
        return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, rest)
    return None
