"""WGSL emission: types, literals, bindings, index math and kernel assembly.

A :class:`KernelBuilder` collects the bindings, helper functions and body
lines of one compute shader.  An :class:`Index` is a position in an array's
iteration space, held either as a flat row-major offset or as one expression
per dimension, converting lazily (and emitting each conversion once).
"""
from __future__ import annotations

import functools
from importlib import resources
import math
import re

import numpy as np


# --------------------------------------------------------------------------- types

_STORAGE = {
    "bool": "u32", "int8": "i32", "int16": "i32", "int32": "i32",
    "uint8": "u32", "uint16": "u32", "uint32": "u32", "float16": "f16", "float32": "f32",
    # complex64: (re, im) in one vec2 -- the bytes of NumPy's complex64, 8 per element
    "complex64": "vec2<f32>",
    # bfloat16: one value per f32 lane, always a bf16-exact f32 (see wrap_narrow)
    "bfloat16": "f32",
}
_HOST_STORAGE = {
    "bool": np.uint32, "int8": np.int32, "int16": np.int32, "int32": np.int32,
    "uint8": np.uint32, "uint16": np.uint32, "uint32": np.uint32,
    "float16": np.float16, "float32": np.float32, "complex64": np.complex64,
    "bfloat16": np.float32,
}


def _name(dtype) -> str:
    return np.dtype(dtype).name


def storage_type(dtype) -> str:
    """The WGSL element type of a storage buffer holding ``dtype``."""
    try:
        return _STORAGE[_name(dtype)]
    except KeyError:
        raise TypeError(f"wjax: dtype {np.dtype(dtype).name} has no WGSL storage type") from None


def value_type(dtype) -> str:
    """The WGSL type of an expression of ``dtype`` (bool is a real bool)."""
    return "bool" if _name(dtype) == "bool" else storage_type(dtype)


def host_storage_dtype(dtype) -> np.dtype:
    """The NumPy dtype of a buffer's bytes on the host side (bool and small ints widened)."""
    return np.dtype(_HOST_STORAGE[_name(dtype)])


def storage_itemsize(dtype) -> int:
    return host_storage_dtype(dtype).itemsize


def wrap_narrow(expr: str, dtype) -> str:
    """Keeps the wrap-around of 8/16-bit integers held in 32-bit lanes, and rounds a bfloat16
    result (an f32 in kernels) to bfloat16, to nearest even as XLA does (``wj_bf16r``; every
    kernel calling it gets the function from :func:`finalize`)."""
    n = _name(dtype)
    if n == "bfloat16":
        return f"wj_bf16r({expr})"
    if n == "int8":
        return f"(({expr}) << 24u) >> 24u"
    if n == "int16":
        return f"(({expr}) << 16u) >> 16u"
    if n == "uint8":
        return f"(({expr}) & 0xffu)"
    if n == "uint16":
        return f"(({expr}) & 0xffffu)"
    return expr


def load_expr(raw: str, dtype) -> str:
    return f"({raw} != 0u)" if _name(dtype) == "bool" else raw


def store_expr(val: str, dtype) -> str:
    return f"select(0u, 1u, {val})" if _name(dtype) == "bool" else val


def is_complex(dtype) -> bool:
    """Whether ``dtype`` is complex64 (a ``vec2<f32>`` of (re, im) in kernels)."""
    return _name(dtype) == "complex64"


def literal(val, dtype) -> str:
    """A WGSL literal of ``val`` as ``dtype`` (handles inf/nan and INT_MIN)."""
    n = _name(dtype)
    if n == "complex64":
        c = complex(np.asarray(val).astype(np.complex64))
        return f"vec2<f32>({literal(c.real, np.float32)}, {literal(c.imag, np.float32)})"
    if n == "bool":
        return "true" if bool(val) else "false"
    if n == "bfloat16":   # a bf16 value is an f32 in kernels
        return literal(np.asarray(val).astype(dtype).astype(np.float32), np.float32)
    if n in ("float32", "float16"):
        f = float(np.asarray(val, np.float32))
        t = "f32" if n == "float32" else "f16"
        if math.isnan(f) or math.isinf(f):
            bits = int(np.asarray(f, np.float32).view(np.uint32))
            e = f"bitcast<f32>({bits}u)"
            return e if t == "f32" else f"f16({e})"
        if n == "float16":
            return f"f16({float(np.float16(f))!r})"
        if f == 0.0:
            return "-0.0f" if math.copysign(1.0, f) < 0 else "0.0f"
        r = repr(f)
        if "e" not in r and "." not in r:
            r += ".0"
        return f"f32({r})"
    if storage_type(dtype) == "i32":
        v = int(np.asarray(val).astype(np.int64))
        if v == -(2**31):
            return "i32(-2147483647 - 1)"
        return f"i32({v})"
    v = int(np.asarray(val).astype(np.int64)) & 0xFFFFFFFF
    return f"{v}u"


