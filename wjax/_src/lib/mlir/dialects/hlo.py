"""``stablehlo`` operations (``jax._src.lib.mlir.dialects.hlo``, also
``jax.extend.mlir.dialects.stablehlo``), computed with wjax's operations.

Two uses, one set of operations:

* inside a module being built (``ir.Module``, ``dialects.func.func``): an operation on graph
  values (block arguments, other results) records itself (``ir.Operation``) and is computed
  when the module runs (``xla_bridge``'s executable evaluates it under ``jit``);
* in a ``mlir.register_lowering`` rule that wjax runs while tracing a primitive's expansion
  (``jax.interpreters.mlir``), the operands are the traced values themselves and the
  operation is computed at once.

Each operation is the wjax operation of the same meaning: the elementwise arithmetic and
math, ``compare``, ``select``, ``convert``, ``broadcast_in_dim``, ``reshape``,
``transpose``, ``constant``, ``ReduceOp`` (its body region the reduction), ``IfOp`` and
``CaseOp`` (branch regions; ``lax.cond``/``switch``) and ``return_``.
"""
from __future__ import annotations

import numpy as np

from ..... import lax
from ....core import ops as _ops
from .. import ir


def register_dialect(context=None, load: bool = True) -> None:
    """Nothing to register: the operations are Python."""


def _value(x):
    """A value to compute with: an operation's result, a graph value evaluated."""
    if isinstance(x, _Op):
        x = x.result
    return ir.evaluate(x) if isinstance(x, ir.Value) else x


def _graph(operands) -> bool:
    return any(isinstance(x, (ir.Value, _Op)) for x in operands)


def _apply(fn, operands, result_type=None):
    """``fn(*operands)``: recorded in the graph when an operand is a graph value, else
    computed now."""
    operands = [x.result if isinstance(x, _Op) else x for x in operands]
    if not _graph(operands):
        return fn(*operands)
    if result_type is None:      # an elementwise result: the type of its operands
        result_type = next((x.type for x in operands if getattr(x, "type", None) is not None),
                           None)
    op = ir.Operation(operands, 1,
                      lambda env: [fn(*[ir.evaluate(x, env) for x in operands])],
                      [result_type])
    return op.result


class _Op:
    """An operation as a class (``hlo.AddOp(x, y).result``)."""

    fn = None

    def __init__(self, *operands, **attributes):
        self.result = _apply(type(self).fn, list(operands))
        self.results = [self.result]
        self.operation = self


def _elementwise(name: str, fn):
    def op(*operands, **attributes):
        return _apply(fn, list(operands))
    op.__name__ = name
    cls = type(f"{name[0].upper()}{name[1:]}Op", (_Op,), {"fn": staticmethod(fn),
                                                       "__module__": __name__})
    return op, cls


add, AddOp = _elementwise("add", _ops.add)
subtract, SubtractOp = _elementwise("subtract", _ops.sub)
multiply, MulOp = _elementwise("multiply", _ops.mul)
divide, DivOp = _elementwise("divide", _ops.div)
remainder, RemOp = _elementwise("remainder", _ops.rem)
power, PowOp = _elementwise("power", _ops.pow)
maximum, MaxOp = _elementwise("maximum", _ops.max)
minimum, MinOp = _elementwise("minimum", _ops.min)
atan2, Atan2Op = _elementwise("atan2", _ops.atan2)
and_, AndOp = _elementwise("and_", _ops.bitwise_and)
or_, OrOp = _elementwise("or_", _ops.bitwise_or)
xor, XorOp = _elementwise("xor", _ops.bitwise_xor)
not_, NotOp = _elementwise("not_", _ops.bitwise_not)
negate, NegOp = _elementwise("negate", _ops.neg)
abs, AbsOp = _elementwise("abs", _ops.abs)  # noqa: A001
exponential, ExpOp = _elementwise("exponential", _ops.exp)
exponential_minus_one, Expm1Op = _elementwise("exponential_minus_one", _ops.expm1)
log, LogOp = _elementwise("log", _ops.log)
log_plus_one, Log1pOp = _elementwise("log_plus_one", _ops.log1p)
sqrt, SqrtOp = _elementwise("sqrt", _ops.sqrt)
rsqrt, RsqrtOp = _elementwise("rsqrt", _ops.rsqrt)
cbrt, CbrtOp = _elementwise("cbrt", _ops.cbrt)
tanh, TanhOp = _elementwise("tanh", _ops.tanh)
sine, SineOp = _elementwise("sine", _ops.sin)
cosine, CosineOp = _elementwise("cosine", _ops.cos)
tan, TanOp = _elementwise("tan", _ops.tan)
logistic, LogisticOp = _elementwise("logistic", _ops.logistic)
floor, FloorOp = _elementwise("floor", _ops.floor)
ceil, CeilOp = _elementwise("ceil", _ops.ceil)
sign, SignOp = _elementwise("sign", _ops.sign)


