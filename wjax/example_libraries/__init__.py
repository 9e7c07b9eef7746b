"""``jax.example_libraries``: JAX's small reference libraries, ``stax`` (neural-network layers
as ``(init_fun, apply_fun)`` pairs) and ``optimizers`` (``(init, update, get_params)``
triples), written here over wjax's public API with JAX's behaviour."""
from . import optimizers, stax

__all__ = ["optimizers", "stax"]
