"""``PartitionSpec`` (``jax.P``): how each dimension of an array is split over mesh axes.

A plain value type, here so that primitives (``shard_map``'s rules) can build specs; the public
name is ``jax.sharding.PartitionSpec`` (``wjax/sharding.py``)."""
from __future__ import annotations

from typing import Any


class _Unconstrained:
    """``P.UNCONSTRAINED``: a dimension whose split is left to the partitioner (wjax's
    partitioner takes it as unsplit, ``None``)."""

    def __repr__(self):
        return "UNCONSTRAINED"

    def __reduce__(self):
        return (_unconstrained, ())


def _unconstrained():
    return UNCONSTRAINED


UNCONSTRAINED = _Unconstrained()


class PartitionSpec(tuple):
    """How each array dimension is split over mesh axes (``P("x", None)``)."""

    UNCONSTRAINED = UNCONSTRAINED

    def __new__(cls, *parts: Any, unreduced: Any = frozenset(), reduced: Any = frozenset()):
        parts = tuple(tuple(p) if isinstance(p, list) else p for p in parts)
        self = super().__new__(cls, parts)
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)
        return self

    def __repr__(self):
        inner = ", ".join(repr(p) for p in self)
        if self.unreduced:
            extra = "unreduced={" + ", ".join(repr(a) for a in sorted(self.unreduced)) + "}"
            inner = f"{inner}, {extra}" if inner else extra
            return f"P({inner})"
        return f"P({inner},)" if len(self) == 1 else f"P({inner})"

    def __eq__(self, other):
        if isinstance(other, PartitionSpec):
            return (_trim(self) == _trim(other)
                    and self.unreduced == other.unreduced)
        return tuple.__eq__(self, other)

    def __hash__(self):
        return hash((_trim(self), self.unreduced))

    def __reduce__(self):
        return (PartitionSpec, tuple(self))

    def _normalized_spec_for_aval(self, ndim: int) -> "PartitionSpec":
        return PartitionSpec(*(list(self) + [None] * (ndim - len(self))),
                             unreduced=self.unreduced)


def _trim(spec) -> tuple:
    """A spec without trailing Nones (``P('x', None) == P('x')``); 1-tuples of names as names."""
    parts = [p[0] if isinstance(p, tuple) and len(p) == 1 else p for p in spec]
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


def spec_axes(part) -> tuple:
    """The mesh axis names one entry of a spec splits its dimension over."""
    if part is None or part is UNCONSTRAINED:
        return ()
    return tuple(part) if isinstance(part, tuple) else (part,)


P = PartitionSpec


