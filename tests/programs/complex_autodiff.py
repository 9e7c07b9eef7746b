"""The "Complex numbers and differentiation" part of JAX's autodiff cookbook: a C -> C function
seen as R^2 -> R^2, its JVP and VJP checked against the partial derivatives of its real and
imaginary parts, grad of a C -> R function (the conjugate convention), holomorphic=True on a
holomorphic and on a non-holomorphic function, and a gradient through the Cholesky factor of
a complex Hermitian matrix.  Every value is printed, so the run compares with real JAX's."""
import jax
import jax.numpy as jnp
from jax import grad, jvp, random, vjp


def linear_parts(seed):
    """u(x, y) = a x + b y, v(x, y) = c x + d y with random coefficients, a point z and a
    random (co)tangent, all from ``seed``."""
    key = random.PRNGKey(seed)
    key, sub = random.split(key)
    a, b, c, d = random.uniform(sub, (4,))
    u = lambda x, y: a * x + b * y   # noqa: E731
    v = lambda x, y: c * x + d * y   # noqa: E731
    key, sub = random.split(key)
    x, y = random.uniform(sub, (2,))
    key, sub = random.split(key)
    tc, td = random.uniform(sub, (2,))
    return u, v, x, y, tc, td


def as_complex(u, v):
    def fun(z):
        x, y = jnp.real(z), jnp.imag(z)
        return u(x, y) + v(x, y) * 1j
    return fun


def check_jvp(seed):
    """The JVP of f at z along c + di: [1 i] (the 2x2 Jacobian of (u, v)) [c d]^T."""
    u, v, x, y, c, d = linear_parts(seed)
    z = x + y * 1j
    _, ans = jvp(as_complex(u, v), (z,), (c + d * 1j,))
    expected = (grad(u, 0)(x, y) * c + grad(u, 1)(x, y) * d
                + grad(v, 0)(x, y) * c * 1j + grad(v, 1)(x, y) * d * 1j)
    print("jvp", seed, ans, expected, jnp.allclose(ans, expected))


def check_vjp(seed):
    """The VJP of f at z for the cotangent c + di: [c -d] (the Jacobian) [1 -i]^T."""
    u, v, x, y, c, d = linear_parts(seed)
    z = x + y * 1j
    _, pullback = vjp(as_complex(u, v), z)
    ans, = pullback(jnp.array(c + d * 1j))
    expected = (grad(u, 0)(x, y) * c + grad(v, 0)(x, y) * (-d)
                + grad(u, 1)(x, y) * c * (-1j) + grad(v, 1)(x, y) * (-d) * (-1j))
    print("vjp", seed, ans, expected, jnp.allclose(ans, expected, atol=1e-5, rtol=1e-5))


for s in range(3):
    check_jvp(s)
for s in range(3):
    check_vjp(s)


def squared_norm(z):          # C -> R: grad gives the conjugate of (df/dx + i df/dy)
    x, y = jnp.real(z), jnp.imag(z)
    return x ** 2 + y ** 2


z = 3. + 4j
print("grad |z|^2", grad(squared_norm)(z))
print("grad sin holomorphic", grad(jnp.sin, holomorphic=True)(z))
print("grad conj 'holomorphic'", grad(jnp.conjugate, holomorphic=True)(z))
try:
    grad(jnp.sin)(z)
except TypeError as e:
    print("grad of a complex output:", type(e).__name__)

A = jnp.array([[5., 2. + 3j, 5j],
               [2. - 3j, 7., 1. + 7j],
               [-5j, 1. - 7j, 12.]])


def through_cholesky(X):
    L = jnp.linalg.cholesky(X)
    return jnp.sum((L - jnp.sin(L)) ** 2)


print("cholesky", jnp.linalg.cholesky(A))
print("grad through cholesky", grad(through_cholesky, holomorphic=True)(A))
print("jit of it", jax.jit(grad(through_cholesky, holomorphic=True))(A))
