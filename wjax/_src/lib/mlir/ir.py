"""``jax._src.lib.mlir.ir`` (also ``jax.extend.mlir.ir``): the part of MLIR's Python API that
JAX's tutorials build programs with, over wjax.

wjax compiles to WGSL, not MLIR, so a "module" here is a graph: every operation made inside a
function (``dialects.func.func``) or region records its operands and how to compute its
results with wjax operations; ``Module.operation.print`` writes a reference to the module,
and ``xla_bridge.get_backend().compile_and_load`` turns that into an executable that evaluates
the module's ``main`` under ``jax.jit``.  Types and attributes carry shapes and dtypes only.
An operation whose operands are all plain arrays or tracers (a ``mlir.register_lowering`` rule
run by ``jax.interpreters.mlir``) is computed at once instead.
"""
from __future__ import annotations

import itertools
import re
import threading
from typing import Any, Callable

import numpy as np

__all__ = ["Attribute", "Block", "BlockArgument", "Context", "DenseElementsAttr",
           "F16Type", "F32Type", "F64Type", "BF16Type", "InsertionPoint", "IntegerType",
           "Location", "Module", "OpResult", "Operation", "RankedTensorType", "Region",
           "SymbolTable", "Type", "Value", "evaluate"]


# --------------------------------------------------------------------------- types

class Type:
    """An MLIR type: here a dtype (element types) or a shape and a dtype (tensors)."""

    def __init__(self, dtype, shape=None):
        self.dtype = np.dtype(dtype)
        self.shape = None if shape is None else tuple(int(d) for d in shape)

    def __eq__(self, other):
        return isinstance(other, Type) and (self.dtype, self.shape) == (other.dtype, other.shape)

    def __hash__(self):
        return hash((self.dtype, self.shape))

    def __repr__(self):
        if self.shape is None:
            return f"Type({self.dtype})"
        return f"tensor<{'x'.join(map(str, self.shape))}{'x' if self.shape else ''}{self.dtype}>"


class IntegerType(Type):
    @staticmethod
    def get_signless(width: int, context=None) -> Type:
        return Type(np.bool_ if width == 1 else f"int{width}")

    get_signed = get_signless

    @staticmethod
    def get_unsigned(width: int, context=None) -> Type:
        return Type(np.bool_ if width == 1 else f"uint{width}")


class F16Type(Type):
    @staticmethod
    def get(context=None) -> Type:
        return Type(np.float16)


class F32Type(Type):
    @staticmethod
    def get(context=None) -> Type:
        return Type(np.float32)


class F64Type(Type):
    @staticmethod
    def get(context=None) -> Type:
        return Type(np.float64)


class BF16Type(Type):
    @staticmethod
    def get(context=None) -> Type:
        import ml_dtypes
        return Type(ml_dtypes.bfloat16)


class RankedTensorType(Type):
    @staticmethod
    def get(shape, element_type: Type, encoding=None, loc=None) -> Type:
        return Type(element_type.dtype, shape)


class Attribute:
    pass


class DenseElementsAttr(Attribute):
    """A constant's value (a NumPy array)."""

    def __init__(self, value: np.ndarray):
        self.value = value

    @staticmethod
    def get(array, signless: bool = True, type: Type | None = None, shape=None,
            context=None) -> "DenseElementsAttr":
        a = np.asarray(array)
        if type is not None:
            a = a.astype(type.dtype)
        if shape is not None:
            a = a.reshape(shape)
        return DenseElementsAttr(a)


# --------------------------------------------------------------------------- contexts

