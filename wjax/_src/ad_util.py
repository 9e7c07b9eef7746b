"""``jax._src.ad_util``: the few autodiff names libraries import from JAX's internals by path
(lineax registers a transpose rule for ``stop_gradient_p``).  wjax's rules live in
``wjax/_src/transforms/ad.py`` and the primitive in ``wjax/_src/prims/elementwise.py``."""
from .api.custom_derivatives import SymbolicZero
from .prims.elementwise import stop_gradient_p
from .transforms.ad import Zero, add_tangents as add_jaxvals, zeros as zeros_like_aval

__all__ = ["SymbolicZero", "Zero", "add_jaxvals", "stop_gradient_p", "zeros_like_aval"]
