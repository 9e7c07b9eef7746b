"""``jax.debug``: printing and callbacks from traced code (``wjax/api/callbacks.py``)."""
from .api.callbacks import debug_callback as callback
from .api.callbacks import debug_log as log
from .api.callbacks import debug_print as print  # noqa: A001
from .debugger import breakpoint  # noqa: A004

__all__ = ["breakpoint", "callback", "log", "print"]
