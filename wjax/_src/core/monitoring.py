"""``jax.monitoring``: events, durations, time spans and scalars reported to registered
listeners.  wjax records ``/jax/core/compile/backend_compile_duration`` (seconds) for every
program it compiles (``backend/compiler.py``); libraries register listeners and record their
own."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_listener", "register_event_duration_secs_listener",
           "register_event_time_span_listener", "register_scalar_listener",
           "unregister_event_listener", "unregister_event_duration_listener",
           "unregister_event_time_span_listener", "unregister_scalar_listener",
           "clear_event_listeners"]

_event: list[Callable] = []
_duration: list[Callable] = []
_span: list[Callable] = []
_scalar: list[Callable] = []


def record_event(event: str, **kwargs: Any) -> None:
    """Calls every event listener with ``event`` and ``kwargs``."""
    for f in list(_event):
        f(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: Any) -> None:
    for f in list(_duration):
        f(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: Any) -> None:
    for f in list(_span):
        f(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: Any) -> None:
    for f in list(_scalar):
        f(event, value, **kwargs)


def register_event_listener(callback: Callable) -> None:
    _event.append(callback)


def register_event_duration_secs_listener(callback: Callable) -> None:
    _duration.append(callback)


def register_event_time_span_listener(callback: Callable) -> None:
    _span.append(callback)


def register_scalar_listener(callback: Callable) -> None:
    _scalar.append(callback)


def _unregister(lst, callback, what):
    if callback not in lst:
        raise AssertionError(f"The callback {callback} is not a registered {what} listener.")
    lst.remove(callback)


def unregister_event_listener(callback: Callable) -> None:
    _unregister(_event, callback, "event")


def unregister_event_duration_listener(callback: Callable) -> None:
    _unregister(_duration, callback, "event duration")


def unregister_event_time_span_listener(callback: Callable) -> None:
    _unregister(_span, callback, "event time span")


def unregister_scalar_listener(callback: Callable) -> None:
    _unregister(_scalar, callback, "scalar")


def clear_event_listeners() -> None:
    """Removes every listener."""
    for lst in (_event, _duration, _span, _scalar):
        lst.clear()
