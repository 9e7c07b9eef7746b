"""Pytrees: JAX's tree utilities (exposed as ``wjax.tree``; classic names in ``wjax.tree_util``).

A pytree is a nested structure of registered *node* types (``None``, tuple, list, dict,
namedtuples, ``OrderedDict``, ``defaultdict`` and anything registered) with everything else
as a *leaf*.  ``flatten`` turns a tree into a list of leaves plus a ``PyTreeDef`` describing
the structure; ``PyTreeDef.unflatten`` rebuilds it.  Semantics follow JAX:

* ``None`` is a node with no children (so it has no leaves) unless ``is_leaf`` says otherwise.
* dict keys are sorted when flattening; rebuilt dicts have sorted key order.
* ``OrderedDict`` keeps its order, ``defaultdict`` is sorted and keeps its ``default_factory``.
* a namedtuple (a tuple subclass with ``_fields``) is a node of its own type.
* subclasses of list/dict/tuple (other than namedtuples) are leaves unless registered.

All node types live in one registry, ``_registry: type -> _Entry(kind, flatten, unflatten,
flatten_with_keys)``, and there is one recursive ``_flatten``.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from typing import Any, Callable, Hashable, Iterable, NamedTuple, TypeVar

__all__ = [
    "PyTreeDef", "flatten", "unflatten", "structure", "leaves", "map", "reduce", "all",
    "transpose", "broadcast", "flatten_with_path", "leaves_with_path", "map_with_path",
    "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "keystr",
    "flatten_up_to", "broadcast_prefix",
]

_builtin_map, _builtin_all = map, all   # shadowed below by the jax.tree names


# ---------------------------------------------------------------------------------------
# Key path entries
# ---------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Index into a tuple or list: prints as ``[0]``."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    """Key into a dict-like node: prints as ``['a']``."""
    key: Hashable

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute of a namedtuple or dataclass: prints as ``.x``."""
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """Position among the children of a custom node registered without keys."""
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def _simple_keystr(k) -> str:
    for cls, attr in ((SequenceKey, "idx"), (DictKey, "key"), (GetAttrKey, "name"),
                      (FlattenedIndexKey, "key")):
        if isinstance(k, cls):
            return str(getattr(k, attr))
    return str(k)


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """Pretty-prints a key path: ``keystr((DictKey('a'), SequenceKey(0))) == "['a'][0]"``.

    With ``simple=True`` entries print bare (``a``, ``0``, ``x``), joined by ``separator``.
    """
    return separator.join(_builtin_map(_simple_keystr if simple else str, keys))


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------

KeyEntry = TypeVar("KeyEntry")          # one step of a path: SequenceKey, DictKey, ...
KeyPath = tuple[KeyEntry, ...]          # the path to a leaf, as tree_flatten_with_path gives


class _Entry(NamedTuple):
    kind: str                      # none | tuple | list | dict | namedtuple | custom | dataclass
    flatten: Callable              # x -> (children, aux)
    unflatten: Callable            # (aux, children) -> x
    flatten_with_keys: Callable    # x -> ([(key, child), ...], aux)


_registry: dict[type, _Entry] = {}


def _register(nodetype, kind, flatten_fn, unflatten_fn, flatten_with_keys_fn=None):
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype!r}.")
    if flatten_with_keys_fn is None:
        def flatten_with_keys_fn(x):
            children, aux = flatten_fn(x)
            return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux
    _registry[nodetype] = _Entry(kind, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def _sorted_keys(d) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError as e:
        raise ValueError("Comparator raised exception while sorting pytree dictionary "
                         "keys.") from e


def _seq_keys(xs):
    return [(SequenceKey(i), x) for i, x in enumerate(xs)], None


def _dict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], keys


_register(type(None), "none", lambda x: ((), None), lambda aux, xs: None,
          lambda x: ((), None))
