"""``jax.extend.core.primitives``: every primitive as ``<name>_p`` (``add_p``,
``dot_general_p``, ``jit_p``, ...), for libraries that interpret jaxprs equation by equation.
wjax's names are JAX's except the calls: ``jit_p`` is wjax's ``pjit``, ``remat_p`` its
``checkpoint``, ``linear_solve_p`` its ``custom_linear_solve``."""
from ..._src import prims as _prims  # noqa: F401  (registers every primitive)
from ..._src.core.primitive import REGISTRY as _REGISTRY

_JAX_NAMES = {"pjit": "jit", "checkpoint": "remat", "custom_linear_solve": "linear_solve"}

globals().update({f"{_JAX_NAMES.get(_n, _n)}_p": _p for _n, _p in _REGISTRY.items()})
__all__ = sorted(n for n in globals() if n.endswith("_p") and not n.startswith("_"))
