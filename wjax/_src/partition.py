"""``jit`` (and eager operations) over sharded arrays: sharding propagation into per-device
programs.

A program whose operands include arrays sharded over a mesh (``NamedSharding``) is rewritten
into a ``shard_map`` body over their blocks, one equation at a time, each carrying a *spec*
(for each dimension, the mesh axes splitting it):

    elementwise ops        keep the operands' spec (an operand laid out otherwise is resharded)
    broadcast_in_dim,      move the spec with the dimensions
    transpose
    reduce_sum/max/min     reduce the block; a reduced dimension that was split becomes a
                           psum/pmax/pmin over its mesh axes (the result is replicated there)
    dot_general            batch and free dimensions keep their axes; contracting dimensions
                           split alike on both sides contract locally, then psum; otherwise
                           the operand is gathered first
    sharding_constraint    (``with_sharding_constraint``) reshards to its spec
    anything else          gathers its operands (all_gather) and runs on whole values: the
                           result is replicated

The body runs through ``wjax/_src/spmd.py`` like any shard_map (one program per stage, collectives
between); the results are arrays sharded by the propagated specs.  ``in_shardings`` and
``out_shardings`` of ``jit`` and ``with_sharding_constraint`` place values explicitly
(``wjax/_src/api/sharding.py``: the ``sharding_constraint`` primitive this module honours).
"""
from __future__ import annotations

import numpy as np

from . import dispatch
from .api.sharding import out_sharding_given, resolve, sharding_constraint_p
from .array import ShardedAval, put
from .core import caches, ops
from .core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, Var, jaxpr_key, short_dtype
from .core.mesh import get_mesh
from .core.partition_spec import PartitionSpec, spec_axes
from .core.primitive import Primitive
from .core.tracing import extend_axis_env, set_type_rule, trace_flat
from .prims import collective as C
from .prims.shard_map import block_aval
from .sharding_impls import NamedSharding
from .spmd import run_shard_map

_ELEMENTWISE_EXTRA = {"clamp", "convert_element_type", "fma", "integer_pow", "reduce_precision",
                      "round", "select_n", "stop_gradient", "name", "sharding_constraint"}
_REDUCE = {"reduce_sum": C.psum_p, "reduce_max": C.pmax_p, "reduce_min": C.pmin_p}


# --------------------------------------------------------------------------- specs

def _spec_of(x, mesh, ndim):
    sh = getattr(x, "_sharding", None)
    if isinstance(sh, NamedSharding) and sh.mesh == mesh and not sh.spec.unreduced:
        parts = list(sh.spec) + [None] * (ndim - len(sh.spec))
        return tuple(spec_axes(p) or None for p in parts)
    return (None,) * ndim


def _to_pspec(spec) -> PartitionSpec:
    parts = [None if not p else (p[0] if len(p) == 1 else tuple(p)) for p in spec]
    while parts and parts[-1] is None:
        parts.pop()
    return PartitionSpec(*parts)


