"""``jax.sharding``: meshes, partition specs and shardings over wjax's devices.

A ``Mesh`` arranges devices (``jax.devices()``: logical devices made by ``jax_num_cpu_devices``,
or every GPU adapter) in named axes; a ``NamedSharding(mesh, P(...))`` says which block of an
array each device holds (``devices_indices_map``).  ``jax.device_put(x, sharding)`` makes an
``Array`` of per-device shards (``wjax/_src/array.py``); ``wjax/_src/spmd.py`` runs programs over
them.

The names are defined in the engines: the meshes and the current mesh in
``wjax/_src/core/mesh.py``, the ``Sharding`` base classes in ``wjax/_src/array.py``,
``NamedSharding`` in ``wjax/_src/sharding_impls.py``, ``reshard``/``auto_axes``/
``explicit_axes`` in ``wjax/_src/api/sharding.py``."""
from __future__ import annotations

from ._src.api.sharding import auto_axes, explicit_axes, reshard
from ._src.array import Sharding, SingleDeviceSharding
from ._src.core.mesh import (AbstractMesh, AxisType, Mesh, get_abstract_mesh, get_mesh, set_mesh,
                             use_abstract_mesh, use_mesh)
from ._src.core.partition_spec import P, PartitionSpec
from ._src.sharding_impls import (IndivisibleError, NamedSharding, current_sharding,  # noqa: F401
                                  make_mesh, make_single_device_sharding)

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec",
           "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
           "get_abstract_mesh", "get_mesh", "make_mesh", "make_single_device_sharding",
           "reshard", "set_mesh", "use_abstract_mesh", "use_mesh"]
