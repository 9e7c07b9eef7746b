"""JAX's "Just-in-time compilation" tutorial, on wjax.

    .venv/bin/python demos/jit_walkthrough.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402


def bench(f, *args, reps=5):
    f(*args).block_until_ready()          # warm up (trace + compile)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(*args).block_until_ready()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2]


def selu(x, alpha=1.67, lambda_=1.05):
    return lambda_ * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


print("device:", jax.devices()[0])
x = jnp.arange(1_000_000, dtype=jnp.float32) / 1e5 - 5
t_eager = bench(selu, x)
selu_jit = jax.jit(selu)
t_jit = bench(selu_jit, x)
print(f"selu on 1e6 floats: eager {t_eager * 1e3:.2f} ms, jit {t_jit * 1e3:.2f} ms "
      f"({t_eager / t_jit:.1f}x); jit runs {len(selu_jit.lower(x).compile().plan.steps)} kernel")
print("\nThe jaxpr jit compiles:")
print(jax.make_jaxpr(selu)(x))
print("\nThe WGSL it generates:")
print(selu_jit.lower(x).as_text())


@jax.jit
def f(x, y):
    print("Running f():")
    print(f"  x = {x}")
    print(f"  y = {y}")
    result = jnp.dot(x + 1, y + 1)
    print(f"  result = {result}")
    return result


print("Tracing prints tracers, once per signature:")
xs = np.random.randn(3, 4).astype(np.float32)
ys = np.random.randn(4).astype(np.float32)
f(xs, ys)
print("second call (cached, no print):", f(xs, ys))


def norm(X):
    X = X - X.mean(0)
    return X / X.std(0)


X = jnp.asarray(np.random.RandomState(0).randn(10000, 10).astype(np.float32))
norm_jit = jax.jit(norm)
np.testing.assert_allclose(np.asarray(norm(X)), np.asarray(norm_jit(X)), rtol=1e-4, atol=1e-4)
print(
    f"\nnorm(X) 10000x10: eager {bench(norm, X) * 1e3:.2f} ms, "
    f"jit {bench(norm_jit, X) * 1e3:.2f} ms "
    f"in {len(norm_jit.lower(X).compile().plan.steps)} kernels"
)


def g(x, n):
    i = 0
    while i < n:
        i += 1
    return x + i


g_jit = jax.jit(g, static_argnums=1)
print("\nstatic argument n=10:", g_jit(10.0, 10))


def h(x):
    if x > 0:
        return x
    return 2 * x


print("\nA Python `if` on a traced value raises, as in JAX:")
try:
    jax.jit(h)(10.0)
except jax.errors.ConcretizationTypeError as e:
    print(type(e).__name__ + ":", str(e).splitlines()[0])
    print("  ...", [l for l in str(e).splitlines() if "static_argnums" in l][0][:100])
print("with static_argnames='x':", jax.jit(h, static_argnames="x")(10.0))
