"""wjax's intermediate representation: avals, variables, equations and jaxprs.

A Jaxpr is a list of equations in SSA form.  Every transformation (jvp, vmap,
partial evaluation, transpose, dce) takes a Jaxpr and returns a Jaxpr, and the
backend lowers a Jaxpr to WGSL.  The printer follows JAX's format:

    { lambda ; a:f32[5]. let b:bool[5] = gt a 0.0:f32[] in (b,) }
"""
from __future__ import annotations

import collections
import itertools
import math
import re
from typing import Any, Sequence

import numpy as np

from . import dtypes
from . import pretty as pp

# --------------------------------------------------------------------------- avals

_SHORT = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}


def short_dtype(dtype) -> str:
    name = np.dtype(dtype).name if not hasattr(dtype, "short_name") else None
    if name is None:
        return dtype.short_name
    return _SHORT.get(name, name)


class AbstractValue:
    """The base of abstract values (``jax.core.AbstractValue``); wjax's are ``ShapedArray``."""

    __slots__ = ()


# (aval) -> its ``sharding`` on no mesh: a ``NamedSharding``, replicated over the current
# abstract mesh (``wjax/_src/sharding_impls.py`` fills it; the shardings sit above the IR)
aval_sharding_hook = None


class ShapedArray(AbstractValue):
    """The abstract value of an array: shape, dtype and JAX's weak-type flag."""

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False, *,
                 sharding: Any = None, vma: Any = frozenset(), memory_space: Any = None,
                 manual_type: Any = None):
        # ``sharding`` & co. are JAX's placement fields: on one device every value is replicated
        # there (the ``sharding`` property says so), so they are accepted only
        self.shape: tuple[int, ...] = tuple(int(d) for d in shape)
        self.dtype: np.dtype = dtype if getattr(dtype, "is_key", False) else np.dtype(dtype)
        self.weak_type: bool = bool(weak_type)
        self._hash = None

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    @property
    def sharding(self):
        """``jax.typeof(x).sharding``: replicated over the current abstract mesh (a sharded
        array's type, ``ShardedAval``, carries its own)."""
        return aval_sharding_hook(self)

    def update(self, shape: Sequence[int] | None = None, dtype: Any = None,
               weak_type: bool | None = None) -> "ShapedArray":
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak(self) -> "ShapedArray":
        return self.update(weak_type=False)

    def to_tangent_aval(self) -> "ShapedArray":
        """The aval of a tangent (libraries build ``ad.Zero(aval.to_tangent_aval())``): wjax's
        tangents keep the primal's dtype, integers' included (JAX gives those ``float0``), as
        ``transforms/ad.py``'s ``tangent_aval``."""
        return ShapedArray(self.shape, self.dtype, self.weak_type)

    at_least_vspace = to_tangent_aval       # JAX's older name

    def str_short(self) -> str:
        return f"{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"

    def dtype_name_short(self) -> str:      # float32[3]: JAX's str_short() without short dtypes
        name = getattr(self.dtype, "name", str(self.dtype))
        return f"{name}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        name = getattr(self.dtype, "name", str(self.dtype))
        return f"ShapedArray({name}[{','.join(map(str, self.shape))}]{weak})"

    def __str__(self):         # JAX's: float32[3], ~ marking a weak type
        name = getattr(self.dtype, "name", str(self.dtype))
        return f"{'~' if self.weak_type else ''}{name}[{','.join(map(str, self.shape))}]"

    def _key(self):
        return (self.shape, self.dtype, self.weak_type)

    def __eq__(self, other):
        return isinstance(other, ShapedArray) and self._key() == other._key()

    def __hash__(self):
        h = self._hash        # avals key every cache: hash once (an aval never changes)
        if h is None:
            h = self._hash = hash(self._key())
        return h

    def __reduce__(self):     # never carry a hash (of process-salted strings) elsewhere
        return (ShapedArray, (self.shape, self.dtype, self.weak_type))


def raise_to_shaped(x) -> ShapedArray:
    """The aval of any value wjax accepts as an array operand."""
    aval = getattr(x, "aval", None)
    if type(aval) is ShapedArray:      # an Array's or a tracer's (the eager ops' hot case)
        return aval
    if isinstance(x, ShapedArray):
        return x
    if isinstance(aval, ShapedArray):
        return aval
    dt, weak = dtypes.dtype_and_weak(x)
    return ShapedArray(np.shape(x), dt, weak)