def select(pred, on_true, on_false):
    return _apply(_ops.select, [pred, on_true, on_false], getattr(on_true, "type", None))


class SelectOp(_Op):
    def __init__(self, pred, on_true, on_false):
        self.result = select(pred, on_true, on_false)
        self.results = [self.result]
        self.operation = self


class ComparisonDirectionAttr(ir.Attribute):
    def __init__(self, direction: str):
        self.value = direction

    @staticmethod
    def get(direction: str, context=None) -> "ComparisonDirectionAttr":
        return ComparisonDirectionAttr(direction)


_COMPARE = {"EQ": _ops.eq, "NE": _ops.ne, "LT": _ops.lt, "LE": _ops.le, "GT": _ops.gt,
            "GE": _ops.ge}


def compare(lhs, rhs, comparison_direction, compare_type=None):
    d = getattr(comparison_direction, "value", comparison_direction)
    t = getattr(lhs, "type", None)
    return _apply(_COMPARE[d], [lhs, rhs],
                  None if t is None else ir.Type(bool, t.shape))


def constant(value) -> ir.Value:
    """A constant (always a graph value: a module's functions return graph values)."""
    v = value.value if isinstance(value, ir.DenseElementsAttr) else value
    a = np.asarray(v)
    op = ir.Operation([], 1, lambda env: [v], [ir.Type(a.dtype, a.shape)])
    return op.result


def convert(result, operand):
    return _apply(lambda x: _ops.convert_element_type(x, result.dtype), [operand], result)


def broadcast_in_dim(result, operand, broadcast_dimensions):
    dims = tuple(int(d) for d in broadcast_dimensions)
    return _apply(lambda x: _ops.broadcast_in_dim(x, result.shape, dims), [operand], result)


def reshape(result, operand):
    return _apply(lambda x: _ops.reshape(x, result.shape), [operand], result)


def transpose(operand, permutation):
    perm = tuple(int(p) for p in permutation)
    return _apply(lambda x: _ops.transpose(x, perm), [operand])


def return_(operands) -> None:
    """Ends the current block (a function body or a region's block) with ``operands``."""
    ir.InsertionPoint.current().results = list(operands)


class ReduceOp:
    """``ReduceOp(result_types, inputs, init_values, dimensions)``: its ``body`` region's
    block (the arguments: accumulators, then elements) is the reduction."""

    def __init__(self, result_types, inputs, init_values, dimensions):
        self.body = ir.Region()
        inputs, init_values = list(inputs), list(init_values)
        dims = tuple(int(d) for d in dimensions)
        n = len(inputs)

        def compute(env):
            xs = [ir.evaluate(x, env) for x in inputs]
            inits = [ir.evaluate(x, env) for x in init_values]
            block = self.body.blocks[0]

            def comp(acc, x):
                accs = acc if n > 1 else [acc]
                elts = x if n > 1 else [x]
                out = ir.run_block(block, list(accs) + list(elts), env)
                return tuple(out) if n > 1 else out[0]
            res = lax.reduce(xs if n > 1 else xs[0], inits if n > 1 else inits[0], comp, dims)
            return list(res) if n > 1 else [res]

        self.operation = ir.Operation(inputs + init_values, len(result_types), compute,
                                      result_types)
        self.results = self.operation.results
        self.result = self.results[0]


class IfOp:
    """``IfOp(result_types, pred)``: ``true_branch`` and ``false_branch`` regions, one block
    each, chosen by ``pred`` (``lax.cond``)."""

    def __init__(self, result_types, pred):
        self.true_branch, self.false_branch = ir.Region(), ir.Region()

        def compute(env):
            p = ir.evaluate(pred, env)
            return list(lax.cond(p, lambda _: ir.run_block(self.true_branch.blocks[0], [], env),
                              lambda _: ir.run_block(self.false_branch.blocks[0], [], env), 0))

        self.operation = ir.Operation([pred], len(result_types), compute, result_types)
        self.results = self.operation.results
        self.result = self.results[0] if self.results else None


class CaseOp:
    """``CaseOp(result_types, index, num_branches)``: ``branches`` regions chosen by the
    index, clamped (``lax.switch``)."""

    def __init__(self, result_types, index, num_branches):
        self.branches = [ir.Region() for _ in range(num_branches)]

        def compute(env):
            i = ir.evaluate(index, env)
            fns = [lambda _, r=r: ir.run_block(r.blocks[0], [], env) for r in self.branches]
            return list(lax.switch(i, fns, 0))

        self.operation = ir.Operation([index], len(result_types), compute, result_types)
        self.results = self.operation.results
        self.result = self.results[0] if self.results else None


