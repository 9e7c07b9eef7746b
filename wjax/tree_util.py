"""``jax.tree_util`` (public names; the implementation is ``wjax/core/tree_util.py``)."""
from .core import tree as _tree
from .core import tree_util as _impl
from .core.tree_util import *  # noqa: F401,F403

# typed PRNG keys are leaves here (wjax's transformations see them as nodes over their data)
tree_flatten = _tree.public_view(_tree.flatten)
tree_leaves = _tree.public_view(_tree.leaves)
tree_structure = _tree.public_view(_tree.structure)
tree_map = _tree.public_view(_tree.map)
tree_reduce = _tree.public_view(_tree.reduce)
tree_all = _tree.public_view(_tree.all)
tree_flatten_with_path = _tree.public_view(_tree.flatten_with_path)
tree_leaves_with_path = _tree.public_view(_tree.leaves_with_path)
tree_map_with_path = _tree.public_view(_tree.map_with_path)


def all_leaves(iterable, is_leaf=None) -> bool:
    """Whether every element of ``iterable`` is a leaf (a typed key is one)."""
    def one(x):
        if type(x) in _tree.ARRAY_NODES or (is_leaf is not None and is_leaf(x)):
            return True
        inner = _tree.leaves(x)
        return len(inner) == 1 and inner[0] is x
    return all(one(x) for x in iterable)


def __getattr__(name):
    return getattr(_impl, name)
