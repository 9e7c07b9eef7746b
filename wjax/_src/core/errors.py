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


class JAXIndexError(IndexError):
    """JAX's index error base class (for ``except`` clauses written against JAX)."""


class JaxprTypeError(TypeError):
    """A jaxpr failed its type check."""


class KeyReuseError(JAXTypeError):
    """A PRNG key was consumed twice (JAX's key-reuse checker; wjax does not check keys)."""


class InconclusiveDimensionOperation(Exception):
    """A comparison of symbolic dimensions could not be decided (shape polymorphism, which
    wjax does not have: every dimension is concrete)."""
