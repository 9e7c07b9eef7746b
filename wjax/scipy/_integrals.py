"""Exponential, trigonometric and Fresnel integrals, Dawson's integral, the scaled
complementary error function, the dilogarithm and Owen's T -- the series, continued fractions
and quadratures behind those ``jax.scipy.special`` functions.

Everything is a composition of lax/jnp operations: fixed-length loops (``lax.fori_loop``,
which ``jit`` runs inside one kernel) for the series and continued fractions, selects between
the ranges where each converges.  Accuracy is float32's (tests/test_surface_special.py checks
each against SciPy)."""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as jnp

EULER = 0.5772156649015329


def _c(x, v):
    return np.asarray(v, x.dtype)


# --------------------------------------------------------------------------- E1, Ei, En

def exp1_pos(x):
    """E1(x) for x > 0: the series below 1, the continued fraction above (x = 0: inf)."""
    small = x <= 1
    xs = jnp.where(small, x, 1.0)
    # series: -gamma - ln x - sum_{k>=1} (-x)^k / (k k!)
    term = -xs
    acc = term
    for k in range(2, 14):
        term = term * (-xs) / k
        acc = acc + term / k
    series = -_c(x, EULER) - jnp.log(xs) - acc
    # continued fraction, evaluated from the bottom: 1/(x+1- 1/(x+3- 4/(x+5- ...)))
    xl = jnp.where(small, 2.0, x)

    def body(i, d):
        k = _c(x, 40) - i.astype(x.dtype)
        return xl + 2 * k - 1 - k * k / d

    d = lax.fori_loop(0, 40, body, xl + 81)
    frac = jnp.exp(-xl) / d
    return jnp.where(small, series, frac)


def expi_pos(x):
    """Ei(x) for x > 0: the series gamma + ln x + sum x^k/(k k!) up to 24, the asymptotic
    expansion e^x/x sum k!/x^k beyond."""
    low = x < 24
    xs = jnp.where(low, x, 1.0)

    def body(k, st):
        term, acc = st
        kf = k.astype(x.dtype)
        term = term * xs / kf
        return term, acc + term / kf

    _, acc = lax.fori_loop(1, 90, body, (jnp.ones_like(xs), jnp.zeros_like(xs)))
    series = _c(x, EULER) + jnp.log(xs) + acc
    xl = jnp.where(low, 30.0, x)

    def abody(k, st):
        term, acc = st
        term = term * k.astype(x.dtype) / xl
        return term, acc + term

    _, aacc = lax.fori_loop(1, 26, abody, (jnp.ones_like(xl), jnp.ones_like(xl)))
    asym = jnp.exp(xl) / xl * aacc
    return jnp.where(low, series, asym)


def expn_impl(n, x):
    """E_n(x) for integer n >= 0 and x > 0 (the series below x = 1, the continued fraction
    above, an asymptotic form for n >= 5000)."""
    small = x <= 1
    xs = jnp.where(small, x, 0.5)
    # series: (-x)^(n-1)/(n-1)! (psi(n) - ln x) - sum_{k != n-1} (-x)^k / ((k - n + 1) k!)
    nm1 = n - 1

    def body(k, st):
        term, acc = st                 # term = (-x)^k / k!
        kf = k.astype(x.dtype)
        contrib = jnp.where(kf == nm1, 0.0, term / (kf - nm1))
        return term * (-xs) / (kf + 1), acc - contrib

    _, acc = lax.fori_loop(0, 30, body, (jnp.ones_like(xs), jnp.zeros_like(xs)))
    nn = jnp.maximum(n, 1.0)
    lead_mag = jnp.exp(nm1 * jnp.log(xs) - lax.lgamma(nn))
    lead = jnp.where(jnp.mod(nm1, 2) == 1, -lead_mag, lead_mag) * (lax.digamma(nn) - jnp.log(xs))
    series = lead + acc
    # continued fraction (even form), from the bottom:
    # E_n(x) = e^-x / (x+n- 1 n/(x+n+2- 2(n+1)/(x+n+4- ...)))
    xl = jnp.where(small, 2.0, x)

    def cbody(i, d):
        k = _c(x, 40) - i.astype(x.dtype)
        return xl + n + 2 * k - 2 - k * (n + k - 1) / d

    d = lax.fori_loop(0, 40, cbody, xl + n + 82)
    frac = jnp.exp(-xl) / d
    # large n: e^-x/(x+n) (1 + n/(x+n)^2 + n(n-2x)/(x+n)^4)
    t = 1 / (x + n)
    big = jnp.exp(-x) * t * (1 + n * t * t + n * (n - 2 * x) * t ** 4)
    return jnp.where(n >= 5000, big, jnp.where(small, series, frac))


