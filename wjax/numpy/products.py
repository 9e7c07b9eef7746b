"""Products: ``dot``, ``matmul``, ``vdot``, ``inner``, ``outer``, ``tensordot``, ``kron``, ``cross``
and ``einsum``.
"""
from __future__ import annotations

import builtins
import string

import numpy as np

from .. import lax
from .._src.api.sharding import apply_out_sharding, out_sharding_scope
from .._src.core import dtypes
from ._util import _check_arg, _f32, _to_operand, result_type
from .creation import _arraylike, asarray, astype, broadcast_to, zeros_like
from .ufuncs import conjugate, multiply, not_equal, subtract
from .shapes import (_axis, diagonal, expand_dims, moveaxis, ravel, reshape, stack, swapaxes,
                     transpose)
from . import reductions


def _preferred(preferred_element_type, dt):
    """The result type a jnp contraction names: the one asked for, else the operands'."""
    return np.dtype(dt) if preferred_element_type is None else preferred_element_type


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """``matmul`` as ``jnp.matmul``; ``out_sharding`` lays the result out by a sharding."""
    with out_sharding_scope(out_sharding):
        out = _matmul(a, b, preferred_element_type=preferred_element_type)
    return apply_out_sharding(out, out_sharding)


def _matmul(a, b, *, precision=None, preferred_element_type=None):
    for x in (a, b):
        _check_arg("matmul", x)
    a, b = _arraylike("matmul", a), _arraylike("matmul", b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: Input operand does not have enough dimensions (shapes {a.shape} "
                         f"and {b.shape})")
    dt, weak = dtypes.result_type(a, b, return_weak_type_flag=True)
    a, b = _to_operand(a, dt, False), _to_operand(b, dt, False)
    # as JAX's jnp, the contraction names its result type (jaxprs show it)
    preferred_element_type = _preferred(preferred_element_type, dt)
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec or b_vec:      # a vector operand contracts directly, as in JAX's jaxpr
        ka, kb = a.ndim - 1, (0 if b_vec else b.ndim - 2)
        if a.shape[ka] != b.shape[kb]:
            raise TypeError(f"dot_general requires contracting dimensions to have the same "
                            f"shape, got ({a.shape[ka]},) and ({b.shape[kb]},) (matmul of "
                            f"shapes {a.shape} and {b.shape})")
        return lax.dot_general(a, b, (((ka,), (kb,)), ((), ())),
                               preferred_element_type=preferred_element_type)
    if a_vec:
        a = reshape(a, (1, a.shape[0]))
    if b_vec:
        b = reshape(b, (b.shape[0], 1))
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, got "
                        f"({a.shape[-1]},) and ({b.shape[-2]},) (matmul of shapes "
                        f"{a.shape} and {b.shape})")
    out = _batched_matmul(a, b, preferred_element_type)
    if a_vec:
        out = lax.squeeze(out, (out.ndim - 2,))
    if b_vec:
        out = lax.squeeze(out, (out.ndim - 1,))
    return out


def _batched_matmul(a, b, preferred_element_type):
    """``a @ b`` of matrices with leading batch axes, as JAX's jaxpr has it: an axis both
    operands have at one length (not 1) is a batch axis of the ``dot_general``; one that
    only one operand has, or that the other has at length 1 (squeezed away), is a free axis
    of its operand -- a weight shared by a batch is never broadcast, and ``x @ w`` of an
    (b, s, d) ``x`` is one product of b * s rows; one both have at length 1 is squeezed from
    both and put back at the end.  The result is transposed into the broadcast order of the
    batch axes where the product's order differs."""
    nb = max(a.ndim, b.ndim) - 2
    pa, pb = nb - (a.ndim - 2), nb - (b.ndim - 2)      # a's axis i is batch position i + pa
    a_sq, b_sq, both, a_batch, b_batch = [], [], [], [], []
    at_batch, at_a, at_b = [], [], []      # the result's batch position of each product axis
    for i in range(nb):
        x = a.shape[i - pa] if i >= pa else None
        y = b.shape[i - pb] if i >= pb else None
        if x == 1 and y == 1:
            a_sq.append(i - pa)
            b_sq.append(i - pb)
            both.append(i)
        elif x is None or (x == 1 and y is not None):
            at_b.append(i)
            if x is not None:
                a_sq.append(i - pa)
        elif y is None or y == 1:
            at_a.append(i)
            if y is not None:
                b_sq.append(i - pb)
        elif x == y:
            a_batch.append(i - pa - len(a_sq))
            b_batch.append(i - pb - len(b_sq))
            at_batch.append(i)
        else:
            raise ValueError(f"Incompatible types for matmul arguments: {a.aval} and {b.aval}")
    # (no squeeze, an identity transpose or no expand_dims: no equation, as in JAX's jaxpr)
    a, b = lax.squeeze(a, a_sq), lax.squeeze(b, b_sq)
    out = lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)),
                                 (tuple(a_batch), tuple(b_batch))),
                          preferred_element_type=preferred_element_type)
    out = lax.transpose(out, np.argsort(at_batch + at_a + [nb] + at_b + [nb + 1]))
    return lax.expand_dims(out, both)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """``dot`` as ``jnp.dot``; ``out_sharding`` lays the result out by a sharding."""
    with out_sharding_scope(out_sharding):
        out = _dot(a, b, preferred_element_type=preferred_element_type)
    return apply_out_sharding(out, out_sharding)


