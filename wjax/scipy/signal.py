"""wjax.scipy.signal: SciPy's N-d ``convolve``/``correlate``, ``convolve2d``/
``correlate2d``, ``fftconvolve`` (computed directly: wjax convolves on the device without
FFTs; the result is the same up to rounding), ``detrend``, and the short-time spectra
``stft``, ``istft``, ``csd`` and ``welch`` (SciPy's definitions; windows by name --
hann, hamming, blackman, bartlett, boxcar, cosine, periodic as ``get_window`` makes them --
or as an array)."""
from __future__ import annotations

import functools
import operator
import warnings

import numpy as np

from .. import lax
from .. import numpy as jnp

__all__ = ["convolve", "correlate", "convolve2d", "correlate2d", "fftconvolve", "detrend",
           "stft", "istft", "csd", "welch"]

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


# --------------------------------------------------------------------------- spectra

_detrend = detrend          # (stft's and csd's ``detrend`` argument shadows the function)


def _window(window, n: int, dtype):
    """``window`` (a name, periodic as SciPy's ``get_window`` makes it, or an array of length
    ``n``) as an array."""
    if isinstance(window, str):
        k = np.arange(n)
        m = n + 1                                 # periodic: the symmetric window of n + 1
        table = {
            "hann": lambda: 0.5 - 0.5 * np.cos(2 * np.pi * k / n),
            "hamming": lambda: 0.54 - 0.46 * np.cos(2 * np.pi * k / n),
            "blackman": lambda: (0.42 - 0.5 * np.cos(2 * np.pi * k / n)
                                 + 0.08 * np.cos(4 * np.pi * k / n)),
            "bartlett": lambda: 1 - np.abs(2 * k / (m - 1) - 1),
            "boxcar": lambda: np.ones(n),
            "cosine": lambda: np.sin(np.pi * (k + 0.5) / m),
        }
        alias = {"hanning": "hann", "han": "hann", "hamm": "hamming", "black": "blackman",
                 "triangle": "bartlett", "bart": "bartlett", "brt": "bartlett",
                 "ones": "boxcar", "rect": "boxcar", "rectangular": "boxcar", "box": "boxcar",
                 "halfcosine": "cosine"}
        name = alias.get(window, window)
        if name not in table:
            raise ValueError(f"wjax: window {window!r} is not one wjax makes (hann, hamming, "
                             "blackman, bartlett, boxcar, cosine); pass the window as an array")
        return jnp.asarray(table[name]() if n > 1 else np.ones(n), dtype)
    w = jnp.asarray(window, dtype)
    if w.ndim != 1:
        raise ValueError("window must be 1-D")
    if w.shape[0] != n:
        raise ValueError("value specified for nperseg is different from length of window")
    return w


def _extend(x, n: int, kind):
    """``x`` extended by ``n`` samples at both ends of its last axis (``stft``'s boundary)."""
    if kind == "zeros":
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)])
    if kind == "constant":
        return jnp.concatenate([jnp.repeat(x[..., :1], n, -1), x,
                                jnp.repeat(x[..., -1:], n, -1)], -1)
    left, right = jnp.flip(x[..., 1:n + 1], -1), jnp.flip(x[..., -n - 1:-1], -1)
    if kind == "even":
        return jnp.concatenate([left, x, right], -1)
    return jnp.concatenate([2 * x[..., :1] - left, x, 2 * x[..., -1:] - right], -1)   # odd


def _overlap(nperseg: int, noverlap, nfft):
    """``(nfft, step)`` of segments of ``nperseg`` overlapping by ``noverlap`` (default half
    a segment), transformed at length ``nfft`` (default ``nperseg``); JAX's errors."""
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    nfft = nperseg if nfft is None else operator.index(nfft)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    return nfft, nperseg - noverlap


def _segments(x, nperseg: int, step: int):
    """``x``'s windows along its last axis: ``(..., segments, nperseg)``."""
    count = (x.shape[-1] - nperseg) // step + 1
    idx = np.arange(count)[:, None] * step + np.arange(nperseg)[None, :]
    return x[..., idx]


