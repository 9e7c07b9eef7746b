"""jax.scipy names wjax lacked (issue 15): scipy.special (accuracy against SciPy at float32
tolerances, JAX's edge conventions and derivatives), the scipy.stats distributions, mode,
rankdata, sem and gaussian_kde, scipy.signal, scipy.ndimage.map_coordinates,
scipy.optimize.minimize (BFGS) and scipy.integrate -- against real JAX and SciPy."""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.scipy.special as W
from surface_util import both, raises_like_jax, same

pytest.importorskip("jax")
sp = pytest.importorskip("scipy.special")
import jax  # noqa: E402
import jax.scipy.optimize  # noqa: E402,F401  (jax.scipy's submodules load lazily)
import jax.scipy.signal  # noqa: E402,F401
import jax.scipy.ndimage  # noqa: E402,F401
import jax.scipy.integrate  # noqa: E402,F401

f32 = np.float32
R = np.random.RandomState(0)


def vs_scipy(got, ref, rtol, atol=0.0):
    """float32 results against SciPy's float64 ones where SciPy's are finite; a result in
    float32's subnormal range may be flushed to zero (the WGSL spec allows it, NVIDIA does)."""
    got = np.asarray(got, np.float64)
    with np.errstate(over="ignore"):
        ref = np.asarray(ref, np.float64).astype(np.float32).astype(np.float64)  # float32 range
    fin = np.isfinite(ref)
    flushed = fin & (got == 0) & (np.abs(ref) < np.finfo(np.float32).tiny)
    fin &= ~flushed
    np.testing.assert_allclose(got[fin], ref[fin], rtol=rtol, atol=atol)


# --------------------------------------------------------------------------- special

def test_gamma_family_and_combinatorics():
    x = np.array([-3.5, -2.0, -0.5, -0.0, 0.0, 0.3, 1.0, 2.5, 7.0, 30.0, np.nan, np.inf], f32)
    both(lambda m: [m.scipy.special.gammasgn(x), m.scipy.special.gamma(x),
                    m.scipy.special.loggamma(x), m.scipy.special.factorial(x)], rtol=2e-5)
    vs_scipy(W.gamma(x), sp.gamma(x.astype(float)), 2e-5)
    N, K = np.meshgrid(np.array([-1, 0, 1, 5, 10.5, 20], f32), np.array([-1, 0, 2, 3.5, 10], f32))
    both(lambda m: [m.scipy.special.comb(N, K), m.scipy.special.comb(N, K, repetition=True)],
         rtol=2e-5)
    vs_scipy(W.comb(N, K), sp.comb(N, K), 2e-5)
    a, b = np.meshgrid(np.array([-2.5, 0.5, 1, 3, 10], f32), np.array([-0.5, 0.5, 2, 7], f32))
    both(lambda m: [m.scipy.special.beta(a, b), m.scipy.special.poch(a, b),
                    m.scipy.special.gammainc(np.abs(a), np.abs(b)),
                    m.scipy.special.gammaincc(np.abs(a), np.abs(b)),
                    m.scipy.special.multigammaln(np.array([2.5, 4.0, 10.0], f32), 3)],
         rtol=1e-4)
    pos = (a > 0) & (b > 0)        # (SciPy's limits at the poles differ from JAX's NaN)
    vs_scipy(W.beta(a[pos], b[pos]), sp.beta(a[pos], b[pos]), 1e-5)
    vs_scipy(W.poch(a[pos], b[pos]), sp.poch(a[pos], b[pos]), 1e-5)
    both(lambda m: m.grad(lambda z: m.scipy.special.poch(z, 2.5), argnums=0)(f32(1.5)),
         rtol=1e-5)
    both(lambda m: m.scipy.special.betainc(f32(2.0), f32(3.0), np.linspace(0, 1, 6).astype(f32)))
    with pytest.raises(NotImplementedError):
        W.factorial(3, exact=True)


