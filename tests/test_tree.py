"""Tests for wjax.tree / wjax.tree_util (JAX pytree semantics)."""
import collections
import dataclasses
import functools
import operator

import pytest
from hypothesis import given, strategies as st
from checks import examples

from wjax._src.core import tree
from wjax._src.core import tree_util as tu
from wjax._src.core.tree_util import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    Partial,
    PyTreeDef,
    SequenceKey,
)

Point = collections.namedtuple("Point", ["x", "y"])
Other = collections.namedtuple("Other", ["x", "y"])


# --- custom node types registered once, at import -------------------------------------

class Box:
    """Registered with register_pytree_node: children (a, b), aux = name."""

    def __init__(self, a, b, name="box"):
        self.a, self.b, self.name = a, b, name

    def __eq__(self, other):
        return (type(other) is Box and (self.a, self.b, self.name)
                == (other.a, other.b, other.name))


tu.register_pytree_node(Box, lambda x: ((x.a, x.b), x.name),
                        lambda name, ch: Box(*ch, name=name))


@tu.register_pytree_node_class
class Pair:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def tree_flatten(self):
        return (self.x, self.y), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    b: object
    act: str = dataclasses.field(default="relu", metadata=dict(static=True))


@dataclasses.dataclass
class Explicit:
    x: object
    y: object
    op: str


tu.register_dataclass(Explicit, data_fields=["x", "y"], meta_fields=["op"])


class Keyed:
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi


tu.register_pytree_with_keys(
    Keyed, lambda k: (((GetAttrKey("lo"), k.lo), (GetAttrKey("hi"), k.hi)), None),
    lambda aux, ch: Keyed(*ch))


@tu.register_static
@dataclasses.dataclass(frozen=True)
class Cfg:
    n: int


# --- random nested structures -----------------------------------------------------------

leaf_st = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, width=32),
                    st.text(max_size=3), st.just(None))
key_st = st.text(alphabet="abcdef", min_size=1, max_size=3)


def _extend(children):
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(key_st, children, max_size=4),
        st.tuples(children, children).map(lambda t: Point(*t)),
        st.dictionaries(key_st, children, max_size=3).map(collections.OrderedDict),
        st.dictionaries(key_st, children, max_size=3).map(
            lambda d: collections.defaultdict(list, d)),
        st.tuples(children, children).map(lambda t: Box(*t)),
        st.tuples(children, children).map(lambda t: Params(*t)),
    )


trees = st.recursive(leaf_st, _extend, max_leaves=20)