_register(tuple, "tuple", lambda xs: (xs, None), lambda aux, xs: tuple(xs), _seq_keys)
_register(list, "list", lambda xs: (xs, None), lambda aux, xs: list(xs), _seq_keys)
_register(dict, "dict", _dict_flatten, lambda keys, xs: dict(zip(keys, xs)),
          lambda d: ([(DictKey(k), d[k]) for k in _sorted_keys(d)], _sorted_keys(d)))
_register(collections.OrderedDict, "custom",
          lambda d: (tuple(d.values()), tuple(d.keys())),
          lambda keys, xs: collections.OrderedDict(zip(keys, xs)),
          lambda d: ([(DictKey(k), v) for k, v in d.items()], tuple(d.keys())))


def _defaultdict_flatten(d):
    keys = _sorted_keys(d)
    return [d[k] for k in keys], (d.default_factory, keys)


def _defaultdict_flatten_with_keys(d):
    children, aux = _defaultdict_flatten(d)
    return [(DictKey(k), c) for k, c in zip(aux[1], children)], aux


_register(collections.defaultdict, "custom", _defaultdict_flatten,
          lambda aux, xs: collections.defaultdict(aux[0], zip(aux[1], xs)),
          _defaultdict_flatten_with_keys)

# Namedtuples are recognised structurally (tuple subclass with ``_fields``), not by type.
_NAMEDTUPLE = _Entry(
    "namedtuple",
    lambda x: (tuple(x), type(x)),
    lambda typ, xs: typ(*xs),
    lambda x: ([(GetAttrKey(f), c) for f, c in zip(x._fields, x)], type(x)))


def _entry_for(x) -> _Entry | None:
    """The node entry for ``x``, or None if ``x`` is a leaf."""
    entry = _registry.get(type(x))
    if entry is None and isinstance(x, tuple) and hasattr(x, "_fields"):
        return _NAMEDTUPLE
    return entry


def is_tree_node(typ) -> bool:
    """Whether ``typ`` is a registered pytree node type (namedtuple types included)."""
    return typ in _registry or (isinstance(typ, type) and issubclass(typ, tuple)
                                and hasattr(typ, "_fields"))


# ---------------------------------------------------------------------------------------
# PyTreeDef
# ---------------------------------------------------------------------------------------

