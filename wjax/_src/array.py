"""wjax.Array: an immutable array living in a WebGPU buffer.

An Array is an aval (shape, dtype, weak type) plus a pooled device Buffer.
Operations on it record GPU work and return at once (async, like JAX);
reading its value (``np.asarray``, ``repr``, ``float``) waits.  Its operators and
array methods (shared with tracers) are installed by ``wjax/numpy/array_methods.py``.
"""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .backend import execute, runtime
from .core import dtypes
from .core.config import check_transfer
from .core.ir import ShapedArray
from .core.mesh import get_mesh
from .core.tracing import Tracer


# --------------------------------------------------------------------------- devices

class Device:
    """One WebGPU device (a wgpu device on an adapter; with ``jax_num_cpu_devices`` several
    logical devices share one adapter).  ``id`` is global: under ``jax.distributed`` process
    ``p`` holds devices ``p * local_count ... (p + 1) * local_count - 1``."""

    platform = "webgpu"

    def __init__(self, id=0, process_index=0, local_index=None, kind=None):
        self.id = id
        self.process_index = process_index
        self.local_index = id if local_index is None else local_index
        self._rt_cache = None
        if kind is None:
            info = runtime.device_adapters()[self.local_index].info
            kind = (info["device"], info["backend_type"], info["adapter_type"])
        self.device_kind, self.backend, self.adapter_type = kind

    @property
    def _rt(self):
        if self.process_index != _process[0]:
            raise ValueError(f"{self!r} belongs to process {self.process_index}: it is not "
                             f"addressable from process {_process[0]}")
        if self._rt_cache is None:
            self._rt_cache = runtime.get(self.local_index)
        return self._rt_cache

    @property
    def is_addressable(self) -> bool:
        return self.process_index == _process[0]

    def __repr__(self):
        return f"WebGPUDevice(id={self.id}, kind={self.device_kind!r}, backend={self.backend})"

    def __str__(self):
        return f"webgpu:{self.id}"

    def __hash__(self):
        return hash(("webgpu", self.id))

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __lt__(self, other):
        return self.id < other.id

    def memory_stats(self) -> dict:
        """Device memory held by wjax, in JAX's keys: ``bytes_in_use`` (live arrays and
        temporaries), ``peak_bytes_in_use``, ``bytes_reserved`` (in use plus the pool of free
        buffers kept for reuse), ``pool_bytes``, ``pool_bytes_limit`` (``WJAX_POOL_MB``),
        ``num_allocs``, ``largest_alloc_size``, ``bytes_limit`` (the largest buffer)."""
        return self._rt.memory_stats()

    def live_buffers(self):
        return live_arrays()


# (this process' index, process count): set by jax.distributed.initialize
_process = [0, 1]
_devices: list | None = None


def all_devices() -> list:
    """Every device of every process, by id (``jax.devices()``)."""
    global _devices
    if _devices is None:
        n = runtime.device_count()
        local = [Device(i, 0, i) for i in range(n)]
        _devices = local
    return _devices


def set_process_layout(process_index: int, process_count: int, kinds: list) -> None:
    """The global device list under ``jax.distributed``: ``kinds[p]`` lists process ``p``'s
    devices (their kind tuples), numbered process by process."""
    global _devices
    _process[:] = [process_index, process_count]
    devs, i = [], 0
    for p, ks in enumerate(kinds):
        for j, k in enumerate(ks):
            devs.append(Device(i, p, j, tuple(k)))
            i += 1
    _devices = devs


def local_devices() -> list:
    return [d for d in all_devices() if d.process_index == _process[0]]


def default_device() -> Device:
    return local_devices()[0]


def device_of_runtime(rt) -> Device:
    return local_devices()[rt.index]


class Sharding:
    """Base class of shardings (``jax.sharding.Sharding``)."""

    @property
    def device_set(self) -> set[Device]:
        return {default_device()}

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def is_fully_addressable(self) -> bool:
        return all(d.is_addressable for d in self.device_set)

    @property
    def memory_kind(self) -> str:
        return "device"

    @property
    def addressable_devices(self) -> set[Device]:
        return {d for d in self.device_set if d.is_addressable}

    def devices_indices_map(self, global_shape) -> dict:
        return {d: tuple(slice(None) for _ in global_shape) for d in self.device_set}

    def addressable_devices_indices_map(self, global_shape) -> dict:
        return {d: i for d, i in self.devices_indices_map(global_shape).items()
                if d.is_addressable}

    def shard_shape(self, global_shape) -> tuple:
        return tuple(global_shape)


