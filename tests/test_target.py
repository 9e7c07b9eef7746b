"""The one device model: adapter profiles (``wjax/_src/backend/profiles.py``),
``Target.for_adapter`` and ``Target.for_profile`` (``wjax/_src/backend/target.py``), and the
settings read from the environment (``wjax._src.core.config.settings``).

Every profile builds a Target without its hardware; a Target of each GPU profile lowers a set
of programs (every kernel family) whose kernels must all be valid WGSL (checked by this
machine's device), and runs them here, within this device's limits, with its own answers."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import execute, profiles, runtime
from wjax._src.backend.target import Target
from wjax._src.core import config

GPU_PROFILES = [p.name for p in profiles.PROFILES if p.strategies == profiles.GPU_STRATEGIES]


def test_the_profiles():
    names = [p.name for p in profiles.PROFILES]
    for name in ("lavapipe", "llvmpipe-gl", "nvidia", "amd-rdna", "apple-m", "intel-xe",
                 "adreno", "mali", "webgpu-default"):
        assert name in names
    assert len(set(names)) == len(names)
    assert names[-1] == "webgpu-default"       # the fallback comes last: it matches anything
    with pytest.raises(ValueError, match="no adapter profile 'tpu'.*nvidia"):
        profiles.get("tpu")


@pytest.mark.parametrize("name", [p.name for p in profiles.PROFILES])
def test_every_profile_builds_a_target_without_hardware(name):
    p = profiles.get(name)
    t = Target.for_profile(name)
    assert t.profile == name
    for k, v in p.strategies.items():
        assert getattr(t, k) == v
    for k, v in p.limits.items():
        assert t[k] == v
    assert t.workgroup_memory == p.limits["max-compute-workgroup-storage-size"]
    assert t.loop_limit == p.loop_limit
    assert t.has_f16 == ("shader-f16" in p.features)
    assert t.subgroup_size == (p.subgroup_size if "subgroup" in p.features else None)
    other = "vec4" if t.matmul == "tiled" else "tiled"
    assert t.key() != Target.for_profile(name, matmul=other).key()


def _info(device, vendor="", vendor_id=0, backend="Vulkan", kind="DiscreteGPU"):
    return {"device": device, "vendor": vendor, "vendor_id": vendor_id, "backend_type": backend,
            "adapter_type": kind, "architecture": "", "description": ""}


@pytest.mark.parametrize("info,name", [
    (_info("llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe", 0x10005, kind="CPU"), "lavapipe"),
    (_info("llvmpipe (LLVM 15.0.6, 256 bits)", backend="OpenGL", kind="CPU"), "llvmpipe-gl"),
    (_info("SwiftShader Device (Subzero)", "Google", 0x1AE0, kind="CPU"), "generic-cpu"),
    (_info("NVIDIA GeForce RTX 4090", vendor_id=0x10DE), "nvidia"),
    (_info("NVIDIA H100 80GB HBM3", backend="OpenGL", kind="Unknown"), "nvidia"),
    (_info("AMD Radeon RX 7900 XTX (RADV NAVI31)", vendor_id=0x1002), "amd-rdna"),
    (_info("Apple M2 Pro", vendor_id=0x106B, backend="Metal", kind="IntegratedGPU"), "apple-m"),
    (_info("Intel(R) Arc(tm) A770 Graphics (DG2)", vendor_id=0x8086), "intel-xe"),
    (_info("Adreno (TM) 740", vendor_id=0x5143, kind="IntegratedGPU"), "adreno"),
    (_info("Mali-G78", vendor_id=0x13B5, kind="IntegratedGPU"), "mali"),
    (_info("Some Future GPU", vendor_id=0x1234), "webgpu-default"),
])
def test_profile_matching(info, name):
    assert profiles.find(info).name == name
    t = Target.for_adapter(info, {}, [])
    assert t.profile == name and info["device"] in t.name


def test_the_adapter_overrides_its_profile():
    """A real adapter's limits and features win over the profile's typical ones; options and
    WJAX_MATMUL (the settings) override the profile's strategies."""
    info = _info("NVIDIA GeForce RTX 3060", vendor_id=0x10DE)
    t = Target.for_adapter(info, {"max-compute-workgroup-storage-size": 1234}, ["subgroup"])
    assert t.workgroup_memory == 1234
    assert t["max-compute-invocations-per-workgroup"] == 1024      # the profile's
    assert not t.has_f16 and t.subgroup_size == 32
    assert Target.for_adapter(info, {}, []).subgroup_size is None
    forced = config.Settings(matmul="vec4")
    assert Target.for_adapter(info, {}, [], settings=forced).matmul == "vec4"
    assert Target.for_adapter(info, {}, [], settings=config.Settings()).matmul == "tiled"
    assert Target.for_adapter(info, {}, [], reduction="slices").reduction == "slices"


