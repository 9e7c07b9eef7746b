"""Programs over several devices: ``shard_map`` bodies run on every device of their mesh.

    shard_map eqn  ->  scatter operands into per-device blocks (no copy when an operand is
                       already sharded that way), then the body in *stages*: each run of
                       equations between two collectives is one program, compiled once
                       (devices of one adapter share executables) and run on every device;
                       each collective is a host step: the devices' operands are read back,
                       combined (across processes by the communicator: MPI under
                       ``jax.distributed``), and the results uploaded to each device
    program        ->  ``Program``: a jitted jaxpr holding shard_map equations (calls inlined)
                       runs its other equations as ordinary programs between them

Collectives that sit inside loops or conds of a body (a ``scan`` whose step calls ``ppermute``)
cannot be split into stages: such a body runs on the first device of the mesh as a ``vmap``
over the mesh axes (the collectives' batching rules), then its blocks are scattered.

``STATS`` counts, per collective, the steps run and the bytes moved between device and host
memory (and between processes): ``bench/bench_devices.py`` reports them.
"""
from __future__ import annotations

import collections
import contextlib
import threading

import numpy as np

from . import dispatch
from .array import Array, from_host, on_device
from .backend import passes
from .core import caches, tree_util
from .core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, ShapedArray, Var, raise_to_shaped
from .core.partition_spec import PartitionSpec, spec_axes
from .core.tracing import (Tracer, current_builder, eval_jaxpr, extend_axis_env, set_manual_hook,
                           trace_flat)
from .prims import collective as C
from .prims.shard_map import global_aval, mentioned, pvary_p, shard_map_p
from .sharding_impls import NamedSharding, current_sharding
from .transforms.vmap import vmap_closed_jaxpr

STATS: collections.Counter = collections.Counter()

_COLLECTIVES = {C.psum_p, C.pmax_p, C.pmin_p, C.all_gather_p, C.all_to_all_p, C.ppermute_p,
                C.axis_index_p, pvary_p}


class LocalComm:
    """One process: nothing to exchange."""
    rank, size = 0, 1

    def allgather(self, obj):
        return [obj]


comm = [LocalComm()]     # replaced by jax.distributed.initialize (wjax/distributed.py)


# --------------------------------------------------------------------------- collectives

def _groups(mesh, axes):
    """For each device id: (its group's device ids in the order of ``axes``, its position)."""
    names = list(mesh.axis_names)
    pos = [names.index(a) for a in axes]
    groups: dict = {}
    for c, d in np.ndenumerate(mesh.devices):
        rest = tuple(x for i, x in enumerate(c) if i not in pos)
        j = 0
        for i in pos:
            j = j * mesh.devices.shape[i] + c[i]
        groups.setdefault(rest, {})[j] = d.id
    out = {}
    for g in groups.values():
        ids = [g[j] for j in sorted(g)]
        for j, i in enumerate(ids):
            out[i] = (ids, j)
    return out


def _combine(prim, params, blocks: dict, mesh, want: list) -> dict:
    """The collective ``prim`` over the blocks of every device: the results of ``want``."""
    axes = params["axes"]
    groups = _groups(mesh, axes)
    out = {}
    for d in want:
        ids, j = groups[d]
        if prim is C.axis_index_p:
            out[d] = np.asarray(j, np.int32)
            continue
        xs = [blocks[i] for i in ids]
        if prim is C.psum_p:
            out[d] = np.sum(np.stack(xs), axis=0).astype(xs[0].dtype)
        elif prim is C.pmax_p:
            out[d] = np.max(np.stack(xs), axis=0)
        elif prim is C.pmin_p:
            out[d] = np.min(np.stack(xs), axis=0)
        elif prim is C.all_gather_p:
            ax = params["axis"]
            out[d] = np.concatenate(xs, ax) if params["tiled"] else np.stack(xs, ax)
        elif prim is C.all_to_all_p:
            n, s, c = len(xs), params["split_axis"], params["concat_axis"]
            if params["tiled"]:
                out[d] = np.concatenate([np.split(x, n, axis=s)[j] for x in xs], axis=c)
            else:
                out[d] = np.stack([np.take(x, j, axis=s) for x in xs], axis=c)
        elif prim is C.ppermute_p:
            src = {dst: s for s, dst in params["perm"]}
            out[d] = xs[src[j]] if j in src else np.zeros_like(xs[j])
        else:
            raise NotImplementedError(f"collective {prim.name} across devices")
    return out


