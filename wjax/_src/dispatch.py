"""From Arrays to the backend and back: the one compile cache, and every way a program runs.

    jit(f)(x)            api traces f -> ClosedJaxpr -> ``Compiled(closed)`` -> ``executable``
    jnp.sin(x) (eager)   primitive.bind -> ``eager`` (a one-equation jaxpr, compiled likewise)
    grad(f)(x), vmap     the rewritten jaxpr -> ``run_closed``

``executable`` looks the jaxpr up in ``_executables``, a bounded LRU keyed by the jaxpr's
*structure* (``core.ir.jaxpr_key``: variables renumbered, literals and parameters by value)
and the device's ``Target``: a program traced again (an eager ``grad`` or ``vmap`` call
traces its function on every call) is lowered once.  Constants are inputs of the executable,
bound per ClosedJaxpr (``execute.Bound``), so equal programs over different constants share
one executable.  Eager primitives are keyed by (primitive, operand avals, parameters) in the
same cache.
"""
from __future__ import annotations

import logging

import numpy as np

from .array import Array, asarray_device, device_of_runtime, on_device
from .backend import compiler, runtime
from .backend.execute import Bound, Executable, build
from .core import caches, dtypes
from .core.config import check_transfer
from .core.config import config as _cfg
from .core.ir import ClosedJaxpr, Eqn, Jaxpr, ShapedArray, Var, WeakScalar, jaxpr_key, params_key
from .core.primitive import Primitive
from .core.tracing import Tracer, current_builder, eval_jaxpr, set_eager

logger = logging.getLogger("wjax")

_executables = caches.LRU(2048)


def executable(jaxpr: Jaxpr, name: str = "jit", key=None, keep=None, rt=None) -> Executable:
    """The executable of ``jaxpr`` (its constvars then invars are the inputs) for the device
    of ``rt`` (the default device when None), from the cache when a program of the same
    structure was compiled before.  ``key`` (with ``keep``, the objects it names by identity)
    replaces the structural key.  Devices on one adapter share their executables (equal
    targets); each compiles its own pipelines on first use."""
    rt = rt or runtime.get()
    target = rt.target()
    if key is None:
        keep = []
        key = jaxpr_key(jaxpr, keep)
    full = (key, target.key())
    hit = _executables.get(full)
    if hit is None:
        exe = compiler.backend_compile_and_load(
            compiler.BACKEND, lambda: build(jaxpr, target, name, rt.adapter.info))
        if _cfg.jax_log_compiles:
            logger.warning("Compiling %s with %d kernels for args %s took %.3f s", name,
                           len(exe.plan.steps), [a.str_short() for a in exe.in_avals],
                           exe.compile_s)
        hit = _executables.put(full, (exe, keep))
    return hit[0]


