"""``jax.experimental``: the experimental APIs wjax has (``checkify``, ``io_callback``)."""
from .._src.api.callbacks import io_callback
from . import checkify, compilation_cache, shard_map
