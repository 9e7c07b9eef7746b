"""``hlo`` operations for lowering rules written against MLIR (``mlir.register_lowering(p,
rule)`` with ``rule(ctx, *values)``): wjax runs such a rule while tracing the primitive's
expansion, with its operands' traced values as the "MLIR values", so each operation here is
the wjax operation of the same meaning, and ``.result`` its value.  Only the elementwise
operations are here; a rule needing anything else (types, attributes, custom calls) raises
NotImplementedError when it is lowered."""
from __future__ import annotations

from ....core import ops as _ops


def _value(x):
    return x.result if isinstance(x, _Op) else x


class _Op:
    """One operation: ``.result`` (and ``.results``, ``.owner``) give its value."""

    fn = None

    def __init__(self, *operands, **attributes):
        self.operands = [_value(x) for x in operands]
        self.result = type(self).fn(*self.operands)
        self.results = [self.result]
        self.owner = self


def _op(name: str, fn) -> type:
    return type(name, (_Op,), {"fn": staticmethod(fn), "__module__": __name__,
                               "__doc__": f"``hlo.{name}`` as wjax computes it."})


AddOp = _op("AddOp", _ops.add)
SubtractOp = _op("SubtractOp", _ops.sub)
MulOp = _op("MulOp", _ops.mul)
DivOp = _op("DivOp", _ops.div)
RemOp = _op("RemOp", _ops.rem)
PowOp = _op("PowOp", _ops.pow)
MaxOp = _op("MaxOp", _ops.max)
MinOp = _op("MinOp", _ops.min)
Atan2Op = _op("Atan2Op", _ops.atan2)
AndOp = _op("AndOp", _ops.bitwise_and)
OrOp = _op("OrOp", _ops.bitwise_or)
XorOp = _op("XorOp", _ops.bitwise_xor)
NegOp = _op("NegOp", _ops.neg)
AbsOp = _op("AbsOp", _ops.abs)
ExpOp = _op("ExpOp", _ops.exp)
Expm1Op = _op("Expm1Op", _ops.expm1)
LogOp = _op("LogOp", _ops.log)
Log1pOp = _op("Log1pOp", _ops.log1p)
SqrtOp = _op("SqrtOp", _ops.sqrt)
RsqrtOp = _op("RsqrtOp", _ops.rsqrt)
CbrtOp = _op("CbrtOp", _ops.cbrt)
TanhOp = _op("TanhOp", _ops.tanh)
SineOp = _op("SineOp", _ops.sin)
CosineOp = _op("CosineOp", _ops.cos)
TanOp = _op("TanOp", _ops.tan)
LogisticOp = _op("LogisticOp", _ops.logistic)
FloorOp = _op("FloorOp", _ops.floor)
CeilOp = _op("CeilOp", _ops.ceil)
SignOp = _op("SignOp", _ops.sign)
NotOp = _op("NotOp", _ops.bitwise_not)
SelectOp = _op("SelectOp", _ops.select)
