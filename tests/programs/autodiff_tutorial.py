"""JAX's "Automatic differentiation" tutorial's steps: higher derivatives, logistic regression
gradients by argnums and pytree, value_and_grad, jacfwd/jacrev/hessian, stop_gradient,
per-example gradients, vjp/jvp, Hessian-vector products, and derivatives at kinks."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import grad, vmap, jacfwd, jacrev, hessian

grad_tanh = grad(jnp.tanh)
print(grad_tanh(2.0))
print(grad(grad(jnp.tanh))(2.0))
print(grad(grad(grad(jnp.tanh)))(2.0))

f = lambda x: x**3 + 2*x**2 - 3*x + 1
dfdx = jax.grad(f)
print(dfdx(1.), jax.grad(dfdx)(1.), jax.grad(jax.grad(dfdx))(1.))

key = jax.random.key(0)
def sigmoid(x): return 0.5 * (jnp.tanh(x / 2) + 1)
def predict(W, b, inputs): return sigmoid(jnp.dot(inputs, W) + b)
inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30],
                    [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])
def loss(W, b):
    preds = predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))
key, W_key, b_key = jax.random.split(key, 3)
W = jax.random.normal(W_key, (3,))
b = jax.random.normal(b_key, ())
print(grad(loss, argnums=0)(W, b))
print(grad(loss, argnums=(0, 1))(W, b))
print(grad(loss, argnums=1)(W, b))
def loss2(params_dict):
    preds = predict(params_dict['W'], params_dict['b'], inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))
print(grad(loss2)({'W': W, 'b': b}))
loss_value, Wb_grad = jax.value_and_grad(loss, (0, 1))(W, b)
print('loss value', loss_value)
eps = 1e-4
b_grad_numerical = (loss(W, b + eps / 2.) - loss(W, b - eps / 2.)) / eps
print('b_grad_autodiff', grad(loss, 1)(W, b))
print(np.round(np.asarray(jacfwd(predict, argnums=2)(W, b, inputs)), 5))
print(np.round(np.asarray(jacrev(predict, argnums=2)(W, b, inputs)), 5))
print(np.round(np.asarray(hessian(lambda W: loss(W, b))(W)), 5))
def g(x):
    return jnp.sum(jax.lax.stop_gradient(x) * x)
print(grad(g)(jnp.arange(3.)))
def per_ex(W, x, t):
    p = predict(W, b, x)
    return -(t * jnp.log(p) + (1 - t) * jnp.log(1 - p))
print(np.round(np.asarray(vmap(grad(per_ex), in_axes=(None, 0, 0))(W, inputs, targets)), 5))
y, vjp_fun = jax.vjp(jnp.sin, 1.0)
print(y, vjp_fun(1.0))
print(jax.jvp(jnp.sin, (1.0,), (1.0,)))
def hvp(f, x, v):
    return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)
print(np.round(np.asarray(hvp(lambda W: loss(W, b), W, jnp.ones(3))), 5))
print(grad(lambda x: jnp.abs(x))(0.), grad(lambda x: jnp.sqrt(x))(0.))
print(grad(lambda x: jnp.where(x > 0, x, 0.))(0.5))
