"""The WebGPU runtime: buffer pool, async ordering, readback, many/large arrays, adapter choice,
and the ``python -m wjax`` report."""
from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from checks import has_f16
from wjax._src.backend import runtime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rt():
    return runtime.get()


# --------------------------------------------------------------------------- pool

def test_pool_reuses_buffers_in_a_loop():
    x = jnp.arange(1000.0)
    f = lambda a: a * 2.0 + 1.0
    for _ in range(5):                  # warm up: shaders, pool size classes
        np.asarray(f(x))
    before = dict(rt().stats)
    for _ in range(50):
        y = f(x)
        del y
    np.asarray(f(x))
    after = rt().stats
    assert after["allocs"] - before["allocs"] == 0, "allocations keep growing in a steady loop"
    assert after["reuses"] - before["reuses"] >= 50
    assert after["compiles"] == before["compiles"]


def test_pool_grows_then_returns_buffers():
    r = rt()
    arrays = [jnp.full((300,), float(i)) for i in range(20)]
    np.asarray(arrays[-1])
    pooled = r.pool_size()
    del arrays
    gc.collect()
    assert r.pool_size() >= pooled + 20


def test_size_classes():
    sc = runtime.size_class
    assert sc(0) == 16 and sc(1) == 16 and sc(17) == 32 and sc(4096) == 4096
    assert sc((1 << 20) + 1) == 2 << 20
    for n in (5, 100, 3000, 5_000_000):
        assert sc(n) >= n


# --------------------------------------------------------------------------- ordering, readback

def test_chain_of_dependent_eager_ops():
    x = jnp.zeros((), jnp.float32)
    h = np.float32(0.0)
    for i in range(200):
        if i % 2:
            x = x * 1.5 - 1.0
            h = h * np.float32(1.5) - np.float32(1.0)
        else:
            x = x + float(i)
            h = h + np.float32(i)
    np.testing.assert_allclose(float(x), float(h), rtol=1e-6)


def test_chain_of_int_ops_is_exact_and_ordered():
    x = jnp.arange(8, dtype=jnp.int32)
    for i in range(200):
        x = (x * 3 + i) % 1001
    h = np.arange(8, dtype=np.int64)
    for i in range(200):
        h = (h * 3 + i) % 1001
    np.testing.assert_array_equal(np.asarray(x), h)


def test_readback_is_cached_and_consistent():
    x = jnp.arange(10.0) * 3
    a = np.asarray(x)
    n = rt().stats["readbacks"]
    b = np.asarray(x)
    assert rt().stats["readbacks"] == n       # the host copy is reused
    np.testing.assert_array_equal(a, b)
    assert x.tolist() == list(np.arange(10.0) * 3)


def test_upload_after_pending_work_does_not_clobber():
    """A buffer recycled while earlier work is still recorded must not be overwritten early."""
    outs = []
    for i in range(30):
        a = jnp.asarray(np.full(64, i, np.float32))
        outs.append(a * 2)
        del a                              # its buffer goes back to the pool right away
    for i, o in enumerate(outs):
        np.testing.assert_array_equal(np.asarray(o), np.full(64, 2 * i, np.float32))


def test_many_arrays_alive_at_once():
    arrays = [jnp.full((4,), float(i)) + 1.0 for i in range(2000)]
    total = sum(float(a[0]) for a in arrays[::97])
    assert total == sum(i + 1.0 for i in range(0, 2000, 97))
    np.testing.assert_array_equal(np.asarray(arrays[1234]), np.full(4, 1235.0, np.float32))
    s = jnp.stack(arrays[:50]).sum()
    assert float(s) == sum(4 * (i + 1.0) for i in range(50))


def test_big_array_round_trip():
    n = 1 << 22
    h = np.random.RandomState(0).rand(n).astype(np.float32)
    x = jnp.asarray(h)
    np.testing.assert_array_equal(np.asarray(x), h)
    y = x * 2.0 + 1.0
    np.testing.assert_allclose(np.asarray(y)[:: 4099], (h * 2 + 1)[:: 4099], rtol=1e-7)
    np.testing.assert_allclose(
        float(y.sum()), float((h.astype(np.float64) * 2 + 1).sum()), rtol=1e-5
    )


