"""``jax._src.checkify``: the checkify module under its private name (flax's ``nnx.checkify``
imports it so), with the type variable ``Out`` of its signatures."""
from typing import TypeVar

from ..experimental.checkify import (DivisionByZeroError, Error, FailedCheckError, JaxException,
                                     JaxRuntimeError, NaNError, OOBError, all_checks,
                                     automatic_checks, check, checkify, debug_check, div_checks,
                                     float_checks, index_checks, init_error, nan_checks,
                                     user_checks)

Out = TypeVar("Out")

__all__ = ["DivisionByZeroError", "Error", "FailedCheckError", "JaxException", "JaxRuntimeError",
           "NaNError", "OOBError", "Out", "all_checks", "automatic_checks", "check", "checkify",
           "debug_check", "div_checks", "float_checks", "index_checks", "init_error",
           "nan_checks", "user_checks"]