# what lavapipe has always been given (before profiles: the is_cpu switch and the
# "llvmpipe" check of the runtime)
LAVAPIPE_BEFORE = dict(reduction="slices", elementwise="looped", register_block="large",
                       loop_workgroup=64, loop_constants="uniform", matmul="vec4",
                       sort="registers", fft="registers", loop_limit=65535)


@pytest.mark.own_strategies
def test_this_machines_adapter():
    rt = runtime.get()
    info = rt.info
    if "llvmpipe" not in info["device"]:
        pytest.skip(f"not a llvmpipe adapter: {rt.describe()}")
    want = "lavapipe" if info["backend_type"] == "Vulkan" else "llvmpipe-gl"
    assert profiles.find(info).name == want
    t = rt.target()
    assert t.profile == want and t.name == rt.describe()
    for k, v in LAVAPIPE_BEFORE.items():
        assert getattr(t, k) == v, k
    assert rt.loop_limit == 65535
    assert t.has_f16 == ("shader-f16" in rt.features)
    assert t.workgroup_memory == rt.limits["max-compute-workgroup-storage-size"]
    # the runtime's options() takes the strategy names
    with rt.options(**profiles.GPU_FORMS) as g:
        assert (g.reduction, g.elementwise, g.loop_workgroup) == ("strided", "flat", 256)
        assert g.matmul == "vec4" and g.loop_limit == 65535        # the rest stays
    assert rt.target().reduction == "slices"


# ----------------------------------------------------------------------------- WGSL per profile

RS = np.random.RandomState(0)
X = RS.randn(64, 256).astype(np.float32)
Y = RS.randn(256, 128).astype(np.float32)
V = RS.randn(4096).astype(np.float32)

