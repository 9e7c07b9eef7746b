"""wjax.scipy: the parts of ``jax.scipy`` wjax provides (``special``, ``stats.norm``)."""
from . import special, stats  # noqa: F401
