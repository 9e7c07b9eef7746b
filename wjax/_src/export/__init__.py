"""``jax.export`` and the web bundle: a jitted function as a recorded WebGPU program that runs
in another process or in a browser (``_export.py``, ``serialization.py``, ``web.py``)."""
from ._export import (  # noqa: F401
    DisabledSafetyCheck, Exported, SymbolicScope, default_export_platform, deserialize, export,
    is_symbolic_dim, maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version, symbolic_args_specs, symbolic_shape)
from .serialization import (  # noqa: F401
    FORMAT_VERSION, register_namedtuple_serialization, register_pytree_node_serialization)