def _numpy_aval(x) -> ShapedArray:
    return raise_to_shaped(np.asarray(x))


# JAX's ``core.pytype_aval_mappings``: the aval of a host value by its type (or nearest base
# class); libraries register their own array types (tfp: an ndarray subclass).
pytype_aval_mappings: dict[type, Any] = {
    np.ndarray: _numpy_aval, np.generic: _numpy_aval, bool: raise_to_shaped,
    int: raise_to_shaped, float: raise_to_shaped, complex: raise_to_shaped}


def abstractify(x) -> ShapedArray:
    """The aval of an argument of a transformation (``jit``, ``grad``, ``vmap``): arrays,
    tracers, the types in ``pytype_aval_mappings`` (NumPy values, Python scalars, registered
    types) and anything with ``shape`` and ``dtype`` (``ShapeDtypeStruct``); a TypeError for
    anything else."""
    aval = getattr(x, "aval", None)
    if isinstance(aval, ShapedArray):
        return aval
    for typ in type(x).__mro__:
        handler = pytype_aval_mappings.get(typ)
        if handler is not None:
            return handler(x)
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return raise_to_shaped(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return raise_to_shaped(np.asarray(x))
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(x.shape, x.dtype)
    raise TypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type")


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (``jax.ShapeDtypeStruct``)."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, weak_type=False, *, sharding=None, vma=None):
        # ``sharding`` is kept as given (libraries copy it from one struct to the next: lineax
        # does); ``vma`` (shard_map's varying axes) is accepted and not tracked
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    @classmethod
    def like(cls, x: Any) -> "ShapeDtypeStruct":
        """The shape, dtype and weak type of ``x`` (an array, tracer, scalar or struct)."""
        if isinstance(x, ShapeDtypeStruct):
            return cls(x.shape, x.dtype, x.weak_type)
        aval = abstractify(x)
        return cls(aval.shape, aval.dtype, aval.weak_type)

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


# --------------------------------------------------------------------------- vars

_var_ids = itertools.count()


class Var:
    """An SSA variable.  Names are assigned when a jaxpr is printed."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: ShapedArray):
        self.aval: ShapedArray = aval
        self.id: int = next(_var_ids)

    def __repr__(self):        # as JAX's: Var(id=...):float32[3]
        return f"Var(id={self.id}):{self.aval.dtype_name_short()}"


class DropVar(Var):
    """JAX's marker for an equation output nobody reads (wjax's jaxprs keep plain Vars; the
    class exists for libraries that test for it)."""

    __slots__ = ()


class Lit:
    """A literal scalar operand, printed inline (``mul a 2.0``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray | None = None):
        self.aval: ShapedArray = aval if aval is not None else raise_to_shaped(val)
        self.val: np.ndarray = np.asarray(val, dtype=self.aval.dtype)

    @property
    def operand(self):
        """The literal as an operand to bind: weakly typed literals stay weak."""
        return WeakScalar(self.val) if self.aval.weak_type else self.val

    def __repr__(self):
        # as JAX's ``Literal(...)``: its value holds a Python scalar when weakly typed (an int
        # or complex one printed as JAX's ``TypedInt``/``TypedComplex``), else a 0-d array
        v, aval = self.val, self.aval
        if v.dtype == np.bool_:
            return f"Literal({bool(v)})"
        if aval.weak_type and dtypes.is_float(v.dtype):
            return f"Literal({_lit_value(self)})"
        if aval.weak_type and (dtypes.is_complex(v.dtype) or np.issubdtype(v.dtype, np.integer)):
            kind = "TypedComplex" if dtypes.is_complex(v.dtype) else "TypedInt"
            return f"Literal({kind}({_lit_value(self)}, dtype={v.dtype.name}))"
        return f"Literal({v})"

    def __str__(self):          # as JAX prints a literal operand: 3.0:f32[]
        return _pp_lit(self)


class WeakScalar:
    """A Python scalar already converted to an operand's dtype but still weakly
    typed: it becomes a literal when traced and a weak 0-d Array when eager."""

    __slots__ = ("val", "aval")

    def __init__(self, val: np.ndarray):
        self.val = np.asarray(val)
        self.aval = ShapedArray((), self.val.dtype, True)