def zero(dtype) -> str:
    return literal(0, dtype)


def tree_sum(terms) -> str:
    """The WGSL sum of ``terms`` as a balanced tree of additions: independent partial sums
    where a left-to-right sum is one chain of dependent additions (a driver may not reorder
    floating-point additions)."""
    terms = list(terms)
    while len(terms) > 1:
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms)
                                                                                 // 2 * 2:]
    return terms[0]


# --------------------------------------------------------------------------- helpers

HELPERS: dict[str, str] = {}


def helper(name: str, src: str) -> str:
    """Registers a WGSL helper function emitted only into shaders that use it (one source
    per name: a second helper of that name would silently replace the first everywhere)."""
    if HELPERS.get(name, src) != src:
        raise ValueError(f"WGSL helper {name!r} is registered twice with different sources")
    HELPERS[name] = src
    return name


@functools.lru_cache(maxsize=None)
def load_shader(name: str) -> str:
    """The text of ``wjax/_src/backend/shaders/<name>`` (package data: read through
    importlib.resources, so it works from a checkout, an editable install and a wheel alike)."""
    return resources.files(__package__).joinpath("shaders", name).read_text()


def render(name: str, **subs) -> str:
    """The shader template ``shaders/<name>`` with each ``{{KEY}}`` replaced by ``subs[KEY]``."""
    src = load_shader(name)
    for k, v in subs.items():
        src = src.replace("{{" + k + "}}", str(v))
    return src


_MAIN = re.compile(r"fn main\(((?:[^()]|\([^()]*\))*)\)\s*(->[^{]*)?\{")  # @builtin(..) nests


# f32 -> bfloat16, round to nearest even on the bits (no float op a driver could reassociate);
# a NaN becomes the quiet NaN of its sign (XLA's bits); overflow carries into the exponent: inf
_BF16R = """
fn wj_bf16r(x: f32) -> f32 {
  let u = bitcast<u32>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) { return bitcast<f32>((u & 0x80000000u) | 0x7fc00000u); }
  return bitcast<f32>((u + 0x7fffu + ((u >> 16u) & 1u)) & 0xffff0000u);
}"""

_BF16R4 = """
fn wj_bf16r4(v: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(wj_bf16r(v.x), wj_bf16r(v.y), wj_bf16r(v.z), wj_bf16r(v.w));
}"""


# ``bitcast<f32>(literal)`` of an infinity or NaN: a constant expression whose value is not
# finite, which the WGSL spec makes a shader-creation error (Chrome's Tint enforces it; naga
# does not).  ``finalize`` routes such bits through a function, which is not constant.
_NONFINITE_BITS = re.compile(r"bitcast<f32>\(\s*(-?(?:0x[0-9a-fA-F]+|\d+))([iu]?)\s*\)")
_F32_BITS = "fn wj_f32_bits(b: u32) -> f32 { return bitcast<f32>(b); }"


def _nonfinite_call(m: re.Match) -> str:
    bits = int(m.group(1), 0) & 0xFFFFFFFF
    if bits & 0x7F800000 != 0x7F800000:
        return m.group(0)
    return f"wj_f32_bits({bits:#010x}u)"


