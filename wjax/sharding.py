"""``jax.sharding``: meshes, partition specs and shardings over wjax's devices.

A ``Mesh`` arranges devices (``jax.devices()``: logical devices made by ``jax_num_cpu_devices``,
or every GPU adapter) in named axes; a ``NamedSharding(mesh, P(...))`` says which block of an
array each device holds (``devices_indices_map``).  ``jax.device_put(x, sharding)`` makes an
``Array`` of per-device shards (``wjax/_src/array.py``); ``wjax/_src/spmd.py`` runs programs over
them."""
from __future__ import annotations

import collections
import contextlib
import enum
from typing import Any, Sequence

import numpy as np

from ._src import array as _array_mod
from ._src.array import Device, Sharding, SingleDeviceSharding, all_devices, default_device
from ._src.core.ir import ShapedArray as _ShapedArray
from ._src.core.partition_spec import P, PartitionSpec, _trim, spec_axes  # noqa: F401


class IndivisibleError(ValueError):
    """A sharded dimension whose size its device count does not divide."""


class AxisType(enum.Enum):
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


def _axis_desc(names, sizes, types) -> str:
    axes = ", ".join(f"{n!r}: {s}" for n, s in zip(names, sizes))
    return f"{axes}, axis_types={tuple(types)!r}"


class AbstractMesh:
    """A mesh's axis names and sizes, without devices."""

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str],
                 axis_types: Sequence[AxisType] | None = None):
        self.axis_sizes = tuple(int(s) for s in axis_sizes)
        self.axis_names = tuple(axis_names)
        if len(self.axis_sizes) != len(self.axis_names):
            raise ValueError(f"AbstractMesh: {len(self.axis_sizes)} axis sizes for "
                             f"{len(self.axis_names)} axis names")
        self.axis_types = tuple(axis_types or (AxisType.Auto,) * len(self.axis_names))
        self.device_kind = self.platform = None       # a concrete mesh's abstract_mesh has them

    @property
    def shape(self) -> collections.OrderedDict:
        return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return int(np.prod(self.axis_sizes, dtype=np.int64))

    @property
    def empty(self) -> bool:
        return not self.axis_names

    def __eq__(self, other):
        return (isinstance(other, AbstractMesh) and self.axis_sizes == other.axis_sizes
                and self.axis_names == other.axis_names and self.axis_types == other.axis_types)

    def __hash__(self):
        return hash((self.axis_sizes, self.axis_names, self.axis_types))

    def __repr__(self):
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        extra = ""
        if self.device_kind is not None:
            extra = (f", device_kind={self.device_kind}, num_cores=None, "
                     f"platform={self.platform}")
        return (f"AbstractMesh({_axis_desc(self.axis_names, self.axis_sizes, self.axis_types)}"
                f"{extra})")


class Mesh(contextlib.ContextDecorator):
    """Devices arranged in named axes (``with mesh:`` or ``jax.set_mesh(mesh)`` makes it the
    current mesh)."""

    def __init__(self, devices: Any, axis_names: str | Sequence[str],
                 axis_types: Sequence[AxisType] | None = None):
        self.devices = np.asarray(devices, dtype=object)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if self.devices.ndim != len(self.axis_names):
            raise ValueError(f"Mesh requires the ndim of its first argument ({self.devices.ndim}) "
                             f"to match the length of axis_names ({len(self.axis_names)})")
        if self.devices.size != len(set(self.devices.flat)):
            raise ValueError(f"Mesh: devices are not unique: {self.devices.tolist()}")
        self.axis_types = tuple(axis_types or (AxisType.Auto,) * len(self.axis_names))

    @property
    def shape(self) -> collections.OrderedDict:
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.devices.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def abstract_mesh(self) -> AbstractMesh:
        m = AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)
        m.device_kind, m.platform = "webgpu", "webgpu"
        return m

    @property
    def local_devices(self) -> list:
        return [d for d in self.devices.flat if d.is_addressable]

    @property
    def is_multi_process(self) -> bool:
        return any(not d.is_addressable for d in self.devices.flat)

    def coords(self) -> dict:
        """Device id -> its coordinate (one index per axis)."""
        return {d.id: c for c, d in np.ndenumerate(self.devices)}

    def __enter__(self):
        _mesh_stack.append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack.pop()
        return False

    def __eq__(self, other):
        return (isinstance(other, Mesh) and self.axis_names == other.axis_names
                and self.devices.shape == other.devices.shape
                and list(self.devices.flat) == list(other.devices.flat))

    def __hash__(self):
        return hash((self.axis_names, self.devices.shape, tuple(self.devices.flat)))

    def __str__(self):
        return f"Mesh({_axis_desc(self.axis_names, self.axis_sizes, self.axis_types)})"

    def __repr__(self):
        return (f"Mesh(axis_sizes={self.axis_sizes!r}, axis_names={self.axis_names!r}, "
                f"axis_types={self.axis_types!r})")