class PyTreeDef:
    """The structure of a pytree: an immutable, hashable tree of nodes with ``*`` leaves.

    Two treedefs are equal iff their node types, node aux data (dict keys, namedtuple
    types, custom aux data) and shapes agree.  Prints like JAX: ``PyTreeDef((*, [*, *]))``.
    """
    __slots__ = ("_entry", "_type", "_aux", "_children", "_num_leaves", "_num_nodes",
                 "_hash")

    def __init__(self, entry: _Entry | None, typ: type | None, aux: Any,
                 children: tuple[PyTreeDef, ...] = ()):
        self._entry, self._type, self._aux, self._children = entry, typ, aux, tuple(children)
        if entry is None:
            self._num_leaves, self._num_nodes = 1, 1
        else:
            leaves, nodes = 0, 1
            for c in self._children:
                leaves += c._num_leaves
                nodes += c._num_nodes
            self._num_leaves, self._num_nodes = leaves, nodes
        self._hash = None

    # --- properties -------------------------------------------------------------------
    @property
    def num_leaves(self) -> int:
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        return self._num_nodes

    def children(self) -> list[PyTreeDef]:
        return list(self._children)

    def node_data(self):
        """None for a leaf, else ``(node type, aux data)`` (sorted keys for dicts)."""
        if self._entry is None:
            return None
        if self._entry.kind == "dict":
            return dict, list(self._aux)
        if self._entry.kind == "namedtuple":
            return self._aux, None
        return self._type, self._aux

    # --- rebuilding -------------------------------------------------------------------
    def unflatten(self, leaves: Iterable[Any]) -> Any:
        leaves = list(leaves)
        if len(leaves) != self._num_leaves:
            few = "few" if len(leaves) < self._num_leaves else "many"
            raise ValueError(f"Too {few} leaves for PyTreeDef; expected {self._num_leaves}, "
                             f"got {len(leaves)}.")
        return self._build(iter(leaves))

    def _build(self, it):
        if self._entry is None:
            return next(it)
        return self._entry.unflatten(self._aux, tuple(c._build(it) for c in self._children))

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Flattens ``tree`` up to this structure: one subtree of ``tree`` per leaf of self.

        Raises ValueError naming the mismatch when ``tree`` does not have this structure
        as a prefix.
        """
        out: list[Any] = []
        try:
            self._up_to(tree, out)
        except _Mismatch as e:
            try:
                got = str(structure(tree))
            except Exception:   # e.g. unsortable dict keys
                got = repr(tree)
            where = f"at key path {keystr(e.path)}" if e.path else "at the root"
            raise ValueError(f"{e.args[0]} ({where})\nTree structures did not match: expected "
                             f"a tree with prefix {self}, got {got}.") from None
        return out

    def _up_to(self, x, out):
        entry = self._entry
        if entry is None:
            out.append(x)
            return
        kind, n = entry.kind, len(self._children)
        if kind == "none":
            if x is not None:
                raise _Mismatch(f"Expected None, got {x!r}.")
            return
        if kind in ("tuple", "list", "dict"):
            if type(x) is not self._type:
                raise _Mismatch(f"Expected {kind}, got {x!r}.")
            if kind == "dict":
                keys = _sorted_keys(x)
                if keys != self._aux:
                    raise _Mismatch(f"Dict key mismatch; expected keys: {list(self._aux)!r}; "
                                    f"present keys: {list(keys)!r}.")
                children = [x[k] for k in keys]
            else:
                children = x
                if len(x) != n:
                    raise _Mismatch(f"{kind.capitalize()} arity mismatch: {len(x)} != {n}; "
                                    f"{kind}: {x!r}.")
        elif kind == "namedtuple":
            if not (isinstance(x, tuple) and hasattr(x, "_fields")):
                raise _Mismatch(f"Expected named tuple, got {x!r}.")
            if len(x) != n:
                raise _Mismatch(f"Named tuple arity mismatch: {len(x)} != {n}; tuple: {x!r}.")
            if type(x) is not self._aux:
                raise _Mismatch(f"Named tuple type mismatch: expected type: {self._aux!r}, "
                                f"tuple: {x!r}.")
            children = x
        else:   # custom / dataclass
            if _registry.get(type(x)) is not entry:
                raise _Mismatch(f"Custom node type mismatch: expected type: {self._type!r}, "
                                f"value: {x!r}.")
            children, aux = entry.flatten(x)
            children = list(children)
            if not _aux_equal(aux, self._aux):
                raise _Mismatch(f"Mismatch custom node data: {self._aux!r} != {aux!r}; "
                                f"value: {x!r}.")
            if len(children) != n:
                raise _Mismatch(f"Custom type arity mismatch: {len(children)} != {n}; "
                                f"value: {x!r}.")
        for i, (c, child_def) in enumerate(zip(children, self._children)):
            try:
                child_def._up_to(c, out)
            except _Mismatch as e:   # error path only: record where we were
                e.path.insert(0, entry.flatten_with_keys(x)[0][i][0])
                raise

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The treedef of this structure with every leaf replaced by ``inner``."""
        if self._entry is None:
            return inner
        return PyTreeDef(self._entry, self._type, self._aux,
                         tuple(c.compose(inner) for c in self._children))

    # --- equality, hashing, printing ----------------------------------------------------
    def __eq__(self, other):
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        if self is other:
            return True
        if (self._entry is not other._entry or self._type is not other._type
                or self._num_nodes != other._num_nodes
                or self._num_leaves != other._num_leaves
                or len(self._children) != len(other._children)
                or not _aux_equal(self._aux, other._aux)):
            return False
        for a, b in zip(self._children, other._children):
            if a is not b and not a == b:       # (every leaf is one object)
                return False
        return True

    def __hash__(self):
        if self._hash is None:
            try:
                aux_hash = hash(self._aux)
            except TypeError:   # unhashable aux data: equality still works
                aux_hash = 0
            self._hash = hash((self._type, aux_hash, self._children))
        return self._hash

    def __copy__(self):   # immutable
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return f"PyTreeDef({self._str()})"

    def _str(self) -> str:
        if self._entry is None:
            return "*"
        kind = self._entry.kind
        kids = [c._str() for c in self._children]
        if kind == "none":
            return "None"
        if kind == "tuple":
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if kind == "list":
            return "[" + ", ".join(kids) + "]"
        if kind == "dict":
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self._aux, kids)) + "}"
        if kind == "namedtuple":
            name, data = "namedtuple", self._aux.__name__
        else:
            name, data = self._type.__name__, str(self._aux)
        return f"CustomNode({name}[{data}], [{', '.join(kids)}])"


