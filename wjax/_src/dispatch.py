"""``jax._src.dispatch``: ``wait_for_tokens`` waits for the device work that effects ordered."""
from ..backend import runtime


def wait_for_tokens() -> None:
    """Waits until every submitted program (and its host callbacks) has run."""
    runtime.synchronize_all()