def test_small_dtype_round_trips():
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.bool_, np.float16, np.uint32):
        if dt == np.float16 and not has_f16():
            continue
        info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
        h = (
            np.array([info.min, info.max, 0, 1], dt)
            if info is not None
            else np.array([True, False, True], dt)
            if dt == np.bool_
            else np.array([1.5, -0.0, 65504], dt)
        )
        x = jnp.asarray(h)
        assert x.dtype == dt
        np.testing.assert_array_equal(np.asarray(x), h)


def test_async_dispatch_returns_before_reading():
    r = rt()
    x = jnp.arange(1 << 16, dtype=jnp.float32)
    np.asarray(x * 1.0)
    n = r.stats["readbacks"]
    ys = [x * float(i) for i in range(10)]
    assert r.stats["readbacks"] == n          # no waiting while recording work
    assert float(ys[3][5]) == 15.0


def test_jit_runs_on_the_runtime():
    f = wjax.jit(lambda a, b: (a * b).sum())
    a = jnp.arange(100.0)
    assert float(f(a, a)) == float(np.sum(np.arange(100.0) ** 2))
    n = rt().stats["compiles"]
    f(a + 1, a)
    assert rt().stats["compiles"] == n        # cached plan


# --------------------------------------------------------------------------- loop limit

_LAVAPIPE = "llvmpipe" in runtime.get().info["device"]


def test_driver_loop_limit_is_known():
    """lavapipe ends a shader invocation's loops after 65535 iterations in total (its loop
    limiter), silently: kernels must keep each thread's loop trip counts below that."""
    r = rt()
    out = r.alloc(16)
    src = ("@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
           "@compute @workgroup_size(1) fn main() { var c = 0u; "
           "for (var k = 0u; k < 100000u; k = k + 1u) { c = c + 1u; } o[0] = c; }")
    r.dispatch(src, [out], (1, 1, 1))
    n = int(np.frombuffer(r.read(out, 4), np.uint32)[0])
    assert n == (65535 if _LAVAPIPE else 100000)


@pytest.mark.parametrize("m,k,n", [(1, 70000, 1), (3, 100003, 5), (40, 70000, 36)])
def test_long_contractions_are_exact(m, k, n):
    a = np.random.RandomState(0).rand(m, k).astype(np.float32)
    b = np.random.RandomState(1).rand(k, n).astype(np.float32)
    want = a.astype(np.float64) @ b
    got = np.asarray(jnp.asarray(a) @ jnp.asarray(b))
    np.testing.assert_allclose(got, want, rtol=2e-5)
    v = np.asarray(jnp.dot(jnp.asarray(a[0]), jnp.asarray(b[:, 0])))
    np.testing.assert_allclose(v, want[0, 0], rtol=2e-5)
    j = np.asarray(wjax.jit(lambda x, y: x @ y)(jnp.asarray(a), jnp.asarray(b)))
    np.testing.assert_allclose(j, want, rtol=2e-5)


def test_dot_general_primitive_with_long_contraction():
    from wjax._src.prims.dot import dot_general_p
    x = jnp.ones((1, 70000))
    r = dot_general_p.bind(x, x, dimension_numbers=(((1,), (1,)), ((), ())), precision=None,
                           preferred_element_type=None, out_sharding=None)
    assert float(r[0, 0]) == 70000.0


def test_conv_with_long_reduction():
    rng = np.random.RandomState(0)
    a = rng.randn(1, 7400, 3, 3).astype(np.float32)
    w = rng.randn(1, 7400, 3, 3).astype(np.float32)
    got = float(
        wjax.lax.conv_general_dilated(jnp.asarray(a), jnp.asarray(w), (1, 1), "VALID")[0, 0, 0, 0]
    )
    want = float((a.astype(np.float64) * w).sum())
    assert abs(got - want) < 1e-2 * (1 + abs(want))
    # the weight gradient contracts over batch x output positions (here 2 x 200 x 200 = 80000)
    x = rng.randn(2, 1, 200, 200).astype(np.float32)
    k = rng.randn(1, 1, 3, 3).astype(np.float32)
    f = lambda k: wjax.lax.conv_general_dilated(jnp.asarray(x), k, (1, 1), "SAME").sum()
    g = np.asarray(wjax.grad(f)(jnp.asarray(k)))
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want_g = np.array(
        [[[[xp[:, 0, i : i + 200, j : j + 200].sum() for j in range(3)] for i in range(3)]]]
    )
    np.testing.assert_allclose(g, want_g, rtol=1e-3, atol=1e-2)