PROGRAMS = {
    "elementwise": (lambda a: jnp.sin(a) * 2.0 + a[:1], (X,)),
    "reduction": (lambda a: (a.sum(1), a.std(0), a.argmax(0), jnp.sum(a)), (X,)),
    "softmax": (lambda a: wjax.nn.softmax(a, axis=1), (X,)),
    "matmul": (lambda a, b: (a @ b, a[:4, :16] @ b[:16, :8]), (X, Y)),
    "cumsum": (lambda a: jnp.cumsum(a), (V,)),
    "sort": (lambda a: jnp.sort(a), (V,)),
    "fft": (lambda a: jnp.fft.fft(a), (V,)),
    # one long pass of radices 8 and 5, one thread a lane: on an H100's limits this crashed
    # in lowering (its twiddle table was not made)
    "fft40": (lambda a: (jnp.fft.irfft(a[:40]), jnp.fft.fft(a[:40])), (V,)),
    "fori_loop": (lambda a: lax.fori_loop(0, 100, lambda i, c: c * 0.99 + jnp.sin(c), a), (X,)),
    "fori_loop_matmul": (lambda a, b: lax.fori_loop(      # one workgroup, register blocks
        0, 10, lambda i, c: jnp.tanh(c @ b[:16, :16]), a[:4, :16]), (X, Y)),
    "scan": (lambda a: lax.scan(lambda c, r: (c + r.sum() * c, c), a[0, :8], a[:, :8])[0],
             (X,)),
    "conv": (lambda a: (lax.conv_general_dilated(a[None, None, :16, :16],
                                                 a[:4, :9].reshape(4, 1, 3, 3), (1, 1), "SAME"),
                        lax.conv_transpose(a[None, :8, :8, None], a[:2, :4].reshape(2, 2, 1, 2),
                                           (2, 2), "VALID",
                                           dimension_numbers=("NHWC", "HWIO", "NHWC"))), (X,)),
    "decompositions": (lambda a: (jnp.linalg.cholesky(a[:8, :8] @ a[:8, :8].T + 8 * jnp.eye(8)),
                                  jnp.linalg.qr(a[:8, :6])[1], jnp.linalg.eigh(
                                      a[:6, :6] + a[:6, :6].T)[0],
                                  jnp.linalg.svd(a[:6, :5], compute_uv=False),
                                  jnp.linalg.solve(a[:8, :8] + 8 * jnp.eye(8), a[:8, :2])),
                       (X,)),
    "indexing": (lambda a: (a[jnp.array([3, 1, 60]), 5:9], a.at[jnp.array([0, 2, 0])].add(1.0),
                            jnp.take_along_axis(a, jnp.argsort(a, 1)[:, :3], 1)), (X,)),
    "windows": (lambda a: (lax.reduce_window(a, -jnp.inf, lax.max, (3, 3), (2, 2), "SAME"),
                           lax.cummax(a, 0), jnp.cumprod(a[:4] * 0.1 + 1.0, 1),
                           lax.top_k(a, 5)[0]), (X,)),
    "while_cond": (lambda a: lax.while_loop(lambda c: c[0] < 7, lambda c: (c[0] + 1, lax.cond(
        c[0] % 2 == 0, jnp.sin, jnp.cos, c[1])), (0, a[:4]))[1], (X,)),
    "random_complex": (lambda a: (wjax.random.normal(wjax.random.key(1), (300,)),
                                  jnp.exp(a[:4, :8] + 1j * a[4:8, :8]),
                                  jnp.fft.fft2(a[:8, :12] + 0j)), (X,)),
}


@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize("name", GPU_PROFILES)
def test_gpu_profiles_lower_valid_wgsl(name, program):
    """The kernels lowered for a typical adapter of each GPU profile are valid WGSL (this
    machine's device validates each shader module; its own limits are not checked)."""
    f, args = PROGRAMS[program]
    closed = wjax.make_jaxpr(f)(*args)
    target = Target.for_profile(name)
    plan = execute.Executable(closed.jaxpr, target).plan
    # each dispatch's kernel; a loop's host step shows the one kernel it runs
    kernels = [s.wgsl for s in plan.steps if "@compute" in s.wgsl]
    assert kernels
    rt = runtime.get()
    for wgsl in kernels:
        rt.validate(wgsl)
        m = re.search(r"@workgroup_size\((\d+)", wgsl)
        assert m and int(m.group(1)) <= target["max-compute-invocations-per-workgroup"]


def _profile_on_this_device(name):
    """A Target of profile ``name`` that this device can run: the profile's strategies and
    typical limits, each limit no higher than this device's (lavapipe: 32 KiB of workgroup
    storage), and this device's loop limit."""
    rt = runtime.get()
    local = rt.target()
    prof = profiles.get(name)
    limits = {k: min(v, rt.limits[k]) for k, v in prof.limits.items() if k in rt.limits}
    return Target.for_profile(name, limits=limits, features=prof.features & rt.features,
                              compiles=rt.compiles, loop_limit=local.loop_limit)


