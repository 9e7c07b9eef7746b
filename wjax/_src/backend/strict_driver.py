"""The strictest conformant driver, emulated on any driver (``WJAX_STRICT_DRIVER=1``).

The WGSL spec lets a driver be loose where lavapipe is exact, and real GPUs take every such
licence (docs/numerics.md).  With the setting on, the runtime passes every kernel through
:func:`rewrite` before compiling it, which makes the kernel compute what the loosest driver the
spec allows would compute -- so the test suite, run on lavapipe, sees a real GPU's numerics:

* **Subnormals flushed as NVIDIA does.**  Every f32 arithmetic operation (``+ - * /``,
  ``sqrt inverseSqrt fma ldexp``) and every f32 comparison reads its subnormal operands as zero
  of the same sign, and an arithmetic result that would be subnormal becomes that zero; so do
  ``min``, ``max`` and ``clamp`` (on an H200 ``max(abs(1e-45), 0.0)`` was 0).  Loads, stores,
  ``select``, ``bitcast``, negation and the other exact builtins (``abs floor ceil trunc round
  sign``) see the bits unchanged: on the H100, ``floor(-1e-45)`` is -1 while ``-1e-45 < 0.0``
  is false.
* **Division and square roots at the spec's error bound.**  ``x / y`` (2.5 ulp for |y| in
  [2^-126, 2^126]) returns the correctly rounded quotient moved by 2 ulp, up or down by a hash of
  the operands' bits; ``inverseSqrt`` (2 ulp) is the correctly rounded value moved by 1 ulp;
  ``sqrt`` is what the spec says it inherits from, ``1.0 / inverseSqrt(x)``, both of those
  errors included.
* **f32 to f16 conversions** of a value f16 cannot hold give the neighbour that rounding to
  nearest-even would not (the spec lets a driver pick either; NVIDIA's are not the nearest).
* **The transcendental builtins** (which no kernel may call, ``wgsl_math.ALLOWED_BUILTINS``)
  at their bounds too: ``sin``/``cos`` off by 2^-11 absolute, ``exp``/``exp2`` by 3 + 2|x| ulp,
  ``log``/``log2`` by 2^-21 near 1 and 3 ulp elsewhere, ``tan``/``pow`` inherited.
* **Reassociation.**  A product chain with a literal factor is computed with the literal last,
  as LLVM's fast-math reassociation orders it: ``(c * u) * v`` and ``u * (c * v)`` become
  ``(u * v) * c``, ``((c * u) * w) * v`` becomes ``((u * w) * v) * c`` (NVIDIA: ``(0.5 * h) *
  h`` overflowed where ``h * h`` does, so cosh(89) was inf).  Products of variables keep their
  order (``(m * 2^k1) * 2^k2`` was not regrouped there: exp(88.7) is finite).
* **Contraction.**  A product feeding an addition or subtraction (in one expression, through a
  ``let``, or into ``+=``/``-=``) becomes one fused multiply-add, as SPIR-V compilers do; f16
  products are added in f32 and rounded once.  ``fma`` itself is fused (lavapipe's is not).

The rewrite parses each kernel (the subset of WGSL wjax emits: module-scope declarations,
structs, functions of ``let``/``var``/assignments/``if``/``for``/``loop``/``while``/``return``),
types every expression, and prints it back fully parenthesized, with the float operations
replaced by the helpers appended at the end (``wj_sd_*``, which compute with the local driver's
own exact operations).  It is an emulation for testing; it changes no result on a driver that
is already this loose.
"""
from __future__ import annotations

import re


class StrictDriverError(Exception):
    """A kernel the strict-driver rewrite cannot read (WGSL outside the subset wjax emits)."""


_TOKEN = re.compile(r"""
 (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
|(?P<num>0[xX][0-9a-fA-F]+[iu]?|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fh]?|\d+[eE][+-]?\d+[fh]?
        |\d+[iufh]?)
|(?P<id>[A-Za-z_]\w*)
|(?P<op>>>=|<<=|->|&&|\|\||==|!=|<=|>=|<<|>>|\+\+|--|\+=|-=|\*=|/=|%=|&=|\|=|\^=
        |[-+*/%<>=!&|^~(){}\[\];:,.@])
""", re.X | re.S)


def _tokens(src):
    out, pos = [], 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            raise StrictDriverError(f"cannot read {src[pos:pos + 20]!r}")
        if m.lastgroup != "ws":
            out.append((m.lastgroup, m.group(), m.start(), m.end()))
        pos = m.end()
    out.append(("eof", "", len(src), len(src)))
    return out


# ------------------------------------------------------------------------------- types
# A type is its canonical text: "f32", "vec4<f32>", "array<f32>", "array<vec4<f32>,2>",
# "atomic<u32>", "ptr<...>", a struct's name; "AI"/"AF" are the abstract int/float of literals.

_ABSTRACT = ("AI", "AF")
_SHORT = {f"vec{n}{c}": f"vec{n}<{t}>" for n in (2, 3, 4)
          for c, t in (("f", "f32"), ("i", "i32"), ("u", "u32"), ("h", "f16"))}
_TEMPLATED = {"vec2", "vec3", "vec4", "array", "bitcast", "atomic", "ptr", "mat2x2", "mat3x3",
              "mat4x4"}
_SCALARS = {"f32", "f16", "i32", "u32", "bool"}


def _scalar(t):
    return t[5:-1] if t.startswith("vec") and "<" in t else t


def _width(t):
    return int(t[3]) if t.startswith("vec") and "<" in t else 1


