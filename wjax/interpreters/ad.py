"""``jax.interpreters.ad``: forward- and reverse-mode rules of primitives, as JAX names them.

``primitive_jvps[p] = rule`` with ``rule(primals, tangents, **params) -> (out, tangent_out)``
(a tangent may be a symbolic :class:`Zero`); ``primitive_transposes[p] = rule`` with
``rule(cotangent, *args, **params) -> one cotangent per arg`` (linear args are
:class:`UndefinedPrimal`; ``None`` for the others).  wjax's autodiff is a rewrite of jaxprs
(``wjax/_src/transforms/``), and these are the same rules it uses for its own primitives."""
from __future__ import annotations

from typing import Callable

from .._src.core.tracing import Tracer
from .._src.transforms import ad as _ad
from .._src.transforms.ad import (UndefinedPrimal, Zero, add_tangents, defbilinear, defjvp, defjvp2,
                                  is_undefined_primal, zeros as zeros_like_aval)
from ._rules import RuleTable

__all__ = ["JVPTracer", "UndefinedPrimal", "Zero", "add_jaxvals", "add_tangents", "defbilinear",
           "defjvp", "defjvp2", "deflinear", "deflinear2", "get_primitive_transpose",
           "instantiate_zeros", "is_undefined_primal", "primitive_jvps", "primitive_transposes",
           "zeros_like_aval"]

primitive_jvps = RuleTable("jvp")
primitive_transposes = RuleTable("transpose")
add_jaxvals = add_tangents


def instantiate_zeros(t):
    """A symbolic zero as an array of zeros; anything else as it is."""
    return _ad.instantiate(t)


def deflinear(prim, transpose_rule: Callable) -> None:
    """``prim`` is linear in its operands; ``transpose_rule(cotangent, **params)``."""
    _ad.deflinear(prim, lambda ct, *args, **params: transpose_rule(ct, **params))


def deflinear2(prim, transpose_rule: Callable) -> None:
    """``prim`` is linear; ``transpose_rule(cotangent, *args, **params)``."""
    _ad.deflinear(prim, transpose_rule)


def get_primitive_transpose(prim) -> Callable:
    return primitive_transposes[prim]


class _TracedValue(type):
    def __instancecheck__(cls, x):
        return isinstance(x, Tracer)


class JVPTracer(Tracer, metaclass=_TracedValue):
    """JAX's forward-mode tracer type.  wjax differentiates by rewriting jaxprs: the values a
    function under ``jvp`` sees are the tracers of the jaxpr being recorded, and every tracer
    counts as a JVPTracer for libraries' ``isinstance`` checks (equinox's ``filter_jvp`` then
    compares ``x._trace.main``: the builder)."""
