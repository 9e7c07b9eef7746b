"""The kernel autotuner (wjax/_src/backend/autotune.py): every matmul variant it may choose computes
NumPy's product (odd sizes, batch dimensions, transposed operands, a fused epilogue, split-K);
the choice is timed once per size class and adapter, written to the cache file, read back by
a fresh tuner, survives a corrupt or unwritable file, and is skipped with WJAX_AUTOTUNE=0."""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import wjax as jax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import autotune, runtime
from wjax._src.prims import dot as linalg

F = np.float32


@pytest.fixture
def tuner_file(tmp_path, monkeypatch):
    """Tuning on, with a cache file of this test's own; compiled plans cleared around it."""
    path = tmp_path / "autotune.json"
    monkeypatch.setenv("WJAX_AUTOTUNE", "1")
    monkeypatch.setenv("WJAX_AUTOTUNE_CACHE", str(path))
    rt = runtime.get()
    rt.tuner.forget()
    jax.clear_caches()
    yield path
    rt.tuner.forget()
    jax.clear_caches()


@pytest.fixture
def cpu_forms():
    """The CPU kernel strategies (the tuner's size-class proxies, the direct convolution),
    whichever adapter runs the tests: a GPU's own tuning is tested under GPU_STRATEGIES.
    Problems of any size are tuned (``tune_min_flops=0``: the tests' products are small)."""
    from wjax._src.backend import profiles
    jax.clear_caches()
    with runtime.get().options(**dict(profiles.CPU_STRATEGIES, tune_min_flops=0)):
        yield
    jax.clear_caches()


def _problem():
    rs = np.random.RandomState(0)
    a = rs.randn(2, 37, 130).astype(F)        # batch 2, M 37, K 130
    b = rs.randn(2, 22, 130).astype(F)        # used transposed: N 22 (not a multiple of 4)
    c = rs.randn(130, 40).astype(F)           # N 40
    return a, b, c


def _run(a, b, c):
    f = jax.jit(lambda a, b, c: (jnp.einsum("bmk,bnk->bmn", a, b), jnp.tanh(a @ c) + 1.0))
    return [np.asarray(x) for x in f(a, b, c)]


def _want(a, b, c):
    a64 = a.astype(np.float64)
    return [np.einsum("bmk,bnk->bmn", a64, b), np.tanh(a64 @ c) + 1.0]


