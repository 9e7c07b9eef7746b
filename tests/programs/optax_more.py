"""optax beyond adam: adafactor, lamb, multi_transform, masked weight decay with a schedule,
MultiSteps, inject_hyperparams, noisy_sgd (its noise drawn with the leaves' out_sharding),
ema/clip chains, centralize + adabelief, under jitted steps; a few losses."""
import jax
import jax.numpy as jnp
import numpy as np
import optax

rs = np.random.RandomState(0)
X = jnp.asarray(rs.randn(32, 6).astype(np.float32))
Y = jnp.asarray(rs.randn(32, 2).astype(np.float32))
params = {"w": jnp.asarray(rs.randn(6, 2).astype(np.float32)) * 0.1, "b": jnp.zeros(2),
          "emb": jnp.asarray(rs.randn(4, 3).astype(np.float32))}

def loss(p, x, y):
    return jnp.mean((x @ p["w"] + p["b"] + p["emb"].sum() * 0.01 - y) ** 2)

sched = optax.warmup_cosine_decay_schedule(0.0, 0.05, 3, 20, 0.001)
opts = {
    "adafactor": optax.adafactor(0.05),
    "lamb": optax.lamb(0.01),
    "multi": optax.multi_transform({"a": optax.adam(0.01), "s": optax.sgd(0.1)},
                                   {"w": "a", "b": "s", "emb": "s"}),
    "masked_wd": optax.chain(
        optax.add_decayed_weights(0.1, mask={"w": True, "b": False, "emb": False}),
        optax.scale_by_adam(), optax.scale_by_schedule(sched), optax.scale(-1.0)),
    "multisteps": optax.MultiSteps(optax.adam(0.02), every_k_schedule=2),
    "inject": optax.inject_hyperparams(optax.rmsprop)(learning_rate=0.01),
    "noisy": optax.noisy_sgd(0.01, seed=3),
    "ema_chain": optax.chain(optax.clip(0.5), optax.ema(0.9), optax.scale(-0.05)),
    "sam_like": optax.chain(optax.centralize(), optax.adabelief(0.01)),
}
for name, opt in opts.items():
    st = opt.init(params)
    @jax.jit
    def step(p, st):
        l, g = jax.value_and_grad(loss)(p, X, Y)
        u, st = opt.update(g, st, p)
        return optax.apply_updates(p, u), st, l
    p = params
    for i in range(4):
        p, st, l = step(p, st)
    print(name, round(float(l), 5), round(float(optax.global_norm(p)), 5))
print("losses",
      round(float(optax.losses.softmax_cross_entropy(X[:, :2], jax.nn.softmax(Y)).mean()), 5),
      round(float(optax.losses.huber_loss(X, X * 0.5).mean()), 5),
      round(float(optax.losses.sigmoid_binary_cross_entropy(X, X > 0).mean()), 5),
      round(float(optax.losses.cosine_similarity(X, X * 2 + 1).mean()), 5))
