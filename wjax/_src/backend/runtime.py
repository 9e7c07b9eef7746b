"""The WebGPU runtime: adapter choice, device, buffer pool, pipelines, dispatch.

Work is asynchronous like JAX's: dispatches are recorded into one pending
command encoder and submitted together at a sync point (reading a value,
``block_until_ready``, an upload into a reused buffer, or a full batch).
WebGPU executes a queue in order, so a buffer returned to the pool can be
handed to later work straight away.
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import logging
import os
import threading
import time

import numpy as np

from ..core import config as _cfg
from ..core.config import config as _config

_cfg.prepare_driver_environment()     # before wgpu loads its native library

import wgpu  # noqa: E402

from . import strict_driver, wgsl as W  # noqa: E402
from .autotune import Tuner  # noqa: E402
from .target import SHADER_CHECKS, Target, check_names  # noqa: E402

# every buffer may also be bound as a uniform buffer (loop kernels read small constants so)
_USAGE = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_SRC
          | wgpu.BufferUsage.COPY_DST)
_BATCH = 512            # dispatches recorded before a submit is forced


def _quick_type_names() -> bool:
    """Lets wgpu-py's cffi turn the type names it asks for (``"WGPUBindGroupDescriptor *"``,
    ``"WGPUBindGroupEntry[]"``) into types without pycparser.  cffi parses each new type
    string once per process by declaring every typedef of wgpu.h anew (~1,000) and parsing
    that with pycparser: 20-40 ms a string on a fast core, 24 strings when the device starts
    and 17 more in the first compile (~0.6 s of a cold first call on a 2-core machine).
    A name, a pointer to it, or an array of it, where the name is a plain typedef wgpu.h
    declared, is its declared type, built exactly as cffi's parser builds it; anything else
    goes to the parser.  Only wgpu-py's own parser is changed (other cffi users keep theirs);
    where wgpu-py or cffi look otherwise, nothing is changed (returns False)."""
    import re
    try:
        from cffi import model
        from wgpu.backends.wgpu_native import _api
        parser = _api.ffi._parser
        decls, parse, pointer = parser._declarations, parser.parse_type, parser._get_type_pointer
    except Exception:
        return False
    simple = re.compile(r"\s*([A-Za-z_]\w*)\s*(\*|\[\s*\])?\s*$")

    def parse_type(cdecl):
        m = simple.match(cdecl)
        got = decls.get("typedef " + m.group(1)) if m else None
        if got is None or got[1]:         # not a typedef wgpu.h declared, or qualified
            return parse(cdecl)
        tp, suffix = got[0], m.group(2)
        if suffix is None:
            return tp
        return pointer(tp, 0) if suffix == "*" else model.ArrayType(tp, None)
    parser.parse_type = parse_type
    return True


_QUICK_TYPES = _quick_type_names()


def _native_pass_calls():
    """wgpu-native's compute-pass calls themselves: (set pipeline, set bind group without
    dynamic offsets, dispatch), each called with the objects' handles, or None where this
    wgpu-py does not expose them.  ``GPUComputePassEncoder``'s methods wrap each call in an
    error scope of their own (most of a cached call's wgpu time); the errors of the commands
    of a pass are reported when its encoder is finished (``flush``), so they raise there
    either way (and wgpu-py keeps nothing alive for a compute pass: wgpu-native holds what
    a pass uses)."""
    try:
        from wgpu.backends.wgpu_native import _api
        lib, null = _api.lib, _api.ffi.NULL
        set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        set_bg = lib.wgpuComputePassEncoderSetBindGroup
        dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
    except Exception:    # another wgpu-py layout: the public methods
        return None
    return set_pipeline, lambda p, bg: set_bg(p, 0, bg, 0, null), dispatch


_NATIVE = _native_pass_calls()


def _native_bind_group_call():
    """``make(device, layout, entries)``: a bind group of ``entries`` ((GPU buffer, byte
    offset, byte size) bound at 0, 1, ...) made by wgpu-native's ``wgpuDeviceCreateBindGroup``
    with its descriptor filled in directly, as wgpu-py's object (released when dropped); None
    where this wgpu-py does not expose the call.  wgpu-py's ``create_bind_group`` checks and
    converts every entry through its struct helpers: 60 us of a 70 us bind group on lavapipe
    (two bindings), which a call whose outputs the pool cannot hand back (the caller keeps
    them) pays per kernel.  Errors raise as ``create_bind_group``'s do (the same error-checked
    call)."""
    try:
        from wgpu.backends.wgpu_native import _api
        ffi, create, wrap = _api.ffi, _api.libf.wgpuDeviceCreateBindGroup, _api.GPUBindGroup
        ffi.new("WGPUBindGroupEntry[]", 1)
        ffi.new("WGPUBindGroupDescriptor *")
    except Exception:
        return None

    def make(device, layout, entries):
        n = len(entries)
        c = ffi.new("WGPUBindGroupEntry[]", n)       # zeroed: no chain, sampler or texture
        for i, (gpu, offset, size) in enumerate(entries):
            e = c[i]
            e.binding, e.buffer, e.offset, e.size = i, gpu._internal, offset, size
        d = ffi.new("WGPUBindGroupDescriptor *")     # zeroed: no chain, an empty label
        d.layout, d.entryCount, d.entries = layout._internal, n, c
        return wrap("", create(device._internal, d), device)
    return make


_BIND_GROUP = _native_bind_group_call()


def _trusted_module_call():
    """``make(device, code, checks)``: a shader module compiled with only the run-time checks
    ``checks`` (``target.SHADER_CHECKS``' bits) through wgpu-native's
    ``wgpuDeviceCreateShaderModuleTrusted``; None where this wgpu-py lacks it (every module
    then gets wgpu's default checks).  Its errors raise as ``create_shader_module``'s do
    (wgpu-py's error handling wraps every wgpu-native call)."""
    try:
        from wgpu.backends.wgpu_native import _api
        ffi, lib, libf = _api.ffi, _api.lib, _api.libf
        create = libf.wgpuDeviceCreateShaderModuleTrusted
        wgsl_type, module_type = lib.WGPUSType_ShaderSourceWGSL, _api.GPUShaderModule
        struct, text = _api.new_struct_p, _api.to_c_string_view
    except Exception:
        return None

    def make(device, code: str, checks: int):
        src = struct("WGPUShaderSourceWGSL *", code=text(code))
        src[0].chain.next = ffi.NULL
        src[0].chain.sType = wgsl_type
        desc = struct("WGPUShaderModuleDescriptor *",
                      nextInChain=ffi.cast("WGPUChainedStruct *", src), label=text(""))
        handle = create(device._internal, desc, checks)
        if handle == ffi.NULL:
            raise RuntimeError("Shader module creation failed")
        return module_type("", handle, device)
    return make


_TRUSTED_MODULE = _trusted_module_call()


def _device_poll():
    """wgpu-native's ``wgpuDevicePoll(device handle, wait, NULL)`` itself, or None where this
    wgpu-py does not expose it.  Its result says nothing about whether the work is done (a
    poll that does not block returns True on lavapipe and on an NVIDIA H200 while kernels
    run): only the callbacks it runs say that (``_work_done``)."""
    try:
        from wgpu.backends.wgpu_native import _api
        poll, null = _api.lib.wgpuDevicePoll, _api.ffi.NULL
    except Exception:
        return None
    return lambda handle, wait: bool(poll(handle, wait, null))


_POLL = _device_poll()


class _WorkDone:
    """wgpu-native's queue work-done callback for one device: ``mark()`` registers it for the
    work submitted so far and returns a ticket; ``done(ticket)`` says whether the callbacks
    up to that one have run (wgpu runs them in submission order, inside device polls, or at
    once when nothing is in flight).  ``make(device)`` is None where this wgpu-py does not
    expose the call."""

    def __init__(self, ffi, lib, queue):
        self.marked = self.ran = 0

        # the callback's type as this wgpu-native's header declares it (status, message,
        # two userdata); an error status (a lost device) ends the wait too
        @ffi.callback("WGPUQueueWorkDoneCallback")
        def ran(*_status_message_userdata):
            self.ran += 1
        self._keep = ran
        info = ffi.new("WGPUQueueWorkDoneCallbackInfo *")     # zeroed: no chain, userdata
        info.mode, info.callback = lib.WGPUCallbackMode_AllowProcessEvents, ran
        self._info, self._register, self._queue = info[0], \
            lib.wgpuQueueOnSubmittedWorkDone, queue

    def mark(self) -> int:
        self.marked += 1
        self._register(self._queue, self._info)
        return self.marked

    def done(self, ticket: int) -> bool:
        return self.ran >= ticket

    @classmethod
    def make(cls, device):
        try:
            from wgpu.backends.wgpu_native import _api
            return cls(_api.ffi, _api.lib, device.queue._internal)
        except Exception:
            return None


class WjaxRuntimeError(RuntimeError):
    pass


class _LostWatch(logging.Handler):
    """wgpu-py reports a lost device only by logging it (its device-lost callback logs "The
    WGPU device was lost (reason): ..." on the "wgpu" logger), and wgpu-native then aborts
    the whole process on the next submit to that device.  This handler keeps the first such
    report (a device destroyed on purpose is not lost); ``Runtime.check_device`` raises it
    before anything more is submitted or waited for."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.lost: str | None = None

    def emit(self, record) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            return
        head = msg.split(":", 1)[0].lower()
        if ("device was lost" in head and self.lost is None
                and not any(w in head for w in ("destroyed", "dropped", "cancelled"))):
            self.lost = msg.strip()


_LOST = _LostWatch()
logging.getLogger("wgpu").addHandler(_LOST)


_TYPE_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "CPU": 2, "VirtualGPU": 3, "Unknown": 3}
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 2, "GL": 2}


def _adapter_desc(a) -> str:
    i = a.info
    return f"{i['device']} ({i['backend_type']}, {i['adapter_type']})"


def list_adapters():
    return list(wgpu.gpu.enumerate_adapters_sync())


def choose_adapter(adapters=None, honour_env: bool = True):
    """Discrete GPU, then integrated, then CPU (lavapipe), GL last.

    ``WJAX_BACKEND`` (vulkan/metal/d3d12/gl) restricts the backend and
    ``WJAX_ADAPTER`` (a substring of the device name, or an index) picks one
    (unless ``honour_env`` is False: the set-up probe ``python -m wjax --check``).
    """
    adapters = list_adapters() if adapters is None else adapters
    env = _cfg.settings()
    want_backend = env.backend if honour_env else ""
    if want_backend:
        alias = {"gl": "opengl"}
        b = alias.get(want_backend, want_backend)
        adapters = [a for a in adapters if a.info["backend_type"].lower() == b]
        if not adapters:
            raise WjaxRuntimeError(f"WJAX_BACKEND={want_backend!r}: no adapter with that backend")
    want = env.adapter if honour_env else ""
    if want:
        if want.isdigit() and int(want) < len(adapters):
            return adapters[int(want)]
        pick = [a for a in adapters if want.lower() in a.info["device"].lower()]
        if not pick:
            raise WjaxRuntimeError(
                f"WJAX_ADAPTER={want!r} matches none of: "
                + "; ".join(_adapter_desc(a) for a in adapters)
            )
        adapters = pick
    if not adapters:
        raise WjaxRuntimeError(
            "No WebGPU adapter found. Install a Vulkan, Metal or D3D12 driver; on Debian/Ubuntu "
            "without a GPU, `apt-get install mesa-vulkan-drivers` gives the lavapipe CPU driver "
            "(scripts/setup.sh does this when run as root).")

    def rank(a):
        i = a.info
        return (_BACKEND_RANK.get(i["backend_type"], 1), _TYPE_RANK.get(i["adapter_type"], 3))

    return sorted(adapters, key=rank)[0]


class Buffer:
    """A pooled device buffer.  ``nbytes`` is the capacity (a size class).

    Arrays that share storage (a reshape) share one Buffer; when the last
    reference goes, its GPU buffer returns to the pool."""

    __slots__ = ("gpu", "nbytes", "pool", "__weakref__")

    def __init__(self, gpu, nbytes, pool):
        self.gpu, self.nbytes, self.pool = gpu, nbytes, pool
        pool.in_use += nbytes

    def __del__(self):
        try:
            self.pool.put(self.gpu, self.nbytes)
        except Exception:  # interpreter shutdown
            pass


class View:
    """A window of a Buffer (``offset``, ``nbytes``; the offset a multiple of the adapter's
    min-storage-buffer-offset-alignment) that a kernel binds and a copy reads or writes in
    place of a whole buffer: a recorded scan's step reads its ``xs`` slice and writes its
    ``ys`` slice through views instead of copying them (``host_steps._RecordedScan``)."""

    __slots__ = ("base", "gpu", "offset", "nbytes")

    def __init__(self, base: Buffer, offset: int, nbytes: int):
        self.base, self.gpu, self.offset, self.nbytes = base, base.gpu, offset, nbytes


def _view_ranges(buffers, ranges):
    """``ranges`` with each View's window in place of a whole-buffer binding."""
    out = []
    for i, b in enumerate(buffers):
        r = ranges[i] if ranges is not None else None
        if type(b) is View:
            off = b.offset + (r[0] if r is not None else 0)
            size = r[1] if r is not None and r[1] is not None else b.nbytes - (off - b.offset)
            r = (off, size)
        out.append(r)
    return out


class Pool:
    """Free GPU buffers by size class, within a byte budget.

    ``put`` runs in ``Buffer.__del__`` (at any time, in any thread): it only appends to a
    deque.  ``take`` and ``trim`` run under the runtime's lock: ``trim`` releases the oldest
    free buffers until the pool holds at most ``budget`` bytes.  Releasing is safe while a
    buffer's last use is still recorded and unsubmitted: wgpu keeps it alive for the work."""

    def __init__(self, budget: int, owned: dict, on_release=None):
        self.budget = budget
        self.owned = owned               # id(gpu) -> gpu: every live GPU buffer (see Runtime)
        self.on_release = on_release     # called with id(gpu) of each buffer released
        self.free: dict[int, dict] = {}   # size class -> {id(gpu): gpu}, oldest first
        self.returned = collections.deque()
        self.pooled = 0                  # bytes in ``free``
        self.in_use = 0                  # bytes held by live Buffers

    def put(self, gpu, nbytes):
        self.in_use -= nbytes
        self.returned.append((gpu, nbytes))

    def _drain(self):
        while self.returned:
            gpu, n = self.returned.popleft()
            self.free.setdefault(n, {})[id(gpu)] = gpu
            self.pooled += n

    def take(self, nbytes, prefer: int | None = None):
        """A free buffer of class ``nbytes``: the one whose ``id`` is ``prefer`` if it is
        free, else the last returned (None: none free)."""
        if self.returned:
            self._drain()
        free = self.free.get(nbytes)
        if free:
            self.pooled -= nbytes
            gpu = free.pop(prefer, None) if prefer is not None else None
            return gpu if gpu is not None else free.popitem()[1]
        return None

    def trim(self, budget=None) -> int:
        """Releases free buffers (largest classes first) down to ``budget`` bytes; returns
        the bytes released."""
        self._drain()
        budget = self.budget if budget is None else budget
        released = 0
        for n in sorted(self.free, reverse=True):
            lst = self.free[n]
            while lst and self.pooled > budget:
                gpu = lst.pop(next(iter(lst)))
                self.owned.pop(id(gpu), None)
                if self.on_release is not None:
                    self.on_release(id(gpu))
                self.pooled -= n
                released += n
            if self.pooled <= budget:
                break
        return released

    def size(self) -> int:
        self._drain()
        return sum(len(v) for v in self.free.values())


def size_class(nbytes: int) -> int:
    """Power-of-two classes up to 1 MiB, then multiples of 1 MiB (min 16 bytes)."""
    n = int(nbytes)
    if n <= 16:
        return 16
    if n <= 1 << 20:
        return 1 << (n - 1).bit_length()
    mib = 1 << 20
    return (n + mib - 1) // mib * mib


class Runtime:
    def __init__(self, adapter=None, index: int = 0):
        self.index = index             # the logical device this runtime drives (0: default)
        self.adapter = adapter or choose_adapter()
        feats = set(self.adapter.features)
        want = [f for f in ("shader-f16", "subgroup", "timestamp-query") if f in feats]
        limits = dict(self.adapter.limits)
        self.device = self.adapter.request_device_sync(
            required_features=want, required_limits=limits, label="wjax")
        self.features = set(self.device.features)
        self.limits = dict(self.device.limits)
        self._work_done = _WorkDone.make(self.device)     # what a spinning wait waits for
        env = _cfg.settings()
        self.max_storage = int(env.max_storage_buffers or
                               self.limits["max-storage-buffers-per-shader-stage"])
        self._target = None
        self._options: dict = {}       # Target options set by ``options`` (tests, benchmarks)
        self.max_binding = int(env.max_binding or self.limits["max-storage-buffer-binding-size"])
        self.max_buffer = int(self.limits["max-buffer-size"])
        self.max_groups = int(env.max_workgroups or
                              self.limits["max-compute-workgroups-per-dimension"])
        # WJAX_STRICT_DRIVER: every kernel compiled as the loosest conformant driver would
        self.strict_driver = env.strict_driver
        # Every GPU buffer stays referenced in ``_owned`` until the pool releases it: a Buffer
        # handle that dies in a reference cycle (say, a traceback's frames) is finalized by the
        # cyclic GC together with its GPUBuffer, whose own __del__ would release the buffer
        # that the handle's __del__ just returned to the pool.  Reachable objects are never
        # finalized.
        self._owned: dict[int, object] = {}
        budget = int(env.pool_mb * 2**20)
        self._free = Pool(budget, self._owned, self._forget_buffer)
        self._free_indirect = Pool(budget // 8, self._owned, self._forget_buffer)  # INDIRECT
        # bind groups by (kernel, buffers, windows): a cached jit call binds the same pooled
        # buffers again and again, and creating a bind group costs more than recording the
        # dispatch.  Keyed by id(gpu buffer): every buffer stays alive in ``_owned`` until the
        # pool releases it, and then its bind groups are dropped (``_forget_buffer``).
        self._bind_groups: dict = {}
        self._bg_users: dict[int, list] = {}       # id(gpu) -> bind group keys naming it
        self._layouts: dict[str, object] = {}      # wgsl -> the pipeline's bind group layout
        # wgsl -> the bindings its pipeline takes with dynamic offsets (``dynamic_offsets``)
        self._dynamic: dict[str, tuple] = {}
        self.max_dynamic = int(self.limits.get("max-dynamic-storage-buffers-per-pipeline-layout",
                                               0))
        self._staging: dict[int, list] = {}        # MAP_READ buffers for readbacks, by size
        self._free.owner = self._free_indirect.owner = self     # runtime_of(buffer)
        self.peak_in_use = 0
        self.largest_alloc = 0
        self._staged = 0                 # upload bytes written since the queue last drained
        self._pipelines: dict[str, object] = {}
        self._encoder = None
        self._pass = None
        # the pipeline and bind group (without dynamic offsets) set last in ``_pass``
        self._pass_pipe = self._pass_bg = None
        self._pending = 0
        # one re-entrant lock for everything that records or submits: a plan is recorded
        # under it as a whole (execute.run_plan), so threads never interleave inside a plan
        self._lock = self.lock = threading.RLock()
        self.stats = {"dispatches": 0, "submits": 0, "compiles": 0, "allocs": 0, "reuses": 0,
                      "uploads": 0, "readbacks": 0}
        # a backend.profiler.Session while wjax.profiler traces: each dispatch gets a pass of
        # its own with timestamps (or is timed alone on the host), and is recorded
        self.profile = None

    # ------------------------------------------------------------------ info
    @property
    def info(self):
        return self.adapter.info

    @property
    def has_f16(self) -> bool:
        return "shader-f16" in self.features

    @property
    def max_binding(self) -> int:
        return self._max_binding

    @max_binding.setter
    def max_binding(self, n: int) -> None:     # tests force a small limit
        self._max_binding = int(n)
        self._target = None

    def target(self) -> Target:
        """What the lowering may know of this device (``wjax/_src/backend/target.py``): the
        adapter's Target, with the limits this runtime lowered (``WJAX_MAX_*``, tests)."""
        if self._target is None:
            lim = dict(self.limits)
            lim["max-storage-buffers-per-shader-stage"] = self.max_storage
            lim["max-compute-workgroups-per-dimension"] = self.max_groups
            lim["max-storage-buffer-binding-size"] = self.max_binding
            self._target = Target.for_adapter(
                self.adapter.info, lim, self.features, settings=_cfg.settings(),
                compiles=self.compiles, tune=self.tuner.pick, **self._options)
        return self._target

    @property
    def loop_limit(self) -> int | None:
        """Iterations one shader invocation may run (the adapter's profile says)."""
        return self.target().loop_limit

    @contextlib.contextmanager
    def options(self, **options):
        """Within the block, the target has these options (``Target.OPTIONS``): tests and
        benchmarks compare kernel forms, e.g. ``options(matmul="tiled")`` or
        ``options(in_kernel_loops=False)``.  Executables are cached per target, so nothing
        compiled under other options is reused."""
        check_names(options)
        saved = self._options
        self._options = dict(saved, **options)
        self._target = None
        try:
            yield self.target()
        finally:
            self._options = saved
            self._target = None

    @property
    def tuner(self):
        """The kernel autotuner of this device (``backend/autotune.py``)."""
        if getattr(self, "_tuner", None) is None:
            i = self.adapter.info
            key = " | ".join(str(i.get(k, "")) for k in
                             ("device", "backend_type", "adapter_type", "vendor", "architecture",
                              "description"))
            self._tuner = Tuner(self, key)
        return self._tuner

    def describe(self) -> str:
        i = self.adapter.info
        return f"{i['device']} [{i['backend_type']}, {i['adapter_type']}]"

    # ------------------------------------------------------------------ buffers
    def alloc(self, nbytes: int, indirect: bool = False, prefer: int | None = None) -> Buffer:
        """A pooled buffer of at least ``nbytes``; ``indirect=True``: one that dispatches can
        also read their workgroup counts from (``indirect=`` of ``dispatch``), from a pool of
        its own.  ``prefer``: the ``id`` of a GPU buffer to take again if it is free (a
        program's slot keeps its buffer from call to call, so its bind groups are found in
        the cache instead of created: each costs more than recording the dispatch)."""
        cls = size_class(nbytes)
        if cls > self.max_buffer:
            raise MemoryError(
                f"wjax: cannot allocate {nbytes} bytes on {self.describe()}: the adapter's "
                f"max-buffer-size is {self.max_buffer} bytes")
        pool = self._free_indirect if indirect else self._free
        with self._lock:
            gpu = pool.take(cls, prefer)
            if gpu is not None:
                self.stats["reuses"] += 1
                b = Buffer(gpu, cls, pool)
                in_use = self._free.in_use + self._free_indirect.in_use
                if in_use > self.peak_in_use:
                    self.peak_in_use = in_use
                return b
            if pool.pooled > pool.budget:
                pool.trim()
        self.stats["allocs"] += 1
        usage = _USAGE | wgpu.BufferUsage.INDIRECT if indirect else _USAGE
        try:
            gpu = self.device.create_buffer(size=cls, usage=usage)
        except Exception:  # out of device memory: give the pool back and try once more
            with self._lock:
                self.trim(0)
            try:
                gpu = self.device.create_buffer(size=cls, usage=usage)
            except Exception as e:
                raise MemoryError(
                    f"wjax: allocating {cls} bytes failed on {self.describe()}: {e}"
                ) from e
        self._owned[id(gpu)] = gpu
        self.largest_alloc = max(self.largest_alloc, cls)
        return self._handle(gpu, cls, pool)

    def _handle(self, gpu, cls, pool) -> Buffer:
        b = Buffer(gpu, cls, pool)
        in_use = self._free.in_use + self._free_indirect.in_use
        if in_use > self.peak_in_use:
            self.peak_in_use = in_use
        return b

    def trim(self, budget=None) -> int:
        """Releases pooled (free) buffers down to ``budget`` bytes (the pool's budget by
        default; 0 empties it).  Returns the bytes released."""
        with self._lock:
            n = self._free.trim(budget) + self._free_indirect.trim(budget)
            if n:
                self.device._poll(False)    # let wgpu free what no pending work uses
            return n

    def clear(self) -> None:
        """Empties the buffer pool and the pipeline cache (``wjax.clear_caches()``)."""
        with self._lock:
            self.flush()
            self._pipelines.clear()
            self._layouts.clear()
            self._bind_groups.clear()
            self._bg_users.clear()
            self._staging.clear()
            self.trim(0)

    def pool_size(self) -> int:
        return self._free.size()

    def memory_stats(self) -> dict:
        """JAX's ``Device.memory_stats()`` keys, for this device's buffers."""
        pools = (self._free, self._free_indirect)
        for p in pools:
            p._drain()
        in_use = sum(p.in_use for p in pools)
        pooled = sum(p.pooled for p in pools)
        return {"bytes_in_use": in_use, "peak_bytes_in_use": self.peak_in_use,
                "bytes_reserved": in_use + pooled, "pool_bytes": pooled,
                "pool_bytes_limit": self._free.budget, "num_allocs": self.stats["allocs"],
                "largest_alloc_size": self.largest_alloc, "bytes_limit": self.max_buffer}

    _STAGING_LIMIT = 64 << 20

    def upload(self, data: np.ndarray) -> Buffer:
        t0 = time.perf_counter()
        data = np.ascontiguousarray(data)
        buf = self.alloc(data.nbytes)
        if data.nbytes:
            with self._lock:
                # queue.write_buffer runs before the *pending* encoder: submit it first so a
                # reused buffer is not overwritten under work recorded earlier.
                self.flush()
                raw = data.tobytes()
                if len(raw) % 4:
                    raw += b"\0" * (4 - len(raw) % 4)
                self.device.queue.write_buffer(buf.gpu, 0, raw)
                # wgpu stages each write until a submit and frees the staging once the device
                # is polled: without this, uploads that are never read pile up host memory
                self._staged += len(raw)
                if self._staged > self._STAGING_LIMIT:
                    self.device.queue.submit([])
                    self.device._poll(True)
                    self._staged = 0
        self.stats["uploads"] += 1
        if self.profile is not None:
            self.profile.host_event("upload", t0, time.perf_counter(), bytes=int(data.nbytes))
        return buf

    _STAGING_KEEP = 1 << 22      # readback staging buffers up to this size are kept for reuse

    def read(self, buf: Buffer, nbytes: int, offset: int = 0) -> bytes:
        """The first ``nbytes`` of ``buf`` (from byte ``offset``), once all recorded work is
        done: the copy into a mappable staging buffer goes into the pending commands, which
        are submitted; then the host waits and maps it."""
        n4 = (nbytes + 3) // 4 * 4
        if n4 == 0:
            return b""
        t0 = time.perf_counter()
        with self._lock:
            self.stats["readbacks"] += 1
            cls = size_class(n4)
            free = self._staging.get(cls)
            staging = free.pop() if free else self.device.create_buffer(
                size=cls, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
            self._end_pass()
            self._get_encoder().copy_buffer_to_buffer(buf.gpu, offset, staging, 0, n4)
            self.flush()
            promise = staging.map_async("READ_NOSYNC", 0, n4)
            self._wait()                 # waits for the work (and runs the map callback)
            promise.sync_wait()
            data = bytes(staging.read_mapped(0, n4, copy=False))
            staging.unmap()
            if cls <= self._STAGING_KEEP:
                self._staging.setdefault(cls, []).append(staging)
            else:
                staging.destroy()
            if self.profile is not None:
                self.profile.host_event("readback (waits for the device)", t0,
                                        time.perf_counter(), bytes=nbytes)
            return data[:nbytes]

    def read_submitted(self, buf: Buffer, nbytes: int) -> bytes:
        """Reads bytes written by work already *submitted*, without submitting what was
        recorded since (so the host can keep recording while the device runs)."""
        with self._lock:
            self.check_device()
            self.stats["readbacks"] += 1
            return bytes(self.device.queue.read_buffer(buf.gpu, 0, (nbytes + 3) // 4 * 4))[:nbytes]

    def copy(self, src: Buffer, dst: Buffer, nbytes: int, src_offset=0, dst_offset=0) -> None:
        if type(src) is View:
            src_offset += src.offset
        if type(dst) is View:
            dst_offset += dst.offset
        with self._lock:
            self._end_pass()
            enc = self._get_encoder()
            enc.copy_buffer_to_buffer(
                src.gpu, src_offset, dst.gpu, dst_offset, (nbytes + 3) // 4 * 4
            )
            self._count()

    def zero(self, buf: Buffer) -> None:
        """Fills the whole buffer with zeros (in the pending commands).  A buffer that
        kernels write only through windows at dynamic offsets needs it first: wgpu tracks
        which bytes of a buffer were ever written by the bindings' static ranges alone, so it
        would clear the rest -- the kernels' results -- before the buffer's next use in a
        later submission."""
        with self._lock:
            self._end_pass()
            self._get_encoder().clear_buffer(buf.gpu, 0, buf.gpu.size)
            self._count()

    # ------------------------------------------------------------------ pipelines
    def pipeline(self, wgsl: str):
        p = self._pipelines.get(wgsl)
        if p is None:
            t0 = time.perf_counter()
            p = self._publish(wgsl, *self._compile(wgsl), t0)
        return p

    def _compile(self, wgsl: str):
        """(pipeline, its bind group layout) of a kernel, made without the runtime's lock
        (so several threads may compile at once: ``pipelines``)."""
        try:
            mod = self._module(self._driver_text(wgsl))
            p = self.device.create_compute_pipeline(
                layout=self._layout(wgsl, self._dynamic.get(wgsl, ())),
                compute={"module": mod, "entry_point": "main"}
            )
        except Exception as e:
            raise WjaxRuntimeError(
                f"wjax: WGSL compile failed: {e}\n--- shader ---\n{wgsl}"
            ) from e
        return p, p.get_bind_group_layout(0)

    def _publish(self, wgsl: str, p, layout, t0: float):
        with self._lock:     # published together: a thread that finds the pipeline
            # (``bind``, under the lock) finds its layout too
            if wgsl in self._pipelines:      # another thread compiled it meanwhile
                return self._pipelines[wgsl]
            self._layouts[wgsl] = layout
            self._pipelines[wgsl] = p
            self.stats["compiles"] += 1
        self.last_compile_s = time.perf_counter() - t0
        if self.profile is not None:
            self.profile.host_event("compile pipeline", t0, time.perf_counter(),
                                    wgsl_chars=len(wgsl))
        return p

    def pipelines(self, sources, raise_errors: bool = True) -> dict:
        """Compiles the pipelines of ``sources`` not compiled yet, several at a time (a
        driver compiles on the calling thread, and wgpu-py lets go of the GIL meanwhile:
        an executable's kernels, or an autotuner's candidates, on every core).  The worker
        threads only compile; the calling thread publishes (it may hold the runtime's lock:
        a loop's sub-plan is prepared while its call is being recorded).  Returns {source:
        exception} for those that failed (``raise_errors``: raises the first one's, in the
        order given, instead)."""
        todo = list(dict.fromkeys(s for s in sources if s not in self._pipelines))
        errors: dict = {}
        workers = min(len(todo), os.cpu_count() or 1, 8)
        if workers <= 1:
            for src in todo:
                try:
                    self.pipeline(src)
                except Exception as e:
                    errors[src] = e
        else:
            from concurrent.futures import ThreadPoolExecutor

            def one(src):
                try:
                    return self._compile(src), None
                except Exception as e:
                    return None, e
            t0 = time.perf_counter()
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wjax-compile") as ex:
                for src, (got, e) in zip(todo, ex.map(one, todo)):
                    if e is not None:
                        errors[src] = e
                    else:
                        self._publish(src, *got, t0)
        if raise_errors and errors:
            raise next(errors[s] for s in todo if s in errors)
        return errors

    def _module(self, text: str):
        """The shader module of WGSL ``text``, with the run-time checks the target asks for
        (``Target.shader_checks``)."""
        checks = SHADER_CHECKS[self.target().shader_checks]
        if checks == SHADER_CHECKS["all"] or _TRUSTED_MODULE is None:
            return self.device.create_shader_module(code=text)
        return _TRUSTED_MODULE(self.device, text, checks)

    def _driver_text(self, wgsl: str) -> str:
        """The text the driver compiles: the kernel finalized, and under WJAX_STRICT_DRIVER
        rewritten as the loosest conformant driver computes it."""
        src = W.finalize(wgsl)
        return strict_driver.rewrite(src) if self.strict_driver else src

    _BINDING = __import__("re").compile(
        r"@group\(0\)\s*@binding\((\d+)\)\s*var<(storage|uniform)(?:,\s*(read_write|read))?>")

    def _bindings(self, wgsl: str) -> dict:
        """The shader's declared bindings: binding index -> buffer type."""
        return {int(m.group(1)): ("uniform" if m.group(2) == "uniform" else
                                  "storage" if m.group(3) == "read_write" else
                                  "read-only-storage")
                for m in self._BINDING.finditer(wgsl)}

    def _layout(self, wgsl: str, dynamic=()):
        """An explicit pipeline layout from the shader's declared bindings: every declared
        binding stays bindable even where the shader body happens not to use it (an "auto"
        layout drops those, and binding them fails).  The bindings in ``dynamic`` take a
        dynamic offset (``dynamic_offsets``)."""
        entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": kind, "has_dynamic_offset": i in dynamic}}
                   for i, kind in self._bindings(wgsl).items()]
        bgl = self.device.create_bind_group_layout(entries=entries)
        return self.device.create_pipeline_layout(bind_group_layouts=[bgl])

    def dynamic_offsets(self, wgsl: str, bindings) -> tuple:
        """Asks that the kernel ``wgsl`` take its storage ``bindings`` (indices) at dynamic
        offsets: then one bind group serves every window of a buffer bound there (the offset
        is passed when the bind group is set), so a recorded scan whose steps bind the
        ``xs``/``ys`` slices of step t as ``View``s at offset t * slice creates its bind
        groups once instead of once per step.  Offsets must be multiples of the adapter's
        min-storage-buffer-offset-alignment (a View's are).  Bindings beyond the adapter's
        max-dynamic-storage-buffers-per-pipeline-layout stay static (a bind group per
        window).  A kernel compiled before without them is compiled again.  Returns the
        kernel's dynamic bindings."""
        with self._lock:
            have = self._dynamic.get(wgsl, ())
            kinds = self._bindings(wgsl)
            want = sorted(set(have) | {int(i) for i in bindings
                                       if kinds.get(int(i), "uniform") != "uniform"})
            want = tuple(want[:self.max_dynamic])
            if want == have:
                return have
            self._dynamic[wgsl] = want
            if wgsl in self._pipelines:     # compiled with other bindings: again
                del self._pipelines[wgsl]
                del self._layouts[wgsl]
                for k in [k for k in self._bind_groups if k[0] == wgsl]:
                    del self._bind_groups[k]
                self.pipeline(wgsl)
            return want

    def validate(self, wgsl: str) -> None:
        """Raises ``WjaxRuntimeError`` unless ``wgsl`` is valid WGSL for this device (a shader
        module only: no pipeline, so no check against this adapter's limits)."""
        try:
            self._module(self._driver_text(wgsl))
        except Exception as e:
            raise WjaxRuntimeError(f"wjax: invalid WGSL: {e}\n--- shader ---\n{wgsl}") from e

    def compiles(self, wgsl: str) -> bool:
        """Whether ``wgsl`` passes validation (and compiles): used to try optional variants."""
        try:
            self.pipeline(wgsl)
            return True
        except WjaxRuntimeError:
            return False

    # ------------------------------------------------------------------ dispatch
    def _get_encoder(self):
        if self._encoder is None:
            self._encoder = self.device.create_command_encoder()
        return self._encoder

    def _end_pass(self):
        if self._pass is not None:
            self._pass_pipe = self._pass_bg = None
            self._pass.end()
            self._pass = None

    def _count(self):
        self._pending += 1
        if self._pending >= _BATCH:
            self.flush()

    def dispatch(self, wgsl: str, buffers, grid, ranges=None, indirect=None, meta=None) -> None:
        """Records one dispatch; ``buffers`` bind to @binding(0..n-1) in order, whole or
        as the (byte offset, byte size) window given in ``ranges``.  ``indirect=(buffer,
        byte offset)`` reads the workgroup counts from that buffer (three u32s written by
        earlier device work) instead of ``grid``.  ``meta`` (a lowering ``Dispatch``: its
        label, FLOPs and bytes) is what a profile records of it.

        Within one compute pass the pipeline and bind group set last stay set (WebGPU pass
        state), so a dispatch of the same kernel on the same bind group as the one before
        (a cached call repeated) records only the dispatch."""
        with self._lock:
            pipe, bg, offsets = self._bind(wgsl, buffers, ranges)
            prof = self.profile
            if prof is not None:
                self._end_pass()
                tw = prof.begin(wgsl, None if indirect is not None else grid, meta)
                enc = self._get_encoder()
                p = self._pass = (enc.begin_compute_pass(timestamp_writes=tw) if tw is not None
                                  else enc.begin_compute_pass())
            else:
                p = self._pass
                if p is None:
                    p = self._pass = self._get_encoder().begin_compute_pass()
            native = _NATIVE
            if native is not None and offsets is None and indirect is None and len(grid) == 3:
                h = p._internal
                if pipe is not self._pass_pipe:
                    native[0](h, pipe._internal)
                    self._pass_pipe = pipe
                    self._pass_bg = None
                if bg is not self._pass_bg:
                    native[1](h, bg._internal)
                    self._pass_bg = bg
                native[2](h, *grid)
            else:
                if pipe is not self._pass_pipe:
                    p.set_pipeline(pipe)
                    self._pass_pipe = pipe
                    self._pass_bg = None
                if offsets is None:
                    if bg is not self._pass_bg:
                        p.set_bind_group(0, bg)
                        self._pass_bg = bg
                else:
                    p.set_bind_group(0, bg, offsets)
                    self._pass_bg = None
                if indirect is None:
                    p.dispatch_workgroups(*grid)
                else:
                    p.dispatch_workgroups_indirect(getattr(indirect[0], "gpu", indirect[0]),
                                                   indirect[1])
            self.stats["dispatches"] += 1
            self._pending += 1
            if prof is not None:
                self._end_pass()
                prof.end()
            if self._pending >= _BATCH:
                self.flush()

    def bind(self, wgsl: str, buffers, ranges=None):
        """(pipeline, bind group, dynamic offsets or None) of a dispatch of ``wgsl`` binding
        ``buffers`` (as ``dispatch``): the bind group from the cache, made if new."""
        with self._lock:
            return self._bind(wgsl, buffers, ranges)

    def _bind(self, wgsl: str, buffers, ranges):
        """``bind`` with the lock held."""
        pipe = self._pipelines.get(wgsl)
        if pipe is None:
            pipe = self.pipeline(wgsl)
        dyn = self._dynamic.get(wgsl)
        offsets = None
        if dyn is not None:
            ranges, offsets = self._dynamic_ranges(buffers, ranges, dyn)
        elif View in map(type, buffers):
            ranges = _view_ranges(buffers, ranges)
        if ranges is None:
            key = (wgsl, *[id(b.gpu) for b in buffers])
        else:
            key = (wgsl, *[(id(b.gpu), r) for b, r in zip(buffers, ranges)])
        bg = self._bind_groups.get(key)
        if bg is None:
            bg = self._new_bind_group(key, wgsl, buffers, ranges)
        return pipe, bg, offsets

    def dynamic_bindings(self, wgsl: str) -> tuple:
        """The bindings the kernel takes at dynamic offsets (``dynamic_offsets``)."""
        return self._dynamic.get(wgsl, ())

    def replay(self, calls) -> None:
        """Records dispatches prepared with ``bind``: ``calls`` holds (pipeline, bind group,
        dynamic offsets or None, grid) -- a recorded scan's steps, with no per-dispatch
        lookups (the pipeline is set only where it changes).  Not while profiling (the
        caller dispatches one by one then)."""
        with self._lock:
            p = self._pass
            if p is None:
                p = self._pass = self._get_encoder().begin_compute_pass()
            last = self._pass_pipe
            for pipe, bg, offsets, grid in calls:
                if pipe is not last:
                    p.set_pipeline(pipe)
                    last = pipe
                if offsets is None:
                    p.set_bind_group(0, bg)
                else:
                    p.set_bind_group(0, bg, offsets)
                p.dispatch_workgroups(*grid)
            n = len(calls)
            if n:
                self._pass_pipe, self._pass_bg = last, None
            self.stats["dispatches"] += n
            self._pending += n
            if self._pending >= _BATCH:
                self.flush()

    def _dynamic_ranges(self, buffers, ranges, dyn):
        """(ranges, dynamic offsets) of a dispatch of a kernel with dynamic bindings ``dyn``:
        a dynamic binding's window is bound at offset 0 with its size (so the bind group
        does not depend on the offset) and its offset is passed when the group is set."""
        if View in map(type, buffers):
            ranges = _view_ranges(buffers, ranges)
        elif ranges is None:
            ranges = [None] * len(buffers)
        else:
            ranges = list(ranges)
        offsets = []
        for i in dyn:
            r = ranges[i]
            if r is None:
                offsets.append(0)
                ranges[i] = (0, buffers[i].gpu.size)
            else:
                off, size = r
                if size is None:
                    size = min(buffers[i].gpu.size - off, self.max_binding)
                offsets.append(off)
                ranges[i] = (0, size)
        return ranges, offsets

    _MAX_BIND_GROUPS = 4096

    def _new_bind_group(self, key, wgsl, buffers, ranges):
        entries = []
        for i, b in enumerate(buffers):
            r = ranges[i] if ranges is not None else None
            off, size = r if r is not None else (0, b.gpu.size)
            if size is None:   # the last window of a windowed buffer: the rest of it
                size = min(b.gpu.size - off, self.max_binding)
            if size > self.max_binding:
                raise MemoryError(
                    f"wjax: a kernel would bind {size} bytes of one buffer, more than this "
                    f"adapter's max-storage-buffer-binding-size of {self.max_binding} bytes "
                    f"({self.describe()})")
            entries.append((b.gpu, off, size))
        if _BIND_GROUP is not None:
            bg = _BIND_GROUP(self.device, self._layouts[wgsl], entries)
        else:
            bg = self.device.create_bind_group(
                layout=self._layouts[wgsl],
                entries=[{"binding": i, "resource": {"buffer": g, "offset": o, "size": n}}
                         for i, (g, o, n) in enumerate(entries)])
        if len(self._bind_groups) >= self._MAX_BIND_GROUPS:
            self._bind_groups.clear()
            self._bg_users.clear()
        self._bind_groups[key] = bg
        for b in buffers:
            self._bg_users.setdefault(id(b.gpu), []).append(key)
        return bg

    def _forget_buffer(self, gpu_id: int) -> None:
        """Drops the bind groups naming a GPU buffer the pool releases."""
        for k in self._bg_users.pop(gpu_id, ()):
            self._bind_groups.pop(k, None)

    @staticmethod
    def check_device() -> None:
        """Raises WjaxRuntimeError if wgpu reported the device lost: its results since are
        garbage, and a submit to it would abort the process."""
        if _LOST.lost is not None:
            raise WjaxRuntimeError(
                f"the GPU device was lost, so no result computed since can be trusted and "
                f"nothing more can run in this process ({' '.join(_LOST.lost.split())[:300]}); "
                f"restart the program")

    def flush(self) -> None:
        """Submits everything recorded so far (does not wait)."""
        with self._lock:
            if self._encoder is None:
                return
            self.check_device()
            self._end_pass()
            enc, self._encoder = self._encoder, None
            if self.profile is not None:
                self.profile.before_submit(enc)
            self.device.queue.submit([enc.finish()])
            self._pending = 0
            self.stats["submits"] += 1

    def synchronize(self) -> None:
        """Submits what was recorded and waits for all submitted work."""
        with self._lock:
            self.flush()
            self._wait()

    def _wait(self) -> None:
        """Waits for all submitted work: device polls that do not block until wgpu's
        work-done callback for the work so far has run, for up to the target's
        ``spin_wait_us`` (a short call ends sooner than the driver wakes a thread that sleeps
        on its fence), then a blocking one (wgpu waits for the last submission).  Either way
        wgpu has run its callbacks (a readback's map) when it returns."""
        self.check_device()
        us = self.target().spin_wait_us
        if us and _POLL is not None and self._work_done is not None:
            ticket = self._work_done.mark()
            handle, end = self.device._internal, time.perf_counter() + us * 1e-6
            while not self._work_done.done(ticket):
                if time.perf_counter() > end:
                    break
                _POLL(handle, False)
            else:
                return self.check_device()
        self.device._poll(True)
        self.check_device()


_runtime: Runtime | None = None
_runtimes: dict[int, Runtime] = {}     # logical device index -> its runtime (0 is _runtime)
_devices_lock = threading.Lock()
_plan: list | None = None              # the adapter of each logical device, once decided
_requested: int | None = None          # jax_num_cpu_devices / WJAX_NUM_DEVICES


def peek() -> Runtime | None:
    """The runtime if it was started, else None (never starts one)."""
    return _runtime


def get(index: int | None = None) -> Runtime:
    """The runtime of logical device ``index`` (the default device, 0, when None)."""
    global _runtime
    if not index:
        if _runtime is None:
            _runtime = _make(0)
        return _runtime
    rt = _runtimes.get(index)
    if rt is None:
        rt = _make(index)
    return rt


def _make(index: int) -> Runtime:
    with _devices_lock:
        rt = _runtimes.get(index)
        if rt is None:
            adapters = device_adapters()
            if not 0 <= index < len(adapters):
                raise ValueError(f"wjax: no device {index}: there are {len(adapters)}")
            rt = Runtime(adapters[index], index)
            if index:
                _runtimes[index] = rt
            if not _exit_hook:
                _exit_hook.append(atexit.register(_drain_at_exit))
        return rt


_exit_hook: list = []


def _drain_at_exit() -> None:
    """Before the interpreter tears down, work already submitted must finish: lavapipe
    compiles and runs it on its own threads, and a process that exits while one of them is
    inside LLVM crashes (SIGSEGV in LLVM's code generator, from its static destructors).
    Work recorded but never submitted is dropped -- nothing can read its results any more."""
    for rt in started():
        try:
            with rt._lock:
                rt._pass = rt._pass_pipe = rt._pass_bg = None
                rt._encoder = None
                rt._pending = 0
                rt.synchronize()
        except Exception:       # a lost device at exit: nothing left to wait for
            pass


def set_device_count(n: int | None) -> None:
    """Asks for ``n`` logical devices (``jax_num_cpu_devices``); refused once devices exist."""
    global _requested
    if n is not None and int(n) < 1:
        n = None                     # JAX's -1: the platform's default
    if _plan is not None and n is not None and int(n) != len(_plan):
        raise RuntimeError("jax_num_cpu_devices config should be updated before backends are "
                           "initialized")
    _requested = None if n is None else int(n)


def device_adapters() -> list:
    """The adapter of each logical device, decided once: ``N`` logical devices on the chosen
    adapter when ``jax_num_cpu_devices``, ``WJAX_NUM_DEVICES`` or XLA's
    ``--xla_force_host_platform_device_count=N`` (in ``XLA_FLAGS``) asks for ``N`` (N wgpu
    devices on one adapter); else every GPU adapter of the chosen one's backend (a CPU
    adapter, or an adapter named by ``WJAX_ADAPTER``, stands alone)."""
    global _plan
    if _plan is None:
        all_adapters = list_adapters()
        first = choose_adapter(all_adapters)
        env = _cfg.settings()
        n = _requested if _requested is not None else (env.num_devices or env.xla_device_count)
        if n >= 1:
            plan = [first] + [_same_adapter(first) for _ in range(n - 1)]
        elif env.adapter or first.info["adapter_type"] == "CPU":
            plan = [first]
        else:
            b = first.info["backend_type"]
            plan = [first] + [a for a in all_adapters if a is not first
                              and a.info["backend_type"] == b
                              and a.info["adapter_type"] in ("DiscreteGPU", "IntegratedGPU")]
        _plan = plan
    return _plan


def _same_adapter(a):
    """A fresh handle on the adapter ``a`` (one device is requested per handle)."""
    for b in list_adapters():
        if b.info["device"] == a.info["device"] and b.info["backend_type"] == \
                a.info["backend_type"]:
            return b
    return a


def device_count() -> int:
    return len(device_adapters())


def started() -> list:
    """The runtimes of the devices started so far (never starts one)."""
    return [rt for rt in [_runtime, *_runtimes.values()] if rt is not None]


def synchronize_all() -> None:
    """Waits for the work of every started device."""
    for rt in started():
        rt.synchronize()


def runtime_of(buffer) -> Runtime:
    """The runtime that owns a device buffer."""
    return buffer.pool.owner


_config._hooks["jax_num_cpu_devices"] = set_device_count