def _keys_and_names(a, b, c):
    """The tuner keys of the two products and the variants it may choose for each."""
    t = runtime.get().target()
    out = []
    for M, N, K in ((37, 22, 130), (37, 40, 130)):
        Mp, Np, Kp = (linalg._pow2(2 * M, 4, 512), linalg._pow2(N, 4, 512),
                      linalg._pow2(K, 4, 1024))
        names = [cfg.name for cfg in linalg._mm_candidates(t, Mp, Np // 4, Kp)]
        out.append((f"matmul|{Mp}x{Np}x{Kp}", names))
    return out


def test_every_matmul_variant_is_correct(tuner_file, cpu_forms):
    a, b, c = _problem()
    want = _want(a, b, c)
    (k1, n1), (k2, n2) = _keys_and_names(a, b, c)
    adapter = runtime.get().tuner.adapter_key
    assert len(n1) >= 4 and any("s2" in n for n in n1), n1      # split-K variants offered
    tried = set()
    for i in range(max(len(n1), len(n2))):
        choice = {k1: n1[i % len(n1)], k2: n2[i % len(n2)]}
        tuner_file.write_text(json.dumps({"version": 1, "adapters": {adapter: choice}}))
        runtime.get().tuner.forget()
        jax.clear_caches()
        s0 = dict(runtime.get().tuner.stats)
        got = _run(a, b, c)
        assert runtime.get().tuner.stats["hits"] - s0["hits"] == 2       # the file's choices
        assert runtime.get().tuner.stats["timed"] == s0["timed"]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-4, err_msg=str(choice))
        tried.update(choice.values())
    assert set(n1) | set(n2) <= tried


def test_choices_are_timed_once_and_cached(tuner_file, monkeypatch, cpu_forms):
    a = np.random.RandomState(1).randn(64, 48).astype(F)
    b = np.random.RandomState(2).randn(48, 64).astype(F)
    rt = runtime.get()
    s0 = dict(rt.tuner.stats)
    np.testing.assert_allclose(np.asarray(jax.jit(jnp.matmul)(a, b)), a @ b, rtol=1e-5,
                               atol=1e-4)
    assert rt.tuner.stats["timed"] == s0["timed"] + 1
    data = json.loads(tuner_file.read_text())
    mine = data["adapters"][rt.tuner.adapter_key]
    assert list(mine) == ["matmul|64x64x64"]
    assert mine["matmul|64x64x64"] in rt.tuner.last_times
    # a fresh process (a forgetful tuner, no compiled plans) reads the file: no timing
    rt.tuner.forget()
    jax.clear_caches()
    np.asarray(jax.jit(jnp.matmul)(a, b))
    assert rt.tuner.stats["timed"] == s0["timed"] + 1
    assert rt.tuner.stats["hits"] >= s0["hits"] + 1
    # a corrupt file is timed again and rewritten; an unwritable one still gives a choice
    tuner_file.write_text("{not json")
    rt.tuner.forget()
    jax.clear_caches()
    np.testing.assert_allclose(np.asarray(jax.jit(jnp.matmul)(a, b)), a @ b, rtol=1e-5,
                               atol=1e-4)
    assert rt.tuner.stats["timed"] == s0["timed"] + 2
    assert json.loads(tuner_file.read_text())["version"] == autotune.VERSION
    blocker = tuner_file.parent / "file"
    blocker.write_text("")
    monkeypatch.setenv("WJAX_AUTOTUNE_CACHE", str(blocker / "sub" / "autotune.json"))
    rt.tuner.forget()
    jax.clear_caches()
    np.testing.assert_allclose(np.asarray(jax.jit(jnp.matmul)(a, b)), a @ b, rtol=1e-5,
                               atol=1e-4)


def test_tuning_off_takes_defaults(tuner_file, monkeypatch):
    monkeypatch.setenv("WJAX_AUTOTUNE", "0")
    rt = runtime.get()
    s0 = dict(rt.tuner.stats)
    a = np.ones((64, 64), F)
    np.testing.assert_array_equal(np.asarray(jax.jit(jnp.matmul)(a, a)), a @ a)
    assert rt.tuner.stats["timed"] == s0["timed"] and not os.path.exists(tuner_file)


@pytest.mark.parametrize("forms", ["CPU_STRATEGIES", "GPU_STRATEGIES"])
def test_small_problems_take_the_default_untimed(tuner_file, forms):
    """Below the strategies' ``tune_min_flops`` (2^27 on CPU adapters, 2^20 on GPUs) a product
    takes its default variant with nothing timed or written; at the threshold it is timed
    (JAX's shard_map tutorial spent 118 of its 142 s on lavapipe tuning products of at most
    8 MFLOP)."""
    from wjax._src.backend import profiles
    from wjax._src.backend.target import Target
    rt = runtime.get()
    strategies = getattr(profiles, forms)
    low = strategies["tune_min_flops"]
    assert low == (1 << 27 if forms == "CPU_STRATEGIES" else 1 << 20)
    seen = []
    t = Target({}, **strategies,
               tune=lambda key, names, build, nb, default: seen.append(key) or names[-1])
    names = ["a", "b"]
    assert t.pick_variant("k1", names, None, [], "a", flops=low - 1) == "a" and seen == []
    assert t.pick_variant("k2", names, None, [], "a", flops=low) == "b" and seen == ["k2"]
    # through the lowering: a small product compiles with nothing timed or written
    a = np.random.RandomState(1).randn(64, 48).astype(F)
    s0 = dict(rt.tuner.stats)
    with rt.options(**dict(strategies)):
        got = np.asarray(jax.jit(jnp.matmul)(a, a.T))
    jax.clear_caches()
    np.testing.assert_allclose(got, a @ a.T, rtol=1e-5, atol=1e-4)
    assert rt.tuner.stats["timed"] == s0["timed"] and not os.path.exists(tuner_file)


def test_split_k_with_epilogue():
    """A long contraction with few outputs takes the split-K default (partial products, then a
    sum that also runs the fused epilogue)."""
    rs = np.random.RandomState(3)
    a, b = rs.randn(8, 4096).astype(F), rs.randn(4096, 8).astype(F)
    f = jax.jit(lambda a, b: jnp.maximum(a @ b, 0.0) * 2.0)
    text = f.lower(a, b).as_text()
    assert "for (var s = 0u; s <" in text          # the sum of the partial products
    np.testing.assert_allclose(np.asarray(f(a, b)), np.maximum(a @ b, 0) * 2, rtol=1e-4,
                               atol=1e-3)
    g = jax.jit(lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))))
    np.testing.assert_allclose(np.asarray(g(a, b)), a @ b, rtol=1e-4, atol=1e-3)