class _Interp:
    """Interprets the global jaxpr over blocks (inside a trace of the body)."""

    def __init__(self, mesh, constrained=frozenset(), strict=False):
        self.mesh, self.strict = mesh, strict
        self.constrained = constrained      # variables a sharding constraint lays out
        self.sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))

    def block_shape(self, shape, spec):
        return tuple(n // int(np.prod([self.sizes[a] for a in (p or ())], dtype=np.int64))
                     for n, p in zip(shape, spec))

    # ------------------------------------------------------------ resharding
    def gather(self, x, spec):
        """The whole value from a block laid out by ``spec``."""
        for d, p in enumerate(spec):
            if p:
                x = C.all_gather_p.bind(x, axes=tuple(p), axis_size=int(np.prod(
                    [self.sizes[a] for a in p])), axis=d, tiled=True)
        return x

    def slice_to(self, x, spec):
        """This device's block of a whole (replicated) value under ``spec``."""
        for d, p in enumerate(spec):
            if not p:
                continue
            k = int(np.prod([self.sizes[a] for a in p]))
            idx = None
            for a in p:
                i = C.axis_index_p.bind(axes=(a,))
                idx = i if idx is None else ops.add(ops.mul(idx, np.int32(self.sizes[a])), i)
            n = ops._aval(x).shape[d] // k
            x = ops.dynamic_slice_in_dim(x, ops.mul(idx, np.int32(n)), n, d,
                                         allow_negative_indices=False)
        return x

    def reshard(self, x, have, want):
        if tuple(have) == tuple(want):
            return x
        return self.slice_to(self.gather(x, have), want)

    # ------------------------------------------------------------ rules
    def eqn(self, e, vals, specs):
        name = e.prim.name
        avals = [a.aval for a in e.invars]
        out_aval = e.outvars[0].aval if e.outvars else None
        if (not e.prim.multiple_results and (e.prim.table is not None
                                            or name in _ELEMENTWISE_EXTRA)
                and all(a.shape == out_aval.shape or a.ndim == 0 for a in avals)):
            if name == "sharding_constraint":
                want = _spec_of_sharding(e.params["sharding"], self.mesh, out_aval.ndim)
                if want is None:
                    return [vals[0]], [specs[0]]
                return [self.reshard(vals[0], specs[0], want)], [want]
            full = [(s, a) for s, a in zip(specs, avals) if a.ndim]
            if full:
                _check_legal(e.prim, [a for _, a in full], [s for s, _ in full], self.mesh)
            target = _merge([s for s, a in zip(specs, avals) if a.ndim], out_aval.ndim)
            args = [v if a.ndim == 0 else self.reshard(v, s, target)
                    for v, s, a in zip(vals, specs, avals)]
            return [e.prim.bind(*args, **e.params)], [tuple(target)]
        if name == "broadcast_in_dim":
            (x,), (s,) = vals, specs
            bd = e.params["broadcast_dimensions"]
            out = [None] * len(e.params["shape"])
            for i, d in enumerate(bd):
                if avals[0].shape[i] == e.params["shape"][d]:
                    out[d] = s[i]
                elif s[i]:
                    x = self.reshard(x, s, tuple(p if j != i else None for j, p in enumerate(s)))
            shape = self.block_shape(e.params["shape"], out)
            return [e.prim.bind(x, **dict(e.params, shape=shape))], [tuple(out)]
        if name == "transpose":
            perm = e.params["permutation"]
            return [e.prim.bind(vals[0], **e.params)], [tuple(specs[0][p] for p in perm)]
        if name in _REDUCE:
            axes = tuple(e.params["axes"])
            y = e.prim.bind(vals[0], **e.params)
            split = tuple(a for d in axes for a in (specs[0][d] or ()))
            if split:
                y = _REDUCE[name].bind(y, axes=split)
            return [y], [tuple(p for d, p in enumerate(specs[0]) if d not in axes)]
        if name == "dot_general":
            return self.dot(e, vals, specs, avals)
        # anything else: on whole values
        whole = [self.gather(v, s) if a.ndim else v for v, s, a in zip(vals, specs, avals)]
        outs = e.prim.bind(*whole, **e.params)
        outs = outs if e.prim.multiple_results else [outs]
        return list(outs), [(None,) * v.aval.ndim for v in e.outvars]

    def dot(self, e, vals, specs, avals):
        (lc, rc), (lb, rb) = e.params["dimension_numbers"]
        (x, y), (sx, sy) = vals, specs
        sx, sy = list(sx), list(sy)
        psum_axes = []
        for i, j in zip(lc, rc):                       # contracting dims
            if sx[i] and sx[i] == sy[j]:
                psum_axes.extend(sx[i])
            elif sx[i] or sy[j]:
                nx = list(sx)
                ny = list(sy)
                nx[i] = ny[j] = None
                x, y = self.reshard(x, sx, nx), self.reshard(y, sy, ny)
                sx, sy = nx, ny
        for i, j in zip(lb, rb):                       # batch dims must agree
            if sx[i] != sy[j]:
                ny = list(sy)
                ny[j] = sx[i]
                y = self.reshard(y, sy, ny)
                sy = ny
        lfree = [d for d in range(avals[0].ndim) if d not in lc and d not in lb]
        rfree = [d for d in range(avals[1].ndim) if d not in rc and d not in rb]
        used = set(psum_axes) | {a for i in lb for a in (sx[i] or ())} | {
            a for d in lfree for a in (sx[d] or ())}
        for d in rfree:                                # an axis used twice: gather rhs dim
            if sy[d] and used & set(sy[d]):
                ny = list(sy)
                ny[d] = None
                y = self.reshard(y, sy, ny)
                sy = ny
        explicit = _explicit_axes(self.mesh)
        if self.strict and set(psum_axes) & explicit and \
                not out_sharding_given.depth and e.outvars[0].id not in self.constrained:
            raise ValueError(
                "Contracting dimensions are sharded and it is ambiguous how the output should "
                "be sharded. Please specify the output sharding via the `out_sharding` "
                f"parameter. Got lhs_contracting_spec={tuple(psum_axes)} and "
                f"rhs_contracting_spec={tuple(psum_axes)}")
        out = e.prim.bind(x, y, **e.params)
        if psum_axes:
            out = C.psum_p.bind(out, axes=tuple(psum_axes))
        spec = [sx[i] for i in lb] + [sx[d] for d in lfree] + [sy[d] for d in rfree]
        return [out], [tuple(spec)]