def _collective_step(eqn, vals: dict, mesh) -> dict:
    """Runs one collective equation: ``vals`` maps device id -> this device's operand (an
    Array); returns device id -> result Array on that device."""
    prim = eqn.prim
    local = [d for d in mesh.devices.flat if d.is_addressable]
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    if prim is pvary_p or (prim in (C.psum_p, C.pmax_p, C.pmin_p) and all(
            sizes[a] == 1 for a in eqn.params["axes"])):
        return vals        # a reduction over one device is the value itself
    moved = 0
    host = {}
    for d in local:
        if prim is not C.axis_index_p:
            host[d.id] = np.asarray(vals[d.id])
            moved += host[d.id].nbytes
    if comm[0].size > 1 and prim is not C.axis_index_p:
        parts = comm[0].allgather(host)
        for p in parts:
            host.update(p)
        moved += sum(v.nbytes for p in parts for v in p.values()) - sum(
            v.nbytes for v in parts[comm[0].rank].values())
    res = _combine(prim, eqn.params, host, mesh, [d.id for d in local])
    out = {}
    aval = eqn.outvars[0].aval
    for d in local:
        r = np.asarray(res[d.id], aval.dtype).reshape(aval.shape)
        moved += r.nbytes
        out[d.id] = from_host(r, aval, d)
    STATS[(prim.name, "steps")] += 1
    STATS[(prim.name, "bytes")] += moved
    return out


# --------------------------------------------------------------------------- bodies

def _has_nested_collective(jaxpr: Jaxpr) -> bool:
    for e in jaxpr.eqns:
        for v in e.params.values():
            inner = v.jaxpr if isinstance(v, ClosedJaxpr) else v if isinstance(v, Jaxpr) \
                else None
            if inner is None and isinstance(v, (tuple, list)):
                for w in v:
                    j = w.jaxpr if isinstance(w, ClosedJaxpr) else w
                    if isinstance(j, Jaxpr) and _uses_collective(j):
                        return True
                continue
            if inner is not None and _uses_collective(inner):
                return True
    return False


def _uses_collective(jaxpr: Jaxpr) -> bool:
    return any(e.prim in _COLLECTIVES for e in jaxpr.eqns) or _has_nested_collective(jaxpr)


class _Stage:
    """A run of body equations without collectives: one program for every device."""

    def __init__(self, eqns, ins, outs):
        self.ins, self.outs = ins, outs
        self.closed = ClosedJaxpr(Jaxpr([], ins, outs, eqns), [])
        self.compiled = None

    def run(self, env, devices):
        if self.compiled is None:
            self.compiled = dispatch.Compiled(self.closed, "shard_map_stage")
        for d in devices:
            args = [env[v.id][d.id] for v in self.ins]
            for v, r in zip(self.outs, self.compiled(args)):
                env.setdefault(v.id, {})[d.id] = r