class Compiled:
    """A closed jaxpr compiled for the device: ``compiled(arrays) -> arrays``."""

    def __init__(self, closed: ClosedJaxpr, name: str = "jit", defer_invalid: bool = False):
        self.name, self.closed = name, closed
        self.defer_invalid = defer_invalid    # (a user's jit re-runs its Python function)
        # a program holding shard_map equations runs them on their meshes (wjax/_src/spmd.py)
        self.program = _program_hook(closed, name) if _program_hook is not None else None
        self._target = self._target_key = None
        if self.program is None:
            rt = runtime.get()
            self._target = rt.target()
            self._target_key = self._target.key()
            self.bound = Bound(executable(closed.jaxpr, name, rt=rt), list(closed.consts))

    def is_current(self) -> bool:
        """Whether this was compiled for the default device's target as it is now (a
        ``Runtime.options`` block changes it: a function jitted before is compiled again)."""
        if self._target_key is None:
            return True
        target = runtime.get().target()
        return target is self._target or target.key() == self._target_key

    def as_text(self) -> str:
        """The compiled program: over sharded inputs the per-device program and its
        collectives (``wjax/_src/partition.py``), else the WGSL of every kernel."""
        text = _text_hook(self.closed) if _text_hook is not None else None
        return text if text is not None else self.plan.wgsl_text()

    exe = property(lambda self: self.bound.exe)
    plan = property(lambda self: self.bound.exe.plan)
    in_avals = property(lambda self: self.bound.exe.in_avals[len(self.bound.consts):])
    out_avals = property(lambda self: self.bound.exe.out_avals)
    compile_s = property(lambda self: self.bound.exe.compile_s)

    _run = None         # the bound program's runner on the default device (``Bound.runner``)
    _rt = None          # that device's runtime

    def call_arrays(self, args) -> list[Array]:
        """``self(args)`` for ``args`` that are single-device Arrays (not sharded), the
        common ``jit`` call: with the default device's runner made (by a first call) and
        every argument on that device, the runner runs at once."""
        if self._run is None:
            return self(list(args))
        return self._run_arrays(args, args)

    def __call__(self, args: list) -> list[Array]:
        arrays = [a if type(a) is Array else device_array(a) for a in args]
        if self.program is not None:
            return self.program(arrays)
        if _sharded_hook is not None and any([a._shards is not None for a in arrays]):
            res = _sharded_hook(self.closed, arrays, self.name)
            if res is not None:
                return res
            return self._run_arrays(arrays, args, placed)
        return self._run_arrays(arrays, args)

    def _run_arrays(self, arrays, args, place=None) -> list[Array]:
        """Runs over ``arrays`` (``args`` as given, for the NaN checks' re-run): through
        the default device's runner when every array is an unsharded one there, else on the
        device ``place`` (``placed``) puts them."""
        run = self._run
        if place is None and run is not None:
            rt = self._rt
            bufs = [a._buffer for a in arrays]
            for b in bufs:
                if b is None or b.pool.owner is not rt:
                    place = placed
                    break
        else:
            place = placed
        no_exec, nans, infs = _cfg.read_many(_CALL_FLAGS)
        if no_exec:
            _check_execution(self.name)
        if place is not None:
            rt, bufs = place(list(arrays))
            if rt.index:
                run = lambda bufs, _rt=rt: self.bound.run(_rt, bufs)   # noqa: E731
            elif run is None:
                run = self.bound.runner(rt) or (
                    lambda bufs, _rt=rt: self.bound.run(_rt, bufs))
                self._rt, self._run = rt, run
        res = [Array(b, a) for b, a in zip(run(bufs), self.bound.exe.out_avals)]
        if nans or infs:
            _check_program(self.name, self.closed.jaxpr, self.closed.consts, args, res,
                           self.defer_invalid)
        return res


_CALL_FLAGS = ("jax_no_execution", "jax_debug_nans", "jax_debug_infs")


def _check_execution(name: str) -> None:
    if _cfg.jax_no_execution:
        raise RuntimeError(f"JAX tried to execute function {name}, but the no_execution config "
                           f"option is set")


def run_closed(closed: ClosedJaxpr, args, name: str = "fun") -> list:
    """Evaluates a closed jaxpr: into the current trace, or on the device as one program."""
    if current_builder() is not None or any(isinstance(a, Tracer) for a in args):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return Compiled(closed, name)(list(args))


# --------------------------------------------------------------------------- operands

# jit over sharded arrays (``wjax/_src/spmd.py`` installs it): (closed, arrays, name) -> outputs,
# or None to run the program on one device over the arrays' gathered values
_sharded_hook = None
# programs with shard_map equations (``wjax/_src/spmd.py`` installs it): (closed, name) -> a
# callable over arrays, or None for an ordinary program
_program_hook = None
# the text of a program over sharded inputs (``wjax/_src/partition.py`` installs it)
_text_hook = None


