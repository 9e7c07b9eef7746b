"""``jax.extend.source_info_util``: where user code bound an equation
(``wjax._src.core.tracing.SourceInfo``, recorded on every equation), and the files whose frames
are library internals rather than user code."""
from __future__ import annotations

from .._src.traceback_util import register_exclusion
from .._src.core.tracing import SourceInfo, current_source

__all__ = ["SourceInfo", "current", "register_exclusion"]


def current() -> SourceInfo | None:
    """The source an equation bound now would record."""
    return current_source()