class Body:
    """A shard_map body prepared to run on its mesh: stages and collective steps."""

    def __init__(self, closed: ClosedJaxpr, mesh):
        self.mesh = mesh
        flat, consts = passes.flatten_closed(closed)
        self.jaxpr, self.consts = flat, consts
        self.simulate = _has_nested_collective(flat)
        self.steps: list = []
        if not self.simulate:
            self._split()

    def _split(self):
        j = self.jaxpr
        later_uses: list[set] = []
        need = {a.id for a in j.outvars if isinstance(a, Var)}
        for e in reversed(j.eqns):
            later_uses.append(set(need))
            need |= {a.id for a in e.invars if isinstance(a, Var)}
        later_uses.reverse()
        run: list = []

        def close(i_end):
            if not run:
                return
            ins = passes.run_inputs(run)
            after = later_uses[i_end - 1]
            outs = [v for e in run for v in e.outvars if v.id in after]
            self.steps.append(_Stage(list(run), ins, outs))
            run.clear()

        for i, e in enumerate(j.eqns):
            if e.prim in _COLLECTIVES:
                close(i)
                self.steps.append(e)
            else:
                run.append(e)
        close(len(j.eqns))

    def run(self, blocks: list) -> list:
        """``blocks``: per input, device id -> Array; returns the same per output."""
        if self.simulate:
            return self._simulated(blocks)
        devices = [d for d in self.mesh.devices.flat if d.is_addressable]
        env: dict = {}
        for v, c in zip(self.jaxpr.constvars, self.consts):
            env[v.id] = {d.id: _const_on(c, v.aval, d) for d in devices}
        for v, b in zip(self.jaxpr.invars, blocks):
            env[v.id] = b
        for step in self.steps:
            if isinstance(step, _Stage):
                step.run(env, devices)
                continue
            a = step.invars[0] if step.invars else None
            if isinstance(a, Lit):
                vals = {d.id: _const_on(a.val, a.aval, d) for d in devices}
            else:
                vals = env[a.id] if a is not None else {}
            env[step.outvars[0].id] = _collective_step(step, vals, self.mesh)
        out = []
        for a in self.jaxpr.outvars:
            if isinstance(a, Lit):
                out.append({d.id: _const_on(a.val, a.aval, d) for d in devices})
            else:
                out.append(env[a.id])
        return out

    def _simulated(self, blocks: list) -> list:
        """The body as nested vmaps over the mesh axes, on the mesh's first device."""
        if comm[0].size > 1:
            raise NotImplementedError("shard_map: collectives inside loops or conds of the "
                                      "body are not supported across processes")
        mesh = self.mesh
        shape = mesh.devices.shape
        closed = ClosedJaxpr(self.jaxpr, self.consts)
        for name, size in reversed(list(zip(mesh.axis_names, shape))):
            closed, _ = vmap_closed_jaxpr(closed, [0] * len(closed.in_avals), size,
                                          out_dims=[0] * len(closed.out_avals),
                                          axis_name=name)
        first = mesh.devices.flat[0]
        stacked = []
        for b in blocks:
            host = np.stack([np.asarray(b[d.id]) for d in mesh.devices.flat])
            stacked.append(host.reshape(shape + host.shape[1:]))
        outs = dispatch.Compiled(closed, "shard_map")(
            [from_host(x, None, first) for x in stacked])
        res = []
        for o, a in zip(outs, self.jaxpr.outvars):
            host = np.asarray(o).reshape((-1,) + tuple(a.aval.shape))
            res.append({d.id: from_host(host[i], a.aval, d)
                        for i, d in enumerate(mesh.devices.flat) if d.is_addressable})
        STATS[("simulated", "steps")] += 1
        return res


def _const_on(value, aval, device) -> Array:
    if isinstance(value, Array):
        return on_device(value, device)
    return from_host(np.asarray(value, aval.dtype, aval), device)


# --------------------------------------------------------------------------- shard_map

_bodies = caches.Memo(256)      # prepared bodies, per body jaxpr (identity) and mesh


def _body(closed: ClosedJaxpr, mesh) -> Body:
    return _bodies.get_or_make((closed,), mesh, lambda: Body(closed, mesh))


def scatter(x, spec, mesh) -> dict:
    """Device id -> the block of ``x`` that ``spec`` gives each addressable device."""
    x = dispatch.device_array(x)
    sh = NamedSharding(mesh, spec)
    devices = [d for d in mesh.devices.flat if d.is_addressable]
    if x._shards is not None and x._sharding == sh:
        return {d.id: x._shards[d.id] for d in devices}
    if len(mesh.devices.flat) == 1:
        return {devices[0].id: on_device(x, devices[0])}
    if x._shards is not None and not x._sharding.is_fully_replicated and \
            x._sharding.is_fully_addressable is False:
        raise NotImplementedError("shard_map: resharding an operand held by other processes")
    idx = sh.devices_indices_map(x.shape)
    host = None
    out = {}
    for d in devices:
        if x._shards is not None and d.id in x._shards and x._sharding.is_fully_replicated \
                and not any(spec_axes(p) for p in spec):
            out[d.id] = x._shards[d.id]
            continue
        if host is None:
            host = np.asarray(x)
        piece = np.ascontiguousarray(host[idx[d]])
        out[d.id] = from_host(piece, x.aval.update(shape=piece.shape), d)
    return out


def gather(blocks: dict, aval, spec, mesh) -> Array:
    """The global array whose blocks (device id -> Array) ``spec`` lays out on ``mesh``."""
    if len(mesh.devices.flat) == 1:
        return next(iter(blocks.values()))
    return Array.sharded(aval, NamedSharding(mesh, spec), blocks)