def _vec(n, s):
    return s if n == 1 else f"vec{n}<{s}>"


def _split_targs(t):
    """The template arguments of a canonical type text ("array<vec4<f32>,2>" -> [...])."""
    inner = t[t.index("<") + 1:-1]
    out, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += (ch == "<") - (ch == ">")
        cur += ch
    return out + [cur]


def _is_float(t):
    return t is not None and _scalar(t) in ("f32", "f16")


def _unify(a, b):
    if a == b:
        return a
    sa, sb = _scalar(a), _scalar(b)
    if sa == sb:
        s = sa
    elif sa in _ABSTRACT and sb in _ABSTRACT:
        s = "AF"
    elif sa in _ABSTRACT:
        s = sb
    else:
        s = sa
    return _vec(max(_width(a), _width(b)), s)


def _concrete(t):
    s = _scalar(t)
    return _vec(_width(t), {"AI": "i32", "AF": "f32"}.get(s, s))


_SAME_AS_ARGS = {"abs", "min", "max", "clamp", "floor", "ceil", "trunc", "round", "sign",
                 "sqrt", "inverseSqrt", "fma", "countOneBits", "countLeadingZeros",
                 "countTrailingZeros", "firstLeadingBit", "firstTrailingBit", "reverseBits",
                 "saturate", "fract", "exp", "exp2", "log", "log2", "sin", "cos", "tan", "pow",
                 "sinh", "cosh", "tanh", "asin", "acos", "atan", "atan2", "step", "mix"}
_SAME_AS_FIRST = {"ldexp", "extractBits", "insertBits", "subgroupAdd", "subgroupMul",
                  "subgroupMin", "subgroupMax", "subgroupBroadcast", "subgroupShuffle",
                  "subgroupShuffleXor", "subgroupShuffleUp", "subgroupShuffleDown",
                  "subgroupExclusiveAdd", "subgroupInclusiveAdd", "subgroupBroadcastFirst",
                  "subgroupAnd", "subgroupOr", "subgroupXor", "quadBroadcast"}
_FIXED = {"atomicStore": None, "pack2x16float": "u32", "unpack2x16float": "vec2<f32>",
          "any": "bool", "all": "bool", "arrayLength": "u32", "workgroupBarrier": None,
          "storageBarrier": None, "subgroupBallot": "vec4<u32>", "subgroupAll": "bool",
          "subgroupAny": "bool", "subgroupElect": "bool"}
_ATOMICS = {"atomicLoad", "atomicAdd", "atomicSub", "atomicMax", "atomicMin", "atomicAnd",
            "atomicOr", "atomicXor", "atomicExchange"}
# float builtins that flush their operands: those that compute, and min/max/clamp (an H200's
# max(abs(1e-45), 0.0) was 0: sign(1e-45 + 0j) returned its input); NVIDIA's floor, ceil,
# trunc, round, sign and abs do not (floor(-1e-45) is -1 there), so neither does the emulation
_FLUSHING = {"ldexp", "fma", "sqrt", "inverseSqrt", "min", "max", "clamp"}
_LOOSE_BUILTINS = {"sin", "cos", "tan", "exp", "exp2", "log", "log2", "pow"}


# ------------------------------------------------------------------------------- the tree

class N:
    """An expression: ``k`` its kind, ``ty`` its type, ``a`` its parts."""
    __slots__ = ("k", "ty", "a")

    def __init__(self, k, ty, *a):
        self.k, self.ty, self.a = k, ty, a


def _literal_type(text):
    t = text.lower()
    if t.startswith("0x"):
        return "u32" if t.endswith("u") else "i32" if t.endswith("i") else "AI"
    if t.endswith("h"):
        return "f16"
    if t.endswith("f"):
        return "f32"
    if t.endswith("u"):
        return "u32"
    if t.endswith("i"):
        return "i32"
    return "AF" if ("." in t or "e" in t) else "AI"


def _literal_is_normal(text):
    """Whether a float literal is 0 or a normal f32 (so flushing it changes nothing)."""
    try:
        v = abs(float(text.rstrip("fh")))
    except ValueError:
        return True
    return v == 0.0 or v >= 1.1754943508222875e-38


_PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7, "<=": 7,
         ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
_COMPARE = {"==", "!=", "<", ">", "<=", ">="}


