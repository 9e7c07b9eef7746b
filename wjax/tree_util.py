"""``jax.tree_util`` (public names; the implementation is ``wjax/core/tree_util.py``)."""
from .core import tree_util as _impl
from .core.tree_util import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_impl, name)