class _Mismatch(Exception):
    def __init__(self, msg):
        super().__init__(msg)
        self.path: list = []


def _aux_equal(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception as e:
        raise ValueError("Exception raised while checking equality of metadata fields of "
                         "pytree. Make sure that metadata fields are hashable and have simple "
                         "equality semantics. (Note: arrays cannot be passed as metadata "
                         "fields!)") from e


_LEAF = PyTreeDef(None, None, None)

# Types registered as pytree nodes for wjax's transformations (which decompose them into plain
# arrays) that are single leaves to users, as in JAX: typed PRNG key arrays.  The public
# ``jax.tree_util``/``jax.tree`` functions (``public_view``) treat them as leaves.
ARRAY_NODES: set[type] = set()


def public_view(fn: Callable) -> Callable:
    """``fn`` (a function with an ``is_leaf`` argument) seeing ``ARRAY_NODES`` as leaves."""
    def wrapped(*args, is_leaf=None, is_leaf_takes_path=False, **kwargs):
        def leaf(*a):
            x = a[-1]
            return type(x) in ARRAY_NODES or (is_leaf is not None and is_leaf(*a))
        if is_leaf_takes_path:
            kwargs["is_leaf_takes_path"] = True
        return fn(*args, is_leaf=leaf, **kwargs)
    functools.update_wrapper(wrapped, fn)
    return wrapped



def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """A tuple treedef whose children are ``treedefs``."""
    return PyTreeDef(_registry[tuple], tuple, None, tuple(treedefs))


# ---------------------------------------------------------------------------------------
# Flattening
# ---------------------------------------------------------------------------------------

def _flatten(x, is_leaf, out, path, leaf_takes_path):
    """The one recursive flatten.  ``path`` is None (no key tracking) or a tuple of keys;
    with keys, ``out`` receives ``(path, leaf)`` pairs."""
    if is_leaf is not None and (is_leaf(path, x) if leaf_takes_path else is_leaf(x)):
        entry = None
    else:
        entry = _entry_for(x)
    if entry is None:
        out.append(x if path is None else (path, x))
        return _LEAF
    if path is None:
        children, aux = entry.flatten(x)
        kids = tuple([_flatten(c, is_leaf, out, None, False) for c in children])
    else:
        key_children, aux = entry.flatten_with_keys(x)
        kids = tuple(_flatten(c, is_leaf, out, path + (k,), leaf_takes_path)
                     for k, c in key_children)
    return PyTreeDef(entry, type(x), aux, kids)


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
            ) -> tuple[list[Any], PyTreeDef]:
    """Flattens a pytree into ``(leaves, treedef)``."""
    out: list[Any] = []
    treedef = _flatten(tree, is_leaf, out, None, False)
    return out, treedef


def unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuilds a pytree from a treedef and its leaves."""
    return treedef.unflatten(leaves)


def structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return flatten(tree, is_leaf)[1]


def leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return flatten(tree, is_leaf)[0]


def flatten_up_to(prefix_treedef: PyTreeDef, tree: Any) -> list[Any]:
    """Flattens ``tree`` up to ``prefix_treedef``: one subtree per prefix leaf."""
    return prefix_treedef.flatten_up_to(tree)


def map(f: Callable[..., Any], tree: Any, *rest: Any,
        is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` applied leafwise; each of ``rest`` must have ``tree``'s structure as a prefix."""
    leaves_, treedef = flatten(tree, is_leaf)
    all_leaves = [leaves_] + [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


_NO_INIT = object()


def reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INIT,
           is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``functools.reduce`` over the leaves of ``tree`` (``initializer`` optional)."""
    if initializer is _NO_INIT:
        return functools.reduce(function, leaves(tree, is_leaf))
    return functools.reduce(function, leaves(tree, is_leaf), initializer)


def all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """``all()`` over the leaves of ``tree``."""
    return _builtin_all(leaves(tree, is_leaf))


def transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
              pytree_to_transpose: Any) -> Any:
    """Turns a tree of structure (outer, inner) into one of structure (inner, outer)."""
    flat, treedef = flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    inner_size, outer_size = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner_size * outer_size:
        raise TypeError(f"Mismatch\n{treedef}\n != \n{outer_treedef.compose(inner_treedef)}")
    lol = [flat[i * inner_size:(i + 1) * inner_size] for i in range(outer_size)]
    subtrees = [outer_treedef.unflatten(col) for col in zip(*lol)] if outer_size else \
        [outer_treedef.unflatten([]) for _ in range(inner_size)]
    return inner_treedef.unflatten(subtrees)


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None, *,
                     none_is_leaf: bool = True) -> list[Any]:
    """One entry per leaf of ``full_tree``: the prefix leaf above it, broadcast.

    With ``none_is_leaf`` (default, as vmap's ``in_axes=None`` needs) a ``None`` in the
    prefix is a leaf broadcast over its subtree.  ``is_leaf`` applies to the prefix only.
    Raises ValueError if ``prefix_tree`` is not a prefix of ``full_tree``.
    """
    pred = is_leaf
    if none_is_leaf:
        pred = (lambda x: x is None) if is_leaf is None else \
            (lambda x: x is None or is_leaf(x))
    prefix_leaves, prefix_def = flatten(prefix_tree, pred)
    out: list[Any] = []
    for p, sub in zip(prefix_leaves, prefix_def.flatten_up_to(full_tree)):
        out.extend([p] * structure(sub).num_leaves)
    return out


def broadcast(prefix_tree: Any, full_tree: Any,
              is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``jax.tree.broadcast``: a tree shaped like ``full_tree`` holding the prefix leaves."""
    return structure(full_tree).unflatten(
        broadcast_prefix(prefix_tree, full_tree, is_leaf, none_is_leaf=False))


# --- key paths ---------------------------------------------------------------------------

def flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                      is_leaf_takes_path: bool = False
                      ) -> tuple[list[tuple[tuple, Any]], PyTreeDef]:
    """Like ``flatten`` but each leaf comes as ``(key_path, leaf)``."""
    out: list[Any] = []
    treedef = _flatten(tree, is_leaf, out, (), is_leaf_takes_path)
    return out, treedef


def leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                     is_leaf_takes_path: bool = False) -> list[tuple[tuple, Any]]:
    return flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                  is_leaf: Callable[..., bool] | None = None,
                  is_leaf_takes_path: bool = False) -> Any:
    """``f(key_path, leaf, *rest_leaves)`` applied leafwise."""
    pairs, treedef = flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    all_leaves = [[p for p, _ in pairs], [x for _, x in pairs]]
    all_leaves += [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(*all_leaves))


# ---------------------------------------------------------------------------------------
# Registration (exposed through wjax.tree_util)
# ---------------------------------------------------------------------------------------