def _forcing(monkeypatch, prefix, pick_index):
    """Makes the tuner choose variant ``pick_index`` (mod count) for keys starting ``prefix``
    (and record what it offered)."""
    rt = runtime.get()
    offered = []

    def pick(key, names, build, nb, default):
        if not key.startswith(prefix):
            return default
        offered.append(list(names))
        return names[pick_index % len(names)]
    monkeypatch.setattr(rt.tuner, "pick", pick)
    return offered


@pytest.mark.parametrize("case", ["strided", "groups_dilated", "weight_grad"])
def test_every_conv_variant_is_correct(case, monkeypatch, cpu_forms):
    """The direct (implicit GEMM) convolution in each variant the tuner offers -- register
    blocks, split contractions whose pieces cross window positions -- against JAX: strides,
    asymmetric padding, lhs/rhs dilation, feature groups, and a layer's value_and_grad (the
    weight gradient contracts over batch x positions: 2 x 33 x 35 = 2310 terms a channel)."""
    rj = pytest.importorskip("jax")
    rs = np.random.RandomState(4)
    if case == "strided":
        x, w = rs.randn(2, 5, 13, 11).astype(F), rs.randn(8, 5, 3, 2).astype(F)
        kw = dict(window_strides=(2, 1), padding=((1, 2), (0, 1)))
    elif case == "groups_dilated":
        x, w = rs.randn(3, 6, 19, 20).astype(F), rs.randn(16, 3, 2, 3).astype(F)
        kw = dict(window_strides=(1, 2), padding=((2, 1), (1, 1)), lhs_dilation=(2, 1),
                  rhs_dilation=(1, 2), feature_group_count=2)
    else:
        x, w = rs.randn(2, 3, 33, 35).astype(F), (rs.randn(4, 3, 3, 3) * 0.2).astype(F)
        kw = dict(window_strides=(1, 1), padding="SAME")

    def run(L, N, x, w):
        if case != "weight_grad":
            return L.conv_general_dilated(x, w, **kw)
        loss = lambda w, x: N.sum(N.tanh(L.conv_general_dilated(x, w, **kw)) ** 2)  # noqa
        g = rj.value_and_grad(loss, argnums=(0, 1)) if L is rj.lax else \
            jax.value_and_grad(loss, argnums=(0, 1))
        return g(w, x)
    want = rj.tree_util.tree_leaves(rj.jit(lambda x, w: run(rj.lax, rj.numpy, x, w))(x, w))
    n_variants, i = None, 0
    while n_variants is None or i < n_variants:
        offered = _forcing(monkeypatch, "conv|", i)
        with runtime.get().options(name=f"conv variant {i}"):    # compile afresh
            got = jax.tree_util.tree_leaves(jax.jit(lambda x, w: run(lax, jnp, x, w))(x, w))
        assert offered, "the convolution offered the tuner no variants"
        n_variants = max(len(o) for o in offered)
        for g, wv in zip(got, want):
            scale = max(1.0, float(np.abs(np.asarray(wv)).max()))
            np.testing.assert_allclose(np.asarray(g), np.asarray(wv), rtol=2e-4,
                                       atol=2e-4 * scale, err_msg=f"{case} {offered}")
        i += 1
    assert n_variants >= 3


