"""``jax.shard_map`` (and ``jax.experimental.shard_map.shard_map``) and ``jax.pmap`` over the
devices of a mesh.

``shard_map(f, mesh=..., in_specs=..., out_specs=...)`` traces ``f`` once over the blocks its
``in_specs`` give each device (the mesh's axes bound as named axes, so ``lax.psum(x, 'i')``
and the other collectives name them) and binds one ``shard_map`` equation
(``wjax/_src/prims/shard_map.py``); it runs on every device of the mesh
(``wjax/_src/spmd.py``), eagerly or inside ``jit``, and differentiates as JAX's.  ``pmap`` is
a ``shard_map`` over a mesh of the first ``n`` devices that maps the leading axis away.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from .._src.api.jit import jit
from .._src.api.vmap import _check_axes_types
from .._src.array import Array, ShardedAval, all_devices
from .._src.core import ops, tree_util
from .._src.core.ir import abstractify
from .._src.core.mesh import AxisType, Mesh, get_mesh
from .._src.core.partition_spec import PartitionSpec, spec_axes
from .._src.core.tracing import DebugInfo, Tracer, current_builder
from .._src.prims.shard_map import block_aval, global_aval, mentioned, shard_map_p
from .._src.sharding_impls import IndivisibleError
from .._src.spmd import gather, run_eager, trace_body, vma_of

P = PartitionSpec


def _is_spec(x) -> bool:
    return x is None or isinstance(x, PartitionSpec)


def _broadcast_specs(specs, tree, what: str) -> list:
    """One spec per leaf of ``tree`` from a prefix tree of specs."""
    if _is_spec(specs):
        return [specs] * tree.num_leaves
    try:
        return tree_util.tree_flatten(
            tree_util.tree_map(lambda s, sub: [s] * len(tree_util.tree_leaves(sub)),
                               specs, tree_util.tree_unflatten(tree, [0] * tree.num_leaves),
                               is_leaf=_is_spec), is_leaf=lambda v: isinstance(v, list))[0]
    except (ValueError, TypeError) as e:
        raise ValueError(f"shard_map {what} must be a PartitionSpec or a pytree prefix of the "
                         f"{'arguments' if what == 'in_specs' else 'outputs'}: {e}") from None


def _flat(specs: list) -> list:
    out = []
    for s in specs:
        out.extend(s if isinstance(s, list) else [s])
    return out


def _arg_spec(x, mesh) -> PartitionSpec:
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShardedAval) and getattr(aval.sharding, "mesh", None) is not None \
            and tuple(aval.sharding.mesh.axis_names) == tuple(mesh.axis_names):
        return aval.sharding.spec
    return P()


def _explicit(mesh) -> set:
    return {a for a, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Explicit}


def _check_arg(x, spec, mesh, aval):
    """JAX's error for an argument whose explicit sharding differs from its in_spec."""
    ex = _explicit(mesh)
    if not ex or not isinstance(x, (Array, Tracer)):
        return
    if isinstance(x, Tracer) and not isinstance(x.aval, ShardedAval):
        return
    have = _arg_spec(x, mesh)
    want = tuple(tuple(a for a in spec_axes(p) if a in ex) or None for p in spec)
    got = tuple(tuple(a for a in spec_axes(p) if a in ex) or None for p in have)
    norm = lambda t: tuple(p for p in t) + (None,) * (aval.ndim - len(t))  # noqa: E731
    if norm(want) != norm(got):
        raise ValueError(
            f"in_specs passed to shard_map: {spec} does not match the specs of the input: "
            f"{_as_spec(have, aval.ndim)} for arg: {aval}. `in_specs` is an optional argument "
            f"so you can omit specifying it and shard_map will infer the in_specs from the "
            f"arguments. If you want to reshard your inputs, you can use `jax.reshard` on the "
            f"arguments and then pass those args to shard_map.")


def _as_spec(spec, ndim):
    parts = list(spec) + [None] * (ndim - len(spec))
    return P(*parts)


