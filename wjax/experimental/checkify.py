"""``jax.experimental.checkify``: value checks that work under ``jit``.

``check(pred, msg, *fmt_args)`` raises ``JaxRuntimeError`` at once when ``pred`` is concrete;
under a trace it must be *functionalized* by ``checkify(f)``, which returns ``(error, out)``:
the checks become array values (which check failed first, and its format arguments) that
leave the traced program as outputs, so ``jit(checkify(f))`` works and ``error.throw()``
raises on the host.  Only user checks are implemented: requesting automatic checks (NaN,
division by zero, out-of-bounds indexing) raises ``NotImplementedError``.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from .. import numpy as jnp
from .._src.core import tree_util
from .._src.core import refs as _refs
from .._src.core.tracing import Tracer, _state as _trace_state, current_builder, is_concrete


class JaxRuntimeError(ValueError):
    """A failed check (``error.throw()``, or an eager ``check``)."""


class JaxException(Exception):
    """Base of the error categories."""


class FailedCheckError(JaxException):
    """A user ``check`` failed."""


class NaNError(JaxException):
    pass


class DivisionByZeroError(JaxException):
    pass


class OOBError(JaxException):
    pass


ErrorCategory = type[JaxException]
user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
div_checks = frozenset({DivisionByZeroError})
index_checks = frozenset({OOBError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks

_state = threading.local()


class _Cell(_refs.RefCell):
    """A ref of checkify's state, belonging to the trace ``checkify`` runs in: the loops and
    jitted calls inside thread it like any ref their bodies write (``core/refs.py``); under
    ``vmap`` each example's state comes out and ``merge_batched`` reduces them."""

    def __init__(self, value, owner):
        self._value, self._home, self._depth = value, owner.home, owner.depth
        self.owner = owner

    @staticmethod
    def merge_batched(cells, examples):
        """The values of ``cells`` (each with a leading example axis in ``examples``) as JAX
        reduces a batch of errors: the earliest check site failed by any example, and of the
        examples that failed it, the last one's format arguments."""
        pick = {}
        for c, v in zip(cells, examples):
            if c is c.owner.code:
                first = jnp.min(jnp.where(v >= 0, v, jnp.int32(2 ** 30)))
                pick[id(c.owner)] = v.shape[0] - 1 - jnp.argmax((v == first)[::-1])
        return [v[pick[id(c.owner)]] for c, v in zip(cells, examples)]


class _Checks:
    """One ``checkify`` call's state: the first failed check's index (``code``, -1 while none
    has failed) and, per check site (its message and the type of its format arguments),
    the format arguments it failed with -- all refs, created as the sites are met."""

    def __init__(self):
        self.home, self.depth = current_builder(), len(_trace_state.builders)
        self.code = _Cell(np.int32(-1), self)
        self.sites: dict = {}            # key -> index
        self.payloads: list = []         # per site: a _Cell per format-argument leaf
        self.messages: list = []
        self.trees: list = []

    def site(self, msg, leaves, tree) -> int:
        key = (msg, tree, tuple((np.shape(x), jnp.result_type(x)) for x in leaves))
        k = self.sites.get(key)
        if k is None:
            k = self.sites[key] = len(self.messages)
            self.messages.append(msg)
            self.trees.append(tree)
            self.payloads.append([_Cell(np.zeros(np.shape(x), jnp.result_type(x)), self)
                                  for x in leaves])
        return k

    def record(self, ok, msg, fmt_args, fmt_kwargs) -> None:
        """The check as values: where no check has failed before and this one does, its index
        and format arguments."""
        leaves, tree = tree_util.tree_flatten((fmt_args, fmt_kwargs))
        leaves = [jnp.asarray(x) for x in leaves]
        k = self.site(msg, leaves, tree)
        code = self.code._value
        now = jnp.logical_and(code < 0, jnp.logical_not(ok))
        _refs.write(self.code, jnp.where(now, jnp.int32(k), code), "checkify")
        for cell, x in zip(self.payloads[k], leaves):
            _refs.write(cell, jnp.where(now, x, cell._value), "checkify")