def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Registers ``nodetype`` as a node: ``flatten_func(x) -> (children, aux)`` and
    ``unflatten_func(aux, children) -> x``.  Registering a type twice raises ValueError."""
    def flatten_fn(x):
        children, aux = flatten_func(x)
        return tuple(children), aux
    fwk = None
    if flatten_with_keys_func is not None:
        def fwk(x):
            key_children, aux = flatten_with_keys_func(x)
            return list(key_children), aux
    _register(nodetype, "custom", flatten_fn, unflatten_func, fwk)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
    """Registers ``nodetype`` with a key-aware ``flatten_with_keys(x) -> ([(key, child)], aux)``."""
    if flatten_func is None:
        def flatten_func(x):
            key_children, aux = flatten_with_keys(x)
            return [c for _, c in key_children], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_node_class(cls):
    """Class decorator: ``cls`` defines ``tree_flatten(self)`` and classmethod
    ``tree_unflatten(cls, aux, children)``."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator using ``tree_flatten_with_keys`` (and ``tree_flatten`` if defined)."""
    flat = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flat)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Registers a dataclass-like type: ``data_fields`` are children, ``meta_fields`` are
    static aux data; rebuilt with ``nodetype(**fields)``.

    Without field lists, ``nodetype`` must be a dataclass; fields declared with
    ``dataclasses.field(metadata=dict(static=True))`` are meta, the rest data.  Usable as
    ``@register_dataclass`` or ``register_dataclass(C, data_fields=[...], meta_fields=[...])``
    (also via ``functools.partial`` as a decorator).
    """
    if nodetype is None:
        return lambda cls: register_dataclass(cls, data_fields, meta_fields, drop_fields)
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                            "specified when either is specified. Got "
                            f"data_fields={data_fields!r} meta_fields={meta_fields!r}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required "
                            f"when nodetype is not a dataclass. Got nodetype={nodetype!r}.")
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*data_fields, *meta_fields}
        if given != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass fields with "
                   "``init=True`` and only them.")
            if missing := init_fields - given:
                msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress "
                        "this error.")
            if unexpected := given - init_fields:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)

    def flatten_fn(x):
        return (tuple(getattr(x, n) for n in data_fields),
                tuple(getattr(x, n) for n in meta_fields))

    def flatten_with_keys_fn(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten_fn(meta, data):
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))

    _register(nodetype, "dataclass", flatten_fn, unflatten_fn, flatten_with_keys_fn)
    return nodetype


def register_static(cls):
    """Registers ``cls`` as a node with no children: instances are static (live in aux)."""
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _: obj)
    return cls


class _HashableCallableShim:
    """Delegates ``__call__``, ``__hash__`` and ``__eq__`` to a wrapped callable."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kw):
        return self.fun(*args, **kw)

    def __hash__(self):
        return hash(self.fun)

    def __eq__(self, other):
        if isinstance(other, _HashableCallableShim):
            return self.fun == other.fun
        return self.fun == other

    def __repr__(self):
        return f"_HashableCallableShim({self.fun!r})"


class Partial(functools.partial):
    """``functools.partial`` that is a pytree: ``func`` is static, args/keywords are leaves."""

    def __new__(klass, func, *args, **kw):
        # functools.partial would merge a nested partial's arguments into this one; box it so
        # exactly the arguments given here are the pytree children.
        if isinstance(func, functools.partial):
            original = func
            func = _HashableCallableShim(original)
            out = super().__new__(klass, func, *args, **kw)
            func.func, func.args, func.keywords = original.func, original.args, original.keywords
            return out
        return super().__new__(klass, func, *args, **kw)


register_pytree_node(Partial,
                     lambda p: ((p.args, p.keywords), p.func),
                     lambda func, xs: Partial(func, *xs[0], **xs[1]))


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element of ``iterable`` is a leaf."""
    if is_leaf is None:
        return _builtin_all(_entry_for(x) is None for x in iterable)
    lst = list(iterable)
    return lst == leaves(lst, is_leaf)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True if the treedef has a single node (a leaf, or ``None``)."""
    return treedef.num_nodes == 1


