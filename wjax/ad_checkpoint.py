"""``jax.ad_checkpoint``: the public module (implementation: ``wjax/api/checkpoint.py``)."""
from .api.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat  # noqa: F401
from .prims.calls import checkpoint_p  # noqa: F401

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]
