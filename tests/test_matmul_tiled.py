"""The GPU matmul kernel (shaders/matmul_tiled.wgsl, ``prims/dot.py``'s ``_tiled_src``) run
here under the GPU strategies: every tile (``dot.TILES``), operands stored rows-first or
k-first (read in place), lengths that are not multiples of 4 (scalar loads) or of the tile,
batches, split contractions (``_tile_config``) and fused epilogues, against NumPy in float64
and real JAX; and which tile and split the rule picks."""
from __future__ import annotations

import numpy as np
import pytest
from checks import examples, f16_unsupported, has_f16, rjax
from hypothesis import assume, given
from hypothesis import strategies as st

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import profiles, runtime
from wjax._src.backend.target import Target
from wjax._src.prims import dot

HI = lax.Precision.HIGHEST
RS = np.random.RandomState(0)
SHAPES = [(1, 130, 67, 33), (2, 65, 132, 40), (1, 8, 520, 9), (1, 64, 64, 3000),
          (3, 33, 5, 17), (1, 256, 256, 64)]


def _gpu(tile="", **options):
    return runtime.get().options(**dict(profiles.GPU_STRATEGIES, matmul_tile=tile, **options))


def _close(got, want):
    got = np.asarray(got, np.float64)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale)


@pytest.mark.parametrize("tile", sorted(dot.TILES))   # lavapipe has 32 KiB of workgroup memory
def test_tiles_layouts_splits_epilogues(tile):
    wjax.clear_caches()
    with _gpu(tile):
        for B, M, N, K in SHAPES:
            a = RS.randn(B, M, K).astype(np.float32)
            b = RS.randn(B, K, N).astype(np.float32)
            want = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
            at = np.ascontiguousarray(a.transpose(0, 2, 1))
            bt = np.ascontiguousarray(b.transpose(0, 2, 1))
            _close(wjax.jit(lambda x, y: jnp.matmul(x, y, precision=HI))(a, b), want)
            _close(wjax.jit(lambda x, y: jnp.einsum("bkm,bkn->bmn", x, y, precision=HI))(at, b),
                   want)
            _close(wjax.jit(lambda x, y: jnp.einsum("bmk,bnk->bmn", x, y, precision=HI))(a, bt),
                   want)
            _close(wjax.jit(lambda x, y: jnp.maximum(jnp.matmul(x, y, precision=HI), 0) * 2)(
                a, b), np.maximum(want, 0) * 2)
    wjax.clear_caches()


def test_against_real_jax_with_grads():
    J = pytest.importorskip("jax")
    a = RS.randn(96, 200).astype(np.float32)
    w = RS.randn(200, 72).astype(np.float32)

    def loss(np_, a, w):
        return np_.sum(np_.tanh(np_.dot(a, w, precision="highest")) ** 2)
    wjax.clear_caches()
    with _gpu():
        got = wjax.jit(wjax.value_and_grad(lambda a, w: loss(jnp, a, w), (0, 1)))(a, w)
    wjax.clear_caches()
    want = J.jit(J.value_and_grad(lambda a, w: loss(J.numpy, a, w), (0, 1)))(a, w)
    np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=1e-5)
    for g, h in zip(got[1], want[1]):
        np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-4, atol=1e-4)


def test_tile_rule():
    t = Target.for_profile("nvidia")
    # big products take the big tile, no split
    assert dot._tile_config(t, 1, 4096, 4096, 4096)[4:8] == (True, 128, 128, 16)
    assert dot._tile_config(t, 1, 4096, 4096, 4096).s == 1
    assert dot._tile_config(t, 1, 2048, 2048, 2048)[5:7] == (128, 128)
    # 1024^2: 64 tiles of 128x128 or 128 of 128x64 are too few; 64x64 gives 256
    assert dot._tile_config(t, 1, 1024, 1024, 1024)[5:7] == (64, 64)
    # attention's P V (N = 64): a 128-wide tile would be half padding
    assert dot._tile_config(t, 128, 1024, 64, 1024)[5:7] == (128, 64)
    # a weight gradient (256 x 256 result, contraction 12,800): small tiles, split contraction
    c = dot._tile_config(t, 1, 256, 256, 12800)
    assert (c.bm, c.bn) == (64, 64) and c.s == 16
    # a forced tile
    assert dot._tile_config(t.replace(matmul_tile="128x128x8"), 1, 64, 64, 64)[5:8] == \
        (128, 128, 8)
    # the tiles the rule picks fit WebGPU's default workgroup memory; a forced tile the
    # target cannot hold falls back to the rule
    for name, (bm, bn, bk) in dot.TILES.items():
        ty, tx = dot._tile_threads(bm, bn)       # each thread a block of whole vec4s
        assert (bm // ty) % 4 == 0 and (bn // tx) % 4 == 0 and ty * tx * (bm // ty) * (
            bn // tx) == bm * bn and ty * tx == (256 if min(bm, bn) >= 64 else bm * bn // 16)
        assert bk != 16 or (bm + bn) * bk * 4 <= 16384
        assert (bm * bk) % (4 * ty * tx) == 0 and (bn * bk) % (4 * ty * tx) == 0  # slab loads
    small = Target.for_profile("webgpu-default", matmul_tile="128x128x32")
    assert dot._tile_config(small, 1, 4096, 4096, 4096)[5:8] == (128, 128, 16)


def test_gpu_target_lowers_to_tiled_kernel():
    """Under the GPU strategies a float32 product is the tiled kernel (its workgroup tiles
    in the WGSL), an operand stored transposed is read in place (no copy kernel)."""
    a = RS.randn(300, 200).astype(np.float32)
    b = RS.randn(300, 100).astype(np.float32)
    wjax.clear_caches()
    with _gpu():
        f = wjax.jit(lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ())),
                                                  precision=HI))
        text = f.lower(a, b).compile().as_text()
        _close(f(a, b), a.T.astype(np.float64) @ b)
    wjax.clear_caches()
    assert "var<workgroup> As" in text
    assert text.count("@compute") == 1, text[:2000]


