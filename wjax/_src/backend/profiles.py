"""Adapter profiles: what wjax knows about a kind of adapter, as data.

A ``Profile`` says how an adapter is recognised (``match``: predicates over its info dict),
its typical limits and features (so a ``Target`` can be built without the hardware:
``Target.for_profile("nvidia")``) and the kernel strategies it gets.  ``find(info)`` picks the
profile of a real adapter: the first one in ``PROFILES`` that matches; a CPU adapter nobody
named gets ``generic-cpu``, any other ``webgpu-default``.  A real adapter's own limits and
features always override a profile's typical ones (``Target.for_adapter``).

This module, ``target.py`` and ``runtime.py`` are the only places that look at an adapter's
name (``tests/test_layering.py`` checks).
"""
from __future__ import annotations

import dataclasses
import os

# The kernel forms for CPU adapters and for GPUs (Target attributes; see target.py):
#   reduction        "slices": each thread folds a contiguous slice, one thread per output
#                    wherever that form applies, few parts; "strided": threads stride over
#                    the elements (neighbours read neighbours), workgroup trees, many parts
#   elementwise      "looped": an elementwise kernel reading broadcast operands may run as a
#                    per-thread loop that reads them once (each load is a per-lane gather on
#                    lavapipe); "flat": one element per thread
#   register_block   "large": a thread computes a big output block (matmul candidates, products
#                    in loops): fewer loads per multiply-add; "small": GPU register pressure
#   loop_workgroup   threads of a single-workgroup loop (fewer on CPUs: each barrier switches
#                    every thread's coroutine)
#   loop_slices      the most workgroups a loop whose step keeps its rows apart is split
#                    over (a block of rows each): CPU adapters the host's cores (lavapipe runs
#                    a workgroup per core; more blocks would only add barriers -- and a block
#                    too big for one workgroup keeps the loop recorded, whose products run
#                    on the matmul kernel: an RNN cell of 64 x 256 by 256 x 256 in 64 blocks
#                    took 7x the recorded loop on lavapipe); GPUs 1024 (the RNN of
#                    bench_gpu in 64 one-row blocks, 64 workgroups of 132 multiprocessors,
#                    one dispatch for the 200 steps where the recorded loop dispatched a
#                    product of 41 us a step on an H200 -- not yet measured on a GPU)
#   loop_constants   "uniform": a loop's small constants bound as uniform buffers (one gather
#                    on lavapipe); "storage": as storage buffers
#   row_resident     the longest row whose reductions and broadcast-back elementwise work
#                    (softmax, logsumexp, layer norm) run as one kernel, a team of threads per
#                    row holding it in registers (``prims/rows.py``); 0: never (CPU adapters,
#                    where a workgroup tree per row costs more than the passes it saves)
#   submit_early     dispatches from which a program submits while it records (Program.kicks:
#                    a GPU starts on the first kernels while the host records the rest); 0:
#                    at block_until_ready only (CPU adapters: lavapipe's threads and the
#                    recording share the cores, and an MLP step measured 2-4% slower)
#   attention        the largest head dimension for which a product, a softmax over its rows
#                    and a second product run as one kernel (``prims/attention.py``: a
#                    thread per query row holds Q's row and its output row in registers:
#                    past 64 floats each, a GPU's registers spill); 0: never -- the default
#                    everywhere: on an H200 the kernel took 6.7 ms for b8 h16 s1024 d64 where
#                    the three kernels took 2.25 (GPU timestamps, 2026-11-28), and on lavapipe
#                    it is 2x the three kernels too
CPU_FORMS = {"reduction": "slices", "elementwise": "looped", "register_block": "large",
             "loop_workgroup": 64, "loop_slices": min(os.cpu_count() or 1, 16),
             "loop_constants": "uniform", "row_resident": 0,
             "attention": 0, "submit_early": 0}
GPU_FORMS = {"reduction": "strided", "elementwise": "flat", "register_block": "small",
             "loop_workgroup": 256, "loop_slices": 1024, "loop_constants": "storage",
             "row_resident": 1 << 14, "attention": 0, "submit_early": 8}
