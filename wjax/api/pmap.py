"""``pmap`` on the one WebGPU device wjax drives: ``jit(vmap(f, axis_name=...))`` over an axis
as long as there are devices (one), as JAX does on a one-device machine.  Collectives over
the axis name work as under ``vmap`` (``wjax/prims/collective.py``)."""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .jit import jit
from .vmap import _check_axes_types, _Vmapped


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None,
         donate_argnums: int | Sequence[int] = ()) -> Callable:
    """Maps ``fun`` over the leading axis of its arguments, one example per device."""
    if not callable(fun):
        raise TypeError(f"pmap requires a callable, got {fun!r}")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_types(in_axes, out_axes)
    n_devices = 1 if devices is None else len(devices)
    static = ((static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int)
              else tuple(static_broadcasted_argnums))
    mapped = _Vmapped(fun, in_axes, out_axes, axis_name, axis_size, max_size=n_devices)
    compiled = jit(mapped, static_argnums=static)
    return functools.wraps(fun)(lambda *args, **kwargs: compiled(*args, **kwargs))
