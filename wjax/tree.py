"""``jax.tree`` (public names; the implementation is ``wjax/_src/core/tree.py``)."""
from ._src.core import tree as _impl
from ._src.core.tree import *  # noqa: F401,F403

# typed PRNG keys are leaves here (wjax's transformations see them as nodes over their data)
flatten = _impl.public_view(_impl.flatten)
leaves = _impl.public_view(_impl.leaves)
structure = _impl.public_view(_impl.structure)
map = _impl.public_view(_impl.map)
reduce = _impl.public_view(_impl.reduce)
all = _impl.public_view(_impl.all)
flatten_with_path = _impl.public_view(_impl.flatten_with_path)
leaves_with_path = _impl.public_view(_impl.leaves_with_path)
map_with_path = _impl.public_view(_impl.map_with_path)
reduce_associative = _impl.public_view(_impl.reduce_associative)


def __getattr__(name):
    return getattr(_impl, name)
