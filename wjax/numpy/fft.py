"""wjax.numpy.fft: JAX's ``jax.numpy.fft`` over the ``fft`` primitive (wjax/_src/prims/fft.py).

Every transform moves its axes last, crops or zero-pads them to ``s``/``n``, and calls
``lax.fft`` (at most three axes at a time, as JAX does); ``norm`` scales the result.
The cropping, padding and axis moves are views that fuse into the FFT kernel's loads.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import lax
from .._src.core import dtypes
from .._src.core.ops import FftType
from ._util import _check_arg
from .creation import arange, array, asarray
from .manipulation import pad
from .shapes import moveaxis, roll
from .ufuncs import conj, true_divide

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm_scale(s, func_name: str, norm):
    """The factor ``norm`` applies (None: none)."""
    if norm is None or norm == "backward":
        return None
    n = float(math.prod(s))
    inverse = func_name.startswith("i")
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1.0 / math.sqrt(n)
    if norm == "forward":
        return n if inverse else 1.0 / n
    raise ValueError(f'Invalid norm value {norm}; should be "backward",'
                     '"ortho" or "forward".')


def _fft_core(func_name: str, fft_type: FftType, a, s, axes, norm):
    full_name = f"jax.numpy.fft.{func_name}"
    _check_arg(full_name, a)
    arr = asarray(a)
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n <= 0 for n in s):
            raise ValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    orig_axes = axes
    if axes is None:
        axes = range(arr.ndim) if s is None else range(arr.ndim - len(s), arr.ndim)
    if len(axes) != len(set(axes)):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:
        axes = tuple(range(arr.ndim - len(axes), arr.ndim))
        arr = moveaxis(arr, orig_axes, axes)
    if s is not None:
        in_s = list(arr.shape)
        for ax, n in zip(axes, s):
            in_s[ax] = n
        if fft_type == FftType.IRFFT:
            in_s[-1] = in_s[-1] // 2 + 1
        arr = arr[tuple(slice(n) for n in in_s)]
        if tuple(arr.shape) != tuple(in_s):
            arr = pad(arr, [(0, want - have) for want, have in zip(in_s, arr.shape)])
    elif fft_type == FftType.IRFFT:
        s = [arr.shape[ax] for ax in axes[:-1]]
        if axes:
            s += [max(0, 2 * (arr.shape[axes[-1]] - 1))]
    else:
        s = [arr.shape[ax] for ax in axes]
    out = _fft_nd(arr, fft_type, tuple(s))
    scale = _norm_scale(s, func_name, norm)
    if scale is not None:
        out = out * scale
    if orig_axes is not None:
        out = moveaxis(out, axes, orig_axes)
    return out


def _fft_nd(arr, fft_type: FftType, s: tuple):
    """lax.fft over the trailing ``len(s)`` axes, three at a time (as JAX splits them)."""
    if len(s) <= 3:
        return lax.fft(arr, fft_type, s)
    n = 2 if len(s) == 4 else 3
    src = tuple(range(arr.ndim - len(s), arr.ndim - n))
    dst = tuple(range(arr.ndim - len(s) + n, arr.ndim))
    if fft_type in (FftType.RFFT, FftType.FFT):
        arr = lax.fft(arr, fft_type, s[-n:])
        arr = moveaxis(arr, src, dst)
        arr = _fft_nd(arr, FftType.FFT, s[:-n])
        return moveaxis(arr, dst, src)
    arr = moveaxis(arr, src, dst)
    arr = _fft_nd(arr, FftType.IFFT, s[:-n])
    arr = moveaxis(arr, dst, src)
    return lax.fft(arr, fft_type, s[-n:])


def fftn(a, s=None, axes=None, norm=None):
    """The n-dimensional DFT over ``axes`` (all by default), cropped/padded to ``s``."""
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
    """The n-dimensional inverse DFT."""
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
    """The n-dimensional DFT of a real array (half of the last axis's frequencies)."""
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of ``rfftn`` (a real array; ``s[-1]`` defaults to 2 (n - 1))."""
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def _axis_check_1d(func_name: str, axis):
    if isinstance(axis, (list, tuple)):
        full_name = f"jax.numpy.fft.{func_name}"
        raise ValueError(f"{full_name} does not support multiple axes. Please use "
                         f"{full_name}n. Got axis = {axis!r}.")


def _fft_1d(func_name, fft_type, a, n, axis, norm):
    _axis_check_1d(func_name, axis)
    return _fft_core(func_name, fft_type, a, None if n is None else [n],
                     None if axis is None else [axis], norm)


def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional DFT along ``axis`` (cropped or zero-padded to ``n``)."""
    return _fft_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis=-1, norm=None):
    """The one-dimensional inverse DFT."""
    return _fft_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis=-1, norm=None):
    """The one-dimensional DFT of a real array: frequencies 0 .. n // 2."""
    return _fft_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``rfft``: ``n`` real values (2 (m - 1) by default)."""
    return _fft_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis=-1, norm=None):
    """The DFT of a signal with Hermitian symmetry, given its first half (real result)."""
    conj_a = conj(a)
    _axis_check_1d("hfft", axis)
    nn = (conj_a.shape[axis] - 1) * 2 if n is None else n
    return _fft_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm) * nn


def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``hfft``: the first half of a Hermitian spectrum."""
    _axis_check_1d("ihfft", axis)
    arr = asarray(a)
    nn = arr.shape[axis] if n is None else n
    out = _fft_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
    return conj(out) * (1 / nn)


