"""``jax.interpreters.mlir``: how a user primitive is lowered.

wjax compiles to WGSL, not MLIR.  A lowering made by ``lower_fun(fun)`` -- a function of
arrays written with wjax operations, JAX's usual way to lower a primitive as a composition --
is traced and inlined into the generated kernels.  A rule written against MLIR itself,
``rule(ctx, *values)`` building ``hlo`` operations (``jax._src.lib.mlir.dialects.hlo``), is
run the same way: its "values" are the operands' traced values and each ``hlo`` operation is
the wjax operation of the same meaning (the elementwise ones; anything else raises
NotImplementedError when the primitive is lowered).  A primitive with no lowering cannot be
compiled (``jit`` raises NotImplementedError, as JAX does)."""
from __future__ import annotations

from typing import Any, Callable

from .._src.core.ir import abstractify
from .._src.lib.mlir.dialects import hlo

__all__ = ["LoweredFun", "LoweringRuleContext", "emit_python_callback", "lower_fun",
           "register_lowering"]


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


class LoweringRuleContext:
    """What an MLIR-style lowering rule gets as ``ctx``: the primitive and the avals of its
    operands and results."""

    def __init__(self, primitive, avals_in, avals_out):
        self.primitive, self.avals_in, self.avals_out = primitive, avals_in, avals_out

    def __repr__(self):
        return (f"LoweringRuleContext(primitive={self.primitive}, avals_in={self.avals_in}, "
                f"avals_out={self.avals_out})")


class MlirRule:
    """An MLIR-style rule ``rule(ctx, *values, **params) -> [values]`` run as the primitive's
    composition (module docstring)."""

    def __init__(self, prim, rule: Callable):
        self.prim, self.rule = prim, rule

    def __call__(self, *xs, **params):
        avals_in = [abstractify(x) for x in xs]
        out = self.prim.abstract_eval(*avals_in, **params)
        avals_out = list(out) if self.prim.multiple_results else [out]
        ctx = LoweringRuleContext(self.prim, avals_in, avals_out)
        try:
            results = [hlo._value(r) for r in self.rule(ctx, *xs, **params)]
        except (AttributeError, ImportError, TypeError) as e:
            raise NotImplementedError(
                f"the MLIR lowering rule of primitive '{self.prim.name}' failed in wjax, "
                f"which lowers to WGSL and runs such rules with the elementwise hlo "
                f"operations only ({type(e).__name__}: {e}); register "
                f"mlir.lower_fun(fun) with fun written with jax.numpy or jax.lax "
                "instead") from e
        return results if self.prim.multiple_results else results[0]


def register_lowering(prim, rule: Callable, platform: str | None = None, **kwargs: Any):
    """Registers ``rule`` as ``prim``'s lowering: a ``lower_fun`` rule becomes the
    primitive's composition, and so does an MLIR rule (module docstring).  wjax has one
    platform: a rule registered for any platform (JAX's "cpu", "cuda", ...) is used, one for
    "webgpu" or for all platforms (None) in preference."""
    _mlir_rules[(prim, platform)] = rule
    chosen = next((_mlir_rules[(prim, p)] for p in ("webgpu", None)
                   if (prim, p) in _mlir_rules), rule)
    prim.expand = chosen.expand if isinstance(chosen, LoweredFun) else MlirRule(prim, chosen)


def emit_python_callback(*args: Any, **kwargs: Any):
    raise NotImplementedError("mlir.emit_python_callback: wjax has no MLIR; use "
                              "jax.pure_callback or jax.experimental.io_callback")
