"""``jax._src.lib``: the module path of JAX's compiler bindings.  wjax compiles to WGSL, so
only ``mlir.dialects.hlo`` is here: the elementwise ``hlo`` operations a lowering rule written
against MLIR may use, computed with wjax's own operations (``wjax.interpreters.mlir``)."""
from . import mlir, xla_client  # noqa: F401
