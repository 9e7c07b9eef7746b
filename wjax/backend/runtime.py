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
import os
import threading
import time

import numpy as np

# set before wgpu loads its native library (drivers warn, or fail, without it)
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import wgpu  # noqa: E402

from . import wgsl as W  # noqa: E402
from .target import Target  # noqa: E402

_USAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
_BATCH = 512            # dispatches recorded before a submit is forced


class WjaxRuntimeError(RuntimeError):
    pass


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
    want_backend = os.environ.get("WJAX_BACKEND", "").strip().lower() if honour_env else ""
    if want_backend:
        alias = {"gl": "opengl"}
        b = alias.get(want_backend, want_backend)
        adapters = [a for a in adapters if a.info["backend_type"].lower() == b]
        if not adapters:
            raise WjaxRuntimeError(f"WJAX_BACKEND={want_backend!r}: no adapter with that backend")
    want = os.environ.get("WJAX_ADAPTER", "").strip() if honour_env else ""
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


class Pool:
    """Free GPU buffers by size class, within a byte budget.

    ``put`` runs in ``Buffer.__del__`` (at any time, in any thread): it only appends to a
    deque.  ``take`` and ``trim`` run under the runtime's lock: ``trim`` releases the oldest
    free buffers until the pool holds at most ``budget`` bytes.  Releasing is safe while a
    buffer's last use is still recorded and unsubmitted: wgpu keeps it alive for the work."""

    def __init__(self, budget: int, owned: dict):
        self.budget = budget
        self.owned = owned               # id(gpu) -> gpu: every live GPU buffer (see Runtime)
        self.free: dict[int, list] = {}
        self.returned = collections.deque()
        self.pooled = 0                  # bytes in ``free``
        self.in_use = 0                  # bytes held by live Buffers

    def put(self, gpu, nbytes):
        self.in_use -= nbytes
        self.returned.append((gpu, nbytes))

    def _drain(self):
        while self.returned:
            gpu, n = self.returned.popleft()
            self.free.setdefault(n, []).append(gpu)
            self.pooled += n

    def take(self, nbytes):
        self._drain()
        free = self.free.get(nbytes)
        if free:
            self.pooled -= nbytes
            return free.pop()
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
                gpu = lst.pop(0)
                self.owned.pop(id(gpu), None)
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
    n = max(int(nbytes), 16)
    if n <= 1 << 20:
        return 1 << (n - 1).bit_length()
    mib = 1 << 20
    return (n + mib - 1) // mib * mib