# --------------------------------------------------------------------------- python -m wjax

def _run_module(*args, env=None):
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "wjax", *args], capture_output=True, text=True,
                          timeout=120, env=e, cwd=ROOT)


@pytest.mark.own_strategies      # (the subprocess reports the adapter's own)
def test_python_m_wjax_reports_adapters_features_limits():
    p = _run_module()
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "Adapters:" in out and "[0]" in out
    assert "Chosen:" in out and "Backend: webgpu" in out
    assert "Features:" in out and "Limits:" in out
    assert "max-storage-buffer-binding-size" in out
    chosen = out.split("Chosen:")[1].splitlines()[0]
    assert rt().describe().split(" [")[0] in chosen
    # the profile and the strategies its kernels take (what a bench run on a card records)
    t = rt().target()
    assert f"Profile: {t.profile}\n" in out
    strategies = out.split("Strategies: ")[1].splitlines()[0]
    for k in ("matmul", "reduction", "operand_reads", "shader_checks", "spin_wait_us"):
        assert f"{k}={getattr(t, k)}" in strategies.split(", "), strategies


def test_python_m_wjax_check():
    p = _run_module("--check")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("ok:")
    assert "Vulkan" in p.stdout or "Metal" in p.stdout or "D3D12" in p.stdout


def test_python_m_wjax_honours_adapter_override():
    p = _run_module(env={"WJAX_ADAPTER": "no-such-device-xyz"})
    assert p.returncode != 0
    assert "no-such-device-xyz" in p.stderr and "matches none" in p.stderr


# --------------------------------------------------------------------------- adapter choice

class FakeAdapter:
    def __init__(self, device, backend, kind):
        self.info = {"device": device, "backend_type": backend, "adapter_type": kind}

    def __repr__(self):
        return f"Fake({self.info['device']})"


FAKES = [
    FakeAdapter("llvmpipe (LLVM 15)", "OpenGL", "CPU"),
    FakeAdapter("llvmpipe (LLVM 15)", "Vulkan", "CPU"),
    FakeAdapter("Intel Iris Xe", "Vulkan", "IntegratedGPU"),
    FakeAdapter("NVIDIA RTX 4090", "Vulkan", "DiscreteGPU"),
    FakeAdapter("NVIDIA RTX 4090", "OpenGL", "DiscreteGPU"),
]


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv("WJAX_BACKEND", raising=False)
    monkeypatch.delenv("WJAX_ADAPTER", raising=False)
    return monkeypatch


def test_choose_adapter_prefers_discrete_vulkan(clean_env):
    assert runtime.choose_adapter(FAKES) is FAKES[3]
    assert runtime.choose_adapter(FAKES[:3]) is FAKES[2]          # integrated before CPU
    assert runtime.choose_adapter(FAKES[:2]) is FAKES[1]          # Vulkan lavapipe before GL
    assert runtime.choose_adapter([FAKES[4], FAKES[1]]) is FAKES[1]   # GL last, even a GPU


def test_choose_adapter_backend_override(clean_env):
    clean_env.setenv("WJAX_BACKEND", "gl")
    assert runtime.choose_adapter(FAKES) is FAKES[4]
    clean_env.setenv("WJAX_BACKEND", "opengl")
    assert runtime.choose_adapter(FAKES[:2]) is FAKES[0]
    clean_env.setenv("WJAX_BACKEND", "VULKAN")
    assert runtime.choose_adapter(FAKES) is FAKES[3]
    clean_env.setenv("WJAX_BACKEND", "metal")
    with pytest.raises(runtime.WjaxRuntimeError, match="metal"):
        runtime.choose_adapter(FAKES)


