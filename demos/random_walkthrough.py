"""Pseudo-random numbers the JAX way, on wjax: explicit keys, splitting, never reusing a key.

JAX's PRNG is counter-based (threefry2x32): a *key* is the whole state, a sampler is a pure
function of (key, shape, dtype), and new randomness comes from *splitting* keys, never from
hidden global state.  wjax computes the same 20-round threefry hash in WGSL, on the device, and
produces the very same numbers as JAX for the same key.

    python3 demos/random_walkthrough.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402
from wjax import random  # noqa: E402


def main():
    # 1. a key is made from an integer seed; typed keys print like JAX's
    key = random.key(42)
    print("key:", key)
    print("its data:", random.key_data(key))
    print("legacy raw key:", random.PRNGKey(42))

    # 2. a sampler is a pure function of the key: the same key gives the same numbers
    a = random.normal(key, (3,))
    b = random.normal(key, (3,))
    print("\nnormal(key) twice:", a, b, "identical:", bool(jnp.all(a == b)))

    # 3. so never reuse a key: split it, keep one half to split again, consume the other
    key, subkey = random.split(key)
    x = random.normal(subkey, (3,))
    key, subkey = random.split(key)
    y = random.normal(subkey, (3,))
    print("two fresh draws:", x, y)

    # 4. split many keys at once, or derive keys from data with fold_in
    keys = random.split(key, 4)
    print("\nsplit into 4:", keys.shape, keys.dtype)
    per_key = jax.vmap(lambda k: random.uniform(k))(keys)
    print("one uniform per key (vmap over keys):", per_key)
    step_keys = [random.fold_in(key, step) for step in range(3)]
    print("fold_in(key, step) for steps 0..2:", [int(random.bits(k)) for k in step_keys])

    # 5. the samplers: all derived from the same random bits, all the same numbers as JAX
    k1, k2, k3, k4, k5 = random.split(random.key(0), 5)
    print("\nbits      ", random.bits(k1, (4,)))
    print("uniform   ", random.uniform(k1, (4,), minval=-1.0, maxval=1.0))
    print("randint   ", random.randint(k2, (8,), 0, 10))
    print("bernoulli ", random.bernoulli(k3, 0.25, (8,)))
    print("permute   ", random.permutation(k4, 8))
    print(
        "choice    ", random.choice(k5, jnp.array([10, 20, 30]), (5,), p=jnp.array([0.1, 0.1, 0.8]))
    )
    print("categorical", random.categorical(k5, jnp.log(jnp.array([0.2, 0.3, 0.5])), shape=(8,)))
    print("gamma(2)  ", random.gamma(k2, 2.0, (4,)))

    # 6. the check from JAX's own documentation and tests
    print("\nrandom.normal(random.key(43)) =", random.normal(random.key(43)), "(JAX: 0.07520543)")
    jax.config.update("jax_threefry_partitionable", False)
    print("non-partitionable split(PRNGKey(42)) =\n", random.split(random.PRNGKey(42)),
          "\n(JAX: [2465931498 3679230171] and [255383827 267815257])")
    jax.config.update("jax_threefry_partitionable", True)

    # 7. random numbers inside jit: the key is an argument like any other
    @jax.jit
    def noisy(key, x):
        return x + 0.1 * random.normal(key, x.shape)

    key, subkey = random.split(key)
    print("\njit with a key argument:", noisy(subkey, jnp.zeros(4)))

    u = np.asarray(random.uniform(random.key(1), (10000,)))
    print(f"10000 uniforms: mean {u.mean():.4f} (0.5), min {u.min():.5f}, max {u.max():.5f}")


if __name__ == "__main__":
    main()