def _merge(specs, ndim):
    """Per dimension, the operands' split (the first where they differ); an axis splits one
    dimension at most."""
    out, used = [], set()
    for d in range(ndim):
        p = next((s[d] for s in specs if s[d]), None)
        if p and used & set(p):
            p = None
        used |= set(p or ())
        out.append(p)
    return tuple(out)


def _spec_of_sharding(s, mesh, ndim):
    s = resolve(s)
    if isinstance(s, NamedSharding) and s.mesh == mesh:
        parts = list(s.spec) + [None] * (ndim - len(s.spec))
        return tuple(spec_axes(p) or None for p in parts)
    if isinstance(s, NamedSharding):
        return None
    return (None,) * ndim


_plans = caches.LRU(256)


def _mesh_of(arrays):
    mesh = None
    for a in arrays:
        sh = getattr(a, "_sharding", None)
        if isinstance(sh, NamedSharding):
            if mesh is None:
                mesh = sh.mesh
            elif sh.mesh != mesh:
                return None
    return mesh


def _constraint_mesh(jaxpr: Jaxpr):
    for e in jaxpr.eqns:
        if e.prim is sharding_constraint_p:
            s = resolve(e.params["sharding"])
            if isinstance(s, NamedSharding):
                return s.mesh
        if e.prim.call and isinstance(e.params.get("jaxpr"), ClosedJaxpr):
            m = _constraint_mesh(e.params["jaxpr"].jaxpr)
            if m is not None:
                return m
    return None


def run_sharded(closed: ClosedJaxpr, arrays: list, name: str, mesh=None, strict=False):
    """Runs ``closed`` over ``arrays`` (some sharded) as per-device programs; None when the
    arrays' shardings share no mesh (the caller then gathers them).  ``strict`` (an eager
    operation): an explicit-mode contraction over split dimensions without ``out_sharding``
    is JAX's error (under ``jit`` the result is replicated)."""
    mesh = mesh or _mesh_of(arrays)
    if mesh is None:
        return None
    consts = [dispatch.device_array(c) for c in closed.consts]
    ins = consts + list(arrays)
    jaxpr = Jaxpr([], closed.jaxpr.constvars + closed.jaxpr.invars, closed.jaxpr.outvars,
                  closed.jaxpr.eqns)
    specs = tuple(_spec_of(a, mesh, a.ndim) for a in ins)
    keep: list = []
    key = (jaxpr_key(jaxpr, keep), specs, mesh, bool(out_sharding_given.depth),
           tuple(sorted(_explicit_axes(mesh))), strict)
    hit = _plans.get(key)
    if hit is None:
        hit = _plans.put(key, _plan(jaxpr, specs, mesh, strict) + (keep,))
    body, out_specs = hit[0], hit[1]
    outs = run_shard_map(*ins, jaxpr=body, mesh=mesh,
                         in_specs=tuple(_to_pspec(s) for s in specs),
                         out_specs=tuple(_to_pspec(s) for s in out_specs), check_vma=False)
    # a result whose type carries another mesh's sharding (a constraint under
    # use_abstract_mesh) is laid out that way
    for i, v in enumerate(closed.jaxpr.outvars):
        want = getattr(getattr(v, "aval", None), "concrete_sharding", None)
        if isinstance(want, NamedSharding) and want.mesh != mesh:
            outs[i] = put(outs[i], want)
    return outs