def test_choose_adapter_name_and_index_override(clean_env):
    clean_env.setenv("WJAX_ADAPTER", "iris")
    assert runtime.choose_adapter(FAKES) is FAKES[2]
    clean_env.setenv("WJAX_ADAPTER", "llvmpipe")
    assert runtime.choose_adapter(FAKES) is FAKES[1]               # best-ranked among matches
    clean_env.setenv("WJAX_ADAPTER", "0")
    assert runtime.choose_adapter(FAKES) is FAKES[0]
    clean_env.setenv("WJAX_ADAPTER", "4")
    assert runtime.choose_adapter(FAKES) is FAKES[4]
    clean_env.setenv("WJAX_ADAPTER", "radeon")
    with pytest.raises(runtime.WjaxRuntimeError) as e:
        runtime.choose_adapter(FAKES)
    assert "radeon" in str(e.value) and "Iris" in str(e.value)      # lists what exists
    clean_env.setenv("WJAX_BACKEND", "opengl")
    clean_env.setenv("WJAX_ADAPTER", "nvidia")
    assert runtime.choose_adapter(FAKES) is FAKES[4]               # both filters apply


def test_choose_adapter_with_none_gives_install_hint(clean_env):
    with pytest.raises(runtime.WjaxRuntimeError, match="mesa-vulkan-drivers"):
        runtime.choose_adapter([])


def test_the_real_adapter_and_limits():
    r = rt()
    assert r.info["backend_type"] in ("Vulkan", "Metal", "D3D12", "OpenGL")
    assert r.max_binding > 0 and r.max_buffer > 0 and r.max_storage >= 4
    dev = wjax.devices()[0]
    assert dev.device_kind == r.info["device"]
    assert wjax.device_count() == 1 and wjax.default_backend() == "webgpu"


def test_repeated_calls_bind_the_same_buffers():
    """A program's intermediate slots take the GPU buffers they had last call (the pool's
    ``prefer``), so a repeated call on the same inputs finds every bind group in the cache
    instead of creating it (an H200 MLP step spent about a millisecond a call creating ~20 of them);
    a training loop's step (outputs fed back as inputs) settles into a cycle of buffers that
    the cache holds too.  The answers stay NumPy's."""
    import wjax
    import wjax.numpy as jnp
    from wjax._src.backend import runtime as rtm
    rt = rtm.get()
    rs = np.random.RandomState(0)
    w1 = wjax.device_put(rs.randn(64, 96).astype(np.float32))
    w2 = wjax.device_put(rs.randn(96, 32).astype(np.float32))
    x = wjax.device_put(rs.randn(40, 64).astype(np.float32))

    def f(x, w1, w2):
        h = jnp.tanh(x @ w1)
        return jnp.sum(jnp.maximum(h @ w2, 0.0) ** 2, axis=1), jnp.exp(h).mean(0)

    def step(w1, w2, x):
        return w1 * 0.5 + jnp.tanh(x @ w1).sum() * 1e-3, w2 - 0.01 * w2

    h = np.tanh(np.asarray(x, np.float64) @ np.asarray(w1, np.float64))
    want = (np.sum(np.maximum(h @ np.asarray(w2, np.float64), 0.0) ** 2, axis=1),
            np.exp(h).mean(0))
    g, s = wjax.jit(f), wjax.jit(step)
    made = []
    real = rt._new_bind_group
    rt._new_bind_group = lambda *a: (made.append(1), real(*a))[1]
    try:
        for i in range(7):
            got = g(x, w1, w2)
            for a, b in zip(got, want):
                np.testing.assert_allclose(np.asarray(a), b, rtol=2e-5, atol=2e-4)
            if i == 2:
                made.clear()
            del got
        assert made == [], f"{len(made)} bind groups created by calls 4-7"
        a, b = w1, w2
        for i in range(8):
            a, b = s(a, b, x)
            if i == 3:
                made.clear()
        assert made == [], f"{len(made)} bind groups created by training steps 5-8"
        np.testing.assert_allclose(np.asarray(b), np.asarray(w2) * 0.99 ** 8, rtol=1e-5)
    finally:
        rt._new_bind_group = real


