"""The transformations a user calls: ``jit``, autodiff, ``vmap``, custom derivatives and
``checkpoint`` -- the top layer of wjax (see ``docs/DESIGN.md``).

    jit.py                 jit, eval_shape, clear_caches
    autodiff.py            grad, value_and_grad, jvp, vjp, linearize, jacfwd, jacrev, hessian
    vmap.py                vmap
    custom_derivatives.py  custom_jvp, custom_vjp, closure_convert
    checkpoint.py          checkpoint (remat) and its policies
    sharding.py            with_sharding_constraint, reshard, auto_axes/explicit_axes, placements
"""
from .autodiff import (grad, hessian, jacfwd, jacrev, jvp, linearize,  # noqa: F401
                       value_and_grad, vjp)
from .checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat  # noqa: F401
from .custom_derivatives import closure_convert, custom_jvp, custom_vjp  # noqa: F401
from .jit import clear_caches, eval_shape, jit  # noqa: F401
from .vmap import vmap  # noqa: F401
