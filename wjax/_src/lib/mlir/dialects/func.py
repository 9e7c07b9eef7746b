"""``func`` dialect (``jax.extend.mlir.dialects.func``): functions of a module being built
(see ``ir``), and calls of them."""
from __future__ import annotations

from .. import ir


class FuncOp:
    """A function: its body block (arguments typed as declared) and the values it returns."""

    def __init__(self, name: str, block: ir.Block):
        self.name, self.block = name, block
        self.operation = self

    @property
    def arguments(self):
        return self.block.arguments


def func(*inputs, results=None, name: str | None = None):
    """``@func.func(*arg_types) def f(*args): return [values]``: the function is built at
    once in the current module (its body runs with the block's arguments); ``f.func_op`` is
    the function."""
    def deco(f):
        block = ir.Block(inputs)
        with ir.InsertionPoint(block):
            out = f(*block.arguments)
        if out is None:
            out = []
        block.results = list(out) if isinstance(out, (list, tuple)) else [out]
        op = FuncOp(name or f.__name__, block)
        where = ir.InsertionPoint.current()
        if where is not None and where.module is not None:
            where.module.functions[op.name] = op
        f.func_op = op
        return f
    return deco


class CallOp:
    """``CallOp(func_op, operands)``: the function's results for ``operands``."""

    def __init__(self, callee, operands):
        callee = getattr(callee, "func_op", callee)
        operands = list(operands)
        results = callee.block.results or []
        self.operation = ir.Operation(
            operands, len(results),
            lambda env: ir.run_block(callee.block, [ir.evaluate(x, env) for x in operands]),
            [getattr(r, "type", None) for r in results])
        self.results = self.operation.results


def ReturnOp(operands):        # noqa: N802 (MLIR's name)
    ir.InsertionPoint.current().results = list(operands)
