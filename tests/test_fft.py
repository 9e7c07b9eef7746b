"""jnp.fft and lax.fft on the device, against NumPy's float64 FFT and real JAX.

Accuracy: for every tested length the normwise relative error against NumPy's complex128
FFT is at float32 level -- below 4e-8 (log2 n + 2) and at most twice JAX's own float32 FFT
(ducc on the CPU) plus 2e-8; lengths cover powers of two (one and several passes), mixed
radices (3, 5, 7: 100, 1000), Bluestein (17, 127) and a long axis (2^17, where the twiddle
table is two-level).  Both kernel strategies run (``Target.fft``: "registers", the CPU
adapters' default, and "workgroup", the GPUs'), so the GPU path is tested on lavapipe too.
The jnp functions (n, axis/axes, s, norm, every transform), gradients (grad, jvp, vjp),
vmap and jit are compared with real JAX on the same programs; bad input raises JAX's
classes (also in tests/bad_inputs.py).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import lax

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", False)

RNG = np.random.RandomState(0)


def crand(*shape, seed=0):
    r = np.random.RandomState(seed)
    return (r.randn(*shape) + 1j * r.randn(*shape)).astype(np.complex64)


def rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def relerr(got, want) -> float:
    got = np.asarray(got).astype(np.complex128)
    want = np.asarray(want).astype(np.complex128)
    return float(np.linalg.norm((got - want).ravel()) / max(np.linalg.norm(want.ravel()), 1e-30))


def same(got, want, tol=2e-6, what=""):
    """Same shape and dtype as JAX's result, values within a normwise relative ``tol``."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    e = relerr(got, want)
    assert e <= tol, f"{what}: relative error {e:.3g} > {tol}"


def _accuracy(n, kind, rows=3):
    """(error of wjax, error of JAX) against NumPy's float64 transform of one input."""
    x = crand(rows, n, seed=n)
    if kind == "FFT":
        arg, want = x, np.fft.fft(x.astype(np.complex128))
    elif kind == "IFFT":
        arg, want = x, np.fft.ifft(x.astype(np.complex128))
    elif kind == "RFFT":
        arg = x.real.copy()
        want = np.fft.rfft(arg.astype(np.float64))
    else:
        arg = np.fft.rfft(x.real.astype(np.float64)).astype(np.complex64)
        want = np.fft.irfft(arg.astype(np.complex128), n)
    got = lax.fft(arg, kind, (n,))
    assert np.asarray(got).shape == want.shape
    theirs = jax.lax.fft(arg, kind, (n,))
    return relerr(got, want), relerr(theirs, want)


def _check_accuracy(n, kind):
    ours, theirs = _accuracy(n, kind)
    bound = 4e-8 * (math.log2(n) + 2)
    assert ours <= bound, f"{kind} n={n}: error {ours:.3g} > {bound:.3g}"
    assert ours <= 2 * theirs + 2e-8, f"{kind} n={n}: error {ours:.3g}, JAX's {theirs:.3g}"


LENGTHS = [1, 2, 3, 5, 7, 8, 16, 17, 64, 100, 127, 128, 1000, 1024, 4096]


@pytest.mark.parametrize("n", LENGTHS)
def test_fft_accuracy_against_float64(n):
    _check_accuracy(n, "FFT")