def test_half_precision_products_take_either_kernel_a_tuner_picks():
    """float16/bfloat16 products run on the tiled kernel or the register-blocked one,
    whichever the tuner picks (an H100 run of a 4096 bfloat16 matmul once died when a tiled
    choice reached the register-blocked kernel: ZeroDivisionError)."""
    if not has_f16():     # wgpu's GL backend: float16 is a TypeError naming the feature
        return f16_unsupported(lambda: jnp.ones(2, np.float16) + 1)
    a = RS.randn(64, 96).astype(np.float16)
    b = RS.randn(96, 80).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    for pick in (0, -1):
        t = Target.for_profile("nvidia", tune=lambda key, names, build, nb, default: names[pick],
                               tune_min_flops=0)
        cfg = dot._mm_config(t, 1, 8192, 8192, 8192)       # beyond GPU_TUNE_MAX: the rule
        assert cfg.tiled and cfg.bm == 128
        small = dot._mm_config(t, 1, 64, 80, 96)
        assert small.tiled == (pick == 0) and (small.tiled or small.rm > 0)
    with _gpu():
        f = wjax.jit(lambda x, y: jnp.matmul(x, y, preferred_element_type=jnp.float32))
        got = f(a, b)
        text = f.lower(a, b).compile().as_text()
    wjax.clear_caches()
    assert "var<workgroup> As" in text and "vec4<f16>" in text
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("tile", ["128x128x16", "64x64x16"])
def test_half_precision_products_take_the_tile(dt, tile):
    """float16 / bfloat16 operands on the GPU's tiled kernel (float16 read as vec4<f16>,
    bfloat16 from its f32 lanes), accumulated in float32 and rounded once to the result's
    type (float16 by the bits, wj_f16r), as XLA: within one ulp of the exact product rounded,
    equal to real JAX's where JAX rounds the same, with preferred_element_type=float32, a
    fused epilogue, split contractions and a transposed operand."""
    if dt == "float16" and not has_f16():
        return f16_unsupported(lambda: jnp.ones(2, np.float16) + 1)
    J = pytest.importorskip("jax")
    wjax.clear_caches()
    rs = np.random.RandomState(5)
    for M, N, K in ((130, 67, 33), (64, 64, 3000), (256, 256, 64)):
        a = rs.randn(M, K).astype(np.float32).astype(dt)
        b = rs.randn(K, N).astype(np.float32).astype(dt)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        with _gpu(tile):
            got = wjax.jit(jnp.matmul)(a, b)
            got32 = wjax.jit(lambda x, y: jnp.matmul(x, y, preferred_element_type=jnp.float32))(
                a, b)
            gott = wjax.jit(lambda x, y: jnp.maximum(x.T.T @ y, 0) * 2)(a, b)
            src = wjax.jit(jnp.matmul).lower(a, b).compile().as_text()
        assert got.dtype == np.dtype(dt) and got32.dtype == np.float32
        bits = 7 if dt == "bfloat16" else 10             # the type's mantissa bits
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(exact), 2.0 ** -14))) - bits)
        err = np.abs(np.asarray(got, np.float64) - exact)
        assert np.all(err <= ulp + 1e-3 * np.abs(exact).max() * 2 ** -8), (M, N, K)
        np.testing.assert_allclose(np.asarray(got32), exact, rtol=0,
                                   atol=2e-5 * max(1, np.abs(exact).max()))
        np.testing.assert_allclose(np.asarray(gott, np.float32),
                                   np.maximum(np.asarray(got, np.float32), 0) * 2, rtol=0,
                                   atol=float(ulp.max()) * 2)
        want = np.asarray(J.jit(J.numpy.matmul)(a, b))
        # XLA's CPU product of halves sums in float32 in its own order: the two agree to
        # within the result's ulp
        assert np.all(np.abs(np.asarray(got, np.float64) - want.astype(np.float64))
                      <= 2 * ulp + 1e-3 * np.abs(exact).max() * 2 ** -8)
        assert "var<workgroup> As" in src
    wjax.clear_caches()


# In-workgroup split-K (``MMConfig.kg``): KG groups of the tile's threads walk 1/KG of its
# contraction each; group 0 sums the groups' tiles through workgroup memory, then stores and
# runs the epilogue.  Forced here (every product of the program) whatever the tuner would pick.
# Tiles below 64 x 64 have fewer threads (4 x 4 outputs each: 32 for 16 x 32).
KG_VARIANTS = [dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, False, 2),
               dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, False, 4),
               dot.MMConfig(0, 0, 0, 1, True, 64, 64, 32, False, 2),
               dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, True, 2),     # double-buffered
               dot.MMConfig(0, 0, 0, 1, True, 128, 128, 8, False, 2),   # two rounds of sums
               dot.MMConfig(0, 0, 0, 2, True, 64, 64, 16, False, 2),    # with split-K
               dot.MMConfig(0, 0, 0, 1, True, 16, 32, 32, False, 4),    # 32 threads a group
               dot.MMConfig(0, 0, 0, 1, True, 32, 32, 32, False, 4),
               dot.MMConfig(0, 0, 0, 1, True, 16, 64, 16, True, 2),
               dot.MMConfig(0, 0, 0, 1, True, 32, 64, 32, False, 2)]
KG_SHAPES = [(1, 64, 256, 256),      # an RNN step's
             (2, 65, 132, 40),       # K not a multiple of KG x BK; batch
             (1, 130, 67, 33),       # nothing a multiple of the tile; scalar loads
             (1, 200, 200, 5),       # K < BK: groups past the first get nothing
             (1, 8, 520, 9), (1, 64, 64, 3000), (3, 36, 33, 40), (1, 70, 45, 300)]


def _force(monkeypatch, cfg):
    monkeypatch.setattr(dot, "_mm_config", lambda target, B, M, N, K, tiled=True: cfg)


@pytest.mark.parametrize("cfg", KG_VARIANTS, ids=lambda c: c.name)
def test_workgroup_split_k(cfg, monkeypatch):
    """Each in-workgroup split-K variant against NumPy in float64: odd sizes, batches, both
    layouts of both operands (read in place), a fused tanh(x @ w + bias) epilogue."""
    _force(monkeypatch, cfg)
    rs = np.random.RandomState(7)
    wjax.clear_caches()
    with _gpu():
        for B, M, N, K in KG_SHAPES:
            a = rs.randn(B, M, K).astype(np.float32)
            b = rs.randn(B, K, N).astype(np.float32)
            bias = rs.randn(N).astype(np.float32)
            want = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
            at = np.ascontiguousarray(a.transpose(0, 2, 1))
            bt = np.ascontiguousarray(b.transpose(0, 2, 1))
            for spec, x, y in (("bmk,bkn->bmn", a, b), ("bkm,bkn->bmn", at, b),
                               ("bmk,bnk->bmn", a, bt), ("bkm,bnk->bmn", at, bt)):
                f = wjax.jit(lambda x, y, s=spec: jnp.einsum(s, x, y, precision=HI))
                _close(f(x, y), want)
            g = wjax.jit(lambda x, y, c: jnp.tanh(jnp.matmul(x, y, precision=HI) + c))
            np.testing.assert_allclose(np.asarray(g(a, b, bias), np.float64),
                                       np.tanh(want + bias), rtol=0,   # of the product's scale
                                       atol=2e-5 * max(1.0, float(np.abs(want).max())))
            text = g.lower(a, b, bias).compile().as_text()
            ty, tx = dot._tile_threads(cfg.bm, cfg.bn)
            assert f"@workgroup_size({ty * tx * cfg.kg})" in text and "grp" in text, (
                B, M, N, K)
    wjax.clear_caches()


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("kg", [2, 4])
def test_workgroup_split_k_half_precision(dt, kg, monkeypatch):
    """float16 / bfloat16 operands on the in-workgroup split variant: float32 accumulation,
    rounded once to the result's type; against the exact product and real JAX."""
    if dt == "float16" and not has_f16():
        return f16_unsupported(lambda: jnp.ones(2, np.float16) + 1)
    J = pytest.importorskip("jax")
    _force(monkeypatch, dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, False, kg))
    rs = np.random.RandomState(8)
    wjax.clear_caches()
    for M, N, K in ((64, 256, 256), (130, 67, 33), (70, 45, 300)):
        a = rs.randn(M, K).astype(np.float32).astype(dt)
        b = rs.randn(K, N).astype(np.float32).astype(dt)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        with _gpu():
            got = wjax.jit(jnp.matmul)(a, b)
            got32 = wjax.jit(lambda x, y: jnp.matmul(x, y, preferred_element_type=jnp.float32))(
                a, b)
            src = wjax.jit(jnp.matmul).lower(a, b).compile().as_text()
        assert got.dtype == np.dtype(dt) and got32.dtype == np.float32
        assert f"@workgroup_size({256 * kg})" in src
        bits = 7 if dt == "bfloat16" else 10
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(exact), 2.0 ** -14))) - bits)
        slack = 1e-3 * np.abs(exact).max() * 2 ** -8
        assert np.all(np.abs(np.asarray(got, np.float64) - exact) <= ulp + slack), (M, N, K)
        np.testing.assert_allclose(np.asarray(got32), exact, rtol=0,
                                   atol=2e-5 * max(1, np.abs(exact).max()))
        want = np.asarray(J.jit(J.numpy.matmul)(a, b)).astype(np.float64)
        assert np.all(np.abs(np.asarray(got, np.float64) - want) <= 2 * ulp + slack)
    wjax.clear_caches()


