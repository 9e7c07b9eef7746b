"""jax.debug.print / jax.debug.callback / jax.pure_callback under eager, jit, grad, vmap, loops
and conds: the printed lines and their order are compared with real JAX."""

import numpy as np
import jax
import jax.numpy as jnp


def f(x):
    jax.debug.print("x = {}", x)
    y = jnp.sin(x) * 2
    jax.debug.print("y sum {s:.3f}", s=y.sum())
    return y.sum()


f(jnp.arange(3.0))
jax.jit(f)(jnp.arange(3.0))
jax.grad(f)(jnp.arange(3.0))
jax.jit(jax.grad(f))(jnp.arange(2.0))
jax.vmap(f)(jnp.arange(4.0).reshape(2, 2))


def body(i, c):
    jax.debug.print("iter {} c {}", i, c)
    return c * 2


jax.jit(lambda c: jax.lax.fori_loop(0, 3, body, c))(1.0)
jax.lax.while_loop(lambda c: c < 4, lambda c: (jax.debug.print("w {}", c), c + 1)[1], 0)
jax.lax.cond(
    True, lambda x: jax.debug.print("true {}", x), lambda x: jax.debug.print("false {}", x), 1
)
jax.jit(
    lambda p, x: jax.lax.cond(
        p, lambda x: jax.debug.print("T {}", x), lambda x: jax.debug.print("F {}", x), x
    )
)(False, 2)


def cb(a, b):
    print("callback got", isinstance(a, jax.Array), np.asarray(a).tolist(), b)


jax.jit(lambda x: jax.debug.callback(cb, x, b=3))(jnp.ones(2))
out = jax.jit(
    lambda x: jax.pure_callback(lambda v: np.cos(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x) + 1
)(jnp.arange(3.0))
print("pure", np.round(np.asarray(out), 5).tolist())
out = jax.vmap(
    lambda x: jax.pure_callback(
        lambda v: v * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential"
    )
)(jnp.ones((2, 3)))
print("pure vmap", np.asarray(out).tolist())
out = jax.vmap(
    lambda x: jax.pure_callback(
        lambda v: v.sum(-1), jax.ShapeDtypeStruct((), x.dtype), x, vmap_method="expand_dims"
    )
)(jnp.ones((2, 3)))
print("pure vmap expand", np.asarray(out).tolist())
jax.jit(lambda x: jax.debug.print("only effect {}", x))(5.0)
jax.lax.scan(
    lambda c, x: (jax.debug.print("scan {} {}", c, x) or c + x, None), 0.0, jnp.arange(3.0)
)
jax.jit(
    lambda x: jax.lax.scan(
        lambda c, x: (jax.debug.print("jscan {}", c) or c * 2, None), x, None, length=3
    )
)(1.0)
print("grad through print", float(jax.grad(lambda x: (jax.debug.print("g {}", x), x**2)[1])(3.0)))
from jax.experimental import io_callback  # noqa: E402

log = []


def record(v):
    log.append(float(v))
    return np.float32(len(log))


def io_step(c, _):
    n = io_callback(record, jax.ShapeDtypeStruct((), jnp.float32), c)
    return c + n, None


print("io", float(jax.jit(lambda c: jax.lax.scan(io_step, c, None, length=3)[0])(1.0)), log)
print("copy", jnp.copy(jnp.arange(3)).tolist(), jax.dtypes.issubdtype(jax.random.key(0).dtype,
                                                                      jax.dtypes.prng_key))