def treedef_is_strict_leaf(treedef: PyTreeDef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return treedef.children()


# ---------------------------------------------------------------------------------------
# One level, associative reductions, the registry object, static dataclass fields
# ---------------------------------------------------------------------------------------

def flatten_one_level(tree: Any):
    """``(children, aux data)`` of the top node of ``tree`` (ValueError for a leaf)."""
    entry = _entry_for(tree)
    if entry is None or type(tree) in ARRAY_NODES:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = entry.flatten(tree)
    # as JAX's registry hands them out: a list for namedtuples, a tuple otherwise
    return (list(children) if entry is _NAMEDTUPLE else tuple(children)), aux


def flatten_one_level_with_keys(tree: Any):
    """``((key, child) pairs, aux data)`` of the top node of ``tree``."""
    entry = _entry_for(tree)
    if entry is None or type(tree) in ARRAY_NODES:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    pairs, aux = entry.flatten_with_keys(tree)
    return tuple(tuple(p) for p in pairs), aux


def _parallel_reduce(seq, op, identity):
    if not seq:
        if identity is _NO_INIT:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    if len(seq) == 1:
        return seq[0]
    mid = len(seq) // 2
    return op(_parallel_reduce(seq[:mid], op, identity),
              _parallel_reduce(seq[mid:], op, identity))


def reduce_associative(operation: Callable[[Any, Any], Any], tree: Any, *,
                       identity: Any = _NO_INIT, is_leaf: Callable[[Any], bool] | None = None):
    """The leaves of ``tree`` combined with the associative ``operation`` as a balanced tree
    of calls (``identity`` for an empty tree)."""
    return _parallel_reduce(leaves(tree, is_leaf=is_leaf), operation, identity)


def static(**kwargs):
    """A dataclass field marked static (``metadata={'static': True}``): ``register_dataclass``
    keeps it in the tree's aux data."""
    metadata = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)


class PyTreeRegistry:
    """The registry of pytree node types (``jax.tree_util.default_registry``)."""

    def flatten(self, tree, leaf_predicate=None):
        return public_view(flatten)(tree, is_leaf=leaf_predicate)

    def flatten_one_level(self, tree):
        return flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree):
        return flatten_one_level_with_keys(tree)

    def flatten_with_path(self, tree, leaf_predicate=None):
        return public_view(flatten_with_path)(tree, is_leaf=leaf_predicate)

    def is_node(self, typ) -> bool:
        return is_tree_node(typ)

    def register_node(self, nodetype, flatten_func, unflatten_func,
                      flatten_with_keys_func=None):
        if flatten_with_keys_func is None:
            register_pytree_node(nodetype, flatten_func, unflatten_func)
        else:
            register_pytree_with_keys(nodetype, flatten_with_keys_func, unflatten_func,
                                      flatten_func)

    def register_dataclass_node(self, nodetype, data_fields, meta_fields):
        register_dataclass(nodetype, list(data_fields), list(meta_fields))


default_registry = PyTreeRegistry()
__all__ += ["flatten_one_level", "flatten_one_level_with_keys", "reduce_associative", "static",
            "default_registry"]


def flatten_call(fun: Callable, in_tree: PyTreeDef):
    """``(flat, out_tree)`` for tracing ``fun`` over flat leaves: ``flat(*leaves)`` calls
    ``fun`` on the positional arguments ``in_tree`` rebuilds from ``leaves`` and returns the
    leaves of its output; ``out_tree()`` is that output's structure (from the last call)."""
    box = []

    def flat(*leaves):
        out_leaves, tree = flatten(fun(*unflatten(in_tree, list(leaves))))
        box.append(tree)
        return out_leaves

    return flat, lambda: box[-1]