def _spectrum(x, y, fs, window, nperseg, noverlap, nfft, detrend, onesided, scaling, axis,
              mode, boundary=None, padded=False):
    """SciPy's ``_spectral_helper``: (frequencies, segment times, the spectrum ``(...,
    frequencies, segments)``) -- ``mode`` "psd" (``conj(X) Y``, scaled) or "stft" (``X``)."""
    x = jnp.asarray(x)
    same = y is None
    y = x if same else jnp.asarray(y)
    if not same and x.ndim != y.ndim:
        raise ValueError("two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    dt = jnp.result_type(x, y, np.float32)
    if jnp.issubdtype(dt, np.complexfloating) and onesided:
        warnings.warn("Input data is complex, switching to return_onesided=False")
        onesided = False
    x, y = jnp.moveaxis(x.astype(dt), axis, -1), jnp.moveaxis(y.astype(dt), axis, -1)
    if not same:
        shape = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        n = max(x.shape[-1], y.shape[-1])
        x = jnp.pad(jnp.broadcast_to(x, shape + x.shape[-1:]),
                    [(0, 0)] * len(shape) + [(0, n - x.shape[-1])])
        y = jnp.pad(jnp.broadcast_to(y, shape + y.shape[-1:]),
                    [(0, 0)] * len(shape) + [(0, n - y.shape[-1])])
    length = x.shape[-1]
    if not isinstance(window, str):
        nperseg = int(np.shape(window)[0])
    elif nperseg is None:
        nperseg = length                        # JAX's default (SciPy's is 256)
    nperseg = operator.index(nperseg)
    if nperseg > length:
        warnings.warn(f"nperseg={nperseg} is greater than input_length={length}, using "
                      f"nperseg={length}")
        nperseg = length
    nfft, step = _overlap(nperseg, noverlap, nfft)
    real = jnp.issubdtype(dt, np.floating)
    win = _window(window, nperseg, jnp.finfo(dt).dtype if not real else dt)
    if boundary is not None:
        x = _extend(x, nperseg // 2, boundary)
        y = x if same else _extend(y, nperseg // 2, boundary)
    if padded:
        extra = -(x.shape[-1] - nperseg) % step % nperseg
        pad = [(0, 0)] * (x.ndim - 1) + [(0, extra)]
        x = jnp.pad(x, pad)
        y = x if same else jnp.pad(y, pad)

    if detrend in (False, None):
        detrend_fn = None
    elif callable(detrend):
        detrend_fn = detrend
    else:
        detrend_fn = functools.partial(_detrend, axis=-1, type=detrend)

    def transform(v):
        segs = _segments(v, nperseg, step)
        if detrend_fn is not None:
            segs = detrend_fn(segs)
        segs = segs * win
        return jnp.fft.rfft(segs, nfft) if onesided else jnp.fft.fft(segs, nfft)

    X = transform(x)
    if mode == "stft":
        out = X / win.sum()
    else:
        Y = X if same else transform(y)
        scale = 1.0 / (fs * jnp.sum(win * win)) if scaling == "density" else \
            1.0 / jnp.sum(win) ** 2
        out = jnp.conj(X) * Y * scale
        if onesided:
            edge = nfft % 2 == 0
            k = jnp.arange(out.shape[-1])
            double = (k > 0) & ((k < out.shape[-1] - 1) | (not edge))
            out = jnp.where(double, out * 2, out)
        if same and real:
            out = out.real
    rdt = jnp.finfo(dt).dtype
    freqs = (np.fft.rfftfreq(nfft) if onesided else np.fft.fftfreq(nfft)) * nfft
    times = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, step)
    if boundary is not None:
        times = times - nperseg / 2
    out = jnp.moveaxis(out, -1, -2)                     # (..., frequencies, segments)
    return (jnp.asarray(freqs, rdt) * (fs / nfft), jnp.asarray(times, rdt) / fs, out)


def stft(x, fs=1.0, window="hann", nperseg: int = 256, noverlap=None, nfft=None,
         detrend=False, return_onesided: bool = True, boundary="zeros", padded: bool = True,
         axis: int = -1):
    """The short-time Fourier transform ``(f, t, Zxx)`` (SciPy's ``stft``)."""
    if boundary not in ("even", "odd", "constant", "zeros", None):
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: ['even', "
                         "'odd', 'constant', 'zeros', None]")
    f, t, z = _spectrum(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                        return_onesided, "spectrum", axis, "stft", boundary, padded)
    a = operator.index(axis) % (z.ndim - 1)
    return f, t, (z if a == z.ndim - 2 else jnp.moveaxis(z, -2, a))   # frequencies at axis


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided: bool = True, scaling: str = "density",
        axis: int = -1, average: str = "mean"):
    """The cross power spectral density of ``x`` and ``y`` by Welch's method ``(f, Pxy)``."""
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"Unknown scaling: {scaling}")
    f, _, p = _spectrum(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                        return_onesided, scaling, axis, "psd")
    if p.shape[-1] > 1:
        if average == "mean":
            p = p.mean(-1)
        elif average == "median":
            n = p.shape[-1]
            bias = np.sum(1.0 / (np.arange(1, n + 1, 2))) - np.sum(
                1.0 / np.arange(2, n + 1, 2)) if n > 1 else 1.0
            if jnp.iscomplexobj(p):
                p = (jnp.median(p.real, -1) + 1j * jnp.median(p.imag, -1)) / bias
            else:
                p = jnp.median(p, -1) / bias
        else:
            raise ValueError(f'average must be "median" or "mean", got {average}')
    else:
        p = p[..., 0]
    return f, jnp.moveaxis(p, -1, operator.index(axis) % p.ndim)


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided: bool = True, scaling: str = "density",
          axis: int = -1, average: str = "mean"):
    """The power spectral density of ``x`` by Welch's method ``(f, Pxx)``."""
    f, p = csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
               scaling, axis, average)
    return f, p.real


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided: bool = True, boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2):
    """The inverse short-time Fourier transform ``(t, x)`` (SciPy's ``istft``): each
    segment's inverse transform, windowed, overlapped and added, divided by the overlapped
    squares of the window."""
    Z = jnp.asarray(Zxx)
    if Z.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    time_axis, freq_axis = (operator.index(a) % Z.ndim for a in (time_axis, freq_axis))
    if time_axis == freq_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    nseg = Z.shape[time_axis]
    nfreq = Z.shape[freq_axis]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    nperseg = n_default if nperseg is None else operator.index(nperseg)
    nfft, step = _overlap(nperseg, noverlap, nfft)
    rest = [a for a in range(Z.ndim) if a not in (time_axis, freq_axis)]
    Z = jnp.transpose(Z, rest + [time_axis, freq_axis])           # (..., segments, freq)
    real_dt = jnp.finfo(jnp.result_type(Z, np.complex64)).dtype
    segs = (jnp.fft.irfft(Z, nfft) if input_onesided else jnp.fft.ifft(Z, nfft))[..., :nperseg]
    win = _window(window, nperseg, real_dt)
    segs = segs * win.sum() * win
    total = nperseg + (nseg - 1) * step
    idx = (np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]).ravel()
    x = jnp.zeros(segs.shape[:-2] + (total,), segs.dtype).at[..., idx].add(
        segs.reshape(segs.shape[:-2] + (-1,)))
    norm = jnp.zeros(total, real_dt).at[idx].add(jnp.tile(win * win, nseg))
    x = x / jnp.where(norm > 1e-10, norm, 1.0)
    if boundary:
        x = x[..., nperseg // 2: total - nperseg // 2]
    if input_onesided:
        x = x.real
    if x.ndim > 1 and time_axis != Z.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - (freq_axis < time_axis))
    return jnp.arange(x.shape[0], dtype=real_dt) / fs, x     # SciPy's: the first axis's
