"""diffrax: an adaptive Tsit5 solve of a damped oscillator with a PID step-size controller,
jitted, its saved trajectory and step counts, and the gradient of the final state with
respect to the damping (backpropagation through the solve)."""
import diffrax
import jax
import jax.numpy as jnp


def vector_field(t, y, args):
    damping, = args
    x, v = y
    return jnp.stack([v, -x - damping * v])


@jax.jit
def solve(damping):
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field), diffrax.Tsit5(), t0=0.0, t1=3.0, dt0=0.1,
        y0=jnp.array([1.0, 0.0]), args=(damping,),
        stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
        saveat=diffrax.SaveAt(ts=jnp.linspace(0.0, 3.0, 4)))
    return sol.ys, sol.stats["num_accepted_steps"], sol.result == diffrax.RESULTS.successful


ys, steps, ok = solve(0.3)
print("ys", ys)
print("steps", steps, ok)
print("grad", jax.grad(lambda d: solve(d)[0][-1, 0])(0.3))
