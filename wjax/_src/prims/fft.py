"""The ``fft`` primitive (``lax.fft``): FFT, IFFT, RFFT and IRFFT over the trailing 1-3 axes.

The kernel is a Stockham auto-sort FFT (no bit reversal), one axis at a time, every axis
the same machinery:

* An axis of length ``N`` runs as a chain of *global passes*, each one dispatch: pass
  ``i`` has radix ``P_i`` (``prod P_i = N``) and span ``Ns = P_1 ... P_{i-1}``.  A pass
  reads ``P`` elements ``j0 + m N/P`` of a row (a *lane* ``(row, j0)``), multiplies them
  by the twiddles ``w^(k m)`` of order ``Ns P`` (``k = j0 mod Ns``), takes their ``P``-point
  DFT and writes it at ``(j0 - k) P + k + m' Ns`` -- a radix-``P`` Stockham step.  Lengths
  up to 4096 (the workgroup memory: ``P`` complex values per lane) are one pass; longer ones
  two or three (2^20 = 1024 x 1024).
* Inside a pass, the ``P``-point DFT is itself a Stockham sequence of *sub-passes* of small
  radices (16, 8, 4, 2 and the primes 3, 5, 7, 11, 13), done in registers.  ``TR`` threads
  share a lane, each holding ``P / TR`` values; between sub-passes they exchange through
  workgroup memory (two barriers).  Short transforms (``P <= 16``, 64 on CPU adapters) take
  one thread a lane: the exchanges are register renames and every twiddle a literal.
* Twiddle factors ``exp(-2 pi i m / N)`` come from a table computed on the host in float64
  and rounded once (``KernelContext.constant``: uploaded once per executable); past 2^16
  points the table is two-level (``w(m) = lo[m % L] * hi[m / L]``, one complex product).
* Lengths with a prime factor above 13 use Bluestein's chirp-z: with ``c_j = exp(-pi i j^2
  / N)``, ``X = c * (IFFT_M(FFT_M(x c) * FFT_M(conj c)))`` for a power of two ``M >= 2N - 1``;
  the chirp and the filter's spectrum (``FFT_M(conj c) / M``) are float64 host constants,
  the products happen in the loads and stores of the two length-``M`` chains.
* Inverse transforms are forward ones of the conjugate (conjugated in the first load and
  the last store, which also scales by 1/N); RFFT loads ``(x, 0)`` and stores the first
  ``N/2 + 1`` outputs; IRFFT loads the Hermitian extension of its half spectrum and stores
  the real part.  Multi-axis transforms run the axes one after another (RFFT: the last axis
  first; IRFFT: the last axis last), rows of the other dimensions being independent lanes.

The operand's elementwise producers (a conversion to complex64, a ``moveaxis`` transpose,
the zero padding of ``jnp.fft``'s ``n``) fuse into the first pass's loads.  Every index is
computed without loops, so lavapipe's loop limit never applies, and buffers past the
binding limit are windowed by the kernel builder as for every kernel.
"""
from __future__ import annotations

import math

import numpy as np

from ..backend import wgsl as W
from ..backend import wgsl_cmath  # noqa: F401  (registers wj_cmul)
from ..backend.wgsl import Index
from ..core import ops
from ..core.ir import ShapedArray
from ..core.ops import FftType
from ..core.primitive import Primitive
from ..transforms import ad as _ad
from ..transforms import batching as _batching

_C64 = np.dtype(np.complex64)
_F32 = np.dtype(np.float32)
_PRIMES = (2, 3, 5, 7, 11, 13)        # radices done in registers; larger primes: Bluestein
_FULL_TABLE = 1 << 16                 # twiddle tables up to this length hold every factor
_V2 = "vec2<f32>"


# --------------------------------------------------------------------------- primitive

fft_p = Primitive("fft")
fft_p.fuse_inputs = (0,)
fft_p.epilogue = True       # same-shaped elementwise consumers fuse into the last store