def test_entropies_boxcox_bessel_zeta_polygamma():
    p, q = np.meshgrid(np.array([-1, 0, 0.5, 2], f32), np.array([-1, 0, 0.3, 4], f32))
    both(lambda m: [m.scipy.special.rel_entr(p, q), m.scipy.special.kl_div(p, q)])
    vs_scipy(W.kl_div(p, q), sp.kl_div(p, q), 1e-6)
    both(lambda m: m.grad(lambda v: m.scipy.special.rel_entr(v, 0.5))(f32(0.3)), rtol=1e-6)
    lam = np.array([-1, 0, 0.5, 2], f32)
    both(lambda m: [m.scipy.special.boxcox(np.array([[0.5], [2.0]], f32), lam),
                    m.scipy.special.boxcox1p(np.array([[-0.5], [2.0]], f32), lam)])
    z = np.array([-20.0, -3.0, -0.5, 0.0, 0.1, 1.0, 5.0, 15.0, 50.0], f32)
    for name in ("i0", "i0e", "i1", "i1e"):
        vs_scipy(getattr(W, name)(z), getattr(sp, name)(z.astype(float)), 5e-7, 1e-30)
        both(lambda m: getattr(m.scipy.special, name)(z), rtol=2e-6, what=name)
    both(lambda m: m.grad(m.scipy.special.i1)(f32(2.0)), rtol=1e-6)
    both(lambda m: m.scipy.special.bessel_jn(np.array([0.5, 1.0, 3.0, 10.0], f32), v=4),
         rtol=1e-4, atol=1e-6)
    s, qq = np.meshgrid(np.array([1.5, 2.0, 3.0, 8.0], f32), np.array([0.5, 1.0, 4.0, 30.0], f32))
    vs_scipy(W.zeta(s, qq), sp.zeta(s, qq), 1e-6)
    both(lambda m: m.scipy.special.zeta(s, qq), rtol=2e-5)
    # d/dq zeta(s, q) = -s zeta(s + 1, q); d/ds by the series
    both(lambda m: m.grad(m.scipy.special.zeta, argnums=(0, 1))(f32(3.0), f32(2.0)), rtol=1e-3)
    raises_like_jax(lambda m: m.scipy.special.zeta(2.0), match="Riemann")
    n = np.array([0, 1, 2, 3])
    xs = np.array([0.3, 2.0, 5.0, 10.0], f32)
    both(lambda m: m.scipy.special.polygamma(n, xs), rtol=2e-5)
    vs_scipy(W.polygamma(n, xs), sp.polygamma(n, xs.astype(float)), 2e-6)
    raises_like_jax(lambda m: m.scipy.special.polygamma(1.0, 2.0), match="integer")


def test_exponential_trig_fresnel_integrals_against_scipy():
    xe = np.array([-5.0, -1.0, -0.2, 1e-3, 0.5, 1.0, 3.0, 10.0, 50.0, 85.0], f32)
    vs_scipy(W.expi(xe), sp.expi(xe.astype(float)), 2e-6)
    vs_scipy(W.exp1(np.abs(xe)), sp.exp1(np.abs(xe).astype(float)), 3e-6)
    n, x = np.meshgrid(np.array([0, 1, 2, 5, 20], f32), np.array([0.0, 0.3, 1.0, 4.0, 30.0], f32))
    vs_scipy(W.expn(n, x), sp.expn(n.astype(int), x.astype(float)), 3e-6)
    both(lambda m: [m.scipy.special.expi(xe), m.scipy.special.exp1(np.abs(xe))], rtol=2e-5)
    # derivatives: Ei' = e^x / x, En' = -E(n-1)
    both(lambda m: m.vmap(m.grad(m.scipy.special.expi))(xe[:6]), rtol=1e-5)
    both(lambda m: m.grad(m.scipy.special.expn, argnums=1)(f32(2.0), f32(1.5)), rtol=1e-5)
    xs = np.array([-30.0, -4.0, -1.0, 0.0, 0.5, 3.0, 4.0, 5.0, 20.0, 1e5], f32)
    si, ci = W.sici(xs)
    ssi, sci = sp.sici(xs.astype(float))
    vs_scipy(si, ssi, 1e-6)
    np.testing.assert_allclose(np.asarray(ci)[1:], sci[1:], atol=2e-6)   # Ci(-x) real part
    both(lambda m: m.scipy.special.sici(xs), rtol=2e-5, atol=2e-6)
    both(lambda m: m.vmap(m.grad(lambda v: sum(m.scipy.special.sici(v))))(xs[4:8]), rtol=1e-5)
    xf = np.array([-10.0, -1.0, 0.0, 0.3, 1.4, 1.6, 3.0, 10.0], f32)
    for got, ref in zip(W.fresnel(xf), sp.fresnel(xf.astype(float))):
        vs_scipy(got, ref, 2e-6, 1e-7)
    both(lambda m: m.scipy.special.fresnel(xf), rtol=2e-5, atol=1e-6)
    both(lambda m: m.grad(lambda v: m.scipy.special.fresnel(v)[0])(f32(1.2)), rtol=1e-5)