Atom = Var | Lit


class Eqn:
    """One equation: ``outvars = prim[params](*invars)``."""

    __slots__ = ("prim", "invars", "outvars", "params", "source")

    def __init__(self, prim: Any, invars: Sequence[Atom], outvars: Sequence[Var],
                 params: dict[str, Any], source: Any = None):
        self.prim = prim                     # a core.primitive.Primitive
        self.invars: list[Atom] = list(invars)
        self.outvars: list[Var] = list(outvars)
        self.params: dict[str, Any] = dict(params)
        self.source = source                 # where user code bound it (tracing.SourceInfo)

    def replace(self, **kw: Any) -> "Eqn":
        return Eqn(kw.get("prim", self.prim), kw.get("invars", self.invars),
                   kw.get("outvars", self.outvars), kw.get("params", self.params),
                   kw.get("source", self.source))

    primitive = property(lambda self: self.prim)         # JAX's names for the fields
    effects = property(lambda self: set())

    def __repr__(self):        # as JAX prints an equation: a:f32[3] = mul b 3.0:f32[]
        return pp_eqn(self)

    __str__ = __repr__


class Jaxpr:
    """A program: inputs (``constvars`` then ``invars``), equations in order, outputs (vars or
    literals)."""

    __slots__ = ("constvars", "invars", "outvars", "eqns")

    def __init__(self, constvars: Sequence[Var], invars: Sequence[Var],
                 outvars: Sequence[Atom], eqns: Sequence[Eqn]):
        self.constvars: list[Var] = list(constvars)
        self.invars: list[Var] = list(invars)
        self.outvars: list[Atom] = list(outvars)
        self.eqns: list[Eqn] = list(eqns)

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__


class ClosedJaxpr:
    """A jaxpr with values for its constvars."""

    __slots__ = ("jaxpr", "consts", "fun_name")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        assert len(consts) == len(jaxpr.constvars)
        self.jaxpr: Jaxpr = jaxpr
        self.consts: list[Any] = list(consts)
        self.fun_name: str | None = None     # a custom rule's Python function (for printing)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    literals = property(lambda self: self.consts)        # JAX's name for the consts

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


# --------------------------------------------------------------------------- typecheck

class JaxprTypeError(TypeError):
    pass


def typecheck(jaxpr: Jaxpr) -> None:
    """Checks that every variable is defined once before use and that every
    equation's outvars carry the avals its primitive's shape rule gives."""
    env: set[int] = set()

    def define(v):
        if not isinstance(v, Var):
            raise JaxprTypeError(f"binder {v!r} is not a Var")
        if v.id in env:
            raise JaxprTypeError(f"variable {v!r} defined twice")
        env.add(v.id)

    def use(a):
        if isinstance(a, Var) and a.id not in env:
            raise JaxprTypeError(f"variable {a!r} used before definition")

    for v in jaxpr.constvars + jaxpr.invars:
        define(v)
    for eqn in jaxpr.eqns:
        for a in eqn.invars:
            use(a)
        out = eqn.prim.abstract_eval(*[a.aval for a in eqn.invars], **eqn.params)
        out = list(out) if eqn.prim.multiple_results else [out]
        if len(out) != len(eqn.outvars):
            raise JaxprTypeError(f"{eqn.prim.name}: {len(out)} results, {len(eqn.outvars)} binders")
        for want, v in zip(out, eqn.outvars):
            if (want.shape, want.dtype) != (v.aval.shape, v.aval.dtype):
                raise JaxprTypeError(
                    f"{eqn.prim.name}: binder has type {v.aval.str_short()}, rule "
                    f"gives {want.str_short()}"
                )
            define(v)
        for sub in subjaxprs(eqn.params):
            typecheck(sub)
    for a in jaxpr.outvars:
        use(a)


def subjaxprs(params):
    for p in params.values():
        for q in (p if isinstance(p, (tuple, list)) else (p,)):
            if isinstance(q, Jaxpr):
                yield q
            elif isinstance(q, ClosedJaxpr):
                yield q.jaxpr


# --------------------------------------------------------------------------- printing

def _name(n: int) -> str:
    # a, b, ..., z, ba, bb, ... (JAX's scheme)
    s = ""
    while True:
        s = chr(ord("a") + n % 26) + s
        n //= 26
        if n == 0:
            return s


