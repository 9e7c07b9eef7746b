"""``jax._src.test_util``: the helpers JAX's docs import from JAX's internal test utilities --
``check_grads`` and friends (``wjax.test_util``) and ``create_mesh``."""
from __future__ import annotations

from ..sharding import Mesh
from ..test_util import check_grads, check_jvp, check_vjp  # noqa: F401
from .sharding_impls import make_mesh


def create_mesh(mesh_shape, axis_names, iota_order: bool = False, axis_types=None) -> Mesh:
    """A mesh of ``mesh_shape`` over the first devices, named ``axis_names`` (JAX's test
    helper)."""
    return make_mesh(tuple(mesh_shape), tuple(axis_names), axis_types=axis_types)