class SingleDeviceSharding(Sharding):
    def __init__(self, device: Device, *, memory_kind: str | None = None):
        self._device = device

    @property
    def device_set(self) -> set[Device]:
        return {self._device}

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self):
        return hash(("single", self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"


class ShardedAval(ShapedArray):
    """The type of a sharded array: its aval with the sharding (``jax.typeof(x)`` prints the
    mesh axes of ``Explicit`` type that split each dimension: ``float32[8@X,4@Y]``)."""

    __slots__ = ("concrete_sharding",)

    def __init__(self, shape, dtype, weak_type=False, sharding=None):
        super().__init__(shape, dtype, weak_type)
        self.concrete_sharding = sharding

    @property
    def sharding(self):
        """The sharding over the mesh's abstract mesh, as JAX's types carry it: only the axes
        of ``Explicit`` type in the current mesh (``auto_axes`` makes them ``Auto``)."""
        s = self.concrete_sharding
        mesh = s.mesh
        cur = get_mesh()
        if cur is not None and tuple(cur.axis_names) == tuple(mesh.axis_names):
            mesh = cur
        explicit = {a for a, t in zip(mesh.axis_names, mesh.axis_types)
                    if getattr(t, "name", "") == "Explicit"}
        parts = list(s.spec) + [None] * (len(self.shape) - len(s.spec))
        keep = []
        for p in parts:
            axes = tuple(a for a in (p if isinstance(p, tuple) else (p,))
                         if a is not None and a in explicit)
            keep.append(None if not axes else axes[0] if len(axes) == 1 else axes)
        return type(s)(mesh.abstract_mesh, type(s.spec)(*keep))

    def __str__(self):
        name = getattr(self.dtype, "name", str(self.dtype))
        mesh = self.sharding.mesh
        explicit = {a for a, t in zip(mesh.axis_names, mesh.axis_types)
                    if getattr(t, "name", "") == "Explicit"}
        parts = list(self.sharding.spec) + [None] * (len(self.shape) - len(self.sharding.spec))
        dims = []
        for n, p in zip(self.shape, parts):
            axes = [a for a in (p if isinstance(p, tuple) else (p,)) if a in explicit]
            dims.append(f"{n}@{axes[0]}" if len(axes) == 1 else
                        f"{n}@({','.join(axes)})" if axes else str(n))
        return f"{'~' if self.weak_type else ''}{name}[{','.join(dims)}]"

    def __repr__(self):
        return f"ShapedArray({self})"


class Shard:
    """One device's piece of an array (``jax.Shard``)."""

    def __init__(self, device: Device, index: tuple, replica_id: int, data):
        self.device, self.index, self.replica_id, self.data = device, index, replica_id, data

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, "
                f"replica_id={self.replica_id}, data={self.data})")


# --------------------------------------------------------------------------- Array

# every Array alive: id(weak reference) -> a weak reference to it, dropped by its callback when
# the Array dies (cheaper per Array than a WeakValueDictionary, whose refs are Python objects)
_live: dict = {}
_weakref = weakref.ref


def _died(ref, _pop=_live.pop) -> None:
    _pop(id(ref), None)


def live_arrays(platform=None) -> list:
    """Every Array alive in this process (``jax.live_arrays()``)."""
    return [a for a in [r() for r in list(_live.values())] if a is not None]


class ArrayImpl:
    """An immutable n-d array on a WebGPU device, or sharded over several (``_shards``: one
    single-device Array per addressable device of ``_sharding``).  A sharded array's
    ``buffer`` is its global value gathered onto the default device (through host memory, on
    first use), so any program can read it; programs that understand shardings read the
    shards (``wjax/_src/spmd.py``).

    The concrete type behind the abstract ``jax.Array`` (:class:`BaseArray`), named as JAX
    names its own, ``jaxlib._jax.ArrayImpl``: ``type(x)``, error messages and libraries that
    recognise JAX arrays by type name see JAX's name.  No module of that name is loaded (wjax
    replaces jaxlib); arrays pickle through ``__reduce__``, not by the class's name."""

    __module__ = "jaxlib._jax"
    __array_priority__ = 100
    __hash__ = None

    __slots__ = ("aval", "_buffer", "_npy", "_shards", "_sharding", "__weakref__")

    def __init__(self, buffer: Any, aval: ShapedArray):
        self._buffer: Any = buffer                # a runtime Buffer (device memory)
        self.aval: ShapedArray = aval
        self._npy: np.ndarray | None = None       # the host copy, once read
        self._shards: dict | None = None          # sharded: device id -> single-device Array
        self._sharding = None
        r = _weakref(self, _died)
        _live[id(r)] = r

    @classmethod
    def sharded(cls, aval: ShapedArray, sharding, shards: dict) -> "Array":
        """An array made of per-device shards (``shards``: device id -> Array holding the
        piece ``sharding`` assigns that device)."""
        a = cls(None, ShardedAval(aval.shape, aval.dtype, aval.weak_type, sharding))
        a._sharding, a._shards = sharding, dict(shards)
        return a

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    @property
    def buffer(self):
        b = self._buffer
        if b is None:     # sharded: the global value on the default device
            b = self._buffer = execute.upload(runtime.get(), self._value())
        return b

    @buffer.setter
    def buffer(self, b):
        self._buffer = b

    # ------------------------------------------------------------ host side
    def _value(self) -> np.ndarray:
        if self._npy is None:
            check_transfer("device_to_host", self.aval)
            if self._shards is not None:
                self._npy = _assemble(self)
            else:
                b = self._buffer
                self._npy = execute.download(runtime.runtime_of(b), b, self.aval)
        return self._npy

    def __array__(self, dtype=None, copy=None):
        v = self._value()
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def _runtimes(self):
        if self._shards is not None:
            return [runtime.runtime_of(s._buffer) for s in self._shards.values()]
        return [runtime.runtime_of(self._buffer)]

    def block_until_ready(self) -> "Array":
        if self._shards is None:
            self._buffer.pool.owner.synchronize()
        else:
            for rt in self._runtimes():
                rt.synchronize()
        return self

    def unsafe_buffer_pointer(self) -> int:
        """An integer naming the device buffer that holds the array (JAX's is its address;
        WebGPU exposes none, so wjax gives the buffer object's identity): arrays sharing
        storage give the same number."""
        return id(self.buffer.gpu)

    def copy_to_host_async(self) -> None:
        for rt in self._runtimes():
            rt.flush()

    def is_ready(self) -> bool:
        return True

    def devices(self) -> set[Device]:
        if self._sharding is not None:
            return set(self._sharding.device_set)
        return {self.device}

    @property
    def device(self) -> Device:
        if self._sharding is not None:
            if len(self._sharding.device_set) == 1:
                return next(iter(self._sharding.device_set))
            raise ValueError("Length of devices is greater than 1. Please use `.devices()`.")
        return device_of_runtime(runtime.runtime_of(self._buffer))

    @property
    def sharding(self):
        if self._sharding is not None:
            return self._sharding
        return SingleDeviceSharding(self.device)

    @property
    def committed(self) -> bool:
        return True

    @property
    def is_fully_addressable(self) -> bool:
        return self.sharding.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        return self.sharding.is_fully_replicated

    @property
    def addressable_shards(self) -> list:
        if self._shards is None:
            return [Shard(self.device, tuple(slice(None) for _ in self.shape), 0, self)]
        idx = self._sharding.devices_indices_map(self.shape)
        rep = getattr(self._sharding, "replica_ids", lambda: {})()
        return [Shard(d, idx[d], rep.get(d, 0), self._shards[d.id])
                for d in self._sharding._device_list if d.id in self._shards]

    @property
    def addressable_data(self):
        return lambda i: self.addressable_shards[i].data

    @property
    def global_shards(self) -> list:
        return self.addressable_shards

    def to_device(self, device: Any, /, *, stream: Any = None) -> "Array":
        """This array on ``device`` (a Device or a Sharding): copied through host memory."""
        return put(self, device)

    # DLPack: WebGPU memory has no DLPack device type, so an export is a host copy
    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)                   # kDLCPU, device 0: where the exported copy lives

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None,
                   dl_device: Any = None, copy: bool | None = None):
        if copy is False:
            raise BufferError("wjax arrays live in WebGPU memory: a DLPack export is a host "
                              "copy, so copy=False cannot be honoured")
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"wjax exports DLPack on the CPU (1, 0), not {dl_device}")
        host = np.array(self._value(), copy=True)
        return host.__dlpack__() if max_version is None else \
            host.__dlpack__(max_version=max_version)

    def tolist(self) -> Any:
        return self._value().tolist()

    def item(self, *args: int) -> Any:
        return self._value().item(*args)

    # conversions check as JAX's core.check_{scalar,integer,bool}_conversion
    def __float__(self):
        self._check_scalar()
        return float(self._value().reshape(()))

    def __int__(self):
        self._check_scalar()
        return int(self._value().reshape(()))

    def __complex__(self):
        self._check_scalar()
        return complex(self._value().reshape(()))

    def __bool__(self):
        if self.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use `array.size > 0` "
                             "to check that an array is not empty.")
        if self.size > 1:
            raise ValueError("The truth value of an array with more than one element is ambiguous. "
                             "Use a.any() or a.all()")
        return bool(self._value().reshape(()))

    def __index__(self):
        if self.shape != () or not dtypes.is_int(self.dtype):
            raise TypeError("Only integer scalar arrays can be converted to a scalar index.")
        return int(self._value().reshape(()))

    def _check_scalar(self):
        if self.ndim > 0:
            raise TypeError(f"Only scalar arrays can be converted to Python scalars; got "
                            f"arr.ndim={self.ndim}")

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __reversed__(self):
        return (self[i] for i in reversed(range(len(self))))

    def __repr__(self):
        v = self._value()
        prefix = "Array("
        dtype_str = f"dtype={self.dtype.name}" + (", weak_type=True" if self.weak_type else "")
        line_width = np.get_printoptions()["linewidth"]
        if v.size == 0:
            body = f"[], shape={self.shape}"   # JAX shows the shape of every empty array
        else:
            body = np.array2string(v, separator=", ", prefix=prefix, suffix=",",
                                   max_line_width=line_width)
        # JAX's layout: a dtype that would overrun the line is set off by the prefix's width
        last_line_len = len(body) - body.rfind("\n") + 1
        sep = " " * len(prefix) if last_line_len + len(dtype_str) + 2 > line_width else " "
        return f"{prefix}{body},{sep}{dtype_str})"

    def __str__(self):
        return str(self._value())

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (asarray_device, (np.asarray(self), None, self.weak_type))


