"""Control flow (JAX's ``lax.cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``map``).

Each function traces its Python callables into jaxprs (closed-over values, traced or not,
become explicit operands, as in JAX) and binds one primitive of ``wjax/_src/prims/control.py``,
whose comments describe how the loops run on the device.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import inspect

import numpy as np

from .._src.core import dtypes, tree_util
from .._src.core.config import config as _cfg
from .._src import dispatch
from .._src.array import Array
from .._src.core.ir import ClosedJaxpr, Jaxpr, ShapedArray, Var, abstractify
from .._src.core.tracing import eval_jaxpr
from .._src.transforms.vmap import vmap_closed_jaxpr
from .._src.core import ops as lax
from .._src.core import refs as _refs
from .._src.prims.control import cond_p, lift_consts, scan_p, while_p
from .._src.core.tracing import DebugInfo, Tracer, is_concrete, trace_flat

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "map"]

_no_operand = object()


# --------------------------------------------------------------------------- helpers

def _aval(x) -> ShapedArray:
    return abstractify(x)


def _trace(fun, in_tree, avals, what, call=None):
    """Traces ``fun`` on ``avals`` (unflattened with ``in_tree``; ``call(fun, args)`` calls
    it).  Returns (jaxpr with consts as leading invars, consts, output tree, output avals)."""
    box = []

    def flat(*tracers):
        args = tree_util.tree_unflatten(in_tree, list(tracers))
        out = call(fun, args) if call is not None else fun(*args)
        leaves, tree = tree_util.tree_flatten(out)
        box.append((tree, out))
        return leaves

    closed = trace_flat(flat, list(avals), DebugInfo(what, fun))
    jaxpr, consts = lift_consts(closed)
    return jaxpr, consts, box[0][0], box[0][1], closed.out_avals


def _fun_info(f) -> str:
    name = getattr(f, "__name__", None) or type(f).__name__
    try:
        code = f.__code__
        return f"{name} at {code.co_filename}:{code.co_firstlineno}"
    except AttributeError:
        return name


def _capitalize(s: str) -> str:
    return s[:1].upper() + s[1:]


def _equality_errors(path, t1, t2):
    """(path, thing1, thing2, explanation) for each structural difference (JAX's helper)."""
    l1, l2 = tree_util.treedef_is_leaf(tree_util.tree_structure(t1)), \
        tree_util.treedef_is_leaf(tree_util.tree_structure(t2))
    if l1 and l2 and t1 is not None and t2 is not None:
        return
    if type(t1) is not type(t2):
        yield path, str(type(t1)), str(type(t2)), "their Python types differ"
        return
    if isinstance(t1, (list, tuple)):
        if len(t1) != len(t2):
            yield (path, f"{type(t1).__name__} of length {len(t1)}",
                   f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")
            return
        for i, (a, b) in enumerate(zip(t1, t2)):
            yield from _equality_errors(path + (tree_util.SequenceKey(i),), a, b)
        return
    if isinstance(t1, dict):
        k1, k2 = sorted(t1, key=repr), sorted(t2, key=repr)
        diff = " ".join(repr(k) for k in set(k1) ^ set(k2))
        if len(k1) != len(k2):
            yield (path, f"{type(t1)} with {len(k1)} child{'ren' if len(k1) > 1 else ''}",
                   f"{type(t2)} with {len(k2)} child{'ren' if len(k2) > 1 else ''}",
                   "the numbers of children do not match"
                   + (f", with the symmetric difference of key sets: {{{diff}}}" if diff else ""))
            return
        if k1 != k2:
            yield (
                path,
                f"{type(t1)} with pytree metadata {tuple(k1)}",
                f"{type(t2)} with pytree metadata {tuple(k2)}",
                "the pytree node metadata does not match",
            )
            return
        for k in k1:
            yield from _equality_errors(path + (tree_util.DictKey(k),), t1[k], t2[k])
        return
    s1, s2 = tree_util.tree_structure(t1), tree_util.tree_structure(t2)
    if s1 != s2:
        yield path, str(s1), str(s2), "their structures differ"


def _mismatch_extra(a, b) -> str:
    ms = []
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        ms.append("the dtypes do not match")
    if a.shape != b.shape:
        ms.append("the shapes do not match")
    if not ms:
        return ""
    return ", so " + (ms[0] if len(ms) == 1 else ", and ".join(ms))


def _str(a) -> str:
    return f"{np.dtype(a.dtype).name}[{','.join(str(d) for d in a.shape)}]"


def _typematch(a, b) -> bool:
    return a.shape == b.shape and np.dtype(a.dtype) == np.dtype(b.dtype)


def _join_diffs(diffs):
    if len(diffs) == 1:
        return f"{_capitalize(diffs[0])}.\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def _check_carry_type(name, body_fun, in_carry, in_tree, in_avals, out_carry, out_tree, out_avals):
    """JAX's carry check: same pytree structure, then equal types (weak types aside)."""
    try:
        carry_name = list(inspect.signature(body_fun).parameters)[0]
    except (ValueError, TypeError, IndexError):
        carry_name = None
    if carry_name:
        component = lambda p: (f"the input carry component {carry_name}{tree_util.keystr(p)}"  # noqa: E731
                               if p else f"the input carry {carry_name}")
    else:
        component = lambda p: (f"the input carry at path {tree_util.keystr(p)}"  # noqa: E731
                               if p else "the input carry")
    if in_tree != out_tree:
        shaped_in = tree_util.tree_unflatten(in_tree, list(in_avals))
        shaped_out = tree_util.tree_unflatten(out_tree, list(out_avals))
        diffs = [
            f"{component(p)} is a {a} but the corresponding component of the carry output is "
            f"a {b}, so {why}"
            for p, a, b, why in _equality_errors((), shaped_in, shaped_out)
        ]
        if not diffs:
            diffs = [
                f"the input tree structure is {in_tree} but the output tree structure is {out_tree}"
            ]
        raise TypeError(
            f"{name} function carry input and carry output must have the same pytree structure, "
            f"but they differ:\n\n{_join_diffs(diffs)}\nRevise the function so that the carry "
            f"output has the same pytree structure as the carry input."
        )
    if not all(_typematch(p, q) for p, q in zip(in_avals, out_avals)):
        paths = [p for p, _ in tree_util.tree_flatten_with_path(
            tree_util.tree_unflatten(in_tree, list(range(len(in_avals)))))[0]]
        diffs = [f"{component(p)} has type {_str(a)} but the corresponding output carry component "
                 f"has type {_str(b)}{_mismatch_extra(a, b)}"
                 for p, a, b in zip(paths, in_avals, out_avals) if not _typematch(a, b)]
        raise TypeError(
            f"{name} function carry input and carry output must have equal types, but they "
            f"differ:\n\n{_join_diffs(diffs)}\nRevise the function so that all output types match "
            f"the corresponding input types."
        )


def _promote_weak(leaves, in_avals, out_avals):
    """JAX promotes a weakly typed initial carry to the dtype the body gives it."""
    changed = False
    leaves = list(leaves)
    for i, (x, a, b) in enumerate(zip(leaves, in_avals, out_avals)):
        if a.weak_type and a.shape == b.shape and np.dtype(a.dtype) != np.dtype(b.dtype):
            new = dtypes.result_type(a, b)
            if np.dtype(new) == np.dtype(b.dtype):
                leaves[i] = lax.convert_element_type(x, new)
                changed = True
    return leaves, changed


# --------------------------------------------------------------------------- cond / switch

def _check_branch_outputs(api, name1, name2, f1, f2, tree1, avals1, tree2, avals2):
    info = f"{name1} is {_fun_info(f1)}\n{name2} is {_fun_info(f2)}\n\n"
    if tree1 != tree2:
        s1 = tree_util.tree_unflatten(tree1, list(avals1))
        s2 = tree_util.tree_unflatten(tree2, list(avals2))
        comp = lambda p: f" at path {tree_util.keystr(p)}" if p else ""  # noqa: E731
        diffs = []
        for p, a, b, why in _equality_errors((), s1, s2):
            a = "a pytree leaf" if a == str(ShapedArray) else a
            b = "a pytree leaf" if b == str(ShapedArray) else b
            diffs.append(
                f"{name1} output{comp(p)} is {'a ' if not a.startswith('a ') else ''}{a} but "
                f"{name2} output{comp(p)} is {'a ' if not b.startswith('a ') else ''}{b}, so {why}"
            )
        if not diffs:
            diffs = [
                f"{name1} output has structure {tree1} but {name2} output has structure {tree2}"
            ]
        differences = (f"{diffs[0]}.\n" if len(diffs) == 1 else
                       "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n")
        raise TypeError(
            f"{api} branch outputs must have the same pytree structure, but they differ:\n\n"
            f"{info}{differences}\nRevise {name1} and/or {name2} so that they have the same "
            f"pytree structure."
        )
    if not all(_typematch(p, q) for p, q in zip(avals1, avals2)):
        paths = [p for p, _ in tree_util.tree_flatten_with_path(
            tree_util.tree_unflatten(tree1, list(range(len(avals1)))))[0]]
        comp = lambda p: f" at path {tree_util.keystr(p)}" if p else ""  # noqa: E731
        diffs = [
            f"the output of {name1}{comp(p)} has type {_str(a)} but the corresponding output of "
            f"{name2} has type {_str(b)}{_mismatch_extra(a, b)}"
            for p, a, b in zip(paths, avals1, avals2)
            if not _typematch(a, b)
        ]
        differences = (f"{_capitalize(diffs[0])}.\n" if len(diffs) == 1 else
                       "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n")
        raise TypeError(
            f"{api} branches must have equal output types but they differ.\n\n{info}"
            f"{differences}\nRevise {name1} and/or {name2} so that all output types match."
        )


def _merge_consts(jaxprs, constss):
    """Branch jaxprs taking (all branches' consts, operands); consts deduplicated by identity."""
    allc, pos = [], {}
    for cs in constss:
        for c in cs:
            if id(c) not in pos:
                pos[id(c)] = len(allc)
                allc.append(c)
    out = []
    for j, cs in zip(jaxprs, constss):
        jj = j.jaxpr
        mine = {pos[id(c)]: v for c, v in zip(cs, jj.invars[:len(cs)])}
        lead = [mine[i] if i in mine else Var(_aval(c)) for i, c in enumerate(allc)]
        out.append(ClosedJaxpr(Jaxpr([], lead + jj.invars[len(cs):], jj.outvars, jj.eqns), []))
    return out, allc


def _forwarded(jaxprs):
    """Output positions every branch returns as the same input (JAX prunes these)."""
    fwd = []
    for k in range(len(jaxprs[0].jaxpr.outvars)):
        srcs = set()
        for j in jaxprs:
            o = j.jaxpr.outvars[k]
            ids = [i for i, v in enumerate(j.jaxpr.invars) if isinstance(o, Var) and v.id == o.id]
            srcs.add(ids[0] if ids else None)
        src = srcs.pop() if len(srcs) == 1 else None
        fwd.append(src)
    return fwd


def _prune_outputs(closed, keep):
    j = closed.jaxpr
    return ClosedJaxpr(
        Jaxpr(j.constvars, j.invars, [o for o, k in zip(j.outvars, keep) if k], j.eqns),
        closed.consts,
    )


def _cond_internal(index, funs, names, api, operands):
    leaves, in_tree = tree_util.tree_flatten((tuple(operands), {}))
    avals = [_aval(x) for x in leaves]
    traced, written = [], {}
    for f in funs:
        t, w = _refs.tracking(lambda: _trace(f, in_tree, avals, api,
                                             call=lambda f, a: f(*a[0], **a[1])))
        traced.append(t)
        written.update((id(r), r) for r in w)
    if written:                 # branches writing outer refs: thread their values
        refs = list(written.values())
        new_funs = [_with_refs_fun(refs, f) for f in funs]
        out, rv = _cond_internal(index, new_funs, names, api,
                                 tuple(operands) + ([r._value for r in refs],))
        _write_back(refs, rv)
        return out
    order = [1, 0] if api == "cond" else list(range(len(funs)))     # JAX names true_fun first
    for i in order[1:]:
        a, b = order[0], i
        _check_branch_outputs(api, names[a], names[b], funs[a], funs[b], traced[a][2], traced[a][4],
                              traced[b][2], traced[b][4])
    jaxprs, consts = _merge_consts([t[0] for t in traced], [t[1] for t in traced])
    ins = list(consts) + list(leaves)
    fwd = _forwarded(jaxprs)
    keep = [f is None for f in fwd]
    jaxprs = [_prune_outputs(j, keep) for j in jaxprs]
    outs = cond_p.bind(index, *ins, branches=tuple(jaxprs))
    it = iter(outs)
    res = []
    for f in fwd:
        x = None if f is None else ins[f]
        res.append(next(it) if f is None else x if isinstance(x, (Tracer, Array))
                   else dispatch.device_array(x))
    return tree_util.tree_unflatten(traced[0][2], res)


def _with_refs_fun(refs, f):
    """``f(*args)`` taking the values of ``refs`` as one more (last) argument and returning
    them after its own result."""
    def g(*args):
        with _refs.rebound(refs, args[-1]):
            out = f(*args[:-1])
            return out, [r._value for r in refs]
    g.__name__ = getattr(f, "__name__", "fun")
    return g


def _write_back(refs, values):
    for r, v in zip(refs, values):
        _refs.write(r, v)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _no_operand) -> Any:
    """``true_fun(*operands) if pred else false_fun(*operands)``, traced both ways (JAX's
    ``lax.cond``; also the old ``cond(pred, true_operand, true_fun, false_operand, false_fun)``)."""
    if not (callable(true_fun) and callable(false_fun)):
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if operand is not _no_operand:
        if operands:
            raise TypeError(
                "if 'operand' keyword is passed then no positional operands can be passed, "
                f"got operand={operand!r} and positional operands {operands}"
            )
        operands = (operand,)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, (list, tuple)) or np.ndim(pred) != 0:
        raise TypeError(
            f"Pred must be a scalar, got {pred} of "
            + (
                f"type {type(pred)}"
                if isinstance(pred, (list, tuple))
                else f"shape {np.shape(pred)}."
            )
        )
    try:
        pdt = dtypes.result_type(pred)
    except (TypeError, ValueError):
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from None
    if pdt.kind != "b":
        if pdt.kind in "iuf":
            pred = lax.ne(pred, lax._const(pred, 0))
        else:
            raise TypeError(f"Pred type must be either boolean or number, got {pdt}.")
    if _cfg.jax_disable_jit and is_concrete(pred):
        return true_fun(*operands) if bool(pred) else false_fun(*operands)
    index = lax.convert_element_type(pred, np.int32)
    return _cond_internal(index, (false_fun, true_fun), ("false_fun", "true_fun"), "cond", operands)