def _vma_error(fun, mesh, spec, axes):
    names = ", ".join(repr(a) for a in axes)
    return ValueError(
        f"shard_map applied to the function {getattr(fun, '__name__', fun)!r} was given "
        f"out_specs which require replication which can't be statically inferred given the "
        f"mesh:\n\nThe mesh given has shape {tuple(mesh.axis_sizes)} with corresponding axis "
        f"names {tuple(mesh.axis_names)}.\n\nout_specs is {spec} which implies that the "
        f"corresponding output value is replicated across mesh axis {names}, but could not "
        f"infer replication over any axes\n\nCheck if these output values are meant to be "
        f"replicated over those mesh axes. If not, consider revising the corresponding "
        f"out_specs entries. If so, consider disabling the check by passing the "
        f"check_vma=False argument to `jax.shard_map`.")


class _ShardMapped:
    def __init__(self, fun, mesh, in_specs, out_specs, check_vma, axis_names):
        functools.update_wrapper(self, fun)
        self.fun, self.mesh, self.in_specs, self.out_specs = fun, mesh, in_specs, out_specs
        self.check_vma = check_vma
        self.axis_names = frozenset(axis_names or ())

    def __call__(self, *args):
        mesh = self.mesh if self.mesh is not None else get_mesh()
        if mesh is None:
            raise ValueError("shard_map requires a mesh: pass mesh= or set one with "
                             "jax.set_mesh(mesh)")
        if not isinstance(mesh, Mesh):
            raise TypeError(f"shard_map requires a `jax.sharding.Mesh`, got {type(mesh)}")
        if self.axis_names and set(self.axis_names) != set(mesh.axis_names):
            raise NotImplementedError("shard_map over a subset of the mesh axes (axis_names=) "
                                      "is not supported by wjax yet")
        leaves, in_tree = tree_util.tree_flatten(args)
        if self.in_specs is None:
            in_specs = [_arg_spec(x, mesh) for x in leaves]
        else:
            specs = self.in_specs
            if isinstance(specs, list):
                specs = tuple(specs)
            if not _is_spec(specs) and isinstance(specs, tuple) and len(specs) != len(args):
                raise ValueError(f"shard_map in_specs has {len(specs)} entries for "
                                 f"{len(args)} arguments")
            in_specs = _flat(_broadcast_specs(specs, in_tree, "in_specs"))
        in_specs = [P() if s is None else s for s in in_specs]
        if current_builder() is None and not any(isinstance(x, Tracer) for x in leaves):
            for x, s in zip(leaves, in_specs):
                aval = abstractify(x)
                _check_spec(s, mesh, aval, "in_specs")
                if self.in_specs is not None:
                    _check_arg(x, s, mesh, aval)
            return self._eager(mesh, leaves, in_tree, in_specs)
        blocks = []
        for i, (x, s) in enumerate(zip(leaves, in_specs)):
            aval = abstractify(x)
            _check_spec(s, mesh, aval, "in_specs")
            if self.in_specs is not None:
                _check_arg(x, s, mesh, aval)
            blocks.append(block_aval(aval, s, mesh).strip_weak()
                          if not aval.weak_type else block_aval(aval, s, mesh))
        out_tree_box = []

        def flat(*tracers):
            out = self.fun(*tree_util.tree_unflatten(in_tree, list(tracers)))
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_tree_box.append(out_tree)
            return [ops._as_operand(o) for o in out_leaves]

        debug = DebugInfo("shard_map", self.fun)
        closed = trace_body(flat, blocks, mesh, debug,
                            in_vma=[mentioned(s) for s in in_specs])
        out_tree = out_tree_box[0]
        out_specs = self.out_specs
        if isinstance(out_specs, list):
            out_specs = tuple(out_specs)
        out_specs = _flat(_broadcast_specs(out_specs, out_tree, "out_specs"))
        out_specs = [P() if s is None else s for s in out_specs]
        for s, a in zip(out_specs, closed.out_avals):
            _check_out_spec(s, mesh, a)
        if self.check_vma:
            vma = vma_of(closed.jaxpr, [mentioned(s) for s in in_specs])
            for s, v in zip(out_specs, vma):
                missing = [a for a in mesh.axis_names if a in v and a not in mentioned(s)]
                if missing:
                    raise _vma_error(self.fun, mesh, s, missing)
        outs = shard_map_p.bind(*leaves, jaxpr=closed, mesh=mesh, in_specs=tuple(in_specs),
                                out_specs=tuple(out_specs), check_vma=bool(self.check_vma))
        return tree_util.tree_unflatten(out_tree, list(outs))


