"""wjax.scipy.stats: distributions (``norm``)."""
from . import norm  # noqa: F401
