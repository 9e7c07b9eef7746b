"""``jax.interpreters.mlir``: how a user primitive is lowered.

wjax compiles to WGSL, not MLIR.  A lowering made by ``lower_fun(fun)`` -- a function of
arrays written with wjax operations, JAX's usual way to lower a primitive as a composition --
is traced and inlined into the generated kernels.  A rule written against MLIR itself (with
``hlo`` ops) cannot run here; the primitive then lowers through its ``impl`` (see
``wjax.extend.core.Primitive``)."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["LoweredFun", "emit_python_callback", "lower_fun", "register_lowering"]


class LoweredFun:
    """A lowering rule given as a composition of array operations."""

    def __init__(self, fun: Callable, multiple_results: bool):
        self.fun, self.multiple_results = fun, multiple_results

    def __call__(self, ctx: Any, *args, **params):
        raise NotImplementedError("wjax lowers to WGSL: a lower_fun rule is inlined as a "
                                  "composition, never called with an MLIR context")

    def expand(self, *args, **params):
        out = self.fun(*args, **params)
        return list(out) if self.multiple_results else out


def lower_fun(fun: Callable, multiple_results: bool = True) -> LoweredFun:
    """A lowering rule computing the primitive as ``fun(*operands, **params)``."""
    return LoweredFun(fun, multiple_results)


_mlir_rules: dict = {}


def register_lowering(prim, rule: Callable, platform: str | None = None, **kwargs: Any):
    """Registers ``rule`` as ``prim``'s lowering: a ``lower_fun`` rule becomes the
    primitive's composition; an MLIR rule is kept but not used (the impl lowers instead)."""
    if isinstance(rule, LoweredFun):
        prim.expand = rule.expand
    else:
        _mlir_rules[(prim, platform)] = rule
    return rule


def emit_python_callback(*args: Any, **kwargs: Any):
    raise NotImplementedError("mlir.emit_python_callback: wjax has no MLIR; use "
                              "jax.pure_callback or jax.experimental.io_callback")