# --------------------------------------------------------------------------- Si, Ci

def _cmul(ar, ai, br, bi):
    return ar * br - ai * bi, ar * bi + ai * br


def _cdiv_one(br, bi):
    den = br * br + bi * bi
    return br / den, -bi / den


def sici_pos(x):
    """(Si(x), Ci(x)) for x > 0: power series up to 4, the complex continued fraction of
    E1(ix) beyond (Ci(0) = -inf)."""
    small = x <= 4
    xs = jnp.where(small, x, 1.0)
    x2 = xs * xs
    # Si = sum (-1)^k x^(2k+1) / ((2k+1)(2k+1)!), Ci = gamma + ln x + sum (-1)^k x^2k/(2k (2k)!)
    st, ct = xs, jnp.ones_like(xs)
    si, ci = xs, jnp.zeros_like(xs)
    for k in range(1, 16):
        ct = -ct * x2 / ((2 * k - 1) * (2 * k))
        ci = ci + ct / (2 * k)
        st = -st * x2 / ((2 * k) * (2 * k + 1))
        si = si + st / (2 * k + 1)
    ci = _c(x, EULER) + jnp.log(xs) + ci
    # E1(ix) by the modified Lentz continued fraction with b = 1 + i x
    xl = jnp.where(small, 5.0, x)
    br, bi = jnp.ones_like(xl), xl
    cr, ci_ = jnp.full_like(xl, 1e30), jnp.zeros_like(xl)
    dr, di = _cdiv_one(br, bi)
    hr, hi = dr, di

    def body(i, st):
        br, bi, cr, ci_, dr, di, hr, hi = st
        a = -(i.astype(x.dtype) - 1) ** 2
        br = br + 2
        # d = 1 / (a d + b)
        dr, di = _cdiv_one(a * dr + br, a * di + bi)
        # c = b + a / c
        qr, qi = _cdiv_one(cr, ci_)
        cr, ci_ = br + a * qr, bi + a * qi
        er, ei = _cmul(cr, ci_, dr, di)
        hr, hi = _cmul(hr, hi, er, ei)
        return br, bi, cr, ci_, dr, di, hr, hi

    st = lax.fori_loop(2, 60, body, (br, bi, cr, ci_, dr, di, hr, hi))
    hr, hi = st[6], st[7]
    cs, sn = jnp.cos(xl), jnp.sin(xl)
    hr, hi = _cmul(hr, hi, cs, -sn)
    ci_l = -hr
    si_l = _c(x, np.pi / 2) + hi
    return jnp.where(small, si, si_l), jnp.where(small, ci, ci_l)


# --------------------------------------------------------------------------- Fresnel

def _sincos_half_pi_sq(x):
    """sin and cos of pi x^2 / 2 with the argument reduced exactly enough: with s = x mod 2,
    x^2 / 2 = s (x - s/2) (mod 2)."""
    x = jnp.abs(x)
    s = jnp.fmod(x, 2.0)
    r = jnp.fmod(s * (x - 0.5 * s), 2.0)
    return jnp.sin(np.pi * r), jnp.cos(np.pi * r)