def test_dawsn_erfcx_spence_owens_t_hyp1f1_bernoulli():
    xd = np.array([-50.0, -3.0, -0.1, 0.0, 0.15, 0.5, 2.0, 5.0, 100.0], f32)
    vs_scipy(W.dawsn(xd), sp.dawsn(xd.astype(float)), 1e-6)
    both(lambda m: m.scipy.special.dawsn(xd), rtol=1e-5, atol=1e-7)
    both(lambda m: m.grad(m.scipy.special.dawsn)(f32(0.7)), rtol=1e-5)
    xc = np.array([-9.0, -2.0, -0.3, 0.0, 0.4, 0.6, 5.0, 1e3, 1e10], f32)
    vs_scipy(W.erfcx(xc), sp.erfcx(xc.astype(float)), 5e-6)
    both(lambda m: m.grad(m.scipy.special.erfcx)(f32(1.3)), rtol=1e-5)
    xsp = np.array([0.0, 0.2, 0.5, 1.0, 1.5, 2.0, 5.0, 100.0, -1.0], f32)
    vs_scipy(W.spence(xsp), sp.spence(xsp.astype(float)), 1e-6, 1e-7)
    both(lambda m: m.scipy.special.spence(xsp), rtol=1e-5, atol=1e-6)
    raises_like_jax(lambda m: m.scipy.special.spence(np.array([1, 2])))
    h, a = np.meshgrid(np.array([-2.0, 0.0, 0.5, 3.0], f32), np.array([-2.0, 0.0, 0.5, 1.0, 3.0],
                                                                      f32))
    vs_scipy(W.owens_t(h, a), sp.owens_t(h.astype(float), a.astype(float)), 2e-6, 1e-8)
    both(lambda m: m.scipy.special.owens_t(h, a), rtol=1e-5, atol=1e-7)
    both(lambda m: m.grad(m.scipy.special.owens_t, argnums=(0, 1))(f32(0.7), f32(1.5)),
         rtol=1e-5)
    a3 = np.array([0.5, 1.0, 2.0, 0.0, 3.0], f32)[:, None]
    b3 = np.array([1.0, 2.5, 0.5, 3.0], f32)[None, :]
    for x in (f32(1.5), f32(-4.0)):
        vs_scipy(W.hyp1f1(a3, b3, x), sp.hyp1f1(a3, b3, float(x)), 2e-6)
    vs_scipy(W.hyp1f1(f32(1.0), f32(2.0), np.array([150.0, 30.0], f32)),
             sp.hyp1f1(1.0, 2.0, np.array([150.0, 30.0])), 2e-6)
    both(lambda m: m.scipy.special.hyp1f1(a3, b3, f32(1.5)), rtol=1e-5)
    both(lambda m: [m.scipy.special.bernoulli(10), m.scipy.special.bernoulli(1)], rtol=1e-6)
    raises_like_jax(lambda m: m.scipy.special.bernoulli(-1), match="non-negative")


# --------------------------------------------------------------------------- stats

