"""jax.checkpoint policies choose what is saved: which primal ops the linearized program
recomputes, and the gradients, compared with real JAX."""

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

P = jax.checkpoint_policies


def f(x, W):
    h = checkpoint_name(jnp.sin(x @ W), "h")
    g = jnp.tanh(h @ W)
    return (g * h).sum()


x = jnp.arange(6.0).reshape(2, 3) / 6
W = jnp.ones((3, 3)) / 3
for name, pol in [
    ("everything", P.everything_saveable),
    ("nothing", P.nothing_saveable),
    ("dots", P.dots_saveable),
    ("names", P.save_only_these_names("h")),
    ("but", P.save_any_names_but_these("h")),
]:
    y, f_lin = jax.linearize(jax.checkpoint(f, policy=pol), x, W)
    t = str(jax.make_jaxpr(f_lin)(x, W))
    print(name, "sin" in t, "tanh" in t, t.count("dot_general"))
for name, pol in [("dots", P.dots_saveable), ("names", P.save_only_these_names("h"))]:
    g = jax.jit(jax.grad(jax.checkpoint(f, policy=pol), argnums=(0, 1)))(x, W)
    print(name, [round(float(v), 5) for v in jnp.concatenate([g[0].ravel(), g[1].ravel()])])