class Context:
    """MLIR's context: nothing to hold here (a context manager, as in MLIR)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def allow_unregistered_dialects(self, *args):
        pass


class Location:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def unknown(context=None) -> "Location":
        return Location()


class _Points(threading.local):
    def __init__(self):
        self.stack: list[Block] = []


_points = _Points()


class InsertionPoint:
    """``with InsertionPoint(block):`` -- operations and ``return_`` go into ``block``."""

    def __init__(self, block: "Block"):
        self.block = block

    def __enter__(self):
        _points.stack.append(self.block)
        return self

    def __exit__(self, *exc):
        _points.stack.pop()
        return False

    @staticmethod
    def current() -> "Block | None":
        return _points.stack[-1] if _points.stack else None


# --------------------------------------------------------------------------- graph

class Value:
    """A value of the graph: a block's argument or an operation's result."""

    type: Type | None = None


class Block:
    """A list of arguments and, once ``return_`` ran inside it, the values it returns."""

    def __init__(self, arg_types=(), module=None):
        self.arguments = [BlockArgument(self, i, t) for i, t in enumerate(arg_types)]
        self.results: list | None = None
        self.module = module


class BlockArgument(Value):
    def __init__(self, block: Block, index: int, type: Type):
        self.block, self.index, self.type = block, index, type


class _Blocks(list):
    def append(self, *arg_types) -> Block:
        b = Block(arg_types)
        super().append(b)
        return b


class Region:
    def __init__(self):
        self.blocks = _Blocks()


class OpResult(Value):
    def __init__(self, op: "Operation", index: int, type: Type | None = None):
        self.op, self.index, self.type = op, index, type

    @property
    def owner(self) -> "Operation":
        return self.op


class Operation:
    """An operation: ``compute(env) -> [result values]`` over its operands."""

    def __init__(self, operands, n_results: int, compute: Callable, result_types=None):
        self.operands = list(operands)
        types = list(result_types) if result_types is not None else [None] * n_results
        self.results = [OpResult(self, i, t) for i, t in enumerate(types)]
        self._compute = compute

    @property
    def result(self) -> OpResult:
        return self.results[0]

    @property
    def operation(self) -> "Operation":
        return self


_module_ids = itertools.count()
_modules: dict[int, "Module"] = {}


class _ModuleOp:
    def __init__(self, module: "Module"):
        self.module = module

    def print(self, file=None, **kwargs) -> None:
        text = str(self.module)
        if file is None:
            print(text)
        else:
            file.write(text)

    def __str__(self):
        return str(self.module)


class Module:
    """A module: the functions made in its body (``dialects.func.func``), by name."""

    def __init__(self):
        self.id = next(_module_ids)
        self.body = Block(module=self)
        self.functions: dict = {}
        self.operation = _ModuleOp(self)
        _modules[self.id] = self

    @staticmethod
    def create(loc=None) -> "Module":
        return Module()

    def __str__(self):
        names = ", ".join(self.functions)
        return f"// wjax-mlir-module {self.id}: functions {names}\n"

    @staticmethod
    def from_text(text: str) -> "Module":
        """The module a ``Module.operation.print`` text names."""
        m = re.search(r"wjax-mlir-module (\d+):", text)
        if m is not None and int(m.group(1)) in _modules:
            return _modules[int(m.group(1))]
        raise ValueError("wjax compiles only the modules built with jax.extend.mlir in this "
                         "process (their text names them); MLIR text from elsewhere cannot "
                         "be compiled: wjax has no MLIR compiler")


class SymbolTable:
    def __init__(self, operation=None):
        self.operation = operation

    def insert(self, op):
        return op


# --------------------------------------------------------------------------- evaluation

def evaluate(v: Any, env: dict | None = None):
    """The value of ``v``: a graph value computed (results memoized in ``env``, which binds
    block arguments), anything else as it is."""
    env = {} if env is None else env
    if isinstance(v, BlockArgument):
        return env[("arg", id(v.block), v.index)]
    if isinstance(v, OpResult):
        key = ("op", id(v.op))
        if key not in env:
            env[key] = list(v.op._compute(env))
        return env[key][v.index]
    return v


def bind(block: Block, values, env: dict | None = None) -> dict:
    """A copy of ``env`` with ``block``'s arguments bound to ``values``."""
    env = dict(env or {})
    for a, x in zip(block.arguments, values):
        env[("arg", id(block), a.index)] = x
    return env


def run_block(block: Block, values, env: dict | None = None) -> list:
    """The values ``block`` returns for arguments ``values``."""
    sub = bind(block, values, env)
    return [evaluate(r, sub) for r in (block.results or [])]
