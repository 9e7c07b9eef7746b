"""wjax.errors: JAX's error types (``jax.errors``)."""
from .staging import (ConcretizationTypeError, NonConcreteBooleanIndexError,  # noqa: F401
                      TracerArrayConversionError, TracerBoolConversionError,
                      TracerIntegerConversionError, UnexpectedTracerError)