X = np.array([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0], f32)
Q = np.array([0.0, 0.1, 0.5, 0.9, 1.0], f32)
K = np.array([-1.0, 0.0, 1.0, 2.0, 3.5, 5.0, 10.0], f32)
U = np.array([-0.1, 0.0, 0.2, 0.5, 0.9, 1.0, 1.2], f32)
STATS = [
    ("bernoulli", ("logpmf", "pmf", "cdf"), (K, f32(0.3))), ("bernoulli", ("ppf",), (Q, f32(0.3))),
    ("binom", ("logpmf", "pmf"), (K, f32(5.0), f32(0.3))),
    ("betabinom", ("logpmf", "pmf"), (K, f32(5.0), f32(2.0), f32(3.0))),
    ("nbinom", ("logpmf", "pmf"), (K, f32(3.0), f32(0.4))),
    ("geom", ("logpmf", "pmf"), (K, f32(0.3))),
    ("poisson", ("logpmf", "pmf", "cdf"), (K, f32(2.5))),
    ("poisson", ("entropy",), (np.array([0.0, 0.5, 5.0, 50.0, 500.0], f32),)),
    ("gamma", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (X, f32(2.0), f32(0.1), f32(1.5))),
    ("beta", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (U, f32(2.0), f32(3.0))),
    ("t", ("logpdf", "pdf"), (X, f32(3.0), f32(0.5), f32(2.0))),
    ("chi2", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (X, f32(3.0))),
    ("cauchy", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (X, f32(0.5), f32(2.0))),
    ("cauchy", ("ppf", "isf"), (Q[1:-1], f32(0.5), f32(2.0))),
    ("expon", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (X, f32(0.5), f32(2.0))),
    ("expon", ("ppf",), (Q, f32(0.5), f32(2.0))),
    ("gennorm", ("logpdf", "pdf", "cdf"), (X, f32(1.5))),
    ("gumbel_l", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (X, f32(0.5), f32(2.0))),
    ("gumbel_r", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), (X, f32(0.5), f32(2.0))),
    ("gumbel_l", ("ppf",), (Q, f32(0.5), f32(2.0))),
    ("gumbel_r", ("ppf",), (Q, f32(0.5), f32(2.0))),
    ("laplace", ("logpdf", "pdf", "cdf"), (X, f32(0.5), f32(2.0))),
    ("logistic", ("logpdf", "pdf", "cdf", "sf"), (X, f32(0.5), f32(2.0))),
    ("logistic", ("ppf", "isf"), (Q, f32(0.5), f32(2.0))),
    ("pareto", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
     (X, f32(3.0), f32(0.5), f32(1.0))),
    ("pareto", ("ppf",), (Q, f32(3.0))),
    ("truncnorm", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
     (X, f32(-1.0), f32(2.0), f32(0.5), f32(1.5))),
    ("truncnorm", ("logpdf", "cdf", "logsf"), (X, f32(1.0), f32(4.0))),
    ("uniform", ("logpdf", "pdf", "cdf"), (X, f32(0.0), f32(2.0))),
    ("uniform", ("ppf",), (Q, f32(-1.0), f32(3.0))),
    ("vonmises", ("logpdf", "pdf"), (X, f32(2.0))),
    ("wrapcauchy", ("logpdf", "pdf"), (X, f32(0.4))),
]


def test_distributions_match_jax():
    def all_values(m):
        return [getattr(getattr(m.scipy.stats, d), fn)(*args) for d, fns, args in STATS
                for fn in fns]
    both(all_values, rtol=2e-5, atol=1e-6, jit_jax=True)
    import scipy.stats as ss
    vs_scipy(wjax.scipy.stats.gamma.cdf(X, 2.0, 0.1, 1.5), ss.gamma.cdf(X, 2.0, 0.1, 1.5), 2e-6)
    vs_scipy(wjax.scipy.stats.t.logpdf(X, 3.0), ss.t.logpdf(X, 3.0), 2e-6)
    vs_scipy(wjax.scipy.stats.truncnorm.logcdf(X, -1.0, 2.0), ss.truncnorm.logcdf(X, -1.0, 2.0),
             2e-5)
    # jit, vmap and gradients through a few of them
    both(lambda m: m.jit(m.vmap(m.grad(lambda x: m.scipy.stats.gamma.logcdf(x, 2.0))))(X[3:]),
         rtol=1e-5)
    both(lambda m: m.grad(lambda b: m.scipy.stats.beta.logpdf(f32(0.3), 2.0, b))(f32(3.0)),
         rtol=1e-5)