@pytest.mark.parametrize("cfg", [dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, False, 2),
                                 dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, False, 4),
                                 dot.MMConfig(0, 0, 0, 1, True, 16, 32, 32, False, 4)],
                         ids=lambda c: c.name)
def test_workgroup_split_k_rnn_step(cfg, monkeypatch):
    """The product it is for: a tanh RNN's step (64 x 256 x 256, tanh(h @ w + x + b) fused)
    inside a jitted lax.scan, against real JAX."""
    J = pytest.importorskip("jax")
    _force(monkeypatch, cfg)
    rs = np.random.RandomState(9)
    h0 = rs.randn(64, 256).astype(np.float32)
    w = (rs.randn(256, 256) / 16).astype(np.float32)
    bias = rs.randn(256).astype(np.float32)
    xs = rs.randn(6, 64, 256).astype(np.float32)

    def rnn(L, N, w, bias, xs):
        def cell(c, x):
            c = N.tanh(N.dot(c, w, precision="highest") + x + bias)
            return c, c
        return L.scan(cell, N.asarray(h0), xs)

    built, tiled_src = [], dot._tiled_src
    monkeypatch.setattr(dot, "_tiled_src", lambda *a, **k: built.append(a[8]) or tiled_src(
        *a, **k))
    wjax.clear_caches()
    with _gpu(loop_slices=1):       # the steps recorded (not one loop split into blocks of rows)
        got = wjax.jit(lambda *a: rnn(lax, jnp, *a))(w, bias, xs)
    wjax.clear_caches()
    assert built == [cfg], built                         # the step: one kernel, this variant
    want = J.jit(lambda *a: rnn(J.lax, J.numpy, *a))(w, bias, xs)
    for g, wv in zip(J.tree_util.tree_leaves(got), J.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(wv), rtol=2e-5, atol=2e-5)


def test_workgroup_split_k_forced_and_limits():
    """WJAX_MATMUL_TILE=BMxBNxBKgKG forces it where the target holds KG groups (workgroup
    memory, invocations), else the tile alone; its name is the tuner's candidate name."""
    t = Target.for_profile("nvidia")
    c = dot._tile_config(t.replace(matmul_tile="64x64x16g4"), 1, 64, 256, 256)
    assert (c.bm, c.bn, c.bk, c.kg, c.s) == (64, 64, 16, 4, 1) and c.name == "t64x64x16s1g4"
    assert dot._tile_config(t.replace(matmul_tile="64x64x16"), 1, 64, 256, 256).kg == 1
    # 4 x (64 + 64) x 32 x 4 bytes = 64 KiB > 48 KiB: the tile, unsplit
    c = dot._tile_config(t.replace(matmul_tile="64x64x32g4"), 1, 64, 256, 256)
    assert (c.bk, c.kg) == (32, 1)
    small = Target.for_profile("webgpu-default")     # 256 invocations, 16 KiB
    assert dot._tile_config(small.replace(matmul_tile="64x64x16g2"), 1, 64, 256, 256).kg == 1
    assert not dot._tile_fits(small, 64, 64, 16, 2)
    assert dot._tile_fits(t, 64, 64, 16, 4) and not dot._tile_fits(t, 64, 64, 16, 4, True)
    assert dot._tile_config(t, 1, 64, 256, 256).kg == 1          # the rule never splits so
    # forced through the option (WJAX_MATMUL_TILE) end to end
    a = RS.randn(64, 256).astype(np.float32)
    w = RS.randn(256, 256).astype(np.float32)
    wjax.clear_caches()
    with _gpu("64x64x16g2"):
        f = wjax.jit(lambda x, y: jnp.matmul(x, y, precision=HI))
        text = f.lower(a, w).compile().as_text()
        _close(f(a, w), a.astype(np.float64) @ w)
    wjax.clear_caches()
    assert "@workgroup_size(512)" in text


def _kernels(f, *args):
    """The lowered kernels of jitted ``f``: (its tiled matmul kernels, the others)."""
    ks = wjax.jit(f).lower(*args).as_text().split("// ---- kernel")[1:]
    return ([k for k in ks if "var<workgroup> As" in k],
            [k for k in ks if "var<workgroup> As" not in k])


def _f64(*xs):
    return [np.asarray(x, np.float64) for x in xs]


# Products whose operand the tiled kernel cannot read from a buffer in place, the other
# operand at most two 64-wide tiles (``dot.INLINE_TILES``): name -> (program, operand
# shapes, its value in float64, which operands the kernel reads through a reader function)
INLINE = {
    "relu(h + b) @ w": (lambda h, b, w: jnp.dot(jnp.maximum(h + b, 0), w, precision=HI),
                        [(130, 67), (67,), (67, 20)],
                        lambda h, b, w: np.maximum(h + b, 0) @ w, "A"),
    "a @ (w * s), k-first": (lambda a, w, s: jnp.dot(a, w * s, precision=HI),
                             [(24, 90), (90, 133), (133,)],
                             lambda a, w, s: a @ (w * s), "B"),
    "a @ (c v).T": (lambda a, v, c: jnp.dot(a, (c * v).T, precision=HI),
                    [(36, 70), (150, 70), (150, 1)],
                    lambda a, v, c: a @ (c * v).T, "B"),
    "batch axis last": (lambda q, k: jnp.einsum("qdb,bkd->bqk", q, k, precision=HI),
                        [(45, 36, 3), (3, 40, 36)],
                        lambda q, k: np.einsum("qdb,bkd->bqk", q, k), "A"),
    "both": (lambda x, y: jnp.dot(jnp.abs(x) - 1, jnp.transpose(y * 2, (1, 0)), precision=HI),
             [(50, 300), (60, 300)], lambda x, y: (np.abs(x) - 1) @ (2 * y).T, "AB"),
}


# Products whose operands a buffer holds with their free or contracted axes contiguous, the
# other axes at a stride and the batch axes anywhere (``dot.Layout``): the tiled kernel reads
# them in place.  name -> (einsum, operand shapes); sizes odd (scalar loads) and multiples of
# 4 (vec4 loads), axes of size 1, transposed operands.
STRIDED = {
    "flax scores bqhd,bkhd": ("bqhd,bkhd->bhqk", [(2, 70, 3, 16), (2, 60, 3, 16)]),
    "flax values bhqk,bkhd": ("bhqk,bkhd->bqhd", [(2, 3, 37, 64), (2, 64, 3, 16)]),
    "odd heads bqhd,bkhd": ("bqhd,bkhd->bhqk", [(2, 70, 3, 13), (2, 66, 3, 13)]),
    "odd values bhqk,bkhd": ("bhqk,bkhd->bqhd", [(1, 2, 40, 130), (1, 130, 2, 9)]),
    "batch inside qbd,bkd": ("qbd,bkd->bqk", [(45, 3, 36), (3, 40, 36)]),
    "batch inside, k-first": ("bkq,kbn->bqn", [(3, 36, 44), (36, 3, 52)]),
    "size-1 axes": ("bqhd,bkhd->bhqk", [(1, 80, 1, 12), (1, 50, 1, 12)]),
    "two free axes": ("bxyd,bdh->bxyh", [(2, 7, 9, 24), (2, 24, 40)]),
}