#   matmul           "vec4": register-blocked from storage; "tiled": workgroup-memory tiles
#   operand_reads    the tiled kernel's operands that no buffer holds in place: "inline" (GPU:
#                    read through their producers where the other side is narrow: implicit
#                    GEMM for convolutions) or "copy" (CPU: the register-blocked kernel copies
#                    them anyway; on lavapipe an inline relu(h + b) was 10% slower than its copy)
#   sort, fft        "registers": short passes in one thread's registers; "workgroup": long
#                    passes in workgroup memory
#   threads          invocations in flight that keep the adapter busy: how many workgroups a
#                    strided reduction is split over, and the size of the profiler's peak probe
#   radix_sort       rows from this length sort by LSD radix passes instead of the bitonic
#                    network: on lavapipe it wins from ~4K elements a row (one row of 2^20:
#                    0.18 s against 0.6-0.9 s); on GPUs, where short rows are dispatch-bound,
#                    from where the network takes more dispatches than the radix sort's 26
#                    (init, 8 passes of 3, the gather; the network at 2^17: 21 global steps,
#                    7 local ones, init and gather, 30; at 2^16, 23) and moves ~3x its bytes
#                    (448 against ~170 per element)
#   shader_checks    the run-time checks naga compiles into kernels (``Target``): "bounds"
#                    everywhere -- indices clamped, no loop counters (wgpu issue 7698: loop
#                    counters slowed some kernels 100x; lavapipe's selu 17%)
#   spin_wait_us     a wait for the device polls, until wgpu's work-done callback runs,
#                    without sleeping for this long first: GPU 20 ms (as CUDA spins by
#                    default while the host has cores to spare); CPU 0, where the "device"
#                    runs on the host's cores: alone, a waited x+1 on lavapipe took 83 us
#                    spinning against 87 asleep, and a spin takes cores the kernels need, so
#                    a CPU adapter sleeps at once.  (An earlier spin trusted the poll's result,
#                    which is True while kernels run: it did not wait at all.)
#   tune_min_flops   smaller products and convolutions take their default variant untimed:
#                    on lavapipe tuning one size class took ~5 s (compiling ~20 candidates),
#                    which JAX's shard_map tutorial paid 22 times for products of at most
#                    8 MFLOP (142 s against 24 s), so CPU adapters tune from 2^27 FLOPs (a few
#                    ms a call there); GPUs compile faster and run small products often in
#                    loops (the RNN step of bench_gpu, 8 MFLOP), so they tune from 2^20
CPU_STRATEGIES = dict(CPU_FORMS, matmul="vec4", operand_reads="copy", sort="registers",
                      radix_sort=1 << 12,
                      fft="registers", threads=1024, shader_checks="bounds", spin_wait_us=0,
                      tune_min_flops=1 << 27)
GPU_STRATEGIES = dict(GPU_FORMS, matmul="tiled", operand_reads="inline", sort="workgroup",
                      radix_sort=1 << 17,
                      fft="workgroup", threads=1 << 18, shader_checks="bounds",
                      spin_wait_us=20000, tune_min_flops=1 << 20)

# The WebGPU specification's default limits (what every adapter provides at least).
WEBGPU_LIMITS = {
    "max-storage-buffers-per-shader-stage": 8,
    "max-storage-buffer-binding-size": 1 << 27,
    "max-buffer-size": 1 << 28,
    "max-compute-workgroups-per-dimension": 65535,
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-uniform-buffer-binding-size": 65536,
    "max-uniform-buffers-per-shader-stage": 12,
    "min-storage-buffer-offset-alignment": 256,
    "min-uniform-buffer-offset-alignment": 256,
}


def _limits(storage_buffers, binding, buffer, wg_storage, invocations, alignment=256,
            uniform_buffers=12):
    return dict(WEBGPU_LIMITS, **{
        "max-storage-buffers-per-shader-stage": storage_buffers,
        "max-storage-buffer-binding-size": binding,
        "max-buffer-size": buffer,
        "max-compute-workgroup-storage-size": wg_storage,
        "max-compute-invocations-per-workgroup": invocations,
        "max-compute-workgroup-size-x": invocations,
        "max-compute-workgroup-size-y": invocations,
        "max-uniform-buffers-per-shader-stage": uniform_buffers,
        "min-storage-buffer-offset-alignment": alignment,
        "min-uniform-buffer-offset-alignment": alignment,
    })


@dataclasses.dataclass(frozen=True)
class Profile:
    """One kind of adapter.

    ``match`` is a tuple of alternatives; an alternative is a dict from an adapter info field
    (``device``, ``vendor``, ``vendor_id``, ``backend_type``, ``adapter_type``, ...) to the
    values it may have: for a string field, substrings (case-insensitive), for a number, the
    numbers themselves.  An adapter matches when every field of one alternative does; an empty
    alternative matches any adapter.
    """

    name: str
    about: str
    match: tuple
    limits: dict
    features: frozenset
    strategies: dict
    loop_limit: int | None = None       # iterations one invocation may run in all
    subgroup_size: int | None = None    # where the adapter has the ``subgroup`` feature

    def matches(self, info) -> bool:
        return any(all(_field_matches(info.get(field), values) for field, values in alt.items())
                   for alt in self.match)