def _cond_internal_names(funs, api):
    return [f"branch {i}" if i == 0 else f"branch{i}" for i in range(len(funs))]


def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _no_operand) -> Any:
    """``branches[clamp(0, index, len(branches) - 1)](*operands)`` (JAX's ``lax.switch``)."""
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    if operand is not _no_operand:
        if operands:
            raise TypeError(
                "if 'operand' keyword is passed then no positional operands can be passed, "
                f"got operand={operand!r} and positional operands {operands}"
            )
        operands = (operand,)
    if len(np.shape(index)) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        idt = dtypes.result_type(index)
    except (TypeError, ValueError):
        raise TypeError(f"Index type must be an integer, got {index}.") from None
    if idt.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {idt}")
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = lax.convert_element_type(index, np.int32)
    index = lax.clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if _cfg.jax_disable_jit and is_concrete(index):
        return branches[int(index)](*operands)
    return _cond_internal(
        index, branches, _cond_internal_names(branches, "switch"), "switch", operands
    )


# --------------------------------------------------------------------------- while_loop

def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``while cond_fun(val): val = body_fun(val)`` as one primitive (JAX's ``lax.while_loop``)."""
    if not callable(cond_fun) or not callable(body_fun):
        raise TypeError("lax.while_loop: cond_fun and body_fun arguments should be callable.")
    if _cfg.jax_disable_jit:
        try:
            val = init_val
            while cond_fun(val):
                val = body_fun(val)
            return val
        except Exception:
            if not any(isinstance(x, Tracer) for x in tree_util.tree_leaves(init_val)):
                raise
    leaves, in_tree = tree_util.tree_flatten(init_val)
    written = {}

    def tracking(fun, avals):
        out, w = _refs.tracking(lambda: _trace_carry(fun, in_tree, avals, "while_loop"))
        written.update((id(r), r) for r in w)
        return out

    for attempt in range(2):
        avals = [_aval(x) for x in leaves]
        cj, cconsts, _, _, cout = tracking(cond_fun, avals)
        if len(cout) != 1 or cout[0].shape != () or np.dtype(cout[0].dtype) != np.bool_:
            raise TypeError(
                f"cond_fun must return a boolean scalar, but got output type(s) {list(cout)}."
            )
        bj, bconsts, out_tree, _, bout = tracking(body_fun, avals)
        if written:
            break
        if attempt == 0 and out_tree == in_tree:
            leaves, changed = _promote_weak(leaves, avals, bout)
            if changed:
                continue
        _check_carry_type(
            "while_loop body", body_fun, init_val, in_tree, avals, None, out_tree, bout
        )
        break
    if written:                 # the loop writes outer refs: carry their values
        refs = list(written.values())

        def cond2(carry):
            with _refs.rebound(refs, carry[1]):
                return cond_fun(carry[0])

        def body2(carry):
            with _refs.rebound(refs, carry[1]):
                out = body_fun(carry[0])
                return out, [r._value for r in refs]
        out, rv = while_loop(cond2, body2, (init_val, [r._value for r in refs]))
        _write_back(refs, rv)
        return out
    outs = while_p.bind(*cconsts, *bconsts, *leaves, cond_jaxpr=cj, body_jaxpr=bj,
                        cond_nconsts=len(cconsts), body_nconsts=len(bconsts))
    return tree_util.tree_unflatten(in_tree, list(outs))


def _trace_carry(fun, in_tree, avals, what):
    """Traces ``fun(carry)`` where ``carry`` is the unflattened tree."""
    box = []

    def flat(*tracers):
        out = fun(tree_util.tree_unflatten(in_tree, list(tracers)))
        leaves, tree = tree_util.tree_flatten(out)
        box.append(tree)
        return leaves

    closed = trace_flat(flat, list(avals), DebugInfo(what, fun))
    jaxpr, consts = lift_consts(closed)
    return jaxpr, consts, box[0], None, closed.out_avals


# --------------------------------------------------------------------------- scan / map

def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False) -> tuple[Any, Any]:
    """Loops ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``, stacking the ``y``s
    (JAX's ``lax.scan``): returns ``(final carry, stacked ys)``."""
    if not callable(f):
        raise TypeError("lax.scan: f argument should be callable.")
    xs_leaves, xs_tree = tree_util.tree_flatten(xs)
    length = _scan_length(xs_leaves, length)
    if isinstance(unroll, bool):
        unroll = max(length, 1) if unroll else 1
    unroll = int(unroll)
    if unroll < 1:
        raise ValueError("`unroll` must be a `bool` or a positive `int`.")

    if _cfg.jax_disable_jit and not any(isinstance(x, Tracer) for x in
                                        tree_util.tree_leaves((init, xs))):
        return _scan_python(f, init, xs_leaves, xs_tree, length, reverse)

    init_leaves, init_tree = tree_util.tree_flatten(init)
    (closed, init_leaves, yt), written = _refs.tracking(
        lambda: _trace_scan_body(f, init, init_leaves, init_tree, xs_leaves, xs_tree))
    if written:                 # the body writes outer refs: carry their values
        def f2(carry, x):
            with _refs.rebound(written, carry[1]):
                c, y = f(carry[0], x)
                return (c, [r._value for r in written]), y
        f2.__name__ = getattr(f, "__name__", "f")
        (c, rv), ys = scan(f2, (init, [r._value for r in written]), xs, length, reverse, unroll,
                           _split_transpose)
        _write_back(written, rv)
        return c, ys
    jaxpr, consts = lift_consts(closed)
    outs = scan_p.bind(
        *consts,
        *init_leaves,
        *xs_leaves,
        jaxpr=jaxpr,
        length=length,
        reverse=bool(reverse),
        num_consts=len(consts),
        num_carry=len(init_leaves),
        unroll=unroll,
        _split_transpose=bool(_split_transpose),
    )
    carry = tree_util.tree_unflatten(init_tree, list(outs[:len(init_leaves)]))
    ys = tree_util.tree_unflatten(yt, list(outs[len(init_leaves):]))
    return carry, ys