def test_float16_storage_float32_accumulation(target_options):
    """float16 operands on the register-blocked kernel, products accumulated in float32:
    ``preferred_element_type=float32`` gives JAX's float32 result, a float16 result is that
    rounded once (within one float16 ulp of JAX's); batch dims, a transposed operand, a fused
    epilogue and a split contraction included.  Without shader-f16 (wgpu's GL backend, or a
    target without it) float16 is JAX's TypeError, never a silent float32."""
    rj = pytest.importorskip("jax")
    rs = np.random.RandomState(6)
    a = rs.randn(3, 37, 130).astype(np.float16)
    b = rs.randn(3, 22, 130).astype(np.float16)
    c = rs.randn(8, 4096).astype(np.float16)
    d = rs.randn(4096, 8).astype(np.float16)

    def prog(L, N, a, b, c, d):
        p = L.dot_general(a, b, (((2,), (2,)), ((0,), (0,))), preferred_element_type=N.float32)
        q = N.tanh(N.einsum("bmk,bnk->bmn", a, b)) * 2                 # float16 out, epilogue
        r = L.dot(c, d, preferred_element_type=N.float32)               # split contraction
        return p, q, r

    if not runtime.get().has_f16:
        with pytest.raises(TypeError, match="shader-f16"):
            jax.jit(lambda *x: prog(lax, jnp, *x))(a, b, c, d)
        return
    f = jax.jit(lambda *x: prog(lax, jnp, *x))
    assert "vec4<f16>" in f.lower(a, b, c, d).as_text()
    got = f(a, b, c, d)
    want = rj.jit(lambda *x: prog(rj.lax, rj.numpy, *x))(a, b, c, d)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5, atol=1e-4)
    ulp = np.spacing(np.abs(np.asarray(want[1])).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(np.asarray(got[1], np.float32) - np.asarray(want[1], np.float32))
                  <= ulp + 1e-3)
    np.testing.assert_allclose(np.asarray(got[2]), np.asarray(want[2]), rtol=1e-4, atol=1e-2)
    target_options(has_f16=False)
    with pytest.raises(TypeError, match="shader-f16"):
        jax.jit(lambda *x: prog(lax, jnp, *x))(a, b, c, d)


