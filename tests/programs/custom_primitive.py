"""A JAX program in the style of JAX's "primitives" and "custom interpreters" tutorials: user
primitives with jvp, transpose and batching rules (jax.extend.core, jax.interpreters), lowered
with mlir.lower_fun, used under jit, grad, vmap, jvp and vjp; then an interpreter over a jaxpr
(eqn.primitive, closed_jaxpr.literals) that inverts a function.  Prints its results."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core
from jax.interpreters import ad, batching, mlir

# ---------------------------------------------------------------- multiply_add: x * y + z
multiply_add_p = core.Primitive("multiply_add")


def multiply_add(x, y, z):
    return multiply_add_p.bind(x, y, z)


@multiply_add_p.def_impl
def _ma_impl(x, y, z):
    return jnp.add(jnp.multiply(x, y), z)


@multiply_add_p.def_abstract_eval
def _ma_abstract(xs, ys, zs):
    assert xs.shape == ys.shape == zs.shape
    return jax.core.ShapedArray(xs.shape, xs.dtype)


mlir.register_lowering(multiply_add_p, mlir.lower_fun(lambda x, y, z: x * y + z,
                                                      multiple_results=False))


def _ma_jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = tangents

    def inst(t):
        return jnp.zeros_like(x) if type(t) is ad.Zero else t
    out = multiply_add(x, y, z)
    tout = multiply_add(inst(xt), y, multiply_add(x, inst(yt), inst(zt)))
    return out, tout


ad.primitive_jvps[multiply_add_p] = _ma_jvp


def _ma_transpose(ct, x, y, z):
    # linear in one of x, y and in z
    if not ad.is_undefined_primal(x):
        ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else multiply_add(x, ct,
                                                                       jnp.zeros_like(x))
        return None, ct_y, ct
    ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else multiply_add(ct, y,
                                                                   jnp.zeros_like(y))
    return ct_x, None, ct


ad.primitive_transposes[multiply_add_p] = _ma_transpose


def _ma_batch(args, dims):
    x, y, z = args
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    args = [batching.bdim_at_front(a, b, size) if b is not None else
            jnp.broadcast_to(a, (size,) + a.shape) for a, b in zip(args, dims)]
    return multiply_add(*args), 0


batching.primitive_batchers[multiply_add_p] = _ma_batch

# ---------------------------------------------------------------- sincos: two results
sincos_p = core.Primitive("sincos")
sincos_p.multiple_results = True
sincos_p.def_impl(lambda x: (jnp.sin(x), jnp.cos(x)))
sincos_p.def_abstract_eval(lambda x: (x, x))
mlir.register_lowering(sincos_p, mlir.lower_fun(lambda x: (jnp.sin(x), jnp.cos(x)),
                                                multiple_results=True))


def _sincos_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s, c = sincos_p.bind(x)
    if type(t) is ad.Zero:
        return (s, c), (ad.Zero(t.aval), ad.Zero(t.aval))
    return (s, c), (c * t, -s * t)


ad.primitive_jvps[sincos_p] = _sincos_jvp
batching.primitive_batchers[sincos_p] = lambda args, dims: (sincos_p.bind(*args),
                                                           [dims[0], dims[0]])


def f(x, y):
    s, c = sincos_p.bind(x)
    return jnp.sum(multiply_add(s, y, c) * 2.0)


def show(name, v):
    print(name, np.round(np.asarray(v, np.float64), 5).tolist())


x = jnp.arange(1.0, 4.0)
y = jnp.array([0.5, -1.0, 2.0])
show("eager", multiply_add(x, y, x))
show("jit", jax.jit(multiply_add)(x, y, x))
show("f", f(x, y))
show("jit f", jax.jit(f)(x, y))
show("grad f", jax.grad(f, argnums=(0, 1))(x, y))
show("jit grad f", jax.jit(jax.grad(f))(x, y))
show("jvp", jax.jvp(lambda a: multiply_add(a, y, a), (x,), (jnp.ones(3),)))
show("vjp", jax.vjp(lambda a: multiply_add(a, y, a), x)[1](jnp.ones(3)))
show("vmap", jax.vmap(multiply_add, in_axes=(0, None, 0))(jnp.ones((2, 3)), y, jnp.ones((2, 3))))
show("vmap f", jax.vmap(f)(jnp.stack([x, x + 1]), jnp.stack([y, -y])))
show("grad vmap", jax.grad(lambda a: jax.vmap(f, (0, None))(a, y).sum())(jnp.stack([x, x])))
show("hessian", jax.hessian(lambda a: f(a, y))(x))

# ---------------------------------------------------------------- an interpreter (inverse)
inverse_registry = {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}


def inverse(fun):
    def wrapped(*args):
        closed = jax.make_jaxpr(fun)(*args)
        return inverse_jaxpr(closed.jaxpr, closed.literals, *args)
    return wrapped


def inverse_jaxpr(jaxpr, consts, *args):
    env = {}

    def read(v):
        return v.val if type(v) is core.Literal else env[v]

    def write(v, val):
        env[v] = val
    for v, val in zip(jaxpr.outvars, args):
        write(v, val)
    for v, val in zip(jaxpr.constvars, consts):
        write(v, val)
    for eqn in jaxpr.eqns[::-1]:
        invals = [read(v) for v in eqn.outvars]
        if eqn.primitive not in inverse_registry:
            raise NotImplementedError(f"{eqn.primitive} has no inverse")
        write(eqn.invars[0], inverse_registry[eqn.primitive](*invals))
    return [read(v) for v in jaxpr.invars][0]


def g(x):
    return jnp.tanh(jnp.exp(x))


z = jnp.array([-0.5, 0.1, 0.3])
show("inverse", inverse(g)(g(z)))
show("jit inverse", jax.jit(inverse(g))(g(z)))
names = [str(e.primitive) for e in jax.make_jaxpr(g)(z).jaxpr.eqns]
print("primitives", names)