class _Kernel:
    def __init__(self, src):
        self.src = src
        self.toks = _tokens(src)
        self.i = 0
        self.structs, self.funcs, self.globals, self.aliases = {}, {}, {}, {}
        self.scopes = []
        self.helpers = set()

    # -- tokens
    def peek(self, k=0):
        return self.toks[self.i + k]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def at(self, text, k=0):
        return self.toks[self.i + k][1] == text

    def expect(self, text):
        t = self.next()
        if t[1] != text:
            raise StrictDriverError(f"expected {text!r}, found {t[1]!r} at "
                                    f"{self.src[t[2]:t[2] + 40]!r}")
        return t

    def skip_to(self, text):
        """Past the next ``text`` at bracket depth 0 (a declaration's end)."""
        depth = 0
        while True:
            t = self.next()
            if t[0] == "eof":
                raise StrictDriverError(f"no {text!r}")
            if depth == 0 and t[1] == text:
                return
            depth += (t[1] in "({[") - (t[1] in ")}]")

    # -- types
    def parse_type(self):
        name = self.next()[1]
        if name in _SHORT:
            return _SHORT[name]
        if name in self.aliases:
            return self.aliases[name]
        if not self.at("<"):
            return name
        return name + "<" + ",".join(self.template_args()) + ">"

    def template_args(self):
        self.expect("<")
        args = []
        while True:
            t = self.peek()
            if t[0] == "id" and t[1] not in self.globals:
                args.append(self.parse_type())
            else:
                args.append(self.next()[1])
            t = self.next()
            if t[1] == ",":
                if self.at(">") or self.at(">>"):
                    t = self.next()
                else:
                    continue
            if t[1] == ">":
                return args
            if t[1] == ">>":            # closes this list and the enclosing one
                self.toks[self.i - 1] = (t[0], ">", t[2] + 1, t[3])
                self.i -= 1
                return args
            raise StrictDriverError(f"template list: {t[1]!r}")

    # -- module
    def module(self):
        items = []              # (kind, start, end, extra)
        while self.peek()[0] != "eof":
            start = self.peek()[2]
            self.attributes()
            t = self.peek()
            if t[1] == "fn":
                self.next()
                name = self.next()[1]
                self.expect("(")
                params = []
                while not self.at(")"):
                    self.attributes()
                    pname = self.next()[1]
                    self.expect(":")
                    params.append((pname, self.parse_type()))
                    if self.at(","):
                        self.next()
                self.expect(")")
                ret = None
                if self.at("->"):
                    self.next()
                    self.attributes()
                    ret = self.parse_type()
                self.funcs[name] = ret
                body = self.i
                self.expect("{")
                self.i -= 1
                self.skip_block()
                items.append(("fn", start, self.toks[body][2], (params, body, ret)))
            elif t[1] == "struct":
                self.next()
                name = self.next()[1]
                self.expect("{")
                fields = {}
                while not self.at("}"):
                    self.attributes()
                    fname = self.next()[1]
                    self.expect(":")
                    fields[fname] = self.parse_type()
                    if self.at(",") or self.at(";"):
                        self.next()
                self.expect("}")
                if self.at(";"):
                    self.next()
                self.structs[name] = fields
                items.append(("text", start, self.toks[self.i - 1][3], None))
            elif t[1] in ("var", "const", "override", "let"):
                self.next()
                if self.at("<"):
                    self.template_args()
                name = self.next()[1]
                ty = None
                if self.at(":"):
                    self.next()
                    ty = self.parse_type()
                if self.at("="):
                    self.next()
                    self.scopes = [{}]
                    e = self.expr()
                    ty = ty or (e.ty if t[1] == "const" else _concrete(e.ty))
                self.expect(";")
                self.globals[name] = (ty, t[1] == "var", None, False)
                items.append(("text", start, self.toks[self.i - 1][3], None))
            elif t[1] == "alias":
                self.next()
                name = self.next()[1]
                self.expect("=")
                self.aliases[name] = self.parse_type()
                self.expect(";")
                items.append(("text", start, self.toks[self.i - 1][3], None))
            elif t[1] in ("enable", "requires", "diagnostic"):
                self.skip_to(";")
                items.append(("text", start, self.toks[self.i - 1][3], None))
            else:
                raise StrictDriverError(f"module scope: {t[1]!r}")
        out = []
        for kind, start, end, extra in items:
            out.append(self.src[start:end])
            if kind == "fn":
                params, body, ret = extra
                self.i = body
                self.scopes = [{p: (ty, False, None, False) for p, ty in params}]
                self.ret = ret
                out.append(" " + self.block(1) + "\n")
            else:
                out.append("\n")
        tail = _helpers_text(self.helpers)
        if "wj_sd_tof16(" in "".join(out):
            tail += _TOF16
        return "".join(out) + tail

    def attributes(self):
        while self.at("@"):
            self.next()
            self.next()
            if self.at("("):
                self.next()
                self.skip_to(")")

    def skip_block(self):
        self.expect("{")
        depth = 1
        while depth:
            t = self.next()
            if t[0] == "eof":
                raise StrictDriverError("unclosed block")
            depth += (t[1] == "{") - (t[1] == "}")

    # -- statements (each returns its rewritten text)
    def block(self, depth, loop=False):
        """A ``{ ... }`` block's statements, rewritten; a ``loop``'s may end in ``continuing``."""
        self.expect("{")
        self.scopes.append({})
        lines = []
        while not self.at("}"):
            if loop and self.at("continuing"):
                self.next()
                lines.append("continuing " + self.block(depth + 1))
            else:
                lines.append(self.statement(depth))
        self.next()
        self.scopes.pop()
        pad = "  " * depth
        return "{\n" + "".join(f"{pad}{s}\n" for s in lines) + "  " * (depth - 1) + "}"

    def declare(self, name, ty, mutable, product=None, flushed=False):
        # a binding: (type, mutable, the product it holds (for contraction), flushed)
        self.scopes[-1][name] = (ty, mutable, product, flushed)

    def bindings(self, e, out=None):
        """The binding each name in ``e`` resolves to (identity: a later contraction through a
        ``let`` recomputes its factors only where every name still means the same thing)."""
        out = {} if out is None else out
        if e.k == "name":
            out[e.a[0]] = self.lookup(e.a[0])
        elif e.k in ("bin", "un"):
            for x in e.a[1:]:
                self.bindings(x, out)
        elif e.k == "call":
            for x in e.a[2]:
                self.bindings(x, out)
        return out

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.globals:
            return self.globals[name]
        raise StrictDriverError(f"unknown name {name!r}")

    def statement(self, depth):
        t = self.peek()
        w = t[1]
        if w == "{":
            return self.block(depth + 1)
        if w in ("let", "var", "const"):
            s = self.decl()
            self.expect(";")
            return s + ";"
        if w == "if":
            return self.if_stmt(depth)
        if w == "for":
            self.next()
            self.expect("(")
            self.scopes.append({})
            init = "" if self.at(";") else self.simple()
            self.expect(";")
            cond = "" if self.at(";") else self.emit(self.expr())
            self.expect(";")
            update = "" if self.at(")") else self.simple()
            self.expect(")")
            body = self.block(depth + 1)
            self.scopes.pop()
            return f"for ({init}; {cond}; {update}) {body}"
        if w == "while":
            self.next()
            cond = self.emit(self.expr())
            return f"while {cond} {self.block(depth + 1)}"
        if w == "loop":
            self.next()
            return "loop " + self.block(depth + 1, loop=True)
        if w == "return":
            self.next()
            if self.at(";"):
                self.next()
                return "return;"
            e = self.expr()
            self.expect(";")
            return f"return {self.emit(e)};"
        if w in ("break", "continue"):
            self.next()
            if w == "break" and self.at("if"):
                self.next()
                c = self.emit(self.expr())
                self.expect(";")
                return f"break if {c};"
            self.expect(";")
            return w + ";"
        if w == "switch":
            raise StrictDriverError("switch")
        s = self.simple()
        self.expect(";")
        return s + ";"

    def if_stmt(self, depth):
        self.expect("if")
        cond = self.emit(self.expr())
        s = f"if {cond} {self.block(depth + 1)}"
        if self.at("else"):
            self.next()
            if self.at("if"):
                s += " else " + self.if_stmt(depth)
            else:
                s += " else " + self.block(depth + 1)
        return s

    def decl(self):
        kind = self.next()[1]
        addr = ""
        if kind == "var" and self.at("<"):
            addr = "<" + ",".join(self.template_args()) + ">"
        name = self.next()[1]
        ty = None
        if self.at(":"):
            self.next()
            ty = self.parse_type()
        if not self.at("="):
            self.declare(name, ty, True)
            return f"var{addr} {name}: {ty}"
        self.next()
        e = self.expr()
        vty = ty or (_concrete(e.ty) if kind != "const" else e.ty)
        product = None
        if kind == "let" and self.product_of(e) is not None and self.immutable(e):
            product = (self.product_of(e), self.bindings(e))
        text = self.emit(e)
        self.declare(name, vty, kind == "var", product, text.startswith("wj_sd_"))
        annot = f": {ty}" if ty else ""
        return f"{kind}{addr} {name}{annot} = {text}"

    def immutable(self, e):
        """Whether ``e`` reads no ``var`` (so it can be recomputed later with the same
        value, as contraction through a ``let`` needs)."""
        if e.k == "name":
            return not self.lookup(e.a[0])[1]
        if e.k == "lit":
            return True
        if e.k in ("bin", "un"):
            return all(self.immutable(x) for x in e.a[1:])
        if e.k == "call":
            return e.a[0] in _SAME_AS_ARGS | {"bitcast", "f32", "f16", "select"} and all(
                self.immutable(x) for x in e.a[2])
        return False

    def simple(self):
        """An assignment, increment, call or declaration (a statement without its ``;``)."""
        if self.at("let") or self.at("var") or self.at("const"):
            return self.decl()
        if self.at("_"):
            self.next()
            self.expect("=")
            return f"_ = {self.emit(self.expr())}"
        lhs = self.postfix()
        t = self.peek()[1]
        if t in ("++", "--"):
            self.next()
            return f"{self.emit(lhs)}{t}"
        if t == "=":
            self.next()
            return f"{self.emit(lhs)} = {self.emit(self.expr())}"
        if t in ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="):
            self.next()
            rhs = self.expr()
            op = t[:-1]
            if _is_float(lhs.ty) and op in "+-*/":
                e = N("bin", _unify(lhs.ty, rhs.ty), op, lhs, rhs)
                return f"{self.emit(lhs)} = {self.emit(e)}"
            return f"{self.emit(lhs)} {t} {self.emit(rhs)}"
        if lhs.k == "call":
            return self.emit(lhs)
        raise StrictDriverError(f"statement at {t!r}")

    # -- expressions (typed as they are read)
    def expr(self, min_prec=1):
        left = self.unary()
        while True:
            op = self.peek()[1]
            p = _PREC.get(op)
            if p is None or p < min_prec or self.peek()[0] != "op":
                return left
            self.next()
            right = self.expr(p + 1)
            if op in _COMPARE:
                ty = _vec(max(_width(left.ty), _width(right.ty)), "bool")
            elif op in ("&&", "||"):
                ty = "bool"
            elif op in ("<<", ">>"):
                ty = left.ty
            else:
                ty = _unify(left.ty, right.ty)
            left = N("bin", ty, op, left, right)

    def unary(self):
        op = self.peek()[1]
        if op in ("-", "!", "~", "&", "*") and self.peek()[0] == "op":
            self.next()
            x = self.unary()
            ty = f"ptr<{x.ty}>" if op == "&" else (
                _split_targs(x.ty)[-1 if len(_split_targs(x.ty)) < 3 else 1] if op == "*"
                else x.ty)
            return N("un", ty, op, x)
        return self.postfix()

    def postfix(self):
        e = self.primary()
        while True:
            if self.at("["):
                self.next()
                idx = self.expr()
                self.expect("]")
                e = N("idx", self.element(e.ty), e, idx)
            elif self.at("."):
                self.next()
                name = self.next()[1]
                e = N("mem", self.member(e.ty, name), e, name)
            else:
                return e

    def element(self, ty):
        if ty.startswith("ptr<"):
            ty = _split_targs(ty)[-1 if len(_split_targs(ty)) < 3 else 1]
        if ty.startswith("array<"):
            return _split_targs(ty)[0]
        if ty.startswith("vec"):
            return _scalar(ty)
        raise StrictDriverError(f"indexing a {ty}")

    def member(self, ty, name):
        if ty in self.structs:
            return self.structs[ty][name]
        if ty.startswith("cmpxchg<"):
            return {"old_value": _split_targs(ty)[0], "exchanged": "bool"}[name]
        if ty.startswith("vec") and set(name) <= set("xyzwrgba"):
            return _vec(len(name), _scalar(ty))
        raise StrictDriverError(f"member {name} of {ty}")

    def primary(self):
        t = self.next()
        if t[0] == "num":
            return N("lit", _literal_type(t[1]), t[1])
        if t[1] == "(":
            e = self.expr()
            self.expect(")")
            return e
        if t[0] != "id":
            raise StrictDriverError(f"expression at {t[1]!r}: "
                                    f"{self.src[t[2] - 60:t[2] + 40]!r}")
        name = t[1]
        if name in ("true", "false"):
            return N("lit", "bool", name)
        targs = None
        if name in _TEMPLATED and self.at("<"):
            targs = self.template_args()
        if not self.at("("):
            if targs is not None:
                raise StrictDriverError(f"{name}<...> without a call")
            ty = self.lookup(name)[0]
            return N("name", ty, name)
        self.next()
        args = []
        while not self.at(")"):
            args.append(self.expr())
            if self.at(","):
                self.next()
        self.next()
        return N("call", self.call_type(name, targs, args), name, targs, args)

    def call_type(self, name, targs, args):
        tys = [a.ty for a in args]
        if name == "bitcast":
            return targs[0]
        if targs is not None:
            return f"{name}<{','.join(targs)}>"
        if name in _SHORT:
            return _SHORT[name]
        if name in _SCALARS:
            return name
        if name in ("vec2", "vec3", "vec4"):
            s = "AF" if not tys else _scalar(tys[0])
            for x in tys[1:]:
                s = _scalar(_unify(s, _scalar(x)))
            return _vec(int(name[3]), s)
        if name in self.structs:
            return name
        if name in self.funcs:
            return self.funcs[name]
        if name in self.aliases:
            return self.aliases[name]
        if name in _SAME_AS_ARGS:
            ty = tys[0]
            for x in tys[1:]:
                ty = _unify(ty, x)
            return ty
        if name == "select":
            return _unify(tys[0], tys[1])
        if name in _SAME_AS_FIRST:
            return tys[0]
        if name in _FIXED:
            return _FIXED[name]
        if name in _ATOMICS:
            return _split_targs(_split_targs(tys[0])[0])[0]
        if name == "atomicCompareExchangeWeak":
            return "cmpxchg<" + _split_targs(_split_targs(tys[0])[0])[0] + ">"
        if name == "workgroupUniformLoad":
            return _split_targs(tys[0])[0]
        if name in ("dot", "length", "distance"):
            return _scalar(tys[0])
        raise StrictDriverError(f"unknown function {name!r}")

    # -- emission (the rewrite)
    def ftz(self, e, text=None):
        """``e``'s text read as an FTZ unit reads it: subnormal f32 becomes a signed zero."""
        text = self.emit(e) if text is None else text
        if _scalar(e.ty) != "f32" or e.ty == "AF":
            return text
        if e.k == "lit" and _literal_is_normal(e.a[0]):
            return text
        if text.startswith("wj_sd_") or (e.k == "name" and self.lookup(e.a[0])[3]):
            return text
        return self.helper("ftz", e.ty, text)

    def helper(self, op, ty, *args):
        self.helpers.add((op, ty))
        return f"{_helper_name(op, ty)}({', '.join(args)})"

    def splat(self, e, ty):
        """``e`` as a value of ``ty`` (a vector type), so mixed scalar/vector operands fit a
        helper's signature."""
        text = self.ftz(e)
        if _width(e.ty) != _width(ty) or _scalar(e.ty) in _ABSTRACT:
            return f"{ty}({text})"
        return text

    def product_of(self, e):
        """(a, b) when ``e`` is a float product, written out or through a ``let``."""
        if e.k == "bin" and e.a[0] == "*" and _is_float(e.ty) and _scalar(e.ty) not in _ABSTRACT:
            return e.a[1], e.a[2]
        if e.k == "name":
            product = self.lookup(e.a[0])[2]
            if product is not None and all(self.lookup(n) is b for n, b in product[1].items()):
                return product[0]
        return None

    def reassoc(self, x, y):
        """The factors ``x * y`` is computed from after fast-math reassociation, or None where
        it stays: LLVM's reassociation (which SPIR-V drivers run) gathers the constants of a
        product chain last, so ``(c * u) * v`` becomes ``(u * v) * c`` and ``((c * u) * w) * v``
        ``((u * w) * v) * c`` -- and ``(0.5 * h) * h`` overflows where ``h * h`` does (NVIDIA:
        cosh(89) = inf)."""
        if not (_is_float(x.ty) or _is_float(y.ty)):
            return None
        fs = self.factors(x) + self.factors(y)
        lits = [f for f in fs if f.k == "lit"]
        rest = [f for f in fs if f.k != "lit"]
        if not lits or len(rest) < 2 or (x.k != "lit" and y.k == "lit" and len(lits) == 1):
            return None
        u = rest[0]
        for v in rest[1:]:
            u = N("bin", _unify(u.ty, v.ty), "*", u, v)
        for c in lits[:-1]:
            u = N("bin", _unify(u.ty, c.ty), "*", u, c)
        return u, lits[-1]

    def factors(self, e):
        f = self.product_of(e)
        return [e] if f is None else self.factors(f[0]) + self.factors(f[1])

    def emit(self, e):
        k = e.k
        if k == "lit":
            return e.a[0]
        if k == "name":
            return e.a[0]
        if k == "idx":
            return f"{self.emit(e.a[0])}[{self.emit(e.a[1])}]"
        if k == "mem":
            return f"{self.emit(e.a[0])}.{e.a[1]}"
        if k == "un":
            op, x = e.a
            inner = self.emit(x)
            return f"({op}{inner})"
        if k == "call":
            return self.emit_call(e)
        op, a, b = e.a
        ty = e.ty
        if op in _COMPARE and (_is_float(a.ty) or _is_float(b.ty)):
            return f"({self.ftz(a)} {op} {self.ftz(b)})"
        if op not in ("+", "-", "*", "/") or not _is_float(ty) or _scalar(ty) in _ABSTRACT:
            return f"({self.emit(a)} {op} {self.emit(b)})"
        if op in ("+", "-"):
            pa, pb = self.product_of(a), self.product_of(b)
            if pa is not None or pb is not None:
                # a*b + c, a*b - c, c + a*b, c - a*b: one rounding
                if pa is not None:
                    x, y = pa
                    z = b
                    neg_xy, neg_z = False, op == "-"
                else:
                    x, y = pb
                    z = a
                    neg_xy, neg_z = op == "-", False
                f = self.reassoc(x, y)
                if f is not None:
                    x, y = f
                xs, ys, zs = self.splat(x, ty), self.splat(y, ty), self.splat(z, ty)
                if neg_xy:
                    xs = f"(-{xs})"
                if neg_z:
                    zs = f"(-{zs})"
                return self.helper("fma", ty, xs, ys, zs)
        if op == "/":
            return self.helper("div", ty, self.splat(a, ty), self.splat(b, ty))
        if op == "*":
            f = self.reassoc(a, b)
            if f is not None:
                return self.emit(N("bin", ty, "*", *f))
        text = f"({self.ftz(a)} {op} {self.ftz(b)})"
        if _scalar(ty) == "f32":
            return self.helper("ftz", ty, text)
        return text

    def emit_call(self, e):
        name, targs, args = e.a
        ty = e.ty
        if name in _FLUSHING and _is_float(ty) and _scalar(ty) not in _ABSTRACT:
            if name in ("sqrt", "inverseSqrt", "fma"):
                op = {"sqrt": "sqrt", "inverseSqrt": "rsqrt", "fma": "fma"}[name]
                return self.helper(op, ty, *[self.splat(x, ty) for x in args])
            parts = [self.ftz(x) if _is_float(x.ty) else self.emit(x) for x in args]
            text = f"{name}({', '.join(parts)})"
            if name == "ldexp" and _scalar(ty) == "f32":
                return self.helper("ftz", ty, text)
            return text
        if name == "f16" and len(args) == 1 and args[0].ty == "f32" and args[0].k != "lit":
            return f"wj_sd_tof16({self.emit(args[0])})"
        if name.startswith("vec") and targs == ["f16"] and any(
                _scalar(a.ty) == "f32" for a in args):
            raise StrictDriverError(f"{name}<f16> of f32 values: not emulated")
        if name in _LOOSE_BUILTINS and _scalar(ty) == "f32":
            return self.helper("l" + name, ty, *[self.splat(x, ty) for x in args])
        parts = ", ".join(self.emit(x) for x in args)
        if targs is not None:
            return f"{name}<{', '.join(targs)}>({parts})"
        return f"{name}({parts})"


