"""``jax._src.state``: the types of mutable references (``wjax/ref.py``)."""
from . import types  # noqa: F401
