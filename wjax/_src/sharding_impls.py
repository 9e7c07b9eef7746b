"""Shardings over meshes (JAX's ``jax._src.sharding_impls``): ``NamedSharding`` -- an array
split over a mesh's named axes by a ``PartitionSpec`` -- and ``make_mesh``.

The ``Sharding`` base classes and ``Device`` are the ``Array``'s (``wjax/_src/array.py``), the
meshes and the current mesh ``wjax/_src/core/mesh.py``'s; the public names are
``jax.sharding``'s (``wjax/sharding.py``)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .array import Device, Sharding, SingleDeviceSharding, all_devices, default_device
from .core import ir as _ir
from .core.mesh import AbstractMesh, AxisType, Mesh, get_abstract_mesh, get_mesh
from .core.partition_spec import PartitionSpec, spec_axes


class IndivisibleError(ValueError):
    """A sharded dimension whose size its device count does not divide."""


class NamedSharding(Sharding):
    """An array split over a mesh's named axes by a ``PartitionSpec``."""

    def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec | None = None, *,
                 memory_kind: str | None = None):
        self.mesh = mesh
        self.spec = (PartitionSpec() if spec is None else spec if isinstance(spec, PartitionSpec)
                     else PartitionSpec(*spec))
        names = set(mesh.axis_names)
        for part in self.spec:
            for axis in spec_axes(part):
                if axis not in names:
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


# ``jax.typeof(x).sharding`` of a value on no mesh (a core ``ShapedArray``)
_ir.aval_sharding_hook = _aval_sharding
