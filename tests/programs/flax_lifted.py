"""flax.linen lifted transforms (nn.scan of nn.remat of a block, nn.vmap of Dense) at init,
under jit and grad, trained by a jitted optax chain; and a few of JAX's composite functions."""
import jax
import jax.numpy as jnp
import numpy as np
import flax.linen as nn
import optax
rs = np.random.RandomState(0)
x = jnp.asarray(rs.randn(4, 7, 6).astype(np.float32))

class Block(nn.Module):
    @nn.compact
    def __call__(self, c, x):
        h = nn.Dense(6)(x) + c
        return nn.tanh(h), h.sum(-1)

class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
        RematScan = nn.scan(nn.remat(Block), variable_broadcast="params",
                            split_rngs={"params": False}, in_axes=1, out_axes=1)
        c, ys = RematScan()(jnp.zeros((x.shape[0], 6)), x)
        V = nn.vmap(nn.Dense, in_axes=0, out_axes=0, variable_axes={"params": 0},
                    split_rngs={"params": True})(3)
        return V(c), ys

m = Stack()
p = m.init(jax.random.PRNGKey(0), x)
out = jax.jit(m.apply)(p, x)
print("flax lifted", np.round(np.asarray(out[0]).sum(), 4), np.round(np.asarray(out[1]).sum(), 4))
g = jax.jit(jax.grad(lambda p: jnp.sum(m.apply(p, x)[0] ** 2)))(p)
print("flax lifted grad", round(float(optax.global_norm(g)), 4))

opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-2, weight_decay=1e-3))
st = opt.init(p)
@jax.jit
def step(p, st):
    l, g = jax.value_and_grad(lambda p: jnp.sum(m.apply(p, x)[0] ** 2))(p)
    u, st = opt.update(g, st, p)
    return optax.apply_updates(p, u), st, l
for i in range(3):
    p, st, l = step(p, st)
    print("step", i, round(float(l), 5))

q = jnp.asarray(rs.randn(2, 5, 4, 8).astype(np.float32))
print("dpa", np.round(np.asarray(jax.nn.dot_product_attention(q, q, q, is_causal=True)).sum(), 4))
print("lax.map", np.asarray(jax.lax.map(lambda r: jnp.cumsum(r) * 2,
                                         jnp.arange(12.).reshape(3, 4))).tolist())
print("assoc", np.asarray(jax.lax.associative_scan(jnp.add, jnp.arange(8.))).tolist())
k = jax.random.PRNGKey(3)
logits = jnp.log(jnp.array([0.1, 0.2, 0.7]))
print("categorical", np.asarray(jax.random.categorical(k, logits, shape=(8,))).tolist())
conv = jax.scipy.signal.convolve(jnp.arange(6.), jnp.array([1., -1., 2.]))
print("conv", np.round(np.asarray(conv), 4).tolist())
print("cumlogsumexp", np.round(np.asarray(jax.lax.cumlogsumexp(jnp.arange(5.))), 4).tolist())
print("fori", float(jax.jit(lambda: jax.lax.fori_loop(0, 10, lambda i, c: c + i * 0.5, 0.0))()))