def test_gpu_small_products_are_timed_among_blocks_and_splits(tuner_file):
    """Under the GPU strategies a product beyond GPU_TUNE_MAX takes the tile rule untimed; a
    smaller one is timed at its own size among the tiles and splits, and one too small to
    fill the GPU (a scan step's 64 x 256 x 256) among tiles and register blocks, unsplit --
    and every variant offered computes the product, in a scan as outside one, against NumPy
    and real JAX."""
    from wjax._src.backend import profiles
    rs = np.random.RandomState(3)
    h = rs.randn(64, 256).astype(F)
    w = rs.randn(256, 256).astype(F) / 16
    xs = rs.randn(5, 64, 256).astype(F)

    def rnn(w, xs):
        def cell(c, x):
            c = jnp.tanh(jnp.dot(c, w, precision=lax.Precision.HIGHEST) + x)
            return c, c
        return lax.scan(cell, jnp.asarray(h), xs)[1]

    def want_rnn():
        c, out = h.astype(np.float64), []
        for x in xs:
            c = np.tanh(c @ w + x)
            out.append(c)
        return np.stack(out)
    want = want_rnn()
    rt = runtime.get()
    # the scan's steps recorded, each a product (not one loop split into blocks of rows)
    with rt.options(**dict(profiles.GPU_STRATEGIES, loop_slices=1)):
        t = rt.target()
        s0 = dict(rt.tuner.stats)
        big = linalg._mm_config(t, 1, 8192, 8192, 8192)    # beyond GPU_TUNE_MAX
        assert big.tiled and linalg._fills_gpu(big, 1, 8192, 8192) and big.bm == 128
        assert rt.tuner.stats == s0                      # the rule: nothing timed
        offered = []
        linalg._mm_config(t.replace(tune=lambda key, names, build, nb, default: offered.append(
            (key, names, default)) or default), 1, 64, 256, 256)
        (key, names, default), = offered
        assert key == "matmul-gpu|64x256x256" and default == names[0] == "t64x64x16s1"
        assert {"t128x128x16s1", "t128x64x16s1", "rm4v2wg64s1"} <= set(names)  # tiles, blocks
        assert {"t64x64x32s1", "t64x64x64s1"} <= set(names)     # deeper slabs (latency)
        assert all(re.fullmatch(r"(t\d+x\d+x\d+|rm\d+v\d+wg\d+)s1d?(g\d)?", n)
                   for n in names), names                # one dispatch each (in a loop)
        # ... and the contraction split inside the workgroup (lavapipe: 1024 invocations,
        # 32 KiB of workgroup memory: 64x64x32 in 4 groups would take 64 KiB)
        assert {"t64x64x16s1g2", "t64x64x16s1g4", "t64x64x32s1g2"} <= set(names)
        assert "t64x64x32s1g4" not in names
        # ... and tiles below 64 x 64 (more workgroups), split where lavapipe holds it
        assert {"t32x64x32s1", "t32x32x32s1g4", "t16x64x32s1g2", "t16x32x32s1g4"} <= set(
            names)                                       # 48 KiB: the H200's, not lavapipe's
        assert ("t16x32x32s1g8" in names) == (t.workgroup_memory >= 48 << 10), names
        step_key, step_names = key, names
        offered.clear()
        linalg._mm_config(t.replace(tune=lambda key, names, build, nb, default: offered.append(
            (key, names, default)) or default), 1, 1024, 2048, 1024)
        (_, big_names, _), = offered                     # a product that fills the GPU:
        assert {"t128x128x16s2", "t64x64x16s4"} <= set(big_names)   # tiles and splits
        assert not any(n.startswith("rm") or _in_wg_split(n) for n in big_names)
        key, names = step_key, step_names
        np.testing.assert_allclose(np.asarray(jax.jit(rnn)(w, xs)), want, rtol=2e-5,
                                   atol=2e-5)
        assert rt.tuner.stats["timed"] == s0["timed"] + 1
        assert json.loads(tuner_file.read_text())["adapters"][rt.tuner.adapter_key][key] \
            in names
        adapter = rt.tuner.adapter_key
        for name in names:                               # every variant it may choose
            tuner_file.write_text(json.dumps({"version": 1, "adapters": {adapter: {key: name}}}))
            rt.tuner.forget()
            jax.clear_caches()
            np.testing.assert_allclose(np.asarray(jax.jit(rnn)(w, xs)), want, rtol=2e-5,
                                       atol=2e-5, err_msg=name)
    J = pytest.importorskip("jax")
    np.testing.assert_allclose(
        want, np.asarray(J.jit(lambda w, xs: J.lax.scan(
            lambda c, x: (J.numpy.tanh(J.numpy.dot(c, w, precision="highest") + x),) * 2,
            J.numpy.asarray(h), xs)[1])(w, xs)), rtol=2e-5, atol=2e-5)


def test_every_gpu_variant_is_correct_on_odd_shapes(tuner_file):
    """Each variant the GPU tuner may choose (tiles, splits, double-buffered tiles, register
    blocks), forced through the cache file under the GPU strategies, computes NumPy's
    product for sizes off every tile, a transposed operand and a fused epilogue."""
    from wjax._src.backend import profiles
    rs = np.random.RandomState(4)
    a = rs.randn(70, 300).astype(F)             # M 70, K 300
    bt = rs.randn(45, 300).astype(F)            # N 45, read transposed
    want = np.maximum(a.astype(np.float64) @ bt.T, 0) * 3
    f = jax.jit(lambda a, bt: jnp.maximum(jnp.dot(a, bt.T, precision=lax.Precision.HIGHEST),
                                          0) * 3)
    rt = runtime.get()
    with rt.options(**dict(profiles.GPU_STRATEGIES)):
        offered = []
        t = rt.target()
        linalg._mm_config(t.replace(tune=lambda key, names, build, nb, default: offered.append(
            (key, names)) or default), 1, 70, 45, 300)
        (key, names), = offered
        assert any(n.endswith("d") for n in names)       # double-buffered tiles offered
        adapter = rt.tuner.adapter_key
        for name in names:
            tuner_file.write_text(json.dumps({"version": 1, "adapters": {adapter: {key: name}}}))
            rt.tuner.forget()
            jax.clear_caches()
            np.testing.assert_allclose(np.asarray(f(a, bt)), want, rtol=2e-5, atol=2e-4,
                                       err_msg=name)