@pytest.mark.parametrize("kind", ["IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("n", [2, 17, 100, 1024])
def test_inverse_and_real_transforms_accuracy(n, kind):
    _check_accuracy(n, kind)


@pytest.mark.parametrize("strategy", ["registers", "workgroup"])
def test_long_axis(strategy, target_options):
    """2^17 points: several passes, a two-level twiddle table."""
    target_options(fft=strategy)
    _check_accuracy(1 << 17, "FFT")


@pytest.mark.parametrize("n,kind", [(64, "FFT"), (1000, "FFT"), (4096, "FFT"), (8192, "FFT"),
                                    (127, "FFT"), (1024, "IRFFT"), (100, "RFFT"),
                                    (40, "FFT"), (40, "IRFFT"), (80, "RFFT"), (48, "IFFT")])
def test_workgroup_strategy(n, kind, target_options):
    """The GPUs' kernels (passes in workgroup memory, ping-pong buffers) on this adapter.
    Length 40 (radices 8 and 5) is one long pass whose lanes are one thread each: its
    sub-passes still read the twiddle table (it crashed on an NVIDIA H100's limits)."""
    target_options(fft="workgroup")
    _check_accuracy(n, kind)


def test_many_rows_and_strided_axes():
    """Rows of the leading and trailing dimensions are lanes of the same passes: a batch of
    rows, and a transform along a middle axis (strided in memory)."""
    x = crand(700, 40, seed=1)
    same(jnp.fft.fft(x), np.fft.fft(x.astype(np.complex128)).astype(np.complex64), 1e-6)
    y = crand(3, 48, 5, seed=2)
    same(jnp.fft.fft(y, axis=1), np.fft.fft(y.astype(np.complex128), axis=1)
         .astype(np.complex64), 1e-6)
    same(lax.fft(y, "FFT", (48, 5)), np.fft.fftn(y.astype(np.complex128), axes=(1, 2))
         .astype(np.complex64), 1e-6)


# --------------------------------------------------------------------------- jnp.fft vs JAX

X = rand(3, 6, 10, seed=3)
C = crand(3, 6, 10, seed=4)

JNP_CASES = {
    "fft": (lambda m, a: m.fft.fft(a), C),
    "fft_n_axis": (lambda m, a: m.fft.fft(a, n=7, axis=1), C),
    "fft_crop_real": (lambda m, a: m.fft.fft(a, n=3, axis=0), X),
    "fft_int": (lambda m, a: m.fft.fft(a), np.arange(6, dtype=np.int32)),
    "ifft_ortho": (lambda m, a: m.fft.ifft(a, norm="ortho"), C),
    "fft_forward": (lambda m, a: m.fft.fft(a, norm="forward"), C),
    "ifft_forward": (lambda m, a: m.fft.ifft(a, norm="forward", axis=0), C),
    "rfft": (lambda m, a: m.fft.rfft(a, axis=1), X),
    "rfft_ortho": (lambda m, a: m.fft.rfft(a, n=12, norm="ortho"), X),
    "irfft": (lambda m, a: m.fft.irfft(a), C),
    "irfft_n_odd": (lambda m, a: m.fft.irfft(a, n=9, axis=1), C),
    "fft2": (lambda m, a: m.fft.fft2(a), C),
    "ifft2_axes": (lambda m, a: m.fft.ifft2(a, axes=(0, 2)), C),
    "rfft2": (lambda m, a: m.fft.rfft2(a), X),
    "irfft2_s": (lambda m, a: m.fft.irfft2(a, s=(5, 8)), C),
    "fftn": (lambda m, a: m.fft.fftn(a), C),
    "ifftn_s_axes": (lambda m, a: m.fft.ifftn(a, s=(3, 4), axes=(2, 0)), C),
    "rfftn": (lambda m, a: m.fft.rfftn(a), X),
    "irfftn": (lambda m, a: m.fft.irfftn(a, norm="ortho"), C),
    "fftn_4d": (lambda m, a: m.fft.fftn(a.reshape(3, 2, 3, 10)), C),
    "irfftn_4d": (lambda m, a: m.fft.irfftn(a.reshape(3, 2, 3, 10)), C),
    "hfft": (lambda m, a: m.fft.hfft(a), C),
    "hfft_n": (lambda m, a: m.fft.hfft(a, n=7, axis=0, norm="ortho"), C),
    "ihfft": (lambda m, a: m.fft.ihfft(a, n=12), X),
    "fftfreq": (lambda m: m.fft.fftfreq(9, 0.3),),
    "fftfreq_even_int": (lambda m: m.fft.fftfreq(10, dtype=np.int32),),
    "rfftfreq": (lambda m: m.fft.rfftfreq(10, 0.3),),
    "rfftfreq_odd": (lambda m: m.fft.rfftfreq(7),),
    "fftshift": (lambda m, a: m.fft.fftshift(a), X),
    "fftshift_axis": (lambda m, a: m.fft.fftshift(a, axes=1), X),
    "ifftshift_axes": (lambda m, a: m.fft.ifftshift(a, axes=(0, 2)), C),
    "fft_empty_axes": (lambda m, a: m.fft.fftn(a, axes=()), X),
    "fft_empty": (lambda m, a: m.fft.fft(a), np.zeros((2, 0), np.complex64)),
    "irfft_one": (lambda m, a: m.fft.irfft(a, n=1), C),
}


@pytest.mark.parametrize("name", sorted(JNP_CASES))
def test_jnp_fft_matches_jax(name):
    f, *args = JNP_CASES[name]
    same(f(jnp, *args), f(jjnp, *args), what=name)


def test_jit_matches_eager():
    # Not bit for bit: under jit the scale and the + 1j are fused into the FFT kernels, and a
    # driver may contract and regroup float operations differently in a fused kernel than in
    # separate ones (the WGSL spec allows both; an H200 gave 15 of 90 components 1-2 ulp
    # apart).  Each of the few rounding steps is within an ulp of the largest magnitude.
    f = lambda a: jnp.fft.rfft2(a * 2.0, s=(6, 8)) + 1j     # noqa: E731
    e, j = np.asarray(f(X)), np.asarray(wjax.jit(f)(X))
    eps = np.finfo(np.float32).eps
    np.testing.assert_allclose(e, j, rtol=0, atol=4 * eps * np.abs(e).max())
    same(j, jjnp.fft.rfft2(X * 2.0, s=(6, 8)) + 1j)


# --------------------------------------------------------------------------- autodiff, vmap

W8 = rand(3, 8, seed=5)
X8 = rand(3, 8, seed=6)
C8 = crand(3, 8, seed=7)
H5 = crand(3, 5, seed=8)

GRAD_CASES = {
    "fft": (lambda m, a: m.sum(m.abs(m.fft.fft(a)) ** 2 * W8), C8),
    "ifft": (lambda m, a: m.sum(m.real(m.fft.ifft(a, axis=0)) * W8), C8),
    "rfft": (lambda m, a: m.sum(m.abs(m.fft.rfft(a)) * W8[:, :5]), X8),
    "rfft_odd": (lambda m, a: m.sum(m.imag(m.fft.rfft(a[:, :7])) * W8[:, :4]), X8),
    "irfft": (lambda m, a: m.sum(m.fft.irfft(a) * W8), H5),
    "irfft_odd": (lambda m, a: m.sum(m.fft.irfft(a, n=9) ** 2), H5),
    "rfft2": (lambda m, a: m.sum(m.abs(m.fft.rfft2(a)) ** 2 * W8[:, :5]), X8),
    "irfft2": (lambda m, a: m.sum(m.fft.irfft2(a) * W8), H5),
    "fftn": (lambda m, a: m.real(m.sum(m.fft.fftn(a) * W8)), C8),
    "hfft": (lambda m, a: m.sum(m.fft.hfft(a) * W8), H5),
    "ihfft": (lambda m, a: m.sum(m.abs(m.fft.ihfft(a)) * W8[:, :5]), X8),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grad_matches_jax(name):
    f, a = GRAD_CASES[name]
    want = jax.grad(lambda v: f(jjnp, v))(a)
    same(wjax.grad(lambda v: f(jnp, v))(a), want, 1e-5, what=name)
    same(wjax.jit(wjax.grad(lambda v: f(jnp, v)))(a), want, 1e-5, what=name + " jit")


@pytest.mark.parametrize("name,f,arg,tangent", [
    ("fft", lambda m, a: m.fft.fft(a, axis=0), C8, C8[::-1] * 1j),
    ("rfft", lambda m, a: m.fft.rfft(a), X8, W8),
    ("irfft", lambda m, a: m.fft.irfft(a), H5, H5 * (0.5 - 1j)),
])
def test_jvp_and_vjp_match_jax(name, f, arg, tangent):
    gy, gt = wjax.jvp(lambda a: f(jnp, a), (arg,), (tangent,))
    wy, wt = jax.jvp(lambda a: f(jjnp, a), (arg,), (tangent,))
    same(gy, wy, what=name)
    same(gt, wt, what=name + " tangent")
    out, g_vjp = wjax.vjp(lambda a: f(jnp, a), arg)
    _, w_vjp = jax.vjp(lambda a: f(jjnp, a), arg)
    ct = np.asarray(out)[::-1] * (1.5 if np.asarray(out).dtype.kind == "f" else (1 + 0.5j))
    ct = ct.astype(np.asarray(out).dtype)
    same(g_vjp(ct)[0], w_vjp(ct)[0], 1e-5, what=name + " vjp")


B = crand(4, 3, 8, seed=9)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap_matches_jax(axis):
    for name, f in [("fft", lambda m, a: m.fft.fft(a)), ("fft2", lambda m, a: m.fft.fft2(a)),
                    ("irfft", lambda m, a: m.fft.irfft(a, axis=0))]:
        same(wjax.vmap(lambda a: f(jnp, a), in_axes=axis)(B),
             jax.vmap(lambda a: f(jjnp, a), in_axes=axis)(B), what=f"{name} in_axes={axis}")


def test_vmap_of_grad_matches_jax():
    f = lambda m: (lambda a: m.sum(m.abs(m.fft.rfft(a))))     # noqa: E731
    same(wjax.vmap(wjax.grad(f(jnp)))(X8), jax.vmap(jax.grad(f(jjnp)))(X8), 1e-5)


# --------------------------------------------------------------------------- lax.fft, errors

def test_lax_fft_types_and_primitive():
    assert [t.name for t in lax.FftType] == [t.name for t in jax.lax.FftType]
    assert [int(t) for t in lax.FftType] == [int(t) for t in jax.lax.FftType]
    for typ in ("fft", "IFFT", lax.FftType.FFT):
        jt = typ if isinstance(typ, str) else jax.lax.FftType.FFT
        same(lax.fft(C8, typ, (8,)), jax.lax.fft(C8, jt, (8,)))
    same(lax.fft(X8, "RFFT", (3, 8)), jax.lax.fft(X8, "RFFT", (3, 8)))
    same(lax.fft(np.arange(4, dtype=np.int32), "FFT", (4,)),
         jax.lax.fft(np.arange(4, dtype=np.int32), "FFT", (4,)))
    same(lax.fft(X8, "FFT", ()), jax.lax.fft(X8, "FFT", ()))
    y = lax.fft_p.bind(jnp.asarray(C8), fft_type=lax.FftType.IFFT, fft_lengths=(3, 8))
    same(y, jax.lax.fft(C8, "IFFT", (3, 8)))
    j = wjax.make_jaxpr(lambda a: lax.fft(a, "IRFFT", (8,)))(H5)
    assert [e.prim.name for e in j.jaxpr.eqns] == ["fft"]


@pytest.mark.parametrize("call", [
    lambda L, N: L.fft(N.ones(4), "foo", (4,)),
    lambda L, N: L.fft(N.ones(4), 7, (4,)),
    lambda L, N: L.fft(N.ones(4, N.complex64), "RFFT", (4,)),
    lambda L, N: L.fft(N.ones(4, N.float32), "RFFT", (5,)),
    lambda L, N: L.fft(N.ones(4, N.float16), "RFFT", (4,)),
    lambda L, N: L.fft(N.ones((2, 4)), "FFT", (3, 2, 4)),
    lambda L, N: L.fft_p.bind(N.ones(4), fft_type=L.FftType.FFT, fft_lengths=(4,)),
    lambda L, N: N.fft.fft(N.ones(4), n=0),
    lambda L, N: N.fft.fft(N.ones(4), axis=1),
    lambda L, N: N.fft.fft(N.ones(4), norm="bad"),
    lambda L, N: N.fft.fft(N.ones(())),
    lambda L, N: N.fft.fft([1.0, 2.0]),
    lambda L, N: N.fft.fft(N.ones((4, 4)), axis=[0]),
    lambda L, N: N.fft.fftn(N.ones((4, 4)), axes=(0, 0)),
    lambda L, N: N.fft.fftn(N.ones((4, 4)), s=(2,), axes=(0, 1)),
    lambda L, N: N.fft.fft2(N.ones((4, 4, 4)), axes=(0, 1, 2)),
    lambda L, N: N.fft.rfft(N.ones(4, N.complex64)),
    lambda L, N: N.fft.fftfreq([4]),
    lambda L, N: N.fft.rfftfreq(4, d=[1.0]),
    lambda L, N: N.fft.fftshift([1.0, 2.0]),
])
def test_bad_input_raises_jax_class(call):
    with pytest.raises(Exception) as theirs:
        call(jax.lax, jjnp)
    with pytest.raises(type(theirs.value)) as ours:
        call(lax, jnp)
    assert str(ours.value)


def test_public_names_match_jax():
    theirs = sorted(n for n in dir(jjnp.fft) if not n.startswith("_"))
    assert sorted(jnp.fft.__all__) == theirs
    assert all(callable(getattr(jnp.fft, n)) for n in theirs)
    assert [n for n in dir(jax.lax) if "fft" in n.lower()] == \
        [n for n in dir(lax) if "fft" in n.lower()]


def test_elementwise_consumers_fuse_into_the_last_pass():
    """norm scales and a power spectrum are computed by the FFT's last pass (no extra kernel):
    the same kernels as the bare transform, JAX's values."""
    x = rand(4, 64, seed=10)
    c = (x + 1j * x[::-1]).astype(np.complex64)

    def kernels(f, a):
        return wjax.jit(f).lower(a).as_text().count("// ---- kernel")

    bare = kernels(lambda a: jnp.fft.fft(a), c)
    for f, a in [(lambda m, a: m.fft.fft(a, norm="ortho"), c),
                 (lambda m, a: m.fft.fft(a, norm="forward") * a + 1, c),
                 (lambda m, a: m.abs(m.fft.fft(a.astype(np.complex64))) ** 2, x)]:
        assert kernels(lambda v: f(jnp, v), a) == bare
        same(wjax.jit(lambda v: f(jnp, v))(a), f(jjnp, a))


# --------------------------------------------------------------------------- jax.scipy.fft

def _scipy_fft_pair():
    import jax.scipy.fft as jfft

    import wjax.scipy.fft as wfft
    return wfft, jfft


@pytest.mark.parametrize("n", [1, 2, 5, 8, 12])
@pytest.mark.parametrize("norm", [None, "backward", "ortho"])
def test_dct_idct_match_jax(n, norm):
    wfft, jfft = _scipy_fft_pair()
    x = np.random.RandomState(n).randn(3, n).astype(np.float32)
    for name in ("dct", "idct"):
        for kw in ({}, {"n": n + 3}, {"n": max(1, n - 1)}, {"axis": 0}):
            got = getattr(wfft, name)(x, norm=norm, **kw)
            want = getattr(jfft, name)(x, norm=norm, **kw)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())
    # idct inverts dct
    np.testing.assert_allclose(wfft.idct(wfft.dct(x, norm=norm), norm=norm), x, atol=1e-5)


@pytest.mark.parametrize("kw", [{}, {"s": (3,)}, {"s": (3, 2), "axes": (0, 2)},
                                {"axes": (0, 2), "s": (3,)}, {"norm": "ortho"},
                                {"axes": [-1, 0], "norm": "ortho"}])
def test_dctn_idctn_match_jax(kw):
    wfft, jfft = _scipy_fft_pair()
    x = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)
    for name in ("dctn", "idctn"):
        got, want = getattr(wfft, name)(x, **kw), getattr(jfft, name)(x, **kw)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


def test_dct_complex_int_grad_jit_vmap_match_jax():
    wfft, jfft = _scipy_fft_pair()
    rng = np.random.RandomState(2)
    z = (rng.randn(4, 6) + 1j * rng.randn(4, 6)).astype(np.complex64)
    np.testing.assert_allclose(wfft.dct(z), jfft.dct(z), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(wfft.idctn(z, norm="ortho"), jfft.idctn(z, norm="ortho"),
                               rtol=2e-5, atol=2e-5)
    k = np.arange(5)
    assert wfft.dct(k).dtype == jfft.dct(k).dtype
    np.testing.assert_allclose(wfft.dct(k), jfft.dct(k), rtol=2e-5, atol=2e-5)
    x = rng.randn(4, 6).astype(np.float32)
    w = np.linspace(-1, 1, 6).astype(np.float32)

    def loss(m, f):
        return lambda x: m.numpy.sum(f.dct(x, norm="ortho") * w) + m.numpy.sum(f.idct(x) ** 2)
    np.testing.assert_allclose(wjax.grad(loss(wjax, wfft))(x), jax.grad(loss(jax, jfft))(x),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(wjax.jit(wjax.vmap(wfft.dct))(x), jax.jit(jax.vmap(jfft.dct))(x),
                               rtol=2e-5, atol=2e-5)


def test_dct_bad_calls_raise_like_jax():
    wfft, jfft = _scipy_fft_pair()
    x = np.ones(4, np.float32)
    for f in (wfft, jfft):
        with pytest.raises(NotImplementedError):
            f.dct(x, type=3)
        with pytest.raises(NotImplementedError):
            f.idctn(x, type=1)
        with pytest.raises(ValueError):
            f.dct(x, norm="forward")
        with pytest.raises(ValueError):
            f.idctn(x, norm="bogus")
        with pytest.raises(ValueError):
            f.dctn(np.ones((2, 2), np.float32), s=(2, 2, 2))
        with pytest.raises(TypeError):
            f.dct([1.0, 2.0])