Array = ArrayImpl       # wjax's own name for it


# --------------------------------------------------------------------------- shards

def _assemble(a: Array) -> np.ndarray:
    """A sharded array's global value from its addressable shards."""
    out = np.empty(a.shape, a.dtype)
    idx = a._sharding.devices_indices_map(a.shape)
    covered = 0
    for d in reversed(a._sharding._device_list):   # the first replica of a block wins
        s = a._shards.get(d.id)
        if s is not None:
            out[idx[d]] = s._value()
            covered += 1
    if covered < len(a._sharding._device_list) and not a._sharding.is_fully_replicated:
        # pieces held by other processes: the local ones must cover the array
        if not _covers(a):
            raise RuntimeError("Fetching value for `jax.Array` that spans non-addressable "
                               "(non process local) devices is not possible.")
    return out


def _covers(a: Array) -> bool:
    mask = np.zeros(a.shape, bool)
    idx = a._sharding.devices_indices_map(a.shape)
    for d in a._sharding._device_list:
        if d.id in a._shards:
            mask[idx[d]] = True
    return bool(mask.all())


def on_device(x: Array, device: Device) -> Array:
    """A single-device array holding ``x``'s value on ``device`` (``x`` itself when it is
    there; otherwise copied through host memory)."""
    if x._shards is None and device_of_runtime(runtime.runtime_of(x._buffer)) == device:
        return x
    if x._shards is not None and device.id in x._shards and x._sharding.is_fully_replicated:
        return x._shards[device.id]
    return Array(execute.upload(device._rt, x._value()), x.aval)


