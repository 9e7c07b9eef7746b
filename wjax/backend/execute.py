"""Running plans: buffers in, dispatches recorded, Arrays out (no waiting).

``eager`` runs one primitive as a one-equation jaxpr through the same
lowering as ``jit``; its plans are cached per (primitive, avals, params).
"""
from __future__ import annotations

import time

import numpy as np

from ..core import caches, dtypes
from ..core.ir import ClosedJaxpr, Eqn, Jaxpr, Lit, ShapedArray, Var, raise_to_shaped
from . import runtime
from .lower import HostStep, Plan, flatten_closed, lower_jaxpr
from .wgsl import storage_itemsize


def nbytes_of(aval: ShapedArray) -> int:
    return aval.size * storage_itemsize(aval.dtype)


def run_plan(plan: Plan, in_buffers: list, rt=None, indirect=None, out_buffers=None) -> list:
    """Records the plan's dispatches; returns the output Buffers (or Lits).  With
    ``indirect=(args buffer, first slot)`` the plan's k-th dispatch reads its workgroup counts
    from slot ``first slot + k`` of that buffer (12 bytes a slot); it must hold no HostStep.
    ``out_buffers`` (optional) receive the outputs that the plan computes itself."""
    rt = rt or runtime.get()
    with rt.lock:   # one thread records a plan at a time: its steps stay contiguous
        return _run_plan(plan, in_buffers, rt, indirect, out_buffers)


def _run_plan(plan, in_buffers, rt, indirect, out_buffers):
    env = dict(zip(plan.in_keys, in_buffers))
    outs = set(k for k in plan.out_keys if not (isinstance(k, tuple) and k and k[0] == "lit"))
    for k, b in zip(plan.out_keys, out_buffers or ()):
        if k in outs and k not in env:
            env[k] = b
    slot = None if indirect is None else indirect[1]
    for i, d in enumerate(plan.steps):
        bufs = []
        for k in d.keys:
            b = env.get(k)
            if b is None:
                b = env[k] = rt.alloc(nbytes_of(plan.avals[k]))
            bufs.append(b)
        if isinstance(d, HostStep):
            assert indirect is None, "an indirect plan holds a host step"
            d.fn(rt, bufs)
        elif indirect is None:
            _dispatch(rt, plan, d, bufs)
        else:
            _dispatch(rt, plan, d, bufs, (indirect[0], 12 * slot))
            slot += 1
        for k in dict.fromkeys(d.keys):     # a step may bind one buffer twice
            if plan.last_use.get(k) == i and k not in outs and k not in plan.in_keys:
                del env[k]
    return _results(plan, env, rt)


def _dispatch(rt, plan, d, bufs, indirect=None):
    rt.dispatch(d.wgsl, bufs, d.grid, d.ranges, indirect)


def _results(plan, env, rt):
    result = []
    for k in plan.out_keys:
        if isinstance(k, tuple) and k and k[0] == "lit":
            result.append(k[1])
        else:
            b = env.get(k)
            if b is None:   # e.g. a zero-size output that no kernel wrote
                b = env[k] = rt.alloc(nbytes_of(plan.avals[k]))
            result.append(b)
    return result


class Compiled:
    """A lowered closed jaxpr, ready to run on device buffers."""

    def __init__(self, closed: ClosedJaxpr, name: str = "jit"):
        rt = runtime.get()
        t0 = time.perf_counter()
        jaxpr, consts = flatten_closed(closed)
        self.consts = [_to_array(c) for c in consts]
        self.in_avals = jaxpr.in_avals
        self.out_avals = [a.aval for a in jaxpr.outvars]
        self.plan = lower_jaxpr(jaxpr, _limits(rt))
        for d in self.plan.steps:      # compile pipelines now, not at first run
            if not isinstance(d, HostStep):
                rt.pipeline(d.wgsl)
        self.compile_s = time.perf_counter() - t0
        self.name = name

    def __call__(self, args: list):
        from ..array import Array
        bufs = [c.buffer for c in self.consts] + [a.buffer for a in args]
        outs = run_plan(self.plan, bufs)
        res = []
        for o, aval in zip(outs, self.out_avals):
            if isinstance(o, Lit):
                res.append(_to_array(np.asarray(o.val, aval.dtype), aval.weak_type))
            else:
                res.append(Array(o, aval))
        return res


def _limits(rt):
    lim = dict(rt.limits)
    lim["max-storage-buffers-per-shader-stage"] = rt.max_storage
    lim["max-compute-workgroups-per-dimension"] = rt.max_groups
    lim["max-storage-buffer-binding-size"] = rt.max_binding
    lim["shader-f16"] = rt.has_f16
    return lim


def _to_array(x, weak=None):
    from ..array import Array, asarray_device
    if isinstance(x, Array):
        return x
    return asarray_device(x, weak_type=weak)


# --------------------------------------------------------------------------- eager

_eager_cache: dict = caches.register({})
_EAGER_CACHE_MAX = 4096


def _params_key(params):
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


_consts: dict = caches.register({})


def _const_array(x):
    """Uploads a host operand; small scalars are cached so eager loops don't re-upload."""
    from ..array import asarray_device
    from ..core.ir import WeakScalar
    weak = None
    if isinstance(x, WeakScalar):
        x, weak = x.val, True
    key = None
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray) or (isinstance(x, np.ndarray) and x.ndim == 0):
        dt, w = dtypes.dtype_and_weak(x)
        key = (np.asarray(x).tobytes(), str(dt), weak if weak is not None else w)
        hit = _consts.get(key)
        if hit is not None:
            return hit
    arr = asarray_device(x, weak_type=weak)
    if key is not None:
        if len(_consts) > 4096:
            _consts.clear()
        _consts[key] = arr
    return arr


def eager(prim, args, params):
    """Runs one primitive on concrete operands through the WGSL backend."""
    from ..array import Array, asarray_device
    arrays = [a if isinstance(a, Array) else _const_array(a) for a in args]
    avals = tuple(a.aval for a in arrays)
    pkey = _params_key(params)
    key = (prim.name, avals, pkey) if pkey is not None else None
    comp = _eager_cache.get(key) if key is not None else None
    if comp is None:
        out = prim.abstract_eval(*avals, **params)
        out_avals = list(out) if prim.multiple_results else [out]
        invars = [Var(a) for a in avals]
        outvars = [Var(a) for a in out_avals]
        jaxpr = Jaxpr([], invars, outvars, [Eqn(prim, invars, outvars, params)])
        comp = Compiled(ClosedJaxpr(jaxpr, []), name=prim.name)
        if key is not None:
            if len(_eager_cache) >= _EAGER_CACHE_MAX:   # bounded: params may hold jaxprs
                _eager_cache.pop(next(iter(_eager_cache)))
            _eager_cache[key] = comp
    outs = comp(arrays)
    return outs if prim.multiple_results else outs[0]


from ..core.tracing import set_eager  # noqa: E402

set_eager(eager)
