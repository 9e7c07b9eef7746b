"""distrax: a Transformed distribution -- a Normal pushed through a bijector Chain (an affine
map, then tanh) -- its samples, log_prob (jitted), and the gradient of the log-density."""
import distrax
import jax
import jax.numpy as jnp

chain = distrax.Chain([distrax.Tanh(), distrax.ScalarAffine(shift=0.3, scale=1.5)])
dist = distrax.Transformed(distrax.Normal(loc=0.0, scale=1.0), chain)

samples = dist.sample(seed=jax.random.key(0), sample_shape=(4,))
print("samples", samples)
y = jnp.array([-0.5, 0.0, 0.4, 0.9])
print("log_prob", jax.jit(dist.log_prob)(y))
x, logp = dist.sample_and_log_prob(seed=jax.random.key(1), sample_shape=(3,))
print("sample_and_log_prob", x, logp)
print("grad", jax.grad(lambda v: dist.log_prob(v).sum())(y))
