"""``jax.extend.mlir`` + ``jax._src.xla_bridge``: a module built with MLIR's Python API as the
autodidax tutorial builds one (functions, calls, a reduction region, an if), compiled by the
backend and executed -- the same code against real JAX and against wjax, which records the
module as a graph of its own operations and runs it under jit."""
import io

import numpy as np
import pytest


def _program(ir, func, hlo, xb, xc, shaped):
    def f32(shape):
        return ir.RankedTensorType.get(shape, ir.F32Type.get())

    with ir.Context() as ctx, ir.Location.unknown(ctx):
        hlo.register_dialect(ctx)
        m = ir.Module.create()
        table = ir.SymbolTable(m.operation)
        with ir.InsertionPoint(m.body):
            @func.func(f32((3,)))
            def inner(x):
                return [hlo.multiply(hlo.sine(x), hlo.constant(
                    ir.DenseElementsAttr.get(np.full((3,), 2.0, np.float32))))]
            table.insert(inner.func_op)

            @func.func(f32((3,)), f32(()))
            def main(x, s):
                y = func.CallOp(inner.func_op, [x]).results[0]
                red = hlo.ReduceOp([f32(())], [y], [hlo.constant(
                    ir.DenseElementsAttr.get(np.array(0, np.float32)))], [0])
                block = red.body.blocks.append(f32(()), f32(()))
                with ir.InsertionPoint(block):
                    hlo.return_([hlo.add(*block.arguments)])
                total = red.results[0]
                pred = hlo.compare(total, s, hlo.ComparisonDirectionAttr.get("GT"))
                cond = hlo.IfOp([f32(())], pred)
                with ir.InsertionPoint(cond.true_branch.blocks.append()):
                    hlo.return_([hlo.subtract(total, s)])
                with ir.InsertionPoint(cond.false_branch.blocks.append()):
                    hlo.return_([hlo.negate(total)])
                big = hlo.broadcast_in_dim(f32((2, 3)), y, [1])
                return [cond.results[0], big]
    text = io.StringIO()
    m.operation.print(file=text)
    backend = xb.get_backend(None)
    compiled = backend.compile_and_load(text.getvalue(), backend.devices()[:1])
    device = backend.devices()[0]
    outs = []
    for x, s in ((np.array([0.1, 0.5, 1.0], np.float32), np.float32(0.5)),
                 (np.array([-1.0, -0.5, 0.2], np.float32), np.float32(3.0))):
        bufs = [xc.batched_device_put(shaped(v.shape, v.dtype),
                                      xc.GSPMDSharding((device,), xc.OpSharding()),
                                      [v], [device], True) for v in (x, s)]
        outs.append([np.asarray(b) for b in compiled.execute(bufs)])
    return outs


def test_module_built_with_mlir_api_runs_as_in_jax():
    jax = pytest.importorskip("jax")
    from jax.extend.mlir import ir as jir
    from jax.extend.mlir.dialects import func as jfunc, stablehlo as jhlo
    from jax._src import xla_bridge as jxb
    from jax._src.lib import xla_client as jxc
    from wjax.extend.mlir import ir
    from wjax.extend.mlir.dialects import func, stablehlo as hlo
    from wjax._src import xla_bridge as xb
    from wjax._src.lib import xla_client as xc
    import wjax
    ours = _program(ir, func, hlo, xb, xc, wjax.core.ShapedArray)
    theirs = _program(jir, jfunc, jhlo, jxb, jxc, jax.core.ShapedArray)
    for a, b in zip(ours, theirs):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


def test_mlir_text_from_elsewhere_is_refused():
    from wjax._src import xla_bridge as xb
    with pytest.raises(ValueError, match="no MLIR compiler"):
        xb.get_backend(None).compile_and_load("module { }", None)
