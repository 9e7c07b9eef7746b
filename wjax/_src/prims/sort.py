"""Sorting on the device: ``sort`` (multi-operand, stable) and ``top_k``.

Both compute a permutation per row with a bitonic sort of (key words...,
position) tuples, then gather every operand through it.  Keys are u32 words
whose unsigned order is the sort order: floats map to JAX's sort order
(-0.0 == 0.0, every NaN equal and last), signed ints flip the sign bit.  The
position word breaks ties, so the sort is stable and rows pad to a power of
two with positions past the end.

Long rows (at least ``Target.radix_sort`` elements: 4K on CPU adapters, 128K on GPUs) take
an LSD radix sort instead (``_RadixSort``): the same key words, 4 bits a pass from the last
key word's lowest bit (fewer passes for narrow keys), each pass a stable counting scatter of
(key words, position); the permutation comes out the same and gathers the operands alike.

Two schedules of the same network, chosen per adapter: on GPUs, stages whose
compare distance fits in a block run in workgroup memory
(shaders/bitonic_local.wgsl, short rows packed several to a block) and longer
distances run one dispatch per step; on CPU adapters (lavapipe), where
workgroup memory and barriers are slow, every merge runs as register-blocked
passes of up to four steps (each thread sorts 16 elements in registers).
"""
from __future__ import annotations

import numpy as np

from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import kind
from ..transforms import ad as _ad
from ..core import dtypes, ops

W.helper("wj_sortkey_f", """
fn wj_sortkey_f(x: f32) -> u32 {
  var b = bitcast<u32>(x);
  if (wj_isnan(x)) { b = 0x7fc00000u; }
  if (x == 0.0) { b = 0u; }
  return select(b ^ 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}""")
W.helper("wj_totalkey_f", """
fn wj_totalkey_f(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  return select(b ^ 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}""")


_U32 = np.dtype(np.uint32)


def key_expr(kb, v: str, dtype, total_order: bool = False) -> str:
    """A u32 WGSL expression whose unsigned order is the sort order of ``v``."""
    k = kind(dtype)
    if k == "f":
        kb.use_helper("wj_isnan")
        h = "wj_totalkey_f" if total_order else "wj_sortkey_f"
        kb.use_helper(h)
        return f"{h}(f32({v}))"
    if k == "i":
        return f"(bitcast<u32>({v}) ^ 0x80000000u)"
    if k == "b":
        return f"select(0u, 1u, {v})"
    return f"u32({v})"


def _np_keys(x, total_order=False):
    """NumPy version of key_expr (for the reference rules)."""
    if dtypes.is_float(x.dtype):
        f = x.astype(np.float32)
        b = f.view(np.uint32).copy()
        if not total_order:
            b[np.isnan(f)] = 0x7FC00000
            b[f == 0] = 0
        neg = (b & 0x80000000) != 0
        return np.where(neg, ~b, b ^ 0x80000000).astype(np.uint32)
    if x.dtype.kind == "i":
        return (x.astype(np.int64) + 2**31).astype(np.uint32)
    return x.astype(np.uint32)


def _pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _row_index(kb, shape, axis, row, p):
    """Index of element ``p`` along ``axis`` of row ``row`` (rows enumerate the other dims)."""
    other = [d for d in range(len(shape)) if d != axis]
    oshape = [shape[d] for d in other]
    od = Index(kb, oshape, flat=row).dims() if oshape else []
    dims = [None] * len(shape)
    for d, e in zip(other, od):
        dims[d] = e
    dims[axis] = p
    return Index(kb, shape, dims=dims)


def emit_permutation(ctx, avals, key_positions, axis, *, descending=False, total_order=False):
    """Dispatches that sort each row of the key operands; returns (idx scratch key, P).

    ``idx[row * P + p]`` is the position (along ``axis``) of the p-th smallest element.  Long
    rows (``_radix_fits``) take an LSD radix sort (P = N); the others are padded to P = next
    power of two and sorted by a bitonic network over u32 key words (``key_expr``) plus the
    position as the last word, so the sort is stable."""
    shape = avals[key_positions[0]].shape
    if _radix_fits(ctx, shape, axis, [avals[k].dtype for k in key_positions]):
        rs = _radix_class(ctx.target)(ctx, shape, axis, len(key_positions))
        return rs.run(avals, key_positions, descending, total_order), rs.N
    net = _BitonicNetwork(ctx, avals[key_positions[0]].shape, axis, len(key_positions))
    net.init_keys(avals, key_positions, descending, total_order)
    if net.P > 1:
        if _strategy(ctx) == "registers":
            net.run_in_registers()
        else:
            net.run_in_workgroups()
    return net.idx, net.P


