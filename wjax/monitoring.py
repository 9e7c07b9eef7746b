"""``jax.monitoring`` (public names; the implementation is ``wjax/core/monitoring.py``)."""
from .core.monitoring import *  # noqa: F401,F403