def run_shard_map(*args, jaxpr, mesh, in_specs, out_specs, check_vma):
    body = _body(jaxpr, mesh)
    blocks = [scatter(a, s, mesh) for a, s in zip(args, in_specs)]
    outs = body.run(blocks)
    return [gather(b, global_aval(a, s, mesh), s, mesh)
            for b, a, s in zip(outs, jaxpr.out_avals, out_specs)]


shard_map_p.impl = run_shard_map


# --------------------------------------------------------------------------- programs

def _contains_shard_map(jaxpr: Jaxpr) -> bool:
    for e in jaxpr.eqns:
        if e.prim is shard_map_p:
            return True
        if e.prim.call and isinstance(e.params.get("jaxpr"), ClosedJaxpr) and \
                _contains_shard_map(e.params["jaxpr"].jaxpr):
            return True
    return False


class Program:
    """A jaxpr with shard_map equations: its other equations run as ordinary programs (over
    the arrays' gathered values, or through ``jit`` over sharded arrays), each shard_map on
    its mesh."""

    def __init__(self, closed: ClosedJaxpr, name: str):
        flat, consts = passes.flatten_closed(closed)
        self.jaxpr, self.consts, self.name = flat, consts, name
        self.steps: list = []
        run: list = []
        later: list = []
        need = {a.id for a in flat.outvars if isinstance(a, Var)}
        for e in reversed(flat.eqns):
            later.append(set(need))
            need |= {a.id for a in e.invars if isinstance(a, Var)}
        later.reverse()

        def close(i_end):
            if not run:
                return
            ins = passes.run_inputs(run)
            outs = [v for e in run for v in e.outvars if v.id in later[i_end - 1]]
            self.steps.append(("seg", ClosedJaxpr(Jaxpr([], ins, outs, list(run)), []), ins,
                               outs, [None]))
            run.clear()

        for i, e in enumerate(flat.eqns):
            if e.prim is shard_map_p:
                close(i)
                self.steps.append(("smap", e))
            else:
                run.append(e)
        close(len(flat.eqns))

    def __call__(self, arrays: list) -> list:
        env: dict = {}

        def rd(a):
            return a.val if isinstance(a, Lit) else env[a.id]

        for v, c in zip(self.jaxpr.constvars, self.consts):
            env[v.id] = c
        for v, x in zip(self.jaxpr.invars, arrays):
            env[v.id] = x
        for step in self.steps:
            if step[0] == "seg":
                _, closed, ins, outs, cache = step
                if cache[0] is None:
                    cache[0] = dispatch.Compiled(closed, self.name)
                for v, r in zip(outs, cache[0]([dispatch.device_array(env[a.id])
                                                for a in ins])):
                    env[v.id] = r
            else:
                e = step[1]
                res = run_shard_map(*[rd(a) for a in e.invars], **e.params)
                for v, r in zip(e.outvars, res):
                    env[v.id] = r
        return [dispatch.device_array(rd(a)) for a in self.jaxpr.outvars]


def _program(closed: ClosedJaxpr, name: str):
    return Program(closed, name) if _contains_shard_map(closed.jaxpr) else None


dispatch._program_hook = _program


# --------------------------------------------------------------------------- tracing helpers

def trace_body(fun_flat, block_avals, mesh, debug=None, in_vma=None) -> ClosedJaxpr:
    """Traces a shard_map body over blocks with the mesh's axes bound as named axes
    (``in_vma``: the axes each input varies over, for ``jax.typeof`` in the body)."""
    frames = list(zip(mesh.axis_names, mesh.axis_sizes))

    def traced(*tracers):
        b = current_builder()
        b.vma_axes, b.vma_inputs = tuple(mesh.axis_names), list(in_vma or [()] * len(tracers))
        return fun_flat(*tracers)

    def go(i):
        if i == len(frames):
            return trace_flat(traced, block_avals, debug)
        with extend_axis_env(*frames[i]):
            return go(i + 1)
    return go(0)



# --------------------------------------------------------------------------- out_sharding

def resolve_sharding(s):
    """A sharding from what JAX accepts where one is expected (a ``P`` over the current mesh)."""
    return current_sharding(s) if isinstance(s, PartitionSpec) else s




# --------------------------------------------------------------------------- typeof in bodies

class ManualAxisType:
    def __init__(self, varying):
        self.varying = frozenset(varying)

    def __repr__(self):
        return f"ManualAxisType(varying={set(self.varying)})"