def shard_host_value(host: np.ndarray, aval: ShapedArray, sharding) -> Array:
    """A host value laid out by ``sharding``: each addressable device gets its piece."""
    idx = sharding.devices_indices_map(aval.shape)
    keep = sharding.unreduced_keep(aval.shape) if getattr(
        getattr(sharding, "spec", None), "unreduced", None) else {}
    shards = {}
    for d in sharding._device_list:
        if d.is_addressable:
            piece = np.ascontiguousarray(host[idx[d]])
            if d in keep:             # unreduced: the value is the sum of the devices' pieces
                mask = np.zeros_like(piece)
                mask[keep[d]] = piece[keep[d]]
                piece = mask
            shards[d.id] = Array(execute.upload(d._rt, piece), aval.update(shape=piece.shape))
    if len(sharding._device_list) == 1:
        return next(iter(shards.values()))
    return Array.sharded(aval, sharding, shards)


def from_host(host: np.ndarray, aval: ShapedArray | None, device: Device) -> Array:
    """A host value (already of its dtype) uploaded to ``device``."""
    host = np.asarray(host)
    if aval is None:
        aval = ShapedArray(host.shape, host.dtype)
    return Array(execute.upload(device._rt, host), aval)


def put(x, where) -> Array:
    """``x`` (an Array or a host value) on a device or laid out by a sharding."""
    if not isinstance(x, Array):
        x = asarray_device(x)
    if where is None:
        return x
    if isinstance(where, Device):
        return on_device(x, where)
    if isinstance(where, SingleDeviceSharding):
        return on_device(x, where._device)
    if not isinstance(where, Sharding):
        raise ValueError(f"{where!r} is not a device or a sharding of wjax (devices: "
                         f"{all_devices()})")
    if x._sharding is not None and x._sharding == where:
        return x
    if len(getattr(where, "_device_list", ())) == 1:
        return on_device(x, where._device_list[0])
    if x._shards is None:
        # pieces of a single-device array: copies through host memory
        return shard_host_value(x._value(), x.aval, where)
    if x._sharding.is_fully_replicated or _covers(x):
        return shard_host_value(x._value(), x.aval, where)
    raise NotImplementedError("resharding an array whose shards live in other processes")