# ------------------------------------------------------------------------------- helpers
# Each written for f32 (scalar T = f32, U = u32) or a vector of it; the float ops inside
# are the local driver's own (exact on lavapipe): the helpers are appended after the rewrite.

_F32_HELPERS = {
    "ftz": """fn {name}(x: {T}) -> {T} {{
  let u = bitcast<{U}>(x);
  return select(x, bitcast<{T}>(u & {U}(0x80000000u)), (u & {U}(0x7f800000u)) == {U}(0u));
}}""",
    # the correctly rounded value moved by 2 ulp (up or down by a hash of the operands) where
    # the spec bounds the error, and flushed
    "div": """fn {name}(a: {T}, b: {T}) -> {T} {{
  let x = {ftz}(a);
  let y = {ftz}(b);
  let q = x / y;
  let ub = bitcast<{U}>(y) & {U}(0x7fffffffu);
  let uq = bitcast<{U}>(q) & {U}(0x7fffffffu);
  let ok = ub >= {U}(0x00800000u) & ub <= {U}(0x7e800000u) & uq >= {U}(0x00800000u)
           & uq < {U}(0x7f7ffffdu);
  let h = (bitcast<{U}>(x) * {U}(0x9e3779b1u)) ^ (bitcast<{U}>(y) * {U}(0x85ebca6bu));
  let d = select({U}(0xfffffffeu), {U}(2u), ((h >> {U}(13u)) & {U}(1u)) == {U}(1u));
  return {ftz}(select(q, bitcast<{T}>(bitcast<{U}>(q) + d), ok));
}}""",
    # the correctly rounded 1/sqrt(x) moved by 1 ulp (2 would exceed the spec's 2 ulp where
    # the rounding was already half an ulp off); computed at x's significand scaled into
    # [1, 4): 1/sqrt on the local driver (1.4 ulp on lavapipe, where Mesa makes 1/sqrt its own
    # reciprocal square root), one Newton step with the residual 1 - x y^2 from exact products
    "rsqrt": """fn {name}(a: {T}) -> {T} {{
  let x = {ftz}(a);
  let ux = bitcast<{U}>(x);
  let ok = ux >= {U}(0x00800000u) & ux < {U}(0x7f800000u);
  let b = (ux >> {U}(23u)) & {U}(0xffu);
  let eb = {U}(128u) - (b & {U}(1u));
  let xm = bitcast<{T}>((ux & {U}(0x7fffffu)) | (eb << {U}(23u)));
  let y0 = {T}(1.0) / sqrt(xm);
  let s0 = y0 * {T}(4097.0);
  let yh = s0 - (s0 - y0);
  let yl = y0 - yh;
  let ph = y0 * y0;
  let pl = ((yh * yh - ph) + {T}(2.0) * yh * yl) + yl * yl;
  let s1 = xm * {T}(4097.0);
  let xh = s1 - (s1 - xm);
  let xl = xm - xh;
  let s2 = ph * {T}(4097.0);
  let qh0 = s2 - (s2 - ph);
  let ql0 = ph - qh0;
  let qh = xm * ph;
  let ql = ((xh * qh0 - qh) + xh * ql0 + xl * qh0) + xl * ql0;
  let e = (({T}(1.0) - qh) - ql) - xm * pl;
  let y = y0 + y0 * (e * {T}(0.5));
  let h = ux * {U}(0x9e3779b1u);
  let d = select({U}(0xffffffffu), {U}(1u), ((h >> {U}(11u)) & {U}(1u)) == {U}(1u));
  let scale = bitcast<{T}>((({U}(254u) + eb - b) >> {U}(1u)) << {U}(23u));
  return {ftz}(select({T}(1.0) / sqrt(x), bitcast<{T}>(bitcast<{U}>(y) + d) * scale, ok));
}}""",
    # the spec: sqrt is inherited from 1.0 / inverseSqrt(x)
    "sqrt": """fn {name}(a: {T}) -> {T} {{
  return {div}({T}(1.0), {rsqrt}(a));
}}""",
    # a*b + c rounded once: the exact product (Dekker's split; lavapipe does not contract)
    # plus c, the pieces' errors gathered; outside the split's range, the plain formula
    "fma": """fn {name}(a0: {T}, b0: {T}, c0: {T}) -> {T} {{
  let a = {ftz}(a0);
  let b = {ftz}(b0);
  let c = {ftz}(c0);
  let p = a * b;
  let sa = a * {T}(4097.0);
  let ah = sa - (sa - a);
  let al = a - ah;
  let sb = b * {T}(4097.0);
  let bh = sb - (sb - b);
  let bl = b - bh;
  let e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  let s = p + c;
  let bv = s - p;
  let t = (p - (s - bv)) + (c - bv);
  let r = s + (t + e);
  let big = {U}(0x5a800000u);
  let fits = (bitcast<{U}>(a) & {U}(0x7fffffffu)) < big & (bitcast<{U}>(b) & {U}(0x7fffffffu))
             < big & (bitcast<{U}>(c) & {U}(0x7fffffffu)) < {U}(0x7e800000u)
             & (bitcast<{U}>(p) & {U}(0x7fffffffu)) < {U}(0x7e800000u)
             & (bitcast<{U}>(p) & {U}(0x7f800000u)) > {U}(0x0d000000u);
  return {ftz}(select(p + c, r, fits));
}}""",
}