def _lit_value(lit: Lit) -> str:
    """A literal's value as JAX prints it: ``str`` of the Python scalar it holds -- the value
    in its dtype (``0.3333333432674408``), or, for a weakly typed float (which JAX keeps as the
    Python float written), the shortest text that gives the same value in its dtype."""
    v = lit.val
    if v.dtype == np.bool_:
        return str(bool(v))
    if dtypes.is_float(v.dtype):
        f = float(v)
        if not np.isfinite(f) or v.dtype == np.float64:
            return str(f)
        if lit.aval.weak_type:
            short = str(v[()])
            try:
                if v.dtype.type(float(short)) == v[()]:
                    return str(float(short))
            except (ValueError, OverflowError):
                pass
        return str(f)
    if dtypes.is_complex(v.dtype):
        return str(complex(v))        # as JAX prints them: (1+0j), 2j
    return str(int(v))


def _pp_lit(lit: Lit) -> str:
    """A literal operand as JAX 0.10 prints it: its value and its type (``3.0:f32[]``)."""
    return f"{_lit_value(lit)}:{lit.aval.str_short()}"


def _param_text(v) -> str:
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if callable(v) and hasattr(v, "__name__") and not isinstance(v, type):
        return v.__name__
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)), str(v))


class _PpContext:
    """Variable names while printing (JAX's scheme: a, b, ..., in the order they are
    printed; ``_`` for the results nothing reads) and the jaxprs printed once, ahead, under a
    name (``let name = { lambda ... } in``)."""

    def __init__(self, names: dict | None = None):
        self.names: dict = dict(names or {})
        self.count = 0
        self.shared: dict = {}           # id(Jaxpr) -> its name
        self.shared_names: set = set()

    def name(self, a) -> str:
        if isinstance(a, Lit):
            return _pp_lit(a)
        n = self.names.get(a.id)
        if n is None:
            while True:
                n = _name(self.count)
                self.count += 1
                if n not in self.shared_names:
                    break
            self.names[a.id] = n
        return n

    def suggest_same_names(self, for_vars, like_vars) -> None:
        """Names ``for_vars`` (a call's inner binders) as ``like_vars`` (its operands or
        results) where those are variables, each used once."""
        if len(for_vars) != len(like_vars):
            return
        used = set()
        for f, like in zip(for_vars, like_vars):
            if (isinstance(like, Var) and like.id not in used and isinstance(f, Var)
                    and f.id not in self.names):
                used.add(like.id)
                self.names[f.id] = self.name(like)


def _pp_vars(vs, ctx: _PpContext, sep: str = "", shapes: bool = False) -> pp.Doc:
    docs = [pp.text(ctx.name(v) + (f":{v.aval.str_short()}" if shapes else "")) for v in vs]
    return pp.nest(2, pp.group(pp.join(pp.text(sep) + pp.group(pp.brk()), docs)))


def _pp_value(v, ctx: _PpContext) -> pp.Doc:
    if type(v) is tuple and v and all(isinstance(j, (Jaxpr, ClosedJaxpr)) for j in v):
        docs = [_pp_jaxpr(j.jaxpr if isinstance(j, ClosedJaxpr) else j, ctx) for j in v]
        return pp.group(pp.concat([pp.nest(2, pp.concat([pp.text("("), pp.brk(""),
                                                         pp.join(pp.brk(), docs)])),
                                   pp.brk(""), pp.text(")")]))
    if isinstance(v, ClosedJaxpr):
        v = v.jaxpr
    if isinstance(v, Jaxpr):
        return _pp_jaxpr(v, ctx)
    return pp.text(_param_text(v))