def _plan(jaxpr: Jaxpr, specs, mesh, strict=False):
    """The per-device body of ``jaxpr`` for inputs laid out by ``specs``, and its outputs'
    specs."""
    eqns = list(_flat_eqns(jaxpr))
    constrained = {a.id for e in eqns if e.prim is sharding_constraint_p
                   for a in e.invars if isinstance(a, Var)}
    interp = _Interp(mesh, constrained, strict)
    blocks = [block_aval(v.aval, _to_pspec(s), mesh) for v, s in zip(jaxpr.invars, specs)]
    out_specs: list = []

    def body(*xs):
        env = {}
        for v, x, s in zip(jaxpr.invars, xs, specs):
            env[v.id] = (x, s)

        def rd(a):
            if isinstance(a, Lit):
                return a.val, (None,) * a.aval.ndim
            return env[a.id]
        for e in eqns:
            if e.prim is _alias_p:
                env[e.outvars[0].id] = rd(e.invars[0])
                continue
            args = [rd(a) for a in e.invars]
            outs, ospecs = interp.eqn(e, [a[0] for a in args], [a[1] for a in args])
            for v, o, s in zip(e.outvars, outs, ospecs):
                env[v.id] = (o, tuple(s))
        res = []
        for a in jaxpr.outvars:
            x, s = rd(a)
            out_specs.append(s)
            res.append(ops._as_operand(x))
        return res

    frames = list(zip(mesh.axis_names, mesh.axis_sizes))

    def go(i):
        if i == len(frames):
            return trace_flat(body, blocks)
        with extend_axis_env(*frames[i]):
            return go(i + 1)
    closed = go(0)
    return closed, tuple(out_specs)


def _flat_eqns(jaxpr: Jaxpr):
    """The equations with call equations (``pjit``) opened (their variables renamed)."""
    for e in jaxpr.eqns:
        if e.prim.call and isinstance(e.params.get("jaxpr"), ClosedJaxpr) and \
                not e.params["jaxpr"].consts:
            inner = e.params["jaxpr"].jaxpr
            sub = {v.id: a for v, a in zip(inner.invars, e.invars)}
            ren = {}
            for ie in _flat_eqns(inner):
                new_in = [sub.get(a.id, ren.get(a.id, a)) if isinstance(a, Var) else a
                          for a in ie.invars]
                new_out = [Var(v.aval) for v in ie.outvars]
                for v, w in zip(ie.outvars, new_out):
                    ren[v.id] = w
                yield type(ie)(ie.prim, new_in, new_out, ie.params, ie.source)
            for v, a in zip(e.outvars, inner.outvars):
                ren_a = sub.get(a.id, ren.get(a.id, a)) if isinstance(a, Var) else a
                yield _alias(v, ren_a)
        else:
            yield e


def _alias(v, a):
    """``v = a`` (an output of an opened call)."""
    return Eqn(_alias_p, [a], [v], {})


_alias_p = Primitive("wjax_alias", register=False)     # never bound: _plan reads it


def _short(aval) -> str:
    return str(aval).replace(np.dtype(aval.dtype).name, short_dtype(aval.dtype), 1)


def _explicit_axes(mesh) -> set:
    """The mesh's Explicit axes, as the current mesh (``jax.set_mesh``, ``auto_axes``) types
    them when it has the same axes."""
    cur = get_mesh()
    if cur is not None and tuple(cur.axis_names) == tuple(mesh.axis_names):
        mesh = cur
    return {a for a, t in zip(mesh.axis_names, mesh.axis_types)
            if getattr(t, "name", "") == "Explicit"}


