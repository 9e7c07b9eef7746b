"""numpyro SVI: an AutoNormal guide fitted to a Bayesian linear regression by Trace_ELBO and
optax.adam (svi.run: a jitted scan of steps), the guide's medians, Predictive draws."""
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import SVI, Trace_ELBO, Predictive
from numpyro.infer.autoguide import AutoNormal
import optax

rs = np.random.RandomState(0)
x = jnp.asarray(rs.randn(50).astype(np.float32))
y = 2.0 * x + 0.5 + 0.3 * jnp.asarray(rs.randn(50).astype(np.float32))

def model(x, y=None):
    a = numpyro.sample("a", dist.Normal(0, 5))
    b = numpyro.sample("b", dist.Normal(0, 5))
    s = numpyro.sample("s", dist.HalfNormal(1))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Normal(a * x + b, s), obs=y)

guide = AutoNormal(model)
svi = SVI(model, guide, optax.adam(0.05), Trace_ELBO())
res = svi.run(jax.random.key(0), 300, x, y, progress_bar=False)
print("losses", np.round(np.asarray(res.losses[jnp.array([0, 100, 299])]), 2).tolist())
med = guide.median(res.params)
print("median", {k: round(float(v), 3) for k, v in sorted(med.items())})
pred = Predictive(model, guide=guide, params=res.params, num_samples=100)(jax.random.key(1), x[:3])
print("pred mean", np.round(np.asarray(pred["y"].mean(0)), 2).tolist())
