"""``jax.ad_checkpoint``: the public module (implementation: ``wjax/api/checkpoint.py``)."""
from .api.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat  # noqa: F401
from .api.autodiff import print_saved_residuals, saved_residuals  # noqa: F401
from .prims.calls import checkpoint_p  # noqa: F401

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "print_saved_residuals",
           "remat", "saved_residuals"]
