"""wjax.scipy.signal: SciPy's N-d ``convolve``/``correlate``, ``convolve2d``/
``correlate2d``, ``fftconvolve`` (computed directly: wjax convolves on the device without
FFTs; the result is the same up to rounding) and ``detrend``."""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .. import numpy as jnp

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend"]

_MODES = ("full", "same", "valid")


def _check(name, in1, in2, mode):
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    in1, in2 = jnp.asarray(in1), jnp.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got "
                         f"{in1.ndim} and {in2.ndim}")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    dt = jnp.result_type(in1, in2)
    if not jnp.issubdtype(dt, np.inexact):
        dt = np.dtype(np.float32)
    return in1.astype(dt), in2.astype(dt)


def _contains(a, b):
    return all(x >= y for x, y in zip(a.shape, b.shape))


def _full(in1, in2, precision=None):
    """The full convolution (any shapes)."""
    pads = [(n - 1, n - 1) for n in in2.shape]
    out = lax.conv_general_dilated(in1[None, None], jnp.flip(in2)[None, None],
                                   (1,) * in1.ndim, pads, precision=precision)
    return out[0, 0]


def _mode_conv(in1, in2, mode, precision=None):
    """Full / same (centred, in1's shape) / valid convolution."""
    if mode == "valid":
        if not _contains(in1, in2):
            in1, in2 = in2, in1
        out = lax.conv_general_dilated(in1[None, None], jnp.flip(in2)[None, None],
                                       (1,) * in1.ndim, [(0, 0)] * in1.ndim,
                                       precision=precision)
        return out[0, 0]
    full = _full(in1, in2, precision)
    if mode == "full":
        return full
    starts = [(n2 - 1) // 2 for n2 in in2.shape]
    return lax.slice(full, starts, [s + n1 for s, n1 in zip(starts, in1.shape)])


def _conv_nd(in1, in2, mode, precision):
    """SciPy's direct N-d convolution: one input must contain the other."""
    if not (_contains(in1, in2) or _contains(in2, in1)):
        raise ValueError("One input must be smaller than the other in every dimension.")
    return _mode_conv(in1, in2, mode, precision)


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-d convolution of ``in1`` and ``in2`` (``method`` "auto", "direct" or "fft": all
    computed directly)."""
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"Got {method=}; expected 'auto', 'fft', or 'direct'.")
    if method == "fft":
        return fftconvolve(in1, in2, mode)
    in1, in2 = _check("convolve", in1, in2, mode)
    if in1.ndim == 0:
        return in1 * in2
    return _conv_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-d cross-correlation of ``in1`` and ``in2``."""
    return convolve(in1, jnp.flip(jnp.asarray(in2)), mode, method, precision)


def _check2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D convolution (zero-filled boundary only)."""
    _check2d("convolve2d", in1, in2, boundary, fillvalue)
    in1, in2 = _check("convolve2d", in1, in2, mode)
    return _conv_nd(in1, in2, mode, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-D cross-correlation (zero-filled boundary only), SciPy's centring included."""
    _check2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = _check("correlate2d", in1, in2, mode)
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    # correlate(a, b) = flip(convolve(flip(a), b)); the operands trade places when in1 is the
    # smaller one, as in SciPy
    if mode == "same" or not swap or (mode == "valid" and same_shape):
        return jnp.flip(_conv_nd(jnp.flip(in1), in2, mode, precision))
    return _conv_nd(jnp.flip(in2), in1, mode, precision)


def fftconvolve(in1, in2, mode="full", axes=None):
    """The convolution of ``in1`` and ``in2`` over ``axes`` (all by default; the other axes,
    of equal sizes, are batch axes), computed directly."""
    in1, in2 = _check("fftconvolve", in1, in2, mode)
    if in1.ndim == 0:
        return in1 * in2
    if axes is None:
        axes = tuple(range(in1.ndim))
    axes = tuple(sorted({operator.index(a) % in1.ndim for a in
                         ((axes,) if isinstance(axes, int) else axes)}))
    batch = [i for i in range(in1.ndim) if i not in axes]
    if any(in1.shape[i] != in2.shape[i] for i in batch):
        raise ValueError(f"mapped axes must have same shape; got {in1.shape=} {in2.shape=} "
                         f"{axes=}")
    a, b = (jnp.transpose(x, batch + list(axes)) for x in (in1, in2))
    bshape = a.shape[:len(batch)]
    nb = int(np.prod(bshape))
    a = jnp.reshape(a, (nb,) + a.shape[len(batch):])
    b = jnp.reshape(b, (nb,) + b.shape[len(batch):])
    sa, sb = a.shape[1:], b.shape[1:]
    if mode == "valid" and not (all(x >= y for x, y in zip(sa, sb)) or
                                all(x <= y for x, y in zip(sa, sb))):
        raise ValueError("For 'valid' mode, One input must be at least as large as the other "
                         "in every dimension.")
    if mode == "valid" and not all(x >= y for x, y in zip(sa, sb)):
        a, b, sa, sb = b, a, sb, sa
    nsp = len(sa)
    pads = [(0, 0)] * nsp if mode == "valid" else [(n - 1, n - 1) for n in sb]
    kern = jnp.flip(b, tuple(range(1, b.ndim)))[:, None]
    out = lax.conv_general_dilated(a[None], kern, (1,) * nsp, pads, feature_group_count=nb)[0]
    if mode == "same":
        starts = [0] + [(n2 - 1) // 2 for n2 in sb]
        out = lax.slice(out, starts, [out.shape[0]] + [s + n1 for s, n1 in
                                                        zip(starts[1:], sa)])
    out = jnp.reshape(out, bshape + out.shape[1:])
    return jnp.transpose(out, np.argsort(batch + list(axes)))


def detrend(data, axis: int = -1, type: str = "linear", bp=0, overwrite_data=None):
    """``data`` minus its mean (``type="constant"``) or minus its least-squares line on each
    segment between the breakpoints ``bp`` (``"linear"``), along ``axis``."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "c", "linear", "l"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    data = jnp.asarray(data)
    if not jnp.issubdtype(data.dtype, np.inexact):
        data = data.astype(np.float32)
    if type in ("constant", "c"):
        return data - jnp.mean(data, axis, keepdims=True)
    axis = operator.index(axis) % data.ndim
    n = data.shape[axis]
    bps = np.sort(np.unique(np.r_[0, np.asarray(bp, dtype=np.int64).ravel(), n]))
    if np.any(bps > n):
        raise ValueError("Breakpoints must be less than length of data along given axis.")
    x = jnp.moveaxis(data, axis, 0)
    pieces = []
    for lo, hi in zip(bps[:-1], bps[1:]):
        seg = x[lo:hi]
        m = hi - lo
        t = jnp.arange(m, dtype=seg.dtype).reshape((m,) + (1,) * (seg.ndim - 1))
        tc = t - (m - 1) / 2.0
        denom = jnp.sum(tc * tc)
        slope = jnp.sum(tc * seg, axis=0, keepdims=True) / jnp.where(denom == 0, 1.0, denom)
        mean = jnp.mean(seg, axis=0, keepdims=True)
        pieces.append(seg - (mean + slope * tc))
    return jnp.moveaxis(jnp.concatenate(pieces, axis=0), 0, axis)
