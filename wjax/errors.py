"""``jax.errors`` (public names; the implementation is ``wjax/_src/core/errors.py``)."""
from ._src.core import errors as _impl
from ._src.core.errors import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_impl, name)