def fresnel_pos(x):
    """(S(x), C(x)) for x >= 0: power series up to 1.5, the continued fraction of the
    complementary error function of a complex argument beyond."""
    small = x <= 1.5
    xs = jnp.where(small, x, 1.0)
    t = _c(x, np.pi / 2) * xs * xs
    t2 = t * t
    # S = sum (-1)^k t^(2k+1) x / ((2k+1)! (4k+3)), C = sum (-1)^k t^2k x / ((2k)! (4k+1))
    cterm = jnp.ones_like(xs)
    sterm = t
    c_acc = cterm
    s_acc = sterm / 3
    for k in range(1, 12):
        cterm = -cterm * t2 / ((2 * k - 1) * (2 * k))
        sterm = -sterm * t2 / ((2 * k) * (2 * k + 1))
        c_acc = c_acc + cterm / (4 * k + 1)
        s_acc = s_acc + sterm / (4 * k + 3)
    s_small, c_small = xs * s_acc, xs * c_acc
    xl = jnp.where(small, 2.0, x)
    pix2 = _c(x, np.pi) * xl * xl
    br, bi = jnp.ones_like(xl), -pix2
    cr, ci = jnp.full_like(xl, 1e30), jnp.zeros_like(xl)
    dr, di = _cdiv_one(br, bi)
    hr, hi = dr, di

    def body(k, st):
        br, bi, cr, ci, dr, di, hr, hi = st
        n = 2 * k.astype(x.dtype) - 3
        a = -n * (n + 1)
        br = br + 4
        dr, di = _cdiv_one(a * dr + br, a * di + bi)
        qr, qi = _cdiv_one(cr, ci)
        cr, ci = br + a * qr, bi + a * qi
        er, ei = _cmul(cr, ci, dr, di)
        hr, hi = _cmul(hr, hi, er, ei)
        return br, bi, cr, ci, dr, di, hr, hi

    st = lax.fori_loop(2, 50, body, (br, bi, cr, ci, dr, di, hr, hi))
    hr, hi = _cmul(st[6], st[7], xl, -xl)
    sn, cs = _sincos_half_pi_sq(xl)
    pr, pi_ = _cmul(cs, sn, hr, hi)
    qr, qi = 1 - pr, -pi_
    # (0.5 + 0.5 i) q
    c_l = 0.5 * (qr - qi)
    s_l = 0.5 * (qr + qi)
    return jnp.where(small, s_small, s_l), jnp.where(small, c_small, c_l)


# --------------------------------------------------------------------------- Dawson, erfcx

_RYBICKI_H = 0.4
_RYBICKI_C = [float(np.exp(-((2 * i - 1) * _RYBICKI_H) ** 2)) for i in range(1, 7)]


def dawsn_impl(x):
    """Dawson's integral: its Maclaurin series near 0, Rybicki's exponentially convergent
    sampling sum (step 0.4, six terms) elsewhere."""
    ax = jnp.abs(x)
    small = ax < 0.2
    x2 = x * x
    series = x * (1 - (2 / 3) * x2 * (1 - 0.4 * x2 * (1 - (2 / 7) * x2)))
    xx = jnp.where(small, 1.0, ax)
    n0 = 2 * jnp.round(0.5 * xx / _RYBICKI_H)
    xp = xx - n0 * _RYBICKI_H
    e1 = jnp.exp(2 * xp * _RYBICKI_H)
    e2 = e1 * e1
    d1 = n0 + 1
    d2 = d1 - 2
    acc = jnp.zeros_like(xx)
    for c in _RYBICKI_C:
        acc = acc + c * (e1 / d1 + 1 / (d2 * e1))
        d1 = d1 + 2
        d2 = d2 - 2
        e1 = e1 * e2
    big = _c(x, 1 / np.sqrt(np.pi)) * jnp.exp(-xp * xp) * acc
    return jnp.where(small, series, jnp.sign(x) * big)


