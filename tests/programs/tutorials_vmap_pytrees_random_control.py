"""JAX's tutorials on automatic vectorization, pytrees (custom nodes, key paths), pseudorandom
numbers (splitting, typed keys, samplers) and control flow (Python branches under grad/jit,
static arguments, lax.cond/switch/while/fori/scan, masking)."""
import jax
import jax.numpy as jnp
import numpy as np
from typing import NamedTuple
from jax import lax, random

# ---- automatic vectorization
x = jnp.arange(5.)
w = jnp.array([2., 3., 4.])
def convolve(x, w):
    output = []
    for i in range(1, len(x) - 1):
        output.append(jnp.dot(x[i - 1:i + 2], w))
    return jnp.array(output)
xs = jnp.stack([x, x])
ws = jnp.stack([w, w])
print(jax.vmap(convolve)(xs, ws))
print(jax.vmap(convolve, in_axes=[0, None])(xs, w))
print(jax.jit(jax.vmap(convolve))(xs, ws))
print(jax.vmap(convolve, in_axes=1, out_axes=1)(xs.T, ws.T))

# ---- pytrees
example_trees = [[1, 'a', None], (1, (2, 3), ()), [1, {'k1': 2, 'k2': (3, 4)}, 5],
                 {'a': 2, 'b': (2, 3)}, jnp.array([1, 2, 3])]
for pytree in example_trees:
    leaves = jax.tree.leaves(pytree)
    print(f"{repr(pytree):<45} has {len(leaves)} leaves")
list_of_lists = [[1, 2, 3], [1, 2], [1, 2, 3, 4]]
print(jax.tree.map(lambda x: x * 2, list_of_lists))
print(jax.tree.map(lambda x, y: x + y, list_of_lists, list_of_lists))
def init_mlp_params(layer_widths):
    params = []
    for n_in, n_out in zip(layer_widths[:-1], layer_widths[1:]):
        params.append(dict(weights=np.random.RandomState(n_in).normal(size=(n_in, n_out)) *
                           np.sqrt(2 / n_in), biases=np.ones(shape=(n_out,))))
    return params
params = init_mlp_params([1, 128, 128, 1])
print(jax.tree.map(lambda x: x.shape, params))
class MyContainer:
    def __init__(self, name, a, b, c):
        self.name, self.a, self.b, self.c = name, a, b, c
def flatten_MyContainer(container):
    return [container.a, container.b, container.c], container.name
def unflatten_MyContainer(aux_data, flat_contents):
    return MyContainer(aux_data, *flat_contents)
jax.tree_util.register_pytree_node(MyContainer, flatten_MyContainer, unflatten_MyContainer)
print(jax.tree.leaves([MyContainer('Alice', 1, 2, 3), MyContainer('Bob', 4, 5, 6)]))


class MyOtherContainer(NamedTuple):
    name: str
    a: int
    b: float
print(jax.tree.leaves([MyOtherContainer('Alice', 1, 2.)]))
print(jax.tree.structure([1, {'a': 2}, (3, None)]))
tree = [1, {'k1': 2, 'k2': (3, 4)}, MyOtherContainer('x', 5, 6.)]
for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
    print(jax.tree_util.keystr(path), leaf)
print(jax.tree.transpose(jax.tree.structure([0, 0]), jax.tree.structure((0, 0)), [(1, 2), (3, 4)]))

# ---- random numbers
key = random.key(42)
print(random.normal(key))
print(random.normal(key))
for i in range(3):
    new_key, subkey = random.split(key)
    del key
    print(random.normal(subkey))
    key = new_key
key = random.key(42)
subkeys = random.split(key, 3)
print([float(random.normal(k)) for k in subkeys])
print(random.normal(random.key(1), (3,)), random.uniform(random.key(2), (2,)))
print(random.randint(random.key(3), (5,), 0, 10), random.bernoulli(random.key(4), 0.3, (5,)))
print(random.permutation(random.key(5), 6), random.choice(random.key(6), 5, (3,), replace=False))
print(random.key_data(random.fold_in(random.key(7), 3)))
print(random.normal(random.PRNGKey(0), (2,)))

# ---- control flow
def f(x):
    if x < 3:
        return 3. * x ** 2
    else:
        return -4 * x
print(jax.grad(f)(2.), jax.grad(f)(4.))
try:
    jax.jit(f)(2.)
except Exception as e:
    print(type(e).__name__)
print(jax.jit(f, static_argnames='x')(x=2.))
def g(x, n):
    i = 0
    while i < n:
        i += 1
    return x + i
print(jax.jit(g, static_argnames='n')(10., 3))
def g_inner_jitted(x, n):
    i = 0
    while i < n:
        i += 1
    return x + i
print(jax.jit(lambda x: lax.while_loop(lambda c: c[1] < 5, lambda c: (c[0] * 2, c[1] + 1),
                                       (x, 0))[0])(1.))
print(lax.cond(True, lambda x: x + 1, lambda x: x - 1, 1.))
print(lax.switch(2, [lambda x: x, lambda x: x * 2, lambda x: x * 3], 4.))
print(lax.fori_loop(0, 5, lambda i, x: x + i, 0))
print(lax.scan(lambda c, x: (c + x, c * x), 0., jnp.arange(4.)))
print(jnp.where(jnp.arange(4) > 1, 1., -1.), lax.select(jnp.array([True, False]),
                                                         jnp.ones(2), jnp.zeros(2)))
print(jnp.logical_and(jnp.array([True, False]), True), (jnp.arange(3) > 0) & (jnp.arange(3) < 2))
print(jax.grad(lambda x: lax.fori_loop(0, 3, lambda i, c: c * x, 1.))(2.))
