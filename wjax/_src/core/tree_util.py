"""JAX's ``jax.tree_util`` names over :mod:`wjax.tree` (exposed as ``wjax.tree_util``)."""
from __future__ import annotations

from wjax._src.core.tree import (PyTreeDef, SequenceKey, DictKey, GetAttrKey, FlattenedIndexKey,
                                 KeyEntry, KeyPath, keystr, Partial, register_pytree_node,
                                 register_pytree_node_class, register_pytree_with_keys,
                                 register_pytree_with_keys_class, register_dataclass,
                                 register_static, is_tree_node, all_leaves, treedef_is_leaf,
                                 treedef_is_strict_leaf, treedef_children, treedef_tuple,
                                 flatten_up_to, broadcast_prefix, flatten as tree_flatten, unflatten
                                 as tree_unflatten, structure as tree_structure, leaves as
                                 tree_leaves, map as tree_map, reduce as tree_reduce, all as
                                 tree_all, transpose as tree_transpose, broadcast as tree_broadcast,
                                 flatten_with_path as tree_flatten_with_path, leaves_with_path as
                                 tree_leaves_with_path, map_with_path as tree_map_with_path)

__all__ = [
    "PyTreeDef", "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "KeyEntry",
    "KeyPath", "keystr",
    "Partial", "register_pytree_node", "register_pytree_node_class",
    "register_pytree_with_keys", "register_pytree_with_keys_class", "register_dataclass",
    "register_static", "is_tree_node", "all_leaves", "treedef_is_leaf", "treedef_children",
    "treedef_tuple", "treedef_is_strict_leaf", "flatten_up_to", "broadcast_prefix",
    "tree_flatten", "tree_unflatten", "tree_structure", "tree_leaves",
    "tree_map", "tree_reduce", "tree_all", "tree_transpose", "tree_broadcast",
    "tree_flatten_with_path", "tree_leaves_with_path", "tree_map_with_path",
]