def test_quick_cffi_type_names():
    """wgpu-py's cffi parser takes a plain typedef name, a pointer to it or an array of it
    without pycparser (``runtime._quick_type_names``: ~30 ms a new type string otherwise,
    ~0.6 s of a cold first compile on 2 cores), and the types are exactly the parser's own;
    other strings still go to the parser, and other cffi users keep theirs."""
    import cffi
    from wgpu.backends.wgpu_native import _api
    assert runtime._QUICK_TYPES
    parser = _api.ffi._parser
    slow = type(parser).parse_type
    names = [n[len("typedef "):] for n in parser._declarations if n.startswith("typedef WGPU")]
    assert len(names) > 100
    # a spread of the typedefs (each slow parse takes ~30-90 ms: all of them would be minutes)
    for name in names[::len(names) // 12] + ["WGPUBindGroupDescriptor",
                                             "WGPUComputePassDescriptor"]:
        for cdecl in (name, f"{name} *", f"{name}[]", f" {name}*", f"{name} [ ]"):
            assert parser.parse_type(cdecl) == slow(parser, cdecl), cdecl
    for cdecl in ("uint8_t []", "WGPUBindGroupEntry const *", "void(WGPULogLevel, WGPUStringView, "
                  "void *)", "WGPUBindGroupEntry **"):
        assert parser.parse_type(cdecl) == slow(parser, cdecl), cdecl
    other = cffi.FFI()
    other.cdef("typedef struct { int a; } foo_t;")
    assert "parse_type" not in vars(other._parser)
    assert other.typeof("foo_t *").item.kind == "struct"
    # the types work: a struct made through the quick path holds what is put in it
    d = _api.ffi.new("WGPUBufferBindingLayout *")
    d.minBindingSize = 12
    assert _api.ffi.typeof(d) is _api.ffi.typeof("WGPUBufferBindingLayout*") and \
        d.minBindingSize == 12


