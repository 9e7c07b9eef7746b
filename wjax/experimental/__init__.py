"""``jax.experimental``: the experimental APIs wjax has (``checkify``)."""
from . import checkify
