"""``jax.experimental.colocated_python``: Python functions and classes run next to the data.

In JAX, the CPU devices of each host run a colocated function on that host, on the shards of
the arrays there.  wjax has one host -- the process running this Python -- so a colocated
function runs here, on its arrays, when it is called; calls made from different threads run
concurrently, as JAX's do.  ``colocated_cpu_devices`` gives the devices themselves (wjax's
host is the one holding every device).  A colocated class wraps its instances: the real
instance is made on the first method call (JAX makes it on the hosts that call reaches) and
goes when the wrapper does.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .._src.core import tree_util
from .._src.core.ir import abstractify

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]


def colocated_cpu_devices(devices: Sequence[Any]) -> list:
    """The CPU devices colocated with ``devices``: in wjax, the devices themselves."""
    return list(devices)


class _ColocatedFunction:
    """A function run as colocated Python; ``specialize`` fixes its input specs, output
    specs function or devices (JAX's)."""

    def __init__(self, fun: Callable, in_specs=None, out_specs_fn=None, devices=None):
        self.fun, self.in_specs, self.out_specs_fn = fun, in_specs, out_specs_fn
        self.devices = devices
        self.__wrapped__ = fun
        self.__name__ = getattr(fun, "__name__", "colocated_python")

    def specialize(self, in_specs=None, out_specs_fn=None, devices=None) -> "_ColocatedFunction":
        return _ColocatedFunction(
            self.fun, self.in_specs if in_specs is None else in_specs,
            self.out_specs_fn if out_specs_fn is None else out_specs_fn,
            self.devices if devices is None else devices)

    def __call__(self, *args, **kwargs):
        leaves = tree_util.tree_leaves((args, kwargs))
        if not leaves and self.devices is None:
            raise ValueError(f"colocated_python function {self.__name__} has no array inputs: "
                             "specialize it with devices (f.specialize(devices=...)) to say "
                             "where it runs")
        if self.in_specs is not None:
            _check_specs(self.__name__, self.in_specs, (args, kwargs))
        out = self.fun(*args, **kwargs)
        if self.out_specs_fn is not None:
            _check_specs(self.__name__, self.out_specs_fn(*args, **kwargs), out)
        return out


def _check_specs(name: str, specs, values) -> None:
    spec_leaves, spec_tree = tree_util.tree_flatten(specs)
    leaves, tree = tree_util.tree_flatten(values)
    if spec_tree != tree:
        raise ValueError(f"colocated_python function {name}: the values have the structure "
                         f"{tree}, the specs {spec_tree}")
    for s, x in zip(spec_leaves, leaves):
        a = abstractify(x)
        if tuple(a.shape) != tuple(s.shape) or a.dtype != s.dtype:
            raise ValueError(f"colocated_python function {name}: a value of type "
                             f"{a.str_short()} where the spec says {s.dtype}{list(s.shape)}")


def colocated_python(fun: Callable) -> _ColocatedFunction:
    """``fun`` run as colocated Python (see the module docstring)."""
    return _ColocatedFunction(fun)


def colocated_python_class(cls: type) -> type:
    """A wrapper class whose instances forward their method calls to a real instance of
    ``cls``, made with the constructor's arguments on the first call."""

    class Colocated:
        def __init__(self, *args, **kwargs):
            self._colocated_args = (args, kwargs)
            self._colocated_obj = None

        def __getattr__(self, name):
            if name.startswith("_colocated_"):
                raise AttributeError(name)
            getattr(cls, name)                  # AttributeError for what cls does not have

            def method(*args, **kwargs):
                if self._colocated_obj is None:
                    a, kw = self._colocated_args
                    self._colocated_obj = cls(*a, **kw)
                return getattr(self._colocated_obj, name)(*args, **kwargs)
            return method

    Colocated.__name__ = Colocated.__qualname__ = cls.__name__
    Colocated.__doc__ = cls.__doc__
    return Colocated