@pytest.mark.parametrize("name", list(STRIDED))
def test_strided_operands_are_read_in_place(name):
    """One tiled kernel, no copy and no reader function, JAX's values; and the same product's
    gradients and its vmap (strided operands again) agree with JAX."""
    spec, shapes = STRIDED[name]
    args = [RS.randn(*sh).astype(np.float32) for sh in shapes]
    J = rjax()

    def f(M):
        return lambda a, b: M.einsum(spec, a, b, precision="highest")
    wjax.clear_caches()
    with _gpu("64x64x16"):
        got = wjax.jit(f(jnp))(*args)
        tiled, others = _kernels(f(jnp), *args)
        loss = (lambda M: lambda a, b: (f(M)(a, b) ** 2).sum())
        grads = wjax.jit(wjax.grad(loss(jnp), argnums=(0, 1)))(*args)
        batched = wjax.jit(wjax.vmap(f(jnp), in_axes=(0, None)))(
            np.stack([args[0], 2 * args[0]]), args[1])
    wjax.clear_caches()
    _close(got, np.einsum(spec, *_f64(*args)))
    assert len(tiled) == 1 and not others, (len(tiled), others)
    assert "fn wj_rd" not in tiled[0]
    want = J.jit(J.grad(loss(J.numpy), argnums=(0, 1)))(*args)
    for g, w in zip(grads, want):
        _close(g, np.asarray(w, np.float64))
    _close(batched, np.stack([np.einsum(spec, *_f64(*args)),
                              np.einsum(spec, *_f64(2 * args[0], args[1]))]))


# copies the register-blocked kernel (CPU adapters) still makes: B is read in place only
# k-first, as vec4 rows (its rows and batches at multiples of 4, N a multiple of 4)
STRIDED_COPIES = {"flax scores bqhd,bkhd": 1, "flax values bhqk,bkhd": 0,
                  "odd heads bqhd,bkhd": 1, "odd values bhqk,bkhd": 1,
                  "batch inside qbd,bkd": 1, "batch inside, k-first": 0, "size-1 axes": 1,
                  "two free axes": 0}


@pytest.mark.parametrize("name", list(STRIDED))
def test_strided_operands_on_the_register_blocked_kernel(name):
    """The CPU adapters' kernel reads A in any ``dot.Layout`` in place, and B where it is
    k-first and vec4-aligned; the values are NumPy's."""
    spec, shapes = STRIDED[name]
    args = [RS.randn(*sh).astype(np.float32) for sh in shapes]

    def f(a, b):
        return jnp.einsum(spec, a, b, precision="highest")
    wjax.clear_caches()
    with runtime.get().options(**profiles.CPU_STRATEGIES):
        got = wjax.jit(f)(*args)
        ks = wjax.jit(f).lower(*args).as_text().split("// ---- kernel")[1:]
    wjax.clear_caches()
    _close(got, np.einsum(spec, *_f64(*args)))
    products = [k for k in ks if "register-blocked" in k or "RM x (4*V)" in k]
    assert len(products) == 1, ks
    assert len(ks) == 1 + STRIDED_COPIES[name], ks


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_strided_half_precision_operands(dt):
    """float16 (vec4<f16> loads at the strides) and bfloat16 heads in the (b, s, h, d)
    layout, read in place by the tiled kernel, accumulated in float32 with the result
    as float32: the exact products of the rounded inputs."""
    if dt == "float16" and not has_f16():
        return f16_unsupported(lambda: jnp.ones(2, np.float16) + 1)
    rs = np.random.RandomState(6)
    q = rs.randn(2, 70, 3, 16).astype(np.float32).astype(dt)
    k = rs.randn(2, 60, 3, 16).astype(np.float32).astype(dt)

    def f(a, b):
        return jnp.einsum("bqhd,bkhd->bhqk", a, b, preferred_element_type=jnp.float32)
    wjax.clear_caches()
    with _gpu("64x64x16"):
        got = wjax.jit(f)(q, k)
        tiled, others = _kernels(f, q, k)
    wjax.clear_caches()
    assert got.dtype == np.float32 and len(tiled) == 1 and not others, others
    _close(got, np.einsum("bqhd,bkhd->bhqk", *_f64(q, k)))


def test_views_of_a_product_are_read_in_place():
    """A product's result read through views that have no buffer of their own -- a
    reshape, an expand_dims, a squeeze, then a transpose -- by a second product wider than
    the inline reads allow: its buffer read in place, no copy."""
    rs = np.random.RandomState(8)
    a, w = rs.randn(48, 40).astype(np.float32), rs.randn(40, 96).astype(np.float32)
    z, u = rs.randn(1, 96, 200).astype(np.float32), rs.randn(48, 200).astype(np.float32)

    def f(a, w, z, u):
        h = jnp.dot(a, w, precision=HI)                       # (48, 96)
        y = jnp.einsum("bmk,bkn->bmn", h[None], z, precision=HI)        # expand_dims
        r = jnp.dot(h.reshape(48, 96)[:, :, None][..., 0].T, u, precision=HI)  # squeeze, .T
        return y, r
    wjax.clear_caches()
    with _gpu("64x64x16"):
        got = wjax.jit(f)(a, w, z, u)
        tiled, others = _kernels(f, a, w, z, u)
    wjax.clear_caches()
    assert len(tiled) == 3 and not others, others
    h = a.astype(np.float64) @ w
    _close(got[0], h[None] @ z)
    _close(got[1], h.T @ u)


def test_strided_layouts():
    """``dot.Layout`` of an operand in a buffer: which layouts the tiled kernel reads in place
    (one group of axes contiguous, the other at one stride), and their base offsets."""
    lay = dot._strided_layout((2, 37, 3, 16), (0, 1, 2, 3), (0, 2), (1,), (3,))
    assert lay == dot.Layout(False, 48, (2, 3), (37 * 48, 16))
    assert lay.base("b") == "(b % 3u) * 16u + (b / 3u) * 1776u" and lay.aligned()
    # v of "bhqk,bkhd->bhqd": free d contiguous, keys 3 * 16 apart
    assert dot._strided_layout((2, 29, 3, 16), (0, 1, 2, 3), (0, 2), (3,), (1,)) == \
        dot.Layout(True, 48, (2, 3), (29 * 48, 16))
    # batch axes that nest merge into one term; a packed copy is one layout of them
    assert dot.Layout(False, 8, (4, 5), (40, 8)).base("b") == "b * 8u"
    assert dot.Layout.packed(True, 6, 10, 7) == dot.Layout(True, 10, (6,), (70,))
    assert dot.Layout(False, 6, (1, 5), (99, 7)).base("b") == "b * 7u"
    assert not dot.Layout(False, 6, (2,), (12,)).aligned()
    # free and contracted axes both strided, or a group that does not flatten: no layout
    assert dot._strided_layout((45, 36, 3), (0, 1, 2), (2,), (0,), (1,)) is None
    assert dot._strided_layout((4, 5, 6), (0, 1, 2), (), (0, 2), (1,)) is None
    # transposed buffers: x.T's axes in the order (1, 0)
    assert dot._strided_layout((8, 12), (1, 0), (), (0,), (1,)) == dot.Layout(True, 8, (), ())


@pytest.mark.parametrize("reads", ["inline", "copy"])
@pytest.mark.parametrize("name", list(INLINE))
def test_operands_read_inline_or_copied(name, reads):
    """An operand the tiled kernel cannot read in place (fused producers, another layout) is
    read through its reader function ``wj_rdA``/``wj_rdB`` in the kernel's loads
    (``Target.operand_reads`` "inline", the GPU default) or computed first by a fused kernel
    ("copy": one kernel makes both of "both"'s operands); rows and contractions not
    multiples of 4 or of the tile."""
    f, shapes, ref, which = INLINE[name]
    args = [RS.randn(*sh).astype(np.float32) for sh in shapes]
    wjax.clear_caches()
    with _gpu("64x64x16", operand_reads=reads):
        got = wjax.jit(f)(*args)
        tiled, others = _kernels(f, *args)
    wjax.clear_caches()
    _close(got, ref(*_f64(*args)))
    assert len(tiled) == 1, tiled
    for op in "AB":
        assert (f"fn wj_rd{op}" in tiled[0]) == (reads == "inline" and op in which), name
    assert len(others) == (0 if reads == "inline" else 1), others


