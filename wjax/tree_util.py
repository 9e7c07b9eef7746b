"""``jax.tree_util`` (public names; the implementation is ``wjax/_src/core/tree_util.py``)."""
from ._src.core import tree as _tree
from ._src.core import tree_util as _impl
from ._src.core.tree_util import *  # noqa: F401,F403

# typed PRNG keys are leaves here (wjax's transformations see them as nodes over their data):
# the public views are wjax.tree's
from .tree import (flatten as tree_flatten, leaves as tree_leaves,  # noqa: E402,F401
                   structure as tree_structure, map as tree_map, reduce as tree_reduce,
                   all as tree_all, flatten_with_path as tree_flatten_with_path,
                   leaves_with_path as tree_leaves_with_path,
                   map_with_path as tree_map_with_path,
                   reduce_associative as tree_reduce_associative)
from ._src.core.tree import (default_registry, flatten_one_level,  # noqa: E402,F401
                        flatten_one_level_with_keys)


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
