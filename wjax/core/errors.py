"""JAX's error types (``jax.errors``), raised by tracing and the layers above."""
from __future__ import annotations


class JAXTypeError(TypeError):
    pass


class ConcretizationTypeError(JAXTypeError):
    pass


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(JAXTypeError):
    pass


class TracerArrayConversionError(JAXTypeError):
    pass


class NonConcreteBooleanIndexError(IndexError):
    pass


class UnexpectedTracerError(Exception):
    pass


class JaxRuntimeError(RuntimeError):
    """An error while a program ran on the device side (e.g. raised by a host callback)."""
