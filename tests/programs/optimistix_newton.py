"""optimistix: a Newton root find of a small nonlinear system (lineax underneath), jitted,
and the gradient of the root with respect to a parameter (implicit differentiation)."""
import jax
import jax.numpy as jnp
import optimistix as optx


def fn(y, a):
    return jnp.array([y[0] ** 3 + y[1] - a, jnp.sin(y[0]) + 2.0 * y[1] - 0.5])


solver = optx.Newton(rtol=1e-6, atol=1e-6)


@jax.jit
def root(a):
    sol = optx.root_find(fn, solver, jnp.array([1.0, 0.0]), args=a, max_steps=50)
    return sol.value, sol.result == optx.RESULTS.successful


y, ok = root(2.0)
print("root", y, ok)
print("residual", jnp.abs(fn(y, 2.0)).max() < 1e-4)
print("droot/da", jax.jacfwd(lambda a: root(a)[0])(2.0))
print("grad", jax.grad(lambda a: jnp.sum(root(a)[0] ** 2))(2.0))
