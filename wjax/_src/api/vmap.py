"""``vmap``: trace ``fun`` at the unbatched avals, rewrite the jaxpr (``transforms/vmap.py``),
and evaluate the result -- recorded into the enclosing trace (under ``jit``, ``grad``, another
``vmap``), or, eagerly, compiled into one program (``dispatch.run_closed``: an eager call traces
``fun`` again, but each distinct batched program is compiled once).
"""
from __future__ import annotations

import collections
import contextlib
import functools
import inspect
from typing import Any, Callable

import numpy as np

from .. import dispatch
from ..core import refs as _refs
from ..core import tree_util
from ..core.ir import Lit, abstractify
from ..core.tracing import (DebugInfo, arg_names_of, current_builder, eval_jaxpr, extend_axis_env,
                            trace_flat)
from ..transforms import batching
from ..transforms.vmap import batched_aval, vmap_jaxpr

def _check_axes_types(in_axes, out_axes):
    if not (in_axes is None or type(in_axes) in (int, tuple)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got {in_axes}.")
    for what, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        leaves = tree_util.tree_leaves(axes)
        if not all(type(l) is int or isinstance(l, np.integer) for l in leaves):
            raise TypeError(f"vmap {what} must be an int, None, or (nested) container "
                            f"with those types as leaves, but got {axes}.")


def _flatten_axes(what, axes, tree, shown_axes=None, shown_tree=None):
    try:
        return tree_util.broadcast_prefix(axes, tree, none_is_leaf=True)
    except ValueError as e:
        detail = str(e)
        if shown_tree is not None:  # name the positional arguments, not the (args, kwargs) pair
            try:
                tree_util.broadcast_prefix(shown_axes, shown_tree, none_is_leaf=True)
            except ValueError as e2:
                detail = str(e2)
            axes, tree = shown_axes, shown_tree
        raise ValueError(
            f"vmap {what} specification must be a tree prefix of the corresponding "
            f"value; got specification {axes} for value tree "
            f"{tree_util.tree_structure(tree)}.\n  Mismatch details: {detail}"
        ) from None


def _arg_paths(fun, args, kwargs):
    """One description per leaf, like JAX's: 'argument x of type float32[3]'."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = None
    out = []
    pairs, _ = tree_util.tree_flatten_with_path(tuple(args))
    for path, leaf in pairs:
        i = path[0].idx
        if params is None or i >= len(params):
            name = f"args{tree_util.keystr(path)}"
        else:
            name = f"argument {params[i]}" + tree_util.keystr(tuple(path[1:]))
        out.append(f"{name} of type {_type_str(leaf)}")
    pairs, _ = tree_util.tree_flatten_with_path(kwargs)
    for path, leaf in pairs:
        out.append(f"kwargs{tree_util.keystr(path)} of type {_type_str(leaf)}")
    return out


def _type_str(x):
    try:
        a = abstractify(x)
        return f"{np.dtype(a.dtype).name}[{','.join(map(str, a.shape))}]"
    except TypeError:
        return "unknown"


def _mapped_size(fun, args, kwargs, leaves, dims, axis_size):
    sizes = [None if d is None else abstractify(x).shape[d] for x, d in zip(leaves, dims)]
    distinct = sorted(
        {s for s in sizes if s is not None} | ({axis_size} if axis_size is not None else set())
    )
    if len(distinct) == 1:
        return distinct[0]
    if not distinct:
        raise ValueError("vmap must have at least one non-None value in in_axes or axis_size must "
                         "be specified")
    paths = _arg_paths(fun, args, kwargs)
    counts = collections.Counter(s for s in sizes if s is not None).most_common()
    msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
    if axis_size is not None:
        msg.append(f"  * the `axis_size` argument was {axis_size};\n")
    for k, (sz, ct) in enumerate(counts):
        i = sizes.index(sz)
        if ct == 1:
            msg.append(f"  * one axis had size {sz}: axis {dims[i]} of {paths[i]};\n")
        elif k == 0:
            msg.append(
                f"  * most axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of {paths[i]};\n"
            )
        else:
            msg.append(
                f"  * some axes ({ct} of them) had size {sz}, e.g. axis {dims[i]} of {paths[i]};\n"
            )
    raise ValueError("".join(msg)[:-2])


def _normalize_in_dim(x, d):
    if d is None:
        return None
    shape = abstractify(x).shape
    nd = len(shape)
    if not -nd <= d < nd:
        min_rank = d + 1 if d >= 0 else -d
        raise ValueError(f"vmap was requested to map its argument along axis {d}, which implies "
                         f"that its rank should be at least {min_rank}, but is only {nd} (its "
                         f"shape is {tuple(shape)})")
    return int(d) % nd


def _move_out(x, d, target, size, path):
    if target is None:
        if d is not None:
            raise ValueError(
                f"vmap has mapped output but out_axes is None (at vmap out_axes{path}, "
                f"got axis spec None but output was batched on axis {d})"
            )
        return x
    nd = batching.aval_of(x).ndim + (1 if d is None else 0)
    if not -nd <= target < nd:
        raise ValueError(f"axis {target} is out of bounds for array of dimension {nd}")
    return batching.move_batch_axis(x, d, int(target) % nd, size)


class _Vmapped:
    def __init__(self, fun, in_axes, out_axes, axis_name, axis_size, max_size=None):
        functools.update_wrapper(self, fun)
        self.fun, self.in_axes, self.out_axes = fun, in_axes, out_axes
        self.axis_name, self.axis_size = axis_name, axis_size
        self.max_size = max_size        # pmap: the number of devices

    def __call__(self, *args, **kwargs):
        in_axes = self.in_axes
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                "vmap in_axes must be an int, None, or a tuple of entries corresponding "
                "to the positional arguments passed to the function, but got "
                f"len(in_axes)={len(in_axes)}, len(args)={len(args)}"
            )
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        dims = _flatten_axes("in_axes", (in_axes, 0), (args, kwargs), in_axes, args)
        # refs passed in: mapped like their values; each example's writes come out as extra
        # results, written back into the refs
        ref_pos = [i for i, x in enumerate(leaves) if isinstance(x, _refs.RefCell)]
        refs = [leaves[i] for i in ref_pos]
        if ref_pos:
            leaves = [x._value if isinstance(x, _refs.RefCell) else x for x in leaves]
        dims = [_normalize_in_dim(x, d) for x, d in zip(leaves, dims)]
        size = _mapped_size(self.fun, args, kwargs, leaves, dims, self.axis_size)
        if self.max_size is not None and size > self.max_size:
            raise ValueError(f"compiling computation that requires {size} logical devices, but "
                             f"only {self.max_size} devices are available (pmap over an axis "
                             f"of size {size}; vmap with axis_name= runs the same collectives "
                             f"on one device)")
        avals = []
        for x, d in zip(leaves, dims):
            a = abstractify(x)
            if d is not None:
                a = a.update(shape=a.shape[:d] + a.shape[d + 1:])
            avals.append(a)
        out_tree_box = []

        def flat(*tracers):
            ins = list(tracers)
            for i, r in zip(ref_pos, refs):
                ins[i] = r
            a, kw = tree_util.tree_unflatten(in_tree, ins)
            with _refs.rebound(refs, [tracers[i] for i in ref_pos]):
                out = self.fun(*a, **kw)
                new_values = [r._value for r in refs]
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_tree_box.append(out_tree)
            return out_leaves + new_values

        per_arg = [len(tree_util.tree_leaves(a)) for a in args]
        names = arg_names_of(self.fun, per_arg) + [k for k in kwargs for _ in
                                                   tree_util.tree_leaves(kwargs[k])]
        # unmapped arguments and closed-over values keep their values (Python may branch on
        # them, as in JAX, where an op on unbatched values runs outside the vmap)
        with contextlib.ExitStack() as scope:
            if self.axis_name is not None:
                scope.enter_context(extend_axis_env(self.axis_name, size))
            closed, written = _refs.tracking(lambda: trace_flat(
                flat, avals, DebugInfo("vmap", self.fun, names),
                values=[x if d is None else None for x, d in zip(leaves, dims)]))
        if written:
            return self._merging(written, args, kwargs)
        out_tree = out_tree_box[0]
        dummy = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
        out_axes = _flatten_axes("out_axes", self.out_axes, dummy)
        paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(dummy)[0]]
        batched, out_dims = vmap_jaxpr(closed.jaxpr, dims, size, axis_name=self.axis_name)
        n_out = len(out_axes)
        for i, r, d in zip(ref_pos, refs, out_dims[n_out:]):
            if dims[i] is None and d is not None:
                raise Exception(   # JAX's exception class
                    "performing a set/swap operation with vmapped value on an unbatched array "
                    f"reference of type Ref{{{_refs._aval_text(r._value)}}}. Move the array "
                    "reference to be an argument to the vmapped function?")
        out_axes = list(out_axes) + [dims[i] for i in ref_pos]
        paths += [f"<ref argument {i}>" for i in ref_pos]

        def run(*xs):
            outs = eval_jaxpr(batched, closed.consts, *xs)
            outs = [a.operand if isinstance(a, Lit) else o for a, o in zip(batched.outvars, outs)]
            return [
                _move_out(o, d, t, size, p) for o, d, t, p in zip(outs, out_dims, out_axes, paths)
            ]

        if current_builder() is not None:
            outs = run(*leaves)
        else:
            in_avals = [batched_aval(a, d, size) for a, d in zip(avals, dims)]
            final = trace_flat(run, in_avals, DebugInfo("vmap", self.fun, names))
            outs = dispatch.run_closed(final, leaves, getattr(self.fun, "__name__", "vmap"))
        outs = list(outs)
        for r, v in zip(refs, outs[n_out:]):
            _refs.write(r, v)
        return tree_util.tree_unflatten(out_tree, outs[:n_out])

    def _merging(self, written, args, kwargs):
        """The call again, the refs the function closes over and writes (``written``) passed
        in unmapped and each example's new values out; where their class merges the
        examples' writes (``merge_batched``: checkify's error state, reduced as JAX reduces a
        batch of errors), the merged values are written back.  Any other ref written so is
        JAX's error."""
        for r in written:
            if not hasattr(type(r), "merge_batched"):
                raise Exception(   # JAX's exception class
                    "performing a set/swap operation with vmapped value on an unbatched array "
                    f"reference of type Ref{{{_refs._aval_text(r._value)}}}. Move the array "
                    "reference to be an argument to the vmapped function?")

        def fun(a, kw, values):
            with _refs.rebound(written, values):
                out = self.fun(*a, **kw)
                return out, [r._value for r in written]
        axes = tuple(self.in_axes) if isinstance(self.in_axes, (tuple, list)) else self.in_axes
        again = _Vmapped(fun, (axes, 0, None), (self.out_axes, 0), self.axis_name,
                         self.axis_size, self.max_size)
        out, examples = again(args, kwargs, [r._value for r in written])
        for r, v in zip(written, type(written[0]).merge_batched(written, examples)):
            _refs.write(r, v)
        return out

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: str | None = None,
         axis_size: int | None = None, spmd_axis_name=None) -> Callable:
    """Vectorizing map (JAX's ``jax.vmap``): ``fun`` mapped over the ``in_axes`` of its
    arguments, with the mapped axis of each output at ``out_axes``."""
    if not callable(fun):
        raise TypeError(f"vmap requires a callable, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_types(in_axes, out_axes)
    return _Vmapped(fun, in_axes, out_axes, axis_name, axis_size)
