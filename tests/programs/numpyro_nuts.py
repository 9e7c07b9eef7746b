"""numpyro: NUTS on a small Bayesian linear regression.  A few steps are printed exactly (the
sampler's trajectories are chaotic: float rounding grows over many steps); a longer chain's
posterior means are printed to one decimal and checked against the true line."""
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

X = jnp.asarray(np.linspace(-1.0, 1.0, 20, dtype=np.float32))
y = 0.5 + 2.0 * X + 0.1 * jnp.asarray(np.sin(np.arange(20, dtype=np.float32) * 3.0))


def model(X, y=None):
    a = numpyro.sample("a", dist.Normal(0.0, 5.0))
    b = numpyro.sample("b", dist.Normal(0.0, 5.0))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    numpyro.sample("obs", dist.Normal(a + b * X, sigma), obs=y)


# the first steps: warmup adapts the step size, then 5 draws
mcmc = MCMC(NUTS(model), num_warmup=5, num_samples=5, progress_bar=False)
mcmc.run(jax.random.key(0), X, y, extra_fields=("num_steps",))
samples = mcmc.get_samples()
for name in ("a", "b", "sigma"):
    print(name, samples[name])
print("num_steps", mcmc.get_extra_fields()["num_steps"])

# a longer chain: the posterior means recover the line
mcmc = MCMC(NUTS(model), num_warmup=50, num_samples=50, progress_bar=False)
mcmc.run(jax.random.key(1), X, y)
samples = mcmc.get_samples()
for name, truth in (("a", 0.5), ("b", 2.0), ("sigma", 0.07)):
    mean = float(samples[name].mean())
    print(name, samples[name].shape, round(mean, 1), abs(mean - truth) < 0.05)