@pytest.mark.parametrize("native", [True, False])
def test_bind_groups_made_by_the_native_call(native, monkeypatch):
    """Bind groups come from wgpu-native's ``wgpuDeviceCreateBindGroup`` with the descriptor
    filled in directly (``runtime._BIND_GROUP``; wgpu-py's ``create_bind_group`` cost 60 us
    of 70 on lavapipe), or from wgpu-py's where that call is missing: whole buffers and
    windows at an offset bind where asked, the groups are cached per buffers and windows, and
    a binding wgpu rejects (an offset off the alignment) raises wgpu's error, leaving the
    runtime usable."""
    assert runtime._BIND_GROUP is not None
    if not native:
        monkeypatch.setattr(runtime, "_BIND_GROUP", None)
    r = rt()
    src = ("@group(0) @binding(0) var<storage, read> b0: array<f32>;\n"
           "@group(0) @binding(1) var<storage, read_write> b1: array<f32>;\n"
           "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>)"
           " { if (g.x < arrayLength(&b0)) { b1[g.x] = b0[g.x] * 2.0 + 1.0; } }\n")
    align = int(r.device.limits["min-storage-buffer-offset-alignment"])
    x = np.arange(3 * align // 4, dtype=np.float32)
    a, out = r.upload(x), r.alloc(x.nbytes)
    r.dispatch(src, [a, out], (-(-x.size // 64), 1, 1))
    got = np.frombuffer(r.read(out, x.nbytes), np.float32)
    np.testing.assert_array_equal(got, x * 2 + 1)
    n = len(r._bind_groups)
    r.dispatch(src, [a, out], (-(-x.size // 64), 1, 1))       # the cached group
    assert len(r._bind_groups) == n
    # the second window of a (align bytes from its start) into the first window of out
    r.dispatch(src, [a, out], (-(-x.size // 64), 1, 1), ranges=[(align, align), (0, align)])
    got = np.frombuffer(r.read(out, x.nbytes), np.float32)
    k = align // 4
    np.testing.assert_array_equal(got[:k], x[k:2 * k] * 2 + 1)
    np.testing.assert_array_equal(got[k:], x[k:] * 2 + 1)     # as the whole-buffer run left it
    with pytest.raises(Exception, match="(?i)offset|align"):
        r.dispatch(src, [a, out], (1, 1, 1), ranges=[(4, 64), (0, 64)])
    r.dispatch(src, [a, out], (-(-x.size // 64), 1, 1))
    np.testing.assert_array_equal(np.frombuffer(r.read(out, x.nbytes), np.float32), x * 2 + 1)


def test_pipelines_compiled_together():
    """``Runtime.pipelines`` compiles what is missing several at a time (an executable's
    kernels, an autotuner's candidates): each once, usable after; a source that does not
    compile is returned with its error (or raised, naming the shader), the others still
    compile."""
    r = rt()
    srcs = [f"@group(0) @binding(0) var<storage, read_write> b0: array<f32>;\n"
            f"@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: "
            f"vec3<u32>) {{ if (g.x < 4u) {{ b0[g.x] = b0[g.x] * {k}.0 + 0.{k}; }} }}\n"
            for k in range(1, 7)]
    bad = "@compute @workgroup_size(1)\nfn main() { let x: f32 = 1u; }\n"
    before = r.stats["compiles"]
    errors = r.pipelines(srcs + [bad] + srcs[:2], raise_errors=False)
    assert list(errors) == [bad] and r.stats["compiles"] - before == len(srcs)
    assert r.pipelines(srcs) == {} and r.stats["compiles"] - before == len(srcs)
    with pytest.raises(runtime.WjaxRuntimeError, match="WGSL compile failed"):
        r.pipelines([bad] + srcs)
    buf = r.upload(np.arange(4, dtype=np.float32))
    for k, src in enumerate(srcs, start=1):
        r.dispatch(src, [buf], (1, 1, 1))
    want = np.arange(4, dtype=np.float32)
    for k in range(1, 7):
        want = want * np.float32(k) + np.float32(f"0.{k}")
    got = np.frombuffer(r.read(buf, 16), np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_shader_checks(monkeypatch):
    """``Target.shader_checks`` picks the run-time checks naga compiles into kernels: "all"
    through wgpu-py's own call, "bounds" (1) and "none" (0) through wgpu-native's trusted
    module call.  A kernel with loops computes the same under each; invalid WGSL still
    raises, naming the shader; the profiles take "bounds"; an unknown name is refused."""
    from wjax._src.backend import profiles
    from wjax._src.backend.target import Target
    assert runtime._TRUSTED_MODULE is not None          # this wgpu-py (0.32) has it
    seen, make = [], runtime._TRUSTED_MODULE
    monkeypatch.setattr(runtime, "_TRUSTED_MODULE",
                        lambda dev, code, checks: seen.append(checks) or make(dev, code, checks))
    r = rt()
    x = np.arange(64, dtype=np.float32)
    want = x.copy()
    for i in range(40):                                  # the kernel's loop, in float32
        want = np.float32(0.5) * want + np.float32(i % 3)
    for mode, bits in (("all", None), ("bounds", 1), ("none", 0)):
        src = (f"// {mode}\n@group(0) @binding(0) var<storage, read_write> b0: array<f32>;\n"
               "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: "
               "vec3<u32>) {\n  var v = b0[g.x];\n  for (var i = 0u; i < 40u; i = i + 1u) "
               "{ v = 0.5 * v + f32(i % 3u); }\n  b0[g.x] = v;\n}\n")
        seen.clear()
        with r.options(shader_checks=mode):
            buf = r.upload(x)
            r.dispatch(src, [buf], (1, 1, 1))
            np.testing.assert_array_equal(np.frombuffer(r.read(buf, 256), np.float32), want)
            assert seen == ([] if bits is None else [bits])
            with pytest.raises(runtime.WjaxRuntimeError, match="WGSL compile failed"):
                r.pipeline(f"// {mode}\n@compute @workgroup_size(1)\nfn main() "
                           "{ let x: f32 = 1u; }\n")
            with pytest.raises(runtime.WjaxRuntimeError, match="invalid WGSL"):
                r.validate("fn main( {")
            wjax.clear_caches()             # a program's kernels compiled under the mode
            got = wjax.jit(lambda a: wjax.lax.fori_loop(0, 40, lambda i, v: 0.5 * v + (i % 3),
                                                        a))(x)
            np.testing.assert_array_equal(np.asarray(got), want)
    wjax.clear_caches()
    for prof in profiles.PROFILES:
        assert Target.for_profile(prof.name).shader_checks == "bounds"
    with pytest.raises(ValueError, match="shader_checks must be one of all, bounds, none"):
        Target.for_profile("nvidia", shader_checks="some")
    from wjax._src.core import config
    info = {"device": "NVIDIA H100", "vendor_id": 0x10DE, "backend_type": "Vulkan",
            "adapter_type": "DiscreteGPU"}
    assert Target.for_adapter(info, {}, [], settings=config.Settings(
        shader_checks="all")).shader_checks == "all"


def test_target_options_are_checked():
    """Every kernel strategy is checked where a Target is made: a value that is not one of the
    option's is a ValueError naming the option, its values and the environment variable that
    sets it (where one does); an unknown option is a TypeError naming it (through
    ``Target.replace`` and ``Runtime.options`` alike); a tile of the right form that the
    tiled kernel does not have is a ValueError when a product asks for it.  Nothing
    compiled under the options before is touched: the runtime's own target is unchanged."""
    from wjax._src.backend.target import CHOICES, COUNTS, Target
    from wjax._src.core import config
    for name, values in CHOICES.items():
        for v in values:
            assert getattr(Target.for_profile("nvidia", **{name: v}), name) == v
        with pytest.raises(ValueError, match=f"{name} must be one of {', '.join(values)}, "
                                             "not 'fast'"):
            Target.for_profile("nvidia", **{name: "fast"})
    for name, least in COUNTS.items():
        for bad in (least - 1, 2.5, "8", True):
            with pytest.raises(ValueError, match=f"{name} must be an integer >= {least}"):
                Target.for_profile("lavapipe", **{name: bad})
    for bad in ("128x128", "big", "128x128x16g", 64):
        with pytest.raises(ValueError, match="matmul_tile must be BMxBNxBK or BMxBNxBKgKG"):
            Target.for_profile("nvidia", matmul_tile=bad)
    for bad in (0, -5, 1.5):
        with pytest.raises(ValueError, match="loop_limit must be a positive integer or None"):
            Target(dict(), loop_limit=bad)
    with pytest.raises(TypeError, match="'matmull' is not a target option; the options: name"):
        Target.for_profile("nvidia").replace(matmull="tiled")
    info = {"device": "NVIDIA H100", "vendor_id": 0x10DE, "backend_type": "Vulkan",
            "adapter_type": "DiscreteGPU"}
    with pytest.raises(ValueError, match=r"matmul must be one of vec4, tiled, not 'tild' "
                                         r"\(WJAX_MATMUL\)"):
        Target.for_adapter(info, {}, [], settings=config.Settings(matmul="tild"))
    assert Target.for_adapter(info, {}, [], settings=config.Settings(matmul="auto")).matmul \
        == "tiled"
    r = rt()
    before = r.target()
    with pytest.raises(TypeError, match="'tiles', 'fast' are not target options"):
        with r.options(tiles=1, fast=True):
            pass
    with pytest.raises(ValueError, match="operand_reads must be one of inline, copy"):
        with r.options(operand_reads="gather"):
            pass
    assert r.target().key() == before.key()
    x = np.ones((64, 64), np.float32)
    with r.options(matmul="tiled", matmul_tile="96x96x16"):
        with pytest.raises(ValueError, match="the matmul tile '96x96x16' is not one of the "
                                             "tiled kernel's: 128x128x16, "):
            wjax.jit(lambda a: a @ a)(x)
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: a @ a)(x)), x @ x)


def test_waits_spin_then_sleep(monkeypatch):
    """A wait for the device (``block_until_ready``, a readback) polls without blocking until
    wgpu's work-done callback for the work so far has run, for up to ``Target.spin_wait_us``
    (the profiles: GPU 20 ms; CPU 0, where spinning takes the cores the "device" runs on),
    then blocks on the fence; 0 blocks at once.  It returns only once the work is done (the
    poll's own result says nothing of that: it is True on lavapipe and on an H200 while
    kernels run, and a wait that trusted it returned at once -- 0.2 ms for a 36 ms product on
    the H200).  Results and readbacks (whose map callback the polls run) are the same either
    way, also when the budget runs out before the work ends."""
    from wjax._src.backend import profiles
    assert profiles.CPU_STRATEGIES["spin_wait_us"] == 0
    assert profiles.GPU_STRATEGIES["spin_wait_us"] == 20000
    r = rt()
    polls, real = [], runtime._POLL
    assert real is not None and r._work_done is not None   # this wgpu-py (0.32) exposes them
    blocking = []
    monkeypatch.setattr(r.device, "_poll", lambda block=False: blocking.append(block) or
                        runtime.wgpu.backends.wgpu_native.GPUDevice._poll(r.device, block))
    monkeypatch.setattr(runtime, "_POLL", lambda h, wait: polls.append(wait) or real(h, wait))
    x = np.linspace(-2, 2, 1 << 16).astype(np.float32)
    f = wjax.jit(lambda a: jnp.tanh(a) * 3 + 1)
    want = np.tanh(x.astype(np.float64)) * 3 + 1
    a = np.ones((512, 512), np.float32)
    g = wjax.jit(lambda a: a @ a @ a @ a)           # tens of ms on lavapipe
    g(a).block_until_ready()
    f(x).block_until_ready()     # compiled (lavapipe compiles a pipeline at its first run)

    def finished():
        """Whether nothing submitted is left running: a work-done callback registered now
        runs in one poll that does not block."""
        ticket = r._work_done.mark()
        real(r.device._internal, False)
        return r._work_done.done(ticket)
    y = g(a)
    r.flush()
    assert not finished()                            # the probe sees work in flight
    r.synchronize()
    done = r._work_done.done
    for us, never in ((20000, False), (0, False), (50, True)):   # True: never "done"
        if never:
            monkeypatch.setattr(r._work_done, "done", lambda ticket: False)
        polls.clear()
        blocking.clear()
        with r.options(spin_wait_us=us):
            y = f(x)
            y.block_until_ready()
            if not never and us:                     # the callback ended the spin
                assert polls and blocking == []
            np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-5)
            assert float(jnp.sum(y[:3])) == pytest.approx(float(want[:3].sum()), rel=1e-5)
            z = g(a)
            z.block_until_ready()
            monkeypatch.setattr(r._work_done, "done", done)
            assert finished()                        # the wait returned after the work
            np.testing.assert_array_equal(np.asarray(z), np.full_like(a, 512.0 ** 3))
        if us == 0:
            assert polls == [] and True in blocking          # asleep at once
        else:
            assert polls and not any(polls)                  # non-blocking polls first
        if never:
            assert True in blocking                          # then asleep: the budget ran out


def test_a_lost_device_raises_instead_of_submitting(monkeypatch):
    """wgpu-py reports a lost device only on its "wgpu" logger, and wgpu-native aborts the
    process on the next submit to it (an H200 run lost its device and died so): the runtime
    keeps the report and raises WjaxRuntimeError, naming it, before anything more is
    submitted, waited for or read back; a device destroyed on purpose is not lost."""
    import logging
    r = rt()
    x = np.arange(8, dtype=np.float32)
    f = wjax.jit(lambda a: a * 2 + 1)
    y = f(x)
    np.testing.assert_array_equal(np.asarray(y), x * 2 + 1)
    log = logging.getLogger("wgpu")
    monkeypatch.setattr(runtime._LOST, "lost", None)
    log.error("The WGPU device was lost (destroyed):\nDevice dropped.")
    assert runtime._LOST.lost is None
    try:
        log.error("The WGPU device was lost (unknown):\nsimulated by the test")
        assert runtime._LOST.lost is not None
        z = y * 3                        # recorded before the report, not yet submitted
        for call in (lambda: np.asarray(f(x)), lambda: f(x).block_until_ready(),
                     lambda: np.asarray(z), r.synchronize):
            with pytest.raises(runtime.WjaxRuntimeError,
                               match=r"GPU device was lost.*\(The WGPU device was lost "
                                     r"\(unknown\): simulated by the test\); restart"):
                call()
    finally:
        runtime._LOST.lost = None
    r.synchronize()
    np.testing.assert_array_equal(np.asarray(f(x)), x * 2 + 1)
