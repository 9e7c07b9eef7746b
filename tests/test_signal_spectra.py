"""jax.scipy.signal's short-time spectra against real JAX: stft (boundaries, padding, windows,
overlaps, FFT lengths, axes, complex input), welch and csd (scalings, averages, broadcast
pairs), istft (back to the signal), under jit and grad, and the bad calls."""
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
import wjax.scipy.signal as ws

jax = pytest.importorskip("jax")
js = pytest.importorskip("jax.scipy.signal")

RS = np.random.RandomState(0)
X = RS.randn(300).astype(np.float32)
Y = RS.randn(2, 300).astype(np.float32)
Z = (RS.randn(100) + 1j * RS.randn(100)).astype(np.complex64)


def _same(got, want, tol=2e-5):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, np.abs(w).max()))


STFT = [(X, dict(nperseg=64)),
        (X, dict(fs=10.0, nperseg=50, noverlap=10, nfft=64, window="hamming")),
        (X, dict(nperseg=32, boundary="even", padded=False)),
        (X, dict(nperseg=32, boundary="odd")), (X, dict(nperseg=32, boundary="constant")),
        (X, dict(nperseg=32, boundary=None)), (Y.T, dict(nperseg=32, axis=0)),
        (Y, dict(nperseg=32, window="blackman")), (X, dict(nperseg=64, detrend="linear")),
        (X, dict(nperseg=40, window="bartlett", return_onesided=False))]


@pytest.mark.parametrize("k", range(len(STFT)))
def test_stft_like_jax(k):
    x, kw = STFT[k]
    _same(ws.stft(x, **kw), js.stft(x, **kw))


def test_stft_of_complex_input_warns_and_is_two_sided():
    with pytest.warns(UserWarning, match="switching to return_onesided=False"):
        got = ws.stft(Z, nperseg=16)
    with pytest.warns(UserWarning):
        want = js.stft(Z, nperseg=16)
    _same(got, want)


WELCH = [(X, dict(nperseg=64)), (X, dict(fs=4.0, nperseg=50, scaling="spectrum",
                                          average="median")),
         (Y, dict(nperseg=40, window="blackman", nfft=65)), (X, dict()),
         (X, dict(window=np.linspace(0.1, 1, 30).astype(np.float32))),
         (X, dict(nperseg=64, detrend="linear", window="boxcar"))]


@pytest.mark.parametrize("k", range(len(WELCH)))
def test_welch_like_jax(k):
    x, kw = WELCH[k]
    _same(ws.welch(x, **kw), js.welch(x, **kw))


def test_csd_istft_jit_and_grad_like_jax():
    _same(ws.csd(X, Y[0], nperseg=64), js.csd(X, Y[0], nperseg=64))
    _same(ws.csd(Y, Y[::-1], nperseg=50, average="median"),
          js.csd(Y, Y[::-1], nperseg=50, average="median"))
    for kw in (dict(nperseg=64), dict(nperseg=50, noverlap=30, nfft=64, window="hamming")):
        z = js.stft(X, **kw)[2]
        got, want = ws.istft(np.asarray(z), **kw), js.istft(z, **kw)
        _same(got, want, 1e-4)
        np.testing.assert_allclose(np.asarray(got[1])[:300], X, atol=1e-4)
    z2 = np.moveaxis(np.asarray(js.stft(Y, nperseg=32)[2]), -1, 0)
    _same(ws.istft(z2, time_axis=0, freq_axis=-1), js.istft(z2, time_axis=0, freq_axis=-1),
          1e-4)
    _same(wjax.jit(lambda x: ws.welch(x, nperseg=64)[1])(X)[None],
          jax.jit(lambda x: js.welch(x, nperseg=64)[1])(X)[None])
    g = wjax.grad(lambda x: ws.welch(x, nperseg=64)[1].sum())(X)
    _same([g], [jax.grad(lambda x: js.welch(x, nperseg=64)[1].sum())(X)], 1e-4)


def test_bad_calls_like_jax():
    for S, N in ((ws, jnp), (js, jax.numpy)):
        with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
            S.stft(X, nperseg=16, noverlap=16)
        with pytest.raises(ValueError, match="Unknown boundary option"):
            S.stft(X, nperseg=16, boundary="mirror")
        with pytest.raises(ValueError, match="same rank"):
            S.csd(X, Y)
        with pytest.raises(ValueError, match="nfft must be greater than or equal to nperseg"):
            S.welch(X, nperseg=64, nfft=32)