def test_inline_reads_stop_at_wide_products_and_binding_limits():
    """Inline reads recompute an operand's producers for each tile of the other operand, so
    past ``dot.INLINE_TILES`` tiles the operand is copied (an MLP's hidden layer); and a
    kernel whose reader would bind more buffers than the adapter allows takes the copy
    (which binds one fewer: it writes its own output, not the product's)."""
    h, b = RS.randn(100, 40).astype(np.float32), RS.randn(40).astype(np.float32)
    wide, narrow = RS.randn(40, 200).astype(np.float32), RS.randn(40, 24).astype(np.float32)
    f = lambda h, b, w: jnp.dot(jnp.maximum(h + b, 0), w, precision=HI)   # noqa: E731
    wjax.clear_caches()
    with _gpu("64x64x16"):
        for w, inline in ((wide, False), (narrow, True)):
            tiled, others = _kernels(f, h, b, w)
            assert ("fn wj_rdA" in tiled[0]) == inline and len(others) == (not inline)
            _close(wjax.jit(f)(h, b, w), np.maximum(h + b, 0).astype(np.float64) @ w)
        n = int(runtime.get().target()["max-storage-buffers-per-shader-stage"]) - 1
        xs = [RS.randn(70, 24).astype(np.float32) for _ in range(n)]
        g = lambda w, *xs: jnp.dot(sum(xs[1:], xs[0]), w, precision=HI)   # noqa: E731
        tiled, others = _kernels(g, narrow.T.copy(), *xs)
        assert "fn wj_rdA" not in tiled[0] and len(others) == 1, others
        _close(wjax.jit(g)(narrow.T.copy(), *xs), sum(_f64(*xs)) @ narrow.T)
    wjax.clear_caches()


TRANSPOSED = {
    "x.T @ y": (lambda x, y: jnp.matmul(x.T, y, precision=HI), [(130, 67), (130, 90)],
                lambda x, y: x.T @ y),
    "x @ y.T": (lambda x, y: jnp.matmul(x, y.T, precision=HI), [(67, 130), (90, 130)],
                lambda x, y: x @ y.T),
    "batched swapaxes": (lambda x, y: jnp.matmul(jnp.swapaxes(x, 1, 2), y, precision=HI),
                         [(3, 40, 33), (3, 40, 50)],
                         lambda x, y: np.swapaxes(x, 1, 2) @ y),
    "both, twice transposed": (lambda x, y: jnp.matmul(x.T.T, jnp.transpose(y), precision=HI),
                               [(70, 36), (80, 36)], lambda x, y: x @ y.T),
}


@pytest.mark.parametrize("name", list(TRANSPOSED))
def test_transposed_operands_are_read_in_place(name):
    """An operand that is a transpose of a value with a buffer (``x.T @ y``, ``q @ k.T``) is
    read from that buffer in place when its order there is one the tiled kernel reads
    (``dot._held``): one kernel, no copy, whatever the width; the values and gradients
    against NumPy and real JAX."""
    J = pytest.importorskip("jax")
    f, shapes, ref = TRANSPOSED[name]
    args = [RS.randn(*sh).astype(np.float32) for sh in shapes]
    loss = lambda *a: jnp.sum(jnp.tanh(f(*a)))   # noqa: E731
    wjax.clear_caches()
    with _gpu("64x64x16"):
        got = wjax.jit(f)(*args)
        grads = wjax.jit(wjax.grad(loss, argnums=(0, 1)))(*args)
        tiled, others = _kernels(f, *args)
    wjax.clear_caches()
    assert len(tiled) == 1 and not others, others
    assert "fn wj_rd" not in tiled[0]
    _close(got, ref(*_f64(*args)))
    jf = {"x.T @ y": lambda x, y: x.T @ y, "x @ y.T": lambda x, y: x @ y.T,
          "batched swapaxes": lambda x, y: J.numpy.swapaxes(x, 1, 2) @ y,
          "both, twice transposed": lambda x, y: x @ y.T}[name]
    want = J.grad(lambda *a: J.numpy.sum(J.numpy.tanh(jf(*a))), argnums=(0, 1))(*args)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-4)


# How a random product's operands reach the tiled kernel: stored in a layout (the logical
# operand is a transpose of it), then a producer fused into the product's read
# stored axes of [B, M, K] / [B, K, N]: packed either way round, batch axis inside (rows at a
# stride: ``dot.Layout``, read in place), batch axis last (a copy or a reader)
_A_LAYOUTS = {"mk": (0, 1, 2), "km": (0, 2, 1), "batch inside": (1, 0, 2),
              "k b m": (2, 0, 1), "batch last": (1, 2, 0)}
_B_LAYOUTS = {"kn": (0, 1, 2), "nk": (0, 2, 1), "batch inside": (1, 0, 2),
              "n b k": (2, 0, 1), "batch last": (1, 2, 0)}
_PRODUCERS = {
    "none": (lambda m, x, c: x),
    "relu(x + c)": (lambda m, x, c: m.maximum(x + c, 0)),
    "2 x - 1": (lambda m, x, c: 2 * x - 1),
    "exp(x / 8)": (lambda m, x, c: m.exp(x / 8)),
}

# What follows the product: its epilogue, stored where the product is or transposed, the
# product itself stored or not
_CONSUMERS = {
    "none": (lambda m, y, c: (y,)),
    "relu(y + c)": (lambda m, y, c: (m.maximum(y + c, 0),)),
    "output order (n, b, m)": (lambda m, y, c: (m.transpose(y, (2, 0, 1)),)),
    "relu of the transpose, doubled": (lambda m, y, c: (m.maximum(m.transpose(y, (0, 2, 1)),
                                                                  0) * 2,)),
    "the product and its relu": (lambda m, y, c: (y, m.maximum(y, 0))),
}


@examples(10)
@given(st.integers(1, 3), st.integers(8, 150), st.integers(8, 150), st.integers(8, 150),
       st.sampled_from(sorted(_A_LAYOUTS)), st.sampled_from(sorted(_B_LAYOUTS)),
       st.sampled_from(sorted(_PRODUCERS)), st.sampled_from(sorted(_PRODUCERS)),
       st.sampled_from(["inline", "copy"]), st.sampled_from(sorted(dot.TILES)),
       st.sampled_from(sorted(_CONSUMERS)), st.sampled_from(["", "x", "y", "xy"]))
def test_random_products_read_their_operands_like_numpy(B, M, N, K, la, lb, pa, pb, reads,
                                                        tile, consumer, returned):
    """Random batched products on the tiled kernel whose operands are stored in any of five
    layouts and computed by a fused producer: read in place (packed or strided), through
    transposes, inline or from (shared) copies, under either ``operand_reads``, followed by
    a consumer (an epilogue, transposed or not, the product stored or not), the operands
    returned too or not (a returned fused operand: computed and stored by the product) --
    against NumPy in float64."""
    assume(B * M * N * K >= 32768)
    rs = np.random.RandomState(B * 7 + M * 13 + N * 17 + K)
    perm_a, perm_b = _A_LAYOUTS[la], _B_LAYOUTS[lb]
    a = rs.randn(*[(B, M, K)[d] for d in perm_a]).astype(np.float32)
    b = rs.randn(*[(B, K, N)[d] for d in perm_b]).astype(np.float32)
    ca, cb = rs.randn(K).astype(np.float32), rs.randn(N).astype(np.float32)

    def f(m, a, b, ca, cb):      # the stored operands transposed back to [B, M, K], [B, K, N]
        x = _PRODUCERS[pa](m, m.transpose(a, np.argsort(perm_a)), ca)
        y = _PRODUCERS[pb](m, m.transpose(b, np.argsort(perm_b)), cb)
        return x, y
    then = _CONSUMERS[consumer]

    def program(m, *v, **kw):
        x, y = f(m, *v)
        return then(m, m.einsum("bmk,bkn->bmn", x, y, **kw), v[3]) + tuple(
            z for name, z in (("x", x), ("y", y)) if name in returned)
    want = program(np, *_f64(a, b, ca, cb))
    wjax.clear_caches()
    with _gpu(tile, operand_reads=reads):
        got = wjax.jit(lambda *v: program(jnp, *v, precision=HI))(a, b, ca, cb)
    wjax.clear_caches()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _close(g, w)