class VmaAval(ShapedArray):
    """The type of a value inside a ``shard_map`` body: its aval and the mesh axes it may vary
    over (``float32[3]{V:i}``; ``jax.typeof(x).manual_axis_type.varying``)."""

    __slots__ = ("vma", "axis_order")

    def __init__(self, aval, vma, axis_order):
        super().__init__(aval.shape, aval.dtype, aval.weak_type)
        self.vma, self.axis_order = frozenset(vma), tuple(axis_order)

    @property
    def manual_axis_type(self):
        return ManualAxisType(self.vma)

    def __str__(self):
        base = ShapedArray.__str__(self)
        if not self.vma:
            return base
        names = [a for a in self.axis_order if a in self.vma]
        return base + ("{V:" + names[0] + "}" if len(names) == 1 else
                       "{V:(" + ",".join(names) + ")}")

    def __repr__(self):
        return f"ShapedArray({self})"


def vma_of(jaxpr, in_vma: list) -> list:
    """The mesh axes each output of a body may vary over (JAX's ``check_vma`` inference)."""
    env = {v.id: set(s) for v, s in zip(jaxpr.invars, in_vma)}
    for v in jaxpr.constvars:
        env.setdefault(v.id, set())

    def rd(a):
        return env.get(getattr(a, "id", None), set())

    for e in jaxpr.eqns:
        ins = set().union(*[rd(a) for a in e.invars]) if e.invars else set()
        axes = set(e.params.get("axes", ()) or ())
        if e.prim in (C.psum_p, C.pmax_p, C.pmin_p):
            out = ins - axes
        elif e.prim in (C.all_gather_p, C.all_to_all_p, C.ppermute_p, C.axis_index_p, pvary_p):
            out = ins | axes
        else:
            out = ins
        for v in e.outvars:
            env[v.id] = set(out)
    return [rd(a) for a in jaxpr.outvars]


def vma_typeof(x):
    """``jax.typeof`` of a tracer of a shard_map body (None for any other value)."""
    if isinstance(x, Manual):
        return VmaAval(x.aval, x.vma, x.mesh.axis_names)
    b = getattr(x, "builder", None)
    order = getattr(b, "vma_axes", None)
    if order is None:
        return None
    jaxpr = Jaxpr(b.constvars, b.invars, [x._var], list(b.eqns))
    return VmaAval(x.aval, vma_of(jaxpr, b.vma_inputs)[0], order)


# --------------------------------------------------------------------------- eager bodies

class Manual(Tracer):
    """A value of a shard_map body run eagerly: one block per device of the mesh (JAX's
    eager shard_map); printing it shows each device's block."""

    __slots__ = ("blocks", "mesh", "vma")

    def __init__(self, aval, blocks: dict, mesh, vma=frozenset()):
        super().__init__(aval, None, None)
        self.blocks, self.mesh, self.vma = blocks, mesh, frozenset(vma)

    def __str__(self):
        names = "(" + ", ".join(self.mesh.axis_names) + ",)"
        parts = []
        for c, d in np.ndenumerate(self.mesh.devices):
            if d.is_addressable:
                coords = str(tuple(int(i) for i in c))
                parts.append(f"On {d} at mesh coordinates {names} = {coords}:\n"
                             f"{np.asarray(self.blocks[d.id])}\n")
        return "\n".join(parts)

    __repr__ = __str__

    def to_concrete_value(self):
        return None

    def _concrete_error(self, cls, what, hint):
        return cls(f"Attempted {what} of a value of a shard_map body, which differs from "
                   f"device to device ({self.aval.str_short()}).\n{hint}")