# --------------------------------------------------------------------------- upload

def asarray_device(x, dtype=None, weak_type=None, guard: bool = True,
                   device: Device | None = None) -> Array:
    """Uploads a host value (NumPy array, Python scalar, nested list) as an Array (on
    ``device``; the default device when None).

    64-bit values are narrowed to 32 bits as JAX does with x64 off.  The upload is a
    host-to-device transfer for the transfer guards (``guard=False``: the caller checked)."""
    if isinstance(x, Array) and dtype is None:
        return x
    if dtype is None:
        dt, weak = dtypes.dtype_and_weak(x)
    else:
        dt, weak = dtypes.check_supported(dtype), False
    if weak_type is not None:
        weak = weak_type
    dt = dtypes.check_supported(dt)
    rt = runtime.get() if device is None else device._rt
    if dt == np.float16 and not rt.has_f16:
        raise TypeError(f"float16 needs the adapter feature 'shader-f16', which "
                        f"{rt.describe()} does not have")
    host = np.asarray(x)
    if host.dtype.kind in "OSUVMm" and host.dtype != dtypes.bfloat16:
        raise TypeError(f"wjax does not support arrays of dtype {host.dtype}")
    val = host.astype(dt, copy=False)
    aval = ShapedArray(val.shape, dt, weak)
    if guard:
        check_transfer("host_to_device", aval)
    return Array(execute.upload(rt, val), aval)


# --------------------------------------------------------------------------- jax.Array

class _ArrayMeta(type):
    _members: tuple = ()                 # Array, Tracer, and types registered from above

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls._members)

    def __subclasscheck__(cls, sub) -> bool:
        return isinstance(sub, type) and issubclass(sub, cls._members)

    def register(cls, member: type) -> type:
        """Counts ``member``'s instances as ``jax.Array``s (typed PRNG key arrays)."""
        cls._members = cls._members + (member,)
        return member


class BaseArray(metaclass=_ArrayMeta):
    """The public array type, ``jax.Array``: ``isinstance(x, jax.Array)`` holds for device
    arrays and for tracers (inside ``jit``, ``grad``, ``vmap``), as in JAX, so libraries' checks
    and annotations treat both alike.  Device arrays are instances of :class:`Array`."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("jax.Array cannot be instantiated directly; use jax.numpy.asarray")


BaseArray._members = (Array, Tracer)
