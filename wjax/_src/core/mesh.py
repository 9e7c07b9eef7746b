"""Meshes and the current mesh (JAX's ``jax._src.mesh``): ``AxisType``, ``AbstractMesh``
(axis names and sizes), ``Mesh`` (devices in named axes) and the mesh in effect --
``with mesh:``, ``jax.set_mesh``, ``use_abstract_mesh``.

A mesh holds devices as opaque objects (an ``Array``'s ``Device``: its ``id`` and
``is_addressable``), so it sits with the IR: ``wjax/_src/array.py`` reads the current mesh for a
sharded array's type, and the shardings over meshes are ``wjax/_src/sharding_impls.py``'s."""
from __future__ import annotations

import collections
import contextlib
import enum
from typing import Any, Sequence

import numpy as np


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


_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())
_mesh_stack: list[Mesh] = []          # ``with mesh:`` blocks, innermost last
_global_mesh: list = [None]           # ``jax.set_mesh``'s mesh


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh of the current mesh (``with mesh:``, ``jax.set_mesh``), else the
    empty one (one object, as JAX's ``empty_abstract_mesh``: every jit call over a pytree
    keys on it)."""
    m = get_mesh()
    return m.abstract_mesh if m is not None else _EMPTY_ABSTRACT_MESH


def get_mesh() -> Mesh | None:
    if _mesh_stack:
        return _mesh_stack[-1]
    return _global_mesh[0]



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
