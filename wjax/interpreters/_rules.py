"""A dict-like view of one rule slot of every primitive (``ad.primitive_jvps`` is the ``jvp``
slot): setting an entry sets the primitive's rule."""
from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Callable


class RuleTable(MutableMapping):
    def __init__(self, slot: str, wrap: Callable[[Any, Callable], Callable] | None = None):
        self.slot = slot
        self.wrap = wrap or (lambda prim, rule: rule)
        self._given: dict = {}       # prim -> the rule as the user gave it

    def __getitem__(self, prim):
        if prim in self._given:
            return self._given[prim]
        rule = getattr(prim, self.slot, None)
        if rule is None:
            raise KeyError(prim)
        return rule

    def __setitem__(self, prim, rule):
        self._given[prim] = rule
        setattr(prim, self.slot, self.wrap(prim, rule))

    def __delitem__(self, prim):
        if getattr(prim, self.slot, None) is None:
            raise KeyError(prim)
        self._given.pop(prim, None)
        setattr(prim, self.slot, None)

    def __iter__(self):
        return iter(list(self._given))

    def __len__(self):
        return len(self._given)

    def __contains__(self, prim):
        return getattr(prim, self.slot, None) is not None
