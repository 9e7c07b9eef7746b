"""Every cache wjax keeps -- traces, transformed jaxprs, compiled executables, uploaded
constants -- is one of the two kinds below, registered here, so ``wjax.clear_caches()``
empties them all (as ``jax.clear_caches()`` does) and gives the device memory they hold back.
A lowest-layer module: it imports nothing from wjax.

* ``LRU(maxsize)``: a bounded mapping; a hit moves the entry to the back, an insert past
  ``maxsize`` evicts the least recently used entry.
* ``Memo(maxsize)``: results derived from objects (jaxprs) keyed by their ``id``s plus extra
  hashable parts; a hit counts only while those very objects are the ones stored (ids are
  reused after garbage collection).  An LRU underneath.
"""
from __future__ import annotations

import collections
import threading
import weakref
from typing import Any, Callable, Hashable

_caches: list = []
_owners: "weakref.WeakSet" = weakref.WeakSet()


class LRU:
    """A bounded least-recently-used mapping (thread-safe)."""

    def __init__(self, maxsize: int):
        self.maxsize = maxsize
        self._d: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        _caches.append(self)

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            hit = self._d.get(key, _MISSING)
            if hit is _MISSING:
                return default
            self._d.move_to_end(key)
            return hit

    def put(self, key: Hashable, value: Any) -> Any:
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.maxsize:
                self._d.popitem(last=False)
        return value

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value under ``key``, made (outside the lock) and stored on a miss."""
        hit = self.get(key, _MISSING)
        return self.put(key, make()) if hit is _MISSING else hit

    def clear(self) -> None:
        with self._lock:
            self._d.clear()

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key) -> bool:
        return key in self._d


class Memo:
    """Values derived from objects (jaxprs), keyed by their identities and extra parts."""

    def __init__(self, maxsize: int = 512):
        self._lru = LRU(maxsize)

    def get_or_make(self, objs: tuple, extra: Hashable, make: Callable[[], Any]) -> Any:
        """``make()``, cached while the objects ``objs`` are the very ones it was made from."""
        key = (tuple(id(o) for o in objs), extra)
        hit = self._lru.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], objs)):
            return hit[1]
        value = make()
        self._lru.put(key, (objs, value))
        return value

    def clear(self) -> None:
        self._lru.clear()


_MISSING = object()


def register_owner(obj):
    """Registers an object holding a cache of its own (a ``jit`` wrapper): its ``clear_cache()``
    is called, for as long as it lives."""
    _owners.add(obj)
    return obj


def clear_all() -> None:
    for c in _caches:
        c.clear()
    for o in list(_owners):
        o.clear_cache()