def test_multivariate_distributions_and_summaries():
    xd = np.array([[0.2, 0.3], [0.5, 0.1], [0.3, 0.6]], f32)
    al = np.array([1.0, 2.0, 3.0], f32)
    both(lambda m: [m.scipy.stats.dirichlet.logpdf(xd, al),
                    m.scipy.stats.dirichlet.pdf(xd[:2], al)], rtol=1e-5)
    raises_like_jax(lambda m: m.scipy.stats.dirichlet.logpdf(xd, al[None]), match="one-dim")
    xm = np.array([1, 2, 3])
    p = np.array([0.2, 0.3, 0.5], f32)
    both(lambda m: [m.scipy.stats.multinomial.logpmf(xm, 6, p),
                    m.scipy.stats.multinomial.pmf(xm, 5, p)], rtol=1e-5)
    raises_like_jax(lambda m: m.scipy.stats.multinomial.logpmf(xm * 1.0, 6, p), match="integer")
    mean = np.array([0.5, -1.0], f32)
    cov = np.array([[2.0, 0.3], [0.3, 1.0]], f32)
    xs = R.randn(4, 2).astype(f32)
    both(lambda m: [m.scipy.stats.multivariate_normal.logpdf(xs, mean, cov),
                    m.scipy.stats.multivariate_normal.pdf(xs, mean, f32(2.0)),
                    m.scipy.stats.multivariate_normal.logpdf(xs[:, 0], f32(0.5), f32(2.0))],
         rtol=1e-5)
    a = np.array([[1, 2, 2, 3], [3, 3, 1, 1], [0, 5, 5, 0]], f32)
    both(lambda m: [tuple(m.scipy.stats.mode(a, axis=ax, keepdims=kd))
                    for ax, kd in ((0, False), (1, False), (None, False), (1, True))])
    r = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0], f32)
    both(lambda m: [m.scipy.stats.rankdata(r, meth) for meth in
                    ("average", "min", "max", "dense", "ordinal")]
         + [m.scipy.stats.rankdata(a, "average", axis=1),
            m.scipy.stats.rankdata(np.array([1.0, np.nan]))])
    raises_like_jax(lambda m: m.scipy.stats.rankdata(r, "bogus"), match="unknown method")
    both(lambda m: [m.scipy.stats.sem(a), m.scipy.stats.sem(a, axis=None),
                    m.scipy.stats.sem(np.array([1.0, np.nan, 3.0, 4.0], f32), nan_policy="omit")],
         rtol=1e-5)
    ds = R.randn(2, 30).astype(f32)
    pts = R.randn(2, 5).astype(f32)
    both(lambda m: [m.scipy.stats.gaussian_kde(ds)(pts),
                    m.scipy.stats.gaussian_kde(ds).logpdf(pts),
                    m.scipy.stats.gaussian_kde(ds).integrate_gaussian(np.zeros(2, f32),
                                                                      np.eye(2, dtype=f32)),
                    m.scipy.stats.gaussian_kde(ds).integrate_kde(m.scipy.stats.gaussian_kde(pts)),
                    m.scipy.stats.gaussian_kde(ds[0], "silverman", np.arange(1.0, 31.0))
                    .integrate_box_1d(-0.5, 1.0)], rtol=1e-4, atol=1e-6)
    k = wjax.scipy.stats.gaussian_kde(ds)
    assert wjax.jit(lambda kde, x: kde(x))(k, pts).shape == (5,)
    assert k.resample(wjax.random.key(0), (3,)).shape == (2, 3)


# --------------------------------------------------------------------------- signal, ndimage,
# optimize, integrate