def placed(arrays: list):
    """The runtime a program over ``arrays`` runs on -- the one device they live on; arrays on
    the default device (uncommitted in JAX's terms) follow the others -- and their buffers
    there.  Arrays on two different non-default devices are JAX's ValueError."""
    rt = None
    for a in arrays:
        b = a._buffer
        if b is None:
            continue
        r = b.pool.owner
        if r.index and r is not rt:
            if rt is not None:
                raise ValueError(
                    "Received incompatible devices for jitted computation. Got argument on "
                    f"device {device_of_runtime(rt)} and argument on device "
                    f"{device_of_runtime(r)}")
            rt = r
    if rt is None:
        return runtime.get(), [a.buffer for a in arrays]
    dev = device_of_runtime(rt)
    return rt, [a._buffer if a._buffer is not None and a._buffer.pool.owner is rt
                else on_device(a, dev).buffer for a in arrays]


_scalars = caches.LRU(4096)


def device_array(x) -> Array:
    """An operand as an Array: host values are uploaded (0-d ones once, cached)."""
    if isinstance(x, Array):
        return x
    weak = None
    if isinstance(x, WeakScalar):
        x, weak = x.val, True
    if type(x) is np.ndarray and not x.ndim and type(x.dtype) in dtypes._DTYPE_TYPES:
        # a scalar cached before (``x + 1``): found by its bytes before any conversion (a
        # dtype that is not canonical is never a key: it misses and takes the path below)
        hit = _scalars.get((x.tobytes(), x.dtype, weak is True))
        if hit is not None and hit.dtype == x.dtype:
            check_transfer("host_to_device", hit.aval)
            return hit
    if np.ndim(x) == 0 and not isinstance(x, (list, tuple)):
        dt, w = dtypes.dtype_and_weak(x)
        weak = weak if weak is not None else w
        check_transfer("host_to_device", ShapedArray((), dtypes.check_supported(dt), weak))
        key = (np.asarray(x).tobytes(), dt, weak)
        return _scalars.get_or_make(key, lambda: asarray_device(x, weak_type=weak, guard=False))
    return asarray_device(x, weak_type=weak)


# --------------------------------------------------------------------------- eager

# (("eqn", primitive, avals, parameters), runtime) -> (the runtime's target then, the
# executable's runner there, its output avals, the objects the key names by identity)
_eager_runs = caches.LRU(1024)


def eager(prim: Primitive, args, params: dict):
    """Runs one primitive on concrete operands: a one-equation jaxpr through ``executable``
    (jaxpr parameters -- a ``cond``'s branches -- are keyed by structure)."""
    no_exec, nans, infs = _cfg.read_many(_CALL_FLAGS)
    if no_exec:
        _check_execution(prim.name)
    arrays = [a if type(a) is Array else device_array(a) for a in args]
    avals = tuple([a.aval for a in arrays])
    if _sharded_hook is not None and any([a._shards is not None for a in arrays]):
        res = _sharded_eager(prim, arrays, params)
        if res is not None:
            return res
    keep: list = []
    key = ("eqn", prim.key, avals, params_key(params, keep) if params else ())
    rt, bufs = placed(arrays)
    # the runner of this op on this device, while the device's target is the one it was
    # compiled for (hashing the target's key per call is the cost this saves)
    target = rt.target()
    ent = _eager_runs.get((key, rt))
    if ent is None or ent[0] is not target:
        hit = _executables.get((key, target.key()))
        if hit is None:
            out = prim.abstract_eval(*avals, **params)
            out_avals: list[ShapedArray] = list(out) if prim.multiple_results else [out]
            invars = [Var(a) for a in avals]
            outvars = [Var(a) for a in out_avals]
            jaxpr = Jaxpr([], invars, outvars, [Eqn(prim, invars, outvars, params)])
            exe = executable(jaxpr, prim.name, key=key, keep=keep, rt=rt)
        else:
            exe, keep = hit
        run = Bound(exe, []).runner(rt) or (lambda bufs, _e=exe, _rt=rt: _e.run(_rt, bufs))
        ent = _eager_runs.put((key, rt), (target, run, exe.out_avals, keep))
    res = [Array(b, a) for b, a in zip(ent[1](bufs), ent[2])]
    if nans or infs:
        inner = params.get("jaxpr")
        if (prim.call or prim.transparent_call) and isinstance(inner, ClosedJaxpr):
            _check_program(str(params.get("name") or prim.name), inner.jaxpr, inner.consts,
                           arrays, res)
        else:
            _check_op(prim.name, res)
    return res if prim.multiple_results else res[0]


