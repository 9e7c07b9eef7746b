"""diffrax beyond Tsit5: Dopri5 with a PID controller saving at given times, gradients through
RecursiveCheckpointAdjoint and BacksolveAdjoint, vmap over initial states (interpolation by
jnp.polyval of per-component coefficients; equinox's error_if inside the batched loop)."""
import jax
import jax.numpy as jnp
import numpy as np
import diffrax

def f(t, y, args):
    return -args * y + jnp.sin(t)
term = diffrax.ODETerm(f)
ts = jnp.linspace(0, 2, 5)
def solve(y0, k, adjoint):
    sol = diffrax.diffeqsolve(term, diffrax.Dopri5(), 0.0, 2.0, 0.1, y0, args=k,
                              saveat=diffrax.SaveAt(ts=ts),
                              stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
                              adjoint=adjoint)
    return sol.ys
y0 = jnp.array([1.0, 2.0])
print("ys", np.round(np.asarray(solve(y0, 0.7, diffrax.RecursiveCheckpointAdjoint())), 4).tolist())
for name, adj in (("recursive", diffrax.RecursiveCheckpointAdjoint()),
                  ("backsolve", diffrax.BacksolveAdjoint())):
    g = jax.grad(lambda y0, k: solve(y0, k, adj)[-1].sum(), argnums=(0, 1))(y0, 0.7)
    print(name, np.round(np.asarray(g[0]), 4).tolist(), round(float(g[1]), 4))
starts = jnp.ones((3, 2)) * jnp.arange(3.)[:, None]
ends = jax.vmap(lambda y: solve(y, 0.3, diffrax.RecursiveCheckpointAdjoint())[-1])(starts)
print("vmap", np.round(np.asarray(ends), 4).tolist())
