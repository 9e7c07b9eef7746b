"""``jax.tree`` (public names; the implementation is ``wjax/core/tree.py``)."""
from .core import tree as _impl
from .core.tree import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_impl, name)
