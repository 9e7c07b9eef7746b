"""The GPU matmul kernel (shaders/matmul_tiled.wgsl, ``prims/dot.py``'s ``_tiled_src``) run
here under the GPU strategies: every tile (``dot.TILES``), operands stored rows-first or
k-first (read in place), lengths that are not multiples of 4 (scalar loads) or of the tile,
batches, split contractions (``_tile_config``) and fused epilogues, against NumPy in float64
and real JAX; and which tile and split the rule picks."""
from __future__ import annotations

import numpy as np
import pytest

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


def _gpu(tile=""):
    return runtime.get().options(**dict(profiles.GPU_STRATEGIES), matmul_tile=tile)


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
    assert dot._tile_config(t, 1, 4096, 4096, 4096)[4:] == (True, 128, 128, 16)
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
    assert dot._tile_config(t.replace(matmul_tile="128x128x8"), 1, 64, 64, 64)[5:] == \
        (128, 128, 8)
    # the tiles the rule picks fit WebGPU's default workgroup memory; a forced tile the
    # target cannot hold falls back to the rule
    for name, (bm, bn, bk) in dot.TILES.items():
        assert (bm // 16) * (bn // 16) * 256 == bm * bn
        assert bk != 16 or (bm + bn) * bk * 4 <= 16384
    small = Target.for_profile("webgpu-default", matmul_tile="128x128x32")
    assert dot._tile_config(small, 1, 4096, 4096, 4096)[5:] == (128, 128, 16)


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
    a = RS.randn(64, 96).astype(np.float16)
    b = RS.randn(96, 80).astype(np.float16)
    want = a.astype(np.float32) @ b.astype(np.float32)
    for pick in (0, -1):
        t = Target.for_profile("nvidia", tune=lambda key, names, build, nb, default: names[pick])
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
