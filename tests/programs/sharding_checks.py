"""Many devices, checked against JAX on 4 devices: device_put and shards, pmap (in_axes,
out_axes, nested vmap, grad, jit), shard_map's derivatives, collectives under jit and inside
a scan, jit over sharded arrays (in/out shardings, with_sharding_constraint), and the errors
bad input gets."""
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

from functools import partial  # noqa: E402

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402


def show(name, x):
    print(name, np.round(np.asarray(x, np.float32), 4).tolist())


def error(name, fn, *words):
    try:
        fn()
        print(name, "no error")
    except Exception as e:          # the class, and whether the message names the problem
        print(name, type(e).__name__ if words else "raised", all(w in str(e) for w in words))


print("devices", jax.device_count(), len(jax.local_devices()), jax.process_count())
mesh = Mesh(np.array(jax.devices()), ("i",))
mesh2 = jax.make_mesh((2, 2), ("a", "b"))
x = np.arange(16.0, dtype=np.float32).reshape(8, 2)

# ---------------------------------------------------------------- device_put and shards
xs = jax.device_put(x, NamedSharding(mesh, P("i")))
print("shards", len(xs.addressable_shards), [s.index for s in xs.addressable_shards][:2])
print("shard data", np.asarray(xs.addressable_shards[3].data).tolist())
# arrays made of per-device pieces: each piece lands on its own device
sh = NamedSharding(mesh, P("i"))
made = jax.make_array_from_callback((8, 2), sh, lambda idx: x[idx])
print("from callback", np.asarray(made).tolist(),
      [s.device == d for s, d in zip(made.addressable_shards, jax.devices())],
      [list(s.data.devices())[0] == s.device for s in made.addressable_shards])
pieces = [jax.device_put(x[2 * k:2 * k + 2] * 2, d) for k, d in enumerate(jax.devices())]
made = jax.make_array_from_single_device_arrays((8, 2), sh, pieces)
print("from arrays", np.asarray(made).tolist(),
      [list(s.data.devices())[0] == s.device for s in made.addressable_shards])
print("replica ids", [s.replica_id for s in
                      jax.device_put(x, NamedSharding(mesh2, P("a"))).addressable_shards])
print("device_get", jax.device_get(xs).sum(), jax.typeof(xs), xs.sharding.spec)
one = jax.device_put(jnp.ones(3), jax.devices()[2])
print("committed to", one.devices() == {jax.devices()[2]}, (one * 2).devices() == {
    jax.devices()[2]})
error("divisible", lambda: jax.device_put(np.arange(6.0), NamedSharding(mesh, P("i"))),
      "partitioned 4 times", "(6,)")
error("unknown axis", lambda: NamedSharding(mesh, P("q")), "q")

# ---------------------------------------------------------------- pmap
show("pmap", jax.pmap(lambda v: v * 2 + lax.psum(v, "d"), "d")(jnp.arange(4.0)))
show("pmap in_axes", jax.pmap(lambda v, w: v * w, "d", in_axes=(0, None))(
    jnp.arange(8.0).reshape(4, 2), jnp.array([1.0, 3.0])))
show("pmap out_axes", jax.pmap(lambda v: v + 1, "d", out_axes=1)(
    jnp.arange(8.0).reshape(4, 2)))
show("pmap of vmap", jax.pmap(jax.vmap(lambda v: lax.psum(v, "d") + lax.psum(v, "v"),
                                       axis_name="v"), "d")(jnp.arange(8.0).reshape(4, 2)))
show("pmap index", jax.pmap(lambda v: v * lax.axis_index("d"), "d")(jnp.ones(4)))
show("grad pmap", jax.grad(lambda v: jax.pmap(lambda u: lax.psum(u ** 2, "d"), "d")(v).sum())(
    jnp.arange(4.0)))
show("jit pmap", jax.jit(jax.pmap(lambda v: lax.pmax(v, "d"), "d"))(jnp.arange(4.0)))
error("pmap size", lambda: jax.pmap(lambda v: v)(jnp.arange(5.0)), "5")

# ---------------------------------------------------------------- shard_map derivatives
f = jax.shard_map(lambda b: lax.psum(jnp.sum(jnp.sin(b) * b), "i"), mesh=mesh,
                  in_specs=P("i"), out_specs=P())
show("smap", f(xs))
show("grad smap", jax.grad(f)(xs))
show("jit grad smap", jax.jit(jax.grad(f))(xs))
show("jvp smap", jax.jvp(f, (xs,), (jnp.ones_like(xs),))[1])
g = jax.shard_map(lambda b, w: lax.all_gather(b @ w, "i", tiled=True), mesh=mesh,
                  in_specs=(P("i"), P()), out_specs=P(), check_vma=False)
w = jnp.array([[1.0, -1.0], [0.5, 2.0]])
show("grad gather", jax.grad(lambda a, b: jnp.sum(g(a, b) ** 2), argnums=(0, 1))(xs, w)[1])


@jax.jit
@partial(jax.shard_map, mesh=Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b")),
         in_specs=P("a", "b"), out_specs=P("a", "b"))
def collectives(b):
    s = lax.psum_scatter(b, "a", scatter_dimension=0, tiled=True)
    t = lax.all_to_all(b, "b", 0, 0, tiled=True)
    p = lax.ppermute(b, "a", [(0, 1), (1, 0)])
    return jnp.concatenate([jnp.tile(s, (2, 1)), t, p], axis=1)


show("collectives", collectives(jnp.arange(32.0).reshape(4, 8)))
show("grad collectives", jax.grad(lambda v: jnp.sum(collectives(v) ** 2))(
    jnp.arange(32.0).reshape(4, 8)))


@partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
def ring(b):
    def step(c, _):
        return lax.ppermute(c, "i", [(k, (k + 1) % 4) for k in range(4)]) + 1.0, c.sum()
    c, ys = lax.scan(step, b, None, length=3)
    return c + ys.sum()


show("scan ppermute", ring(xs))
show("jit scan ppermute", jax.jit(ring)(xs))
error("unbound name", lambda: jax.shard_map(lambda b: lax.psum(b, "zz"), mesh=mesh,
                                            in_specs=P("i"), out_specs=P("i"))(xs))
error("bad spec", lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("q"),
                                        out_specs=P("q"))(xs), "q")
error("replication", lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("i"),
                                           out_specs=P())(xs), "out_specs", "'i'")
show("check_vma off", jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("i"), out_specs=P(),
                                    check_vma=False)(xs))

# ---------------------------------------------------------------- jit over sharded arrays
auto2 = Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))
ys = jax.device_put(x, NamedSharding(auto2, P("a", "b")))
h = jax.jit(lambda v: (jnp.exp(v) * 2).sum(0) + v.max())
show("jit sharded", h(ys))
show("matmul batch sharded", jax.jit(lambda v, m: jnp.tanh(v @ m))(xs, w))
r = jax.jit(lambda v: v * 3, out_shardings=NamedSharding(auto2, P(None, "b")))(x)
print("out_shardings", r.sharding.spec, np.asarray(r).sum())
c = jax.jit(lambda v: lax.with_sharding_constraint(v + 1, NamedSharding(mesh, P("i"))))(x)
print("constraint", c.sharding.spec, np.asarray(c).sum())
show("grad sharded", jax.grad(lambda v: jnp.sum(jnp.sin(v) ** 2))(ys))