def _scan_length(xs_leaves, length) -> int:
    """The number of steps: ``length``, or the leading axis all ``xs`` leaves share."""
    try:
        lengths = [int(_aval(x).shape[0]) for x in xs_leaves]
    except IndexError:
        bad = next(x for x in xs_leaves if len(_aval(x).shape) == 0)
        raise ValueError(f"scan got value with no leading axis to scan over: {bad}.") from None
    if length is not None:
        try:
            length = int(length)
        except (TypeError, ValueError):
            raise TypeError(f"scan got a non-integer `length` argument: {length!r}") from None
        if not all(n == length for n in lengths):
            raise ValueError(
                f"scan got `length` argument of {length} which disagrees with leading axis "
                f"sizes {[int(n) for n in lengths]}."
            )
        return length
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(set(lengths)) != 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         + ", ".join(str(n) for n in lengths) + ".")
    return lengths[0]


def _trace_scan_body(f, init, init_leaves, init_tree, xs_leaves, xs_tree):
    """Traces ``f(carry, x)`` on the carry and one slice of ``xs``; a weakly typed carry
    that the body makes strongly typed is promoted and the body traced again (as JAX does).
    Returns the traced body, the (promoted) carry leaves and the tree of the ``y``s."""
    x_avals = [_aval(x).update(shape=_aval(x).shape[1:]) for x in xs_leaves]
    for attempt in range(2):
        c_avals = [_aval(x) for x in init_leaves]
        box = []

        def flat(*tracers):
            c = tree_util.tree_unflatten(init_tree, list(tracers[:len(c_avals)]))
            x = tree_util.tree_unflatten(xs_tree, list(tracers[len(c_avals):]))
            out = f(c, x)
            if not (isinstance(out, tuple) and len(out) == 2):
                try:
                    shown = "~" + _str(abstractify(out))
                except TypeError:
                    shown = tree_util.tree_map(lambda v: "~" + _str(abstractify(v)), out)
                raise TypeError(f"scan body output must be a pair, got {shown}.")
            cl, ct = tree_util.tree_flatten(out[0])
            yl, yt = tree_util.tree_flatten(out[1])
            box.append((ct, yt, len(cl)))
            return cl + yl

        closed = trace_flat(flat, c_avals + x_avals, DebugInfo("scan", f))
        ct, yt, ncl = box[0]
        out_avals = closed.out_avals
        if attempt == 0 and ct == init_tree:
            init_leaves, changed = _promote_weak(init_leaves, c_avals, out_avals[:ncl])
            if changed:
                continue
        _check_carry_type("scan body", f, init, init_tree, c_avals, None, ct, out_avals[:ncl])
        break
    return closed, init_leaves, yt