# The transcendental builtins (no kernel may call them: wgsl_math.ALLOWED_BUILTINS), at the
# spec's bounds, so a kernel that did would fail the strict run too (and wjax before its own
# math can be run under the emulation, reproducing what an H100 gave): sin/cos an absolute
# 2^-11; exp/exp2 3 + 2|x| ulp; log/log2 an absolute 2^-21 on [0.5, 2], else 3 ulp; tan and pow
# inherit from sin/cos and exp2(y log2 x).
_LOOSE_EXP = """fn {name}(x: {T}) -> {T} {{
  return {ulps}({fn}(x), min(abs(x) * {T}(2.0) + {T}(3.0), {T}(1000.0)), x);
}}"""
_LOOSE_LOG = """fn {name}(x: {T}) -> {T} {{
  let near1 = x >= {T}(0.5) & x <= {T}(2.0);
  let h = bitcast<{U}>(x) * {U}(0x9e3779b1u);
  let d = select({T}(-4.76e-7), {T}(4.76e-7), ((h >> {U}(9u)) & {U}(1u)) == {U}(1u));
  return select({ulps}({fn}(x), {T}(3.0), x), {fn}(x) + d, near1);
}}"""
_LOOSE = {
    "lsin": """fn {name}(x: {T}) -> {T} {{
  let h = bitcast<{U}>(x) * {U}(0x9e3779b1u);
  return sin(x) + select({T}(-0.000488), {T}(0.000488), ((h >> {U}(9u)) & {U}(1u)) == {U}(1u));
}}""",
    "lcos": """fn {name}(x: {T}) -> {T} {{
  let h = bitcast<{U}>(x) * {U}(0x85ebca6bu);
  return cos(x) + select({T}(-0.000488), {T}(0.000488), ((h >> {U}(9u)) & {U}(1u)) == {U}(1u));
}}""",
    "ltan": """fn {name}(x: {T}) -> {T} {{
  return {div}({lsin}(x), {lcos}(x));
}}""",
    "lexp": _LOOSE_EXP.replace("{fn}", "exp"),
    "lexp2": _LOOSE_EXP.replace("{fn}", "exp2"),
    "llog": _LOOSE_LOG.replace("{fn}", "log"),
    "llog2": _LOOSE_LOG.replace("{fn}", "log2"),
    "lpow": """fn {name}(x: {T}, y: {T}) -> {T} {{
  return {lexp2}({ftz}(y * {llog2}(x)));
}}""",
    # r moved by n ulp (n a float count), up or down by a hash of x, where r is normal
    "ulps": """fn {name}(r: {T}, n: {T}, x: {T}) -> {T} {{
  let ur = bitcast<{U}>(r);
  let ok = (ur & {U}(0x7fffffffu)) >= {U}(0x00800000u) & (ur & {U}(0x7fffffffu)) < {U}(0x7f000000u);
  let h = bitcast<{U}>(x) * {U}(0x9e3779b1u);
  let k = {U}(n);
  let d = select(~k + {U}(1u), k, ((h >> {U}(7u)) & {U}(1u)) == {U}(1u));
  return {ftz}(select(r, bitcast<{T}>(ur + d), ok));
}}""",
}
_F32_HELPERS.update(_LOOSE)

