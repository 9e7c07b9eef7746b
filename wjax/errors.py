"""``jax.errors`` (public names; the implementation is ``wjax/core/errors.py``)."""
from .core import errors as _impl
from .core.errors import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_impl, name)
