"""jax.nn.dot_product_attention (the 'xla' semantics), log1mexp, tanh, and the new jax.image
module (resize with every method, antialiasing, scale_and_translate) -- against real JAX,
with gradients, vmap and jit."""
from __future__ import annotations

import numpy as np
import pytest

from surface_util import both, raises_like_jax

jax = pytest.importorskip("jax")
f32 = np.float32
R = np.random.RandomState(0)
B, T, S, N, K, H = 2, 3, 4, 4, 2, 5
Q = R.randn(B, T, N, H).astype(f32)
KK = R.randn(B, S, K, H).astype(f32)
V = R.randn(B, S, K, H).astype(f32)


def test_dot_product_attention_options_like_jax():
    bias = R.randn(1, N, T, S).astype(f32)
    mask = R.rand(B, 1, T, S) > 0.3
    ql = np.array([2, 3], np.int32)
    kl = np.array([4, 2], np.int32)
    options = [dict(), dict(bias=bias), dict(mask=mask), dict(is_causal=True),
               dict(scale=0.3, query_seq_lengths=ql, key_value_seq_lengths=kl),
               dict(local_window_size=1), dict(bias=bias, mask=mask, is_causal=True),
               dict(local_window_size=(0, 2), is_causal=True, return_residual=True)]
    both(lambda m: [m.nn.dot_product_attention(Q, KK, V, **kw) for kw in options],
         rtol=1e-5, atol=1e-5)
    both(lambda m: m.nn.dot_product_attention(Q[0], KK[0], V[0]), rtol=1e-5, atol=1e-5)
    both(lambda m: m.grad(lambda q, k, v: m.nn.dot_product_attention(
        q, k, v, bias=bias, is_causal=True).sum(), argnums=(0, 1, 2))(Q, KK, V),
        rtol=1e-4, atol=1e-5)
    both(lambda m: m.jit(m.vmap(lambda q: m.nn.dot_product_attention(q, KK[0], V[0])))(Q),
         rtol=1e-5, atol=1e-5)
    raises_like_jax(lambda m: m.nn.dot_product_attention(Q[:, :, :3], KK, V), match="multiple")
    raises_like_jax(lambda m: m.nn.dot_product_attention(Q, KK, V, mask=np.ones((1, 1, T, S))),
                    match="mask dtype")
    raises_like_jax(lambda m: m.nn.dot_product_attention(Q, KK, V, implementation="flash"),
                    match="implementation")


def test_log1mexp_and_tanh():
    x = np.array([0.0, 1e-6, 0.1, 0.69, 0.7, 1.0, 10.0, 100.0, -1.0, np.inf], f32)
    both(lambda m: [m.nn.log1mexp(x), m.nn.tanh(x)], rtol=1e-6)
    both(lambda m: m.vmap(m.grad(m.nn.log1mexp))(x[2:8]), rtol=1e-5, jit_jax=False)


IMG = R.rand(2, 7, 9, 3).astype(f32)


def test_resize_every_method_like_jax():
    def run(m):
        out = []
        for method in ("nearest", "linear", "cubic", "lanczos3", "lanczos5", "cubic-pytorch",
                       "area"):
            for shape in ((2, 14, 5, 3), (2, 3, 20, 3)):
                for aa in (True, False):
                    out.append(m.image.resize(IMG, shape, method, antialias=aa))
        return out
    both(run, rtol=1e-5, atol=2e-5)
    both(lambda m: m.image.resize(np.arange(12).reshape(3, 4), (6, 8), "nearest"))
    both(lambda m: m.image.resize(np.arange(12).reshape(3, 4), (6, 8), "bilinear"))
    both(lambda m: m.image.resize(IMG, IMG.shape, m.image.ResizeMethod.LANCZOS3))
    both(lambda m: m.grad(lambda x: (m.image.resize(x, (2, 5, 4, 3), "linear") ** 2).sum())(IMG),
         rtol=1e-5, atol=1e-6)
    both(lambda m: m.jit(m.vmap(lambda x: m.image.resize(x, (4, 4, 3), "cubic")))(IMG),
         rtol=1e-5, atol=2e-5)
    raises_like_jax(lambda m: m.image.resize(IMG, (2, 3), "linear"), match="length")
    raises_like_jax(lambda m: m.image.resize(IMG, IMG.shape, "bogus"), match="Unknown")


def test_scale_and_translate_like_jax():
    scale, shift = np.array([1.5, 0.7], f32), np.array([0.3, -1.0], f32)
    both(lambda m: [m.image.scale_and_translate(IMG, (2, 10, 6, 3), (1, 2), scale, shift, meth,
                                                antialias=aa)
                    for meth in ("linear", "cubic", "lanczos3") for aa in (True, False)],
         rtol=1e-5, atol=2e-5)
    both(lambda m: m.grad(lambda s: m.image.scale_and_translate(
        IMG, (2, 10, 6, 3), (1, 2), s, shift, "linear").sum())(scale), rtol=1e-4)
    raises_like_jax(lambda m: m.image.scale_and_translate(IMG, IMG.shape, (1,), scale[:1],
                                                          shift[:1], "nearest"),
                    match="Nearest neighbor")
