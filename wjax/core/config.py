"""wjax.config: JAX-style flags (``wjax.config.update('jax_log_compiles', True)``)."""
from __future__ import annotations

import contextlib
import os


class Config:
    _defaults = {
        "jax_enable_x64": False,
        "jax_log_compiles": os.environ.get("WJAX_LOG_COMPILES", "") not in ("", "0"),
        "jax_disable_jit": False,
        "jax_threefry_partitionable": True,
        "jax_default_matmul_precision": None,
        "jax_platforms": None,
        "jax_platform_name": None,
        "jax_debug_nans": False,      # FloatingPointError at the op that makes a NaN
        "jax_debug_infs": False,      # ... or an inf
        "jax_numpy_dtype_promotion": "standard",   # or "strict": no implicit promotion
        # the persistent compilation cache (backend/disk_cache.py), with JAX's names
        "jax_compilation_cache_dir": os.environ.get("JAX_COMPILATION_CACHE_DIR") or None,
        "jax_enable_compilation_cache": True,
        "jax_persistent_cache_min_compile_time_secs": 1.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
        "jax_compilation_cache_max_size": -1,
    }
    _choices = {"jax_numpy_dtype_promotion": ("standard", "strict")}

    def __init__(self):
        self.__dict__["_values"] = dict(self._defaults)

    def update(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unrecognized config option: {name}")
        if name in self._choices and value not in self._choices[name]:
            raise ValueError(f"Unrecognized value for {name}: {value!r} (expected one of "
                             f"{', '.join(self._choices[name])})")
        if name == "jax_enable_x64" and value:
            raise NotImplementedError("wjax runs with x64 disabled: WGSL has no 64-bit types")
        self._values[name] = value

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Unrecognized config option: {name}") from None

    def read(self, name):
        return self._values[name]


config = Config()


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    old = config.jax_disable_jit
    config.update("jax_disable_jit", disable)
    try:
        yield
    finally:
        config.update("jax_disable_jit", old)


@contextlib.contextmanager
def numpy_dtype_promotion(mode: str):
    """Within the context, ``"strict"`` refuses implicit dtype promotion (a weak Python scalar
    may still join an array of its kind or above); ``"standard"`` is JAX's default lattice."""
    old = config.jax_numpy_dtype_promotion
    config.update("jax_numpy_dtype_promotion", mode)
    try:
        yield
    finally:
        config.update("jax_numpy_dtype_promotion", old)
