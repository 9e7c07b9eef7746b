"""``jax._src.xla_bridge``: the backend JAX's tutorials compile MLIR modules with.  wjax has
no MLIR compiler: ``compile_and_load`` takes the text of a module built in this process with
``jax.extend.mlir`` (``wjax/_src/lib/mlir``) and returns an executable that evaluates its
``main`` function with wjax's operations under ``jit``."""
from __future__ import annotations

import numpy as np

from .api.jit import jit
from .array import all_devices
from .lib.mlir import ir


class Executable:
    """A compiled module: ``execute(arrays) -> [NumPy arrays]`` of ``main``'s result types."""

    def __init__(self, module: ir.Module):
        if "main" not in module.functions:
            raise ValueError("the module has no function named main")
        self._main = module.functions["main"]
        block = self._main.block
        self._run = jit(lambda *xs: ir.run_block(block, list(xs)))

    def execute(self, arguments) -> list:
        outs = self._run(*arguments)
        types = [getattr(r, "type", None) for r in self._main.block.results]
        return [np.asarray(o).astype(t.dtype) if t is not None else np.asarray(o)
                for o, t in zip(outs, types)]

    execute_sharded = execute


class Backend:
    platform = "webgpu"

    def devices(self) -> list:
        return list(all_devices())

    def local_devices(self) -> list:
        return list(all_devices())

    def compile_and_load(self, module_text, devices=None, compile_options=None) -> Executable:
        text = module_text if isinstance(module_text, str) else str(module_text)
        return Executable(ir.Module.from_text(text))

    compile = compile_and_load


_backend = Backend()


def get_backend(platform=None) -> Backend:
    return _backend
