"""``jax.extend.linear_util``: functions wrapped with their fixed parameters and a stack of
transformations, as JAX's tracing machinery passes them around.  wjax traces plain Python
callables; this module lets library code written against JAX's wrapper run over them."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["Store", "WrappedFun", "cache", "merge_linear_aux", "transformation",
           "transformation2", "transformation_with_aux", "transformation_with_aux2",
           "wrap_init"]


class Store:
    """A box filled once by a transformation (an auxiliary output)."""

    _EMPTY = object()

    def __init__(self):
        self._val = Store._EMPTY

    def store(self, val: Any) -> None:
        if self._val is not Store._EMPTY:
            raise RuntimeError("Store occupied")
        self._val = val

    @property
    def val(self) -> Any:
        if self._val is Store._EMPTY:
            raise RuntimeError("Store empty")
        return self._val

    def __call__(self) -> Any:
        return self.val

    def __bool__(self) -> bool:
        return self._val is not Store._EMPTY


class WrappedFun:
    """``f`` with keyword ``params``; ``call_wrapped(*args)`` runs it."""

    def __init__(self, f: Callable, params: dict | None = None, debug_info: Any = None):
        self.f, self.params, self.debug_info = f, dict(params or {}), debug_info

    def call_wrapped(self, *args, **kwargs):
        return self.f(*args, **self.params, **kwargs)

    def __call__(self, *args, **kwargs):
        return self.call_wrapped(*args, **kwargs)

    def __repr__(self):
        return f"Wrapped function: {getattr(self.f, '__name__', self.f)}"

    @property
    def __name__(self):
        return getattr(self.f, "__name__", "wrapped")


def wrap_init(f: Callable, params: dict | None = None, *, debug_info: Any = None) -> WrappedFun:
    return WrappedFun(f, params, debug_info)


def transformation(gen: Callable) -> Callable:
    """A generator transformation: ``gen(*gen_args, *args)`` yields ``(args, kwargs)`` for the
    wrapped function, receives its result, and yields the transformed result."""
    def apply(fun: WrappedFun, *gen_args) -> WrappedFun:
        def run(*args, **kwargs):
            g = gen(*gen_args, *args, **kwargs)
            inner_args, inner_kwargs = next(g)
            return g.send(fun.call_wrapped(*inner_args, **inner_kwargs))
        return WrappedFun(run, {}, fun.debug_info)
    return apply


def transformation_with_aux(gen: Callable) -> Callable:
    """Like ``transformation``; the generator's final yield is ``(result, aux)`` and the aux
    goes to the returned thunk."""
    def apply(fun: WrappedFun, *gen_args):
        store = Store()

        def run(*args, **kwargs):
            g = gen(*gen_args, *args, **kwargs)
            inner_args, inner_kwargs = next(g)
            out, aux = g.send(fun.call_wrapped(*inner_args, **inner_kwargs))
            store.store(aux)
            return out
        return WrappedFun(run, {}, fun.debug_info), store
    return apply


def transformation2(fn: Callable) -> Callable:
    """``fn(inner_call, *gen_args, *args)``: a transformation as a plain function."""
    def apply(fun: WrappedFun, *gen_args) -> WrappedFun:
        return WrappedFun(lambda *a, **k: fn(fun.call_wrapped, *gen_args, *a, **k), {},
                          fun.debug_info)
    return apply


def transformation_with_aux2(fn: Callable) -> Callable:
    """``fn(inner_call, store, *gen_args, *args)``; returns the fun and the aux thunk."""
    def apply(fun: WrappedFun, *gen_args):
        store = Store()
        return WrappedFun(lambda *a, **k: fn(fun.call_wrapped, store, *gen_args, *a, **k), {},
                          fun.debug_info), store
    return apply


def cache(call: Callable, **kwargs) -> Callable:
    """Memoizes ``call(fun, *args)`` per wrapped function and arguments."""
    memo: dict = {}

    def cached(fun: WrappedFun, *args):
        key = (id(fun.f), tuple(sorted(fun.params.items())), args)
        if key not in memo:
            memo[key] = call(fun, *args)
        return memo[key]
    return cached


def merge_linear_aux(aux1: Store, aux2: Store):
    """The value of whichever of two stores was filled."""
    return aux1.val if aux1 else aux2.val