def _eager(self, mesh, leaves, in_tree, in_specs):
    """The body run eagerly, one primitive at a time on every device (prints show each
    device's block, as JAX's eager shard_map)."""
    blocks, vmas, out_tree = run_eager(self.fun, leaves, in_tree, in_specs, mesh)
    out_specs = self.out_specs
    if isinstance(out_specs, list):
        out_specs = tuple(out_specs)
    out_specs = _flat(_broadcast_specs(out_specs, out_tree, "out_specs"))
    out_specs = [P() if s is None else s for s in out_specs]
    outs = []
    for b, s, v in zip(blocks, out_specs, vmas):
        aval = next(iter(b.values())).aval
        _check_out_spec(s, mesh, aval)
        if self.check_vma:
            missing = [a for a in mesh.axis_names if a in v and a not in mentioned(s)]
            if missing:
                raise _vma_error(self.fun, mesh, s, missing)
        outs.append(gather(b, global_aval(aval, s, mesh), s, mesh))
    return tree_util.tree_unflatten(out_tree, outs)


_ShardMapped._eager = _eager


def _check_spec(spec, mesh, aval, what):
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"shard_map {what} entries must be PartitionSpecs, got {spec!r}")
    if len(spec) > aval.ndim:
        raise ValueError(f"shard_map {what} {spec} has more entries than the rank of the "
                         f"argument of shape {aval.shape}")
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    seen = set()
    for d, p in enumerate(spec):
        k = 1
        for a in spec_axes(p):
            if a not in sizes:
                raise ValueError(f"shard_map {what} {spec} names the axis {a!r}, which the "
                                 f"mesh {tuple(mesh.axis_names)} does not have")
            if a in seen:
                raise ValueError(f"shard_map {what} {spec} names the mesh axis {a!r} twice")
            seen.add(a)
            k *= sizes[a]
        if aval.shape[d] % k:
            raise ValueError(
                f"shard_map applied to the function was given argument arrays with axis sizes "
                f"that are not evenly divisible by the corresponding mesh axis sizes: the "
                f"{what} {spec} splits dimension {d} of shape {aval.shape} into {k} pieces")


def _check_out_spec(spec, mesh, aval):
    if not isinstance(spec, PartitionSpec):
        raise TypeError(f"shard_map out_specs entries must be PartitionSpecs, got {spec!r}")
    if len(spec) > aval.ndim:
        raise ValueError(f"shard_map out_specs {spec} has more entries than the rank of the "
                         f"output block of shape {aval.shape}")
    for p in spec:
        for a in spec_axes(p):
            if a not in mesh.axis_names:
                raise ValueError(f"shard_map out_specs {spec} names the axis {a!r}, which the "
                                 f"mesh {tuple(mesh.axis_names)} does not have")


