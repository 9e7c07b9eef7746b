"""wjax.scipy.special and wjax.scipy.stats.norm against JAX and SciPy/NumPy references.

Fixed expected values come from JAX 0.10.2, so CI checks them without JAX.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax.scipy import special
from wjax.scipy.stats import norm


def close(a, b, rtol=2e-6, atol=2e-6):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_fixed_values():
    close(special.gammaln(jnp.array([0.5, 3., 10.5, -1.5])),
          np.array([0.5723648071289062, 0.6931474208831787, 13.940628051757812, 0.8600468635559082],
                   np.float32), rtol=1e-5, atol=1e-6)
    close(
        special.erfinv(jnp.array([-0.9, 0.1, 0.999])),
        np.array([-1.163087010383606, 0.08885598927736282, 2.3267576694488525], np.float32),
        rtol=1e-5,
    )
    close(special.ndtri(jnp.array([1e-10, 0.025, 0.5, 0.9])),
          np.array([-6.3613409996032715, -1.9599637985229492, 0.0, 1.2815512418746948], np.float32),
          rtol=1e-5)
    close(special.logsumexp(jnp.array([1000., 1000.5])), np.float32(1000.9740600585938))
    out, sign = special.logsumexp(jnp.array([1., 2.]), b=jnp.array([1., -1.]), return_sign=True)
    close(out, np.float32(1.5413248538970947))
    close(sign, np.float32(-1.0))
    close(norm.pdf(0.5), np.float32(0.3520653247833252))
    close(norm.cdf(-1.5), np.float32(0.06680721789598465))
    close(norm.logpdf(3.), np.float32(-5.418938636779785))
    close(norm.ppf(0.975), np.float32(1.9599642753601074), rtol=1e-5)
    close(norm.logcdf(-12.), np.float32(-75.41067504882812), rtol=1e-6)


def test_special_vs_numpy_references():
    x = np.array([-3., -1.2, -0.3, 0., 0.2, 0.7, 1.5, 3., 4.5], np.float32)
    close(special.erf(jnp.asarray(x)), np.array([math.erf(v) for v in x], np.float32), atol=3e-7)
    close(
        special.erfc(jnp.asarray(x)),
        np.array([math.erfc(v) for v in x], np.float32),
        rtol=5e-7,
        atol=0,
    )
    close(
        special.expit(jnp.asarray(x)),
        (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32),
        rtol=1e-6,
    )
    p = np.array([0.01, 0.3, 0.5, 0.9], np.float32)
    close(special.logit(jnp.asarray(p)), np.log(p / (1 - p)), rtol=1e-5)
    pos = np.array([0.1, 0.5, 1., 2., 3.7, 10., 33.], np.float32)
    close(special.gammaln(jnp.asarray(pos)), np.array([math.lgamma(v) for v in pos], np.float32),
          rtol=2e-6, atol=1e-6)
    close(special.xlogy(jnp.array([0., 0., 2.]), jnp.array([0., 3., 5.])),
          np.array([0., 0., 2 * np.log(5)], np.float32), rtol=1e-6)
    close(
        special.xlog1py(jnp.array([0.0, 2.0]), jnp.array([-1.0, 0.5])),
        np.array([0.0, 2 * np.log1p(0.5)], np.float32),
    )
    close(
        special.entr(jnp.array([0.0, 0.5, -1.0])),
        np.array([0.0, 0.5 * np.log(2), -np.inf], np.float32),
    )
    a = np.array([[1., 2., 3.], [-50., 100., 0.]], np.float32)
    ref = np.log(np.sum(np.exp(a.astype(np.float64) - a.max(1, keepdims=True)), 1)) + a.max(1)
    close(special.logsumexp(jnp.asarray(a), axis=1), ref.astype(np.float32))
    # erfc stays accurate far in the tail, where 1 - erf(x) is 0
    close(special.erfc(jnp.array([9.0])), np.array([math.erfc(9.0)], np.float32), rtol=1e-6, atol=0)


def test_special_vs_jax():
    jax = pytest.importorskip("jax")
    S = jax.scipy.special
    x = np.linspace(-4, 4, 33).astype(np.float32)
    for name in ["erf", "erfc", "expit", "ndtr", "log_ndtr"]:
        close(getattr(special, name)(jnp.asarray(x)), getattr(S, name)(x), rtol=2e-6, atol=2e-7)
    u = np.linspace(-0.999, 0.999, 41).astype(np.float32)
    close(special.erfinv(jnp.asarray(u)), S.erfinv(u), rtol=1e-5, atol=1e-6)
    p = np.concatenate([[1e-30, 1e-12, 1e-5], np.linspace(0.01, 0.99, 25), [1 - 1e-6]]).astype(
        np.float32
    )
    close(special.ndtri(jnp.asarray(p)), S.ndtri(p), rtol=1e-5, atol=1e-6)
    close(special.logit(jnp.asarray(p)), S.logit(p), rtol=1e-5, atol=1e-6)
    g = np.concatenate([np.linspace(0.05, 30, 40), [-0.5, -1.5, -2.7, 1e-4]]).astype(np.float32)
    close(special.gammaln(jnp.asarray(g)), S.gammaln(g), rtol=1e-5, atol=2e-6)
    close(special.digamma(jnp.asarray(g)), S.digamma(g), rtol=1e-5, atol=2e-6)
    close(
        special.betaln(jnp.array([0.5, 3.0]), jnp.array([2.0, 7.5])),
        S.betaln(np.array([0.5, 3.0], np.float32), np.array([2.0, 7.5], np.float32)),
        rtol=1e-5,
        atol=2e-6,
    )
    xs, ys = np.array([0., 1.5, 3., 0.], np.float32), np.array([2., 0.5, 1e-3, 0.], np.float32)
    close(special.xlogy(jnp.asarray(xs), jnp.asarray(ys)), S.xlogy(xs, ys), rtol=1e-6)
    a = np.array([[1., 2., 3.], [-50., 100., 0.], [7., 7., 7.]], np.float32)
    b = np.array([[1., 0., 2.], [0.5, -1., 1.], [1., 1., -3.]], np.float32)
    for axis in (None, 0, 1):
        close(special.logsumexp(jnp.asarray(a), axis=axis), S.logsumexp(a, axis=axis), rtol=1e-6)
        close(
            special.logsumexp(jnp.asarray(a), axis=axis, b=jnp.asarray(b)),
            S.logsumexp(a, axis=axis, b=b),
            rtol=1e-6,
        )
        for got, want in zip(
            special.logsumexp(jnp.asarray(a), axis=axis, b=jnp.asarray(b), return_sign=True),
            S.logsumexp(a, axis=axis, b=b, return_sign=True),
        ):
            close(got, want, rtol=1e-6)
    close(
        special.logsumexp(jnp.asarray(a), axis=1, keepdims=True),
        S.logsumexp(a, axis=1, keepdims=True),
    )


def test_norm_vs_jax():
    jax = pytest.importorskip("jax")
    N = jax.scipy.stats.norm
    x = np.linspace(-6, 6, 25).astype(np.float32)
    for name in ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]:
        close(getattr(norm, name)(jnp.asarray(x)), getattr(N, name)(x), rtol=2e-6, atol=1e-7)
        close(
            getattr(norm, name)(jnp.asarray(x), 1.5, 2.0),
            getattr(N, name)(x, 1.5, 2.0),
            rtol=2e-6,
            atol=1e-7,
        )
    q = np.linspace(0.001, 0.999, 21).astype(np.float32)
    close(norm.ppf(jnp.asarray(q)), N.ppf(q), rtol=1e-5, atol=1e-6)
    close(norm.ppf(jnp.asarray(q), -1., 3.), N.ppf(q, -1., 3.), rtol=1e-5, atol=1e-6)
    close(norm.isf(jnp.asarray(q)), N.isf(q), rtol=1e-5, atol=1e-5)


def test_gradients_vs_jax():
    jax = pytest.importorskip("jax")
    S = jax.scipy.special
    x = np.array([0.3, 1.0, 2.5, 7.0], np.float32)
    for name in ["gammaln", "digamma", "erf", "erfinv", "expit", "ndtr"]:
        arg = x / 8 if name == "erfinv" else x
        g = wjax.grad(lambda v: jnp.sum(getattr(special, name)(v)))(jnp.asarray(arg))
        gj = jax.grad(lambda v: jax.numpy.sum(getattr(S, name)(v)))(arg)
        close(g, gj, rtol=1e-4, atol=1e-6)
    g = wjax.grad(lambda v: jnp.sum(special.xlogy(v, 2.0)))(jnp.array([0., 3.]))
    close(g, np.full(2, np.log(2), np.float32))
    g = wjax.grad(lambda v: special.logsumexp(v))(jnp.array([1000., 1000.]))
    close(g, np.array([0.5, 0.5], np.float32))
    g = wjax.grad(lambda v: jnp.sum(norm.logpdf(v, 1.0, 2.0)))(jnp.array([0., 3.]))
    close(g, np.array([0.25, -0.5], np.float32))