def _pp_eqn_doc(e: "Eqn", ctx: _PpContext) -> pp.Doc:
    prim = e.prim
    if prim.pp_params is not None:
        params = prim.pp_params(e.params, e)
    else:
        params = sorted((k, v) for k, v in e.params.items() if not k.startswith("_"))
    if prim.pp_share_names:                      # a call: its binders named as its operands
        inner = e.params["jaxpr"]
        inner = inner.jaxpr if isinstance(inner, ClosedJaxpr) else inner
        if id(inner) not in ctx.shared:
            ctx.suggest_same_names(inner.invars, e.invars)
            ctx.suggest_same_names(inner.outvars, e.outvars)
    lhs = _pp_vars(e.outvars, ctx, shapes=True)
    kv = pp.nil()
    if params:
        pairs = [pp.text(f"{k}=") + _pp_value(v, ctx) for k, v in params]
        kv = pp.group(pp.concat([pp.nest(2, pp.concat([pp.text("["), pp.brk(""),
                                                      pp.join(pp.brk(), pairs)])),
                                 pp.brk(""), pp.text("]")]))
    rhs = [pp.text(prim.pp_name or prim.name), kv, pp.text(" ") + _pp_vars(e.invars, ctx)]
    if e.outvars:
        return pp.concat([lhs, pp.text(" = "), *rhs])
    return pp.concat(rhs)


def _pp_skeleton(jaxpr: Jaxpr, ctx: _PpContext) -> pp.Doc:
    consts = _pp_vars(jaxpr.constvars, ctx, shapes=True)
    ins = _pp_vars(jaxpr.invars, ctx, shapes=True)
    eqns = pp.join(pp.brk("; "), [_pp_eqn_doc(e, ctx) for e in jaxpr.eqns])
    outs = pp.concat([pp.text("("), _pp_vars(jaxpr.outvars, ctx, sep=","),
                      pp.text(")" if len(jaxpr.outvars) != 1 else ",)")])
    return pp.group(pp.nest(2, pp.concat([
        pp.text("{ lambda "), consts, pp.text("; "), ins, pp.text(". let"),
        pp.nest(2, pp.brk() + eqns), pp.brk(), pp.text("in "), outs]))) + pp.text(" }")


def _pp_jaxpr(jaxpr: Jaxpr, ctx: _PpContext) -> pp.Doc:
    name = ctx.shared.get(id(jaxpr))
    return pp.text(name) if name is not None else _pp_skeleton(jaxpr, ctx)


def _dropped(jaxpr: Jaxpr) -> dict:
    """The results no equation after them reads (printed ``_``, as JAX's DropVars)."""
    used = {a.id for a in jaxpr.outvars if isinstance(a, Var)}
    names = {}
    for e in reversed(jaxpr.eqns):
        for v in e.outvars:
            if v.id not in used:
                names[v.id] = "_"
        used.update(a.id for a in e.invars if isinstance(a, Var))
    return names


def pp_eqn(e: "Eqn") -> str:
    """One equation as JAX prints it alone (``str(eqn)``): names fresh, outputs first."""
    return pp.fmt(_pp_eqn_doc(e, _PpContext()))


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    """A jaxpr as JAX 0.10 prints it: width 80; sub-jaxprs used more than once (or longer
    than 10 equations) printed ahead as ``let name = { ... } in``."""
    ctx = _PpContext(_dropped(jaxpr))
    counts: dict = {}
    objs: dict = {}
    names: dict = {}
    queue = collections.deque([jaxpr])
    while queue:
        j = queue.popleft()
        objs[id(j)] = j
        counts[id(j)] = counts.get(id(j), 0) + 1
        if j is not jaxpr and len(j.eqns) > 10:
            counts[id(j)] += 1
        for e in j.eqns:
            name = e.params.get("name")
            subs = list(subjaxprs(e.params))
            queue.extend(subs)
            if isinstance(name, str):
                for sub in subs:
                    names.setdefault(id(sub), name.strip("<>"))
    taken: dict = {}
    shared = []
    for k, c in counts.items():
        if c == 1:
            continue
        name = names.get(k, "jaxpr")
        n = taken.get(name, 0)
        if n:
            taken[name] = n + 1
            name += str(n)
        taken[name] = taken.get(name, 0) + 1
        ctx.shared_names.add(name)
        ctx.shared[k] = name
        shared.append((name, objs[k]))
    docs = [pp.concat([pp.text(f"let {name} = "), _pp_skeleton(j, ctx), pp.text(" in"),
                       pp.brk()]) for name, j in shared]
    docs.append(_pp_jaxpr(jaxpr, ctx))
    return pp.fmt(pp.concat(docs))


