"""``jax.experimental.compilation_cache.compilation_cache``: ``set_cache_dir(path)`` is
``config.update("jax_compilation_cache_dir", path)`` (``wjax/_src/backend/disk_cache.py``)."""
from __future__ import annotations

from ..._src.backend import disk_cache as _disk_cache
from ..._src.core.config import config as _config


def set_cache_dir(path) -> None:
    """Turns the persistent compilation cache on, in ``path``."""
    _config.update("jax_compilation_cache_dir", str(path))


def is_initialized() -> bool:
    return _disk_cache.cache_dir() is not None


def initialize_cache(path) -> None:
    set_cache_dir(path)


def reset_cache() -> None:
    """Turns the persistent cache off (the files stay)."""
    _config.update("jax_compilation_cache_dir", None)