_F16_HELPERS = {
    # the f16 product is exact in f32; the sum is rounded (to f32, then to f16) at the end
    "fma": """fn {name}(a: {T}, b: {T}, c: {T}) -> {T} {{
  return {T}({F}(a) * {F}(b) + {F}(c));
}}""",
    "div": """fn {name}(a: {T}, b: {T}) -> {T} {{ return a / b; }}""",
    # sqrt(x) / x on the local driver is within an ulp (not 1 / sqrt(x), which Mesa makes its
    # own less accurate reciprocal square root); then one more
    "rsqrt": """fn {name}(a: {T}) -> {T} {{ return inverseSqrt(a); }}""",
    "sqrt": """fn {name}(a: {T}) -> {T} {{ return sqrt(a); }}""",
    "ftz": """fn {name}(a: {T}) -> {T} {{ return a; }}""",
}

_NEEDS = {"div": ("ftz",), "rsqrt": ("ftz",), "sqrt": ("div", "rsqrt"), "fma": ("ftz",),
          "ltan": ("lsin", "lcos", "div"), "lexp": ("ulps",), "lexp2": ("ulps",),
          "llog": ("ulps",), "llog2": ("ulps",), "lpow": ("lexp2", "llog2", "ftz"),
          "ulps": ("ftz",)}