class _BitonicNetwork:
    """The scratch buffers and dispatches of one bitonic sort of R rows of N elements."""

    def __init__(self, ctx, shape, axis, nk):
        self.ctx, self.shape, self.axis, self.nk = ctx, shape, axis, nk
        self.N = N = shape[axis]
        self.R = R = int(np.prod(shape, dtype=np.int64)) // N
        self.P = P = _pow2(N)
        self.words = nk + 1
        # block of B elements per workgroup (in workgroup memory, 16 KiB): part of a row, or
        # RB whole rows when rows are short (rows are padded to a multiple of RB with dummies)
        self.B = B = min(2048, 1 << ((4096 // self.words).bit_length() - 1), max(P, _pow2(R * P)))
        RB = max(1, B // P)
        self.Rpad = -(-R // RB) * RB
        self.keys = [ctx.scratch(ShapedArray((self.Rpad * P,), _U32)) for _ in range(nk)]
        self.idx = ctx.scratch(ShapedArray((self.Rpad * P,), _U32))

    def _bind_all(self, kb):
        return ([kb.bind(k, _U32, "read_write") for k in self.keys]
                + [kb.bind(self.idx, _U32, "read_write")])

    def init_keys(self, avals, key_positions, descending, total_order):
        """Key words and positions (padding: all-ones keys, positions >= N sort last)."""
        ctx, P, N, R = self.ctx, self.P, self.N, self.R
        kb = ctx.new_kb()
        f = ctx.fuser(kb)
        row = kb.let(f"i / {P}u", "u32")
        p = kb.let(f"i % {P}u", "u32")
        pc = kb.let(f"min({p}, {N - 1}u)", "u32")
        rc = kb.let(f"min({row}, {R - 1}u)", "u32")
        real = f"({p} < {N}u && {row} < {R}u)"
        for slot, pos in enumerate(key_positions):
            a = avals[pos]
            v = ctx.reader(kb, pos, f)(_row_index(kb, a.shape, self.axis, rc, pc))
            ke = key_expr(kb, v, a.dtype, total_order)
            if descending:
                ke = f"(~{ke})"
            name = kb.bind(self.keys[slot], _U32, "read_write")
            kb.emit(f"{name}[i] = select(0xffffffffu, {ke}, {real});")
        name = kb.bind(self.idx, _U32, "read_write")
        kb.emit(f"{name}[i] = {p};")
        src, grid = kb.elementwise_kernel(self.Rpad * P)
        ctx.dispatch(kb, src, grid)

    def run_in_registers(self):
        """CPU adapters (lavapipe), where workgroup-memory stages are slow: every merge as
        register-blocked passes of up to 4 steps (16 elements per thread)."""
        k = 2
        while k <= self.P:
            j = k // 2
            while j >= 1:
                m = min(4, j.bit_length())
                self.register_steps(k, j, m)
                j >>= m
            k *= 2

    def run_in_workgroups(self):
        """GPUs: blocks of B elements merged in workgroup memory; merges wider than a block
        take one global step per distance until the distance fits in a block."""
        B = self.B
        self.local(2, min(B, self.P), "k / 2u")
        k = 2 * B
        while k <= self.P:
            j = k // 2
            while j >= B:
                self.global_step(k, j)
                j //= 2
            self.local(k, k, f"{B // 2}u")
            k *= 2

    def local(self, kstart, kend, jinit):
        """Merges kstart..kend of each block of B elements, in workgroup memory."""
        kb = self.ctx.new_kb()
        bufs, nk, B = self._bind_all(kb), self.nk, self.B
        words = range(self.words)
        shared = "\n".join(f"var<workgroup> s{w}: array<u32, {B}>;" for w in words)
        # compare-exchange of slots i < l: load each word once, exchange if out of order
        ce = [f"        let a{w} = s{w}[i]; let c{w} = s{w}[l];" for w in words]
        ce.append(f"        var blt = c{nk} < a{nk};")
        ce += [f"        if (c{w} != a{w}) {{ blt = c{w} < a{w}; }}" for w in range(nk - 1, -1, -1)]
        ce.append("        if (blt == up) { "
                  + " ".join(f"s{w}[i] = c{w}; s{w}[l] = a{w};" for w in words) + " }")
        load = "\n".join(f"    s{w}[q] = {bufs[w]}[base + q];" for w in words)
        store = "\n".join(f"    {bufs[w]}[base + q] = s{w}[q];" for w in words)
        groups = self.Rpad * self.P // B
        grid = W.grid_for(groups, kb.max_groups)
        src = W.render("bitonic_local.wgsl", HEADER=kb.header(), SHARED=shared, CE="\n".join(ce),
                       LOAD=load, STORE=store, T=min(256, B // 2), NX=grid[0], GROUPS=groups,
                       PM1=self.P - 1, B=B, HALF=B // 2, KSTART=kstart, KEND=kend, JINIT=jinit)
        self.ctx.dispatch(kb, src, grid)

    def global_step(self, k, j):
        """One compare-exchange step (distance j of merge k) over the whole rows."""
        kb = self.ctx.new_kb()
        bufs, nk, P = self._bind_all(kb), self.nk, self.P
        half = P // 2
        kb.emit(f"let brow = i / {half}u;")
        kb.emit(f"let bt = i % {half}u;")
        kb.emit(f"let bpos = (bt / {j}u) * {2 * j}u + (bt % {j}u);")
        kb.emit(f"let ba = brow * {P}u + bpos;")
        kb.emit(f"let bb = ba + {j}u;")
        kb.emit(f"let up = (bpos & {k}u) == 0u;")
        conds = [f"if ({bufs[w]}[bb] != {bufs[w]}[ba]) {{ blt = {bufs[w]}[bb] < {bufs[w]}[ba]; }}"
                 for w in range(nk)]
        conds.append(f"{{ blt = {bufs[nk]}[bb] < {bufs[nk]}[ba]; }}")
        kb.emit("var blt = false;\n  " + " else ".join(conds))
        sw = " ".join(f"let s{w} = {bufs[w]}[ba]; {bufs[w]}[ba] = {bufs[w]}[bb]; "
                      f"{bufs[w]}[bb] = s{w};" for w in range(self.words))
        kb.emit(f"if (blt == up) {{ {sw} }}")
        src, grid = kb.elementwise_kernel(self.R * half)
        self.ctx.dispatch(kb, src, grid)

    def register_steps(self, k, jhi, m):
        """Steps j = jhi, jhi/2, ..., jhi/2^(m-1) of merge k in one dispatch: each thread loads
        the 2^m elements those steps exchange among into registers and runs them there."""
        kb = self.ctx.new_kb()
        bufs, nk, P, words = self._bind_all(kb), self.nk, self.P, range(self.words)
        jlo = jhi >> (m - 1)
        a = jlo.bit_length() - 1
        G = 1 << m
        per_row = P >> m
        kb.emit(f"let brow = i / {per_row}u;")
        kb.emit(f"let bt = i % {per_row}u;")
        kb.emit(f"let bbase = ((bt >> {a}u) << {a + m}u) | (bt & {jlo - 1}u);")
        kb.emit(f"let up = (bbase & {k & (P - 1)}u) == 0u;")
        kb.emit(f"let boff = brow * {P}u + bbase;")
        for q in range(G):
            kb.emit(" ".join(f"var x{w}_{q} = {bufs[w]}[boff + {q * jlo}u];" for w in words))
        for st in range(m):
            d = 1 << (m - 1 - st)
            for q in range(G):
                if not q & d:
                    kb.emit(_register_exchange(q, q + d, nk, words))
        for q in range(G):
            kb.emit(" ".join(f"{bufs[w]}[boff + {q * jlo}u] = x{w}_{q};" for w in words))
        src, grid = kb.elementwise_kernel(self.Rpad * per_row, wg=64)
        self.ctx.dispatch(kb, src, grid)


# --------------------------------------------------------------------------- radix sort

RADIX_BITS = 4                   # bits per pass: 16 digits
_DIGITS = 1 << RADIX_BITS


def radix_key(kb, v: str, dtype, total_order: bool = False):
    """(u32 expr, lowest bit, highest bit + 1): a key whose unsigned order is the sort order
    of ``v`` and the bits of it that can differ between two values of ``dtype`` (the passes
    of a radix sort).  Like ``key_expr``, but narrow types keep narrow keys: 8/16-bit ints
    are offset to [0, 2^bits), a float16's key has 13 constant low bits, a bfloat16's 16."""
    k, name = kind(dtype), np.dtype(dtype).name
    if k == "i" and name in ("int8", "int16"):
        bits = 8 if name == "int8" else 16
        return (f"((bitcast<u32>({v}) + {1 << (bits - 1)}u) & {(1 << bits) - 1}u)", 0, bits)
    if k == "u" and name in ("uint8", "uint16"):
        return f"u32({v})", 0, 8 if name == "uint8" else 16
    if k == "b":
        return key_expr(kb, v, dtype, total_order), 0, 1
    if name == "bfloat16":      # rounded again: the low 16 bits are zero even if a kernel forgot
        return key_expr(kb, f"wj_bf16r(f32({v}))", np.float32, total_order), 16, 32
    if name == "float16":
        return key_expr(kb, v, dtype, total_order), 13, 32
    return key_expr(kb, v, dtype, total_order), 0, 32


def _radix_class(target):
    """The radix sort's kernels for the Target's ``sort`` strategy: chunks a thread walks
    alone (CPU adapters) or tiles a workgroup ranks together (GPUs)."""
    return _ChunkRadixSort if target.sort == "registers" else _TileRadixSort


def _radix_fits(ctx, shape, axis, key_dtypes) -> bool:
    """The Target's rule: a row of at least ``Target.radix_sort`` elements whose keys are
    32-bit or narrower (every dtype a sort key may have) takes the radix sort, where its
    kernels fit the binding and loop limits (else the bitonic network)."""
    t = ctx.target
    N = shape[axis]
    if not t.radix_sort or N < t.radix_sort or N < 2:
        return False
    if any(kind(d) == "c" for d in key_dtypes):
        return False
    R = int(np.prod(shape, dtype=np.int64)) // N
    if R * N >= 1 << 31:
        return False
    cls = _radix_class(t)
    M = _DIGITS * cls.blocks(N)
    L = cls.segment(N)
    if t.loop_limit is not None and 2 * -(-L // cls.SCAN_T) + cls.SCAN_T > t.loop_limit:
        return False
    win = ctx.lowering.windows

    def bindings(nbytes):       # what a buffer of nbytes takes (windows over the binding limit)
        return 1 if nbytes <= win.max_binding else -(-nbytes // (win.max_binding // 256 * 256))

    nk = len(key_dtypes)
    scatter = ((2 * nk + 2) * bindings(4 * R * N) + bindings(4 * R * M)
               + cls.extra_bindings(R, N, bindings))
    return scatter <= ctx.lowering.max_storage


class _RadixSort:
    """A stable LSD radix sort of R rows of N elements: u32 key words (``radix_key``; the
    last key word's digits first) and the position of each element, 4 bits per pass.

    Each pass counts the digits of each block of a row, turns the counts (digit-major:
    [row][digit][block]) into exclusive prefix sums (shaders/radix_scan.wgsl, ``scan``) --
    where each (digit, block) starts in the sorted row -- and
    scatters every element (key words still needed, position) to its place: equal digits
    keep their order, so each pass is stable and the passes together sort by the whole key.
    Key and position words ping-pong between two buffers; the first pass writes the
    positions it reads.  The subclasses are the two ways of counting and scattering a
    block: ``_ChunkRadixSort`` (a thread per chunk) and ``_TileRadixSort`` (a workgroup per
    tile)."""

    SCAN_T = 256                 # the scan's workgroup threads
    totals = None                # a scratch key: the count of each (row, digit), where the
                                 # scan's segments are digits (``segment``)

    @classmethod
    def blocks(cls, N: int) -> int:
        """The blocks a row of N elements is counted in (each a column of the scan)."""
        raise NotImplementedError

    @classmethod
    def segment(cls, N: int) -> int:
        """How many counts the scan's workgroups each scan (see ``scan``)."""
        raise NotImplementedError

    @classmethod
    def extra_bindings(cls, R, N, bindings) -> int:
        """Bindings the scatter takes beyond keys, positions and the scan."""
        return 0

    def __init__(self, ctx, shape, axis, nk):
        self.ctx, self.shape, self.axis, self.nk = ctx, shape, axis, nk
        self.N = N = shape[axis]
        self.R = R = int(np.prod(shape, dtype=np.int64)) // N
        self.NB = self.blocks(N)
        self.M = _DIGITS * self.NB
        words = lambda: [ctx.scratch(ShapedArray((R * N,), _U32)) for _ in range(nk)]
        self.keys = [words(), words()]
        self.idx = [ctx.scratch(ShapedArray((R * N,), _U32)) for _ in range(2)]
        self.sums = ctx.scratch(ShapedArray((R * self.M,), _U32))

    def run(self, avals, key_positions, descending, total_order):
        """The dispatches; returns the key of the buffer of sorted positions."""
        bits = self.init_keys(avals, key_positions, descending, total_order)
        passes = [(w, s, s + RADIX_BITS >= bits[w][1])
                  for w in reversed(range(self.nk))
                  for s in range(bits[w][0], bits[w][1], RADIX_BITS)]
        for n, (w, shift, last_of_word) in enumerate(passes):
            src, dst = n % 2, 1 - n % 2
            self.count(self.keys[src][w], shift)
            self.scan()
            moved = list(range(w)) + ([] if last_of_word else [w])
            self.scatter(src, dst, w, shift, moved, first=n == 0)
        return self.idx[len(passes) % 2]

    def init_keys(self, avals, key_positions, descending, total_order):
        """Key words of every element in row-major rows; returns each word's (lo, hi) bits."""
        ctx = self.ctx
        kb = ctx.new_kb()
        f = ctx.fuser(kb)
        row = kb.let(f"i / {self.N}u", "u32")
        p = kb.let(f"i % {self.N}u", "u32")
        bits = []
        for slot, pos in enumerate(key_positions):
            a = avals[pos]
            v = ctx.reader(kb, pos, f)(_row_index(kb, a.shape, self.axis, row, p))
            ke, lo, hi = radix_key(kb, v, a.dtype, total_order)
            if descending:
                ke = f"(~{ke})" if hi == 32 else f"({(1 << hi) - 1}u - {ke})"
            bits.append((lo, hi))
            name = kb.bind(self.keys[0][slot], _U32, "read_write")
            kb.emit(f"{name}[i] = {ke};")
        src, grid = kb.elementwise_kernel(self.R * self.N)
        ctx.dispatch(kb, src, grid)
        return bits

    def scan(self):
        """Exclusive prefix sums of the counts in place, one workgroup per segment of
        ``segment(N)`` counts: a row's whole [digit][block] counts (chunks), or one digit's
        (tiles: 16 times the workgroups; the scatter adds the digit's start in the row,
        from ``totals``)."""
        kb = self.ctx.new_kb()
        buf = kb.bind(self.sums, _U32, "read_write")
        L, T = self.segment(self.N), self.SCAN_T
        segs = self.R * self.M // L
        total = ""
        if self.totals is not None:
            total = f"\n    {kb.bind(self.totals, _U32, 'read_write')}[row] = acc;"
        grid = W.grid_for(segs, kb.max_groups)
        src = W.render("radix_scan.wgsl", HEADER=kb.header(), T=T, NX=grid[0], ROWS=segs,
                       M=L, PER=-(-L // T), BUF=buf, TOTAL=total)
        self.ctx.dispatch(kb, src, grid)

    def _scatter_bindings(self, kb, src, dst, w, moved, first):
        """(key words read, [(moved word read, written)], positions read or None, written)."""
        kin = kb.bind(self.keys[src][w], _U32, "read")
        mv = [(kb.bind(self.keys[src][m], _U32, "read"),
               kb.bind(self.keys[dst][m], _U32, "read_write")) for m in moved]
        iin = None if first else kb.bind(self.idx[src], _U32, "read")
        iout = kb.bind(self.idx[dst], _U32, "read_write")
        return kin, mv, iin, iout


class _ChunkRadixSort(_RadixSort):
    """CPU adapters: blocks are superblocks of S chunks of C consecutive elements.  ``count``:
    one thread per chunk counts its digits (sixteen 8-bit counters packed in a vec4<u32>, in
    registers), then one thread per superblock adds its chunks' counts.  ``scatter``: one
    thread per chunk adds the counts of the chunks before it in its superblock to its
    superblock's starts and walks its chunk in order, writing each element to its place --
    no workgroup memory and no barriers, which are slow on a CPU."""

    C, S, SCAN_T = 128, 16, 64

    @classmethod
    def blocks(cls, N):
        return -(-(-(-N // cls.C)) // cls.S)

    @classmethod
    def segment(cls, N):
        return _DIGITS * cls.blocks(N)

    @classmethod
    def extra_bindings(cls, R, N, bindings):
        return bindings(16 * R * -(-N // cls.C))

    def __init__(self, ctx, shape, axis, nk):
        super().__init__(ctx, shape, axis, nk)
        self.NC = -(-self.N // self.C)
        self.hist = ctx.scratch(ShapedArray((self.R * self.NC * 4,), _U32))

    def count(self, keys, shift):
        kb = self.ctx.new_kb()
        kin = kb.bind(keys, _U32, "read")
        hist = kb.bind(self.hist, _U32, "read_write")
        N, C, NC = self.N, self.C, self.NC
        kb.emit(f"""let row = i / {NC}u;
  let start = (i % {NC}u) * {C}u;
  let cnt = min({C}u, {N}u - start);
  let kbase = row * {N}u + start;
  var h = vec4<u32>(0u);
  for (var q = 0u; q < cnt; q = q + 1u) {{
    let d = ({kin}[kbase + q] >> {shift}u) & {_DIGITS - 1}u;
    h = h + {_one_hot8("d")};
  }}
  {hist}[i * 4u] = h.x; {hist}[i * 4u + 1u] = h.y;
  {hist}[i * 4u + 2u] = h.z; {hist}[i * 4u + 3u] = h.w;""")
        src, grid = kb.elementwise_kernel(self.R * NC, wg=64)
        self.ctx.dispatch(kb, src, grid)
        self.superblock_sums()

    @staticmethod
    def _add_counts(hist, first, end):
        """WGSL: lo/hi (vec4<u32>, 16-bit fields) += the packed counts of chunks first..end-1."""
        return f"""var lo = vec4<u32>(0u);
  var hi = vec4<u32>(0u);
  for (var cc = {first}; cc < {end}; cc = cc + 1u) {{
    let h = vec4<u32>({hist}[cc * 4u], {hist}[cc * 4u + 1u], {hist}[cc * 4u + 2u],
                      {hist}[cc * 4u + 3u]);
    lo = lo + (h & vec4<u32>(0x00ff00ffu));
    hi = hi + ((h >> vec4<u32>(8u)) & vec4<u32>(0x00ff00ffu));
  }}"""

    def superblock_sums(self):
        kb = self.ctx.new_kb()
        hist = kb.bind(self.hist, _U32, "read")
        sums = kb.bind(self.sums, _U32, "read_write")
        NC, S, NSB = self.NC, self.S, self.NB
        kb.emit(f"""let row = i / {NSB}u;
  let sb = i % {NSB}u;
  let c0 = row * {NC}u + sb * {S}u;
  {self._add_counts(hist, "c0", f"row * {NC}u + min(sb * {S}u + {S}u, {NC}u)")}
  let ob = row * {self.M}u + sb;""")
        for d in range(_DIGITS):
            kb.emit(f"{sums}[ob + {d * NSB}u] = {_digit_field(d)};")
        src, grid = kb.elementwise_kernel(self.R * NSB, wg=64)
        self.ctx.dispatch(kb, src, grid)

    def scatter(self, src, dst, w, shift, moved, first):
        kb = self.ctx.new_kb()
        kin, mv, iin, iout = self._scatter_bindings(kb, src, dst, w, moved, first)
        hist = kb.bind(self.hist, _U32, "read")
        sums = kb.bind(self.sums, _U32, "read")
        N, C, NC, S, NSB = self.N, self.C, self.NC, self.S, self.NB
        kb.emit(f"""let row = i / {NC}u;
  let c = i % {NC}u;
  let sb = c / {S}u;
  {self._add_counts(hist, f"row * {NC}u + sb * {S}u", "i")}
  let ob = row * {self.M}u + sb;
  var off: array<u32, {_DIGITS}>;""")
        for d in range(_DIGITS):
            kb.emit(f"off[{d}] = {sums}[ob + {d * NSB}u] + {_digit_field(d)};")
        moves = "".join(f"\n    {o}[to] = {s}[at];" for s, o in mv)
        pos = "start + q" if first else f"{iin}[at]"
        kb.emit(f"""let start = c * {C}u;
  let cnt = min({C}u, {N}u - start);
  let rbase = row * {N}u;
  for (var q = 0u; q < cnt; q = q + 1u) {{
    let at = rbase + start + q;
    let d = ({kin}[at] >> {shift}u) & {_DIGITS - 1}u;
    let to = rbase + off[d];
    off[d] = off[d] + 1u;{moves}
    {iout}[to] = {pos};
  }}""")
        src_, grid = kb.elementwise_kernel(self.R * NC, wg=64)
        self.ctx.dispatch(kb, src_, grid)


class _TileRadixSort(_RadixSort):
    """GPUs: blocks are tiles of WG x E consecutive elements, one workgroup each, so every
    load and store of a warp touches neighbouring addresses (shaders/radix_count.wgsl,
    radix_scatter.wgsl).
    ``count``: the workgroup reads its tile coalesced and adds its threads' digit counts in
    workgroup memory.  ``scatter``: thread t ranks its E consecutive elements -- its own
    counts, a workgroup prefix sum of every thread's (16-bit counters, two vec4s a thread),
    and the tile's digit starts --, writes each element's tile position into a permutation
    in workgroup memory, and the workgroup then writes the tile out in sorted order: the
    elements of one digit go to consecutive places of the sorted row, so neighbouring
    threads write neighbouring words (the chunk form's scatter is a scattered write per
    element, each thread on its own run of addresses)."""

    # threads, elements a thread: 2048 a tile and 16 KiB of workgroup memory (WebGPU's least
    # maxComputeWorkgroupStorageSize).  E is 8: a thread's digits pack in one u32, and the
    # prefix sum's 8 words a thread fill the half of the memory the permutation leaves.
    WG, E = 256, 8

    @classmethod
    def blocks(cls, N):
        return -(-N // (cls.WG * cls.E))

    @classmethod
    def segment(cls, N):
        return cls.blocks(N)

    @classmethod
    def extra_bindings(cls, R, N, bindings):
        return 1                 # the digits' totals

    def __init__(self, ctx, shape, axis, nk):
        super().__init__(ctx, shape, axis, nk)
        self.totals = ctx.scratch(ShapedArray((self.R * _DIGITS,), _U32))

    def _render(self, kb, shader, **fields):
        groups = self.R * self.NB
        grid = W.grid_for(groups, kb.max_groups)
        src = W.render(shader, HEADER=kb.header(), WG=self.WG, E=self.E, KT=self.WG * self.E,
                       NX=grid[0], GROUPS=groups, NT=self.NB, N=self.N, M=self.M,
                       DIGITS=_DIGITS, MASK=_DIGITS - 1, ONEHOT=_one_hot8("d"), **fields)
        self.ctx.dispatch(kb, src, grid)

    def count(self, keys, shift):
        kb = self.ctx.new_kb()
        kin = kb.bind(keys, _U32, "read")
        sums = kb.bind(self.sums, _U32, "read_write")
        add = "\n".join(
            f"  let c{d} = (h[{d // 4}] >> {d % 4 * 8}u) & 255u;\n"
            f"  if (c{d} != 0u) {{ atomicAdd(&tot[{d}], c{d}); }}" for d in range(_DIGITS))
        self._render(kb, "radix_count.wgsl", KIN=kin, SHIFT=shift, SUMS=sums, ADD=add)

    def scatter(self, src, dst, w, shift, moved, first):
        kb = self.ctx.new_kb()
        kin, mv, iin, iout = self._scatter_bindings(kb, src, dst, w, moved, first)
        sums = kb.bind(self.sums, _U32, "read")
        totals = kb.bind(self.totals, _U32, "read")
        moves = "".join(f"\n      {o}[to] = {s}[at];" for s, o in mv)
        pos = "tb + sp" if first else f"{iin}[at]"
        # the tile's digit starts, packed as the counters are (lo: even digits, hi: odd)
        starts = ["  let s0 = 0u;"] + [
            f"  let s{d + 1} = s{d} + {_digit_field(d, 'tlo', 'thi')};" for d in range(15)]
        for name, first_digit in (("slo", 0), ("shi", 1)):
            words = [f"s{4 * j + first_digit} | (s{4 * j + first_digit + 2} << 16u)"
                     for j in range(4)]
            starts.append(f"  let {name} = vec4<u32>({', '.join(words)});")
        self._render(kb, "radix_scatter.wgsl", KIN=kin, SHIFT=shift, SUMS=sums, TOT=totals,
                     SH=2 * self.WG * self.E, STARTS="\n".join(starts),
                     MOVES=f"{moves}\n      {iout}[to] = {pos};")


def _one_hot8(d):
    """WGSL: sixteen 8-bit counters (byte d % 4 of word d / 4 of a vec4<u32>) with 1 at d."""
    return (f"select(vec4<u32>(0u), vec4<u32>(1u << (({d} & 3u) * 8u)), "
            f"vec4<u32>({d} >> 2u) == vec4<u32>(0u, 1u, 2u, 3u))")


def _digit_field(d, lo="lo", hi="hi"):
    """WGSL: digit d's counter in lo/hi, sixteen 8-bit counters spread to 16-bit fields
    (lo: bytes 0 and 2 of each word, i.e. the even digits; hi: bytes 1 and 3)."""
    j, b = divmod(d, 4)
    v = lo if b % 2 == 0 else hi
    return f"({v}[{j}] & 0xffffu)" if b < 2 else f"({v}[{j}] >> 16u)"


def _register_exchange(q, r, nk, words) -> str:
    """Compare-exchange of register sets q < r (keys word by word, then the position)."""
    c = [f"var lt{q}_{r} = x{nk}_{r} < x{nk}_{q};"]
    c += [f"if (x{w}_{r} != x{w}_{q}) {{ lt{q}_{r} = x{w}_{r} < x{w}_{q}; }}"
          for w in range(nk - 1, -1, -1)]
    sw = " ".join(f"let y{w} = x{w}_{q}; x{w}_{q} = x{w}_{r}; x{w}_{r} = y{w};" for w in words)
    c.append(f"if (lt{q}_{r} == up) {{ {sw} }}")
    return " ".join(c)


def _strategy(ctx) -> str:
    """``registers`` (CPU adapters) or ``workgroup`` (GPUs): ``Target.sort``."""
    return ctx.target.sort


# --------------------------------------------------------------------------- sort

sort_p = Primitive("sort", multiple_results=True)


@sort_p.def_abstract_eval
def _sort_abstract(*operands, dimension, is_stable=True, num_keys=1):
    if not operands:
        raise TypeError("sort requires at least one operand")
    shape = operands[0].shape
    for o in operands:
        if o.shape != shape:
            raise TypeError("sort operands must all have the same shape, got "
                            + ", ".join(str(x.shape) for x in operands))
    if len(shape) == 0:
        raise TypeError("sort requires operands of rank at least 1, got shape ()")
    if not 0 <= dimension < len(shape):
        raise ValueError(f"sort dimension {dimension} is out of bounds for operand shape {shape}")
    if not 1 <= num_keys <= len(operands):
        raise ValueError(f"sort num_keys={num_keys} must be between 1 and the number of operands "
                         f"({len(operands)})")
    if any(W.is_complex(o.dtype) for o in operands[:num_keys]):   # lax.sort splits them first
        raise TypeError("the sort primitive takes no complex keys: lax.sort sorts a complex key "
                        "by its real and imaginary parts")
    return [ShapedArray(o.shape, o.dtype, o.weak_type) for o in operands]


class _AllInputs(tuple):
    """fuse_inputs that contains every operand position."""

    def __contains__(self, i):
        return True


sort_p.fuse_inputs = _AllInputs()


def _gather_out(ctx, avals, axis, idx, P, n_out, outs, extra=None):
    """out_j[row, p] = operand_j[row, idx[row * P + p]] for p < n_out (one dispatch per chunk of
    operands so the storage-buffer limit holds).  ``extra`` writes the positions too."""
    shape = avals[0].shape
    N = shape[axis]
    R = int(np.prod(shape, dtype=np.int64)) // N
    out_shape = list(shape)
    out_shape[axis] = n_out
    per = max(1, (ctx.lowering.max_storage - 2) // 2)
    jobs = [(j, outs[j]) for j in range(len(avals))] + (
        [("pos", extra)] if extra is not None else []
    )
    for c in range(0, len(jobs), per):
        kb = ctx.new_kb()
        f = ctx.fuser(kb)
        row = kb.let(f"i / {n_out}u", "u32")
        p = kb.let(f"i % {n_out}u", "u32")
        ib = kb.bind(idx, np.uint32, "read")
        s = kb.let(f"{ib}[{row} * {P}u + {p}]", "u32")
        oidx = _row_index(kb, out_shape, axis, row, p)
        for j, (key, dt) in jobs[c:c + per]:
            if j == "pos":
                o = kb.bind(key, dt, "read_write")
                kb.emit(
                    f"{o}[{oidx.flat()}] = {W.wrap_narrow(W.value_type(dt) + '(' + s + ')', dt)};"
                )
                continue
            a = avals[j]
            v = ctx.reader(kb, j, f)(_row_index(kb, a.shape, axis, row, s))
            o = kb.bind(key, a.dtype, "read_write")
            kb.emit(f"{o}[{oidx.flat()}] = {W.store_expr(v, a.dtype)};")
        src, grid = kb.elementwise_kernel(R * n_out)
        ctx.dispatch(kb, src, grid)


@sort_p.def_kernel
def _sort_kernel(ctx, *operands, dimension, is_stable=True, num_keys=1):
    idx, P = emit_permutation(ctx, operands, list(range(num_keys)), dimension)
    outs = [(ctx.out_key(j), operands[j].dtype) for j in range(len(operands))]
    _gather_out(ctx, operands, dimension, idx, P, operands[0].shape[dimension], outs)


def _sort_ref(*operands, dimension, is_stable=True, num_keys=1):
    keys = [np.moveaxis(_np_keys(o), dimension, -1) for o in operands[:num_keys]]
    shape = keys[0].shape
    flat = [k.reshape(int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]) for k in keys]
    order = (
        np.stack([np.lexsort([k[r] for k in reversed(flat)]) for r in range(flat[0].shape[0])])
        if flat[0].shape[0]
        else np.zeros((0, shape[-1]), np.int64)
    )
    order = order.reshape(shape)
    return [np.moveaxis(np.take_along_axis(np.moveaxis(o, dimension, -1), order, -1), -1, dimension)
            for o in operands]


sort_p.reference = _sort_ref


def _sort_batch(args, dims, dimension, **params):
    """vmap: every operand gets the batch axis where the first batched one has it."""
    n = _batching.axis_size(args, dims)
    d = next(d for d in dims if d is not None)
    ops = [_batching.move_batch_axis(x, e, d, n) for x, e in zip(args, dims)]
    outs = sort_p.bind(*ops, dimension=dimension + (dimension >= d), **params)
    return outs, [d] * len(outs)


sort_p.batch = _sort_batch

# --------------------------------------------------------------------------- top_k

top_k_p = Primitive("top_k", multiple_results=True)
top_k_p.fuse_inputs = (0,)


@top_k_p.def_abstract_eval
def _top_k_abstract(x, k, axis=-1):
    if W.is_complex(x.dtype):
        raise ValueError("top_k is not compatible with complex inputs.")
    if x.ndim == 0:
        raise TypeError("top_k operand must have >= 1 dimension, got shape ()")
    ax = axis % x.ndim
    if not 0 <= k <= x.shape[ax]:
        raise ValueError(f"k argument to top_k must be nonnegative and no larger than the size of "
                         f"the reduced axis; got k={k} for operand shape {x.shape}")
    shape = list(x.shape)
    shape[ax] = k
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.int32)]


@top_k_p.def_kernel
def _top_k_kernel(ctx, x, k, axis=-1):
    ax = axis % x.ndim
    if k == 0:
        return
    idx, P = emit_permutation(ctx, [x], [0], ax, descending=True, total_order=True)
    _gather_out(ctx, [x], ax, idx, P, k, [(ctx.out_key(0), x.dtype)],
                extra=(ctx.out_key(1), np.dtype(np.int32)))


def _top_k_ref(x, k, axis=-1):
    ax = axis % x.ndim
    keys = ~_np_keys(x, total_order=True)
    order = np.argsort(keys, axis=ax, kind="stable")
    order = np.take(order, np.arange(k), axis=ax)
    return [np.take_along_axis(x, order, ax), order.astype(np.int32)]


top_k_p.reference = _top_k_ref
_batching.defaxis(top_k_p)


# --------------------------------------------------------------------------- autodiff

def _sort_jvp(primals, tangents, dimension, is_stable=True, num_keys=1):
    """Sorts an iota along to get the permutation, then gathers the tangents with it."""
    shape = _ad.aval_of(primals[0]).shape
    iota = ops.broadcasted_iota(np.int32, shape, dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    perm = outs[-1]
    outs = list(outs[:-1])
    touts = [t if isinstance(t, _ad.Zero) else ops.take_along_axis(t, perm, dimension)
             for t in tangents]
    return outs, [
        _ad.Zero(_ad.aval_of(o)) if isinstance(t, _ad.Zero) else t for o, t in zip(outs, touts)
    ]


def _top_k_jvp(primals, tangents, k, axis=-1):
    x, = primals
    t, = tangents
    vals, idx = top_k_p.bind(x, k=k, axis=axis)
    ax = axis % _ad.aval_of(x).ndim
    return [vals, idx], [ops.take_along_axis(t, idx, ax), _ad.Zero(_ad.aval_of(idx))]


sort_p.jvp = _sort_jvp
top_k_p.jvp = _top_k_jvp
