"""``jax.experimental.hijax``: JAX's "high-level" types (mutable, quasi-dynamic data carried
through traces), as names libraries import.

wjax has no high-level types: its traces carry arrays (and typed keys, refs outside traces)
only.  The classes here exist so that libraries that *define* hi-types and hi-primitives at
import time (flax's ``nnx.Variable``, when ``flax_hijax_variable`` is on) import and run their
ordinary paths; using one -- binding a :class:`HiPrimitive` or registering a value of a
:class:`HiType` into a trace -- raises ``NotImplementedError`` naming what is missing.
"""
from __future__ import annotations

from typing import Any

from .._src.core.ir import AbstractValue, ShapedArray
from ..interpreters.ad import Zero, instantiate_zeros, is_undefined_primal
from ..ref import AbstractRef

__all__ = ["AbstractRef", "AbstractValue", "AvalMutableQDD", "AvalQDD", "HiPrimitive", "HiPspec",
           "HiType", "MutableHiType", "ShapedArray", "TransformedRef", "VJPHiPrimitive", "Zero",
           "aval_method", "aval_property", "control_flow_allowed_effects", "instantiate_zeros",
           "is_undefined_primal", "register_hitype"]

_NO_HIJAX = ("wjax does not implement JAX's high-level types (jax.experimental.hijax): {} "
             "cannot be used; with flax, leave `flax_hijax_variable` off (its default)")


class HiType(AbstractValue):
    """A high-level type: the abstract value of a value that lowers to several arrays."""


class MutableHiType(HiType):
    """A high-level type whose values may be mutated inside a trace."""


class AvalQDD:
    """An abstract value with its quasi-dynamic data (``aval``, ``qdd``)."""

    def __init__(self, aval: Any, qdd: Any):
        self.aval, self.qdd = aval, qdd

    def __repr__(self):
        return f"AvalQDD({self.aval!r}, {self.qdd!r})"


class AvalMutableQDD(AvalQDD):
    """An ``AvalQDD`` whose quasi-dynamic data changes as the trace runs."""


class HiPspec:
    """A partition spec for a high-level type."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class HiPrimitive:
    """A primitive over high-level types: subclasses define ``abstract_eval``, ``to_lojax``,
    ``jvp``, ``transpose`` ...  Binding one raises ``NotImplementedError`` in wjax."""

    multiple_results = False

    def __init__(self, name: str):
        self.name = name

    def bind(self, *args, **params):
        raise NotImplementedError(_NO_HIJAX.format(f"the hi-primitive {self.name!r}"))

    def __repr__(self):
        return self.name


class VJPHiPrimitive(HiPrimitive):
    """A hi-primitive defined by its forward and backward passes."""


class aval_property(property):
    """A property of a hi-type value that is computed from its abstract value."""


class aval_method:
    """A method of a hi-type value that is computed from its abstract value."""

    def __init__(self, fun):
        self.fun = fun

    def __get__(self, obj, objtype=None):
        return self.fun if obj is None else self.fun.__get__(obj, objtype)


class _EffectTypeSet:
    """JAX's set of effect types allowed inside control flow (``add_type``, ``contains``)."""

    def __init__(self):
        self._types: set[type] = set()

    def add_type(self, t: type) -> None:
        self._types.add(t)

    def contains(self, effect) -> bool:
        return isinstance(effect, tuple(self._types))

    def filter_in(self, effects):
        return [e for e in effects if self.contains(e)]

    def filter_not_in(self, effects):
        return [e for e in effects if not self.contains(e)]


control_flow_allowed_effects = _EffectTypeSet()

_hitypes: dict[type, Any] = {}


def register_hitype(cls: type, to_aval) -> None:
    """Records ``to_aval`` for values of ``cls``; wjax refuses such values where a trace meets
    them (``jax.typeof`` and transformations), since it cannot lower them."""
    _hitypes[cls] = to_aval


class TransformedRef:
    """A ref seen through indexing transforms (``ref.at[...]``)."""

    def __init__(self, ref, transforms=()):
        self.ref, self.transforms = ref, tuple(transforms)