def _leaves(x):
    return [np.asarray(v) for v in wjax.tree_util.tree_leaves(x)]


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_gpu_profiles_run_here_with_this_devices_answers(program):
    """Each GPU profile's kernels, lowered under that profile's strategies and (this device's
    share of) its limits, run on this device and give what its own kernels give: the paths
    lavapipe never takes by itself (workgroup-memory sorts, FFTs and matmul tiles, strided
    reductions, flat elementwise kernels, a mobile GPU's 16 KiB and 256 invocations)."""
    f, args = PROGRAMS[program]
    want = _leaves(wjax.jit(f)(*args))
    closed = wjax.make_jaxpr(f)(*args)
    rt = runtime.get()
    seen = set()
    for name in GPU_PROFILES:
        target = _profile_on_this_device(name)
        if target.key() in seen:             # profiles alike once clipped to this device
            continue
        seen.add(target.key())
        exe = execute.Executable(closed.jaxpr, target)
        outs = execute.Bound(exe, closed.consts).run(
            rt, [jnp.asarray(a).buffer for a in args])
        got = [np.asarray(wjax._src.array.Array(o, av)) for o, av in zip(outs, exe.out_avals)]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if np.issubdtype(w.dtype, np.inexact):
                np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=name)
            else:
                np.testing.assert_array_equal(g, w, err_msg=name)
    assert len(seen) >= 3


def test_validate_refuses_invalid_wgsl():
    with pytest.raises(runtime.WjaxRuntimeError, match="invalid WGSL"):
        runtime.get().validate("@compute @workgroup_size(1) fn main() { let x: f32 = 1u; }")


# ----------------------------------------------------------------------------- settings

def test_settings_come_from_the_environment(monkeypatch):
    for name in config.SETTING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert config.settings() == config.Settings()
    assert config.settings().pool_mb == 512 and config.settings().autotune
    monkeypatch.setenv("WJAX_POOL_MB", "64")
    monkeypatch.setenv("WJAX_MAX_BINDING", "1048576")
    monkeypatch.setenv("WJAX_BACKEND", " Vulkan ")
    monkeypatch.setenv("WJAX_AUTOTUNE", "off")
    monkeypatch.setenv("WJAX_PROFILE_PEAK", "0")
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=3")
    s = config.settings()
    assert (s.pool_mb, s.max_binding, s.backend) == (64.0, 1 << 20, "vulkan")
    assert not s.autotune and not s.profile_peak and s.xla_device_count == 3
    assert config.settings() is s                 # parsed once while the environment holds
    monkeypatch.setenv("WJAX_POOL_MB", "lots")
    with pytest.raises(ValueError, match="WJAX_POOL_MB='lots'"):
        config.settings()


def test_the_runtime_takes_its_settings(monkeypatch):
    monkeypatch.setenv("WJAX_POOL_MB", "64")
    monkeypatch.setenv("WJAX_MAX_STORAGE_BUFFERS", "6")
    rt = runtime.Runtime(runtime.choose_adapter())
    assert rt._free.budget == 64 << 20
    assert rt.target()["max-storage-buffers-per-shader-stage"] == 6


def test_every_setting_is_in_the_settings_table():
    table = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "devices.md").read_text()
    missing = [n for n in config.SETTING_VARIABLES if f"| `{n}` |" not in table]
    assert not missing, f"docs/devices.md's settings table lacks {missing}"


def test_jitted_function_follows_the_target_options():
    """A function jitted (and called) before a ``Runtime.options`` block is compiled again for
    the block's target, and for the default again after it: its cached executable was once
    reused across targets, so a test of a GPU kernel form could run the CPU form."""
    x = np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((200, 100)).astype(np.float32)
    f = wjax.jit(lambda a, b: a @ b)
    rt = runtime.get()
    before = f.lower(x, y).compile().as_text()
    f(x, y)
    with rt.options(**dict(profiles.GPU_STRATEGIES)):
        inside = f.lower(x, y).compile().as_text()
        np.testing.assert_allclose(np.asarray(f(x, y)), x @ y, rtol=1e-4, atol=1e-4)
    after = f.lower(x, y).compile().as_text()
    assert "var<workgroup> As" in inside
    assert (("var<workgroup> As" in before) == ("var<workgroup> As" in after)
            == (rt.target().matmul == "tiled"))
