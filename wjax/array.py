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
from .core.tracing import Tracer


# --------------------------------------------------------------------------- devices

class Device:
    """The WebGPU device wjax runs on (one per process)."""

    platform = "webgpu"

    def __init__(self, rt, id=0):
        self.id = id
        self._rt = rt
        info = rt.adapter.info
        self.device_kind = info["device"]
        self.backend = info["backend_type"]
        self.adapter_type = info["adapter_type"]

    def __repr__(self):
        return f"WebGPUDevice(id={self.id}, kind={self.device_kind!r}, backend={self.backend})"

    def __hash__(self):
        return hash(("webgpu", self.id))

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def memory_stats(self) -> dict:
        """Device memory held by wjax, in JAX's keys: ``bytes_in_use`` (live arrays and
        temporaries), ``peak_bytes_in_use``, ``bytes_reserved`` (in use plus the pool of free
        buffers kept for reuse), ``pool_bytes``, ``pool_bytes_limit`` (``WJAX_POOL_MB``),
        ``num_allocs``, ``largest_alloc_size``, ``bytes_limit`` (the largest buffer)."""
        return self._rt.memory_stats()

    def live_buffers(self):
        return live_arrays()


_device = None


def default_device() -> Device:
    global _device
    if _device is None:
        _device = Device(runtime.get())
    return _device


class Sharding:
    """Base class of shardings (``jax.sharding.Sharding``); wjax has one device, so every
    sharding is fully replicated on it."""

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
    def memory_kind(self) -> str:
        return "device"

    @property
    def addressable_devices(self) -> set[Device]:
        return self.device_set


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


# --------------------------------------------------------------------------- Array

_live: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()   # id -> Array


def live_arrays(platform=None) -> list:
    """Every Array alive in this process (``jax.live_arrays()``)."""
    return list(_live.values())


class Array:
    """An immutable n-d array on the WebGPU device."""

    __array_priority__ = 100
    __hash__ = None

    __slots__ = ("aval", "buffer", "_npy", "__weakref__")

    def __init__(self, buffer: Any, aval: ShapedArray):
        self.buffer: Any = buffer                 # a runtime Buffer (device memory)
        self.aval: ShapedArray = aval
        self._npy: np.ndarray | None = None       # the host copy, once read
        _live[id(self)] = self

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)

    # ------------------------------------------------------------ host side
    def _value(self) -> np.ndarray:
        if self._npy is None:
            check_transfer("device_to_host", self.aval)
            self._npy = execute.download(runtime.get(), self.buffer, self.aval)
        return self._npy

    def __array__(self, dtype=None, copy=None):
        v = self._value()
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        if copy:
            return v.copy()
        return v

    def block_until_ready(self) -> "Array":
        runtime.get().synchronize()
        return self

    def copy_to_host_async(self) -> None:
        runtime.get().flush()

    def is_ready(self) -> bool:
        return True

    def devices(self) -> set[Device]:
        return {default_device()}

    @property
    def device(self) -> Device:
        return default_device()

    @property
    def sharding(self) -> SingleDeviceSharding:
        return SingleDeviceSharding(default_device())

    def to_device(self, device: Any, /, *, stream: Any = None) -> "Array":
        """This array on ``device``: wjax has one device, so it is this array."""
        target = getattr(device, "device_set", None)          # a sharding
        targets = target if target is not None else {device}
        if any(d is not None and d != default_device() for d in targets):
            raise ValueError(f"to_device: wjax runs on one device ({default_device()}), "
                             f"not {device!r}")
        return self

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


# --------------------------------------------------------------------------- upload

def asarray_device(x, dtype=None, weak_type=None, guard: bool = True) -> Array:
    """Uploads a host value (NumPy array, Python scalar, nested list) as an Array.

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
    rt = runtime.get()
    if dt == np.float16 and not rt.has_f16:
        raise TypeError(f"float16 needs the adapter feature 'shader-f16', which "
                        f"{rt.describe()} does not have")
    host = np.asarray(x)
    if host.dtype.kind in "cOSUVMm":
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