def test_signal_convolutions_and_detrend():
    a1, b1 = R.randn(7).astype(f32), R.randn(3).astype(f32)
    a2, b2 = R.randn(5, 6).astype(f32), R.randn(2, 3).astype(f32)
    a3, b3 = R.randn(4, 5, 3).astype(f32), R.randn(2, 2, 2).astype(f32)
    pairs = [(a1, b1), (b1, a1), (a2, b2), (b2, a2), (a3, b3)]

    def run(m):
        out = []
        for mode in ("full", "same", "valid"):
            for x, y in pairs:
                out += [m.scipy.signal.convolve(x, y, mode), m.scipy.signal.correlate(x, y, mode),
                        m.scipy.signal.fftconvolve(x, y, mode)]
            for x, y in pairs[2:4]:
                out += [m.scipy.signal.convolve2d(x, y, mode),
                        m.scipy.signal.correlate2d(x, y, mode)]
            out.append(m.scipy.signal.fftconvolve(a2, a2[:, :3] * 1, mode, axes=1))
            out.append(m.scipy.signal.fftconvolve(a2[:, :2], b2.T, mode))
        return out
    both(run, rtol=1e-4, atol=1e-5)
    both(lambda m: m.scipy.signal.convolve(np.arange(5), np.array([1, 2, 1])))
    both(lambda m: m.grad(lambda v: m.scipy.signal.convolve(v, b1, "same").sum())(a1), rtol=1e-5)
    raises_like_jax(lambda m: m.scipy.signal.convolve(a1, b1, "bogus"), match="mode")
    raises_like_jax(lambda m: m.scipy.signal.convolve(R.randn(3, 1), R.randn(1, 3)),
                    match="smaller")
    raises_like_jax(lambda m: m.scipy.signal.convolve2d(a2, b2, boundary="wrap"),
                    match="boundary")
    d = (R.randn(3, 20) + np.arange(20.0)).astype(f32)
    both(lambda m: [m.scipy.signal.detrend(d), m.scipy.signal.detrend(d, type="constant", axis=0),
                    m.scipy.signal.detrend(d, bp=[5, 12])], rtol=1e-4, atol=1e-4)
    import scipy.signal as ss
    np.testing.assert_allclose(wjax.scipy.signal.detrend(d, bp=[5, 12]),
                               ss.detrend(d, bp=[5, 12]), atol=1e-4)


def test_map_coordinates_optimize_integrate():
    img = R.randn(5, 6).astype(f32)
    co = [R.uniform(-2, 7, (3, 4)).astype(f32), R.uniform(-2, 8, (3, 4)).astype(f32)]
    both(lambda m: [m.scipy.ndimage.map_coordinates(img, co, order, mode=mode, cval=0.5)
                    for order in (0, 1)
                    for mode in ("constant", "nearest", "wrap", "mirror", "reflect")], rtol=1e-5)
    both(lambda m: m.scipy.ndimage.map_coordinates(np.arange(12).reshape(3, 4),
                                                   [np.array([0.5, 1.2]), np.array([1.5, 2.5])], 1))
    both(lambda m: m.grad(lambda im: m.scipy.ndimage.map_coordinates(im, co, 1).sum())(img),
         rtol=1e-5)
    raises_like_jax(lambda m: m.scipy.ndimage.map_coordinates(img, co, 3), match="order")
    raises_like_jax(lambda m: m.scipy.ndimage.map_coordinates(img, co[:1], 1), match="length")
    # BFGS: a quadratic (exact minimizer, JAX's iteration count) and Rosenbrock (SciPy's answer;
    # JAX's float32 line search gives up on it)
    A = np.array([[3.0, 0.5], [0.5, 1.0]], f32)

    def quad(m):
        res = m.scipy.optimize.minimize(lambda x, a: 0.5 * x @ a @ x - x.sum(), np.zeros(2, f32),
                                        (A,), method="bfgs")
        return res.x, res.fun, res.jac, res.success, res.status, res.nit
    got = both(quad, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[0], np.linalg.solve(A, np.ones(2)), rtol=1e-5)

    def rosen(x):
        return wjax.numpy.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    x0 = np.array([-1.2, 1.0, 0.5], f32)
    res = wjax.jit(lambda v: wjax.scipy.optimize.minimize(rosen, v, method="BFGS"))(x0)
    import scipy.optimize as so
    ref = so.minimize(lambda v: float(np.sum(100 * (v[1:] - v[:-1] ** 2) ** 2 + (1 - v[:-1]) ** 2)),
                      x0.astype(float), method="BFGS")
    np.testing.assert_allclose(res.x, ref.x, atol=2e-3)
    assert bool(res.success) and int(res.status) == 0 and float(res.fun) < 1e-6
    assert isinstance(res, wjax.scipy.optimize.OptimizeResults)
    raises_like_jax(lambda m: m.scipy.optimize.minimize(rosen, x0, method="nelder-mead"),
                    match="not recognized")
    raises_like_jax(lambda m: m.scipy.optimize.minimize(rosen, x0, [1], method="BFGS"),
                    match="tuple")
    both(lambda m: [m.scipy.integrate.trapezoid(np.arange(5.0, dtype=f32), dx=0.5),
                    m.scipy.integrate.trapezoid(np.arange(6.0, dtype=f32).reshape(2, 3),
                                                np.array([0.0, 1.0, 3.0], f32))])
    same(wjax.scipy.integrate.trapezoid(np.arange(4.0, dtype=f32)), np.float32(4.5))


