"""The operators and array methods of ``wjax.Array`` and of tracers, installed on both classes
from here (as JAX's ``register_jax_array_methods``): every one goes through ``wjax.numpy``,
so the lower layers (the core's Tracer, the Array) never import the numpy layer."""
from __future__ import annotations

import types

import numpy as np

from .._src.array import Array
from .._src.core.tracing import Tracer
from .indexing import _IndexUpdateHelper, getitem

_jnp = None      # the wjax.numpy namespace, given to install_all by wjax/numpy/__init__.py


def _binop(name, reflected=False):
    def op(self, other):
        if _defer(other):
            return NotImplemented
        f = getattr(_jnp, name)
        return f(other, self) if reflected else f(self, other)
    op.__name__ = f"__{'r' if reflected else ''}{name}__"
    return op


def _defer(other) -> bool:
    """Let unknown types (other libraries' arrays) handle the operator."""
    return not isinstance(other, (Array, Tracer, np.ndarray, np.generic, int, float, bool, complex,
                                  list, tuple))


class ArrayMethods:
    """Operators and methods of Array and Tracer; all go through wjax.numpy.  ``install``
    copies them onto both classes (as JAX's ``register_jax_array_methods``)."""

    # arithmetic
    __add__ = _binop("add"); __radd__ = _binop("add", True)
    __sub__ = _binop("subtract"); __rsub__ = _binop("subtract", True)
    __mul__ = _binop("multiply"); __rmul__ = _binop("multiply", True)
    __truediv__ = _binop("true_divide"); __rtruediv__ = _binop("true_divide", True)
    __floordiv__ = _binop("floor_divide"); __rfloordiv__ = _binop("floor_divide", True)
    __mod__ = _binop("remainder"); __rmod__ = _binop("remainder", True)
    __pow__ = _binop("power"); __rpow__ = _binop("power", True)
    __matmul__ = _binop("matmul"); __rmatmul__ = _binop("matmul", True)
    __and__ = _binop("bitwise_and"); __rand__ = _binop("bitwise_and", True)
    __or__ = _binop("bitwise_or"); __ror__ = _binop("bitwise_or", True)
    __xor__ = _binop("bitwise_xor"); __rxor__ = _binop("bitwise_xor", True)
    __lshift__ = _binop("left_shift"); __rlshift__ = _binop("left_shift", True)
    __rshift__ = _binop("right_shift"); __rrshift__ = _binop("right_shift", True)
    __eq__ = _binop("equal"); __ne__ = _binop("not_equal")
    __lt__ = _binop("less"); __le__ = _binop("less_equal")
    __gt__ = _binop("greater"); __ge__ = _binop("greater_equal")

    def __divmod__(self, other):
        return _jnp.divmod(self, other)

    def __rdivmod__(self, other):
        return _jnp.divmod(other, self)

    def __neg__(self):
        return _jnp.negative(self)

    def __pos__(self):
        return _jnp.positive(self)

    def __abs__(self):
        return _jnp.abs(self)

    def __invert__(self):
        return _jnp.invert(self)

    def __round__(self, ndigits=None):
        if ndigits is None:
            return round(float(self))
        return _jnp.round(self, ndigits)

    # indexing
    def __getitem__(self, idx):
        return getitem(self, idx)

    def __setitem__(self, idx, value):
        raise TypeError(
            "JAX arrays are immutable and do not support in-place item assignment. Instead of "
            "x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
            "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

    @property
    def at(self):
        return _IndexUpdateHelper(self)

    # shape
    @property
    def T(self):
        return _jnp.transpose(self)

    @property
    def mT(self):
        return _jnp.swapaxes(self, -1, -2)

    @property
    def itemsize(self):
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return _jnp.reshape(self, shape, order=order)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = axes[0]
        return _jnp.transpose(self, axes or None)

    def astype(self, dtype, copy=False):
        return _jnp.astype(self, dtype)

    def copy(self):
        """A copy of the array (``jnp.copy``); as JAX's, it takes no arguments."""
        return _jnp.copy(self)

    def __array_namespace__(self, api_version=None):
        return _jnp

    def __format__(self, spec):
        if isinstance(self, Tracer):       # as JAX: the tracer's repr, no format specs
            if spec:
                raise TypeError(f"unsupported format string passed to "
                                f"{type(self).__name__}.__format__")
            return repr(self)
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(str(self), spec)


def _method(name, fname=None):
    def m(self, *args, **kwargs):
        return getattr(_jnp, fname or name)(self, *args, **kwargs)
    m.__name__ = name
    return m


for _n in ["sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "any", "all",
           "cumsum", "cumprod", "ravel", "flatten", "squeeze", "swapaxes", "clip", "round", "dot",
           "conj", "conjugate", "nonzero", "sort", "argsort", "take", "repeat", "diagonal", "trace",
           "ptp", "searchsorted", "view", "real", "imag", "choose", "compress", "nansum", "item_"]:
    if _n == "flatten":
        setattr(ArrayMethods, _n, _method(_n, "ravel"))
    elif _n != "item_":
        setattr(ArrayMethods, _n, _method(_n))

# x.compress(condition, axis) is jnp.compress(condition, x, axis); real/imag are properties
ArrayMethods.compress = lambda self, condition, axis=None, **kw: _jnp.compress(
    condition, self, axis, **kw
)
ArrayMethods.real = property(lambda self: _jnp.real(self))
ArrayMethods.imag = property(lambda self: _jnp.imag(self))


def install_all(namespace) -> None:
    """Copies every operator and method of ArrayMethods onto Array and Tracer; the methods
    call the functions of ``namespace`` (the complete ``wjax.numpy``)."""
    global _jnp
    _jnp = namespace
    for cls in (Array, Tracer):
        for name, value in vars(ArrayMethods).items():
            if name in ("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"):
                continue
            if isinstance(vars(cls).get(name), types.MemberDescriptorType):
                continue           # a slot of the class itself
            setattr(cls, name, value)
