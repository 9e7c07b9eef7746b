"""``jax._src.lax``: the module path JAX's internals tutorials import ``lax`` from
(``from jax._src.lax import lax``); wjax's ``lax`` is ``wjax/lax``."""
from . import lax  # noqa: F401