def test_sparse_solvers_interpolate_and_vq():
    import jax.scipy.sparse.linalg  # noqa: F401
    import jax.scipy.interpolate  # noqa: F401
    import jax.scipy.cluster.vq  # noqa: F401
    A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]], f32)
    Nm = np.array([[4.0, 1.0, 0.5], [0.2, 3.0, 1.0], [0.0, -1.0, 2.0]], f32)
    b = np.array([1.0, 2.0, 3.0], f32)
    got = both(lambda m: [m.scipy.sparse.linalg.cg(A, b)[0],
                          m.scipy.sparse.linalg.cg(lambda x: A @ x, b,
                                                   M=np.diag(1 / np.diag(A)))[0],
                          m.scipy.sparse.linalg.bicgstab(Nm, b)[0],
                          m.scipy.sparse.linalg.gmres(Nm, b)[0],
                          m.scipy.sparse.linalg.gmres(Nm, b, restart=2)[0],
                          m.scipy.sparse.linalg.gmres(Nm, b)[1]],
               rtol=1e-4, atol=1e-5, jit_jax=False)
    np.testing.assert_allclose(got[0], np.linalg.solve(A, b), rtol=1e-4)
    np.testing.assert_allclose(got[3], np.linalg.solve(Nm, b), rtol=1e-4)
    # implicit derivatives (custom_linear_solve): in b, and in values A closes over
    both(lambda m: m.grad(lambda bb: m.scipy.sparse.linalg.cg(A, bb)[0].sum())(b), rtol=1e-4,
         jit_jax=False)
    both(lambda m: m.grad(lambda aa: m.scipy.sparse.linalg.gmres(lambda x: aa @ x, b)[0].sum())(
        Nm), rtol=1e-3, atol=1e-4, jit_jax=False)
    both(lambda m: m.scipy.sparse.linalg.cg(lambda t: {"u": 2 * t["u"], "v": 3 * t["v"]},
                                            {"u": b, "v": b[:2]})[0], rtol=1e-5, jit_jax=False)
    raises_like_jax(lambda m: m.scipy.sparse.linalg.cg(A[:2], b), match="square")
    raises_like_jax(lambda m: m.scipy.sparse.linalg.cg(A, b, x0=b[:2]), match="shapes")
    grid = (np.linspace(0, 1, 4).astype(f32), np.linspace(-1, 1, 5).astype(f32))
    vals = R.randn(4, 5).astype(f32)
    xi = R.uniform(-1.2, 1.2, (7, 2)).astype(f32)
    both(lambda m: [m.scipy.interpolate.RegularGridInterpolator(grid, vals)(xi),
                    m.scipy.interpolate.RegularGridInterpolator(grid, vals, method="nearest")(xi),
                    m.scipy.interpolate.RegularGridInterpolator(grid, vals, fill_value=None)(xi),
                    m.scipy.interpolate.RegularGridInterpolator(
                        grid, vals[..., None] * np.ones(3, f32))(xi)], rtol=1e-5, jit_jax=False)
    interp = wjax.scipy.interpolate.RegularGridInterpolator(grid, vals)
    assert wjax.jit(lambda f, x: f(x))(interp, xi).shape == (7,)
    raises_like_jax(lambda m: m.scipy.interpolate.RegularGridInterpolator(grid, vals,
                                                                          method="cubic"),
                    match="not defined")
    obs, cb = R.randn(6, 3).astype(f32), R.randn(4, 3).astype(f32)
    both(lambda m: m.scipy.cluster.vq.vq(obs, cb), rtol=1e-5)
