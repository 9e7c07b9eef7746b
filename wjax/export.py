"""``jax.export``: a jitted function as a serialized WebGPU program (see docs/export.md)."""
from ._src.export import (  # noqa: F401
    DisabledSafetyCheck, Exported, SymbolicScope, default_export_platform, deserialize, export,
    is_symbolic_dim, maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version, register_namedtuple_serialization,
    register_pytree_node_serialization, symbolic_args_specs, symbolic_shape)
from ._src.export.serialization import FORMAT_VERSION

minimum_supported_serialization_version = FORMAT_VERSION
maximum_supported_serialization_version = FORMAT_VERSION

__all__ = ["DisabledSafetyCheck", "Exported", "SymbolicScope", "default_export_platform",
           "deserialize", "export", "is_symbolic_dim",
           "maximum_supported_calling_convention_version",
           "minimum_supported_calling_convention_version",
           "register_namedtuple_serialization", "register_pytree_node_serialization",
           "symbolic_args_specs", "symbolic_shape"]
