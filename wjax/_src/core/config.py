"""wjax.config: JAX's flags, global (``wjax.config.update('jax_log_compiles', True)``) and as
context managers (``with wjax.debug_nans(True): ...``, ``wjax.numpy_rank_promotion('raise')``).

Each flag is a :class:`State`: ``config.update`` sets its global value; calling the state
gives a context manager (also a decorator) that overrides it in the current thread, as JAX's
``config.State``.  ``config.jax_<name>`` and ``state.value`` read the effective value.

It is also the one reader of the environment: ``settings()`` is every ``WJAX_*`` variable (and
the few others wjax honours) parsed into a frozen :class:`Settings`; no other module of wjax
reads ``os.environ`` (``tests/test_layering.py`` checks).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import re
import threading
from typing import Any, Callable

from .errors import JaxRuntimeError

logger = logging.getLogger("wjax")

_no_default = object()


# --------------------------------------------------------------------------- the environment

def _text(raw: str) -> str:
    return raw.strip()


def _lower(raw: str) -> str:
    return raw.strip().lower()


def _int_or_none(raw: str) -> int | None:
    return int(raw) if raw.strip() else None


def _count(raw: str) -> int:
    return int(raw) if raw.strip() else 0


def _on_unless_off(raw: str) -> bool:        # unset or anything but 0/off/false/no: on
    return raw.strip().lower() not in ("0", "off", "false", "no")


def _on_if_set(raw: str) -> bool:            # set to anything but "" or "0": on
    return raw not in ("", "0")


def _xla_device_count(raw: str) -> int:
    """``--xla_force_host_platform_device_count=N`` in ``XLA_FLAGS`` (as JAX programs set it)."""
    m = re.search(r"--xla_force_host_platform_device_count=(\d+)", raw)
    return int(m.group(1)) if m else 0


def _env(name: str, default, parse: Callable[[str], Any], doc: str):
    """A field of ``Settings``: read from ``name``; ``default`` when unset."""
    return dataclasses.field(default=default,
                             metadata={"env": name, "parse": parse, "doc": doc})


@dataclasses.dataclass(frozen=True)
class Settings:
    """The environment variables wjax reads, parsed (docs/DESIGN.md has the table)."""

    backend: str = _env("WJAX_BACKEND", "", _lower,
                        "restrict adapters to one backend: vulkan, metal, d3d12, gl")
    adapter: str = _env("WJAX_ADAPTER", "", _text,
                        "pick an adapter: its index, or part of its device name")
    max_storage_buffers: int | None = _env(
        "WJAX_MAX_STORAGE_BUFFERS", None, _int_or_none,
        "use fewer storage buffers per kernel than the adapter allows")
    max_binding: int | None = _env("WJAX_MAX_BINDING", None, _int_or_none,
                                   "bind at most this many bytes of one buffer")
    max_workgroups: int | None = _env("WJAX_MAX_WORKGROUPS", None, _int_or_none,
                                      "dispatch at most this many workgroups per dimension")
    pool_mb: float = _env("WJAX_POOL_MB", 512.0, float,
                          "MiB of freed buffers the pool keeps for reuse")
    matmul: str = _env("WJAX_MATMUL", "auto", _lower,
                       "force the float32 matmul kernel: tiled or vec4 (auto: the profile's)")
    matmul_tile: str = _env("WJAX_MATMUL_TILE", "", _lower,
                            "force the tiled matmul kernel's tile, BMxBNxBK or BMxBNxBKgKG "
                            "(prims/dot.py's TILES, e.g. 128x128x16, 64x64x16g2; default: "
                            "chosen per product)")
    shader_checks: str = _env("WJAX_SHADER_CHECKS", "", _lower,
                              "the run-time checks compiled into kernels: all (wgpu's "
                              "default), bounds (index clamping, no loop counters) or none "
                              "(default: the adapter profile's)")
    num_devices: int = _env("WJAX_NUM_DEVICES", 0, _count,
                            "N logical devices on the chosen adapter (0: the default)")
    xla_device_count: int = _env("XLA_FLAGS", 0, _xla_device_count,
                                 "--xla_force_host_platform_device_count=N: as WJAX_NUM_DEVICES")
    autotune: bool = _env("WJAX_AUTOTUNE", True, _on_unless_off,
                          "time kernel variants per adapter (0: take the defaults)")
    autotune_cache: str = _env("WJAX_AUTOTUNE_CACHE", "", _text,
                               "the autotuner's file (default $XDG_CACHE_HOME/wjax/"
                               "autotune.json)")
    cache_home: str = _env("XDG_CACHE_HOME", "", _text,
                           "where the autotuner's file goes by default (~/.cache when unset)")
    profile_timer: str = _env("WJAX_PROFILE_TIMER", "", _lower,
                              "host: time profiled kernels on the host, not by GPU timestamps")
    profile_peak: bool = _env("WJAX_PROFILE_PEAK", True, _on_if_set,
                              "measure peak bandwidth and FLOP rate when a trace stops (0: no)")
    strict_driver: bool = _env(
        "WJAX_STRICT_DRIVER", False, _on_if_set,
        "compile every kernel as the loosest conformant driver would: subnormals flushed in "
        "arithmetic, division and square roots at the spec's error bound, products contracted "
        "into fused multiply-adds (a test setting: backend/strict_driver.py)")
    log_compiles: bool = _env("WJAX_LOG_COMPILES", False, _on_if_set,
                              "the default of jax_log_compiles")
    traceback_filtering: str | None = _env(
        "JAX_TRACEBACK_FILTERING", None, _lower,
        "the default of jax_traceback_filtering: off, quiet_remove_frames, remove_frames, "
        "tracebackhide or auto")
    compilation_cache_dir: str | None = _env(
        "JAX_COMPILATION_CACHE_DIR", None, lambda raw: raw or None,
        "the default of jax_compilation_cache_dir (the persistent cache)")

    @classmethod
    def from_environ(cls, environ) -> "Settings":
        values = {}
        for f in dataclasses.fields(cls):
            raw = environ.get(f.metadata["env"])
            if raw is None:
                continue
            try:
                values[f.name] = f.metadata["parse"](raw)
            except ValueError:
                raise ValueError(f"wjax: {f.metadata['env']}={raw!r} is not valid: it should "
                                 f"{f.metadata['doc']}") from None
        return cls(**values)


SETTING_VARIABLES = tuple(f.metadata["env"] for f in dataclasses.fields(Settings))
_parsed: tuple | None = None     # (the raw values, their Settings)


def settings() -> Settings:
    """The environment's settings, parsed once -- and again only when one of its variables
    changed (a test's ``monkeypatch.setenv``, a script setting one before first use)."""
    global _parsed
    raw = tuple(os.environ.get(name) for name in SETTING_VARIABLES)
    if _parsed is None or _parsed[0] != raw:
        _parsed = (raw, Settings.from_environ(os.environ))
    return _parsed[1]


def prepare_driver_environment() -> None:
    """Called before wgpu loads its native library: drivers warn, or fail, without
    ``XDG_RUNTIME_DIR``, so it defaults to /tmp."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")


class _Local(threading.local):
    def __init__(self):
        self.values: dict[str, Any] = {}
        self.cached: dict = {}      # names -> (generation, their values): ``read_many``
        self.jit_context = None     # (generation, ``Config.jit_context()``)


_local = _Local()
# bumped by every change of any flag (an update, a context entered or left, in any thread):
# values a thread read at one generation are still its values while the generation stands
_generation = [0]


class State:
    """One flag: ``state.value``, ``state(new_value)`` as a thread-local context manager."""

    def __init__(self, name: str, default: Any, help: str = "", parser: Callable | None = None,
                 default_context_manager_value: Any = _no_default,
                 on_change: Callable | None = None):
        self.name = name
        self.__name__ = name[4:] if name.startswith("jax_") else name
        self.__doc__ = f"Context manager for `{name}` config option.\n\n{help}"
        self._parser = parser
        self._default_cm = default_context_manager_value
        self._on_change = on_change
        config._register(self, self._parse(default))

    def _parse(self, value):
        return self._parser(value) if self._parser is not None else value

    @property
    def value(self):
        return config.read(self.name)

    def __bool__(self):
        raise TypeError(f"bool() not supported for instances of type '{type(self).__name__}' "
                        f"(did you mean to use '{type(self).__name__}.value' instead?)")

    def __call__(self, new_val: Any = _no_default):
        if new_val is _no_default:
            if self._default_cm is _no_default:
                raise TypeError(f"Context manager for {self.__name__} config option requires an "
                                f"argument representing the new value for the config option.")
            new_val = self._default_cm
        return _StateContext(self, self._parse(new_val))

    def __repr__(self):
        return f"State({self.name}={self.value!r})"


class _StateContext:
    __slots__ = ("state", "new_val", "prev")

    def __init__(self, state: State, new_val):
        self.state, self.new_val = state, new_val

    def __enter__(self):
        if self.state._on_change is not None:
            self.state._on_change(self.new_val)
        self.prev = _local.values.get(self.state.name, _no_default)
        _local.values[self.state.name] = self.new_val
        _generation[0] += 1

    def __exit__(self, *exc):
        if self.prev is _no_default:
            _local.values.pop(self.state.name, None)
        else:
            _local.values[self.state.name] = self.prev
        _generation[0] += 1

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with _StateContext(self.state, self.new_val):
                return func(*args, **kwargs)
        return wrapper


class Config:
    _hooks: dict = {}   # name -> fn(value), called before a value is set (layers above install)

    def __init__(self):
        self.__dict__["_values"] = {}
        self.__dict__["_states"] = {}

    def _register(self, state: State, default):
        self._states[state.name] = state
        self._values[state.name] = default

    def update(self, name, value):
        state = self._states.get(name)
        if state is None:
            raise AttributeError(f"Unrecognized config option: {name}")
        value = state._parse(value)
        if state._on_change is not None:
            state._on_change(value)
        hook = self._hooks.get(name)
        if hook is not None:
            hook(value)
        self._values[name] = value
        _generation[0] += 1

    def read(self, name):
        if name in _local.values:
            return _local.values[name]
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unrecognized config option: {name}") from None

    def __getattr__(self, name):
        return self.read(name)

    @property
    def values(self) -> dict:
        return {n: self.read(n) for n in self._values}

    def read_many(self, names: tuple) -> tuple:
        """The values of the flags ``names`` in this thread, remembered until any flag
        changes (a cached ``jit`` call reads a dozen flags: one lookup instead)."""
        hit = _local.cached.get(names)
        gen = _generation[0]
        if hit is not None and hit[0] == gen:
            return hit[1]
        vals = tuple([self.read(n) for n in names])
        _local.cached[names] = (gen, vals)
        return vals

    def trace_context(self) -> tuple:
        """The flags a trace depends on (part of every ``jit`` trace-cache key)."""
        return self.jit_context()[1]

    def jit_context(self) -> tuple:
        """``(jax_disable_jit, trace_context())`` in this thread, remembered until any flag
        changes: what a ``jit`` call reads before its cache lookup, in one lookup."""
        hit = _local.jit_context
        if hit is not None and hit[0] == _generation[0]:
            return hit[1]
        gen = _generation[0]
        vals = (self.read("jax_disable_jit"),
                tuple([self.read(n) for n in (*_TRACE_CONTEXT, *_TRACE_CONTEXT_USER)]))
        _local.jit_context = (gen, vals)
        return vals


config = Config()


def _bool(name, default, help="", on_change=None):
    return State(name, default, help, parser=bool, default_context_manager_value=True,
                 on_change=on_change)


def _enum(name, default, choices, help=""):
    def parse(v):
        if v not in choices:
            raise ValueError(f"new enum value must be in {list(choices)}, got {v} of type "
                             f"{type(v)}.")
        return v
    return State(name, default, help, parser=parse)


def _optional_enum(name, default, choices, help=""):
    def parse(v):
        if v is not None and v not in choices:
            raise ValueError(f"new enum value must be None or in {list(choices)}, got {v} of "
                             f"type {type(v)}.")
        return v
    return State(name, default, help, parser=parse)


def _no_x64(value):
    if value:
        raise NotImplementedError("wjax runs with x64 disabled: WGSL has no 64-bit types, so "
                                  "jax_enable_x64 cannot be turned on")


def _only_threefry(value):
    if value != "threefry2x32":
        raise NotImplementedError(f"wjax provides only the threefry2x32 PRNG implementation, "
                                  f"not {value!r}")


_GUARDS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")

enable_x64 = State("jax_enable_x64", False, "64-bit types (never on in wjax).", parser=bool,
                   default_context_manager_value=True, on_change=_no_x64)
log_compiles = _bool("jax_log_compiles",
                     settings().log_compiles,
                     "Log a warning each time a function is traced and compiled.")
disable_jit_state = _bool("jax_disable_jit", False, "Run jitted functions op by op.")
threefry_partitionable = _bool("jax_threefry_partitionable", True,
                               "Threefry bits computed per element (JAX's default).")
default_matmul_precision = _optional_enum(
    "jax_default_matmul_precision", None,
    ("default", "high", "highest", "bfloat16", "tensorfloat32", "float32", "bfloat16_3x",
     "fastest", "ANY_F8_ANY_F8_F32", "F32_F32_F32", "TF32_TF32_F32", "BF16_BF16_F32"),
    "Default matmul precision (wjax multiplies float32 in float32 at every level).")
platforms = State("jax_platforms", None, "Platforms to initialize.")
platform_name = State("jax_platform_name", None, "Deprecated platform name.")
debug_nans = _bool("jax_debug_nans", False, "FloatingPointError at the op that makes a NaN.")
traceback_filtering = _optional_enum(
    "jax_traceback_filtering", None,
    ("off", "tracebackhide", "remove_frames", "quiet_remove_frames", "auto"),
    "Whether wjax hides its own frames from the tracebacks of errors raised through it "
    "(None: the environment's JAX_TRACEBACK_FILTERING, else auto).")
debug_infs = _bool("jax_debug_infs", False, "FloatingPointError at the op that makes an inf.")
numpy_dtype_promotion = _enum(
    "jax_numpy_dtype_promotion", "standard", ("standard", "strict"),
    "Within the context, 'strict' refuses implicit dtype promotion (a weak Python scalar may "
    "still join an array of its kind or above); 'standard' is JAX's default lattice.")
numpy_rank_promotion = _enum(
    "jax_numpy_rank_promotion", "allow", ("allow", "warn", "raise"),
    "Implicit rank promotion in NumPy-style broadcasting: allowed, warned about or refused.")
check_tracer_leaks = _bool("jax_check_tracer_leaks", False,
                           "Raise when a tracer outlives the trace that made it.")
enable_checks = _bool("jax_enable_checks", False, "Extra internal checks.")
explain_cache_misses = _bool("jax_explain_cache_misses", False,
                             "Log why a jitted function is traced again.")
softmax_custom_jvp = _bool("jax_softmax_custom_jvp", False,
                           "jax.nn.softmax differentiated by its custom jvp.")
default_prng_impl = State("jax_default_prng_impl", "threefry2x32",
                          "The default PRNG implementation.", on_change=_only_threefry)
legacy_prng_key = _enum("jax_legacy_prng_key", "allow", ("allow", "warn", "error"),
                        "Raw uint32 keys passed to jax.random functions.")
enable_custom_prng = _bool("jax_enable_custom_prng", False, "Deprecated; no effect.")
debug_key_reuse = _bool("jax_debug_key_reuse", False, "Key reuse checking (not in wjax).")
transfer_guard_host_to_device = _optional_enum(
    "jax_transfer_guard_host_to_device", None, _GUARDS, "Host-to-device transfers.")
transfer_guard_device_to_device = _optional_enum(
    "jax_transfer_guard_device_to_device", None, _GUARDS, "Device-to-device transfers.")
transfer_guard_device_to_host = _optional_enum(
    "jax_transfer_guard_device_to_host", None, _GUARDS, "Device-to-host transfers.")
transfer_guard_all = _optional_enum("jax_transfer_guard", None, _GUARDS, "All transfers.")
no_tracing = _bool("jax_no_tracing", False, "Refuse to trace (jit cache misses raise).")
no_execution = _bool("jax_no_execution", False, "Refuse to execute compiled programs.")
allow_f16_reductions = _bool("jax_allow_f16_reductions", True, "float16 reductions.")
array_garbage_collection_guard = _optional_enum(
    "jax_array_garbage_collection_guard", None, ("allow", "log", "fatal"),
    "Arrays collected by the garbage collector (wjax frees buffers by reference count).")
thread_guard = _bool("jax_thread_guard", False, "Multi-threaded use checks.")
jax2tf_associative_scan_reductions = _bool(
    "jax2tf_associative_scan_reductions", False, "jax2tf's cumulative reductions.")
remove_size_one_mesh_axis_from_type = _bool("jax_remove_size_one_mesh_axis_from_type", False,
                                            "Size-one mesh axes dropped from sharding types.")
auto_pcast = _bool("jax_auto_pcast", True, "Automatic pcast.")
default_device = State("jax_default_device", None, "The default device.")
# the persistent compilation cache (backend/disk_cache.py), with JAX's names
compilation_cache_dir = State("jax_compilation_cache_dir",
                              settings().compilation_cache_dir,
                              "Directory of the persistent compilation cache (None: off).")
enable_compilation_cache = _bool("jax_enable_compilation_cache", True,
                                 "Use the persistent compilation cache when a directory is set.")
persistent_cache_min_compile_time_secs = State(
    "jax_persistent_cache_min_compile_time_secs", 1.0,
    "Only programs that took at least this long to compile are stored.", parser=float)
persistent_cache_min_entry_size_bytes = State(
    "jax_persistent_cache_min_entry_size_bytes", 0,
    "Only entries of at least this many bytes are stored.", parser=int)
compilation_cache_max_size = State("jax_compilation_cache_max_size", -1,
                                   "The cache's size limit in bytes (-1: none).", parser=int)
num_cpu_devices = State("jax_num_cpu_devices", -1,
                        "N logical devices on one adapter (set before first use); -1: default.",
                        parser=int)

_TRACE_CONTEXT = ("jax_threefry_partitionable", "jax_numpy_rank_promotion",
                  "jax_numpy_dtype_promotion", "jax_default_matmul_precision",
                  "jax_softmax_custom_jvp", "jax_legacy_prng_key")


# --------------------------------------------------------------------------- transfer guards

class _Explicit(threading.local):
    depth = 0


_explicit = _Explicit()


@contextlib.contextmanager
def explicit_transfer():
    """Transfers inside are explicit (``device_put``, ``device_get``)."""
    _explicit.depth += 1
    try:
        yield
    finally:
        _explicit.depth -= 1


def _guard_level(direction: str):
    level = config.read(f"jax_transfer_guard_{direction}")
    return level if level is not None else config.read("jax_transfer_guard")


def check_transfer(direction: str, aval) -> None:
    """Applies the transfer guard of ``direction`` ("host_to_device", "device_to_host") to a
    transfer of a value of ``aval``: logs it or raises ``JaxRuntimeError`` as the level says."""
    level = _guard_level(direction)
    if level is None or level == "allow":
        return
    explicit = _explicit.depth > 0
    if explicit and level in ("log", "disallow"):
        return
    what = direction.replace("_", "-")
    if level in ("log", "log_explicit"):
        logger.warning("%s transfer: aval=%s", what, aval)
        return
    raise JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed {what} transfer: aval={aval}")


@contextlib.contextmanager
def transfer_guard(new_val: str):
    """Sets every transfer guard (host-to-device, device-to-device, device-to-host) within
    the context: ``"allow"``, ``"log"``, ``"disallow"``, ``"log_explicit"`` or
    ``"disallow_explicit"``."""
    with contextlib.ExitStack() as stack:
        for state in (transfer_guard_host_to_device, transfer_guard_device_to_device,
                      transfer_guard_device_to_host, transfer_guard_all):
            stack.enter_context(state(new_val))
        yield


# --------------------------------------------------------------------------- older context managers

def disable_jit(disable: bool = True):
    """Within the context, jitted functions run op by op (Python control flow on values
    works)."""
    return disable_jit_state(disable)


def checking_leaks():
    """``check_tracer_leaks(True)``."""
    return check_tracer_leaks(True)


_user_contexts = [0]


def make_user_context(default_value=None) -> State:
    """A new flag for user code that ``jit``'s trace cache keys on: a jitted function is
    traced again when the context's value differs (``with ctx(value): ...``)."""
    _user_contexts[0] += 1
    name = f"jax_user_context_{_user_contexts[0]}"
    state = State(name, default_value, "A user context (part of jit's cache key).")
    _TRACE_CONTEXT_USER.append(name)
    _generation[0] += 1
    return state


_TRACE_CONTEXT_USER: list[str] = []