def _fft_2d(func_name, fft_type, a, s, axes, norm):
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. "
                         f"Got axes = {axes!r}.")
    return _fft_core(func_name, fft_type, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional DFT over ``axes``."""
    return _fft_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional inverse DFT."""
    return _fft_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional DFT of a real array."""
    return _fft_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of ``rfft2``."""
    return _fft_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


def _freq_args(name, n, d):
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. "
                         f"Got n = {list(n)}.")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.")


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of a length-n DFT: [0, 1, ..., -1] / (d n)."""
    dtype = np.dtype(dtype) if dtype is not None else np.dtype(np.float32)
    _freq_args("fftfreq", n, d)
    out_dtype = dtype
    work = dtypes.check_supported(dtype if dtypes.is_inexact(dtype) else np.float32)
    if dtypes.is_complex(work):
        work = np.dtype(np.float32)
    i = arange(n, dtype=work)
    k = (i + n // 2) % n - n // 2
    out = k.astype(work) / array(d * n, dtype=work)
    out = out.astype(out_dtype)
    return out if device is None else out.to_device(device)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of a length-n real DFT: [0, 1, ..., n // 2] / (d n)."""
    dtype = np.dtype(dtype) if dtype is not None else np.dtype(np.float32)
    _freq_args("rfftfreq", n, d)
    k = arange(0, n // 2 + 1, dtype=dtype)
    out = true_divide(k, array(d * n, dtype=dtype))
    return out if device is None else out.to_device(device)


def _shifts(x, axes, sign):
    if axes is None:
        axes = tuple(range(x.ndim))
        return [sign * (dim // 2) for dim in x.shape], axes
    if isinstance(axes, int):
        return sign * (x.shape[axes] // 2), axes
    return [sign * (x.shape[ax] // 2) for ax in axes], axes


def fftshift(x, axes=None):
    """Moves the zero frequency to the centre (a roll by n // 2 along ``axes``)."""
    _check_arg("fftshift", x)
    x = asarray(x)
    shift, axes = _shifts(x, axes, 1)
    return roll(x, shift, axes)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift``."""
    _check_arg("ifftshift", x)
    x = asarray(x)
    shift, axes = _shifts(x, axes, -1)
    return roll(x, shift, axes)
