"""``jax.experimental.compilation_cache``: the persistent cache's older entry point."""
from . import compilation_cache  # noqa: F401