_mesh_stack: list[Mesh] = []


class NamedSharding(Sharding):
    """An array split over a mesh's named axes by a ``PartitionSpec``."""

    def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec | None = None, *,
                 memory_kind: str | None = None):
        self.mesh = mesh
        self.spec = (PartitionSpec() if spec is None else spec if isinstance(spec, PartitionSpec)
                     else PartitionSpec(*spec))
        names = set(mesh.axis_names)
        for part in self.spec:
            for axis in (part if isinstance(part, tuple) else (part,)):
                if axis is not None and axis not in names:
                    raise ValueError(f"Resource axis: {axis} of {self.spec} is not found in mesh: "
                                     f"{tuple(mesh.axis_names)}.")

    def update(self, *, mesh: Mesh | AbstractMesh | None = None, spec: Any = None,
               memory_kind: str | None = None) -> "NamedSharding":
        return NamedSharding(self.mesh if mesh is None else mesh,
                             self.spec if spec is None else spec)

    @property
    def _device_list(self) -> list:
        if isinstance(self.mesh, Mesh):
            return list(self.mesh.devices.flat)
        return [default_device()]

    @property
    def device_set(self) -> set[Device]:
        return set(self._device_list)

    @property
    def is_fully_replicated(self) -> bool:
        if self.spec.unreduced:
            return False
        sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
        return all(sizes[a] == 1 for p in self.spec for a in spec_axes(p))

    def _parts(self, ndim: int) -> list:
        return list(self.spec) + [None] * (ndim - len(self.spec))

    def shard_shape(self, global_shape) -> tuple:
        sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
        out = []
        for n, p in zip(global_shape, self._parts(len(global_shape))):
            k = int(np.prod([sizes[a] for a in spec_axes(p)], dtype=np.int64))
            out.append(n // k)
        return tuple(out)

    def check_shape(self, global_shape, what: str = "device_put") -> None:
        """JAX's ValueError when a sharded dimension is not divisible by its device count."""
        if len(self.spec) > len(global_shape):
            raise ValueError(f"Sharding {self} is only valid for values of rank at least "
                             f"{len(self.spec)}, but was applied to a value of rank "
                             f"{len(global_shape)}")
        sizes = dict(zip(self.mesh.axis_names, self.mesh.axis_sizes))
        for d, (n, p) in enumerate(zip(global_shape, self._parts(len(global_shape)))):
            k = int(np.prod([sizes[a] for a in spec_axes(p)], dtype=np.int64))
            if n % k:
                factors = [int(np.prod([sizes[a] for a in spec_axes(q)], dtype=np.int64))
                           for q in self._parts(len(global_shape))]
                raise IndivisibleError(
                    f"Sharding {self} implies that array axis {d} is partitioned {k} times, "
                    f"but the dimension size is {n} (full shape: {tuple(global_shape)}, "
                    f"per-dimension tiling factors: {factors} should evenly divide the shape)")

    def devices_indices_map(self, global_shape) -> dict:
        """Device -> the block of a ``global_shape`` array it holds (a tuple of slices)."""
        names, sizes = self.mesh.axis_names, dict(zip(self.mesh.axis_names,
                                                        self.mesh.axis_sizes))
        pos = {a: i for i, a in enumerate(names)}
        out = {}
        for c, d in np.ndenumerate(self.mesh.devices):
            idx = []
            for n, p in zip(global_shape, self._parts(len(global_shape))):
                axes = spec_axes(p)
                if not axes:
                    idx.append(slice(None))
                    continue
                k, j = 1, 0
                for a in axes:
                    j = j * sizes[a] + c[pos[a]]
                    k *= sizes[a]
                b = n // k
                idx.append(slice(j * b, (j + 1) * b))
            out[d] = tuple(idx)
        return out

    def replica_ids(self) -> dict:
        """Device -> its index among the devices holding the same block."""
        used = {a for p in self.spec for a in spec_axes(p)}
        free = [i for i, a in enumerate(self.mesh.axis_names) if a not in used]
        out = {}
        for c, d in np.ndenumerate(self.mesh.devices):
            j = 0
            for i in free:
                j = j * self.mesh.axis_sizes[i] + c[i]
            out[d] = j
        return out

    def unreduced_keep(self, global_shape) -> dict:
        """For an ``unreduced`` array, device -> the part of its block it holds (zeros
        elsewhere, so the value is the sum over the unreduced axes): as JAX lays it out, each
        unreduced axis splits the first dimension no other axis splits."""
        block = self.shard_shape(global_shape)
        parts = self._parts(len(global_shape))
        names = list(self.mesh.axis_names)
        free = [d for d, p in enumerate(parts) if not spec_axes(p)]
        assign = {}
        for a in sorted(self.spec.unreduced, key=names.index):
            k = self.mesh.axis_sizes[names.index(a)]
            for d in free:
                if d not in assign.values() and block[d] % k == 0:
                    assign[a] = d
                    break
        out = {}
        for c, dev in np.ndenumerate(self.mesh.devices):
            idx = [slice(None)] * len(global_shape)
            for a, d in assign.items():
                i = names.index(a)
                n = block[d] // self.mesh.axis_sizes[i]
                idx[d] = slice(c[i] * n, (c[i] + 1) * n)
            out[dev] = tuple(idx)
        return out

    def with_spec(self, spec) -> "NamedSharding":
        return NamedSharding(self.mesh, spec)

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh
                and self.spec == other.spec)

    def __hash__(self):
        return hash((self.mesh, self.spec))

    def __repr__(self):
        if isinstance(self.mesh, AbstractMesh):
            return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh of the current mesh (``with mesh:``, ``jax.set_mesh``), else empty."""
    m = get_mesh()
    return m.abstract_mesh if m is not None else AbstractMesh((), ())


def get_mesh() -> Mesh | None:
    if _mesh_stack:
        return _mesh_stack[-1]
    return _global_mesh[0]


_global_mesh: list = [None]
_array_mod._current_mesh[0] = lambda: get_mesh()


class set_mesh:
    """``jax.set_mesh(mesh)`` makes ``mesh`` the current mesh at once; used as a context
    manager it restores the previous one on exit."""

    def __init__(self, mesh: Mesh):
        if not isinstance(mesh, Mesh):
            raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
        self.mesh, self.prev = mesh, _global_mesh[0]
        _global_mesh[0] = mesh

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _global_mesh[0] = self.prev
        return False


use_mesh = set_mesh


@contextlib.contextmanager
def use_abstract_mesh(abstract_mesh: AbstractMesh):
    """Within the block the current mesh has ``abstract_mesh``'s axes (same device count):
    the current mesh's devices in that shape."""
    cur = get_mesh()
    if cur is None:
        raise ValueError("use_abstract_mesh needs a current mesh (jax.set_mesh)")
    if cur.size != abstract_mesh.size:
        raise ValueError(f"use_abstract_mesh: the abstract mesh {abstract_mesh} has "
                         f"{abstract_mesh.size} devices, the current mesh {cur.size}")
    m = Mesh(cur.devices.reshape(abstract_mesh.axis_sizes), abstract_mesh.axis_names,
             axis_types=abstract_mesh.axis_types)
    _mesh_stack.append(m)
    try:
        yield
    finally:
        _mesh_stack.pop()


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: Sequence[AxisType] | None = None, *, devices: Any = None) -> Mesh:
    """A mesh of the first ``prod(axis_shapes)`` devices, row-major (``jax.make_mesh``; axes
    are ``Explicit`` unless ``axis_types`` says otherwise)."""
    axis_shapes = tuple(int(s) for s in axis_shapes)
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"Mismatched lengths of axis_shapes={axis_shapes} and "
                         f"axis_names={axis_names}")
    devs = list(all_devices() if devices is None else devices)
    n = int(np.prod(axis_shapes, dtype=np.int64))
    if n > len(devs):
        raise ValueError(f"Number of devices {len(devs)} must be >= the product of mesh_shape "
                         f"{axis_shapes}")
    arr = np.empty(n, dtype=object)
    arr[:] = devs[:n]
    types = tuple(axis_types) if axis_types is not None else (AxisType.Explicit,) * len(
        axis_names)
    return Mesh(arr.reshape(axis_shapes), axis_names, axis_types=types)


def current_sharding(spec) -> "NamedSharding":
    """``jax.P`` given where a sharding is expected: a NamedSharding over the current mesh."""
    m = get_mesh()
    if m is None:
        raise ValueError(f"Using a PartitionSpec {spec} needs a mesh: use jax.set_mesh(mesh) "
                         f"or pass a NamedSharding")
    return NamedSharding(m, spec)


def make_single_device_sharding(device: Device) -> SingleDeviceSharding:
    return SingleDeviceSharding(device)


def _aval_sharding(aval) -> NamedSharding:
    """``jax.typeof(x).sharding``: a replicated sharding over the current abstract mesh (every
    dimension unsplit), as JAX gives for arrays that were not sharded explicitly."""
    return NamedSharding(get_abstract_mesh(), PartitionSpec(*(None,) * len(aval.shape)))


# the abstract value is a core type; its ``sharding`` is installed from here, as the array
# methods are installed by wjax.numpy
_ShapedArray.sharding = property(_aval_sharding)

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec",
           "Sharding", "SingleDeviceSharding", "get_abstract_mesh", "get_mesh",
           "make_mesh", "make_single_device_sharding", "set_mesh", "use_abstract_mesh",
           "use_mesh"]

