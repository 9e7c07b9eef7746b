"""Per-example gradients with vmap(grad(...)), as in JAX's docs, on wjax.

A small logistic-regression-style MLP; the gradient of the loss for each example
separately (what DP-SGD clips and what influence functions need), computed three ways:
a Python loop of grad calls, vmap(grad(loss)), and jit(vmap(grad(loss))).  Then the
per-example gradient norms are clipped and averaged, all inside one jit.

    .venv/bin/python demos/per_example_grads.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402
from wjax._src.backend import runtime  # noqa: E402

if not hasattr(jax, "grad"):
    sys.exit("per_example_grads: wjax.grad is not available yet (issue: autodiff); nothing to run")

N, D, H = 64, 8, 16


def predict(params, x):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    return h @ w2 + b2                       # one logit


def loss(params, x, y):
    z = predict(params, x)
    softplus = jnp.maximum(z, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(z)))
    return softplus - y * z                  # binary cross-entropy with logits


def timed(f, *args):
    out = f(*args)
    jax.block_until_ready(out)
    np.asarray(jax.tree_util.tree_leaves(out)[0])
    rt = runtime.get()
    d0 = rt.stats["dispatches"]
    t0 = time.perf_counter()
    out = f(*args)
    np.asarray(jax.tree_util.tree_leaves(out)[0])
    return out, time.perf_counter() - t0, rt.stats["dispatches"] - d0


rng = np.random.RandomState(0)
params = (jnp.asarray(rng.randn(D, H).astype(np.float32) * 0.5), jnp.zeros(H),
          jnp.asarray(rng.randn(H).astype(np.float32) * 0.5), jnp.asarray(0.0))
xs = jnp.asarray(rng.randn(N, D).astype(np.float32))
ys = jnp.asarray((rng.rand(N) > 0.5).astype(np.float32))

grad_loss = jax.grad(loss)
per_example = jax.vmap(grad_loss, in_axes=(None, 0, 0))
per_example_jit = jax.jit(per_example)


def loop(params, xs, ys):
    gs = [grad_loss(params, xs[i], ys[i]) for i in range(N)]
    return tuple(np.stack([np.asarray(g[k]) for g in gs]) for k in range(4))


print("device:", jax.devices()[0])
g_loop, t_loop, k_loop = timed(loop, params, xs, ys)
g_vmap, t_vmap, k_vmap = timed(per_example, params, xs, ys)
g_jit, t_jit, k_jit = timed(per_example_jit, params, xs, ys)
for a, b, c in zip(g_loop, g_vmap, g_jit):
    np.testing.assert_allclose(np.asarray(b), a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(c), a, rtol=1e-4, atol=1e-5)
print(f"per-example gradient shapes: {[tuple(g.shape) for g in g_vmap]}")
print(f"  loop of {N} grad calls : {t_loop * 1e3:8.2f} ms, {k_loop:5d} kernels")
print(f"  vmap(grad)             : {t_vmap * 1e3:8.2f} ms, {k_vmap:5d} kernels")
print(f"  jit(vmap(grad))        : {t_jit * 1e3:8.2f} ms, {k_jit:5d} kernels")


@jax.jit
def clipped_mean_grad(params, xs, ys, clip=1.0):
    """DP-SGD's step: clip each example's gradient to norm <= clip, then average."""
    gs = jax.vmap(grad_loss, in_axes=(None, 0, 0))(params, xs, ys)
    sq = sum(jnp.sum(g.reshape(N, -1) ** 2, axis=1) for g in gs)
    scale = jnp.minimum(1.0, clip / jnp.sqrt(sq + 1e-12))
    return tuple(
        jnp.mean(g * scale.reshape((N,) + (1,) * (g.ndim - 1)), axis=0) for g in gs
    ), jnp.sqrt(sq)


mean_g, norms = clipped_mean_grad(params, xs, ys)
norms = np.asarray(norms)
print(f"per-example gradient norms: min {norms.min():.3f}, median {np.median(norms):.3f}, "
      f"max {norms.max():.3f}; clipped mean gradient of w1 has norm "
      f"{float(np.linalg.norm(np.asarray(mean_g[0]))):.4f}")

try:
    import jax as real_jax  # the oracle, when installed
    real_jax.config.update("jax_platforms", "cpu")
    rp = tuple(np.asarray(p) for p in params)

    def rloss(p, x, y):
        w1, b1, w2, b2 = p
        z = real_jax.numpy.tanh(x @ w1 + b1) @ w2 + b2
        return real_jax.numpy.logaddexp(0.0, z) - y * z

    ref = real_jax.vmap(real_jax.grad(rloss), in_axes=(None, 0, 0))(
        rp, np.asarray(xs), np.asarray(ys)
    )
    for a, b in zip(g_jit, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    print("matches real JAX's vmap(grad) to 1e-4")
except ImportError:
    pass