def _dot(a, b, *, precision=None, preferred_element_type=None):
    a, b = _arraylike("dot", a), _arraylike("dot", b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    if b.ndim <= 2:
        return matmul(a, b, preferred_element_type=preferred_element_type)
    dt = dtypes.result_type(a, b)
    a, b = astype(a, dt), astype(b, dt)
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"dot: shapes {a.shape} and {b.shape} not aligned")
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), ((), ())),
                           preferred_element_type=_preferred(preferred_element_type, dt))


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """The dot product of the flattened arrays, the first conjugated (as JAX)."""
    a = _arraylike("vdot", a)
    if dtypes.is_complex(a.dtype):
        a = lax.conj(a)
    return dot(ravel(a), ravel(b))


def inner(a, b, *, precision=None, preferred_element_type=None):
    a, b = _arraylike("inner", a), _arraylike("inner", b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    dt = dtypes.result_type(a, b)
    a, b = astype(a, dt), astype(b, dt)
    if a.shape[-1] != b.shape[-1]:
        raise TypeError(f"inner: shapes {a.shape} and {b.shape} not aligned")
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())),
                           preferred_element_type=_preferred(preferred_element_type, dt))


def outer(a, b, out=None):
    a, b = ravel(_arraylike("outer", a)), ravel(_arraylike("outer", b))
    return multiply(a[:, None], b[None, :])


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
    a, b = _arraylike("tensordot", a), _arraylike("tensordot", b)
    if isinstance(axes, (int, np.integer)):
        k = int(axes)
        if k < 0 or k > builtins.min(a.ndim, b.ndim):
            raise TypeError(
                f"Number of tensordot axes (axes {k}) exceeds input ranks ({a.shape} and {b.shape})"
            )
        ca, cb = tuple(range(a.ndim - k, a.ndim)), tuple(range(k))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        xa, xb = axes
        xa = (xa,) if isinstance(xa, (int, np.integer)) else tuple(xa)
        xb = (xb,) if isinstance(xb, (int, np.integer)) else tuple(xb)
        if len(xa) != len(xb):
            raise TypeError(
                f"tensordot requires axes lists to have equal length, got {xa} and {xb}."
            )
        ca = tuple(_axis(i, a.ndim) for i in xa)
        cb = tuple(_axis(i, b.ndim) for i in xb)
    else:
        raise TypeError(
            "tensordot axes argument must be an int, a pair of ints, or a pair of lists/tuples "
            f"of ints; got {axes}"
        )
    for i, j in zip(ca, cb):
        if a.shape[i] != b.shape[j]:
            raise TypeError(
                f"tensordot: shape mismatch on contracted axes: a.shape[{i}]={a.shape[i]} vs "
                f"b.shape[{j}]={b.shape[j]} (shapes {a.shape} and {b.shape})"
            )
    dt = result_type(a, b)
    a, b = astype(a, dt), astype(b, dt)
    return lax.dot_general(
        a, b, ((ca, cb), ((), ())),
        preferred_element_type=_preferred(preferred_element_type, dt)
    )