def _in_wg_split(name):
    """Whether a tuner candidate is an in-workgroup split-K tile (``t...s1g4``)."""
    return re.fullmatch(r"t\d+x\d+x\d+s\d+d?g\d+", name) is not None


def test_workgroup_split_k_is_a_small_gpu_candidate_only():
    """The in-workgroup split-K variants (``MMConfig.kg``, named ``...gKG``) are candidates of
    a GPU product too small to fill the GPU, where the target holds them (workgroup memory,
    invocations) and each group walks two slabs or more; never of a product that fills the
    GPU, nor on a CPU target (which runs the register-blocked kernel)."""
    from wjax._src.backend.target import Target
    offered = []

    def tune(key, names, build, nb, default):
        offered.append((key, list(names), default))
        return default
    t = Target.for_profile("nvidia", tune=tune)        # 48 KiB, 1024 invocations
    assert linalg._mm_config(t, 1, 64, 256, 256).kg == 1            # untimed: the rule
    key, names, default = offered[-1]
    assert key == "matmul-gpu|64x256x256" and default == "t64x64x16s1"
    kg = [n for n in names if _in_wg_split(n) and n.startswith("t64x64")]
    assert kg == ["t64x64x16s1g2", "t64x64x16s1g4", "t64x64x32s1g2"], names   # 64 KiB: no g4
    # tiles below 64 x 64: 128-256 threads a workgroup, each group one 32-deep slab or more
    small = [n for n in names if re.match(r"t(16|32)x", n)]
    assert small == ["t32x64x32s1", "t32x64x32s1g2", "t32x32x32s1g2", "t32x32x32s1g4",
                     "t16x64x32s1g2", "t16x64x32s1g4", "t16x32x32s1g4", "t16x32x32s1g8"], names
    linalg._mm_config(t, 1, 64, 256, 32)            # K 32: two 16-deep slabs in all
    assert not any(_in_wg_split(n) for n in offered[-1][1] if n.startswith("t64"))
    assert [n for n in offered[-1][1] if n.startswith(("t16", "t32"))] == ["t32x64x32s1"]
    linalg._mm_config(t, 1, 64, 256, 64)
    assert [n for n in offered[-1][1] if _in_wg_split(n) and n.startswith("t64")] == [
        "t64x64x16s1g2"]
    linalg._mm_config(t, 1, 1024, 2048, 1024)       # fills the GPU
    assert not any(map(_in_wg_split, offered[-1][1]))
    # a tuner's pick of it is the variant the kernel runs
    pick = Target.for_profile("nvidia", tune=lambda key, names, build, nb, default:
                              "t64x64x16s1g4")
    assert linalg._mm_config(pick, 1, 64, 256, 256) == linalg.MMConfig(
        0, 0, 0, 1, True, 64, 64, 16, False, 4)
    offered.clear()
    for prof in ("lavapipe", "generic-cpu"):
        cpu = Target.for_profile(prof, tune=tune)
        cfg = linalg._mm_config(cpu, 1, 64, 256, 256)
        assert cfg.kg == 1
        assert not any(_in_wg_split(n) for _, names, _ in offered for n in names)
    wg16 = Target.for_profile("webgpu-default", tune=tune)   # 256 invocations, 16 KiB
    offered.clear()
    linalg._mm_config(wg16, 1, 64, 256, 256)
    (_, names, _), = offered
    assert not any(_in_wg_split(n) and n.startswith("t64") for n in names)   # none fit
    assert [n for n in names if _in_wg_split(n)] == ["t32x32x32s1g2"]   # 2 x 8 KiB