def test_products_share_an_operand_copy():
    """Two products reading one fused value the kernel cannot read inline -- an activation,
    once as a layer's input and once contracted over its rows for a weight gradient (as a
    backward pass binds it) -- share one buffer of it, written once in the value's own order
    (given a buffer at planning, ``dot._materialize_inputs``; a vec4 kernel: 4 a thread),
    which the tiled kernel reads rows-first for one product and k-first for the other."""
    h, b = RS.randn(64, 300).astype(np.float32), RS.randn(300).astype(np.float32)
    w, g = RS.randn(300, 200).astype(np.float32), RS.randn(64, 200).astype(np.float32)

    def f(h, b, w, g):
        r = jnp.maximum(h + b, 0)
        return jnp.dot(r, w, precision=HI), lax.dot_general(r, g, (((0,), (0,)), ((), ())),
                                                            precision=HI)
    wjax.clear_caches()
    with _gpu("64x64x16"):
        got = wjax.jit(f)(h, b, w, g)
        tiled, others = _kernels(f, h, b, w, g)
    wjax.clear_caches()
    assert len(tiled) == 2 and len(others) == 1, others
    assert "array<vec4<f32>>" in others[0]                 # a straight copy, 4 a thread
    r = np.maximum(h.astype(np.float64) + b, 0)
    _close(got[0], r @ w)
    _close(got[1], r.T @ g)


@pytest.mark.parametrize("K", [300, 3000])          # 3000: a contraction split 2 ways
def test_a_product_only_its_epilogue_reads_is_not_stored(K):
    """A product whose every reader is its fused epilogue (a layer's ``relu(x @ w + b)``, the
    product itself read by nothing else) stores only what the epilogue computes: the kernel
    writes one buffer (with a split contraction: the sum of the parts, which writes one
    buffer too).  Where the product is also read elsewhere -- a program output, a reduction's
    kernel, a backward pass -- it is stored as well.  Values against NumPy and real JAX."""
    J = pytest.importorskip("jax")
    x, w = RS.randn(64, K).astype(np.float32), (RS.randn(K, 128) / 30).astype(np.float32)
    b = RS.randn(128).astype(np.float32)
    y = x.astype(np.float64) @ w
    r = np.maximum(y + b, 0)
    cases = [  # (program, numpy reference, buffers the product's kernels write)
        (lambda x, w, b: jnp.maximum(jnp.dot(x, w, precision=HI) + b, 0), r, 1),
        (lambda x, w, b: (lambda y: (y, jnp.maximum(y + b, 0)))(jnp.dot(x, w, precision=HI)),
         (y, r), 2),
        (lambda x, w, b: (lambda y: (jnp.maximum(y + b, 0), y.sum(0)))(
            jnp.dot(x, w, precision=HI)), (r, y.sum(0)), 2),
    ]
    wjax.clear_caches()
    with _gpu("64x64x16"):
        for f, want, writes in cases:
            got = wjax.jit(f)(x, w, b)
            for g, v in zip(got if isinstance(want, tuple) else [got],
                            want if isinstance(want, tuple) else [want]):
                _close(g, v)
            tiled, others = _kernels(f, x, w, b)
            assert len(tiled) == 1
            last = tiled if K == 300 else [k for k in others if "acc0 + " in k]
            assert len(last) == 1 and last[0].count("read_write>") == writes, last
        loss = lambda w, x, b: jnp.sum(jnp.maximum(jnp.dot(x, w, precision=HI) + b, 0) ** 2)
        got = wjax.jit(wjax.value_and_grad(loss))(w, x, b)
    wjax.clear_caches()
    want = J.jit(J.value_and_grad(lambda w, x, b: J.numpy.sum(
        J.numpy.maximum(J.numpy.dot(x, w, precision="highest") + b, 0) ** 2)))(w, x, b)
    np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=2e-5)
    _close(got[1], np.asarray(want[1], np.float64))