def kron(a, b):
    a, b = _arraylike("kron", a), _arraylike("kron", b)
    dt = result_type(a, b)
    a, b = astype(a, dt), astype(b, dt)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ae = reshape(a, tuple(x for s in a.shape for x in (s, 1)))
    be = reshape(b, tuple(x for s in b.shape for x in (1, s)))
    return reshape(multiply(ae, be), tuple(s * t for s, t in zip(a.shape, b.shape)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(_arraylike("cross", a), axisa, -1)
    b = moveaxis(_arraylike("cross", b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return subtract(multiply(a[..., 0], b[..., 1]), multiply(a[..., 1], b[..., 0]))
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else zeros_like(a0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if b.shape[-1] == 3 else zeros_like(b0)
    c = stack([subtract(multiply(a1, b2), multiply(a2, b1)),
                 subtract(multiply(a2, b0), multiply(a0, b2)),
                 subtract(multiply(a0, b1), multiply(a1, b0))], axis=-1)
    return moveaxis(c, -1, axisc)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    x1, x2 = _arraylike("vecdot", x1), _arraylike("vecdot", x2)
    a1, a2 = _axis(axis, x1.ndim), _axis(axis, x2.ndim)
    if x1.shape[a1] != x2.shape[a2]:
        raise ValueError(f"axes must match; got shapes {x1.shape} and {x2.shape} with axis={axis}")
    # the array API's (and JAX's) vecdot: conj(x1) . x2, in the operands' promoted dtype
    dt = (dtypes.result_type(x1, x2) if preferred_element_type is None
          else dtypes.canonicalize_dtype(preferred_element_type))
    if dtypes.is_complex(x1.dtype):
        x1 = conjugate(x1)
    return reductions.sum(multiply(moveaxis(x1, a1, -1), moveaxis(x2, a2, -1)), axis=-1,
                          dtype=dt)


def matrix_transpose(x, /):
    x = _arraylike("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(
            f"x must be at least two-dimensional for matrix_transpose; got ndim={x.ndim}"
        )
    return swapaxes(x, -1, -2)


def matvec(x1, x2, /):
    return matmul(x1, expand_dims(_arraylike("matvec", x2), -1))[..., 0]


def vecmat(x1, x2, /):
    return matmul(expand_dims(_arraylike("vecmat", x1), -2), x2)[..., 0, :]


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, _dot_general=None, out_sharding=None):
    """``jnp.einsum``; ``out_sharding`` lays the result out by a sharding."""
    return apply_out_sharding(_einsum(subscripts, *operands, out=out, optimize=optimize,
                                      preferred_element_type=preferred_element_type,
                                      _dot_general=_dot_general), out_sharding)


def _einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
            preferred_element_type=None, _dot_general=None):
    """Contracts the operands pairwise, left to right: each pair is one ``dot_general`` (labels
    shared and still needed later batch, the other shared labels contract); labels no later
    term needs are summed out of a term first."""
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.einsum is not supported.")
    if not isinstance(subscripts, str):
        subscripts, operands = _einsum_interleaved(subscripts, operands)
    ops = [asarray(o) for o in operands]
    labels, out_labels = _einsum_labels(subscripts, ops)
    sizes = _einsum_sizes(labels, ops)
    dt = result_type(*ops) if ops else _f32
    terms = _einsum_terms(labels, [astype(o, dt) for o in ops], sizes)
    o, lab = _einsum_contract(terms, out_labels, dt, preferred_element_type)
    red = [i for i, c in enumerate(lab) if c not in out_labels]
    if red:
        o = reductions.sum(o, axis=tuple(red))
        lab = [c for c in lab if c in out_labels]
    perm = [lab.index(c) for c in out_labels]
    o = transpose(o, perm) if perm != list(range(len(perm))) else o
    if preferred_element_type is not None:
        o = astype(o, preferred_element_type)
    return o


def _einsum_labels(subscripts, ops):
    """Each operand's labels and the output's, with ``...`` expanded into labels of their own
    (right-aligned across operands) and the implicit output (labels seen once) filled in."""
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        ins, outspec = spec.split("->")
    else:
        ins, outspec = spec, None
    in_specs = ins.split(",")
    if len(in_specs) != len(ops):
        raise ValueError(f"einsum: {len(in_specs)} operand specs in {subscripts!r} for "
                         f"{len(ops)} operands")
    ell_n, parsed = 0, []
    for s, o in zip(in_specs, ops):
        if "..." in s:
            k = o.ndim - (len(s) - 3)
            if k < 0:
                raise ValueError(f"einsum: operand of shape {o.shape} has too few dims for {s!r}")
            ell_n = builtins.max(ell_n, k)
            parsed.append((s, k))
        else:
            if len(s) != o.ndim:
                raise ValueError(f"einsum: operand spec {s!r} does not match operand of shape "
                                 f"{o.shape}")
            parsed.append((s, 0))
    ell = [chr(0x3b1 + i) for i in range(ell_n)]   # greek letters stand for ellipsis dims
    labels = []
    for s, k in parsed:
        pre, _, post = s.partition("...")
        labels.append(list(pre) + ell[ell_n - k:] + list(post) if "..." in s else list(s))
    for lab in labels:
        for c in lab:
            if not c.isalpha():
                raise ValueError(f"einsum: invalid subscript {c!r} in {subscripts!r}")
    if outspec is None:
        counts = {}
        for lab in labels:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        return labels, ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    pre, _, post = outspec.partition("...")
    out_labels = list(pre) + ell + list(post) if "..." in outspec else list(outspec)
    all_labels = {c for lab in labels for c in lab}
    for c in out_labels:
        if c not in all_labels:
            raise ValueError(f"einsum: output subscript {c!r} does not appear in the inputs")
    return labels, out_labels


def _einsum_sizes(labels, ops):
    """The size of each label (a size-1 dimension broadcasts against any size)."""
    sizes = {}
    for lab, o in zip(labels, ops):
        for c, n in zip(lab, o.shape):
            if c in sizes and sizes[c] != n and n != 1 and sizes[c] != 1:
                raise ValueError(f"einsum: size of label {c!r} is {sizes[c]} in one operand and "
                                 f"{n} in another (operand shapes {[x.shape for x in ops]})")
            sizes[c] = n if c not in sizes or sizes[c] == 1 else sizes[c]
    return sizes


def _einsum_terms(labels, ops, sizes):
    """Per operand: the diagonal for each repeated label, then size-1 dims broadcast."""
    terms = []
    for lab, o in zip(labels, ops):
        lab = list(lab)
        while len(set(lab)) != len(lab):
            c = next(c for c in lab if lab.count(c) > 1)
            i = lab.index(c)
            j = lab.index(c, i + 1)
            o = diagonal(o, 0, i, j)
            lab = [x for k, x in enumerate(lab) if k not in (i, j)] + [c]
        tgt = tuple(sizes[c] for c in lab)
        if o.shape != tgt:
            o = broadcast_to(o, tgt)
        terms.append((o, lab))
    return terms


def _einsum_contract(terms, out_labels, dt, preferred_element_type):
    """Contracts the terms pairwise into one ``(array, labels)``."""
    def needed(exclude):
        s = set(out_labels)
        for k, (_, lab) in enumerate(terms):
            if k not in exclude:
                s.update(lab)
        return s

    def sum_private(k):
        o, lab = terms[k]
        keep = needed({k})
        red = tuple(i for i, c in enumerate(lab) if c not in keep)
        if red:
            o = reductions.sum(o, axis=red) if o.dtype != np.bool_ else reductions.any(o, axis=red)
            lab = [c for c in lab if c in keep]
        terms[k] = (o, lab)

    def result(la, lb, rest):
        """The labels of the product of terms labelled ``la`` and ``lb``: batch, then free."""
        shared = [c for c in la if c in lb]
        batch = [c for c in shared if c in rest]
        return batch + [c for c in la if c not in shared] + [c for c in lb if c not in shared]

    for k in range(len(terms)):
        sum_private(k)

    while len(terms) > 1:
        (a, la), (b, lb) = terms[0], terms[1]
        rest = needed({0, 1})
        if len(terms) == 2 and result(la, lb, rest) != list(out_labels) and \
                result(lb, la, rest) == list(out_labels):
            (a, la), (b, lb) = (b, lb), (a, la)     # as JAX: the order that needs no transpose
        shared = [c for c in la if c in lb]
        batch = [c for c in shared if c in rest]
        contract = [c for c in shared if c not in rest]
        if dt == np.bool_:
            a, b = astype(a, np.int32), astype(b, np.int32)
        dims = ((tuple(la.index(c) for c in contract), tuple(lb.index(c) for c in contract)),
                (tuple(la.index(c) for c in batch), tuple(lb.index(c) for c in batch)))
        r = lax.dot_general(a, b, dims, preferred_element_type=_preferred(
            preferred_element_type, np.int32 if dt == np.bool_ else dt))
        if dt == np.bool_:
            r = not_equal(r, 0)
        terms[:2] = [(r, result(la, lb, rest))]
        sum_private(0)
    return terms[0]


def _einsum_interleaved(first, rest):
    args = [first] + list(rest)
    ops, subs = [], []
    out = None
    letters = string.ascii_letters

    def conv(sub):
        return "".join("..." if s is Ellipsis else letters[s] for s in sub)

    while len(args) >= 2:
        ops.append(args.pop(0))
        subs.append(conv(args.pop(0)))
    if args:
        out = conv(args.pop(0))
    spec = ",".join(subs) + ("->" + out if out is not None else "")
    return spec, ops


def einsum_path(subscripts, *operands, optimize="greedy"):
    return [("einsum_path", (0, 1))], f"  Complete contraction:  {subscripts}"


__all__ = [
    "matmul", "dot", "vdot", "inner", "outer", "tensordot", "kron", "cross", "vecdot",
    "matrix_transpose", "matvec", "vecmat", "einsum", "einsum_path",
]