def finalize(src: str) -> str:
    """The last touch every kernel gets before compiling (``Runtime.pipeline`` calls it): a
    kernel rounding to bfloat16 (``wrap_narrow``) gets ``wj_bf16r``, one converting to float16
    ``wj_f16r``; a kernel using the opaque zero of ``wj_opq`` (see ``wgsl_math``) sets it at
    the start of ``main``, from ``num_workgroups`` -- never 0 in a running dispatch, unknown to
    the compiler; infinities and NaNs written as ``bitcast<f32>(literal)`` go through
    ``wj_f32_bits`` (a non-finite constant expression is an error in WGSL)."""
    if "wj_bf16r4(" in src and "fn wj_bf16r4(" not in src:
        src = src + _BF16R4 + "\n"
    if "wj_bf16r(" in src and "fn wj_bf16r(" not in src:
        src = src + _BF16R + "\n"
    if "wj_f16r(" in src and "fn wj_f16r(" not in src:       # (a conversion to float16)
        src = src + HELPERS["wj_f16r"].strip() + "\n"
    if "bitcast<f32>(" in src and "fn wj_f32_bits(" not in src:
        fixed = _NONFINITE_BITS.sub(_nonfinite_call, src)
        if fixed != src:
            src = fixed + "\n" + _F32_BITS + "\n"
    if "var<private> wj_zero" not in src:
        return src
    m = _MAIN.search(src)
    if m is None:
        return src
    params = m.group(1)
    b = re.search(r"@builtin\(num_workgroups\)\s*(\w+)", params)
    if b is not None:
        name = b.group(1)
    else:
        name = "wj_nwg"
        params = params.rstrip().rstrip(",")
        params += (", " if params.strip() else "") + "@builtin(num_workgroups) wj_nwg: vec3<u32>"
    head = f"fn main({params}) {m.group(2) or ''}{{\n  wj_zero = u32({name}.x == 0u);"
    return src[:m.start()] + head + src[m.end():]


# --------------------------------------------------------------------------- kernels

WORKGROUP = 256