def _field_matches(value, values) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return any(v.lower() in value.lower() for v in values)
    return value in values


_GPU_FEATURES = frozenset({"shader-f16", "subgroup", "timestamp-query"})
_NVIDIA, _AMD, _INTEL, _APPLE, _QUALCOMM, _ARM = 0x10DE, 0x1002, 0x8086, 0x106B, 0x5143, 0x13B5

PROFILES = (
    Profile("lavapipe", "Mesa's Vulkan driver on the CPU (llvmpipe)",
            ({"device": ("llvmpipe",), "backend_type": ("vulkan",)},),
            _limits(32, 1 << 27, (1 << 31) - 1, 32768, 1024, alignment=32, uniform_buffers=15),
            _GPU_FEATURES, CPU_STRATEGIES,
            # llvmpipe silently stops a shader invocation after 65535 loop iterations; its
            # subgroup size follows LP_NATIVE_VECTOR_WIDTH (8 lanes at 256 bits)
            loop_limit=65535, subgroup_size=None),
    Profile("llvmpipe-gl", "wgpu's GL backend over Mesa's llvmpipe (naga -> GLSL)",
            ({"device": ("llvmpipe",)},),
            _limits(16, 1 << 27, (1 << 31) - 1, 32768, 1024, alignment=32, uniform_buffers=15),
            frozenset({"timestamp-query"}), CPU_STRATEGIES, loop_limit=65535),
    Profile("generic-cpu", "any other CPU adapter (SwiftShader, WARP)",
            ({"adapter_type": ("cpu",)},),
            dict(WEBGPU_LIMITS), frozenset(), CPU_STRATEGIES),
    Profile("nvidia", "NVIDIA GPUs",
            ({"vendor_id": (_NVIDIA,)}, {"vendor": ("nvidia",)},
             {"device": ("nvidia", "geforce", "quadro", "tesla")}),
            _limits(16, (1 << 31) - 4, 1 << 32, 49152, 1024, alignment=32),
            _GPU_FEATURES, GPU_STRATEGIES, subgroup_size=32),
    Profile("amd-rdna", "AMD Radeon GPUs (RDNA: wave32, or wave64)",
            ({"vendor_id": (_AMD,)}, {"vendor": ("amd",)}, {"device": ("radeon",)}),
            _limits(16, (1 << 31) - 4, 1 << 32, 65536, 1024),
            _GPU_FEATURES, GPU_STRATEGIES, subgroup_size=32),
    Profile("apple-m", "Apple silicon GPUs (Metal)",
            ({"vendor_id": (_APPLE,)}, {"vendor": ("apple",)}, {"device": ("apple",)}),
            _limits(31, 1 << 30, 1 << 32, 32768, 1024),
            _GPU_FEATURES, GPU_STRATEGIES, subgroup_size=32),
    Profile("intel-xe", "Intel GPUs (Xe, Arc, UHD/Iris)",
            ({"vendor_id": (_INTEL,)}, {"vendor": ("intel",)},
             {"device": ("intel", "iris")}),
            _limits(16, 1 << 30, 1 << 31, 32768, 1024, alignment=64),
            _GPU_FEATURES, GPU_STRATEGIES, subgroup_size=16),
    Profile("adreno", "Qualcomm Adreno GPUs (mobile)",
            ({"vendor_id": (_QUALCOMM,)}, {"device": ("adreno",)}),
            _limits(24, 1 << 27, 1 << 30, 32768, 1024, alignment=64),
            frozenset({"shader-f16", "subgroup"}), GPU_STRATEGIES, subgroup_size=64),
    Profile("mali", "Arm Mali GPUs (mobile)",
            ({"vendor_id": (_ARM,)}, {"device": ("mali",)}),
            _limits(8, 1 << 27, 1 << 30, 16384, 512),
            frozenset({"shader-f16"}), GPU_STRATEGIES, subgroup_size=16),
    Profile("webgpu-default", "any other adapter: the WebGPU specification's default limits",
            ({},), dict(WEBGPU_LIMITS), frozenset(), GPU_STRATEGIES),
)
BY_NAME = {p.name: p for p in PROFILES}


def find(info) -> Profile:
    """The profile of an adapter, from its info dict (the first in ``PROFILES`` that
    matches; ``webgpu-default`` matches any)."""
    return next(p for p in PROFILES if p.matches(info))


def get(name: str) -> Profile:
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"wjax: no adapter profile {name!r}; there are "
                         f"{', '.join(BY_NAME)}") from None
