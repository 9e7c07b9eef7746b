"""chex: a chex.dataclass of parameters, shape/rank/finiteness assertions inside a jitted
step (assert_max_traces), 5 steps of optax.sgd; then chex.fake_pmap running pmap code with
collectives (psum, pmean, all_gather) as vmap; prints the losses and the collectives."""
import chex
import jax
import jax.numpy as jnp
import optax


@chex.dataclass
class Params:
    w: chex.Array
    b: chex.Array


def loss(p, x, y):
    chex.assert_rank(x, 2)
    chex.assert_equal_shape([p.w[:, 0], x[0]])
    chex.assert_type(x, float)
    pred = jnp.tanh(x @ p.w + p.b)
    return jnp.mean((pred - y) ** 2)


k1, k2 = jax.random.split(jax.random.PRNGKey(0))
x = jax.random.normal(k1, (8, 3))
y = jax.random.normal(k2, (8, 1))
p = Params(w=jnp.ones((3, 1)) * 0.1, b=jnp.zeros((1,)))
opt = optax.sgd(0.1, momentum=0.9)
state = opt.init(p)


@jax.jit
@chex.assert_max_traces(n=1)
def step(p, s):
    value, g = jax.value_and_grad(loss)(p, x, y)
    chex.assert_trees_all_equal_shapes(g, p)
    updates, s = opt.update(g, s)
    return optax.apply_updates(p, updates), s, value


for _ in range(5):
    p, state, value = step(p, state)
    chex.assert_tree_all_finite(p)
    print(f"{float(value):.7f}")

with chex.fake_pmap():
    def spread(a):
        total = jax.lax.psum(a, "i")
        return a / total, jax.lax.pmean(a, "i"), jax.lax.all_gather(a, "i").sum()
    for out in jax.pmap(spread, axis_name="i")(jnp.arange(1.0, 5.0)):
        print(" ".join(f"{float(v):.6f}" for v in out))
try:
    chex.assert_shape(x, (8, 4))
except AssertionError as e:
    print("AssertionError", "(8, 4)" in str(e))
