"""``jax.sharding`` for one device: meshes, partition specs and shardings.

wjax runs on one WebGPU device, so every mesh has one device and every sharding is fully
replicated; the classes carry JAX's names, fields and printing so programs and libraries that
build them (``Mesh(jax.devices(), ("x",))``, ``NamedSharding(mesh, P("x"))``) run unchanged."""
from __future__ import annotations

import collections
import contextlib
import enum
from typing import Any, Sequence

import numpy as np

from .array import Device, Sharding, SingleDeviceSharding, default_device
from .core.ir import ShapedArray as _ShapedArray


class AxisType(enum.Enum):
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


class PartitionSpec(tuple):
    """How each array dimension is split over mesh axes (``P("x", None)``)."""

    def __new__(cls, *parts: Any):
        return super().__new__(cls, parts)

    def __repr__(self):
        inner = ", ".join(repr(p) for p in self)
        return f"P({inner},)" if len(self) == 1 else f"P({inner})"

    def __reduce__(self):
        return (PartitionSpec, tuple(self))


P = PartitionSpec


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
        return f"AbstractMesh({_axis_desc(self.axis_names, self.axis_sizes, self.axis_types)})"


class Mesh(contextlib.ContextDecorator):
    """Devices arranged in named axes.  wjax has one device, so every axis has size 1."""

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
        return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)

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
        self.spec = PartitionSpec() if spec is None else PartitionSpec(*spec)
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
    def device_set(self) -> set[Device]:
        if isinstance(self.mesh, Mesh):
            return set(self.mesh.devices.flat)
        return {default_device()}

    def __eq__(self, other):
        return (isinstance(other, NamedSharding) and self.mesh == other.mesh
                and self.spec == other.spec)

    def __hash__(self):
        return hash((self.mesh, self.spec))

    def __repr__(self):
        if isinstance(self.mesh, AbstractMesh):       # as JAX: an abstract one has no memory
            return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r})"
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec!r}, memory_kind=device)"


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh of the ``with mesh:`` block around the caller (empty outside one)."""
    return _mesh_stack[-1].abstract_mesh if _mesh_stack else AbstractMesh((), ())


def get_mesh() -> Mesh | None:
    return _mesh_stack[-1] if _mesh_stack else None


@contextlib.contextmanager
def set_mesh(mesh: Mesh):
    with mesh:
        yield mesh


use_mesh = set_mesh


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
           "make_single_device_sharding", "set_mesh", "use_mesh"]
