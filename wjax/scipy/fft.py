"""wjax.scipy.fft: JAX's ``jax.scipy.fft`` -- the type-2 discrete cosine transform ``dct``/
``dctn`` and its inverse ``idct``/``idctn`` (SciPy's definitions; ``norm`` None, "backward"
or "ortho").

A DCT-II of length N is one complex FFT of length N of the input reordered as its even
entries followed by its odd entries reversed: ``X_k = 2 Re(exp(-i pi k / 2N) V_k)``.  The
inverse undoes each step: ``V_k = exp(i pi k / 2N) (X_k - i X_{N-k}) / 2`` (``X_N = 0``), an
inverse FFT, and the even/odd order put back.  The n-dimensional transforms apply the 1-d one
axis by axis (the transform is separable); complex inputs transform their real and imaginary
parts."""
from __future__ import annotations

import operator

import numpy as np

from .. import lax
from .. import numpy as jnp
from ..numpy._util import _check_arg

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name, x, type, norm):
    _check_arg(f"{name}", x)
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm is not None and norm not in ("backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, np.inexact):
        x = x.astype(jnp.float32)
    return x


def _resize_last(x, n):
    """``x`` cropped or zero-padded along its last axis to length ``n``."""
    have = x.shape[-1]
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    if n < have:
        return x[..., :n]
    if n > have:
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - have)])
    return x


def _ortho_scale(n, dtype):
    """SciPy's "ortho" factors of a DCT-II of length ``n``: ``sqrt(1/4n)`` for the first
    coefficient, ``sqrt(1/2n)`` for the others."""
    f = np.full(n, np.sqrt(0.5 / n))
    f[0] = np.sqrt(0.25 / n)
    return f.astype(dtype)


def _dct_last(x, norm):
    """The DCT-II of real ``x`` along its last axis."""
    n = x.shape[-1]
    v = jnp.concatenate([x[..., ::2], x[..., 1::2][..., ::-1]], axis=-1)
    spectrum = jnp.fft.fft(v, axis=-1)
    twiddle = np.exp(-0.5j * np.pi * np.arange(n) / n).astype(spectrum.dtype)
    out = 2 * (spectrum * twiddle).real
    if norm == "ortho":
        out = out * _ortho_scale(n, out.dtype)
    return out


def _idct_last(x, norm):
    """The inverse of ``_dct_last`` (SciPy's ``idct`` of type 2) along the last axis."""
    n = x.shape[-1]
    if norm == "ortho":
        x = x / _ortho_scale(n, x.dtype)
    # X_{N-k} for k = 0..N-1, with X_N = 0
    flipped = jnp.concatenate([jnp.zeros_like(x[..., :1]), x[..., :0:-1]], axis=-1)
    z = lax.complex(x, -flipped) * 0.5
    twiddle = np.exp(0.5j * np.pi * np.arange(n) / n).astype(z.dtype)
    v = jnp.fft.ifft(z * twiddle, axis=-1).real
    half = (n + 1) // 2
    evens, odds = v[..., :half], v[..., half:][..., ::-1]
    if odds.shape[-1] < half:
        odds = jnp.pad(odds, [(0, 0)] * (x.ndim - 1) + [(0, half - odds.shape[-1])])
    return jnp.stack([evens, odds], axis=-1).reshape(*x.shape[:-1], 2 * half)[..., :n]


def _along(fn, x, sizes, axes, norm):
    """``fn`` (a last-axis transform) applied along each of ``axes``, each axis first
    resized to its entry of ``sizes`` (None: as it is); complex ``x`` part by part."""
    if jnp.iscomplexobj(x):
        return lax.complex(_along(fn, x.real, sizes, axes, norm),
                           _along(fn, x.imag, sizes, axes, norm))
    for axis, n in zip(axes, sizes):
        x = jnp.moveaxis(x, axis, -1)
        x = fn(_resize_last(x, x.shape[-1] if n is None else operator.index(n)), norm)
        x = jnp.moveaxis(x, -1, axis)
    return x


def _axis(name, axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"jax.scipy.fft.{name}: axis {axis} is out of bounds for array of "
                         f"dimension {ndim}")
    return axis % ndim


def _nd_args(name, x, s, axes):
    if s is not None:
        try:
            s = [operator.index(n) for n in s]
        except TypeError:
            s = [operator.index(s)]
        if len(s) > x.ndim:
            raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
    if axes is None:
        axes = range(x.ndim - len(s), x.ndim) if s is not None else range(x.ndim)
    elif isinstance(axes, int) or np.ndim(axes) == 0:
        axes = [axes]
    axes = [_axis(name, a, x.ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"jax.scipy.fft.{name}: repeated axes {tuple(axes)}")
    # sizes pair with the axes in order; axes past the end of s keep their length
    sizes = list(s if s is not None else [])[:len(axes)]
    return axes, sizes + [None] * (len(axes) - len(sizes))


def dct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The discrete cosine transform (type 2) of ``x`` along ``axis``; ``n`` crops or
    zero-pads that axis first (SciPy's ``scipy.fft.dct``)."""
    x = _check("dct", x, type, norm)
    return _along(_dct_last, x, [n], [_axis("dct", axis, x.ndim)], norm)


def idct(x, type: int = 2, n: int | None = None, axis: int = -1, norm: str | None = None):
    """The inverse of ``dct`` along ``axis`` (SciPy's ``scipy.fft.idct``)."""
    x = _check("idct", x, type, norm)
    return _along(_idct_last, x, [n], [_axis("idct", axis, x.ndim)], norm)


def dctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
    """The n-dimensional DCT over ``axes`` (all, or the last ``len(s)``), each cropped or
    zero-padded to its entry of ``s`` (SciPy's ``scipy.fft.dctn``)."""
    x = _check("dctn", x, type, norm)
    axes, sizes = _nd_args("dctn", x, s, axes)
    return _along(_dct_last, x, sizes, axes, norm)


def idctn(x, type: int = 2, s=None, axes=None, norm: str | None = None):
    """The inverse of ``dctn`` (SciPy's ``scipy.fft.idctn``)."""
    x = _check("idctn", x, type, norm)
    axes, sizes = _nd_args("idctn", x, s, axes)
    return _along(_idct_last, x, sizes, axes, norm)