def test_wide_layers_store_their_activations_for_the_next_product():
    """A hidden layer too wide for inline reads (300 features against the next layer's 300)
    stores ``relu(x @ w1 + b1)`` from its product's epilogue, where the next product and the
    weight gradient read it in place (``dot._materialize_inputs``); the backward pass's
    masked cotangent likewise, by the epilogue of the product making the cotangent, which
    then is not stored itself.  No kernel copies an operand.  The step against real JAX."""
    J = pytest.importorskip("jax")
    x, w1, w2, w3 = (RS.randn(64, 200).astype(np.float32),
                     (RS.randn(200, 300) / 14).astype(np.float32),
                     (RS.randn(300, 300) / 17).astype(np.float32),
                     (RS.randn(300, 10) / 17).astype(np.float32))
    b1, b2 = RS.randn(300).astype(np.float32), RS.randn(300).astype(np.float32)

    def loss(m, w1, b1, w2, b2, w3, x):
        h = m.nn.relu(m.numpy.dot(x, w1, precision="highest") + b1)
        h = m.nn.relu(m.numpy.dot(h, w2, precision="highest") + b2)
        return m.numpy.sum(m.numpy.tanh(m.numpy.dot(h, w3, precision="highest")) ** 2)
    args = (w1, b1, w2, b2, w3, x)
    f = lambda *a: wjax.value_and_grad(lambda *p: loss(wjax, *p), argnums=range(5))(*a)  # noqa: E731
    wjax.clear_caches()
    with _gpu("64x64x16"):
        steps = wjax.jit(f).lower(*args).compile().plan.steps
        got = wjax.jit(f)(*args)
    wjax.clear_caches()
    first = steps[0].wgsl                         # h1 and relu(h1 + b1)
    assert "var<workgroup> As" in first and first.count("read_write>") == 2, first
    products = [s for s in steps if s.label.startswith("dot_general")]
    assert all("var<workgroup> As" in s.wgsl for s in products), [s.label for s in steps]
    # the masked cotangent of layer 2, stored instead of the product that makes it
    assert any("select_n" in s.label and s.wgsl.count("read_write>") == 1 for s in products)
    want = J.jit(lambda *a: J.value_and_grad(lambda *p: loss(J, *p), argnums=range(5))(*a))(
        *args)
    for g, r in zip(J.tree_util.tree_leaves(got), J.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("K", [40, 3000])           # 3000: a contraction split 2 ways
def test_transposed_results_are_stored_by_the_product(K):
    """A product's consumer that reads it through transposes -- ``(x @ w).T``, an einsum
    whose output order is not the product's, a relu of a transposed product of the same
    (square) shape -- is the product's epilogue, stored at its own position
    (``KernelContext._transposed_position``): one kernel (or the split's two), where a
    transposing kernel followed.  A consumer reading the product at two positions
    (``y + y.T``) is not: it keeps its own kernel.  Against NumPy in float64."""
    x, w = RS.randn(64, K).astype(np.float32), (RS.randn(K, 64) / 30).astype(np.float32)
    a, c = RS.randn(3, 40, K).astype(np.float32), RS.randn(3, K, 24).astype(np.float32)
    y = x.astype(np.float64) @ w
    ac = np.einsum("bmk,bkn->bmn", a.astype(np.float64), c)
    cases = [  # (program, arguments, NumPy's value, kernels)
        (lambda x, w: jnp.dot(x, w, precision=HI).T, (x, w), y.T, 1),
        (lambda x, w: jnp.maximum(jnp.dot(x, w, precision=HI), 0).T * 2, (x, w),
         np.maximum(y, 0).T * 2, 1),
        (lambda a, c: jnp.einsum("bmk,bkn->nbm", a, c, precision=HI), (a, c),
         ac.transpose(2, 0, 1), 1),
        (lambda x, w: (lambda y: y + y.T)(jnp.dot(x, w, precision=HI)), (x, w), y + y.T, 2),
    ]
    wjax.clear_caches()
    with _gpu("64x64x16"):
        for f, args, want, kernels in cases:
            _close(wjax.jit(f)(*args), want)
            tiled, others = _kernels(f, *args)
            assert len(tiled) == 1
            assert len(others) == kernels - 1 + (K == 3000), others
    wjax.clear_caches()


@pytest.mark.parametrize("forms", ["own", "gpu"])
def test_a_shared_copy_is_not_taken_from_a_dropped_attempt(forms):
    """A product first lowered with a fused epilogue that does not fit (its bias is a
    reduction computed at the product's own level) is lowered again without it; the copy of
    its operand made by the dropped attempt is gone with it, so the second attempt copies
    again rather than reading a buffer nothing wrote (a shared copy had been taken from it:
    the shard_map tutorial's pipeline lost 1.3 of its 11.9 loss)."""
    s = RS.randn(2, 8, 128).astype(np.float32)
    w = (RS.randn(2, 128, 128) / 11).astype(np.float32)

    def f(s, w):
        c = jnp.sum(s, axis=1, keepdims=True)
        return wjax.nn.relu(jnp.einsum("bmk,bkn->bmn", s * 2 + 1, w, precision=HI) + c)
    wjax.clear_caches()
    with (_gpu() if forms == "gpu" else runtime.get().options()):
        got = wjax.jit(f)(s, w)
    wjax.clear_caches()
    s64 = s.astype(np.float64)
    _close(got, np.maximum(np.einsum("bmk,bkn->bmn", s64 * 2 + 1, w) + s64.sum(1, keepdims=True),
                           0))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_inline_reads_of_half_precision_operands(dt):
    """A half-precision operand's producers read inline, converted to float32 in the reader
    (float16 where the adapter has shader-f16; bfloat16 from its f32 lanes): the product
    rounds once, as the copy's."""
    a = RS.randn(70, 45).astype(np.float32).astype(dt)
    w = RS.randn(45, 30).astype(np.float32).astype(dt)
    f = lambda a, w: jnp.matmul(jnp.maximum(a, 0) * 2, w)   # noqa: E731
    if dt == "float16" and not has_f16():      # wgpu's GL backend
        return f16_unsupported(lambda: wjax.jit(f)(a, w))
    got = {}
    for reads in ("inline", "copy"):
        wjax.clear_caches()
        with _gpu("64x64x16", operand_reads=reads):
            got[reads] = np.asarray(wjax.jit(f)(a, w), np.float64)
            tiled, _ = _kernels(f, a, w)
            assert ("fn wj_rdA" in tiled[0]) == (reads == "inline")
    wjax.clear_caches()
    np.testing.assert_array_equal(got["inline"], got["copy"])
    exact = (np.maximum(a.astype(np.float64), 0) * 2) @ w.astype(np.float64)
    np.testing.assert_allclose(got["inline"], exact, rtol=2 ** -7, atol=1e-2)


@pytest.mark.parametrize("cfg", [dot.MMConfig(0, 0, 0, 2, True, 64, 64, 16),
                                 dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, False, 2),
                                 dot.MMConfig(0, 0, 0, 1, True, 64, 64, 16, True)],
                         ids=lambda c: c.name)
def test_inline_reads_under_split_contractions(cfg, monkeypatch):
    """Split-K (a partial product per split), thread groups splitting the contraction inside
    the workgroup and double-buffered slabs each read their part of an inline operand."""
    _force(monkeypatch, cfg)
    h, b = RS.randn(70, 300).astype(np.float32), RS.randn(300).astype(np.float32)
    w = RS.randn(300, 36).astype(np.float32)
    f = lambda h, b, w: jnp.tanh(jnp.dot(jnp.maximum(h - b, 0), w, precision=HI))   # noqa: E731
    wjax.clear_caches()
    with _gpu():
        got = wjax.jit(f)(h, b, w)
        tiled, _ = _kernels(f, h, b, w)
    wjax.clear_caches()
    assert "fn wj_rdA" in tiled[0]
    _close(got, np.tanh(np.maximum(h.astype(np.float64) - b, 0) @ w))


@pytest.mark.parametrize("reads", ["inline", "copy"])
def test_operand_reads_in_a_training_step_against_jax(reads):
    """An MLP step whose layers read relu(x @ w1 + b1) inline (narrow products) or, under
    "copy", from the buffer the product making x @ w1 stores it in (its epilogue: no copy
    kernel, ``dot._materialize_inputs``); padded rows stay zeros.  The step and its
    gradients against real JAX, in both forms."""
    rjax = pytest.importorskip("jax")
    x, w1, w2 = (RS.randn(96, 80).astype(np.float32), RS.randn(80, 64).astype(np.float32),
                 RS.randn(64, 20).astype(np.float32))
    b1 = RS.randn(64).astype(np.float32)

    def loss(J, w1, b1, w2, x):
        h = J.nn.relu(J.numpy.dot(x, w1, precision="highest") + b1)
        return J.numpy.sum(J.numpy.tanh(J.numpy.dot(h, w2, precision="highest")) ** 2)
    f = lambda *a: wjax.value_and_grad(lambda *p: loss(wjax, *p), argnums=(0, 1, 2))(*a)  # noqa: E731
    wjax.clear_caches()
    with _gpu(operand_reads=reads):
        text = wjax.jit(f).lower(w1, b1, w2, x).as_text()
        copies = [k for k in text.split("// ---- kernel")[1:]
                  if "workgroup>" not in k and "RState" not in k and "RS0" not in k
                  and "wj_max_f" in k]               # the copies of relu(x @ w1 + b1)
        if reads == "copy":
            first = text.split("// ---- kernel")[1]
            assert not copies and "fn wj_rd" not in text, text
            assert "var<workgroup> As" in first and "wj_max_f" in first, first
        else:
            assert not copies and "fn wj_rdA" in text, text
        got = wjax.jit(f)(w1, b1, w2, x)
    want = rjax.jit(lambda *a: rjax.value_and_grad(lambda *p: loss(rjax, *p),
                                                   argnums=(0, 1, 2))(*a))(w1, b1, w2, x)
    for g, r in zip(rjax.tree_util.tree_leaves(got), rjax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=2e-4, atol=2e-3)
    wjax.clear_caches()