def _collectors() -> list:
    if not hasattr(_state, "stack"):
        _state.stack = []
    return _state.stack


def _format(msg: str, args, kwargs) -> str:
    show = lambda v: np.asarray(v) if not isinstance(v, np.ndarray) else v  # noqa: E731
    return msg.format(*[show(a) for a in args], **{k: show(v) for k, v in kwargs.items()})


def check(pred: Any, msg: str, *fmt_args: Any, debug: bool = False, **fmt_kwargs: Any) -> None:
    """Checks that ``pred`` holds (every element, for an array)."""
    for leaf in tree_util.tree_leaves((fmt_args, fmt_kwargs)):
        if not isinstance(leaf, (jnp.ndarray, np.ndarray, np.generic)):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {leaf!r} of type {type(leaf)}.")
    ok = jnp.all(jnp.asarray(pred))
    if _collectors():
        _collectors()[-1].record(ok, msg, fmt_args, fmt_kwargs)
        return
    if isinstance(ok, Tracer) and not is_concrete(ok):
        raise ValueError("Cannot abstractly evaluate a checkify.check which was not "
                         "functionalized. This probably means you tried to stage (jit/scan/"
                         "pmap/...) a `check` without functionalizing it through "
                         "`checkify.checkify`.")
    if not bool(ok):
        raise JaxRuntimeError(_format(msg, fmt_args, fmt_kwargs) + " (`check` failed)")


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """A check that is skipped (not an error) when it is not functionalized."""
    if _collectors() or not isinstance(pred, Tracer) or is_concrete(pred):
        check(pred, msg, *fmt_args, **fmt_kwargs)


class Error:
    """The outcome of the checks of one call: ``get()`` (the message or None), ``throw()``.
    A pytree: its leaves are arrays (the first failed check's index, -1 if none, and every
    check's format arguments), so it can leave a jitted function."""

    def __init__(self, code, payloads, messages, trees):
        self.code, self.payloads, self.messages, self.trees = code, payloads, messages, trees

    def get(self) -> str | None:
        k = int(self.code)
        if k < 0:
            return None
        args, kwargs = tree_util.tree_unflatten(self.trees[k], self.payloads[k])
        return _format(self.messages[k], args, kwargs) + " (`check` failed)"

    def throw(self) -> None:
        msg = self.get()
        if msg is not None:
            raise JaxRuntimeError(msg)

    def __repr__(self):
        return f"Error({self.get()!r})" if is_concrete(self.code) else "Error(traced)"


def _flatten_error(e: Error):
    return [e.code] + [x for p in e.payloads for x in p], (e.messages, e.trees,
                                                          tuple(len(p) for p in e.payloads))


def _unflatten_error(aux, leaves):
    messages, trees, sizes = aux
    payloads, at = [], 1
    for n in sizes:
        payloads.append(list(leaves[at:at + n]))
        at += n
    return Error(leaves[0], payloads, messages, trees)


tree_util.register_pytree_node(Error, _flatten_error, _unflatten_error)


def init_error() -> Error:
    return Error(jnp.int32(-1), [], (), ())


def checkify(f: Callable, errors: frozenset = user_checks) -> Callable:
    """``f`` returning ``(error, out)``: its checks are values, so it can be jitted."""
    unsupported = set(errors) - user_checks
    if unsupported:
        names = sorted(c.__name__ for c in unsupported)
        raise NotImplementedError(f"wjax's checkify implements user checks only, not {names}")

    def checked(*args, **kwargs):
        st = _Checks()
        _collectors().append(st)
        try:
            out = f(*args, **kwargs)
        finally:
            _collectors().pop()
        payloads = [[c._value for c in cells] for cells in st.payloads]
        return Error(st.code._value, payloads, tuple(st.messages), tuple(st.trees)), out

    return checked