class _ManualHook:
    """Runs primitives over Manual values while an eager shard_map body runs."""

    def __init__(self):
        self._local = threading.local()

    @property
    def active(self) -> bool:
        return bool(getattr(self._local, "meshes", None))

    def push(self, mesh):
        self._local.__dict__.setdefault("meshes", []).append(mesh)

    def pop(self):
        self._local.meshes.pop()

    def __call__(self, prim, args, params):
        mesh = self._local.meshes[-1]
        devices = [d for d in mesh.devices.flat if d.is_addressable]
        vma = frozenset().union(*[a.vma for a in args if isinstance(a, Manual)])

        def block(a, d):
            return a.blocks[d.id] if isinstance(a, Manual) else a

        if prim in _COLLECTIVES:
            x = args[0] if args else None
            vals = {d.id: _on_dev(dispatch.device_array(block(x, d)), d)
                    for d in devices} if x is not None else {}
            out_aval = prim.abstract_eval(*[_aval_of(a) for a in args], **params)

            class _E:     # the equation _collective_step reads
                pass
            e = _E()
            e.prim, e.params = prim, params
            e.outvars = [Var(out_aval)]
            res = _collective_step(e, vals, mesh)
            axes = set(params.get("axes", ()))
            out_vma = vma - axes if prim in (C.psum_p, C.pmax_p, C.pmin_p) else vma | axes
            return Manual(out_aval, res, mesh, out_vma)
        if prim.call and isinstance(params.get("jaxpr"), ClosedJaxpr) and \
                _uses_collective(params["jaxpr"].jaxpr):
            inner = params["jaxpr"]
            outs = eval_jaxpr(inner.jaxpr, inner.consts, *args)
            return outs if prim.multiple_results else outs[0]
        if _has_nested_collective(Jaxpr([], [], [], [_probe(prim, params)])):
            return self._one_body(prim, args, params, mesh, vma)
        saved, self._local.meshes = self._local.meshes, []   # per-device binds run eagerly
        try:
            per = {d.id: prim.bind(*[_on_dev(block(a, d), d) for a in args], **params)
                   for d in devices}
        finally:
            self._local.meshes = saved
        first = per[devices[0].id]
        if prim.multiple_results:
            return [Manual(o.aval, {d: per[d][i] for d in per}, mesh, vma)
                    for i, o in enumerate(first)]
        return Manual(first.aval, per, mesh, vma)


def _probe(prim, params):
    """An equation with ``params`` (only its parameters are looked at)."""
    return Eqn(prim, [], [], params)


def _one_body(self, prim, args, params, mesh, vma):
    """One equation whose loop or cond body holds collectives, as a body of its own."""
    avals = [_aval_of(a) for a in args]
    invars = [Var(a) for a in avals]
    out = prim.abstract_eval(*avals, **params)
    outs = list(out) if prim.multiple_results else [out]
    outvars = [Var(a) for a in outs]
    closed = ClosedJaxpr(Jaxpr([], invars, outvars, [Eqn(prim, invars, outvars, params)]), [])
    devices = [d for d in mesh.devices.flat if d.is_addressable]
    blocks = [a.blocks if isinstance(a, Manual) else
              {d.id: _on_dev(dispatch.device_array(a), d) for d in devices} for a in args]
    res = Body(closed, mesh).run(blocks)
    ms = [Manual(v.aval, b, mesh, vma | set(mesh.axis_names)) for v, b in zip(outvars, res)]
    return ms if prim.multiple_results else ms[0]


_ManualHook._one_body = _one_body


def _aval_of(a):
    return a.aval if isinstance(a, Tracer) else raise_to_shaped(a)


def _on_dev(x, d):
    return on_device(x, d) if isinstance(x, Array) else x


manual_hook = _ManualHook()
set_manual_hook(manual_hook)


def run_eager(fun, args_flat, in_tree, in_specs, mesh):
    """Runs a shard_map body eagerly over Manual values; returns (output leaves as per-device
    blocks, their vma, the output tree)."""
    blocks = [scatter(x, s, mesh) for x, s in zip(args_flat, in_specs)]
    manual = []
    for x, s, b in zip(args_flat, in_specs, blocks):
        first = next(iter(b.values()))
        manual.append(Manual(first.aval, b, mesh, mentioned(s)))
    frames = list(zip(mesh.axis_names, mesh.axis_sizes))
    with contextlib.ExitStack() as st:
        for f in frames:
            st.enter_context(extend_axis_env(*f))
        manual_hook.push(mesh)
        try:
            out = fun(*tree_util.tree_unflatten(in_tree, manual))
        finally:
            manual_hook.pop()
    leaves, tree = tree_util.tree_flatten(out)
    devices = [d for d in mesh.devices.flat if d.is_addressable]
    res, vmas = [], []
    for o in leaves:
        if isinstance(o, Manual):
            res.append(o.blocks)
            vmas.append(o.vma)
        else:
            a = dispatch.device_array(o)
            res.append({d.id: on_device(a, d) for d in devices})
            vmas.append(frozenset())
    return res, vmas, tree