def _stack(vs):
    """``jnp.stack`` of one output per step (values of one dtype; Python scalars allowed)."""
    vs = [v if isinstance(v, (Tracer, Array)) else dispatch.device_array(v) for v in vs]
    return lax.concatenate([lax.expand_dims(v, (0,)) for v in vs], 0)


def _vmapped(f, n: int):
    """``vmap(f)`` over axis 0 of a pytree of size-``n`` leaves (the batching rewrite applied
    directly: this layer is below ``wjax.vmap``)."""
    def g(xs):
        leaves, tree = tree_util.tree_flatten(xs)
        avals = [_aval(x).update(shape=_aval(x).shape[1:]) for x in leaves]
        box = []

        def flat(*tracers):
            out_leaves, out_tree = tree_util.tree_flatten(
                f(tree_util.tree_unflatten(tree, list(tracers)))
            )
            box.append(out_tree)
            return out_leaves

        closed = trace_flat(flat, avals, DebugInfo("map", f))
        batched, _ = vmap_closed_jaxpr(closed, [0] * len(leaves), n, out_dims=0, axis_name=None)
        return tree_util.tree_unflatten(box[0], eval_jaxpr(batched.jaxpr, batched.consts, *leaves))
    return g


def _scan_python(f, init, xs_leaves, xs_tree, length, reverse):
    carry, ys = init, []
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        x = tree_util.tree_unflatten(xs_tree, [v[t] for v in xs_leaves])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    if not ys:
        raise ValueError("scan with disable_jit needs length > 0 to know the ys")
    stacked = tree_util.tree_map(lambda *v: _stack(v), *ys)
    return carry, stacked


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:
    """``f`` mapped over the leading axis of ``xs`` with a ``scan`` (JAX's ``lax.map``); with
    ``batch_size``, ``vmap`` over chunks of that size (and the remainder)."""
    if batch_size is not None:
        leaves, tree = tree_util.tree_flatten(xs)
        n = int(_aval(leaves[0]).shape[0])
        nb, rem = divmod(n, batch_size)
        main = [lax.reshape(lax.slice_in_dim(x, 0, nb * batch_size),
                            (nb, batch_size) + tuple(_aval(x).shape[1:])) for x in leaves]
        ys = None
        if nb:
            _, ys = scan(lambda _, x: ((), _vmapped(f, batch_size)(x)), (),
                         tree_util.tree_unflatten(tree, main))
            ys = tree_util.tree_map(
                lambda y: lax.reshape(y, (nb * batch_size,) + tuple(_aval(y).shape[2:])), ys)
        if rem:
            tail = _vmapped(f, rem)(tree_util.tree_unflatten(
                tree, [lax.slice_in_dim(x, nb * batch_size, n) for x in leaves]))
            ys = tail if ys is None else tree_util.tree_map(
                lambda a, b: lax.concatenate([a, b], 0), ys, tail)
        return ys
    _, ys = scan(lambda _, x: ((), f(x)), (), xs)
    return ys


