"""``jax.export``: a jitted function, traced and lowered once, as a program any WebGPU host runs.

``export(jax.jit(f))(*args)`` traces ``f`` for the shapes of ``args`` (arrays or
``ShapeDtypeStruct``s), lowers it for the *portable* target -- the WebGPU specification's
default limits and GPU kernel strategies (``Target.for_profile("webgpu-default")``), with
``shader-f16`` only where the program uses float16 -- and records one run of the plan
(``backend/recorder.py``): the WGSL kernels, the buffers and the operations over them, the
captured constants.  Nothing of the exporting machine's adapter enters the program beyond the
limits it records as requirements (``Exported.requirements``), so it runs on any adapter that
meets them: in this process or another (``Exported.call``, after ``serialize``/``deserialize``,
``serialization.py``), or in a browser (``to_web``, ``web.py``).
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence

import numpy as np

from ..api.autodiff import vjp as _vjp
from ..api.custom_derivatives import custom_vjp
from ..api.jit import JitWrapped, jit
from ..array import Array
from ..backend import runtime
from ..backend.execute import Executable, const_buffer
from ..backend.recorder import BINDING, Recorded, Unrecordable, record
from ..backend.target import Target
from ..backend.wgsl import host_storage_dtype
from ..core import tree_util
from ..core import dtypes
from ..core.ir import ClosedJaxpr, Jaxpr, ShapeDtypeStruct, ShapedArray, abstractify, subjaxprs
from ..core.tracing import Tracer, current_builder, eval_jaxpr
from ..dispatch import device_array, placed
from ..prims.exported import call_exported_p
from . import serialization, web

PLATFORM = "webgpu"
CALLING_CONVENTION_VERSION = 1          # the recorded program's calling convention (see docs)
# primitives whose work runs in Python on the host: a recording cannot hold them
_HOST_PRIMITIVES = {"pure_callback", "io_callback", "debug_callback"}
# the limits a recording may need more of than the WebGPU defaults (WebGPU's JS names)
LIMIT_NAMES = {
    "max-storage-buffers-per-shader-stage": "maxStorageBuffersPerShaderStage",
    "max-uniform-buffers-per-shader-stage": "maxUniformBuffersPerShaderStage",
    "max-storage-buffer-binding-size": "maxStorageBufferBindingSize",
    "max-uniform-buffer-binding-size": "maxUniformBufferBindingSize",
    "max-buffer-size": "maxBufferSize",
    "max-compute-workgroups-per-dimension": "maxComputeWorkgroupsPerDimension",
    "max-compute-workgroup-storage-size": "maxComputeWorkgroupStorageSize",
    "max-compute-invocations-per-workgroup": "maxComputeInvocationsPerWorkgroup",
}


class DisabledSafetyCheck:
    """A safety check ``Exported.call`` may skip (JAX's names; wjax's programs are checked for
    the platform only)."""

    def __init__(self, name: str):
        self._name = name

    @classmethod
    def platform(cls) -> "DisabledSafetyCheck":
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
        return cls(f"custom_call:{target_name}")

    @classmethod
    def shape_assertions(cls) -> "DisabledSafetyCheck":
        return cls("shape_assertions")

    def is_custom_call(self) -> str | None:
        return self._name[len("custom_call:"):] if self._name.startswith("custom_call:") \
            else None

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._name == other._name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"DisabledSafetyCheck({self._name})"


class Exported:
    """A function exported as a WebGPU program (JAX's ``jax.export.Exported``).

    JAX's fields: ``fun_name``, ``in_tree`` (the tree of ``(args, kwargs)``), ``in_avals``,
    ``out_tree``, ``out_avals``, ``in_shardings_hlo``/``out_shardings_hlo`` (None per leaf:
    one device), ``nr_devices`` (1), ``platforms`` (``("webgpu",)``), ``ordered_effects``,
    ``unordered_effects``, ``disabled_safety_checks``, ``calling_convention_version``,
    ``module_kept_var_idx``, ``uses_global_constants``.  wjax's: ``in_names``/``out_names``
    (each leaf's name, as the browser runtime names them), ``requirements`` (the adapter
    features and limits the program needs) and ``program`` (the recording: kernels and
    operations, ``backend/recorder.py``)."""

    def __init__(self, *, fun_name, in_tree, in_avals, out_tree, out_avals, in_names,
                 out_names, program, blobs, requirements, disabled_safety_checks=(),
                 closed: ClosedJaxpr | None = None, get_vjp: Callable | None = None):
        self.fun_name = fun_name
        self.in_tree, self.in_avals = in_tree, tuple(in_avals)
        self.out_tree, self.out_avals = out_tree, tuple(out_avals)
        self.in_names, self.out_names = list(in_names), list(out_names)
        self.program, self.blobs, self.requirements = program, blobs, requirements
        self.in_shardings_hlo = (None,) * len(self.in_avals)
        self.out_shardings_hlo = (None,) * len(self.out_avals)
        self.nr_devices = 1
        self.platforms = (PLATFORM,)
        self.ordered_effects = ()
        self.unordered_effects = ()
        self.disabled_safety_checks = tuple(disabled_safety_checks)
        self.calling_convention_version = CALLING_CONVENTION_VERSION
        self.module_kept_var_idx = tuple(range(len(self.in_avals)))
        self.uses_global_constants = False
        self._closed = closed               # the traced program, in the exporting process
        self._recorded = Recorded(program, blobs)
        self._get_vjp = get_vjp             # () -> the Exported of the VJP, where there is one
        self._vjp = None
        self._differentiable = None

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    __repr__ = __str__

    # ------------------------------------------------------------------ inspection
    def mlir_module(self) -> str:
        """The program as text.  wjax has no StableHLO: this is every kernel's WGSL, with the
        operations that run them (``jax.export``'s module, in wjax's terms)."""
        lines = [f"// wjax.export program {self.fun_name}: {len(self.program['kernels'])} "
                 f"kernels, {sum(1 for _ in _all_ops(self.program['ops']))} operations"]
        for i, k in enumerate(self.program["kernels"]):
            lines.append(f"// ---- kernel {i}\n{k}")
        return "\n".join(lines)

    def has_vjp(self) -> bool:
        """Whether the VJP is available: in the exporting process (for float inputs and
        outputs), and after ``deserialize`` when it was serialized with ``vjp_order`` > 0."""
        return self._get_vjp is not None

    def vjp(self) -> "Exported":
        """The exported VJP: a function of the flat primal inputs then the flat output
        cotangents, returning the flat input cotangents (JAX's)."""
        if self._get_vjp is None:
            raise ValueError("No VJP is available")
        if self._vjp is None:
            self._vjp = self._get_vjp()
        return self._vjp

    def in_shardings_jax(self, mesh):
        return (None,) * len(self.in_avals)

    def out_shardings_jax(self, mesh):
        return (None,) * len(self.out_avals)

    # ------------------------------------------------------------------ running
    def call(self, *args, **kwargs):
        """Runs the program on ``args``/``kwargs`` (of the exported structure, shapes and
        dtypes): eagerly on the device, or inside a trace (``jit``) as a ``call_exported``
        equation."""
        leaves = self._check_args(args, kwargs)
        if current_builder() is not None or any(isinstance(x, Tracer) for x in leaves):
            if self._closed is not None:        # in the exporting process: the traced program
                outs = eval_jaxpr(self._closed.jaxpr, self._closed.consts, *leaves)
            elif self.has_vjp():                # differentiable through its serialized VJP
                outs = self._differentiable_call()(*leaves)
            else:
                outs = call_exported_p.bind(*leaves, program=self._recorded,
                                            out_avals=self.out_avals, fun_name=self.fun_name)
        else:
            arrays = [x if type(x) is Array else device_array(x) for x in leaves]
            rt, bufs = placed(arrays)
            outs = [Array(b, a) for b, a in zip(self._recorded.run(rt, bufs), self.out_avals)]
        return tree_util.tree_unflatten(self.out_tree, list(outs))

    def _differentiable_call(self):
        """The program as a ``custom_vjp`` function of its flat inputs: its VJP program is
        the backward rule (itself differentiable when serialized to a higher order)."""
        if self._differentiable is None:
            def bind(*xs):
                return tuple(call_exported_p.bind(*xs, program=self._recorded,
                                                  out_avals=self.out_avals,
                                                  fun_name=self.fun_name))

            f = custom_vjp(bind)
            f.defvjp(lambda *xs: (f(*xs), xs),
                     lambda xs, cts: tuple(self.vjp().call(*xs, *cts)))
            self._differentiable = f
        return self._differentiable

    def _check_args(self, args, kwargs) -> list:
        tree = (tuple(args), dict(kwargs))
        leaves, in_tree = tree_util.tree_flatten(tree)
        if in_tree != self.in_tree:
            raise ValueError(
                "The invocation args and kwargs must have the same pytree structure as when "
                f"the function '{self.fun_name}' was exported, but they differ: the "
                f"invocation has {in_tree} and the export has {self.in_tree}")
        paths = [p for p, _ in tree_util.tree_flatten_with_path(tree)[0]]
        for path, x, want in zip(paths, leaves, self.in_avals):
            got = abstractify(x)
            where = _arg_path(path)
            if len(got.shape) != len(want.shape):
                raise ValueError(f"Rank mismatch for {where}: expected {len(want.shape)} and "
                                 f"called with {len(got.shape)}")
            for d, (g, w) in enumerate(zip(got.shape, want.shape)):
                if g != w:
                    raise ValueError(
                        f"Shape mismatch for {where}.shape[{d}] (expected same constant): "
                        f"expected {tuple(want.shape)} and called with {tuple(got.shape)}")
            if got.dtype != want.dtype:
                raise ValueError(f"Dtype mismatch for {where}: expected {want.dtype} and "
                                 f"called with {got.dtype}")
        return leaves

    # ------------------------------------------------------------------ writing
    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The program as bytes (``deserialize`` reads them; the format is in
        docs/export.md)."""
        header, blobs = _header(self), list(self.blobs)
        if vjp_order > 0:       # the VJP, serialized to one order less, as one more blob
            vjp_bytes = self.vjp().serialize(vjp_order - 1)
            header["vjp_blob"] = len(blobs)
            blobs.append(np.frombuffer(bytes(vjp_bytes), np.uint8))
        return serialization.write(header, blobs)

    def to_web(self, directory, *, title: str | None = None) -> str:
        """Writes a web bundle into ``directory``: the program, the ES module runtime
        ``wjax-web.js`` and a minimal page (``web.py``).  Returns the page's path."""
        return web.write_bundle(self.serialize(), _header(self), directory, title=title)


def _arg_path(path) -> str:
    """``args[0]['w']`` / ``kwargs['y']``: a leaf of the ``(args, kwargs)`` tree, as JAX names
    it in its messages."""
    head = "args" if path[0].idx == 0 else "kwargs"
    if head == "args":
        return f"args[{path[1].idx}]{tree_util.keystr(path[2:])}"
    return f"kwargs[{path[1].key!r}]{tree_util.keystr(path[2:])}"


# --------------------------------------------------------------------------- export

def export(fun_jit, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
    """``jax.export.export``: ``export(jax.jit(f))(*args, **kwargs)`` -> ``Exported``, the
    arguments being arrays or ``ShapeDtypeStruct``s (any object with ``shape`` and
    ``dtype``)."""
    if not isinstance(fun_jit, JitWrapped):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: "
                         f"{fun_jit}")
    if platforms is not None:
        bad = [p for p in platforms if p != PLATFORM]
        if bad:
            raise ValueError(f"wjax exports for the '{PLATFORM}' platform only (any WebGPU "
                             f"adapter); got platforms={list(platforms)}")

    def do_export(*args, **kwargs) -> Exported:
        return _export(fun_jit, args, kwargs, tuple(disabled_checks))

    return do_export


def _export(fun_jit: JitWrapped, args, kwargs, disabled) -> Exported:
    for x in tree_util.tree_leaves((args, kwargs)):
        for d in getattr(x, "shape", ()):
            if not isinstance(d, (int, np.integer)):
                raise NotImplementedError(_SYMBOLIC)
    traced = fun_jit.trace(*args, **kwargs)
    if traced._hit[3] or traced._hit[4]:
        raise ValueError(f"jax.export: '{traced.fun_name}' reads or writes mutable array "
                         "references (jax.new_ref), which an exported program cannot hold")
    closed: ClosedJaxpr = traced.jaxpr
    _check_exportable(closed.jaxpr, traced.fun_name)
    for a in closed.in_avals:
        if not isinstance(a.dtype, np.dtype):
            raise TypeError(f"jax.export: '{traced.fun_name}' takes an argument of dtype "
                            f"{a.dtype}; pass typed PRNG keys as jax.random.key_data(key) and "
                            "rebuild them inside with jax.random.wrap_key_data")
    for a in closed.out_avals:
        if not isinstance(a.dtype, np.dtype):
            raise TypeError(f"jax.export: '{traced.fun_name}' returns a value of dtype "
                            f"{a.dtype}; return jax.random.key_data(key) instead")
    statics, static_kw, dyn_args, dyn_kw = fun_jit._split(args, kwargs)
    in_tree = tree_util.tree_structure((tuple(dyn_args), dict(dyn_kw)))
    in_names = _in_names(fun_jit.fun, dyn_args, dyn_kw, dict(statics))
    out_paths = [p for p, _ in tree_util.tree_flatten_with_path(
        tree_util.tree_unflatten(traced.out_tree, list(closed.out_avals)))[0]]
    out_names = ["result" + tree_util.keystr(p) for p in out_paths]

    rt = runtime.get()
    f16 = any(v.aval.dtype == np.float16 for v in _all_vars(closed.jaxpr))
    target = Target.for_profile("webgpu-default", features={"shader-f16"} if f16 else (),
                                compiles=rt.compiles)
    exe = Executable(closed.jaxpr, target, traced.fun_name)
    n_consts = len(closed.consts)

    def run(rec, ins):
        consts = [const_buffer(rec, c, a) for c, a in zip(closed.consts, exe.in_avals)]
        return exe.run(rec, consts + list(ins))

    try:
        rec = record(run, exe.in_avals[n_consts:], target["max-storage-buffer-binding-size"])
    except Unrecordable as e:
        raise NotImplementedError(f"jax.export: '{traced.fun_name}' cannot be exported: {e}") \
            from None
    blobs = rec.pop("blobs")
    differentiable = all(dtypes.is_inexact(a.dtype)
                         for a in list(closed.in_avals) + list(closed.out_avals))
    return Exported(fun_name=traced.fun_name, in_tree=in_tree, in_avals=closed.in_avals,
                    out_tree=traced.out_tree, out_avals=closed.out_avals, in_names=in_names,
                    out_names=out_names, program=rec, blobs=blobs,
                    requirements=requirements(rec, target), disabled_safety_checks=disabled,
                    closed=closed,
                    get_vjp=(lambda: _export_vjp(closed, traced.fun_name))
                    if differentiable else None)


def _export_vjp(closed: ClosedJaxpr, name: str) -> Exported:
    """The Exported of ``closed``'s VJP: (flat primals, flat output cotangents) -> flat input
    cotangents, as JAX's ``Exported.vjp``."""
    n = len(closed.in_avals)

    def primal(*xs):
        return eval_jaxpr(closed.jaxpr, closed.consts, *xs)

    def fun_vjp(*args):
        _, pullback = _vjp(primal, *args[:n])
        return list(pullback(list(args[n:])))

    fun_vjp.__name__ = f"vjp_{name}"
    specs = [ShapeDtypeStruct(a.shape, a.dtype) for a in
             list(closed.in_avals) + list(closed.out_avals)]
    return _export(jit(fun_vjp), specs, {}, ())


_SYMBOLIC = ("jax.export in wjax exports concrete shapes only: export once per shape "
             "(jax.ShapeDtypeStruct((8, 784), jnp.float32)); symbolic dimensions "
             "(jax.export.symbolic_shape) are not supported")


def _all_vars(j: Jaxpr):
    yield from j.invars
    for e in j.eqns:
        yield from e.outvars
        for sub in subjaxprs(e.params):
            yield from _all_vars(sub)


def _check_exportable(j: Jaxpr, name: str) -> None:
    for e in j.eqns:
        if e.prim.name in _HOST_PRIMITIVES:
            raise NotImplementedError(
                f"jax.export: '{name}' calls a host callback ({e.prim.name}: "
                f"jax.pure_callback, jax.experimental.io_callback or jax.debug.print/"
                "callback), which runs Python and cannot be exported")
        for sub in subjaxprs(e.params):
            _check_exportable(sub, name)


def _in_names(fun, dyn_args, dyn_kw, statics) -> list:
    """Each input leaf's name: the parameter's name and the path inside it (``x``,
    ``params['w']``), as ``jit`` names arguments."""
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    positions = [i for i in range(len(dyn_args) + len(statics)) if i not in statics]
    names = []
    for path, _ in tree_util.tree_flatten_with_path((tuple(dyn_args), dict(dyn_kw)))[0]:
        if path[0].idx == 0:
            i = positions[path[1].idx]
            base = params[i] if i < len(params) else f"args[{i}]"
        else:
            base = str(path[1].key)
        names.append(base + tree_util.keystr(path[2:]))
    seen: dict = {}
    for i, n in enumerate(names):           # unique (a *args parameter repeats its name)
        if n in seen:
            names[i] = f"{n}#{i}"
        seen[n] = i
    return names


def requirements(rec: dict, target: Target) -> dict:
    """What an adapter must offer to run the recording: features, and the limits it uses
    (storage and uniform buffers per kernel, the largest binding and buffer) together with
    the target's workgroup limits (the WebGPU defaults, met by every adapter)."""
    storage = uniform = 0
    for k in rec["kernels"]:
        kinds = [m.group(2) for m in BINDING.finditer(k)]
        storage = max(storage, kinds.count("storage"))
        uniform = max(uniform, kinds.count("uniform"))
    sizes = [b["size"] for b in rec["buffers"]] + [s["size"] for s in rec["slots"]]
    largest = max(sizes, default=16)
    binding = min(largest, int(target["max-storage-buffer-binding-size"]))
    limits = {
        "maxStorageBuffersPerShaderStage": storage,
        "maxUniformBuffersPerShaderStage": uniform,
        "maxStorageBufferBindingSize": binding,
        "maxBufferSize": largest,
        "maxComputeWorkgroupsPerDimension": max(
            [g for op in _all_ops(rec["ops"]) if op["op"] == "dispatch" for g in op["grid"]],
            default=1),
    }
    for name in ("max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup"):
        limits[LIMIT_NAMES[name]] = int(target[name])
    features = ["shader-f16"] if any("enable f16;" in k for k in rec["kernels"]) else []
    return {"features": features, "limits": limits}


def _all_ops(ops):
    for op in ops:
        yield op
        if op["op"] == "loop":
            yield from _all_ops(op["body"])
        elif op["op"] == "switch":
            for b in op["branches"]:
                yield from _all_ops(b)


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    raise NotImplementedError(_SYMBOLIC)


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    raise NotImplementedError(_SYMBOLIC)


def is_symbolic_dim(p) -> bool:
    """Whether ``p`` is a symbolic dimension (never, in wjax: shapes are concrete)."""
    return False


class SymbolicScope:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(_SYMBOLIC)


def default_export_platform() -> str:
    return PLATFORM


minimum_supported_calling_convention_version = CALLING_CONVENTION_VERSION
maximum_supported_calling_convention_version = CALLING_CONVENTION_VERSION


def storage_dtype_name(dtype) -> str:
    """The dtype a buffer of ``dtype`` holds its elements as (bool and small integers widen
    to 32 bits, bfloat16 to float32)."""
    return host_storage_dtype(dtype).name


# --------------------------------------------------------------------------- (de)serializing

def _aval_json(a: ShapedArray) -> dict:
    return {"shape": list(a.shape), "dtype": np.dtype(a.dtype).name,
            "storage": storage_dtype_name(a.dtype), "weak_type": bool(a.weak_type)}


def _header(e: Exported) -> dict:
    """Everything of ``e`` but its constant blobs, as JSON-able data (docs/export.md)."""
    return {"fun_name": e.fun_name,
            "in_tree": serialization.tree_to_json(e.in_tree),
            "out_tree": serialization.tree_to_json(e.out_tree),
            "in_avals": [_aval_json(a) for a in e.in_avals],
            "out_avals": [_aval_json(a) for a in e.out_avals],
            "in_names": e.in_names, "out_names": e.out_names,
            "platforms": list(e.platforms), "nr_devices": e.nr_devices,
            "calling_convention_version": e.calling_convention_version,
            "disabled_safety_checks": [c._name for c in e.disabled_safety_checks],
            "requirements": e.requirements, "program": e.program}


def deserialize(blob) -> Exported:
    """``jax.export.deserialize``: the Exported that ``Exported.serialize`` wrote."""
    header, blobs = serialization.read(blob)
    try:
        cc = header["calling_convention_version"]
        if not (minimum_supported_calling_convention_version <= cc
                <= maximum_supported_calling_convention_version):
            raise ValueError(f"jax.export: the program has calling convention version {cc}; "
                             f"this wjax runs versions "
                             f"{minimum_supported_calling_convention_version} to "
                             f"{maximum_supported_calling_convention_version}")
        avals = [[ShapedArray(tuple(a["shape"]), np.dtype(a["dtype"]), a["weak_type"])
                  for a in header[k]] for k in ("in_avals", "out_avals")]
        return Exported(
            fun_name=header["fun_name"],
            in_tree=serialization.tree_from_json(header["in_tree"]), in_avals=avals[0],
            out_tree=serialization.tree_from_json(header["out_tree"]), out_avals=avals[1],
            in_names=header["in_names"], out_names=header["out_names"],
            program=header["program"], blobs=blobs, requirements=header["requirements"],
            disabled_safety_checks=[DisabledSafetyCheck(n)
                                    for n in header["disabled_safety_checks"]],
            get_vjp=(lambda: deserialize(blobs[header["vjp_blob"]].tobytes()))
            if "vjp_blob" in header else None)
    except (KeyError, TypeError) as err:
        raise ValueError(f"jax.export: the serialized program is malformed ({type(err).__name__}:"
                         f" {err})") from None
