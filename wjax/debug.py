"""``jax.debug``: printing and callbacks from traced code (``wjax/api/callbacks.py``)."""
from .api.callbacks import debug_callback as callback
from .api.callbacks import debug_print as print  # noqa: A001

__all__ = ["callback", "print"]