def erfcx_impl(x):
    """exp(x^2) erfc(x): exp(x^2) (1 - erf x) near 0; t exp(P(t)) (t = 1/(1 + |x|/2), the
    Chebyshev fit of erfc with the Gaussian factored out) for |x| >= 0.5, reflected through
    erfcx(-x) = 2 exp(x^2) - erfcx(x)."""
    ax = jnp.abs(x)
    t = 1 / (1 + 0.5 * ax)
    p = (-1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277)))))))))
    pos = t * jnp.exp(p)
    near = jnp.exp(x * x) * (1 - lax.erf(x))
    far = jnp.where(x < 0, 2 * jnp.exp(x * x) - pos, pos)
    return jnp.where(ax < 0.5, near, far)


# --------------------------------------------------------------------------- dilogarithm

_BERN = [1.0, -0.5, 1 / 6, 0.0, -1 / 30, 0.0, 1 / 42, 0.0, -1 / 30, 0.0, 5 / 66, 0.0,
         -691 / 2730, 0.0, 7 / 6, 0.0, -3617 / 510]


def _li2_near(z):
    """Li2(z) for z in [-1, 0.5] as sum B_k u^(k+1)/(k+1)!, u = -ln(1 - z)."""
    u = -jnp.log1p(-z)
    acc = jnp.zeros_like(z)
    p = u
    fact = 1.0
    for k, b in enumerate(_BERN):
        fact *= (k + 1)
        if b != 0.0:
            acc = acc + (b / fact) * p
        p = p * u
    return acc


def spence_impl(x):
    """SciPy's spence(x) = Li2(1 - x) for x >= 0 (NaN below), through the reflection and
    inversion formulas that bring the argument into [-1, 0.5]."""
    z = 1 - x
    pi2_6 = _c(x, np.pi ** 2 / 6)
    mid = (z >= -1) & (z <= 0.5)
    zm = jnp.where(mid, z, 0.0)
    direct = _li2_near(zm)
    # z in (0.5, 1]: Li2(z) = pi^2/6 - ln z ln(1 - z) - Li2(1 - z)
    hi = z > 0.5
    zh = jnp.where(hi, z, 0.75)
    xlog = jnp.where(x > 0, jnp.log(jnp.where(x > 0, x, 1.0)) * jnp.log(zh), 0.0)
    refl = pi2_6 - xlog - _li2_near(1 - zh)
    # z < -1: Li2(z) = -pi^2/6 - ln^2(-z)/2 - Li2(1/z)
    lo = z < -1
    zl = jnp.where(lo, z, -2.0)
    inv = -pi2_6 - 0.5 * jnp.log(-zl) ** 2 - _li2_near(1 / zl)
    out = jnp.where(mid, direct, jnp.where(hi, refl, inv))
    return jnp.where(x < 0, np.nan, jnp.where(x == 1, 0.0, out))


# --------------------------------------------------------------------------- Owen's T

_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)


def owens_t_impl(h, a):
    """T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + t^2)/2) / (1 + t^2) dt: 20-point Gauss-Legendre
    for |a| <= 1, the reciprocal identity for |a| > 1."""
    h = jnp.abs(h)
    aa = jnp.abs(a)
    use_recip = aa > 1
    am = jnp.where(use_recip, 1 / jnp.where(aa == 0, 1.0, aa), aa)
    hm = jnp.where(use_recip, aa * h, h)
    acc = jnp.zeros_like(hm)
    for xi, wi in zip(_GL_X, _GL_W):
        t = 0.5 * am * (xi + 1)
        acc = acc + wi * jnp.exp(-0.5 * hm * hm * (1 + t * t)) / (1 + t * t)
    res = acc * am * 0.5 / (2 * np.pi)
    sq2 = _c(h, np.sqrt(2.0))
    hn = h / sq2
    erfc_h = lax.erfc(hn)
    erfc_ah = lax.erfc(aa * hn)
    recip = jnp.where(aa * h <= 0.67,
                      0.25 - 0.25 * lax.erf(hn) * lax.erf(aa * hn) - res,
                      0.25 * (erfc_h + erfc_ah - erfc_h * erfc_ah) - res)
    res = jnp.where(use_recip, recip, res)
    res = jnp.sign(a) * res
    return jnp.where(jnp.isnan(a) | jnp.isnan(h), np.nan, res)