class LazyJaxpr:
    """A jaxpr parameter made on first use: a custom rule that could not be traced when its
    call was bound is traced when the call is differentiated (or batched)."""

    __name__ = "lazy_rule"

    def __init__(self, make, fun_name: str | None = None):
        self._make, self._val = make, None
        self.fun_name = fun_name             # the custom rule's Python function (printing)

    def __repr__(self):
        return "lazy_rule"

    def __call__(self):
        if self._val is None:
            self._val = self._make()
        return self._val


class PerturbedRule(LazyJaxpr):
    """A custom_vjp rule registered with ``symbolic_zeros=True``: its fwd rule receives which
    inputs are perturbed (carry nonzero tangents), known only when the call is
    differentiated, so the rule is traced per mask -- ``make_for(mask)``, a tuple of bools
    over the call's non-const operands.  Forced without a mask (``force_jaxpr``), every
    floating input counts as perturbed."""

    def __init__(self, make_for):
        super().__init__(lambda: make_for(None))
        self._make_for, self._by_mask = make_for, {}

    def for_perturbed(self, mask):
        mask = tuple(bool(m) for m in mask)
        if mask not in self._by_mask:
            self._by_mask[mask] = self._make_for(mask)
        return self._by_mask[mask]


def for_perturbed(j, mask):
    """``j`` (a rule parameter) for the inputs ``mask`` perturbs."""
    return j.for_perturbed(mask) if isinstance(j, PerturbedRule) else j


def force_jaxpr(j) -> "ClosedJaxpr":
    """The ClosedJaxpr of a parameter that may be lazy."""
    while callable(j) and not isinstance(j, ClosedJaxpr):
        j = j()
    return j


# --------------------------------------------------------------------------- structural keys

# exact types whose parameters are keyed as ``(type name, value)``
_PLAIN_PARAMS = {int: "int", str: "str", bool: "bool", type(None): "NoneType",
                 **{t: t.__name__ for t in dtypes._DTYPE_TYPES}}


def param_key(v, keep: list):
    """A hashable key for one equation parameter: jaxprs by structure, arrays and scalars by
    value, anything else (callables, unhashables) by identity -- those objects are appended
    to ``keep``, which the key's holder keeps alive so that no id is reused."""
    t = type(v)
    name = _PLAIN_PARAMS.get(t)
    if name is not None:        # the common parameters, by exact type (as the cases below)
        return (name, v)
    if t is tuple:
        return ("tuple",) + tuple([param_key(x, keep) for x in v])
    if t is float:
        return ("nan",) if v != v else ("float", v)
    if isinstance(v, ClosedJaxpr):
        keep.append(v)
        return ("closed", jaxpr_key(v.jaxpr, keep), tuple(id(c) for c in v.consts))
    if isinstance(v, Jaxpr):
        return ("jaxpr", jaxpr_key(v, keep))
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(param_key(x, keep) for x in v)
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, float) and v != v:
        return ("nan",)
    try:
        hash(v)
    except TypeError:
        keep.append(v)
        return ("id", id(v))
    if callable(v) and not isinstance(v, (type, np.dtype)):
        keep.append(v)
        return ("id", id(v))
    return (type(v).__name__, v)


def jaxpr_key(jaxpr: "Jaxpr", keep: list) -> tuple:
    """A hashable key equal for structurally identical jaxprs (variables numbered in order,
    literals by value, params by value; callables and inner consts by identity, kept alive in
    ``keep``)."""
    ids: dict = {}

    def atom(a):
        if isinstance(a, Lit):
            return ("lit", a.val.tobytes(), a.val.dtype.str, a.aval.weak_type)
        if a.id not in ids:
            ids[a.id] = len(ids)
        return ids[a.id]

    parts: list = [tuple(v.aval for v in jaxpr.constvars), tuple(v.aval for v in jaxpr.invars)]
    for v in jaxpr.constvars + jaxpr.invars:
        atom(v)
    for e in jaxpr.eqns:
        parts.append((e.prim.key, tuple(atom(a) for a in e.invars), params_key(e.params, keep),
                      tuple(o.aval for o in e.outvars)))
        for o in e.outvars:
            atom(o)
    parts.append(tuple(atom(a) for a in jaxpr.outvars))
    return tuple(parts)


def params_key(params: dict, keep: list) -> tuple:
    """The key of an equation's parameters (see ``param_key``)."""
    return tuple((k, param_key(v, keep)) for k, v in sorted(params.items()))
