"""What the lowering knows about the device it compiles for: a ``Target``.

The runtime (the one owner of wgpu and of the device's configuration) makes the Target; the
lowering and every kernel rule read it and nothing else -- never the live device, never the
environment.  It is a mapping of the adapter's limits (``target["max-storage-buffers-per-
shader-stage"]``) with a few derived facts as attributes.
"""
from __future__ import annotations

from typing import Callable

# defaults for a target made from a bare limits mapping (tests that force limits)
_WEBGPU_DEFAULTS = {
    "max-storage-buffers-per-shader-stage": 8,
    "max-storage-buffer-binding-size": 1 << 27,
    "max-buffer-size": 1 << 28,
    "max-compute-workgroups-per-dimension": 65535,
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "min-storage-buffer-offset-alignment": 256,
}


class Target(dict):
    """The adapter's limits (a dict) and:

    ``name``             the adapter, for messages
    ``is_cpu``           a CPU adapter (lavapipe): kernels favour contiguous per-thread work
    ``loop_limit``       iterations one shader invocation may run in total (lavapipe: 65535)
    ``has_f16``          the ``shader-f16`` feature
    ``matmul``           the matmul kernel: "vec4" (register blocks) or "tiled" (workgroup memory)
    ``sort``             the sort kernel: "registers" (CPU) or "workgroup" (blocks in workgroup
                         memory)
    ``fft``              the FFT passes: "registers" (CPU: every pass a short DFT in one
                         thread's registers) or "workgroup" (long passes in workgroup memory)
    ``in_kernel_loops``  loops may compile to one kernel (``loops.py``); False records them
    ``loop_work``        element-iterations one in-kernel loop dispatch may run
    ``decomp_iters``     loop iterations one invocation of a one-kernel matrix decomposition
                         (``prims/decomp.py``: lu, cholesky, triangular_solve) may run; larger
                         matrices take the stepped form, a few dispatches per column
    ``compiles``         ``compiles(wgsl) -> bool``: validates an optional kernel variant
    ``tune``             ``tune(key, names, build, buffer_bytes, default) -> name``: picks a
                         kernel variant (``backend/autotune.py``; without a runtime: default)

    A Target is not changed once made: ``with_limits``/``replace`` make new ones.  ``key()``
    is what compiled executables are cached under, together with their jaxpr.
    """

    OPTIONS = ("name", "is_cpu", "loop_limit", "has_f16", "matmul", "sort", "fft",
               "in_kernel_loops", "loop_work", "decomp_iters", "compiles", "tune")

    def __init__(self, limits, *, name: str = "adapter", is_cpu: bool = False,
                 loop_limit: int | None = None, has_f16: bool = True, matmul: str = "tiled",
                 sort: str = "workgroup", fft: str = "workgroup", in_kernel_loops: bool = True,
                 loop_work: int = 1 << 24, decomp_iters: int = 1 << 14,
                 compiles: Callable[[str], bool] | None = None, tune: Callable | None = None):
        super().__init__(_WEBGPU_DEFAULTS)
        self.update(limits)
        self["shader-f16"] = has_f16
        self.name, self.is_cpu, self.loop_limit = name, is_cpu, loop_limit
        self.has_f16, self.matmul, self.sort, self.fft = has_f16, matmul, sort, fft
        self.in_kernel_loops, self.loop_work = in_kernel_loops, loop_work
        self.decomp_iters = decomp_iters
        self.compiles = compiles if compiles is not None else (lambda src: True)
        self.tune = tune if tune is not None else (lambda key, names, build, nb, default: default)
        self._key: tuple | None = None

    def replace(self, **options) -> "Target":
        """The same target with some options (attributes above) changed."""
        opts = {k: getattr(self, k) for k in self.OPTIONS}
        opts.update(options)
        return Target(dict(self), **opts)

    def with_limits(self, **limits) -> "Target":
        """The same target with some limits overridden (tests force small limits)."""
        t = self.replace()
        t.update({k.replace("_", "-"): v for k, v in limits.items()})
        return t

    def key(self) -> tuple:
        """What compiled plans depend on (for caches)."""
        if self._key is None:
            self._key = (tuple(getattr(self, k) for k in self.OPTIONS
                               if k not in ("compiles", "tune")),
                         tuple(sorted((k, v) for k, v in self.items()
                                      if isinstance(v, (int, bool)))))
        return self._key
