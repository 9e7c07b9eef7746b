"""Every cache wjax keeps -- traces, transformed jaxprs, compiled plans, eager-op plans,
uploaded constants -- is registered here, so ``wjax.clear_caches()`` empties them all (as
``jax.clear_caches()`` does) and gives the device memory they hold back.  A lowest-layer
module: it imports nothing from wjax."""
from __future__ import annotations

import weakref

_caches: list = []
_owners: "weakref.WeakSet" = weakref.WeakSet()


def register(cache):
    """Registers a cache (anything with ``clear()``); returns it."""
    _caches.append(cache)
    return cache


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
