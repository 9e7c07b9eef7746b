"""``jax.dtypes`` (public names; the implementation is ``wjax/core/dtypes.py``)."""
from .core import dtypes as _impl
from .core.dtypes import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_impl, name)