def jax_shard_map(f: Callable | None = None, /, *, out_specs: Any, mesh: Mesh | None = None,
              in_specs: Any = None, axis_names: Any = frozenset(), check_vma: bool = True,
              check_rep: bool | None = None, auto: Any = frozenset()) -> Callable:
    """Maps ``f`` over the blocks of its arguments, one block per device of ``mesh`` (the
    current mesh when None); ``in_specs``/``out_specs`` (PartitionSpecs, pytree prefixes)
    say how arguments are split and results assembled.  Used as ``@jax.shard_map(...)`` too."""
    if check_rep is not None:
        check_vma = check_rep
    if f is None:
        return lambda g: jax_shard_map(g, out_specs=out_specs, mesh=mesh, in_specs=in_specs,
                                   axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable, got {f!r}")
    return _ShardMapped(f, mesh, in_specs, out_specs, check_vma, axis_names)


def shard_map(f, mesh=None, in_specs=None, out_specs=None, check_rep=True,
              auto=frozenset(), check_vma=None):
    """``jax.experimental.shard_map.shard_map(f, mesh, in_specs, out_specs)`` (JAX's older
    signature; ``jax.shard_map`` is ``jax_shard_map``)."""
    return jax_shard_map(f, out_specs=out_specs, mesh=mesh, in_specs=in_specs,
                     check_vma=check_rep if check_vma is None else check_vma)


# --------------------------------------------------------------------------- pmap

_PMAP_AXIS = "_internal_pmap_axis_name"


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: Any = (), devices: Any = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: Any = ()) -> Callable:
    """Maps ``fun`` over the leading (``in_axes``) axis of its arguments, one example per
    device: a ``shard_map`` over a mesh of the first ``n`` devices (``devices`` when given)."""
    if not callable(fun):
        raise TypeError(f"pmap requires a callable, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_types(in_axes, out_axes)
    static = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
              else tuple(static_broadcasted_argnums))
    name = _PMAP_AXIS if axis_name is None else axis_name

    @functools.wraps(fun)
    def run(*args, **kwargs):
        if kwargs:
            raise NotImplementedError("pmap with keyword arguments")
        dyn_idx = [i for i in range(len(args)) if i not in static]
        dyn = [args[i] for i in dyn_idx]
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"pmap in_axes has {len(axes)} entries for {len(args)} arguments")
        dyn_axes = [axes[i] for i in dyn_idx]
        leaves_axes = []
        for x, ax in zip(dyn, dyn_axes):
            n_leaves = len(tree_util.tree_leaves(x))
            if isinstance(ax, (int, type(None))):
                leaves_axes.extend([ax] * n_leaves)
            else:
                leaves_axes.extend(tree_util.tree_leaves(
                    tree_util.tree_map(lambda a, s: [a] * len(tree_util.tree_leaves(s)), ax,
                                       x, is_leaf=lambda a: a is None), is_leaf=lambda v:
                    isinstance(v, list)))
        leaves, tree = tree_util.tree_flatten(dyn)
        leaves_axes = [a if not isinstance(a, list) else a[0] for a in leaves_axes]
        sizes = {abstractify(x).shape[a] for x, a in zip(leaves, leaves_axes) if a is not None}
        if not sizes:
            if axis_size is None:
                raise ValueError("pmap requires at least one argument with a mapped axis")
            sizes = {axis_size}
        if len(sizes) > 1:
            raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: "
                             f"{sorted(sizes)}")
        n = sizes.pop()
        devs = list(devices) if devices is not None else all_devices()
        if n > len(devs):
            k = len(devs)
            shape = abstractify(leaves[[a is not None for a in leaves_axes].index(True)]).shape
            raise IndivisibleError(
                f"Sharding NamedSharding(mesh=Mesh('{name}': {k}, axis_types=(Auto,)), "
                f"spec=P('{name}',), memory_kind=device) implies that array axis 0 is "
                f"partitioned {k} times, but the dimension size is {n} (full shape: {shape}, "
                f"per-dimension tiling factors: [{k}] should evenly divide the shape)")
        mesh = Mesh(np.array(devs[:n], dtype=object), (name,))
        in_specs = tuple(P() if a is None else P(*([None] * (a % max(abstractify(x).ndim, 1))),
                                                   name)
                         for x, a in zip(leaves, leaves_axes))

        def body(*blocks):
            sq = [b if a is None else ops.squeeze(b, (a % max(b.ndim, 1),))
                  for b, a in zip(blocks, leaves_axes)]
            dargs = tree_util.tree_unflatten(tree, sq)
            full = list(args)
            for i, v in zip(dyn_idx, dargs):
                full[i] = v
            out = fun(*full)
            o_leaves, o_tree = tree_util.tree_flatten(out)
            oax = out_axes if isinstance(out_axes, (int, type(None))) else None
            body.out_tree = o_tree
            return [ops.expand_dims(ops._as_operand(o), (0 if oax is None else oax,))
                    for o in o_leaves]

        oax = out_axes if isinstance(out_axes, int) else 0
        flat_fun = jit(lambda *ls: jax_shard_map(body, mesh=mesh, in_specs=in_specs,
                                             out_specs=P(*([None] * oax), name),
                                             check_vma=False)(*ls))
        outs = flat_fun(*leaves)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        if out_axes is None:
            outs = [o[0] for o in outs]
        elif isinstance(out_axes, int) and out_axes < 0:
            raise NotImplementedError("pmap with a negative out_axes")
        return tree_util.tree_unflatten(body.out_tree, list(outs))
    return run


__all__ = ["jax_shard_map", "pmap", "shard_map"]
