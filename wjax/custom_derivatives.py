"""``jax.custom_derivatives``: the public module (implementation:
``wjax/_src/api/custom_derivatives.py``, primitives in ``wjax/_src/prims/calls.py``)."""
from ._src.api.custom_derivatives import (CustomVJPPrimal, SymbolicZero, closure_convert,  # noqa: F401
                                     custom_gradient, custom_jvp, custom_vjp, linear_call)
from .lax.solves import custom_linear_solve, custom_root  # noqa: F401
from ._src.prims.calls import custom_jvp_call_p, custom_vjp_call_p  # noqa: F401
from ._src.prims.elementwise import stop_gradient_p  # noqa: F401

__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_jvp", "custom_vjp", "closure_convert",
           "custom_gradient", "linear_call"]