class Runtime:
    def __init__(self, adapter=None):
        self.adapter = adapter or choose_adapter()
        feats = set(self.adapter.features)
        want = [f for f in ("shader-f16", "subgroup", "timestamp-query") if f in feats]
        limits = dict(self.adapter.limits)
        self.device = self.adapter.request_device_sync(
            required_features=want, required_limits=limits, label="wjax")
        self.features = set(self.device.features)
        self.limits = dict(self.device.limits)
        self.max_storage = int(os.environ.get("WJAX_MAX_STORAGE_BUFFERS",
                                              self.limits["max-storage-buffers-per-shader-stage"]))
        self._target = None
        self._options: dict = {}       # Target options set by ``options`` (tests, benchmarks)
        self.max_binding = int(os.environ.get("WJAX_MAX_BINDING",
                                              self.limits["max-storage-buffer-binding-size"]))
        self.max_buffer = int(self.limits["max-buffer-size"])
        self.max_groups = int(os.environ.get("WJAX_MAX_WORKGROUPS",
                                             self.limits["max-compute-workgroups-per-dimension"]))
        # lavapipe (llvmpipe) silently stops a shader invocation after 65535 loop iterations
        self.loop_limit = 65535 if "llvmpipe" in self.adapter.info["device"].lower() else None
        # Every GPU buffer stays referenced in ``_owned`` until the pool releases it: a Buffer
        # handle that dies in a reference cycle (say, a traceback's frames) is finalized by the
        # cyclic GC together with its GPUBuffer, whose own __del__ would release the buffer
        # that the handle's __del__ just returned to the pool.  Reachable objects are never
        # finalized.
        self._owned: dict[int, object] = {}
        budget = int(float(os.environ.get("WJAX_POOL_MB", "512")) * 2**20)
        self._free = Pool(budget, self._owned)
        self._free_indirect = Pool(budget // 8, self._owned)   # buffers usable as INDIRECT
        self.peak_in_use = 0
        self.largest_alloc = 0
        self._staged = 0                 # upload bytes written since the queue last drained
        self._pipelines: dict[str, object] = {}
        self._encoder = None
        self._pass = None
        self._pending = 0
        # one re-entrant lock for everything that records or submits: a plan is recorded
        # under it as a whole (execute.run_plan), so threads never interleave inside a plan
        self._lock = self.lock = threading.RLock()
        self.stats = {"dispatches": 0, "submits": 0, "compiles": 0, "allocs": 0, "reuses": 0,
                      "uploads": 0, "readbacks": 0}

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
        """What the lowering may know of this device (``wjax/backend/target.py``)."""
        if self._target is None:
            lim = dict(self.limits)
            lim["max-storage-buffers-per-shader-stage"] = self.max_storage
            lim["max-compute-workgroups-per-dimension"] = self.max_groups
            lim["max-storage-buffer-binding-size"] = self.max_binding
            cpu = self.adapter.info["adapter_type"] == "CPU"
            matmul = os.environ.get("WJAX_MATMUL", "auto")
            if matmul not in ("tiled", "vec4"):
                matmul = "vec4" if cpu else "tiled"
            opts = dict(name=self.describe(), is_cpu=cpu, loop_limit=self.loop_limit,
                        has_f16=self.has_f16, matmul=matmul,
                        sort="registers" if cpu else "workgroup",
                        fft="registers" if cpu else "workgroup", compiles=self.compiles)
            opts.update(self._options)
            self._target = Target(lim, **opts)
        return self._target

    @contextlib.contextmanager
    def options(self, **options):
        """Within the block, the target has these options (``Target.OPTIONS``): tests and
        benchmarks compare kernel forms, e.g. ``options(matmul="tiled")`` or
        ``options(in_kernel_loops=False)``.  Executables are cached per target, so nothing
        compiled under other options is reused."""
        saved = self._options
        self._options = dict(saved, **options)
        self._target = None
        try:
            yield self.target()
        finally:
            self._options = saved
            self._target = None

    def describe(self) -> str:
        i = self.adapter.info
        return f"{i['device']} [{i['backend_type']}, {i['adapter_type']}]"

    # ------------------------------------------------------------------ buffers
    def alloc(self, nbytes: int, indirect: bool = False) -> Buffer:
        """A pooled buffer of at least ``nbytes``; ``indirect=True``: one that dispatches can
        also read their workgroup counts from (``indirect=`` of ``dispatch``), from a pool of
        its own."""
        cls = size_class(nbytes)
        if cls > self.max_buffer:
            raise MemoryError(
                f"wjax: cannot allocate {nbytes} bytes on {self.describe()}: the adapter's "
                f"max-buffer-size is {self.max_buffer} bytes")
        pool = self._free_indirect if indirect else self._free
        with self._lock:
            gpu = pool.take(cls)
            if gpu is not None:
                self.stats["reuses"] += 1
                return self._handle(gpu, cls, pool)
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
        return buf

    def read(self, buf: Buffer, nbytes: int) -> bytes:
        with self._lock:
            self.flush()
            self.stats["readbacks"] += 1
            n4 = (nbytes + 3) // 4 * 4
            if n4 == 0:
                return b""
            return bytes(self.device.queue.read_buffer(buf.gpu, 0, n4))[:nbytes]

    def read_submitted(self, buf: Buffer, nbytes: int) -> bytes:
        """Reads bytes written by work already *submitted*, without submitting what was
        recorded since (so the host can keep recording while the device runs)."""
        with self._lock:
            self.stats["readbacks"] += 1
            return bytes(self.device.queue.read_buffer(buf.gpu, 0, (nbytes + 3) // 4 * 4))[:nbytes]

    def copy(self, src: Buffer, dst: Buffer, nbytes: int, src_offset=0, dst_offset=0) -> None:
        with self._lock:
            self._end_pass()
            enc = self._get_encoder()
            enc.copy_buffer_to_buffer(
                src.gpu, src_offset, dst.gpu, dst_offset, (nbytes + 3) // 4 * 4
            )
            self._count()

    # ------------------------------------------------------------------ pipelines
    def pipeline(self, wgsl: str):
        p = self._pipelines.get(wgsl)
        if p is None:
            t0 = time.perf_counter()
            try:
                mod = self.device.create_shader_module(code=W.finalize(wgsl))
                p = self.device.create_compute_pipeline(
                    layout=self._layout(wgsl), compute={"module": mod, "entry_point": "main"}
                )
            except Exception as e:
                raise WjaxRuntimeError(
                    f"wjax: WGSL compile failed: {e}\n--- shader ---\n{wgsl}"
                ) from e
            self._pipelines[wgsl] = p
            self.stats["compiles"] += 1
            self.last_compile_s = time.perf_counter() - t0
        return p

    _BINDING = __import__("re").compile(
        r"@group\(0\)\s*@binding\((\d+)\)\s*var<(storage|uniform)(?:,\s*(read_write|read))?>")

    def _layout(self, wgsl: str):
        """An explicit pipeline layout from the shader's declared bindings: every declared
        binding stays bindable even where the shader body happens not to use it (an "auto"
        layout drops those, and binding them fails)."""
        entries = []
        for m in self._BINDING.finditer(wgsl):
            kind = ("uniform" if m.group(2) == "uniform" else
                    "storage" if m.group(3) == "read_write" else "read-only-storage")
            entries.append({"binding": int(m.group(1)), "visibility": wgpu.ShaderStage.COMPUTE,
                            "buffer": {"type": kind}})
        bgl = self.device.create_bind_group_layout(entries=entries)
        return self.device.create_pipeline_layout(bind_group_layouts=[bgl])

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
            self._pass.end()
            self._pass = None

    def _count(self):
        self._pending += 1
        if self._pending >= _BATCH:
            self.flush()

    def dispatch(self, wgsl: str, buffers, grid, ranges=None, indirect=None) -> None:
        """Records one dispatch; ``buffers`` bind to @binding(0..n-1) in order, whole or
        as the (byte offset, byte size) window given in ``ranges``.  ``indirect=(buffer,
        byte offset)`` reads the workgroup counts from that buffer (three u32s written by
        earlier device work) instead of ``grid``."""
        ranges = ranges or [None] * len(buffers)
        entries = []
        for i, (b, r) in enumerate(zip(buffers, ranges)):
            off, size = r if r is not None else (0, b.gpu.size)
            if size is None:   # the last window of a windowed buffer: the rest of it
                size = min(b.gpu.size - off, self.max_binding)
            if size > self.max_binding:
                raise MemoryError(
                    f"wjax: a kernel would bind {size} bytes of one buffer, more than this "
                    f"adapter's max-storage-buffer-binding-size of {self.max_binding} bytes "
                    f"({self.describe()})")
            entries.append(
                {"binding": i, "resource": {"buffer": b.gpu, "offset": off, "size": size}}
            )
        pipe = self.pipeline(wgsl)
        with self._lock:
            bg = self.device.create_bind_group(
                layout=pipe.get_bind_group_layout(0), entries=entries
            )
            if self._pass is None:
                self._pass = self._get_encoder().begin_compute_pass()
            self._pass.set_pipeline(pipe)
            self._pass.set_bind_group(0, bg)
            if indirect is None:
                self._pass.dispatch_workgroups(*grid)
            else:
                self._pass.dispatch_workgroups_indirect(
                    getattr(indirect[0], "gpu", indirect[0]), indirect[1]
                )
            self.stats["dispatches"] += 1
            self._count()

    def flush(self) -> None:
        """Submits everything recorded so far (does not wait)."""
        with self._lock:
            if self._encoder is None:
                return
            self._end_pass()
            self.device.queue.submit([self._encoder.finish()])
            self._encoder = None
            self._pending = 0
            self.stats["submits"] += 1

    def synchronize(self) -> None:
        """Waits for all submitted work (a tiny readback is a reliable sync point)."""
        with self._lock:
            self.flush()
            if not hasattr(self, "_sync_buf"):
                self._sync_buf = self.device.create_buffer(size=16, usage=_USAGE)
            self.device.queue.read_buffer(self._sync_buf, 0, 4)


_runtime: Runtime | None = None


def peek() -> Runtime | None:
    """The runtime if it was started, else None (never starts one)."""
    return _runtime


def get() -> Runtime:
    global _runtime
    if _runtime is None:
        _runtime = Runtime()
        atexit.register(_drain_at_exit)
    return _runtime


def _drain_at_exit() -> None:
    """Before the interpreter tears down, work already submitted must finish: lavapipe
    compiles and runs it on its own threads, and a process that exits while one of them is
    inside LLVM crashes (SIGSEGV in LLVM's code generator, from its static destructors).
    Work recorded but never submitted is dropped -- nothing can read its results any more."""
    rt = _runtime
    if rt is None:
        return
    try:
        with rt._lock:
            rt._pass = None
            rt._encoder = None
            rt._pending = 0
            rt.synchronize()
    except Exception:       # a lost device at exit: nothing left to wait for
        pass
