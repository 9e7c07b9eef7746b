"""lineax: least-squares and square solves with the QR solver (Householder QR underneath),
under jit and with grad through the solve."""
import jax
import jax.numpy as jnp
import lineax as lx

a = jnp.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
b = jnp.array([1.0, 2.0, 3.0])
print("square", lx.linear_solve(lx.MatrixLinearOperator(a), b, solver=lx.QR()).value)

tall = jnp.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
y = jnp.array([0.9, 2.1, 2.9, 4.2])
print("lstsq", lx.linear_solve(lx.MatrixLinearOperator(tall), y, solver=lx.QR()).value)
wide = tall.T
print("min-norm", lx.linear_solve(lx.MatrixLinearOperator(wide), jnp.array([1.0, 2.0]),
                                  solver=lx.QR()).value)


@jax.jit
def fit(a, y):
    return lx.linear_solve(lx.MatrixLinearOperator(a), y, solver=lx.QR()).value


print("jit", fit(tall, y))
print("grad", jax.grad(lambda a: jnp.sum(fit(a, y) ** 2))(tall))