def _helper_name(op, ty):
    n = _width(ty)
    return f"wj_sd_{op}_v{n}{_scalar(ty)}" if n > 1 else f"wj_sd_{op}_{ty}"


# f32 -> f16 of a value f16 cannot hold: the spec lets the driver take either neighbour
# (NVIDIA's are not always the nearest); the emulation takes the one nearest-even would not
_TOF16 = """fn wj_sd_tof16(x: f32) -> f16 {
  let u = bitcast<u32>(x);
  let a = u & 0x7fffffffu;
  let e = a >> 23u;
  if (e == 255u) { return f16(x); }
  if (e < 102u) {
    return f16(bitcast<f32>((u & 0x80000000u) | select(0u, 0x33800000u, a != 0u)));
  }
  let d = select(13u, 126u - e, e < 113u);
  let m = (a & 0x7fffffu) | 0x800000u;
  let t = (m >> d) << d;
  let up = t + (1u << d);
  let near = ((m + (1u << (d - 1u)) - 1u + ((m >> d) & 1u)) >> d) << d;
  let r = select(select(t, up, near == t), m, m == t);
  let v = f32(r) * bitcast<f32>((e - 23u) << 23u);
  let mag = select(v, bitcast<f32>(0x7f800000u), v > 65504.0);
  return f16(bitcast<f32>(bitcast<u32>(mag) | (u & 0x80000000u)));
}
"""


def _helpers_text(needed):
    todo, done = list(needed), set()
    while todo:
        op, ty = todo.pop()
        if (op, ty) in done:
            continue
        done.add((op, ty))
        if _scalar(ty) == "f32":
            todo += [(d, ty) for d in _NEEDS.get(op, ())]
        elif op.startswith("l"):
            raise StrictDriverError(f"{op[1:]} of {ty}: no kernel may call it")
    out = []
    for op, ty in sorted(done):
        n, s = _width(ty), _scalar(ty)
        table = _F32_HELPERS if s == "f32" else _F16_HELPERS
        out.append(table[op].format(
            name=_helper_name(op, ty), T=ty, U=_vec(n, "u32"), F=_vec(n, "f32"),
            **{k: _helper_name(k, ty) for k in ("ftz", "div", "rsqrt", "lsin", "lcos", "ulps",
                                                "lexp2", "llog2")}))
    return "".join(x + "\n" for x in out)


def rewrite(src: str) -> str:
    """``src`` (a whole kernel) as the strictest conformant driver computes it."""
    try:
        return _Kernel(src).module()
    except (IndexError, KeyError, ValueError) as e:
        raise StrictDriverError(f"{type(e).__name__}: {e}") from e
