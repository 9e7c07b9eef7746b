"""wjax.scipy.sparse: the iterative solvers of ``jax.scipy.sparse.linalg``."""
from . import linalg  # noqa: F401
