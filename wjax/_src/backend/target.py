"""What the lowering knows about the device it compiles for: a ``Target``.

``Target.for_adapter(info, limits, features)`` is the one place an adapter becomes decisions:
it finds the adapter's profile (``profiles.py``: limits, features and strategies as data) and
sets the named kernel strategies below.  The runtime (the one owner of wgpu and of the
device's configuration) calls it; the lowering and every kernel rule read the Target and
nothing else -- never the live device, never the environment.  ``Target.for_profile(name)``
builds one without the hardware.  It is a mapping of the adapter's limits
(``target["max-storage-buffers-per-shader-stage"]``) with the decisions as attributes.
"""
from __future__ import annotations

import re
from typing import Callable

from . import profiles

# Target.shader_checks -> wgpu-native's WGPUShaderRuntimeChecks bits (BoundsChecks 1,
# ForceLoopBounding 2)
SHADER_CHECKS = {"all": 3, "bounds": 1, "none": 0}

# The values each named strategy may take (checked where a Target is made, ``_check``), and
# the environment variable that sets it, for messages
CHOICES = {"matmul": ("vec4", "tiled"), "operand_reads": ("inline", "copy"),
           "sort": ("registers", "workgroup"), "fft": ("registers", "workgroup"),
           "reduction": ("slices", "strided"), "elementwise": ("looped", "flat"),
           "register_block": ("large", "small"), "loop_constants": ("uniform", "storage"),
           "shader_checks": tuple(SHADER_CHECKS)}
COUNTS = {"radix_sort": 0, "row_resident": 0, "attention": 0, "submit_early": 0,
          "spin_wait_us": 0, "tune_min_flops": 0, "decomp_iters": 0, "loop_workgroup": 1,
          "threads": 1, "loop_work": 1, "loop_slices": 1}   # integer options -> least value
ENV = {"matmul": "WJAX_MATMUL", "matmul_tile": "WJAX_MATMUL_TILE",
       "shader_checks": "WJAX_SHADER_CHECKS"}
_TILE = re.compile(r"\d+x\d+x\d+(g\d+)?")


def check_names(options) -> None:
    """Raises TypeError naming any of ``options`` that is not a Target option."""
    unknown = [k for k in options if k not in Target.OPTIONS]
    if unknown:
        what = "is not a target option" if len(unknown) == 1 else "are not target options"
        raise TypeError(f"wjax: {', '.join(map(repr, unknown))} {what}; the options: "
                        f"{', '.join(Target.OPTIONS)}")


def _check(name: str, value) -> None:
    """Raises ValueError naming option ``name`` and what it may be, where ``value`` is not
    one of its values."""
    env = f" ({ENV[name]})" if name in ENV else ""
    if name in CHOICES and value not in CHOICES[name]:
        raise ValueError(f"wjax: {name} must be one of {', '.join(CHOICES[name])}, not "
                         f"{value!r}{env}")
    if name in COUNTS and (isinstance(value, bool) or not isinstance(value, int)
                           or value < COUNTS[name]):
        raise ValueError(f"wjax: {name} must be an integer >= {COUNTS[name]}, not {value!r}")
    if name == "matmul_tile" and value != "" and not (isinstance(value, str)
                                                      and _TILE.fullmatch(value)):
        raise ValueError(f"wjax: matmul_tile must be BMxBNxBK or BMxBNxBKgKG (e.g. "
                         f"128x128x16, 64x64x16g2), or empty for the tile chosen per "
                         f"product, not {value!r}{env}")
    if name == "loop_limit" and value is not None and (isinstance(value, bool) or not
                                                       isinstance(value, int) or value < 1):
        raise ValueError(f"wjax: loop_limit must be a positive integer or None, not {value!r}")


