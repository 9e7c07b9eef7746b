"""lineax: linear_solve of a MatrixLinearOperator with the default (LU) and
a positive-definite Cholesky solve; under jit and with grad through the solve."""
import jax
import jax.numpy as jnp
import lineax as lx

a = jnp.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
b = jnp.array([1.0, 2.0, 3.0])

op = lx.MatrixLinearOperator(a)
sol = lx.linear_solve(op, b)
print("lu", sol.value, sol.result == lx.RESULTS.successful)
spd = lx.MatrixLinearOperator(a, lx.positive_semidefinite_tag)
print("cholesky", lx.linear_solve(spd, b, solver=lx.Cholesky()).value)


@jax.jit
def solve(a, b):
    return lx.linear_solve(lx.MatrixLinearOperator(a), b).value


print("jit", solve(a, b))
print("grad", jax.grad(lambda a: jnp.sum(solve(a, b) ** 2))(a))
