"""``jax.ad_checkpoint``: the public module (implementation: ``wjax/_src/api/checkpoint.py``)."""
from ._src.api.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat  # noqa: F401
from ._src.api.autodiff import print_saved_residuals, saved_residuals  # noqa: F401
from ._src.prims.calls import checkpoint_p  # noqa: F401

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat", "saved_residuals"]