class Target(dict):
    """The adapter's limits (a dict) and:

    ``name``             the adapter, for messages
    ``profile``          the name of its profile (``profiles.py``)
    ``loop_limit``       iterations one shader invocation may run in total (lavapipe: 65535)
    ``has_f16``          the ``shader-f16`` feature
    ``subgroup_size``    the profile's subgroup size where the adapter has ``subgroup``, else
                         None
    ``matmul``           the matmul kernel: "vec4" (register blocks) or "tiled" (workgroup memory)
    ``matmul_tile``      "" (the tiled kernel's tile chosen per product) or a forced tile,
                         "BMxBNxBK" (``prims/dot.py``'s ``TILES``)
    ``operand_reads``    how the tiled kernel takes an operand it cannot read from a buffer in
                         place (fused producers, a convolution's patches, another layout):
                         "inline" (its loads call the operand's reader, producers recomputed
                         per tile of the other operand where they are cheap: implicit GEMM)
                         or "copy" (a fused kernel lays it out first)
    ``sort``             the sort kernel: "registers" (CPU) or "workgroup" (blocks in workgroup
                         memory)
    ``radix_sort``       rows at least this long sort by an LSD radix sort (``prims/sort.py``:
                         4-bit passes, keys of 32 bits or fewer); 0: never (bitonic only)
    ``fft``              the FFT passes: "registers" (CPU: every pass a short DFT in one
                         thread's registers) or "workgroup" (long passes in workgroup memory)
    ``reduction``        "slices" (CPU: each thread folds a contiguous slice; one thread per
                         output wherever that applies; few parts) or "strided" (GPU: threads
                         stride over the elements, workgroup trees, many parts)
    ``elementwise``      "looped" (CPU: an elementwise kernel reading broadcast operands may run
                         as a per-thread loop reading them once, ``Lowering._looped``) or "flat"
    ``register_block``   "large" (CPU: big output blocks per thread -- the matmul's tuning
                         candidates, products in loops) or "small" (GPU register pressure)
    ``loop_workgroup``   threads of a single-workgroup in-kernel loop (CPU 64, GPU 256)
    ``loop_slices``      the most workgroups an in-kernel loop whose step keeps its rows apart
                         (an RNN cell over a batch) is split over, one block of rows each
                         (``loops.py``, ``transforms/row_split.py``): the largest number up to
                         it that divides the rows; 1: never split (CPU: the host's cores, at
                         most 16 -- lavapipe runs a workgroup per core; GPU 1024)
    ``row_resident``     rows up to this length (GPU 16384) run a fused group of row reductions
                         and their broadcast-back elementwise work -- softmax, logsumexp, a
                         layer norm -- as one kernel holding each row on chip
                         (``passes.row_groups``, ``prims/rows.py``); 0 (CPU): never
    ``attention``        head dimensions up to this let attention -- two products with a
                         softmax between them -- run as one kernel with an online softmax, the
                         scores never in memory (``passes.attention_groups``,
                         ``prims/attention.py``); 0 (every profile): never -- its thread per
                         query row lost 3x to the three kernels on an H200
    ``submit_early``     a program of at least this many dispatches submits while it is recorded
                         (after its 2nd, 6th, 14th, ... dispatch and at its end) so the device
                         starts while the host records the rest (GPU 8); 0 (CPU, where the
                         host and the "device" share the cores): at ``block_until_ready``
    ``loop_constants``   "uniform" (CPU: a loop's small constants bound as uniform buffers) or
                         "storage"
    ``threads``          invocations in flight that keep the adapter busy (CPU 1024, GPU 2^18):
                         the workgroups a strided reduction is split over
                         (``prims/reduce.py``), the size of the profiler's peak probe, and
                         from how many vec4s a flat elementwise thread takes 4 (``lower.py``)
    ``shader_checks``    the run-time checks wgpu's shader compiler (naga) adds to every kernel
                         (the runtime compiles with them): "all" (wgpu's default: indices
                         clamped, and a 64-bit counter in every loop so that no loop is
                         provably infinite), "bounds" (indices clamped, loops as written) or
                         "none".  wjax's loops all end (a program's own endless
                         ``while_loop`` hangs either way), so the counters only cost: a loop
                         compare and two adds an iteration, and loops the driver can no
                         longer unroll (lavapipe: selu 17% slower with them).  Kernels keep
                         the checks they were first compiled with.
    ``spin_wait_us``     a wait for the device (``block_until_ready``, a readback) polls without
                         blocking for up to this many microseconds before it sleeps on the
                         fence (``Runtime._wait``); 0 (CPU adapters, whose kernels run on
                         the cores a spin would take): it sleeps at once
    ``in_kernel_loops``  loops may compile to one kernel (``loops.py``); False records them
    ``loop_work``        element-iterations one in-kernel loop dispatch may run
    ``decomp_iters``     loop iterations one invocation of a one-kernel matrix decomposition
                         (``prims/decomp.py``: lu, cholesky, triangular_solve) may run; larger
                         matrices take the stepped form, a few dispatches per column
    ``compiles``         ``compiles(wgsl) -> bool``: validates an optional kernel variant
    ``tune``             ``tune(key, names, build, buffer_bytes, default) -> name``: picks a
                         kernel variant (``backend/autotune.py``; without a runtime: default)
    ``tune_min_flops``   problems of fewer FLOPs take the default variant untimed
                         (``pick_variant``): tuning compiles and times every candidate once
                         per size class -- seconds on a CPU adapter -- which small products
                         never win back

    and ``workgroup_memory``, the bytes of workgroup storage a kernel may declare.  A bare
    ``Target(limits)`` has the WebGPU default limits under ``limits`` and the GPU strategies.

    A Target is not changed once made: ``with_limits``/``replace`` make new ones.  ``key()``
    is what compiled executables are cached under, together with their jaxpr.
    """

    OPTIONS = ("name", "profile", "loop_limit", "has_f16", "subgroup_size", "matmul",
               "matmul_tile", "operand_reads", "sort", "radix_sort", "fft", "reduction",
               "elementwise", "register_block", "loop_workgroup", "loop_slices",
               "loop_constants", "row_resident", "attention", "submit_early", "threads",
               "in_kernel_loops", "loop_work", "decomp_iters", "shader_checks", "spin_wait_us",
               "tune_min_flops", "compiles", "tune")

    def __init__(self, limits, *, name: str = "adapter", profile: str = "webgpu-default",
                 loop_limit: int | None = None, has_f16: bool = True,
                 subgroup_size: int | None = None, matmul: str = "tiled",
                 matmul_tile: str = "", operand_reads: str = "inline",
                 sort: str = "workgroup", radix_sort: int = 1 << 17,
                 fft: str = "workgroup", reduction: str = "strided",
                 elementwise: str = "flat", register_block: str = "small",
                 loop_workgroup: int = 256, loop_slices: int = 1024,
                 loop_constants: str = "storage",
                 row_resident: int = 1 << 14, attention: int = 0, submit_early: int = 8,
                 threads: int = 1 << 18, in_kernel_loops: bool = True, loop_work: int = 1 << 24,
                 decomp_iters: int = 1 << 14, shader_checks: str = "bounds",
                 spin_wait_us: int = 20000, tune_min_flops: int = 1 << 20,
                 compiles: Callable[[str], bool] | None = None, tune: Callable | None = None):
        super().__init__(profiles.WEBGPU_LIMITS)
        self.update(limits)
        self["shader-f16"] = has_f16
        self.name, self.profile, self.loop_limit = name, profile, loop_limit
        self.has_f16, self.subgroup_size = has_f16, subgroup_size
        self.matmul, self.sort, self.fft = matmul, sort, fft
        self.matmul_tile = matmul_tile
        self.operand_reads = operand_reads
        self.radix_sort = radix_sort
        self.reduction, self.elementwise = reduction, elementwise
        self.register_block, self.loop_workgroup = register_block, loop_workgroup
        self.loop_slices = loop_slices
        self.loop_constants, self.threads = loop_constants, threads
        self.row_resident = row_resident
        self.attention = attention
        self.submit_early = submit_early
        self.in_kernel_loops, self.loop_work = in_kernel_loops, loop_work
        self.decomp_iters = decomp_iters
        self.shader_checks = shader_checks
        self.spin_wait_us = spin_wait_us
        self.tune_min_flops = tune_min_flops
        self.compiles = compiles if compiles is not None else (lambda src: True)
        self.tune = tune if tune is not None else (lambda key, names, build, nb, default: default)
        self._key: tuple | None = None
        for option in (*CHOICES, *COUNTS, "matmul_tile", "loop_limit"):
            _check(option, getattr(self, option))

    @classmethod
    def for_adapter(cls, info, limits, features, *, settings=None, compiles=None, tune=None,
                    **options) -> "Target":
        """The target of a real adapter: its ``info`` dict (device, vendor, backend_type,
        adapter_type, ...) finds its profile, whose strategies it takes; its own ``limits``
        and ``features`` override the profile's typical ones.  ``settings``
        (``core.config.Settings``) may force the matmul kernel (``WJAX_MATMUL``); ``options``
        (``Target.OPTIONS``) override anything chosen."""
        name = f"{info.get('device', '?')} [{info.get('backend_type', '?')}, " \
               f"{info.get('adapter_type', '?')}]"
        forced = {}
        if settings is not None and settings.matmul != "auto":
            forced["matmul"] = settings.matmul
        if settings is not None and settings.matmul_tile:
            forced["matmul_tile"] = settings.matmul_tile
        if settings is not None and settings.shader_checks:
            forced["shader_checks"] = settings.shader_checks
        return cls._build(profiles.find(info), name, limits, features, compiles, tune,
                          dict(forced, **options))

    @classmethod
    def for_profile(cls, name: str, *, limits=None, features=None, compiles=None, tune=None,
                    **options) -> "Target":
        """The target of a typical adapter of profile ``name`` (``profiles.PROFILES``), with no
        hardware: its typical limits and features, unless given."""
        profile = profiles.get(name)
        return cls._build(profile, f"{name} (profile)", limits or {},
                          profile.features if features is None else features, compiles, tune,
                          options)

    @classmethod
    def _build(cls, profile, name, limits, features, compiles, tune, options) -> "Target":
        features = set(features)
        opts = dict(profile.strategies, name=name, profile=profile.name,
                    loop_limit=profile.loop_limit, has_f16="shader-f16" in features,
                    subgroup_size=profile.subgroup_size if "subgroup" in features else None,
                    compiles=compiles, tune=tune)
        opts.update(options)
        return cls(dict(profile.limits, **limits), **opts)

    def pick_variant(self, key, names, build, buffer_bytes, default: str, flops: int) -> str:
        """The variant of a kernel to use for a problem of ``flops``: ``tune``'s choice (the
        cached or timed winner), or ``default`` untimed below ``tune_min_flops``."""
        if flops < self.tune_min_flops:
            return default
        return self.tune(key, names, build, buffer_bytes, default)

    @property
    def workgroup_memory(self) -> int:
        """Bytes of workgroup storage one kernel may declare."""
        return int(self["max-compute-workgroup-storage-size"])

    def replace(self, **options) -> "Target":
        """The same target with some options (attributes above) changed."""
        check_names(options)
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
