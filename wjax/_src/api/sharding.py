"""Laying values out over devices: ``with_sharding_constraint`` (and ``jax.reshard``),
``auto_axes``/``explicit_axes``, and the placements of ``jit``'s ``in_shardings``/
``out_shardings`` and of jnp's ``out_sharding=`` arguments.

A constraint is the ``sharding_constraint`` primitive: eagerly it lays the value out at once
(``put``), on one device it is the value itself, and inside ``jit`` the partitioner
(``wjax/_src/partition.py``) honours it when it splits the program over the mesh.
"""
from __future__ import annotations

import threading

from .. import dispatch
from ..array import put
from ..core import ops, tree_util
from ..core.mesh import AxisType, Mesh, get_mesh, set_mesh
from ..core.partition_spec import PartitionSpec
from ..core.primitive import Primitive
from ..core.tracing import Tracer
from ..sharding_impls import NamedSharding, current_sharding
from ..transforms import ad as _ad

sharding_constraint_p = Primitive("sharding_constraint")
sharding_constraint_p.def_abstract_eval(lambda x, *, sharding: x)
sharding_constraint_p.def_reference(lambda x, *, sharding: x)
sharding_constraint_p.expand = lambda x, *, sharding: x      # one device: the value itself
sharding_constraint_p.batch = lambda args, dims, *, sharding: (args[0], dims[0])
_ad.deflinear(sharding_constraint_p, lambda ct, x, *, sharding: [ct])


def _constraint_impl(x, *, sharding):
    return put(dispatch.device_array(x), sharding)


sharding_constraint_p.impl = _constraint_impl


def resolve(s):
    """A sharding, with a ``P`` made a ``NamedSharding`` over the current mesh."""
    return current_sharding(s) if isinstance(s, PartitionSpec) else s


def s_is_leaf(s) -> bool:
    return s is None or isinstance(s, (PartitionSpec, NamedSharding)) or hasattr(s,
                                                                                "device_set")


def with_sharding_constraint(x, shardings):
    """``x`` (a pytree) laid out by ``shardings`` (a sharding, a ``P`` over the current mesh,
    or a pytree of them): inside ``jit`` a constraint the partitioner honours."""
    def one(v, s):
        s = resolve(s)
        if isinstance(s, NamedSharding):
            s.check_shape(ops._aval(v).shape, "with_sharding_constraint")
        return sharding_constraint_p.bind(ops._as_operand(v), sharding=s)
    if s_is_leaf(shardings):
        return tree_util.tree_map(lambda v: one(v, shardings), x)
    return tree_util.tree_map(one, x, shardings)


def reshard(x, out_shardings):
    """``x`` laid out by ``out_shardings`` (``device_put`` outside ``jit``, a sharding
    constraint inside)."""
    return with_sharding_constraint(x, out_shardings)


def place(x, s):
    """``x`` laid out by the sharding ``s`` (``jit``'s ``in_shardings``/``out_shardings``,
    jnp's ``out_sharding=``): a concrete value at once; a traced one is constrained (the
    partitioner then honours it)."""
    if isinstance(x, Tracer):
        return with_sharding_constraint(x, s)
    return put(dispatch.device_array(x), resolve(s))


def _given(out_sharding):
    """``out_sharding`` as a placement, or None: a sharding over the empty mesh (what
    ``jax.typeof(x).sharding`` is for an array of no mesh, which optax passes on to
    ``jax.random.normal``) places nothing, as in JAX."""
    mesh = getattr(out_sharding, "mesh", None)
    return None if mesh is not None and getattr(mesh, "empty", False) else out_sharding


def apply_out_sharding(x, out_sharding):
    """The ``out_sharding=`` argument of a jnp (or ``jax.random``) function applied to its
    result."""
    out_sharding = _given(out_sharding)
    return x if out_sharding is None else place(x, out_sharding)


class _OutSharding(threading.local):
    depth = 0


out_sharding_given = _OutSharding()     # > 0 while a result with an out_sharding is computed


class out_sharding_scope:
    """Marks the computation of a result that has an ``out_sharding=`` (the partitioner then
    leaves an ambiguous contraction's layout to it)."""

    def __init__(self, out_sharding):
        self.on = _given(out_sharding) is not None

    def __enter__(self):
        out_sharding_given.depth += self.on

    def __exit__(self, *exc):
        out_sharding_given.depth -= self.on


def _with_types(mesh: Mesh, axes, kind: AxisType) -> Mesh:
    names = mesh.axis_names if axes is None else (
        (axes,) if isinstance(axes, str) else tuple(axes))
    types = tuple(kind if a in names else t for a, t in zip(mesh.axis_names, mesh.axis_types))
    return Mesh(mesh.devices, mesh.axis_names, axis_types=types)


def _spec(sharding):
    """The partition spec of a NamedSharding, or ``sharding`` itself (a spec)."""
    return sharding.spec if isinstance(sharding, NamedSharding) else sharding


def auto_axes(fun=None, *, axes=None, out_sharding=None):
    """``fun`` with the current mesh's axes (``axes``, all by default) of ``Auto`` type, so
    shardings are the partitioner's choice inside; the wrapped function takes
    ``out_sharding=`` (or uses the decorator's) for its result."""
    if fun is None:
        return lambda f: auto_axes(f, axes=axes, out_sharding=out_sharding)

    def wrapped(*args, out_sharding=out_sharding, **kwargs):
        mesh = get_mesh()
        if mesh is None:
            raise ValueError("auto_axes needs a mesh: use jax.set_mesh(mesh)")
        with set_mesh(_with_types(mesh, axes, AxisType.Auto)):
            out = fun(*args, **kwargs)
        if out_sharding is None:
            return out
        return with_sharding_constraint(out, NamedSharding(mesh, _spec(out_sharding)))
    return wrapped


def explicit_axes(fun=None, *, axes=None, in_sharding=None):
    """``fun`` with the current mesh's axes (``axes``, all by default) of ``Explicit`` type;
    the wrapped function takes ``in_sharding=`` (or uses the decorator's) for its
    arguments."""
    if fun is None:
        return lambda f: explicit_axes(f, axes=axes, in_sharding=in_sharding)

    def wrapped(*args, in_sharding=in_sharding, **kwargs):
        mesh = get_mesh()
        if mesh is None:
            raise ValueError("explicit_axes needs a mesh: use jax.set_mesh(mesh)")
        emesh = _with_types(mesh, axes, AxisType.Explicit)
        with set_mesh(emesh):
            if in_sharding is not None:
                args = with_sharding_constraint(args, NamedSharding(emesh, _spec(in_sharding)))
            return fun(*args, **kwargs)
    return wrapped