def _same(a, b):
    """Structural equality that also checks types and dict key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return (list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
                and getattr(a, "default_factory", None) is getattr(b, "default_factory", None))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Box):
        return a.name == b.name and _same(a.a, b.a) and _same(a.b, b.b)
    if isinstance(a, Params):
        return a.act == b.act and _same(a.w, b.w) and _same(a.b, b.b)
    return a == b


def _sort_dicts(t):
    """What a round trip should give: plain dicts rebuilt in sorted key order."""
    if type(t) is dict:
        return {k: _sort_dicts(t[k]) for k in sorted(t)}
    if type(t) is collections.OrderedDict:
        return collections.OrderedDict((k, _sort_dicts(v)) for k, v in t.items())
    if type(t) is collections.defaultdict:
        return collections.defaultdict(t.default_factory,
                                       {k: _sort_dicts(t[k]) for k in sorted(t)})
    if isinstance(t, Point):
        return Point(*map(_sort_dicts, t))
    if type(t) in (list, tuple):
        return type(t)(map(_sort_dicts, t))
    if isinstance(t, Box):
        return Box(_sort_dicts(t.a), _sort_dicts(t.b), t.name)
    if isinstance(t, Params):
        return Params(_sort_dicts(t.w), _sort_dicts(t.b), t.act)
    return t


@examples(200)
@given(trees)
def test_roundtrip_random(t):
    leaves, treedef = tree.flatten(t)
    assert None not in leaves
    assert len(leaves) == treedef.num_leaves
    assert _same(tree.unflatten(treedef, leaves), _sort_dicts(t))
    assert tree.structure(t) == treedef and hash(tree.structure(t)) == hash(treedef)
    assert tree.leaves(t) == leaves
    # map with the identity and with several trees
    assert _same(tree.map(lambda x: x, t), _sort_dicts(t))
    paired = tree.map(lambda a, b: [a, b], t, t)
    assert tree.structure(paired) == treedef.compose(tree.structure([0, 0]))
    assert tree.leaves(paired) == [y for x in leaves for y in (x, x)]
    # paths agree with leaves, and flatten_up_to with itself gives the leaves
    pairs, td2 = tree.flatten_with_path(t)
    assert td2 == treedef and [x for _, x in pairs] == leaves
    assert treedef.flatten_up_to(t) == leaves
    # children / num_nodes consistency
    kids = treedef.children()
    assert treedef.num_nodes == 1 + sum(c.num_nodes for c in kids) or treedef.num_nodes == 1
    assert treedef.num_leaves == sum(c.num_leaves for c in kids) or not kids


@examples(100)
@given(trees, trees)
def test_equality_matches_structure(t1, t2):
    s1, s2 = tree.structure(t1), tree.structure(t2)
    assert (s1 == s2) == (str(s1) == str(s2))   # all our aux data prints distinctly
    if s1 == s2:
        assert hash(s1) == hash(s2)
        assert s1.flatten_up_to(t2) == tree.leaves(t2)
    else:   # each may be a prefix of the other, but not both ways
        def is_prefix(a, b):
            try:
                a.flatten_up_to(b)
                return True
            except ValueError:
                return False
        assert not (is_prefix(s1, t2) and is_prefix(s2, t1))


# --- printing ---------------------------------------------------------------------------

@pytest.mark.parametrize("t, expected", [
    ((1, {"a": 2, "b": [3, 4]}), "PyTreeDef((*, {'a': *, 'b': [*, *]}))"),
    (None, "PyTreeDef(None)"),
    (1, "PyTreeDef(*)"),
    ((1,), "PyTreeDef((*,))"),
    ((), "PyTreeDef(())"),
    ([], "PyTreeDef([])"),
    ({}, "PyTreeDef({})"),
    ([1, (2, 3), [4, 5]], "PyTreeDef([*, (*, *), [*, *]])"),
    ([None, 1], "PyTreeDef([None, *])"),
    ({"b": 1, "a": 2}, "PyTreeDef({'a': *, 'b': *})"),
    ({1: "x", 0: "y"}, "PyTreeDef({0: *, 1: *})"),
    (Point(1, (2, 3)), "PyTreeDef(CustomNode(namedtuple[Point], [*, (*, *)]))"),
    (Box(1, 2, "hi"), "PyTreeDef(CustomNode(Box[hi], [*, *]))"),
    (Pair(1, 2), "PyTreeDef(CustomNode(Pair[None], [*, *]))"),
    (Params(1, 2), "PyTreeDef(CustomNode(Params[('relu',)], [*, *]))"),
    (Explicit(1, 2, "add"), "PyTreeDef(CustomNode(Explicit[('add',)], [*, *]))"),
    (collections.OrderedDict([("b", 1), ("a", 2)]),
     "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"),
    (collections.defaultdict(list, {"b": 1, "a": 2}),
     "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('a', 'b'))], [*, *]))"),
])
def test_structure_printing(t, expected):
    assert str(tree.structure(t)) == expected
    assert repr(tree.structure(t)) == expected


# --- node semantics ---------------------------------------------------------------------

def test_none_is_empty_node():
    assert tree.leaves(None) == []
    assert tree.leaves([None, 1, {"a": None}]) == [1]
    assert tree.unflatten(tree.structure([None, 1]), [5]) == [None, 5]
    assert tree.map(lambda x: x + 1, {"a": None, "b": 1}) == {"a": None, "b": 2}
    # is_leaf can make None a leaf
    leaves, td = tree.flatten([None, 1], is_leaf=lambda x: x is None)
    assert leaves == [None, 1] and str(td) == "PyTreeDef([*, *])"


def test_dict_sorted_and_rebuilt_sorted():
    d = {"b": 1, "a": 2, "c": 3}
    leaves, td = tree.flatten(d)
    assert leaves == [2, 1, 3]
    out = tree.unflatten(td, leaves)
    assert list(out) == ["a", "b", "c"] and out == d
    assert tree.structure({"b": 1, "a": 2}) == tree.structure({"a": 0, "b": 0})
    with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
        tree.flatten({1: 1, "a": 2})


def test_ordered_and_default_dict():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, td = tree.flatten(od)
    assert leaves == [1, 2]
    out = tree.unflatten(td, [10, 20])
    assert type(out) is collections.OrderedDict and list(out.items()) == [("b", 10), ("a", 20)]
    assert tree.structure(od) != tree.structure(collections.OrderedDict(a=2, b=1))
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, td = tree.flatten(dd)
    assert leaves == [2, 1]
    out = tree.map(lambda x: x * 10, dd)
    assert type(out) is collections.defaultdict and out.default_factory is list
    assert dict(out) == {"a": 20, "b": 10}


def test_namedtuple_is_own_node_type():
    leaves, td = tree.flatten(Point(1, [2, 3]))
    assert leaves == [1, 2, 3]
    out = td.unflatten([4, 5, 6])
    assert type(out) is Point and out == Point(4, [5, 6])
    assert tree.structure(Point(1, 2)) != tree.structure(Other(1, 2))
    assert tree.structure(Point(1, 2)) != tree.structure((1, 2))
    assert td.node_data() == (Point, None)


def test_unregistered_things_are_leaves():
    class MyList(list):
        pass

    class Thing:
        pass

    th = Thing()
    assert tree.leaves([MyList([1, 2]), th, "ab", b"x", 3.0]) == [MyList([1, 2]), th, "ab",
                                                                  b"x", 3.0]
    np = pytest.importorskip("numpy")
    a = np.ones(3)
    assert tree.leaves({"a": a})[0] is a


def test_is_leaf_stops_recursion():
    t = {"a": (1, 2), "b": [3, (4, 5)]}
    leaves = tree.leaves(t, is_leaf=lambda x: isinstance(x, tuple))
    assert leaves == [(1, 2), 3, (4, 5)]
    out = tree.map(lambda x: "T" if isinstance(x, tuple) else x, t,
                   is_leaf=lambda x: isinstance(x, tuple))
    assert out == {"a": "T", "b": [3, "T"]}
    # the root itself can be a leaf
    assert tree.leaves(t, is_leaf=lambda x: x is t) == [t]
    assert tree.structure(t, is_leaf=lambda x: x is t) == tree.structure(0)


# --- registration -----------------------------------------------------------------------

def test_register_pytree_node_roundtrip():
    b = Box([1, 2], {"k": 3}, "name")
    leaves, td = tree.flatten(b)
    assert leaves == [1, 2, 3]
    assert tree.unflatten(td, [4, 5, 6]) == Box([4, 5], {"k": 6}, "name")
    assert tree.structure(Box(1, 2, "x")) != tree.structure(Box(1, 2, "y"))
    assert tree.structure(Box(1, 2, "x")) == tree.structure(Box(3, 4, "x"))
    assert td.node_data() == (Box, "name")


def test_register_class_decorator():
    p = tree.map(lambda x: x * 2, Pair(1, [2]))
    assert type(p) is Pair and p.x == 2 and p.y == [4]


def test_register_dataclass_decorator_and_explicit():
    p = Params(w=1.0, b=2.0, act="tanh")
    leaves, td = tree.flatten(p)
    assert leaves == [1.0, 2.0]
    assert str(td) == "PyTreeDef(CustomNode(Params[('tanh',)], [*, *]))"
    assert tree.unflatten(td, [3, 4]) == Params(3, 4, "tanh")
    assert tree.structure(p) != tree.structure(Params(1.0, 2.0, "relu"))
    e = tree.map(lambda x: x + 1, Explicit(1, 2, "add"))
    assert e == Explicit(2, 3, "add")
    assert [tree.keystr(k) for k, _ in tree.leaves_with_path(e)] == [".x", ".y"]


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class D:
        x: int
        y: int

    with pytest.raises(ValueError, match="Missing fields"):
        tu.register_dataclass(D, data_fields=["x"], meta_fields=[])
    with pytest.raises(TypeError):
        tu.register_dataclass(D, data_fields=["x", "y"])

    class NotDC:
        pass

    with pytest.raises(TypeError):
        tu.register_dataclass(NotDC)
    # partial-as-decorator form
    @functools.partial(tu.register_dataclass, data_fields=["x"], meta_fields=["y"])
    @dataclasses.dataclass
    class D2:
        x: int
        y: int

    assert tree.leaves(D2(1, 2)) == [1]


def test_duplicate_registration_raises():
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(Box, lambda x: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_pytree_node(tuple, lambda x: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="Duplicate"):
        tu.register_dataclass(Params)


def test_register_static():
    c = Cfg(3)
    leaves, td = tree.flatten([c, 1])
    assert leaves == [1]
    assert tree.unflatten(td, [2]) == [Cfg(3), 2]
    assert tree.structure([Cfg(3), 0]) != tree.structure([Cfg(4), 0])


def test_partial_is_pytree():
    def f(a, b, c=0):
        return a + b + c

    p = Partial(f, 1, c=10)
    leaves, td = tree.flatten(p)
    assert leaves == [1, 10]
    p2 = tree.unflatten(td, [2, 20])
    assert isinstance(p2, Partial) and p2(3) == 25
    assert tree.structure(Partial(f, 5, c=0)) == td
    assert tree.structure(Partial(operator.add, 5, c=0)) != td
    # nested functools.partial keeps its own args static
    q = Partial(functools.partial(f, 100), 1)
    assert tree.leaves(q) == [1] and q(2) == 103


# --- map over several trees and mismatches ------------------------------------------------

def test_map_several_trees():
    a = {"x": 1, "y": (2, 3)}
    b = {"x": 10, "y": (20, 30)}
    assert tree.map(lambda p, q: p + q, a, b) == {"x": 11, "y": (22, 33)}
    # rest trees may have more structure below the first tree's leaves
    out = tree.map(lambda p, q: (p, q), [1, 2], [[3, 4], {"k": 5}])
    assert out == [(1, [3, 4]), (2, {"k": 5})]
    assert tree.map(lambda *xs: sum(xs), (1, 2), (3, 4), (5, 6)) == (9, 12)


@pytest.mark.parametrize("first, other, msg", [
    ((1, 2), (1, 2, 3), "Tuple arity mismatch"),
    ((1, 2), [1, 2], "Expected tuple"),
    ([1, 2], (1, 2), "Expected list"),
    ({"a": 1}, {"b": 1}, "Dict key mismatch"),
    ({"a": 1}, collections.OrderedDict(a=1), "Expected dict"),
    ([None, 1], [2, 1], "Expected None"),
    (Point(1, 2), Other(1, 2), "Named tuple type mismatch"),
    (Point(1, 2), (1, 2), "Expected named tuple"),
    (Box(1, 2, "a"), Box(1, 2, "b"), "Mismatch custom node data"),
    (Box(1, 2), Pair(1, 2), "Custom node type mismatch"),
    (Params(1, 2), Params(1, 2, "tanh"), "Mismatch custom node data"),
])
def test_map_mismatch_raises(first, other, msg):
    with pytest.raises(ValueError, match=msg) as info:
        tree.map(lambda *xs: None, first, other)
    text = str(info.value)
    assert str(tree.structure(first)) in text   # names the expected structure
    assert "got" in text


def test_mismatch_message_names_both_structures():
    with pytest.raises(ValueError) as info:
        tree.map(lambda a, b: a, (1, [2]), (1, [2, 3]))
    text = str(info.value)
    assert "PyTreeDef((*, [*]))" in text and "PyTreeDef((*, [*, *]))" in text


def test_unflatten_wrong_count():
    td = tree.structure([1, 2, 3])
    with pytest.raises(ValueError, match="expected 3, got 2"):
        td.unflatten([1, 2])
    with pytest.raises(ValueError, match="expected 3, got 4"):
        tree.unflatten(td, iter([1, 2, 3, 4]))


# --- key paths ----------------------------------------------------------------------------

def test_key_paths():
    t = {"a": [1, (2,)], "p": Point(3, 4), "b": Box(5, 6), "k": Keyed(7, 8), "n": None}
    pairs, td = tree.flatten_with_path(t)
    assert td == tree.structure(t)
    assert [x for _, x in pairs] == tree.leaves(t)
    assert [tree.keystr(p) for p, _ in pairs] == [
        "['a'][0]", "['a'][1][0]", "['b'][<flat index 0>]", "['b'][<flat index 1>]",
        "['k'].lo", "['k'].hi", "['p'].x", "['p'].y"]
    assert pairs[0][0] == (DictKey("a"), SequenceKey(0))
    assert pairs[2][0] == (DictKey("b"), FlattenedIndexKey(0))
    assert pairs[4][0] == (DictKey("k"), GetAttrKey("lo"))
    assert repr(pairs[0][0]) == "(DictKey(key='a'), SequenceKey(idx=0))"
    assert repr(GetAttrKey("x")) == "GetAttrKey(name='x')"
    assert repr(FlattenedIndexKey(2)) == "FlattenedIndexKey(key=2)"
    assert hash(SequenceKey(1)) == hash(SequenceKey(1))
    assert tree.leaves_with_path(t) == pairs


def test_keystr_simple():
    params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
    paths = [p for p, _ in tree.leaves_with_path(params)]
    assert [tree.keystr(p) for p in paths] == [
        "['foo']['bar']['bat'][0]", "['foo']['bar']['bat'][1]", "['foo']['bar']['baz']"]
    assert [tree.keystr(p, simple=True, separator="/") for p in paths] == [
        "foo/bar/bat/0", "foo/bar/bat/1", "foo/bar/baz"]
    assert tu.keystr((0, 1, "a", "b")) == "01ab"


def test_map_with_path_and_path_aware_is_leaf():
    t = {"a": 1, "b": [2, 3]}
    out = tree.map_with_path(lambda p, x, y: f"{tree.keystr(p)}={x + y}", t, t)
    assert out == {"a": "['a']=2", "b": ["['b'][0]=4", "['b'][1]=6"]}
    pairs = tree.leaves_with_path(t, is_leaf=lambda p, x: len(p) == 1,
                                  is_leaf_takes_path=True)
    assert pairs == [((DictKey("a"),), 1), ((DictKey("b"),), [2, 3])]


# --- PyTreeDef --------------------------------------------------------------------------

def test_treedef_equality_and_hash():
    s1 = tree.structure({"a": (1, 2), "b": [3]})
    s2 = tree.structure({"b": ["x"], "a": ("y", "z")})
    assert s1 == s2 and hash(s1) == hash(s2)
    assert len({s1, s2}) == 1
    cache = {s1: "hit"}
    assert cache[s2] == "hit"
    assert s1 != tree.structure({"a": (1, 2), "b": (3,)})
    assert s1 != tree.structure({"a": (1, 2), "c": [3]})
    assert tree.structure(None) != tree.structure(1)
    assert tree.structure([]) != tree.structure(())
    assert s1 != "not a treedef"
    assert isinstance(s1, PyTreeDef)


def test_treedef_properties():
    td = tree.structure([1, (2, 3), None, {"a": 4}])
    assert td.num_leaves == 4
    assert td.num_nodes == 8   # list, leaf, tuple+2, None, dict+1
    kids = td.children()
    assert kids == [tree.structure(1), tree.structure((2, 3)), tree.structure(None),
                    tree.structure({"a": 0})]
    assert tu.treedef_children(td) == kids
    assert tu.treedef_tuple(kids[:2]) == tree.structure((1, (2, 3)))
    assert td.unflatten("abcd") == ["a", ("b", "c"), None, {"a": "d"}]
    assert tu.treedef_is_leaf(tree.structure(1))
    assert tu.treedef_is_leaf(tree.structure(None))
    assert not tu.treedef_is_leaf(tree.structure([1]))
    assert tree.structure(1).children() == []
    assert tree.structure(1).node_data() is None
    assert tree.structure({"b": 1, "a": 2}).node_data() == (dict, ["a", "b"])
    assert tree.structure([1, 2]).compose(tree.structure((1, 2))) == \
        tree.structure([(1, 2), (3, 4)])


def test_all_leaves():
    t = {"a": [1, 2, 3]}
    assert tu.all_leaves(tu.tree_leaves(t))
    assert not tu.all_leaves([t])
    assert not tu.all_leaves([None])
    assert tu.all_leaves([None], is_leaf=lambda x: x is None)


# --- reductions, transpose, prefixes --------------------------------------------------------

def test_reduce_and_all():
    t = {"a": [1, 2], "b": (3,)}
    assert tree.reduce(operator.add, t) == 6
    assert tree.reduce(operator.add, t, 10) == 16
    assert tree.reduce(operator.add, [], 0) == 0
    with pytest.raises(TypeError):
        tree.reduce(operator.add, [])
    assert tree.reduce(lambda a, b: a + len(b), [(1, 2), (3,)], 0,
                       is_leaf=lambda x: isinstance(x, tuple)) == 3
    assert tree.all([True, (1, {"a": "x"})])
    assert not tree.all([True, (0,)])
    assert tree.all([])


def test_transpose():
    t = [(1, 2), (3, 4), (5, 6)]
    outer, inner = tree.structure([0, 0, 0]), tree.structure((0, 0))
    assert tree.transpose(outer, inner, t) == ([1, 3, 5], [2, 4, 6])
    assert tree.transpose(outer, None, t) == ([1, 3, 5], [2, 4, 6])
    with pytest.raises(TypeError, match="Mismatch"):
        tree.transpose(outer, tree.structure((0, 0, 0)), t)


def test_flatten_up_to():
    prefix = tree.structure((0, {"a": 0, "b": 0}))
    full = ([1, 2], {"a": (3,), "b": None})
    assert tree.flatten_up_to(prefix, full) == [[1, 2], (3,), None]
    with pytest.raises(ValueError, match="Tuple arity"):
        tree.flatten_up_to(prefix, (1, {"a": 2, "b": 3}, 4))
    with pytest.raises(ValueError, match="Dict key mismatch"):
        tree.flatten_up_to(prefix, (1, {"a": 2}))


def test_broadcast_prefix():
    # vmap-style in_axes: None is a leaf of the prefix
    args = (1.0, {"w": 2.0, "b": 3.0}, [4.0, 5.0])
    assert tu.broadcast_prefix((None, 0, 1), args) == [None, 0, 0, 1, 1]
    assert tu.broadcast_prefix(0, args) == [0] * 5
    assert tu.broadcast_prefix(None, args) == [None] * 5
    assert tu.broadcast_prefix((0, {"w": None, "b": 1}, 0), args) == [0, 1, None, 0, 0]
    # a None in the full tree contributes no leaves
    assert tu.broadcast_prefix((0, 1), (None, [2, 3])) == [1, 1]
    # JAX semantics when None is a node
    assert tu.broadcast_prefix((0, None), (1, None), none_is_leaf=False) == [0]
    with pytest.raises(ValueError):
        tu.broadcast_prefix((0, None), (1, 2), none_is_leaf=False)
    with pytest.raises(ValueError):
        tu.broadcast_prefix((0, 1), (1, 2, 3))
    with pytest.raises(ValueError):
        tu.broadcast_prefix([0, 1], (1, 2))
    assert tu.tree_broadcast((1, 2, 3), (0, {"a": 0, "b": 0}, (0, 0))) == \
        (1, {"a": 2, "b": 2}, (3, 3))


def test_tree_util_aliases():
    t = {"a": 1, "b": (2, 3)}
    leaves, td = tu.tree_flatten(t)
    assert tu.tree_unflatten(td, leaves) == t
    assert tu.tree_structure(t) == td and tu.tree_leaves(t) == leaves
    assert tu.tree_map(lambda x: -x, t) == {"a": -1, "b": (-2, -3)}
    assert tu.tree_reduce(operator.add, t) == 6 and tu.tree_all(t)
    assert tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0)),
                             [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    assert tu.tree_leaves_with_path(t) == tu.tree_flatten_with_path(t)[0]
    assert tu.tree_map_with_path(lambda p, x: len(p), t) == {"a": 1, "b": (2, 2)}
    assert tu.tree_structure(t).num_leaves == 3


# --- against real JAX, when it is installed -----------------------------------------------

def _register_in_jax(jtu):
    """Registers this module's Box and Params in JAX's registry too (once)."""
    try:
        jtu.register_pytree_node(Box, lambda x: ((x.a, x.b), x.name),
                                 lambda name, ch: Box(*ch, name=name))
        jtu.register_dataclass(Params)
    except ValueError:   # already registered by an earlier test
        pass


def _compare_with_jax(jtu, t):
    ol, od = tree.flatten(t)
    jl, jd = jtu.tree_flatten(t)
    assert str(od) == str(jd)
    assert ol == jl
    assert (od.num_leaves, od.num_nodes) == (jd.num_leaves, jd.num_nodes)
    assert [str(c) for c in od.children()] == [str(c) for c in jd.children()]
    op = [(tree.keystr(p), x) for p, x in tree.leaves_with_path(t)]
    jp = [(jtu.keystr(p), x) for p, x in jtu.tree_leaves_with_path(t)]
    assert op == jp
    none_leaf = lambda x: x is None   # noqa: E731
    assert str(tree.structure(t, none_leaf)) == str(jtu.tree_structure(t, none_leaf))
    assert _same(tree.unflatten(od, ol), jtu.tree_unflatten(jd, jl))


def test_matches_real_jax():
    jax = pytest.importorskip("jax")
    jtu = jax.tree_util
    _register_in_jax(jtu)
    cases = [
        (1, {"a": 2, "b": [3, 4]}), None, 1, (1,), [None, (), {}, []],
        {"b": [1, None], "a": (2,)}, {2: "x", 1: "y"},
        Point(1, [2, {"z": 3, "y": 4}]), Box(1, (2, 3), "hi"), Params([1, 2], None, "tanh"),
        collections.OrderedDict([("b", 1), ("a", (2, 3))]),
        collections.defaultdict(list, {"b": 1, "a": 2}),
    ]
    for t in cases:
        _compare_with_jax(jtu, t)
    # Partial prints the same (its func is the aux data)
    assert str(tree.structure(Partial(operator.add, 1, k=2))) == \
        str(jtu.tree_structure(jtu.Partial(operator.add, 1, k=2)))
    # prefix broadcasting agrees with JAX's internal helper
    from jax._src.tree_util import broadcast_prefix as jax_broadcast_prefix
    args = (1.0, {"w": 2.0, "b": 3.0}, [4.0, None, 5.0])
    for prefix in [(0, 1, 2), 0, (0, {"w": 1, "b": 2}, [3, 4, 5])]:
        assert tu.broadcast_prefix(prefix, args, none_is_leaf=False) == \
            jax_broadcast_prefix(prefix, args)


def test_matches_real_jax_random():
    jax = pytest.importorskip("jax")
    jtu = jax.tree_util
    _register_in_jax(jtu)

    @examples(300)
    @given(trees)
    def check(t):
        _compare_with_jax(jtu, t)

    check()


def _typed_keys(jx, np_):
    import numpy as np
    k = jx.random.key(0)
    ks = jx.random.split(k, 3)
    out = [len(jx.tree_util.tree_leaves(k)), len(jx.tree_util.tree_leaves({"a": ks, "b": 1})),
           str(jx.tree_util.tree_structure(ks)), jx.tree_util.all_leaves([k, ks]),
           len(jx.tree.leaves([k, (ks, 2.0)])),
           jx.tree_util.tree_map(lambda x: x.shape, {"k": ks}),
           [str(p) for p, _ in jx.tree_util.tree_flatten_with_path({"k": ks})[0]]]

    @jx.jit
    def step(state):
        key, sub = jx.random.split(state["key"])
        return {"key": key, "x": jx.random.normal(sub, (2,))}
    s = step({"key": k, "x": np_.zeros(2)})
    out.append(np.asarray(jx.random.key_data(s["key"])).tolist())
    out.append(jx.tree_util.tree_map(lambda a: type(a).__name__ == "PRNGKeyArray"
                                     or str(a.dtype).startswith("key"), s))
    return out


def test_typed_keys_are_leaves_like_jax():
    import jax
    import jax.numpy as jjnp
    import wjax
    import wjax.numpy as wjnp
    assert _typed_keys(wjax, wjnp) == _typed_keys(jax, jjnp)
