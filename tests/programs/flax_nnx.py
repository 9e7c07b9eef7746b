"""flax.nnx as its users write it: a small transformer language model (Embed, LayerNorm,
RMSNorm, MultiHeadAttention with a causal mask, Dropout, Conv, nnx.List) trained with
nnx.Optimizer(optax.adamw) under nnx.jit / nnx.value_and_grad; nnx.split; an ensemble made by
nnx.vmap; an RNN cell under nnx.scan; nnx.RNN(LSTMCell)."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Block(nnx.Module):
    def __init__(self, d, *, rngs):
        self.ln = nnx.LayerNorm(d, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=2, in_features=d, qkv_features=d,
                                           dropout_rate=0.1, decode=False, rngs=rngs)
        self.mlp = nnx.Sequential(nnx.Linear(d, 2 * d, rngs=rngs), nnx.gelu,
                                  nnx.Linear(2 * d, d, rngs=rngs))
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.rms = nnx.RMSNorm(d, rngs=rngs)

    def __call__(self, x, mask):
        x = x + self.drop(self.attn(self.ln(x), mask=mask))
        return x + self.mlp(self.rms(x))


class Model(nnx.Module):
    def __init__(self, vocab, d, *, rngs):
        self.emb = nnx.Embed(vocab, d, rngs=rngs)
        self.blocks = nnx.List([Block(d, rngs=rngs) for _ in range(2)])
        self.conv = nnx.Conv(d, d, kernel_size=(3,), rngs=rngs)
        self.out = nnx.Linear(d, vocab, rngs=rngs)

    def __call__(self, tok):
        x = self.emb(tok)
        mask = nnx.make_causal_mask(tok)
        for b in self.blocks:
            x = b(x, mask)
        return self.out(self.conv(x))


model = Model(11, 8, rngs=nnx.Rngs(0, dropout=1))
tok = jax.random.randint(jax.random.key(2), (3, 6), 0, 11)
opt = nnx.Optimizer(model, optax.adamw(3e-3), wrt=nnx.Param)


@nnx.jit
def step(model, opt, tok):
    def loss_fn(m):
        logits = m(tok[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, tok[:, 1:]).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    opt.update(model, grads)
    return loss


model.train()
for i in range(4):
    print("loss", f"{float(step(model, opt, tok)):.5f}")
model.eval()
print("eval", f"{float(jnp.abs(model(tok)).mean()):.5f}")
graphdef, params, rest = nnx.split(model, nnx.Param, ...)
print("params", sum(x.size for x in jax.tree.leaves(params)))


@nnx.vmap(in_axes=0, out_axes=0)
def make_ensemble(key):
    return nnx.Linear(3, 2, rngs=nnx.Rngs(key))


ensemble = make_ensemble(jax.random.split(jax.random.key(5), 4))
ys = nnx.vmap(lambda m, x: m(x), in_axes=(0, 0))(ensemble, jnp.ones((4, 5, 3)))
print("ensemble", f"{float(ys.sum()):.5f}", ys.shape)


class Cell(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)

    def __call__(self, h, x):
        h = jnp.tanh(self.lin(h) + x)
        return h, h


cell = Cell(nnx.Rngs(3))
h, hs = nnx.scan(cell, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))(jnp.zeros(4),
                                                                         jnp.ones((5, 4)))
print("scan", f"{float(hs.sum()):.5f}", hs.shape)
lstm = nnx.RNN(nnx.LSTMCell(3, 5, rngs=nnx.Rngs(4)))
print("lstm", f"{float(lstm(jnp.ones((2, 7, 3))).sum()):.5f}")