def grid_for(n_groups: int, max_per_dim: int = 65535):
    """A 2-D grid covering ``n_groups`` workgroups within the per-dimension limit."""
    n_groups = max(int(n_groups), 1)
    if n_groups <= max_per_dim:
        return (n_groups, 1, 1)
    y = -(-n_groups // max_per_dim)
    x = -(-n_groups // y)
    return (x, y, 1)


class Windows:
    """How buffers larger than one binding are bound: the adapter's limit, the offset
    alignment, and the byte size of each buffer key (given by the lowering)."""

    def __init__(self, max_binding: int, align: int, nbytes):
        self.max_binding, self.align, self.nbytes = int(max_binding), int(align), nbytes

    def of(self, key, esize: int):
        """(first element, number of windows, elements per window) for ``key`` bound with
        ``esize``-byte elements, or None when it fits one binding."""
        n = self.nbytes(key)
        if n is None or n <= self.max_binding:
            return None
        step = math.lcm(self.align, esize, 4)
        wbytes = self.max_binding // step * step
        return 0, -(-n // wbytes), wbytes // esize

    def chunk(self, esize: int) -> int:
        """Elements per chunk of an elementwise kernel dispatched in pieces: one window of
        every flat-indexed buffer (a multiple of the offset alignment)."""
        step = math.lcm(self.align, esize, 4)
        return self.max_binding // step * step // esize


_ESIZE = {"f32": 4, "i32": 4, "u32": 4, "f16": 2, "atomic<u32>": 4}


def _esize(ty: str) -> int:
    m = re.match(r"vec(\d)<(\w+)>", ty)
    return int(m.group(1)) * _ESIZE[m.group(2)] if m else _ESIZE[ty]


class KernelBuilder:
    """Collects one compute shader: bindings (in binding order), helpers, body.

    A buffer larger than the adapter's binding limit (``windows``) is bound as several
    consecutive windows of itself; code still writes ``bN[i]`` (and atomics on ``&bN[i]``),
    and :meth:`finish` turns those into calls of accessor functions that pick the window."""

    def __init__(self, max_groups: int = 65535, windows: Windows | None = None):
        self.bindings: list[tuple[object, str, str]] = []   # (key, access, wgsl elem type)
        self.windows = windows
        # name -> (first element, count, elements per window) of a buffer bound in windows
        self.windowed: dict[str, tuple[int, int, int]] = {}
        # key -> (start, count): bind only these elements (one chunk of an elementwise kernel)
        self.restrict: dict = {}
        self._binding_names: dict[tuple, str] = {}
        self.helpers: list[str] = []
        self.decls: list[str] = []
        self.lines: list[str] = []
        self._n = 0
        self.max_groups = max_groups
        self.enable_f16 = False
        # vec4 mode: every value is a vec4 of 4 consecutive elements (pure flat elementwise
        # kernels only); vec_ok turns False as soon as index math or a scalar read appears
        self.vec = 1
        self.vec_ok = True
        self.nonflat_keys: set = set()   # buffers read at an index other than the flat i
        # in vec mode, names whose value differs between the lanes of a vec (the flat index
        # ``i`` and what is computed from it); a read at an index naming none of them is the
        # same for every lane: one scalar read, splatted (``uniform``)
        self.varying: set = {"i"}
        # names of flat element indices (vec mode: the vec4 index) that read a buffer at its own
        # position with one load: ``i``, or one per slot of a kernel covering several
        # positions per thread (``prims/rows.py``)
        self.flat_names: set = {"i"}
        # a vec whose lanes are 4 consecutive positions of the innermost dim: that dim's
        # expression (``lane_dim``, varying) and its value at lane 0 (``lane_base``, a
        # multiple of 4): an operand read at (uniform dims..., lane_dim) is a vec4 load too
        self.lane_dim: str | None = None
        self.lane_base: str | None = None
        self.alias: dict = {}            # let name -> the name it copies (``let t2 = t1;``)
        self.ops: list = []              # the equations computed here (the profiler's label)
        # key -> elements: read-only buffers bound as uniform buffers (arrays of vec4), which
        # CPU adapters read without the per-lane loop of a storage load (see loops.py)
        self.uniform_bufs: dict = {}
        self._uniform_names: set = set()

    def vt(self, dtype) -> str:
        t = value_type(dtype)
        if self.vec > 1 and is_complex(dtype):
            self.vec_ok = False           # complex values are vec2s already: no vec4 kernels
        return t if self.vec == 1 else f"vec{self.vec}<{t}>"

    def lit(self, val, dtype) -> str:
        e = literal(val, dtype)
        if self.vec > 1 and is_complex(dtype):
            self.vec_ok = False
        return e if self.vec == 1 else f"vec{self.vec}<{value_type(dtype)}>({e})"

    def load(self, raw: str, dtype) -> str:
        if _name(dtype) == "bool":
            return f"({raw} != {'0u' if self.vec == 1 else f'vec{self.vec}<u32>(0u)'})"
        return raw

    def store(self, val: str, dtype) -> str:
        if _name(dtype) == "bool":
            if self.vec == 1:
                return f"select(0u, 1u, {val})"
            return f"select(vec{self.vec}<u32>(0u), vec{self.vec}<u32>(1u), {val})"
        return val

    def fresh(self, prefix: str = "t") -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def bind(self, key, dtype, access: str = "read") -> str:
        """A storage binding for buffer ``key``; access is read, read_write or atomic."""
        k = (key, access) if self.vec == 1 else (key, access, self.vec)  # x @ x: f32 and vec4 views
        if k in self._binding_names:
            return self._binding_names[k]
        name = f"b{len(self.bindings)}"
        if access == "read" and self.vec == 1 and key in self.uniform_bufs:
            self.bindings.append((key, "uniform", f"vec4<{storage_type(dtype)}>"))
            self._binding_names[k] = name
            self._uniform_names.add(name)
            return name
        ty = "atomic<u32>" if access == "atomic" else storage_type(dtype)
        if ty == "f16":
            self.enable_f16 = True
            self.vec_ok = False
        if _name(dtype) in ("int8", "int16", "uint8", "uint16", "complex64", "bfloat16"):
            self.vec_ok = False
        if self.vec > 1 and "vec" not in ty:   # a complex vec2 never widens (vec_ok is off)
            ty = f"vec{self.vec}<{ty}>"
        self.bindings.append((key, access, ty))
        self._binding_names[k] = name
        if key in self.restrict:
            start, count = self.restrict[key]
            self.windowed[name] = (
                (start * self.vec, 1, count * self.vec) if self.vec > 1 else (start, 1, count)
            )
        else:
            w = self.windows.of(key, _esize(ty)) if self.windows is not None else None
            if w is not None:
                self.windowed[name] = w
        return name

    def elem(self, name: str, flat: str) -> str:
        """The element ``flat`` of binding ``name`` (a uniform binding holds vec4s)."""
        if name in self._uniform_names:
            return f"{name}[({flat}) / 4u][({flat}) % 4u]"
        return f"{name}[{flat}]"

    def n_bindings(self) -> int:
        """Storage bindings the kernel declares (a windowed buffer counts once per window)."""
        return sum(self.windowed.get(f"b{i}", (0, 1))[1] for i in range(len(self.bindings)))

    def dispatch_bindings(self):
        """(keys, byte ranges) in binding order: a windowed buffer's key once per window,
        with its (offset, size) -- size None for the last window: the rest of the buffer."""
        keys, ranges = [], []
        for i, (key, _, ty) in enumerate(self.bindings):
            w = self.windowed.get(f"b{i}")
            if w is None:
                keys.append(key)
                ranges.append(None)
                continue
            base, count, elems = w
            es = _esize(ty)
            for j in range(count):
                keys.append(key)
                if count == 1:            # one chunk's elements (an elementwise kernel in pieces)
                    size = -(-elems * es // 4) * 4
                else:                     # windows of the whole buffer; the last: the rest
                    size = elems * es if j < count - 1 else None
                ranges.append(((base + j * elems) * es, size))
        return keys, ranges

    def finish(self, src: str) -> str:
        """The kernel source with every access to a windowed buffer made an accessor call."""
        if not self.windowed:
            return src
        return _rewrite_windowed(src, self.windowed)

    def use_helper(self, name: str) -> None:
        if name not in self.helpers:
            self.helpers.append(name)
            # helpers that call other helpers (wj_max_f -> wj_isnan) pull those in too
            for dep in HELPERS:
                if dep != name and dep + "(" in HELPERS[name]:
                    self.use_helper(dep)

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def let(self, expr: str, ty: str | None = None) -> str:
        name = self.fresh()
        self.lines.append(f"let {name}{': ' + ty if ty else ''} = {expr};")
        if self.vec > 1 and not self.uniform(expr):
            self.varying.add(name)
        e = expr.strip()
        if _IDENT_FULL.match(e):
            self.alias[name] = self.alias.get(e, e)
        return name

    def resolve(self, name: str) -> str:
        """The name a chain of plain copies (``let t2 = t1;``) starts from."""
        return self.alias.get(name, name)

    def uniform(self, expr: str) -> bool:
        """Whether ``expr`` (an index) is the same for every lane of a vec (vec mode)."""
        return not any(w in self.varying for w in _IDENT.findall(expr))

    def var(self, expr: str, ty: str) -> str:
        name = self.fresh("v")
        self.lines.append(f"var {name}: {ty} = {expr};")
        return name

    def header(self) -> str:
        out = []
        if self.enable_f16:
            out.append("enable f16;")
        slot = 0
        for i, (key, access, ty) in enumerate(self.bindings):
            if access == "uniform":
                n4 = -(-self.uniform_bufs[key] // 4)
                out.append(f"@group(0) @binding({slot}) var<uniform> b{i}: array<{ty}, {n4}>;")
                slot += 1
                continue
            mode = "read" if access == "read" else "read_write"
            w = self.windowed.get(f"b{i}")
            if w is None:
                out.append(f"@group(0) @binding({slot}) var<storage, {mode}> b{i}: array<{ty}>;")
                slot += 1
                continue
            for j in range(w[1]):
                out.append(
                    f"@group(0) @binding({slot}) var<storage, {mode}> b{i}_w{j}: array<{ty}>;"
                )
                slot += 1
            out.append(_window_accessors(f"b{i}", w, ty, access))
        out.extend(self.decls)
        for h in self.helpers:
            out.append(HELPERS[h].strip())
        return "\n".join(out)

    def lanes_along_last_dim(self, vec: int, base: str) -> str:
        """Makes this a ``vec``-lane kernel whose lanes are ``vec`` adjacent positions of the
        last dim, the first at ``base`` (a uniform expression, a multiple of ``vec``); returns
        the placeholder (``wj_vb``) to use as that dim's coordinate, which ``Fuser._vec_read``
        resolves into vec4 loads or splats and WGSL never defines.  The index math written
        before it, scalar, does not count against the vec4 form (``vec_ok``)."""
        self.vec, self.vec_ok = vec, True
        self.varying |= {"wj_vb"}
        self.lane_dim, self.lane_base = "wj_vb", base
        return "wj_vb"

    def elementwise_kernel(self, n: int, wg: int = WORKGROUP, per_thread: int = 1,
                           base: int = 0, interleave: bool = False) -> tuple[str, tuple]:
        """Wraps ``self.lines`` (which use ``i``, the flat index) in a kernel over ``n``
        elements -- ``base .. base + n - 1`` when dispatched in chunks --, each thread taking
        ``per_thread`` consecutive ones, or with ``interleave`` (GPUs) ``per_thread`` ones a
        whole grid apart, so that each load of a warp reads neighbouring addresses; returns
        (wgsl, grid)."""
        k = max(1, per_thread if n >= wg * per_thread * 4 else 1)
        groups = -(-n // (wg * k))
        grid = grid_for(groups, self.max_groups)
        # (a coordinate nothing reads is dropped: in a vec kernel one naming the lane
        # placeholder would fail the compile)
        self.lines = drop_dead_lets(self.lines, [])
        body = "\n  ".join(self.lines)
        head = (f"{self.header()}\n"
                f"@compute @workgroup_size({wg})\n"
                f"fn main(@builtin(workgroup_id) wid: vec3<u32>, "
                f"@builtin(local_invocation_index) lid: u32) {{\n"
                f"  let wj_t = (wid.x + wid.y * {grid[0]}u) * {wg}u + lid;\n")
        off = f" + {base}u" if base else ""
        if k == 1:
            return (
                head + f"  if (wj_t >= {n}u) {{ return; }}\n  let i = wj_t{off};\n  {body}\n}}\n"
            ), grid
        written = [f"b{j}" for j, (_, acc, _) in enumerate(self.bindings) if acc != "read"]
        pre, inside = hoist_invariants(self.lines, ["q", "i"], written)
        if pre:      # a Python scalar's splat, a constant: once per thread, not per element
            head += "".join(f"  {ln}\n" for ln in pre)
            body = "\n  ".join(inside)
        body = body.replace("\n  ", "\n    ")
        if interleave:
            stride = grid[0] * grid[1] * wg
            return (
                head + f"  for (var q = 0u; q < {k}u; q = q + 1u) {{\n"
                f"    if (wj_t + q * {stride}u >= {n}u) {{ return; }}\n"
                f"    let i = wj_t + q * {stride}u{off};\n"
                f"    {body}\n  }}\n}}\n"
            ), grid
        return (
            head + f"  for (var q = 0u; q < {k}u; q = q + 1u) {{\n"
            f"    if (wj_t * {k}u + q >= {n}u) {{ return; }}\n    let i = wj_t * {k}u + q{off};\n"
            f"    {body}\n  }}\n}}\n"
        ), grid


_LET = re.compile(r"^let (\w+)\s*(?::[^=]+)?=(.*);$", re.S)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_IDENT_FULL = re.compile(r"^[A-Za-z_]\w*$")
_STORE = re.compile(r"^b\d+\[[^;]*\]\s*=[^=][^;]*;$")


def drop_dead_lets(lines: list, roots) -> list:
    """``lines`` (a kernel body's ``let`` chain, stores and other statements) without the
    ``let``s that nothing reads: neither a later kept line nor one of the expressions
    ``roots`` (what the caller emits after the body).  A Fuser writes every coordinate of an
    index it builds, used or not; a dead one that names a lane placeholder (``wj_vb``) would
    fail the kernel's compilation and cost it its vec4 form."""
    live = {w for r in roots for w in _IDENT.findall(r)}
    kept = []
    for line in reversed(lines):
        m = _LET.match(line.strip())
        if m is not None and (";" in m.group(2) or "atomic" in m.group(2)):
            m = None            # more than one statement, or an atomic: kept whole
        if m is not None and m.group(1) not in live:
            continue
        live.update(_IDENT.findall(line if m is None else m.group(2)))
        kept.append(line)
    return kept[::-1]


def hoist_invariants(lines: list, loop_vars, written=()) -> tuple[list, list]:
    """Splits a loop body into (lines that can run once before the loop, the rest): every
    ``let`` whose expression names none of ``loop_vars`` nor a ``let`` that does.  Kernel
    bodies are pure ``let`` chains (reads of read-only buffers, arithmetic, helper calls), so
    computing the invariant ones before the loop changes nothing but the work; a body with
    any other statement is left whole.  Reads of the bindings in ``written`` (those the loop
    stores to) stay in the loop.  On CPU adapters each buffer read costs a gather per
    SIMD lane, so a broadcast operand read once per thread instead of once per element is
    the difference between one load per element and several."""
    dep = set(loop_vars) | set(written)
    out, inside = [], []
    for line in lines:
        m = _LET.match(line.strip())
        if m is None:
            if _STORE.match(line.strip()):      # a store stays in the loop, defines nothing
                inside.append(line)
                continue
            return [], list(lines)
        name, expr = m.group(1), m.group(2)
        if any(w in dep for w in _IDENT.findall(expr)):
            dep.add(name)
            inside.append(line)
        else:
            out.append(line)
    return out, inside


# --------------------------------------------------------------------------- windowed buffers

_ATOMIC_ARGS = {"atomicLoad": 0, "atomicStore": 1, "atomicAdd": 1, "atomicSub": 1,
                "atomicMax": 1, "atomicMin": 1, "atomicAnd": 1, "atomicOr": 1, "atomicXor": 1,
                "atomicExchange": 1, "atomicCompareExchangeWeak": 2}


def _window_accessors(name: str, w: tuple, ty: str, access: str) -> str:
    """``NAME_ld(i)``, ``NAME_st(i, v)`` and, for atomics, ``NAME_atomicOp(i, ...)`` over the
    windows ``NAME_w0 .. NAME_w{n-1}`` of ``elems`` elements each."""
    base, count, elems = w

    def pick(stmt):   # stmt(window name, index expr) -> statement; last window takes the rest
        k = f"(i - {base}u)" if base else "i"
        if count == 1:
            return f"  let j = {k};\n  {stmt(f'{name}_w0', 'j')}"
        lines = [f"  let w = min({k} / {elems}u, {count - 1}u);", f"  let j = {k} - w * {elems}u;"]
        for k in range(count - 1):
            lines.append(f"  if (w == {k}u) {{ {stmt(f'{name}_w{k}', 'j')} }}")
        lines.append(f"  {stmt(f'{name}_w{count - 1}', 'j')}")
        return "\n".join(lines)

    if access == "atomic":
        out = []
        for op, nargs in _ATOMIC_ARGS.items():
            params = "".join(f", a{k}: u32" for k in range(nargs))
            args = "".join(f", a{k}" for k in range(nargs))
            if op == "atomicStore":
                out.append(f"fn {name}_{op}(i: u32{params}) {{\n"
                           + pick(lambda b, j: f"{op}(&{b}[{j}]{args}); return;") + "\n}")
            elif op == "atomicCompareExchangeWeak":  # its result struct cannot be named: .exchanged
                out.append(f"fn {name}_{op}(i: u32{params}) -> bool {{\n"
                           + pick(lambda b, j: f"return {op}(&{b}[{j}]{args}).exchanged;") + "\n}")
            else:
                out.append(f"fn {name}_{op}(i: u32{params}) -> u32 {{\n"
                           + pick(lambda b, j: f"return {op}(&{b}[{j}]{args});") + "\n}")
        return "\n".join(out)
    out = [f"fn {name}_ld(i: u32) -> {ty} {{\n" + pick(lambda b, j: f"return {b}[{j}];") + "\n}"]
    if access != "read":
        out.append(
            f"fn {name}_st(i: u32, v: {ty}) {{\n"
            + pick(lambda b, j: f"{b}[{j}] = v; return;")
            + "\n}"
        )
    return "\n".join(out)


def _closing(src: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket closing the one just before ``start``."""
    depth = 1
    i = start
    while depth:
        c = src[i]
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
        i += 1
    return i - 1


def _statement_end(src: str, start: int) -> int:
    depth, i = 0, start
    while True:
        c = src[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == ";" and depth == 0:
            return i
        i += 1


def _rewrite_windowed(src: str, windowed: dict) -> str:
    """Rewrites ``b3[e]`` reads to ``b3_ld(e)``, ``b3[e] = v;`` to ``b3_st(e, v);`` and
    ``atomicOp(&b3[e], ...)`` to ``b3_atomicOp(e, ...)`` for the windowed bindings."""
    names = "|".join(re.escape(n) for n in windowed)
    pat = re.compile(rf"(atomic\w+)\(\s*&\s*({names})\[|(?<![\w.])({names})\[")
    out, i = [], 0
    while True:
        m = pat.search(src, i)
        if m is None:
            out.append(src[i:])
            return "".join(out)
        out.append(src[i:m.start()])
        if m.group(1):                                      # atomicOp(&bN[e], args...)
            op, name = m.group(1), m.group(2)
            close = _closing(src, m.end(), "[", "]")
            index = _rewrite_windowed(src[m.end():close], windowed)
            call_end = _closing(src, close + 1, "(", ")")
            rest = _rewrite_windowed(src[close + 1:call_end], windowed)
            i = call_end + 1
            if op == "atomicCompareExchangeWeak":
                tail = re.match(r"\s*\.\s*exchanged", src[i:])
                if tail is None:
                    raise NotImplementedError("windowed atomicCompareExchangeWeak needs .exchanged")
                i += tail.end()
            out.append(f"{name}_{op}({index}{rest})")
            continue
        name = m.group(3)
        close = _closing(src, m.end(), "[", "]")
        index = _rewrite_windowed(src[m.end():close], windowed)
        assign = re.match(r"\s*=(?!=)", src[close + 1:])
        if assign:                                          # bN[e] = v;
            v0 = close + 1 + assign.end()
            end = _statement_end(src, v0)
            value = _rewrite_windowed(src[v0:end], windowed)
            out.append(f"{name}_st({index}, {value.strip()})")
            i = end
            continue
        out.append(f"{name}_ld({index})")
        i = close + 1


def strides_of(shape) -> list[int]:
    s, out = 1, []
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


class Index:
    """A position in an array of ``shape``: a flat offset or per-dim coordinates."""

    def __init__(self, kb: KernelBuilder, shape, flat: str | None = None, dims=None,
                 lanes: bool = False):
        self.kb, self.shape = kb, tuple(shape)
        self._flat, self._dims = flat, (list(dims) if dims is not None else None)
        # ``lanes``: in vec mode, flat ``i`` and ``dims`` describe a vec of consecutive
        # elements, the dims that differ between lanes named by ``kb.varying``
        self.lanes = lanes
        if len(self.shape) == 0:
            self._flat, self._dims = "0u", []

    def flat(self) -> str:
        if self._flat is None:
            st = strides_of(self.shape)
            terms = [
                d if s == 1 else f"({d}) * {s}u"
                for d, s, n in zip(self._dims, st, self.shape)
                if n != 1
            ]
            self._flat = self.kb.let(" + ".join(terms) if terms else "0u", "u32")
        return self._flat

    def dims(self) -> list[str]:
        kb = self.kb
        if self.lanes and self._dims is not None:
            pass       # dims that are the same for all lanes, and lane-varying ones
        elif kb.vec > 1 and self._lane_ok():
            pass       # the same position for every lane, or consecutive innermost ones
        elif (len(self.shape) > 1
              or self._flat not in (None, "0u") and self._flat not in kb.flat_names):
            self.kb.vec_ok = False
        elif self._dims is None and len(self.shape) == 1:
            self.kb.vec_ok = False
        if self._dims is None:
            st = strides_of(self.shape)
            out, total = [], int(np.prod(self.shape))
            for s, n in zip(st, self.shape):
                if n == 1:
                    out.append("0u")
                    continue
                e = self._flat if s == 1 else f"{self._flat} / {s}u"
                if s * n < total:
                    e = f"({e}) % {n}u"
                out.append(self.kb.let(e, "u32"))
            self._dims = out
        return self._dims

    def _lane_ok(self) -> bool:
        kb = self.kb
        if self._dims is not None:
            return all(kb.uniform(d) or kb.resolve(d) == kb.lane_dim for d in self._dims)
        return self._flat is not None and (kb.uniform(self._flat) or (
            len(self.shape) == 1 and kb.resolve(self._flat) == kb.lane_dim))

    def key(self):
        return ("f", self._flat) if self._flat is not None else ("d", tuple(self._dims))
