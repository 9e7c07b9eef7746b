"""wjax.scipy: the parts of ``jax.scipy`` wjax provides (``special``, ``stats.norm``,
``linalg``)."""
from . import linalg, special, stats  # noqa: F401