@fft_p.def_abstract_eval
def _fft_abstract(x, fft_type, fft_lengths):
    t = FftType(fft_type)
    lengths = tuple(int(n) for n in fft_lengths)
    k = len(lengths)
    if not 1 <= k <= 3:
        raise ValueError(f"FFT rank must be between 1 and 3, but got {k} fft_lengths "
                         f"{lengths}")
    if k > x.ndim:
        raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {lengths}.")
    if any(n < 0 for n in lengths):
        raise ValueError(f"FFT lengths must be non-negative, got {lengths}")
    dt = np.dtype(x.dtype)
    if t == FftType.RFFT:
        if dt != _F32:
            raise ValueError(f"RFFT input must be float32 or float64, got {dt.name}")
        if x.shape[-k:] != lengths:
            raise ValueError(f"RFFT input shape {x.shape} minor dimensions must be equal to "
                             f"fft_lengths {lengths}")
        if lengths[-1] == 0:
            raise ValueError(f"RFFT of length 0 along the last axis (input shape {x.shape}) "
                             "has no output")
        return ShapedArray(x.shape[:-k] + lengths[:-1] + (lengths[-1] // 2 + 1,), _C64)
    if dt != _C64:
        raise ValueError(f"{t.name} input must be complex64 or complex128, got {dt.name}")
    if t == FftType.IRFFT:
        if x.shape[-k:-1] != lengths[:-1]:
            raise ValueError(f"IRFFT input shape {x.shape} minor dimensions must be equal to "
                             f"all except the last fft_length, got fft_lengths={lengths}")
        if x.shape[-1] != lengths[-1] // 2 + 1:
            raise ValueError(f"IRFFT requires innermost dimension to be compatible with "
                             f"fft_length[-1]/2+1. Got: {x.shape[-1]} but fft_length is "
                             f"{lengths[-1]} (input shape {x.shape}).")
        return ShapedArray(x.shape[:-k] + lengths, _F32)
    if x.shape[-k:] != lengths:
        raise ValueError(f"FFT input shape {x.shape} minor dimensions must be equal to "
                         f"fft_lengths {lengths}")
    return ShapedArray(x.shape, _C64)


@fft_p.def_reference
def _fft_reference(x, fft_type, fft_lengths):
    t = FftType(fft_type)
    lengths = tuple(fft_lengths)
    out = _fft_abstract(ShapedArray(x.shape, x.dtype), t, lengths)
    if out.size == 0 or x.size == 0:
        return np.zeros(out.shape, out.dtype)
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    if t == FftType.FFT:
        r = np.fft.fftn(x.astype(np.complex128), axes=axes)
    elif t == FftType.IFFT:
        r = np.fft.ifftn(x.astype(np.complex128), axes=axes)
    elif t == FftType.RFFT:
        r = np.fft.rfftn(x.astype(np.float64), axes=axes)
    else:
        r = np.fft.irfftn(x.astype(np.complex128), s=lengths, axes=axes)
    return np.asarray(r).astype(out.dtype)


# --------------------------------------------------------------------------- host tables

def _factor(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _smooth(n: int) -> bool:
    return all(p in _PRIMES for p in _factor(n))


def _table(N: int) -> tuple[np.ndarray, int]:
    """The twiddle table of order N: (complex64 values, L).  L == 0: ``t[m] = w^m`` for every
    m < N; otherwise ``w^m = t[m % L] * t[L + m / L]``.  Computed in float64."""
    if N <= _FULL_TABLE:
        m = np.arange(N, dtype=np.float64)
        return np.exp(-2j * np.pi * m / N).astype(_C64), 0
    L = math.isqrt(N - 1) + 1
    lo = np.exp(-2j * np.pi * np.arange(L, dtype=np.float64) / N)
    hi = np.exp(-2j * np.pi * (np.arange(-(-N // L), dtype=np.float64) * L) / N)
    return np.concatenate([lo, hi]).astype(_C64), L


def _chirp(N: int) -> np.ndarray:
    """exp(-pi i j^2 / N), j < N, with j^2 reduced mod 2N exactly (float64, rounded once)."""
    j = np.arange(N, dtype=np.int64)
    q = (j * j) % (2 * N)
    return np.exp(-1j * np.pi * q.astype(np.float64) / N)


def _bluestein_filter(N: int, M: int) -> np.ndarray:
    """FFT_M of the conjugate chirp wrapped around (b_m = b_{M-m} = conj c_m), over M."""
    b = np.zeros(M, np.complex128)
    cc = np.conj(_chirp(N))
    b[:N] = cc
    b[M - N + 1:] = cc[1:][::-1]
    return (np.fft.fft(b) / M).astype(_C64)


# --------------------------------------------------------------------------- pass planning

def _radices(factors: list[int]) -> list[int]:
    """Sub-pass radices of one pass: twos grouped into 16/8/4/2, odd primes as they are."""
    a = factors.count(2)
    out = [16] * (a // 4)
    rem = a % 4
    if rem == 1 and out:
        out[-1:] = [8, 4]
    elif rem:
        out.append(1 << rem)
    return out + sorted(f for f in factors if f != 2)


def _threads(P: int, radices: list[int], reg_max: int, max_threads: int) -> int:
    """Threads sharing a lane: 1 for short transforms (all in registers); else the largest
    divisor of every P/R that leaves each thread at least 16 values (and one butterfly)."""
    if P <= reg_max or not radices:
        return 1
    g = 0
    for R in radices:
        g = math.gcd(g, P // R)
    want = max(16, max(radices))
    divs = [d for d in range(1, g + 1) if g % d == 0 and d <= max_threads]
    good = [d for d in divs if P // d >= want]
    return max(good) if good else max(divs)


def _split(factors: list[int], parts: int) -> list[list[int]]:
    """Factors into ``parts`` bins of balanced products (largest factor first)."""
    bins: list[list[int]] = [[] for _ in range(parts)]
    prods = [1] * parts
    for f in sorted(factors, reverse=True):
        i = prods.index(min(prods))
        bins[i].append(f)
        prods[i] *= f
    return [b for b in bins if b]


class _Config:
    """What the kernels may use on this target (``Target.fft``): on "registers" (CPU
    adapters, where workgroup memory and barriers are slow) every pass is a DFT of at most
    32 points in one thread's registers; on "workgroup" passes up to ``pmax`` points (two
    buffers of complex values in the workgroup memory: 2048 with 32 KiB, 1024 with WebGPU's
    default 16 KiB) run in workgroup memory, and passes of at most 16 in registers."""

    def __init__(self, target):
        storage = int(target["max-compute-workgroup-storage-size"])
        self.max_threads = min(256, int(target["max-compute-invocations-per-workgroup"]))
        self.max_groups = int(target["max-compute-workgroups-per-dimension"])
        if target.fft == "registers":
            self.reg_max = self.pmax = self.pmax_multi = 32
        else:
            self.reg_max = 16
            self.pmax = max(16, min(4096, storage // 16))
            # a pass of a multi-pass transform keeps >= 4 lanes a workgroup: its strided reads
            # come in runs of at least 32 bytes
            self.pmax_multi = max(16, self.pmax // 4)


def _plan_passes(N: int, cfg: _Config) -> list[tuple[int, list[int], int]]:
    """[(P, radices, TR)] of the global passes of a length-N (13-smooth) transform: as few as
    fit ``pmax`` (one when N does), with balanced radices."""
    if N == 1:
        return [(1, [], 1)]
    factors = _factor(N)
    parts = 1
    while True:
        bins = _split(factors, parts)
        cap = cfg.pmax if len(bins) == 1 else cfg.pmax_multi
        plan = []
        for b in bins:
            P = math.prod(b)
            rs = _radices(b)
            TR = _threads(P, rs, cfg.reg_max, cfg.max_threads)
            plan.append((P, rs, TR))
        if all(P <= cap and P // TR <= 64 for P, _, TR in plan) or parts >= len(factors):
            return plan
        parts += 1


# --------------------------------------------------------------------------- WGSL pieces

def _f(v: float) -> str:
    return W.literal(v, _F32)


def _cmul_const(kb, a: str, q: int, R: int) -> str:
    """a * exp(-2 pi i q / R) for a constant q (exact for the multiples of a quarter turn)."""
    q %= R
    if q == 0:
        return a
    if 4 * q == R:
        return kb.let(f"{_V2}({a}.y, -{a}.x)", _V2)
    if 2 * q == R:
        return kb.let(f"-{a}", _V2)
    if 4 * q == 3 * R:
        return kb.let(f"{_V2}(-{a}.y, {a}.x)", _V2)
    c, s = math.cos(2 * math.pi * q / R), -math.sin(2 * math.pi * q / R)
    return kb.let(f"{_V2}({a}.x * {_f(c)} - {a}.y * {_f(s)}, {a}.x * {_f(s)} + {a}.y * {_f(c)})",
                  _V2)


def _dft(kb, xs: list[str], R: int) -> list[str]:
    """The forward R-point DFT of the registers ``xs`` as straight-line WGSL."""
    if R == 1:
        return list(xs)
    if R == 2:
        a, b = xs
        return [kb.let(f"{a} + {b}", _V2), kb.let(f"{a} - {b}", _V2)]
    if R == 4:
        a0, a1, a2, a3 = xs
        t0, t1 = kb.let(f"{a0} + {a2}", _V2), kb.let(f"{a0} - {a2}", _V2)
        t2, d = kb.let(f"{a1} + {a3}", _V2), kb.let(f"{a1} - {a3}", _V2)
        t3 = kb.let(f"{_V2}({d}.y, -{d}.x)", _V2)          # -i (a1 - a3)
        return [kb.let(f"{t0} + {t2}", _V2), kb.let(f"{t1} + {t3}", _V2),
                kb.let(f"{t0} - {t2}", _V2), kb.let(f"{t1} - {t3}", _V2)]
    if R in (8, 16):
        A, B = 4, R // 4                 # n = B n1 + n2, k = k1 + A k2
        ys = []
        for n2 in range(B):
            col = _dft(kb, [xs[B * n1 + n2] for n1 in range(A)], A)
            ys.append([_cmul_const(kb, v, n2 * k1, R) for k1, v in enumerate(col)])
        out = [None] * R
        for k1 in range(A):
            row = _dft(kb, [ys[n2][k1] for n2 in range(B)], B)
            for k2, v in enumerate(row):
                out[k1 + A * k2] = v
        return out
    # an odd prime: pairs r, R - r share cos and (negated) sin
    h = (R - 1) // 2
    s = [kb.let(f"{xs[r]} + {xs[R - r]}", _V2) for r in range(1, h + 1)]
    d = [kb.let(f"{xs[r]} - {xs[R - r]}", _V2) for r in range(1, h + 1)]
    out = [None] * R
    out[0] = kb.let(" + ".join([xs[0]] + s), _V2)
    for k in range(1, h + 1):
        a = " + ".join([xs[0]] + [f"{s[r - 1]} * {_f(math.cos(2 * math.pi * r * k / R))}"
                                  for r in range(1, h + 1)])
        b = " + ".join(f"{d[r - 1]} * {_f(math.sin(2 * math.pi * r * k / R))}"
                       for r in range(1, h + 1))
        av, bv = kb.let(a, _V2), kb.let(b, _V2)
        mib = kb.let(f"{_V2}({bv}.y, -{bv}.x)", _V2)          # -i b
        out[k] = kb.let(f"{av} + {mib}", _V2)
        out[R - k] = kb.let(f"{av} - {mib}", _V2)
    return out


def _twiddle(kb, table: str, L: int, idx: str) -> str:
    """w^idx from a table (see ``_table``)."""
    if not L:
        return f"{table}[{idx}]"
    kb.use_helper("wj_cmul")
    i = kb.let(idx, "u32")
    return f"wj_cmul({table}[{i} % {L}u], {table}[{L}u + {i} / {L}u])"


def _rowflat(o: str, e: str, inn: str, n: int, inner: int, outer: int) -> str:
    """Flat index of element ``e`` of row (o, inn) in an (outer, n, inner) array."""
    terms = []
    if outer > 1:
        terms.append(f"{o} * {n * inner}u")
    terms.append(e if inner == 1 else f"({e}) * {inner}u")
    if inner > 1:
        terms.append(inn)
    return " + ".join(terms)


# --------------------------------------------------------------------------- one pass

class _Layout:
    """An axis transform's rows: (outer, inner) around the transformed axis."""

    def __init__(self, outer: int, inner: int):
        self.outer, self.inner = outer, inner


class _Lane:
    """The lane (row, j0) a thread works on, and its place in the workgroup: ``C`` lanes of
    ``TR`` threads each (thread ``t`` of lane ``c`` is invocation ``t C + c``, so consecutive
    invocations touch consecutive lanes: consecutive addresses)."""

    def __init__(self, kb, cfg, N, P, TR, C, Ns, lay, grid):
        self.n_lanes = lay.outer * (N // P) * lay.inner
        self.nj = nj = N // P
        kb.emit(f"let wj_g = wid.x + wid.y * {grid[0]}u;")
        self.c = "lid" if TR == 1 else ("0u" if C == 1 else kb.let(f"lid % {C}u", "u32"))
        self.t = "0u" if TR == 1 else ("lid" if C == 1 else kb.let(f"lid / {C}u", "u32"))
        lane = kb.let(f"wj_g * {C}u + {self.c}", "u32")
        kb.emit(f"let wj_valid = {lane} < {self.n_lanes}u;")
        lc = kb.let(f"min({lane}, {self.n_lanes - 1}u)", "u32")
        self.inn = kb.let(f"{lc} % {lay.inner}u", "u32") if lay.inner > 1 else "0u"
        rest = kb.let(f"{lc} / {lay.inner}u", "u32") if lay.inner > 1 else lc
        self.j0 = (kb.let(f"{rest} % {nj}u", "u32") if lay.outer > 1 else rest) if nj > 1 \
            else "0u"
        self.o = (kb.let(f"{rest} / {nj}u", "u32") if nj > 1 else rest) if lay.outer > 1 \
            else "0u"
        self.k = kb.let(f"{self.j0} % {Ns}u", "u32") if Ns > 1 else "0u"
        self.N, self.P, self.Ns = N, P, Ns

    def element(self, m: str) -> str:
        """Input element of position m (within the lane's P values)."""
        if self.nj == 1:
            return m
        return f"{self.j0} + {m} * {self.nj}u" if self.P > 1 else self.j0

    def output(self, pos: str) -> str:
        """Output element of position pos: (j0 - k) P + k + pos Ns."""
        if self.Ns > 1:
            return f"({self.j0} - {self.k}) * {self.P}u + {self.k} + ({pos}) * {self.Ns}u"
        if self.nj > 1:
            return f"{self.j0} * {self.P}u + {pos}"
        return pos


def _kernel_src(kb, wg: int, decl: str = "") -> str:
    body = "\n  ".join(kb.lines)
    return (f"{kb.header()}\n{decl}@compute @workgroup_size({wg})\n"
            f"fn main(@builtin(workgroup_id) wid: vec3<u32>, "
            f"@builtin(local_invocation_index) lid: u32) {{\n  {body}\n}}\n")


def _emit_pass(ctx, cfg, N, P, radices, TR, Ns, lay: _Layout, load, store, table):
    """One radix-P Stockham pass of a length-N transform over every row.

    ``load(kb, o, e, inn) -> vec2 expr`` gives element e of row (o, inn) of the pass's input,
    ``store(kb, o, e, inn, value) -> WGSL statement`` writes one of its output; ``table`` is
    (key, L) of the order-N twiddle table, or None when no twiddle is read at run time."""
    if P <= cfg.reg_max:
        _emit_pass_registers(ctx, cfg, N, P, radices, Ns, lay, load, store, table)
    else:
        _emit_pass_shared(ctx, cfg, N, P, radices, TR, Ns, lay, load, store, table)


def _emit_pass_registers(ctx, cfg, N, P, radices, Ns, lay, load, store, table):
    """A short pass (P <= 16): one thread a lane, the P-point DFT as straight-line code with
    literal twiddles, the sub-passes' reordering a renaming of registers."""
    kb = ctx.new_kb()
    n_lanes = lay.outer * (N // P) * lay.inner
    C = min(64, max(1, n_lanes))
    grid = W.grid_for(-(-n_lanes // C), cfg.max_groups)
    tname = tl = None
    if table is not None:
        tname, tl = kb.bind(table[0], _C64, "read"), table[1]
    ln = _Lane(kb, cfg, N, P, 1, C, Ns, lay, grid)
    xs = []
    for m in range(P):
        v = load(kb, ln.o, kb.let(ln.element(f"{m}u"), "u32"), ln.inn)
        if Ns > 1 and m > 0:      # the pass's twiddles w^(k m) of order Ns P
            kb.use_helper("wj_cmul")
            v = f"wj_cmul({v}, {_twiddle(kb, tname, tl, f'{ln.k} * {m * (N // (Ns * P))}u')})"
        xs.append(kb.let(v, _V2))
    ns = 1
    for R in radices:
        new = [None] * P
        for b in range(P // R):
            kl = b % ns
            ins = [_cmul_const(kb, xs[b + r * (P // R)], kl * r, ns * R) for r in range(R)]
            for r, y in enumerate(_dft(kb, ins, R)):
                new[(b // ns) * ns * R + kl + r * ns] = y
        xs, ns = new, ns * R
    writes = [store(kb, ln.o, kb.let(ln.output(f"{pos}u"), "u32"), ln.inn, y)
              for pos, y in enumerate(xs)]
    kb.emit("if (wj_valid) {\n    " + "\n    ".join(writes) + "\n  }")
    ctx.dispatch(kb, _kernel_src(kb, C), grid)


def _dft_function(R: int) -> str:
    """``wj_dftR``: the forward R-point DFT of an array of R complex values."""
    tmp = W.KernelBuilder()
    outs = _dft(tmp, [f"v[{r}]" for r in range(R)], R)
    body = "\n  ".join(tmp.lines)
    ty = f"array<{_V2}, {R}>"
    return (f"fn wj_dft{R}(v: {ty}) -> {ty} {{\n  {body}\n"
            f"  return {ty}({', '.join(outs)});\n}}\n")


def _emit_pass_shared(ctx, cfg, N, P, radices, TR, Ns, lay, load, store, table):
    """A long pass: TR threads a lane, the lane's P values in workgroup memory (two buffers,
    ping-pong: one barrier a sub-pass), each sub-pass a loop over the thread's butterflies
    calling one ``wj_dftR`` function -- compact code whatever P is."""
    kb = ctx.new_kb()
    n_lanes = lay.outer * (N // P) * lay.inner
    C = max(1, min(cfg.max_threads // TR, cfg.pmax // P, n_lanes))
    grid = W.grid_for(-(-n_lanes // C), cfg.max_groups)
    E = P // TR
    tname, tl = kb.bind(table[0], _C64, "read"), table[1]
    kb.use_helper("wj_cmul")
    ln = _Lane(kb, cfg, N, P, TR, C, Ns, lay, grid)
    c, t = ln.c, ln.t
    kb.emit(f"for (var s = 0u; s < {E}u; s = s + 1u) {{")
    m = kb.let(f"{t} + s * {TR}u", "u32")
    v = load(kb, ln.o, kb.let(ln.element(m), "u32"), ln.inn)
    if Ns > 1:
        v = f"wj_cmul({v}, {_twiddle(kb, tname, tl, f'{ln.k} * {m} * {N // (Ns * P)}u')})"
    kb.emit(f"wj_a[{m} * {C}u + {c}] = {v};")
    kb.emit("}")
    kb.emit("workgroupBarrier();")
    cur, nxt = "wj_a", "wj_b"
    ns = 1
    fns = []
    for qi, R in enumerate(radices):
        last = qi == len(radices) - 1
        if R not in fns:
            fns.append(R)
        kb.emit(f"for (var b = 0u; b < {P // (R * TR)}u; b = b + 1u) {{")
        jj = kb.let(f"{t} + b * {TR}u", "u32")
        vals = [kb.let(f"{cur}[({jj} + {r * (P // R)}u) * {C}u + {c}]", _V2) for r in range(R)]
        if ns > 1:
            kl = kb.let(f"{jj} % {ns}u", "u32")
            tw = N // (ns * R)
            vals = [vals[0]] + [
                kb.let(f"wj_cmul({v}, {_twiddle(kb, tname, tl, f'{kl} * {r * tw}u')})", _V2)
                for r, v in enumerate(vals) if r]
            base = kb.let(f"({jj} - {kl}) * {R}u + {kl}", "u32")
        else:
            base = kb.let(f"{jj} * {R}u", "u32")
        y = kb.let(f"wj_dft{R}(array<{_V2}, {R}>({', '.join(vals)}))", f"array<{_V2}, {R}>")
        if not last:
            for r in range(R):
                kb.emit(f"{nxt}[({base} + {r * ns}u) * {C}u + {c}] = {y}[{r}];")
        else:
            writes = [store(kb, ln.o, kb.let(ln.output(f"{base} + {r * ns}u"), "u32"), ln.inn,
                            f"{y}[{r}]") for r in range(R)]
            kb.emit("if (wj_valid) {\n    " + "\n    ".join(writes) + "\n  }")
        kb.emit("}")
        if not last:
            kb.emit("workgroupBarrier();")
            cur, nxt = nxt, cur
        ns *= R
    decl = (f"var<workgroup> wj_a: array<{_V2}, {P * C}>;\n"
            f"var<workgroup> wj_b: array<{_V2}, {P * C}>;\n"
            + "".join(_dft_function(R) for R in fns))
    ctx.dispatch(kb, _kernel_src(kb, C * TR, decl), grid)


# --------------------------------------------------------------------------- chains

def _chain(ctx, cfg, N, lay, load, store):
    """A forward length-N (13-smooth) transform of every row: global passes through complex
    scratch buffers of layout (outer, N, inner)."""
    passes = _plan_passes(N, cfg)
    # a long pass (workgroup memory) reads its sub-passes' twiddles from the table even when
    # it is the only pass and one thread holds a lane (length 40 = 8 * 5 on a GPU target)
    need_table = len(passes) > 1 or any(P > cfg.reg_max for P, _, _ in passes)
    table = None
    if need_table:
        vals, L = _table(N)
        table = (ctx.constant(vals), L)
    Ns = 1
    src_load = load
    for i, (P, rs, TR) in enumerate(passes):
        last = i == len(passes) - 1
        if last:
            dst_store = store
        else:
            key = ctx.scratch(ShapedArray((lay.outer * N * lay.inner,), _C64))
            dst_store = _buffer_store(key, N, lay)
        _emit_pass(ctx, cfg, N, P, rs, TR, Ns, lay, src_load, dst_store, table)
        if not last:
            src_load = _buffer_load(key, N, lay)
        Ns *= P


def _buffer_load(key, n, lay):
    def load(kb, o, e, inn):
        b = kb.bind(key, _C64, "read")
        return f"{b}[{_rowflat(o, e, inn, n, lay.inner, lay.outer)}]"
    return load


def _buffer_store(key, n, lay):
    def store(kb, o, e, inn, v):
        b = kb.bind(key, _C64, "read_write")
        return f"{b}[{_rowflat(o, e, inn, n, lay.inner, lay.outer)}] = {v};"
    return store


def _transform(ctx, cfg, N, lay, load, store):
    """A forward length-N transform (any N >= 1): direct passes for 13-smooth N, else
    Bluestein over a power of two M >= 2N - 1."""
    if _smooth(N):
        _chain(ctx, cfg, N, lay, load, store)
        return
    M = 1 << (2 * N - 2).bit_length()
    chirp = ctx.constant(_chirp(N).astype(_C64))
    filt = ctx.constant(_bluestein_filter(N, M))
    mid = ctx.scratch(ShapedArray((lay.outer * M * lay.inner,), _C64))

    def load_a(kb, o, e, inn):           # x_e c_e, zero past N
        kb.use_helper("wj_cmul")
        cb = kb.bind(chirp, _C64, "read")
        ec = kb.let(f"min({e}, {N - 1}u)", "u32")
        v = load(kb, o, ec, inn)
        return f"select({_V2}(0.0), wj_cmul({v}, {cb}[{ec}]), {e} < {N}u)"

    _chain(ctx, cfg, M, lay, load_a, _buffer_store(mid, M, lay))
    read_mid = _buffer_load(mid, M, lay)

    def load_b(kb, o, e, inn):           # conj(A_e F_e): the inverse as a forward transform
        kb.use_helper("wj_cmul")
        fb = kb.bind(filt, _C64, "read")
        v = kb.let(f"wj_cmul({read_mid(kb, o, e, inn)}, {fb}[{e}])", _V2)
        return f"{_V2}({v}.x, -{v}.y)"

    def store_b(kb, o, e, inn, v):       # X_e = c_e conj(v), e < N
        cb = kb.bind(chirp, _C64, "read")
        ec = kb.let(f"min({e}, {N - 1}u)", "u32")
        x = kb.let(f"wj_cmul({_V2}({v}.x, -{v}.y), {cb}[{ec}])", _V2)
        return f"if ({e} < {N}u) {{ {store(kb, o, ec, inn, x)} }}"

    _chain(ctx, cfg, M, lay, load_b, store_b)


# --------------------------------------------------------------------------- kernel rule

def _conj(v: str) -> str:
    return f"{_V2}({v}.x, -{v}.y)"


def _fft_kernel(ctx, x, fft_type, fft_lengths):
    t = FftType(fft_type)
    out = ctx.eqn.outvars[0].aval
    if out.size == 0:
        return
    cfg = _Config(ctx.target)
    nd, k = x.ndim, len(fft_lengths)
    axes = list(range(nd - k, nd))
    inverse = t in (FftType.IFFT, FftType.IRFFT)
    if t == FftType.RFFT:
        steps = [("r2c", nd - 1)] + [("c2c", a) for a in reversed(axes[:-1])]
    elif t == FftType.IRFFT:
        steps = [("c2c", a) for a in reversed(axes[:-1])] + [("c2r", nd - 1)]
    else:
        steps = [("c2c", a) for a in reversed(axes)]
    shape = tuple(x.shape)
    src = None                            # None: the operand; else a scratch key
    for i, (kind, a) in enumerate(steps):
        last = i == len(steps) - 1
        new_shape = list(shape)
        if kind == "r2c":
            new_shape[a] = shape[a] // 2 + 1
        elif kind == "c2r":
            new_shape[a] = fft_lengths[-1]
        new_shape = tuple(new_shape)
        N = shape[a] if kind != "c2r" else new_shape[a]
        lay = _Layout(math.prod(shape[:a]), math.prod(shape[a + 1:]))
        n_in, n_out = shape[a], new_shape[a]
        load = _source(ctx, src, shape, a, lay, kind, N, n_in, inverse)
        if last:
            dst = ctx.out_key(0)
        else:
            dst = ctx.scratch(ShapedArray(new_shape, _C64))
        store = _sink(ctx, dst, out.dtype if last else _C64, lay, kind, N, n_out, inverse,
                      last)
        _transform(ctx, cfg, N, lay, load, store)
        src, shape = dst, new_shape


def _source(ctx, src, shape, a, lay, kind, N, n_in, inverse):
    """load(kb, o, e, inn): element e of the logical length-N input sequence of a row (the
    Hermitian extension for c2r, (x, 0) for r2c), conjugated for an inverse transform."""
    def raw(kb, o, e, inn):
        fl = _rowflat(o, e, inn, n_in, lay.inner, lay.outer)
        if src is None:                   # the operand, its producers fused into the read
            return ctx.reader(kb, 0)(Index(kb, shape, flat=kb.let(fl, "u32")))
        b = kb.bind(src, _C64, "read")
        return f"{b}[{fl}]"

    def load(kb, o, e, inn):
        if kind == "r2c":
            return f"{_V2}({raw(kb, o, e, inn)}, 0.0)"
        if kind == "c2r":
            h = N // 2
            up = kb.let(f"{e} <= {h}u", "bool")
            v = kb.let(raw(kb, o, kb.let(f"select({N}u - {e}, {e}, {up})", "u32"), inn), _V2)
            # the upper half is the conjugate; conjugated again for the inverse
            return f"select({v}, {_conj(v)}, {up})" if inverse else \
                f"select({_conj(v)}, {v}, {up})"
        v = raw(kb, o, e, inn)
        return _conj(f"({v})") if inverse else v
    return load


def _sink(ctx, dst, dtype, lay, kind, N, n_out, inverse, final):
    """store(kb, o, e, inn, v): output e of a row (conjugated and scaled by 1/N for an
    inverse; real part for c2r; the first N/2 + 1 for r2c).  The ``final`` store (the
    primitive's output) also computes the fused elementwise consumers (``ctx.epilogue``)."""
    scale = _f(1.0 / N) if inverse else None

    def store(kb, o, e, inn, v):
        b = kb.bind(dst, dtype, "read_write")
        fl = _rowflat(o, e, inn, n_out, lay.inner, lay.outer)
        if kind == "c2r":
            val = f"{v}.x * {scale}"
        elif inverse:
            val = f"{_V2}({v}.x, -{v}.y) * {scale}"
        else:
            val = v
        if final and ctx.epilogue:
            flv, valv = kb.let(fl, "u32"), kb.let(val, W.value_type(dtype))
            st = " ".join([f"{b}[{flv}] = {valv};"] + ctx.epilogue_code(kb, valv, flv))
        else:
            st = f"{b}[{fl}] = {val};"
        if kind == "r2c":
            return f"if ({e} < {n_out}u) {{ {st} }}"
        return st
    return store


fft_p.kernel = _fft_kernel


# --------------------------------------------------------------------------- autodiff

def _hermitian_weights(shape, n, scale):
    """``scale`` times the weights of the stored half of a real signal's spectrum along the
    last axis of ``shape`` -- 1 for the zero frequency (and Nyquist when n is even), 2 for
    the others (their mirror images are implicit) -- as a complex64 array of ``shape``."""
    m = shape[-1]
    w = np.full((m,), 2.0, np.float64)
    w[0] = 1.0
    if n % 2 == 0 and m > 1:
        w[-1] = 1.0
    w = (w * scale).astype(_C64)
    return ops.broadcast_in_dim(w, tuple(shape), (len(shape) - 1,))


def _fft_transpose(ct, x, fft_type, fft_lengths):
    t = FftType(fft_type)
    lengths = tuple(fft_lengths)
    if isinstance(ct, _ad.Zero):
        return [_ad.Zero(x.aval)]
    if t in (FftType.FFT, FftType.IFFT):
        # the DFT matrix is symmetric: its transpose is itself
        return [fft_p.bind(ct, fft_type=t, fft_lengths=lengths)]
    n = lengths[-1]
    size = math.prod(lengths)
    if t == FftType.RFFT:
        # y = R F x keeps the first n/2 + 1 rows of F; x is real, so ct_x = Re(F^T R^T ct)
        # = size * irfft(conj(ct) / w) (irfft doubles every non-edge bin, w undoes it)
        w = _hermitian_weights(_ad.aval_of(ct).shape, n, 1.0)
        y = fft_p.bind(ops.div(ops.conj(ct), w), fft_type=FftType.IRFFT, fft_lengths=lengths)
        return [ops.mul(y, np.float32(size))]
    # IRFFT: y = Re(F^-1 E z) with E the Hermitian extension; its transpose is
    # conj(w * rfft(ct)) / size (conjugate: JAX's convention for complex cotangents)
    r = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=lengths)
    w = _hermitian_weights(_ad.aval_of(r).shape, n, 1.0 / size)
    return [ops.conj(ops.mul(r, w))]


_ad.deflinear(fft_p, _fft_transpose)


# --------------------------------------------------------------------------- vmap

def _fft_batch(args, dims, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    nd = _batching.aval_of(x).ndim
    if d < nd - len(fft_lengths):          # a leading (row) axis: it stays where it is
        return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d
    x = _batching.move_batch_axis(x, d, 0, _batching.aval_of(x).shape[d])
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), 0


fft_p.batch = _fft_batch
