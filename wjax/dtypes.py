"""``jax.dtypes`` (public names; the implementation is ``wjax/_src/core/dtypes.py``)."""
from ._src.core import dtypes as _impl
from ._src.core.dtypes import *  # noqa: F401,F403


def __getattr__(name):
    return getattr(_impl, name)