def _type_rule(prim, avals, params, out):
    """Shardings in types while tracing: elementwise ops merge their operands' shardings
    (an explicit mesh axis splitting two dimensions is JAX's error); a sharding constraint
    gives its sharding."""
    if prim is sharding_constraint_p:
        s = resolve(params["sharding"])
        if isinstance(s, NamedSharding):
            return ShardedAval(out.shape, out.dtype, out.weak_type, s)
        return out
    if not (prim.table is not None or prim.name in _ELEMENTWISE_EXTRA):
        return out
    sharded = [a for a in avals if isinstance(a, ShardedAval)]
    if not sharded or any(a.shape != out.shape for a in sharded):
        return out
    mesh = sharded[0].concrete_sharding.mesh
    specs = [tuple(spec_axes(p) or None for p in
                   list(a.concrete_sharding.spec) + [None] * (a.ndim - len(
                       a.concrete_sharding.spec))) for a in sharded]
    _check_legal(prim, sharded, specs, mesh)
    return ShardedAval(out.shape, out.dtype, out.weak_type,
                       NamedSharding(mesh, _to_pspec(_merge(specs, out.ndim))))


def _check_legal(prim, avals, specs, mesh):
    ex = _explicit_axes(mesh)
    seen: dict = {}
    for d in range(len(specs[0])):
        for s in specs:
            for a in (s[d] or ()):
                if a in ex and seen.setdefault(a, d) != d:
                    dims = []
                    for k in range(len(specs[0])):
                        p = next((s2[k] for s2 in specs if s2[k]), None)
                        dims.append(f"{avals[0].shape[k]}@{p[0]}" if p else
                                    str(avals[0].shape[k]))
                    res = f"{short_dtype(avals[0].dtype)}[{','.join(dims)}]"
                    raise ValueError(
                        f"{prim.name} operation with inputs: "
                        f"{', '.join(_short(a) for a in avals)} produces an illegally sharded "
                        f"result: {res}")


def _hook(closed, arrays, name, eager=False):
    return run_sharded(closed, arrays, name, strict=eager)


dispatch._sharded_hook = _hook

_XLA_NAMES = {"psum": "all-reduce", "pmax": "all-reduce", "pmin": "all-reduce",
              "all_gather": "all-gather", "all_to_all": "all-to-all",
              "ppermute": "collective-permute", "axis_index": "partition-id"}


def program_text(closed: ClosedJaxpr):
    """The per-device program of ``closed`` for the shardings its input types carry, and its
    collectives under XLA's names (``all-reduce(...)``); None without sharded inputs."""
    invars = closed.jaxpr.constvars + closed.jaxpr.invars
    sharded = [getattr(v.aval, "concrete_sharding", None) for v in closed.jaxpr.invars]
    meshes = {s.mesh for s in sharded if isinstance(s, NamedSharding)}
    if len(meshes) != 1:
        return None
    mesh = meshes.pop()
    specs = tuple([(None,) * v.aval.ndim for v in closed.jaxpr.constvars] + [
        _spec_of(_Typed(v.aval), mesh, v.aval.ndim) for v in closed.jaxpr.invars])
    jaxpr = Jaxpr([], invars, closed.jaxpr.outvars, closed.jaxpr.eqns)
    body, out_specs = _plan(jaxpr, specs, mesh)
    lines = [f"// per-device program on mesh {mesh}, inputs "
             f"{[str(_to_pspec(s)) for s in specs]}, outputs "
             f"{[str(_to_pspec(s)) for s in out_specs]}", str(body.jaxpr)]
    for e in body.jaxpr.eqns:
        if e.prim.name in _XLA_NAMES:
            lines.append(f"{_XLA_NAMES[e.prim.name]}({', '.join(str(a) for a in e.invars)}), "
                         f"axes={e.params.get('axes')}")
    return "\n".join(lines)


class _Typed:
    """A stand-in with a type's sharding, for ``_spec_of``."""

    def __init__(self, aval):
        self._sharding = getattr(aval, "concrete_sharding", None)


dispatch._text_hook = program_text


class _Constrained:
    """A program over unsharded arrays whose sharding constraints lay values out."""

    def __init__(self, closed, name, mesh):
        self.closed, self.name, self.mesh = closed, name, mesh

    def __call__(self, arrays):
        return run_sharded(self.closed, arrays, self.name, self.mesh)


_shard_map_programs = dispatch._program_hook


def _program(closed, name):
    prog = _shard_map_programs(closed, name) if _shard_map_programs is not None else None
    if prog is None:
        mesh = _constraint_mesh(closed.jaxpr)
        if mesh is not None:
            return _Constrained(closed, name, mesh)
    return prog


dispatch._program_hook = _program
set_type_rule(_type_rule)

