"""conv_general_dilated as a matrix product: on GPU targets (``Target.matmul == "tiled"``) the
patches (views of the input) and ``dot_general`` chosen at lowering (``_im2col_decompose``),
the matmul kernel gathering the patches in its loads (implicit GEMM) or from a copy (explicit
im2col); elsewhere over an implicit im2col (nothing materialized), as below.

A convolution is a batched matrix product once its operands are read through
index maps:

    batch  b  = group (feature groups or batch groups)
    rows   m  = (output batch, output spatial position)
    cols   n  = output feature within the group
    depth  k  = (input feature within the group, kernel spatial position)

float32 convolutions with a multiple of 4 output features per group run a
register-blocked direct kernel shaped like shaders/matmul_vec4.wgsl: each
thread owns 16 rows x 32 features in vec4 registers and, per depth k, reads its
16 input values straight from the lhs (bounds and the lhs-dilation lattice
checked in registers) and 8 weight vec4s from a [G, K, N] copy of the kernel.
Other convolutions use the generic tiled template shaders/matmul.wgsl with
``rdA(b, m, k)`` / ``rdB(b, k, n)`` reading through the same index maps.  Fused
elementwise producers of either operand are inlined into the reads.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..core import dtypes
from ..backend import wgsl as W
from ..backend.wgsl import Index
from ..core.ir import ShapedArray, raise_to_shaped
from ..core import ops
from ..core.primitive import Primitive
from ..transforms import batching as _batching
from .elementwise import convert_expr, kind
from .dot import _acc_dtype, emit_generic_matmul, k_chunk
from ..transforms import ad as _ad
from .elementwise import add_p
from .shape import reshape_p, rev_p, slice_p, transpose_p


class ConvDimensionNumbers(NamedTuple):
    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers):
    """('NCHW', 'OIHW', 'NCHW')-style strings to (lhs_perm, rhs_perm, out_perm), as in JAX."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        if not dimension_numbers[i].count(a) == dimension_numbers[i].count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {dimension_numbers[i]}.")
        if len(dimension_numbers[i]) != len(set(dimension_numbers[i])):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, "
                            f"got {dimension_numbers[i]}.")
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"} == set(out_spec) - {"N", "C"}):
        raise TypeError("convolution dimension_numbers elements must each have the same set of "
                        f"spatial characters, got {dimension_numbers}.")

    def getperm(spec, pair):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if spec is not rhs_spec:
            spatial = sorted(spatial, key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return tuple(getperm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} "
                        f"and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, (list, tuple)):
        if len(dimension_numbers) != 3:
            raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                            f"{len(dimension_numbers)}.")
        if all(isinstance(e, (tuple, list)) for e in dimension_numbers):
            return ConvDimensionNumbers(*[tuple(int(i) for i in e) for e in dimension_numbers])
        if not all(isinstance(e, str) for e in dimension_numbers):
            raise TypeError("convolution dimension_numbers elements must be strings, got "
                            f"{tuple(map(type, dimension_numbers))}.")
        for i, e in enumerate(dimension_numbers):
            if len(e) != len(lhs_shape):
                raise TypeError(
                    f"convolution dimension_numbers[{i}] must have len equal to the ndim "
                    f"of lhs and rhs, got {len(e)} for lhs and rhs shapes {tuple(lhs_shape)} "
                    f"and {tuple(rhs_shape)}."
                )
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """'SAME' / 'SAME_LOWER' / 'VALID' to explicit (lo, hi) pairs, as in JAX."""
    p = padding.upper() if isinstance(padding, str) else padding
    if p in ("SAME", "SAME_LOWER"):
        out = [-(-int(i) // int(s)) for i, s in zip(in_shape, window_strides)]
        sizes = [
            max((o - 1) * s + w - i, 0)
            for o, s, w, i in zip(out, window_strides, window_shape, in_shape)
        ]
        if p == "SAME":
            return tuple((s // 2, s - s // 2) for s in sizes)
        return tuple((s - s // 2, s // 2) for s in sizes)
    if p == "VALID":
        return tuple((0, 0) for _ in in_shape)
    raise ValueError(f"Unknown padding type: {padding}.")


def _dilate(n, d):
    return 0 if n == 0 else 1 + d * (n - 1)


conv_general_dilated_p = Primitive("conv_general_dilated")
# the weights' producers fuse (read once, into the W[G, K, N] copy); the input's do not: the
# direct kernel reads each input value up to window x column-blocks times
conv_general_dilated_p.fuse_inputs = (1,)


# ------------------------------------------------------------- GPUs: im2col onto the matmul kernel
# On a GPU target (``Target.matmul == "tiled"``) a convolution runs as an explicit im2col and one
# ``dot_general`` per chunk, so its work lands on the matmul kernel (workgroup-memory tiles):
# the direct kernel below is shaped for CPU adapters (register blocks straight from storage)
# and ran at ~1% of an H100's peak.  The patches are views of the input -- a pad (padding and
# the lhs-dilation lattice as interior padding), then one gather whose indices (iotas: output
# position x stride + window position x rhs dilation) are computed where they are read -- so
# the matmul kernel's slab loads gather them from the input where its other operand is narrow
# (``dot._inline_operand``: a layer of up to 128 output features, and both gradients of it),
# and otherwise its operand copy (``dot._canonical``) is the one kernel that gathers them, one
# load per element; a window of one position is a strided slice.
CONV_PATCH_BYTES = 256 << 20    # the patch matrix of one chunk at most (and one binding)
CONV_MIN_TILES = 256            # split a long contraction while the product has fewer 64x64
CONV_MIN_DEPTH = 1024           # output tiles than this, into parts of at least this depth


def _shape(x):
    return list(raise_to_shaped(x).shape)


def _slice_axis(x, axis, start, limit, stride=1):
    shape = _shape(x)
    if start == 0 and limit == shape[axis] and stride == 1:
        return x
    lo, hi, st = [0] * len(shape), list(shape), [1] * len(shape)
    lo[axis], hi[axis], st[axis] = start, limit, stride
    return ops.slice(x, lo, hi, st if stride != 1 else None)


def _split_axis(x, axis, S):
    shape = _shape(x)
    return ops.reshape(x, shape[:axis] + [S, shape[axis] // S] + shape[axis + 1:])


def _patches(x, lead, O, K, strides, rhs_dilation, o0):
    """x[..., P_1 .. P_n] (``lead`` leading axes, then the padded spatial axes) as
    [..., O_1 .. O_n, K_1 .. K_n]: entry (o, k) is x[(o0_d + o_d) s_d + k_d rd_d] (``o0``:
    the first output position of this chunk along each axis)."""
    nsp = len(O)
    if all(k == 1 for k in K):            # 1x1 windows: a strided slice
        for d in range(nsp):
            a = lead + d
            start = o0[d] * strides[d]
            x = _slice_axis(x, a, start, start + (O[d] - 1) * strides[d] + 1, strides[d])
        return ops.reshape(x, _shape(x) + [1] * nsp)
    bshape = list(O) + list(K) + [1]
    comps = []
    for d in range(nsp):
        io = ops.broadcasted_iota(np.int32, bshape, d)
        ik = ops.broadcasted_iota(np.int32, bshape, nsp + d)
        c = ops.add(ops.mul(io, np.int32(strides[d])), ops.mul(ik, np.int32(rhs_dilation[d])))
        if o0[d]:
            c = ops.add(c, np.int32(o0[d] * strides[d]))
        comps.append(c)
    idx = ops.concatenate(comps, len(bshape) - 1) if nsp > 1 else comps[0]
    shape = _shape(x)
    spatial = tuple(range(lead, lead + nsp))
    gdn = ops.GatherDimensionNumbers(offset_dims=tuple(range(lead)),
                                     collapsed_slice_dims=spatial, start_index_map=spatial)
    return ops.gather(x, idx, gdn, shape[:lead] + [1] * nsp)


def _im2col_decompose(target, lhs, rhs, *, window_strides, padding, lhs_dilation,
                      rhs_dilation, dimension_numbers, feature_group_count=1,
                      batch_group_count=1, precision=None, preferred_element_type=None,
                      out_sharding=None):
    """The convolution as patches x reshaped kernel (``dot_general``), in chunks of the
    batch (then of the first spatial dimension's output rows) whose patch matrix stays within
    ``CONV_PATCH_BYTES`` and the target's largest binding; None for an empty problem."""
    dn = dimension_numbers
    fgc, bgc = feature_group_count, batch_group_count
    G = fgc * bgc
    nsp = lhs.ndim - 2
    out = _out_shape(lhs, rhs, dn, window_strides, padding, lhs_dilation, rhs_dilation, bgc)
    out_n = out[dn.out_spec[0]]
    O_sp = [out[d] for d in dn.out_spec[2:]]
    K_sp = [rhs.shape[d] for d in dn.rhs_spec[2:]]
    Cg = rhs.shape[dn.rhs_spec[1]]
    Og = rhs.shape[dn.rhs_spec[0]] // G
    positions = int(np.prod(O_sp, dtype=np.int64))
    depth = Cg * int(np.prod(K_sp, dtype=np.int64))
    if out_n * positions == 0 or depth == 0 or Og == 0:
        return None
    item = max(np.dtype(lhs.dtype).itemsize, 4)
    cap = min(CONV_PATCH_BYTES, int(target["max-storage-buffer-binding-size"]))
    per_n = item * G * depth * positions              # one batch element's patches
    nb = max(1, min(out_n, cap // per_n))
    ob = O_sp[0] if nsp else 1
    if per_n > cap and nsp:                           # one batch element per chunk, and rows
        ob = max(1, min(O_sp[0], cap // max(per_n // O_sp[0], 1)))
    # few output tiles and a long contraction (a weight gradient: the contraction runs over
    # batch x positions): the contraction cut in S parts that run as a batch axis of the
    # product, then summed -- the tiled matmul kernel gives a workgroup a whole contraction
    split = None
    tiles = G * -(-nb * positions // 64) * -(-Og // 64)
    want_s = min(-(-CONV_MIN_TILES // tiles), depth // CONV_MIN_DEPTH)
    if want_s >= 2 and ob == (O_sp[0] if nsp else 1):
        sizes = {"c": Cg, **{("k", d): K_sp[d] for d in range(nsp)}}
        best = max(((max(q for q in range(1, want_s + 1) if n % q == 0), t)
                    for t, n in sizes.items()), key=lambda e: e[0])
        if best[0] >= 2:
            split = (best[1], best[0])
    # the contraction in the input's memory order: channels innermost for a channels-last input
    channels_last = bool(nsp) and dn.lhs_spec[1] > max(dn.lhs_spec[2:])
    pet = preferred_element_type

    def conv(lhs_, rhs_):
        x = ops.transpose(lhs_, dn.lhs_spec)                 # N C spatial
        w = ops.transpose(rhs_, dn.rhs_spec)                 # O I window
        cfg = [(0, 0, 0), (0, 0, 0)] + [(lo, hi, ld - 1) for (lo, hi), ld
                                        in zip(padding, lhs_dilation)]
        if any(c != (0, 0, 0) for c in cfg):
            x = ops.pad(x, np.zeros((), lhs.dtype), cfg)
        xs = _shape(x)
        if fgc > 1:
            x, tags = ops.reshape(x, [xs[0], G, Cg] + xs[2:]), ["n", "g", "c"]
        elif bgc > 1:
            x, tags = ops.reshape(x, [G, out_n, Cg] + xs[2:]), ["g", "n", "c"]
        else:
            tags = ["n", "c"]
        ptags = tags + [("o", d) for d in range(nsp)] + [("k", d) for d in range(nsp)]
        wtags = (["g", "o", "c"] if G > 1 else ["o", "c"]) + [("k", d) for d in range(nsp)]
        if G > 1:
            w = ops.reshape(w, [G, Og, Cg] + K_sp)
        ks = [("k", d) for d in range(nsp)]
        contract = ks + ["c"] if channels_last else ["c"] + ks
        batch = ["g"] if G > 1 else []
        if split is not None:      # the contraction axis ``split[0]`` cut in ``split[1]`` parts
            t, S = split
            w = _split_axis(w, wtags.index(t), S)
            wtags[wtags.index(t):wtags.index(t) + 1] = ["s", t]
            batch = batch + ["s"]
        ptags_s = ptags if split is None else [u for v in ptags for u in
                                               (["s", v] if v == split[0] else [v])]
        dims = (([ptags_s.index(t) for t in contract], [wtags.index(t) for t in contract]),
                ([ptags_s.index(t) for t in batch], [wtags.index(t) for t in batch]))
        # the product's axes: [g, s] + the patches' free axes (n, o...) + [o]
        ytags = batch + [t for t in ptags_s if t not in contract + batch] + ["o"]
        want = ["n"] + [t for t in batch if t != "s"] + ["o"] + [("o", d) for d in range(nsp)]
        perm = [[t for t in ytags if t != "s"].index(t) for t in want]    # after the sum
        pieces = []
        for n0 in range(0, out_n, nb):
            n1 = min(n0 + nb, out_n)
            xn = _slice_axis(x, tags.index("n"), n0, n1)
            row = []
            for o0 in range(0, O_sp[0] if nsp else 1, ob):
                osp = ([min(o0 + ob, O_sp[0]) - o0] + O_sp[1:]) if nsp else []
                p = _patches(xn, len(tags), osp, K_sp, window_strides, rhs_dilation,
                             [o0] + [0] * (nsp - 1))
                if split is not None:
                    p = _split_axis(p, ptags.index(split[0]), split[1])
                y = ops.dot_general(p, w, dims, precision=precision,
                                    preferred_element_type=pet)
                if split is not None:
                    y = ops.reduce_sum(y, (ytags.index("s"),))
                y = ops.transpose(y, perm)
                row.append(ops.reshape(y, [n1 - n0, G * Og] + osp))
            pieces.append(ops.concatenate(row, 2) if len(row) > 1 else row[0])
        y = ops.concatenate(pieces, 0) if len(pieces) > 1 else pieces[0]
        return ops.transpose(y, tuple(int(i) for i in np.argsort(dn.out_spec)))
    return conv


def _conv_decompose(target, lhs, rhs, **params):
    """At lowering: on GPU targets the im2col product (``_im2col_decompose``); elsewhere the
    convolution as several summed over slices of the input channels, or None (its kernel).
    The generic kernel gives each thread one contraction of (input channels x window) terms;
    under the target's loop limit (lavapipe stops an invocation after 65535 loop iterations,
    silently) a longer one -- the weight gradient contracts over batch x output positions --
    is cut into channel slices of at most ``k_chunk(target)`` terms.  The direct kernel
    (float32, output features per group a multiple of 4) splits its contraction itself
    (``_conv_splits``); so do kernels on a driver without a limit."""
    if target.matmul == "tiled":      # GPUs: patches x kernel on the matmul kernel
        im2col = _im2col_decompose(target, lhs, rhs, **params)
        if im2col is not None:
            return im2col
    chunk = k_chunk(target)
    dn = params["dimension_numbers"]
    fgc, bgc = params.get("feature_group_count", 1), params.get("batch_group_count", 1)
    C = rhs.shape[dn.rhs_spec[1]]                       # input channels per group
    window = int(np.prod([rhs.shape[d] for d in dn.rhs_spec[2:]], dtype=np.int64))
    O = rhs.shape[dn.rhs_spec[0]]
    direct = (lhs.dtype == rhs.dtype == np.float32 and params.get("preferred_element_type")
              in (None, np.float32) and (O // max(fgc * bgc, 1)) % 4 == 0)
    if chunk is None or C * window <= chunk or fgc != 1 or bgc != 1 or C == 1 or direct:
        return None
    step = max(1, chunk // max(window, 1))

    def sliced(lhs_, rhs_):
        out = None
        for c0 in range(0, C, step):
            c1 = min(c0 + step, C)

            def cut(x, aval, axis):
                start = [0] * aval.ndim
                limit = list(aval.shape)
                start[axis], limit[axis] = c0, c1
                return slice_p.bind(
                    x, start_indices=tuple(start), limit_indices=tuple(limit), strides=None
                )

            part = conv_general_dilated_p.bind(
                cut(lhs_, lhs, dn.lhs_spec[1]), cut(rhs_, rhs, dn.rhs_spec[1]), **params
            )
            out = part if out is None else add_p.bind(out, part)
        return out
    return sliced


conv_general_dilated_p.decompose = _conv_decompose


@conv_general_dilated_p.def_abstract_eval
def _conv_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count=1, batch_group_count=1, precision=None,
                   preferred_element_type=None, out_sharding=None):
    dn = dimension_numbers
    _check_operands(lhs, rhs, preferred_element_type)
    _check_window(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation)
    _check_groups(lhs, rhs, dn, feature_group_count, batch_group_count)
    shape = _out_shape(lhs, rhs, dn, window_strides, padding, lhs_dilation, rhs_dilation,
                       batch_group_count)
    dt = (
        dtypes.check_supported(preferred_element_type)
        if preferred_element_type is not None
        else lhs.dtype
    )
    return ShapedArray(shape, dt, lhs.weak_type and rhs.weak_type)


def _check_operands(lhs, rhs, preferred_element_type):
    """Ranks and dtypes of the two operands, with JAX's errors."""
    if lhs.ndim != rhs.ndim:
        raise ValueError(
            f"conv_general_dilated lhs and rhs must have the same number of dimensions, "
            f"but got {lhs.shape} and {rhs.shape}."
        )
    if lhs.ndim < 2:
        raise ValueError(f"conv_general_dilated operands must have rank at least 2, got shapes "
                         f"{lhs.shape} and {rhs.shape}")
    if lhs.dtype != rhs.dtype and preferred_element_type is None:
        raise TypeError(f"conv_general_dilated requires arguments to have the same dtypes, got "
                        f"{np.dtype(lhs.dtype).name}, {np.dtype(rhs.dtype).name}.")
    if kind(lhs.dtype) == "b":
        raise TypeError("conv_general_dilated does not accept dtype bool")


def _check_window(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation):
    """One stride, padding and dilation per spatial dimension; strides and dilations >= 1."""
    nsp = lhs.ndim - 2
    for nm, v in (("window_strides", window_strides), ("padding", padding),
                  ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(v) != nsp:
            raise ValueError(
                f"conv_general_dilated {nm} must have one entry per spatial dimension ({nsp}), "
                f"got {nm}={tuple(v)} for lhs shape {lhs.shape} and rhs shape {rhs.shape}"
            )
    for nm, v in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                  ("rhs_dilation", rhs_dilation)):
        if any(int(s) < 1 for s in v):
            raise ValueError(f"conv_general_dilated {nm} must be positive, got {tuple(v)}")


def _check_groups(lhs, rhs, dn, fgc, bgc):
    """feature_group_count / batch_group_count: positive, at most one of them > 1, and
    dividing the feature and batch sizes as XLA requires."""
    if fgc < 1:
        raise ValueError(
            f"conv_general_dilated feature_group_count must be a positive integer, got {fgc}."
        )
    if bgc < 1:
        raise ValueError(
            f"conv_general_dilated batch_group_count must be a positive integer, got {bgc}."
        )
    if fgc > 1 and bgc > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, got "
                         f"batch_group_count={bgc} and feature_group_count={fgc}")
    lhs_c = lhs.shape[dn.lhs_spec[1]]
    if lhs_c % fgc:
        raise ValueError(
            f"conv_general_dilated feature_group_count must divide lhs feature dimension "
            f"size, but {fgc} does not divide {lhs_c}."
        )
    if lhs_c // fgc != rhs.shape[dn.rhs_spec[1]]:
        raise ValueError(
            f"conv_general_dilated lhs feature dimension size divided by feature_group_count "
            f"must equal the rhs input feature dimension size, but {lhs_c} // {fgc} != "
            f"{rhs.shape[dn.rhs_spec[1]]} (lhs shape {lhs.shape}, rhs shape {rhs.shape})."
        )
    O = rhs.shape[dn.rhs_spec[0]]
    if O % fgc:
        raise ValueError(
            f"conv_general_dilated rhs output feature dimension size must be a multiple of "
            f"feature_group_count, but {O} is not a multiple of {fgc}."
        )
    lhs_n = lhs.shape[dn.lhs_spec[0]]
    if bgc > 1 and lhs_n % bgc:
        raise ValueError(
            f"conv_general_dilated batch_group_count must divide lhs batch dimension size, "
            f"but {bgc} does not divide {lhs_n}."
        )
    if O % bgc:
        raise ValueError(
            f"conv_general_dilated rhs output feature dimension size must be a multiple of "
            f"batch_group_count, but {O} is not a multiple of {bgc}."
        )


def _out_shape(lhs, rhs, dn, window_strides, padding, lhs_dilation, rhs_dilation, bgc):
    """The output shape (in ``dn.out_spec`` order): batch / bgc, output features, and per
    spatial dimension the window positions in the dilated, padded input."""
    lhs_sp = [_dilate(lhs.shape[d], ld) for d, ld in zip(dn.lhs_spec[2:], lhs_dilation)]
    rhs_sp = [_dilate(rhs.shape[d], rd) for d, rd in zip(dn.rhs_spec[2:], rhs_dilation)]
    padded = [n + lo + hi for n, (lo, hi) in zip(lhs_sp, padding)]
    if any(p < 0 for p in padded):
        raise ValueError(
            f"Negative padding is larger than the size of the corresponding dimension: "
            f"got padding={tuple(tuple(p) for p in padding)} for lhs spatial shape "
            f"{tuple(lhs.shape[d] for d in dn.lhs_spec[2:])}"
        )
    out_sp = [
        max(0, (p - w) // s + 1) if p >= w else 0 for p, w, s in zip(padded, rhs_sp, window_strides)
    ]
    out_trans = [lhs.shape[dn.lhs_spec[0]] // bgc, rhs.shape[dn.rhs_spec[0]]] + out_sp
    shape = [0] * lhs.ndim
    for i, d in enumerate(dn.out_spec):
        shape[d] = out_trans[i]
    return shape


def _geometry(lhs, rhs, out, window_strides, padding, lhs_dilation, rhs_dilation, dn, fgc, bgc):
    nsp = lhs.ndim - 2
    G = fgc * bgc
    out_n = out.shape[dn.out_spec[0]]
    out_sp = [out.shape[d] for d in dn.out_spec[2:]]
    k_sp = [rhs.shape[d] for d in dn.rhs_spec[2:]]
    in_sp = [lhs.shape[d] for d in dn.lhs_spec[2:]]
    Cg = rhs.shape[dn.rhs_spec[1]]
    Og = rhs.shape[dn.rhs_spec[0]] // G
    return dict(G=G, out_n=out_n, out_sp=out_sp, k_sp=k_sp, in_sp=in_sp, Cg=Cg, Og=Og, nsp=nsp)


def _lhs_lines(ctx, kb, lhs, dn, g, params, bv, mv, kv):
    """Lines and value (acc dtype) of the lhs element that patch entry (group bv, row mv,
    depth kv) reads: zero outside the input or off the lhs-dilation lattice."""
    window_strides, padding, lhs_dilation, rhs_dilation, fgc, bgc = params
    out_n, out_sp, k_sp, in_sp, Cg = g["out_n"], g["out_sp"], g["k_sp"], g["in_sp"], g["Cg"]
    saved, kb.lines = kb.lines, []
    md = Index(kb, [out_n] + out_sp, flat=mv).dims()
    kd = Index(kb, [Cg] + k_sp, flat=kv).dims()
    n_idx, osp = md[0], md[1:]
    c_idx, wsp = kd[0], kd[1:]
    dims = [None] * lhs.ndim
    dims[dn.lhs_spec[0]] = kb.let(f"{bv} * {out_n}u + {n_idx}", "u32") if bgc > 1 else n_idx
    dims[dn.lhs_spec[1]] = kb.let(f"{bv} * {Cg}u + {c_idx}", "u32") if fgc > 1 else c_idx
    conds = []
    for s in range(len(in_sp)):
        st, (lo, _), ld, rd = window_strides[s], padding[s], lhs_dilation[s], rhs_dilation[s]
        pos = kb.let(f"i32({osp[s]}) * {st} - ({lo}) + i32({wsp[s]}) * {rd}", "i32")
        if ld > 1:
            conds.append(f"({pos} % {ld}) == 0")
            q = kb.let(f"{pos} / {ld}", "i32")
        else:
            q = pos
        conds.append(f"{q} >= 0 && {q} < {in_sp[s]}")
        dims[dn.lhs_spec[2 + s]] = f"u32(clamp({q}, 0, {max(in_sp[s] - 1, 0)}))"
    v = ctx.reader(kb, 0, ctx.fuser(kb))(Index(kb, lhs.shape, dims=dims))
    acc = _acc_dtype(lhs.dtype)
    v = convert_expr(v, lhs.dtype, acc)
    inside = " && ".join(f"({c})" for c in conds) if conds else "true"
    lines, kb.lines = kb.lines, saved
    return lines, f"select({W.zero(acc)}, {v}, {inside})"


def _rhs_lines(ctx, kb, rhs, dn, g, bv, kv, nv):
    """Lines and value (acc dtype) of kernel[o = bv * Og + nv, i = c, spatial] for depth kv."""
    k_sp, Cg, Og, G = g["k_sp"], g["Cg"], g["Og"], g["G"]
    saved, kb.lines = kb.lines, []
    kd = Index(kb, [Cg] + k_sp, flat=kv).dims()
    dims = [None] * rhs.ndim
    dims[dn.rhs_spec[0]] = kb.let(f"{bv} * {Og}u + {nv}", "u32") if G > 1 else nv
    dims[dn.rhs_spec[1]] = kd[0]
    for s in range(len(k_sp)):
        dims[dn.rhs_spec[2 + s]] = kd[1 + s]
    v = ctx.reader(kb, 1, ctx.fuser(kb))(Index(kb, rhs.shape, dims=dims))
    lines, kb.lines = kb.lines, saved
    return lines, convert_expr(v, rhs.dtype, _acc_dtype(rhs.dtype))


def _out_lines(kb, out, dn, g, bv, mv, nv):
    """Lines and flat output index of (group bv, row mv, column nv)."""
    out_n, out_sp, Og, G = g["out_n"], g["out_sp"], g["Og"], g["G"]
    saved, kb.lines = kb.lines, []
    md = Index(kb, [out_n] + out_sp, flat=mv).dims()
    dims = [None] * out.ndim
    dims[dn.out_spec[0]] = md[0]
    dims[dn.out_spec[1]] = kb.let(f"{bv} * {Og}u + {nv}", "u32") if G > 1 else nv
    for s in range(len(out_sp)):
        dims[dn.out_spec[2 + s]] = md[1 + s]
    flat = Index(kb, out.shape, dims=dims).flat()
    lines, kb.lines = kb.lines, saved
    return lines, flat


@conv_general_dilated_p.def_kernel
def _conv_kernel(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                 dimension_numbers, feature_group_count=1, batch_group_count=1, precision=None,
                 preferred_element_type=None, out_sharding=None):
    dn = dimension_numbers
    out = ctx.eqn.outvars[0].aval
    g = _geometry(lhs, rhs, out, window_strides, padding, lhs_dilation, rhs_dilation, dn,
                  feature_group_count, batch_group_count)
    params = (
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        feature_group_count,
        batch_group_count,
    )
    G, out_n, out_sp, k_sp, Og = (g[k] for k in ("G", "out_n", "out_sp", "k_sp", "Og"))
    M = out_n * int(np.prod(out_sp, dtype=np.int64))
    N = Og
    K = g["Cg"] * int(np.prod(k_sp, dtype=np.int64))
    acc = _acc_dtype(lhs.dtype)
    f32 = np.dtype(np.float32)
    if (lhs.dtype == rhs.dtype == out.dtype == f32 and N % 4 == 0 and K > 0 and M * N * K >= 32768
            and hasattr(ctx.new_kb(), "vec")):
        return _conv_direct(ctx, lhs, rhs, out, dn, g, params, M, N, K)
    limit = ctx.target.loop_limit
    if limit is not None and K > limit:
        raise NotImplementedError(
            f"wjax: this convolution contracts {K} terms per output in one thread, more than the "
            f"{limit} loop iterations {ctx.target.name} runs per invocation (a window "
            f"of {int(np.prod(k_sp))} positions); use a smaller window or another adapter")
    kb = ctx.new_kb()
    lines, va = _lhs_lines(ctx, kb, lhs, dn, g, params, "b", "m", "k")
    read_a = "  " + "\n  ".join(lines + [f"return {va};"])
    lines, vb = _rhs_lines(ctx, kb, rhs, dn, g, "b", "k", "n")
    read_b = "  " + "\n  ".join(lines + [f"return {vb};"])
    lines, flat = _out_lines(kb, out, dn, g, "b", "m", "n")
    name = kb.bind(ctx.out_key(0), out.dtype, "read_write")
    res = W.wrap_narrow(convert_expr("v", acc, out.dtype), out.dtype)
    write = "\n".join(
        "        " + ln for ln in lines + [f"{name}[{flat}] = {W.store_expr(res, out.dtype)};"]
    )

    emit_generic_matmul(ctx, kb, read_a, read_b, write, acc, G, M, N, K)


class ConvConfig(NamedTuple):
    """A direct-kernel variant: RM rows x V vec4 columns per thread, the contraction split
    S ways (partial outputs summed by a second kernel)."""
    rm: int
    v: int
    s: int

    @property
    def name(self) -> str:
        return f"rm{self.rm}v{self.v}s{self.s}"


CONV_TUNE_FLOPS = 4 << 30     # tune on the problem itself up to this many FLOPs


def _conv_default(G, M, N4, K, chunk) -> ConvConfig:
    """16 x 8 blocks, halved while there are fewer than 512 threads; a long contraction with
    few output blocks is split (the weight gradient: K = batch x positions)."""
    RM, V, S = 16, 8, 1
    while RM > 2 and G * (-(-M // RM)) * (-(-N4 // V)) < 512 and K <= 4096:
        RM, V = RM // 2, max(1, V // 2)
    tiles = G * (-(-M // RM)) * (-(-N4 // V))
    while tiles * S < 512 and K // (2 * S) >= 256:
        S *= 2
    return ConvConfig(RM, V, _conv_splits(K, S, chunk))


def _conv_splits(K, s, chunk) -> int:
    """The split count used: at least ``s``, enough for chunks of ``chunk`` terms
    (``k_chunk``; None: no limit), at most K."""
    need = -(-K // chunk) if chunk else 1
    return max(1, min(K, max(s, need)))


def _conv_candidates(G, M, N4, K, chunk) -> list:
    out = []
    if N4 >= 8:
        blocks = ((8, 4), (16, 4), (16, 8), (32, 8))
    else:
        blocks = tuple((rm, N4) for rm in (8, 16, 32))
    for rm, v in blocks:
        if rm > 2 * M:
            continue
        tiles = G * (-(-M // rm)) * (-(-N4 // v))
        for sp in (1, 4, 16, 64):
            if sp == 1 or (tiles * sp <= 4096 and K // sp >= 128):
                out.append(ConvConfig(rm, v, _conv_splits(K, sp, chunk)))
    return list({c.name: c for c in out}.values())


def _conv_direct(ctx, lhs, rhs, out, dn, g, params, M, N, K):
    """float32, N % 4 == 0: a direct register-blocked kernel shaped like the vec4 matmul
    (implicit GEMM).

    The kernel is first laid out as W[G, K, N] (a small copy); each thread then owns RM output
    rows (batch x spatial positions) times 4V output channels in vec4 registers.  The depth
    loop runs over window positions, then input channels: per window position each row's
    input position and bounds (padding, the lhs-dilation lattice) are computed once, so the
    inner loop over channels reads the RM input values and V weight vec4s with no index
    math -- as cheap as the matmul's.  A long contraction is split S ways (partial outputs
    in a scratch buffer, summed by a second kernel): the weight gradient contracts over
    batch x output positions.  The block and split are autotuned per problem."""
    G, N4 = g["G"], N // 4
    weights = _conv_weights(ctx, rhs, dn, g, K, N)
    chunk = k_chunk(ctx.target)
    default = _conv_default(G, M, N4, K, chunk)
    cfg = default
    flops = 2 * G * M * N * K
    nb = [4 * lhs.size, 4 * G * K * N, 4 * int(np.prod(out.shape))]
    room = int(ctx.target["max-storage-buffer-binding-size"])
    if flops <= CONV_TUNE_FLOPS and max(nb) <= room:
        cands = {c.name: c for c in _conv_candidates(G, M, N4, K, chunk) + [default]
                 if nb[2] * c.s <= room}
        key = ("conv|" + "x".join(map(str, lhs.shape)) + "*" + "x".join(map(str, rhs.shape))
               + f"|{params}|{tuple(map(tuple, dn))}")
        size = int(np.prod(out.shape))
        out_key = ctx.out_key(0)
        part = ("conv-partials",)

        def build(name):
            c = cands[name]
            kb = ctx.new_kb()
            src, grid = _conv_src(ctx, kb, lhs, out, dn, g, params, M, N, K, c, weights,
                                  out_key if c.s == 1 else part)
            order = {ctx.in_key(0): 0, weights: 1, out_key: 2, part: 3}
            d = [(src, [order[k] for k in kb.dispatch_bindings()[0]], grid)]
            if c.s > 1:
                kb2 = ctx.new_kb()
                src2, grid2 = _conv_sum_src(kb2, part, out_key, c.s, size)
                d.append((src2, [order[k] for k in kb2.dispatch_bindings()[0]], grid2))
            return d
        nb.append(4 * size * max(c.s for c in cands.values()))
        name = ctx.target.pick_variant(key, list(cands), build, nb, default.name, flops)
        cfg = cands.get(name, default)
    size = int(np.prod(out.shape))
    if cfg.s == 1:
        kb = ctx.new_kb()
        src, grid = _conv_src(ctx, kb, lhs, out, dn, g, params, M, N, K, cfg, weights,
                              ctx.out_key(0))
        ctx.dispatch(kb, src, grid)
        return
    part = ctx.scratch(ShapedArray((cfg.s * size,), np.dtype(np.float32)))
    kb = ctx.new_kb()
    src, grid = _conv_src(ctx, kb, lhs, out, dn, g, params, M, N, K, cfg, weights, part)
    ctx.dispatch(kb, src, grid)
    kb = ctx.new_kb()
    src, grid = _conv_sum_src(kb, part, ctx.out_key(0), cfg.s, size)
    ctx.dispatch(kb, src, grid)


def _conv_sum_src(kb, part, out_key, S, size):
    f32 = np.dtype(np.float32)
    p = kb.bind(part, f32, "read")
    o = kb.bind(out_key, f32, "read_write")
    kb.emit(f"var acc = 0.0;\n  for (var s = 0u; s < {S}u; s = s + 1u) {{ acc = acc + {p}[s "
            f"* {size}u + i]; }}\n  {o}[i] = acc;")
    return kb.elementwise_kernel(size)


def _conv_src(ctx, kb, lhs, out, dn, g, params, M, N, K, cfg, weights, out_key):
    """The direct kernel of variant ``cfg``, writing the output (or with ``cfg.s`` > 1 the
    partial outputs, ``s`` x the output's size) to ``out_key``."""
    G, N4 = g["G"], N // 4
    nd = out.ndim
    direct = G == 1 and tuple(dn.out_spec) == (0, nd - 1) + tuple(range(1, nd - 1))
    f32 = np.dtype(np.float32)
    kb.vec = 4
    w_name = kb.bind(weights, f32, "read")
    o_name = kb.bind(out_key, f32, "read_write") if direct else None
    kb.vec = 1
    if not direct:
        o_name = kb.bind(out_key, f32, "read_write")
    WG = 16
    RM, V, S = cfg.rm, cfg.v, cfg.s
    window = int(np.prod(g["k_sp"], dtype=np.int64))
    Cg = g["Cg"]
    tiles_n, tiles_m = -(-N4 // V), -(-M // RM)
    threads = S * tiles_n * tiles_m * G
    grid = W.grid_for(-(-threads // WG), kb.max_groups)
    body = _conv_row_origins(kb, g, params, M, RM)
    body += [f"var c{i}_{j} = vec4<f32>(0.0);" for i in range(RM) for j in range(V)]
    body += [f"let bc{j} = min(n0 + {j}u, {N4 - 1}u);" for j in range(V)]
    outer, inner = _conv_depth_step(ctx, kb, lhs, dn, g, params, RM, V, N4, w_name)
    # the split's share of the depth: whole window positions when the channels are few,
    # else channel ranges within each window position
    if S == 1:
        loops = (f"  for (var kw = 0u; kw < {window}u; kw = kw + 1u) {{\n    "
                 + "\n    ".join(outer)
                 + f"\n    for (var kc = 0u; kc < {Cg}u; kc = kc + 1u) {{\n      "
                 + "\n      ".join(inner) + "\n    }\n  }")
    else:
        loops = _conv_split_loops(K, S, Cg, outer, inner)
    store = _conv_stores(kb, out, dn, g, M, N4, RM, V, o_name, direct,
                         base=f"sp * {int(np.prod(out.shape))}u" if S > 1 else None)
    src = (f"{kb.header()}\n@compute @workgroup_size({WG})\n"
           f"fn main(@builtin(workgroup_id) wid: vec3<u32>, "
           f"@builtin(local_invocation_index) lid: u32) {{\n"
           f"  let t = (wid.x + wid.y * {grid[0]}u) * {WG}u + lid;\n"
           f"  if (t >= {threads}u) {{ return; }}\n"
           f"  let sp = t / {tiles_n * tiles_m * G}u;\n"
           f"  let gb = (t / {tiles_n * tiles_m}u) % {G}u;\n"
           f"  let r = t % {tiles_n * tiles_m}u;\n"
           f"  let m0 = (r / {tiles_n}u) * {RM}u;\n"
           f"  let n0 = (r % {tiles_n}u) * {V}u;\n"
           f"  let bbase = gb * {K * N4}u;\n  "
           + "\n  ".join(body) + "\n" + loops + "\n  " + "\n  ".join(store) + "\n}\n")
    return src, grid


def _conv_split_loops(K, S, Cg, outer, inner) -> str:
    """The depth loops of split ``sp``: depth k = window position * Cg + channel, the split
    covering k in [k_lo, k_hi): its window positions, each with its range of channels."""
    per = -(-K // S)
    return (f"  let k_lo = sp * {per}u;\n  let k_hi = min(k_lo + {per}u, {K}u);\n"
            f"  for (var kw = k_lo / {Cg}u; kw * {Cg}u < k_hi; kw = kw + 1u) {{\n    "
            + "\n    ".join(outer)
            + f"\n    let kc0 = select(0u, k_lo - kw * {Cg}u, kw * {Cg}u < k_lo);\n"
            f"    let kc1 = min({Cg}u, k_hi - kw * {Cg}u);\n"
            "    for (var kc = kc0; kc < kc1; kc = kc + 1u) {\n      "
            + "\n      ".join(inner) + "\n    }\n  }")


def _captured(kb, emit):
    """Runs ``emit()`` and returns (its result, the lines it emitted), leaving ``kb`` as was."""
    saved, kb.lines = kb.lines, []
    try:
        return emit(), kb.lines
    finally:
        kb.lines = saved


def _conv_weights(ctx, rhs, dn, g, K, N):
    """The kernel laid out as W[G, K, N], depth k = window position * Cg + input channel, in a
    scratch buffer (one small dispatch)."""
    f32 = np.dtype(np.float32)
    weights = ctx.scratch(ShapedArray((g["G"] * K * N,), f32))
    kb = ctx.new_kb()
    Cg = g["Cg"]
    kb.emit(f"let wg = i / {K * N}u;")
    kb.emit(f"let wk = (i / {N}u) % {K}u;")
    kb.emit(f"let wn = i % {N}u;")
    kb.emit(f"let wc = (wk % {Cg}u) * {K // max(Cg, 1)}u + wk / {Cg}u;")   # channel-major k
    lines, v = _rhs_lines(ctx, kb, rhs, dn, g, "wg", "wc", "wn")
    for ln in lines:
        kb.emit(ln)
    name = kb.bind(weights, f32, "read_write")
    kb.emit(f"{name}[i] = {v};")
    src, grid = kb.elementwise_kernel(g["G"] * K * N)
    ctx.dispatch(kb, src, grid)
    return weights


def _conv_row_origins(kb, g, params, M, RM):
    """Per row of the thread's tile: its batch index and the spatial origin of its window."""
    window_strides, padding, _, _, _, bgc = params
    out_n, out_sp = g["out_n"], g["out_sp"]
    body = []
    for i in range(RM):
        md, lines = _captured(kb, lambda: Index(
            kb, [out_n] + out_sp, flat=f"min(m0 + {i}u, {M - 1}u)").dims())
        body += lines
        nb = f"gb * {out_n}u + {md[0]}" if bgc > 1 else md[0]
        body.append(f"let rn{i} = {nb};")
        for sd in range(len(g["in_sp"])):
            body.append(f"let ro{i}_{sd} = i32({md[1 + sd]}) * {window_strides[sd]} "
                        f"- ({padding[sd][0]});")
    return body


def _conv_depth_step(ctx, kb, lhs, dn, g, params, RM, V, N4, w_name):
    """The loop bodies over depth: ``outer`` per window position ``kw`` (each row's input
    position, clamped, and whether it lies inside the input and on the lhs-dilation lattice),
    ``inner`` per input channel ``kc`` (V weight vec4s, RM input values, the products)."""
    _, _, lhs_dilation, rhs_dilation, fgc, _ = params
    Cg, k_sp, in_sp = g["Cg"], g["k_sp"], g["in_sp"]
    kd, outer = _captured(kb, lambda: Index(kb, k_sp, flat="kw").dims() if k_sp else [])
    for sd in range(len(in_sp)):
        outer.append(f"let kw{sd} = i32({kd[sd]}) * {rhs_dilation[sd]};")
    inner = [f"let kk = kw * {Cg}u + kc;"]
    inner += [f"let bv{j} = {w_name}[bbase + kk * {N4}u + bc{j}];" for j in range(V)]
    inner.append(f"let kch = {f'gb * {Cg}u + kc' if fgc > 1 else 'kc'};")
    fuser = ctx.fuser(kb)
    for i in range(RM):
        conds, dims = [], [None] * lhs.ndim
        dims[dn.lhs_spec[0]] = f"rn{i}"
        dims[dn.lhs_spec[1]] = "kch"
        for sd in range(len(in_sp)):
            pos = f"(ro{i}_{sd} + kw{sd})"
            ld = lhs_dilation[sd]
            if ld > 1:
                outer.append(f"let p{i}_{sd} = {pos};")
                conds.append(f"(p{i}_{sd} % {ld}) == 0")
                outer.append(f"let q{i}_{sd} = p{i}_{sd} / {ld};")
            else:
                outer.append(f"let q{i}_{sd} = {pos};")
            conds.append(f"q{i}_{sd} >= 0 && q{i}_{sd} < {in_sp[sd]}")
            outer.append(f"let u{i}_{sd} = u32(clamp(q{i}_{sd}, 0, {max(in_sp[sd] - 1, 0)}));")
            dims[dn.lhs_spec[2 + sd]] = f"u{i}_{sd}"
        outer.append(f"let in{i} = {' && '.join(f'({c})' for c in conds) if conds else 'true'};")
        val, lines = _captured(kb, lambda: ctx.reader(kb, 0, fuser)(
            Index(kb, lhs.shape, dims=dims)))
        inner += lines
        inner.append(f"let av{i} = vec4<f32>(select(0.0, f32({val}), in{i}));")
        inner += [f"c{i}_{j} = fma(av{i}, bv{j}, c{i}_{j});" for j in range(V)]
    return outer, inner


def _conv_stores(kb, out, dn, g, M, N4, RM, V, o_name, direct, base=None):
    """The tile's stores: whole vec4s when the output is row-major NHWC-like, else element by
    element through the output's layout; ``base`` (elements): where this split's partial
    output starts."""
    guard = "if (m0 + {i}u < {M}u && n0 + {j}u < {N4}u) {{ {inner} }}"
    if direct:
        off = f"{base} / 4u + " if base else ""
        return [guard.format(i=i, j=j, M=M, N4=N4, inner=(
            f"{o_name}[{off}(m0 + {i}u) * {N4}u + n0 + {j}u] = c{i}_{j};"))
            for i in range(RM) for j in range(V)]
    off = f"{base} + " if base else ""
    store = []
    for i in range(RM):
        for j in range(V):
            for e in range(4):
                (ls, flat), _ = _captured(kb, lambda: _out_lines(
                    kb, out, dn, g, "gb", f"(m0 + {i}u)", f"((n0 + {j}u) * 4u + {e}u)"))
                inner = " ".join(ls) + f" {o_name}[{off}{flat}] = c{i}_{j}[{e}];"
                store.append(guard.format(i=i, j=j, M=M, N4=N4, inner=inner))
    return store


def _ref_dilated(a, dilation, accdt):
    """``a`` (batch, features, spatial...) with ``dilation - 1`` zeros between neighbours along
    each spatial axis."""
    d = np.zeros(a.shape[:2] + tuple(_dilate(n, k) for n, k in zip(a.shape[2:], dilation)), accdt)
    d[(slice(None), slice(None)) + tuple(slice(None, None, k) for k in dilation)] = a
    return d


def _ref_padded(a, padding):
    """``a`` padded with zeros along each spatial axis; negative padding crops."""
    for s, (lo, hi) in enumerate(padding):
        ax = 2 + s
        if lo < 0:
            a = np.take(a, np.arange(-lo, a.shape[ax]), axis=ax)
            lo = 0
        if hi < 0:
            a = np.take(a, np.arange(0, a.shape[ax] + hi), axis=ax)
            hi = 0
        pw = [(0, 0)] * a.ndim
        pw[ax] = (lo, hi)
        a = np.pad(a, pw)
    return a


def _conv_ref(
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    dn = dimension_numbers
    out_aval = _conv_abstract(
        ShapedArray(lhs.shape, lhs.dtype),
        ShapedArray(rhs.shape, rhs.dtype),
        window_strides=window_strides,
        padding=padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        dimension_numbers=dn,
        feature_group_count=feature_group_count,
        batch_group_count=batch_group_count,
        preferred_element_type=preferred_element_type,
    )
    accdt = np.float64 if dtypes.is_float(lhs.dtype) else np.int64
    x = np.transpose(lhs, dn.lhs_spec).astype(accdt)     # N C spatial
    w = np.transpose(rhs, dn.rhs_spec).astype(accdt)     # O I spatial
    nsp = x.ndim - 2
    dil = _ref_padded(_ref_dilated(x, lhs_dilation, accdt), padding)
    wd = _ref_dilated(w, rhs_dilation, accdt)
    fgc, bgc = feature_group_count, batch_group_count
    G = fgc * bgc
    O = w.shape[0]
    Og, Cg = O // G, w.shape[1]
    out_n = x.shape[0] // bgc
    out_sp = [max(0, (dil.shape[2 + s] - wd.shape[2 + s]) // window_strides[s] + 1)
              if dil.shape[2 + s] >= wd.shape[2 + s] else 0 for s in range(nsp)]
    res = np.zeros([out_n, O] + out_sp, accdt)
    for o in range(O):
        grp = o // Og
        for pos in np.ndindex(*out_sp):
            sl = tuple(
                slice(p * st, p * st + k) for p, st, k in zip(pos, window_strides, wd.shape[2:])
            )
            if bgc > 1:
                patch = dil[grp * out_n:(grp + 1) * out_n, :][(slice(None), slice(None)) + sl]
            else:
                patch = dil[:, grp * Cg:(grp + 1) * Cg][(slice(None), slice(None)) + sl]
            res[(slice(None), o) + pos] = np.sum(
                patch * wd[o][None], axis=tuple(range(1, patch.ndim))
            )
    inv = np.argsort(dn.out_spec)
    return np.transpose(res, inv).astype(out_aval.dtype)


conv_general_dilated_p.reference = _conv_ref


def _reshape_axis_into(src, dst, x):
    """Merges axis ``src`` into axis ``dst`` (numbered after removing ``src``), ``src`` major."""
    shape = _batching.aval_of(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [shape[i] for i in range(len(shape)) if i != src]
    new[dst] *= shape[src]
    if perm != list(range(len(shape))):
        x = transpose_p.bind(x, permutation=tuple(perm))
    return reshape_p.bind(x, new_sizes=tuple(new), dimensions=None, sharding=None)


def _reshape_axis_out_of(src, size1, x):
    shape = list(_batching.aval_of(x).shape)
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape_p.bind(x, new_sizes=tuple(shape), dimensions=None, sharding=None)


def _conv_batch(
    args, dims, *, dimension_numbers, feature_group_count=1, batch_group_count=1, **params
):
    """vmap (JAX's rule): fold the batch axis into the lhs batch dimension, the rhs output
    features, or (both batched) feature groups; then split it back out of the result."""
    (lhs, rhs), (ld, rd) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fgc, bgc = feature_group_count, batch_group_count
    n = _batching.axis_size(args, dims)

    def conv(l, r, fgc, bgc):
        return conv_general_dilated_p.bind(l, r, dimension_numbers=dimension_numbers,
                                           feature_group_count=fgc, batch_group_count=bgc, **params)

    if ld is not None and rd is not None:
        if bgc > 1:
            new_lhs, bgc = _reshape_axis_into(ld, lhs_spec[0], lhs), bgc * n
        else:
            new_lhs, fgc = _reshape_axis_into(ld, lhs_spec[1], lhs), fgc * n
        out = conv(new_lhs, _reshape_axis_into(rd, rhs_spec[0], rhs), fgc, bgc)
        return _reshape_axis_out_of(out_spec[1], n, out), out_spec[1]
    if ld is not None:
        if bgc == 1:
            out = conv(_reshape_axis_into(ld, lhs_spec[0], lhs), rhs, fgc, bgc)
            return _reshape_axis_out_of(out_spec[0], n, out), out_spec[0]
        new_lhs = _reshape_axis_out_of(lhs_spec[0] + int(ld <= lhs_spec[0]), bgc, lhs)
        new_lhs = _reshape_axis_into(ld + int(lhs_spec[0] < ld), lhs_spec[0] + 1, new_lhs)
        new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = conv(new_lhs, rhs, fgc, bgc)
        return _reshape_axis_out_of(out_spec[0], n, out), out_spec[0]
    if fgc == 1 and bgc == 1:
        out = conv(lhs, _reshape_axis_into(rd, rhs_spec[0], rhs), fgc, bgc)
        return _reshape_axis_out_of(out_spec[1], n, out), out_spec[1]
    groups = fgc if fgc > 1 else bgc
    new_rhs = _reshape_axis_out_of(rhs_spec[0] + int(rd <= rhs_spec[0]), groups, rhs)
    new_rhs = _reshape_axis_into(rd + int(rhs_spec[0] < rd), rhs_spec[0] + 1, new_rhs)
    new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = conv(lhs, new_rhs, fgc, bgc)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, n, out)
    return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


conv_general_dilated_p.batch = _conv_batch


# --------------------------------------------------------------------- autodiff (JAX's transposes)


def _conv_spec_t(spec):
    return (spec[1], spec[0]) + tuple(spec[2:])


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    ld = [_dilate(n, d) for n, d in zip(in_shape, lhs_dil)]
    rd = [_dilate(n, d) for n, d in zip(window, rhs_dil)]
    od = [_dilate(n, d) for n, d in zip(out_shape, strides)]
    before = [r - lo - 1 for r, (lo, _) in zip(rd, padding)]
    after = [l + r - 1 - o - b for l, r, o, b in zip(ld, rd, od, before)]
    return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
    if not in_shape:
        return ()
    ld = [_dilate(n, d) for n, d in zip(in_shape, lhs_dil)]
    rd = [_dilate(n, d) for n, d in zip(window, rhs_dil)]
    od = [_dilate(n, d) for n, d in zip(out_shape, strides)]
    lo = [p for p, _ in padding]
    hi = [(o - l) + (r - p - 1) for o, l, r, p in zip(od, ld, rd, lo)]
    return tuple(zip(lo, hi))


def _conv_transpose_lhs(
    g,
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    lhs_shape = _ad.aval_of(lhs).shape
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    t_rhs_spec = _conv_spec_t(rhs_spec)
    fgc = feature_group_count
    if feature_group_count > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], feature_group_count, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    elif batch_group_count > 1:
        rhs = _reshape_axis_out_of(rhs_spec[0], batch_group_count, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        fgc = batch_group_count
    rshape = _ad.aval_of(rhs).shape
    gshape = _ad.aval_of(g).shape
    trans = ConvDimensionNumbers(tuple(out_spec), t_rhs_spec, tuple(lhs_spec))
    pad = _vjp_lhs_padding([lhs_shape[d] for d in lhs_spec[2:]], [rshape[d] for d in rhs_spec[2:]],
                           window_strides, [gshape[d] for d in out_spec[2:]], padding, lhs_dilation,
                           rhs_dilation)
    revd = rev_p.bind(rhs, dimensions=tuple(rhs_spec[2:])) if len(rhs_spec) > 2 else rhs
    out = conv_general_dilated_p.bind(
        g,
        revd,
        window_strides=tuple(lhs_dilation),
        padding=pad,
        lhs_dilation=tuple(window_strides),
        rhs_dilation=tuple(rhs_dilation),
        dimension_numbers=trans,
        feature_group_count=fgc,
        batch_group_count=1,
        precision=None,
        preferred_element_type=None,
        out_sharding=None,
    )
    if batch_group_count > 1:
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_transpose_rhs(
    g,
    lhs,
    rhs,
    *,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    dimension_numbers,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
    out_sharding=None,
):
    if _ad.aval_of(g).size == 0:
        return _ad.Zero(rhs.aval)
    lhs_t, rhs_t, out_t = (_conv_spec_t(s) for s in dimension_numbers)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    fgc, bgc = feature_group_count, batch_group_count
    if bgc > 1:
        fgc, bgc = bgc, 1
    elif fgc > 1:
        fgc, bgc = 1, fgc
    trans = ConvDimensionNumbers(lhs_t, out_t, rhs_t)
    ls, rs, gs = _ad.aval_of(lhs).shape, _ad.aval_of(rhs).shape, _ad.aval_of(g).shape
    pad = _vjp_rhs_padding(
        [ls[d] for d in lhs_spec[2:]],
        [rs[d] for d in rhs_spec[2:]],
        window_strides,
        [gs[d] for d in out_spec[2:]],
        padding,
        lhs_dilation,
        rhs_dilation,
    )
    return conv_general_dilated_p.bind(
        lhs, g, window_strides=tuple(rhs_dilation), padding=pad, lhs_dilation=tuple(lhs_dilation),
        rhs_dilation=tuple(window_strides), dimension_numbers=trans, feature_group_count=fgc,
        batch_group_count=bgc, precision=None, preferred_element_type=None, out_sharding=None)


_ad.defbilinear(conv_general_dilated_p, _conv_transpose_lhs, _conv_transpose_rhs)