def _sharded_eager(prim, arrays, params):
    """One primitive over sharded arrays: the one-equation program through the sharded path."""
    avals = [a.aval for a in arrays]
    out = prim.abstract_eval(*avals, **params)
    out_avals: list[ShapedArray] = list(out) if prim.multiple_results else [out]
    invars = [Var(a) for a in avals]
    outvars = [Var(a) for a in out_avals]
    closed = ClosedJaxpr(Jaxpr([], invars, outvars, [Eqn(prim, invars, outvars, params)]), [])
    res = _sharded_hook(closed, arrays, prim.name, eager=True)
    if res is None:
        return None
    return res if prim.multiple_results else res[0]


# --------------------------------------------------------------------------- debug_nans

def _invalid(arrays) -> str | None:
    """'nan' or 'inf' when an output holds one that the debug flags ask about."""
    for a in arrays:
        if not dtypes.is_float(a.dtype):
            continue
        host = np.asarray(a)
        if _cfg.jax_debug_nans and np.isnan(host).any():
            return "nan"
        if _cfg.jax_debug_infs and np.isinf(host).any():
            return "inf"
    return None


DEOPTIMIZED = ("Invalid nan value encountered in the output of a jax.jit function. Calling "
                "the de-optimized version.")


class InvalidOutput(FloatingPointError):
    """A jitted program's output holds a NaN/inf under ``jax_debug_nans``/``infs``: its caller
    runs the function again de-optimized (``no_invalid_in_deoptimized`` if that is clean)."""

    def __init__(self, name: str, kind: str):
        super().__init__(f"invalid value ({kind}) encountered in {name}")
        self.name, self.kind = name, kind


def _check_op(name: str, outs) -> None:
    kind = _invalid(outs)
    if kind is not None:
        # as JAX's eager jnp functions (themselves jitted) say before their de-optimized run
        print(DEOPTIMIZED)
        raise FloatingPointError(f"invalid value ({kind}) encountered in {name}")


def _check_program(name: str, jaxpr: Jaxpr, consts, args, outs, defer=False) -> None:
    """A compiled program made a NaN/inf: run it again op by op (eagerly, so each op checks
    its outputs) to raise at the op that made it, as JAX's de-optimized re-run does --
    or, with ``defer`` (a user's ``jit``), raise ``InvalidOutput`` for the caller to run
    the Python function itself again, as JAX does."""
    kind = _invalid(outs)
    if kind is None:
        return
    if defer:
        raise InvalidOutput(f"jit({name})", kind)
    print(DEOPTIMIZED)
    eval_jaxpr(jaxpr, consts, *args)
    raise no_invalid_in_deoptimized(f"jit({name})", kind)


def no_invalid_in_deoptimized(name: str, kind: str) -> FloatingPointError:
    """JAX's error when the de-optimized run made no NaN/inf
    (``api_util._raise_no_nan_in_deoptimized``), its ``(name, kind)`` first."""
    return FloatingPointError(
        f"{(name, kind)!r}. Because jax_config.debug_nans.value and/or "
        "config.jax_debug_infs is set, the de-optimized function (i.e., the function as if the "
        "`jit` decorator were removed) was called in an attempt to get a more precise error "
        "message. However, the de-optimized function did not produce invalid values during its "
        "execution. This behavior can result from `jit` optimizations causing the invalid value "
        "to be produced. It may also arise from having nan/inf literals as inputs or outputs, "
        "like `jax.jit(lambda ...: jax.numpy.nan)(...)`. \n\nIt may be possible to avoid the "
        "invalid value by removing the `jit` decorator, at the cost of losing optimizations. "
        "\n\nIf you see this error, consider opening a bug report at "
        "https://github.com/jax-ml/jax.")


set_eager(eager)


def wait_for_tokens() -> None:
    """``jax._src.dispatch.wait_for_tokens``: waits until every submitted program (and its
    host callbacks) has run."""
    runtime.synchronize_all()
