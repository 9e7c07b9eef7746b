"""``jnp.vectorize``: a function on core dimensions mapped over broadcast loop dimensions.

Built on ``vmap`` (``wjax/api``, the layer below), as are ``frompyfunc`` and
``apply_along_axis``."""
from __future__ import annotations

import functools
import re
from typing import Callable

import numpy as np

from .._src.core import tree_util
from .._src.api.vmap import vmap
from .creation import asarray, broadcast_to
from .shapes import ndim as _ndim, shape as _shape
from .ufunc_objects import ufunc

__all__ = ["vectorize", "frompyfunc", "apply_along_axis"]

_DIM = r"\w+"
_CORE = rf"\((?:{_DIM}(?:,{_DIM})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = re.compile(rf"^{_ARGS}->{_ARGS}$")


def _parse_signature(signature: str):
    """``"(m,n),(n)->(m)"`` -> ([("m", "n"), ("n",)], [("m",)])."""
    sig = signature.replace(" ", "")
    if not _SIGNATURE.match(sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")

    def dims(part):
        return [tuple(d for d in group.split(",") if d)
                for group in re.findall(r"\((.*?)\)", part)]
    return dims(ins), dims(outs)


def _core_sizes(args, in_core):
    sizes = {}
    for x, core in zip(args, in_core):
        if x.ndim < len(core):
            raise ValueError(f"input with shape {x.shape} does not have enough dimensions for "
                             f"all core dimensions {core}")
        for name, n in zip(core, x.shape[x.ndim - len(core):] if core else ()):
            if sizes.setdefault(name, n) != n:
                raise ValueError(f"inconsistent size for core dimension {name!r}: "
                                 f"{n} vs {sizes[name]}")
    return sizes


def vectorize(pyfunc: Callable, *, excluded=frozenset(), signature: str | None = None):
    """Like ``numpy.vectorize``: ``pyfunc`` on (core slices of) its arguments, mapped with
    ``vmap`` over the broadcast leading dimensions.  ``excluded`` positional arguments (and
    all keyword arguments) are passed through unmapped."""
    if any(not isinstance(e, int) for e in excluded):
        raise ValueError("jax.numpy.vectorize can only exclude integer arguments, but "
                         f"excluded={excluded!r}")

    @functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        mapped_pos = [i for i in range(len(args)) if i not in excluded and
                      i - len(args) not in excluded]
        xs = [asarray(args[i]) for i in mapped_pos]
        if signature is None:
            in_core, out_core = [()] * len(xs), None
        else:
            in_core, out_core = _parse_signature(signature)
            if len(in_core) != len(xs):
                raise TypeError(f"wrong number of positional arguments: expected "
                                f"{len(in_core)}, got {len(xs)}")
        _core_sizes(xs, in_core)
        loop = np.broadcast_shapes(*[x.shape[:x.ndim - len(c)] for x, c in zip(xs, in_core)])
        xs = [broadcast_to(x, loop + x.shape[x.ndim - len(c):]) for x, c in zip(xs, in_core)]

        def core_fn(*core_args):
            full = list(args)
            for i, v in zip(mapped_pos, core_args):
                full[i] = v
            out = pyfunc(*full, **kwargs)
            if out_core is not None:
                _check_outputs(out, out_core)
            return out

        f = core_fn
        for _ in loop:
            f = vmap(f)
        return f(*xs)

    return wrapped


def _check_outputs(out, out_core):
    outs = out if len(out_core) > 1 else (out,)
    if len(out_core) > 1 and (not isinstance(out, tuple) or len(out) != len(out_core)):
        raise ValueError(f"output must be a tuple of {len(out_core)} arrays, got {out!r}")
    for o, core in zip(outs, out_core):
        if _ndim(o) != len(core):
            raise ValueError(f"output shape {_shape(o)} does not match core dimensions "
                             f"{core} of the signature")
    return tree_util.tree_leaves(out)


def frompyfunc(func, /, nin: int, nout: int, *, identity=None):
    """A ``jnp.ufunc`` of the scalar function ``func`` (vectorized), with ``reduce``,
    ``accumulate``, ``outer``, ``at`` and ``reduceat``."""
    return ufunc(func, nin, nout, identity=identity, call=vectorize(func))


def apply_along_axis(func1d, axis: int, arr, *args, **kwargs):
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis`` (vmapped over the other
    axes); the slices' results take the place of that axis."""
    arr = asarray(arr)
    nd = arr.ndim
    if not -nd <= axis < nd:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {nd}")
    axis = axis % nd

    def f(v):
        return func1d(v, *args, **kwargs)

    # axes after `axis` are mapped innermost-last, so their results stay at the end
    for i in range(1, nd - axis):
        f = vmap(f, in_axes=i, out_axes=-1)
    for _ in range(axis):
        f = vmap(f, in_axes=0, out_axes=0)
    return f(arr)