@pytest.mark.parametrize("fused_attention", [False, True])
@pytest.mark.parametrize("h,d", [(4, 16), (8, 32)])
def test_a_flax_attention_layer_reads_its_heads_in_place(fused_attention, h, d):
    """flax's attention layer -- projections ``(x @ w).reshape(b, s, h, d)``, the einsums
    ``bqhd,bkhd->bhqk`` and ``bhqk,bkhd->bqhd``, the output projection -- under the GPU
    forms: no broadcast of the weights (``x @ w`` is one product), no copy of the heads (the
    products and the attention kernel read them in place at their strides), the attention
    output stored in (b, s, h, d) by its own kernel -- and, where the output projection is
    too wide to read it inline (h * d = 256: four 64-wide tiles), merged into (b, s, h * d)
    there too; JAX's loss and gradients."""
    b, s = 2, 40
    rs = np.random.RandomState(3)
    x = rs.randn(b, s, h * d).astype(np.float32)
    ws = [(rs.randn(h * d, h * d) * 0.1).astype(np.float32) for _ in range(4)]
    J = rjax()

    def layer(M, nn):
        def f(ws, x):
            q, k, v = [(x @ w).reshape(b, s, h, d) for w in ws[:3]]
            sc = M.einsum("bqhd,bkhd->bhqk", q, k, precision="highest") / np.sqrt(d)
            o = M.einsum("bhqk,bkhd->bqhd", nn.softmax(sc, axis=-1), v, precision="highest")
            return ((o.reshape(b, s, h * d) @ ws[3]) ** 2).mean()
        return f
    opts = {"attention": 64, "threads": 16} if fused_attention else {"attention": 0}
    wjax.clear_caches()
    with _gpu("64x64x16", **opts):
        f = layer(jnp, wjax.nn)
        labels = [getattr(st_, "label", "host")
                  for st_ in wjax.jit(f).lower(ws, x).compile().plan.steps]
        got = wjax.jit(wjax.value_and_grad(f))(ws, x)
    wjax.clear_caches()
    products = [lb for lb in labels if lb.startswith("dot_general")]
    # three projections, the output projection (reading the heads' reshape inline), and
    # the two einsums or the attention kernel
    assert len(products) == (4 if fused_attention else 6), labels
    assert not any("broadcast_in_dim" in lb for lb in labels), labels
    # ... then the softmax's row group or the attention kernel, and the loss's reduction:
    # no copy kernel
    assert len(labels) == len(products) + 2, labels
    want = J.value_and_grad(layer(J.numpy, J.nn))(ws, x)
    np.testing.assert_allclose(float(got[0]), float(want[0]), rtol=2e-5)
    for g, w in zip(got[1], want[1]):
        _close(g, np.asarray(w, np.float64))


# (program, operand shapes, its values in float64, kernels under the GPU forms): a fused value
# that the program also returns, read by a product at most ``dot.STORE_TILES`` tiles wide
STORED = {
    "rows-first": (lambda g, c, r, w: ((g + c) * r, jnp.dot((g + c) * r, w.T, precision=HI)),
                   [(70, 130), (70, 130), (70, 130), (90, 130)],
                   lambda g, c, r, w: ((g + c) * r, ((g + c) * r) @ w.T), 1),
    "k-first, odd": (lambda g, c, r, w: (jnp.tanh(g) * c, lax.dot_general(
                         jnp.tanh(g) * c, w, (((0,), (0,)), ((), ())), precision=HI)),
                     [(37, 45), (37, 45), (1,), (37, 101)],
                     lambda g, c, r, w: (np.tanh(g) * c, (np.tanh(g) * c).T @ w), 1),
    "B side, batched": (lambda g, c, r, w: (g - c, jnp.einsum("bmk,bkn->bmn", w, g - c,
                                                               precision=HI)),
                        [(3, 40, 50), (3, 40, 50), (1,), (3, 66, 40)],
                        lambda g, c, r, w: (g - c, np.einsum("bmk,bkn->bmn", w, g - c)), 1),
    "split contraction": (lambda g, c, r, w: (g * 2 + c, jnp.dot(w, g * 2 + c, precision=HI)),
                          [(3000, 64), (3000, 64), (1,), (64, 3000)],
                          lambda g, c, r, w: (g * 2 + c, w @ (g * 2 + c)), 2),
    "two products read it": (lambda g, c, r, w: (
                                 (g + c), jnp.dot(g + c, w.T, precision=HI),
                                 jnp.dot(w, (g + c).T, precision=HI)),
                             [(70, 130), (70, 130), (1,), (90, 130)],
                             lambda g, c, r, w: ((g + c), (g + c) @ w.T, w @ (g + c).T), 3),
}


@pytest.mark.parametrize("tile", ["64x64x16", "64x64x16g2"])
@pytest.mark.parametrize("name", list(STORED))
def test_a_product_stores_its_fused_operand(name, tile):
    """A fused operand that is also an output is computed in the product's loads and stored
    by the first row (or column) of tiles, each element once (``dot.STORE_TILES``,
    ``Lowering.stored_by``): one kernel where there were two -- rows-first and k-first reads,
    odd sizes, the B side with batches, a split contraction (its sum kernel), a contraction
    split inside the workgroup; read by two products of one level, it keeps its kernel."""
    f, shapes, ref, kernels = STORED[name]
    rs = np.random.RandomState(9)
    args = [rs.randn(*sh).astype(np.float32) for sh in shapes]
    wjax.clear_caches()
    with _gpu(tile):
        got = wjax.jit(f)(*args)
        tiled, others = _kernels(f, *args)
    wjax.clear_caches()
    want = ref(*_f64(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _close(g, w)
    assert len(tiled) + len(others) == kernels, (len(tiled), others)
    if kernels == 1:
        assert "fn wj_rd" in tiled[0]


def test_a_scan_backward_step_is_one_kernel(monkeypatch):
    """The tanh RNN's backward step -- the cotangent through tanh (kept for the weight
    gradients) times the transposed weights -- is one kernel under the GPU forms (two
    before: the cotangent, then the product); JAX's gradients."""
    from wjax._src.backend import lower
    H, T, Bt = 128, 12, 32
    rs = np.random.RandomState(10)
    Wh, Wx = ((rs.randn(H, H) / 12).astype(np.float32) for _ in range(2))
    xs = rs.randn(T, Bt, H).astype(np.float32)
    J = rjax()

    def grad(M, L):
        def rnn(Wh, Wx, xs):
            def cell(h, x):
                h = M.numpy.tanh(M.numpy.dot(h, Wh, precision="highest")
                                 + M.numpy.dot(x, Wx, precision="highest"))
                return h, h
            return M.numpy.sum(L.scan(cell, M.numpy.zeros((Bt, H)), xs)[1] ** 2)
        return M.grad(rnn, argnums=(0, 1))
    plans = []
    run = lower.Lowering.run

    def recorded(self):
        plan = run(self)
        plans.append([getattr(s, "label", "host") for s in plan.steps])
        return plan
    monkeypatch.setattr(lower.Lowering, "run", recorded)
    wjax.clear_caches()
    with _gpu(loop_slices=1):       # the steps recorded (not one loop split into blocks of rows)
        got = wjax.jit(grad(wjax, lax))(Wh, Wx, xs)
    wjax.clear_caches()
    assert ["dot_general(add,mul)"] in plans, plans      # the reverse scan's body
    for g, w in zip(got, J.jit(grad(J, J.lax))(Wh, Wx, xs)):
        _close(g, np.asarray(w, np.float64))


def test_a_stored_operand_whose_reads_bind_too_much_gets_its_kernel():
    """A fused operand the product would store but whose producers' inputs bind more buffers
    than the adapter allows is computed by a kernel of its own first (``compute_first``) and
    read in place: two kernels, NumPy's values -- also where the product's first build is
    taken back (a consumer reading it reversed is no epilogue) and built again."""
    n = int(runtime.get().target()["max-storage-buffers-per-shader-stage"]) - 1
    rs = np.random.RandomState(11)
    xs = [rs.randn(70, 40).astype(np.float32) for _ in range(n)]
    w = rs.randn(90, 40).astype(np.float32)

    def f(w, *xs):
        s = sum(xs[1:], xs[0])
        return s, jnp.dot(s, w.T, precision=HI)

    def g(w, *xs):
        s, p = f(w, *xs)
        return s, p + p[::-1]
    s = sum(_f64(*xs))
    for h, kernels in ((f, 2), (g, 3)):
        wjax.clear_caches()
        with _gpu("64x64x16"):
            got = wjax.jit(h)(w, *xs)
            tiled, others = _kernels(h, w, *xs)
        wjax.clear_caches()
        assert len(tiled) == 1 and len(others) == kernels - 1, others
        assert "fn wj_rd" not in tiled[0]
        _close(got[0], s)
        p = s @ w.T.astype(np.float64)
        _close(got[1], p if h is f else p + p[::-1])
