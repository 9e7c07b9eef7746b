"""numpyro: NUTS on a small Bayesian linear regression; posterior means and the sampler's
diagnostics."""
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


mcmc = MCMC(NUTS(model), num_warmup=50, num_samples=50, progress_bar=False)
mcmc.run(jax.random.key(0), X, y)
samples = mcmc.get_samples()
for name in ("a", "b", "sigma"):
    print(name, samples[name].shape, round(float(samples[name].mean()), 2))
