"""``jax.monitoring`` (public names; the implementation is ``wjax/_src/core/monitoring.py``)."""
from ._src.core.monitoring import *  # noqa: F401,F403