# --------------------------------------------------------------------------- fori_loop

def _fori_scan_body_fun(body_fun):
    def scanned_fun(loop_carry, _):
        i, x = loop_carry
        return (i + 1, body_fun(i, x)), None
    scanned_fun.__name__ = getattr(body_fun, "__name__", "body_fun")
    return scanned_fun


def _fori_cond_fun(loop_carry):
    i, upper, _ = loop_carry
    return lax.lt(i, upper)


def _fori_body_fun(body_fun):
    def while_body_fun(loop_carry):
        i, upper, x = loop_carry
        return (i + 1, upper, body_fun(i, x))
    return while_body_fun


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)`` (JAX's ``lax.fori_loop``).
    Static bounds give a ``scan`` (reverse-differentiable); traced bounds a ``while_loop``."""
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    ldt, udt = dtypes.dtype(lower), dtypes.dtype(upper)
    if ldt == udt:
        dt = ldt
    else:
        dt = None
        if ldt.kind == "i" and udt.kind == "i":
            lw, uw = dtypes.is_weakly_typed(lower), dtypes.is_weakly_typed(upper)
            if lw and not uw:
                dt = udt
            elif uw and not lw:
                dt = ldt
        if dt is None:
            raise TypeError(f"lower and upper arguments to fori_loop must have equal types, got "
                            f"{ldt.name} and {udt.name}")
    use_scan = False
    if is_concrete(lower) and is_concrete(upper):
        try:
            lower_, upper_ = int(lower), int(upper)
            use_scan = True
        except (TypeError, ValueError):
            use_scan = False
    if use_scan:
        if unroll is None:
            unroll = False
        length = max(upper_ - lower_, 0)
        if _cfg.jax_disable_jit and length == 0:
            return init_val
        # as in JAX, the index is a (weakly typed) Python int: i32[] whatever the bounds' dtype
        (_, result), _ = scan(
            _fori_scan_body_fun(body_fun), (lower_, init_val), None, length=length, unroll=unroll
        )
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError(
            "Can only use `unroll` in `fori_loop` if the loop bounds are statically known."
        )
    if ldt != dt:
        lower = lax.convert_element_type(lower, dt)
    if udt != dt:
        upper = lax.convert_element_type(upper, dt)
    _, _, result = while_loop(_fori_cond_fun, _fori_body_fun(body_fun), (lower, upper, init_val))
    return result

