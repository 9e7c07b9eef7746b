"""complex64 end to end, against real JAX (CPU, x64 off) and NumPy complex128.

Creation, printing and dtype rules; every complex-capable jnp/lax function in a few tables run
under ``jit`` (and ``vmap``) next to JAX; autodiff as JAX defines it (the conjugate convention
of ``grad``, ``holomorphic=True``); the accuracy of the elementwise math over a wide range of
magnitudes; and a hand-written kernel rule reading and writing complex buffers.  The per-op
special values (inf/NaN components, branch cuts) are checked op by op in tests/test_ops.py
(WGSL against the references in wjax/_src/prims/cmath_ref.py, the references against JAX).

Accuracy (documented in README.md): finite results agree with NumPy's complex128 value within
a normwise relative error of 3e-6 (|got - want| <= 3e-6 |want|), except ``exp2`` and ``pow``,
whose float32 phase ``Im(z) ln 2`` (``Im(y log x)``) is rounded as in JAX: 2e-5 for |z| <= 30.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", False)

RNG = np.random.RandomState(0)


def crand(*shape, scale=1.0, seed=None):
    r = RNG if seed is None else np.random.RandomState(seed)
    return ((r.randn(*shape) + 1j * r.randn(*shape)) * scale).astype(np.complex64)


def close(got, want, rtol=2e-5, atol=1e-5, what=""):
    """Same dtype and shape; NaN where NaN, inf where inf (per component); finite values within
    a normwise tolerance."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if got.dtype.kind not in "fc":
        assert (got == want).all(), f"{what}: {got} != {want}"
        return
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    for pg, pw in ((g.real, w.real), (g.imag, w.imag)):
        assert (np.isnan(pg) == np.isnan(pw)).all(), f"{what}: NaN mismatch {got} vs {want}"
        inf = np.isinf(pw)
        assert (pg[inf] == pw[inf]).all(), f"{what}: inf mismatch {got} vs {want}"
    fin = np.isfinite(g) & np.isfinite(w)
    err = np.abs(g[fin] - w[fin])
    bad = err > atol + rtol * np.abs(w[fin])
    assert not bad.any(), f"{what}: got {got[fin][bad][:5]}, want {want[fin][bad][:5]}"


# --------------------------------------------------------------------------- creation, printing

@pytest.mark.parametrize("make", [
    lambda m: m.numpy.asarray(1j),
    lambda m: m.numpy.array([1 + 2j, 3 - 0j]),
    lambda m: m.numpy.array([[1.5 - 2.25j, 0j], [np.nan + 1j, -np.inf * 1j]]),
    lambda m: m.numpy.asarray(np.array([1 + 2j, 5j])),            # complex128 -> complex64
    lambda m: m.numpy.zeros((2, 2), m.numpy.complex64),
    lambda m: m.numpy.arange(3) + 1j,                              # weak complex
    lambda m: m.numpy.float16(2) * 1j,
    lambda m: m.numpy.array([1, 2], m.numpy.int8) * (1 + 1j),
    lambda m: m.numpy.complex64(2 - 1j),
    lambda m: m.numpy.ones(3).astype(complex),
    lambda m: m.numpy.full((2,), 1j),
    lambda m: m.lax.complex(m.numpy.float32(1), m.numpy.float32(-2)),
    lambda m: m.numpy.array([1 + 2j]).real,
    lambda m: m.numpy.array([1 + 2j]).imag,
    lambda m: m.numpy.asarray(3.0).imag,
    lambda m: m.numpy.conj(m.numpy.float32(1)),
    lambda m: m.lax.conj(1.0),
    lambda m: m.numpy.zeros(0, m.numpy.complex64),
])
def test_creation_and_repr_like_jax(make):
    ours, theirs = make(wjax), make(jax)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)
    assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_conversions_like_jax():
    for m in (wjax, jax):
        x = m.numpy.array([1 + 2j, -3.5j])
        s = m.numpy.asarray(2 - 1j)
        assert x.tolist() == [(1 + 2j), -3.5j] and s.item() == 2 - 1j
        assert complex(s) == 2 - 1j and np.asarray(x).dtype == np.complex64
    with pytest.raises(TypeError, match="scalar"):
        complex(jnp.array([1j, 2j]))


def test_complex128_requests_narrow_with_jax_warning():
    with pytest.warns(UserWarning, match="complex128"):
        assert jnp.zeros(2, jnp.complex128).dtype == np.complex64
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # values narrow silently, as in JAX
        assert jnp.asarray(np.ones(2, np.complex128)).dtype == np.complex64
        assert jnp.asarray([1.0], dtype=complex).dtype == np.complex64


def test_astype_complex_to_real_warns_like_jax():
    for m in (wjax, jax):
        with pytest.warns(DeprecationWarning, match="Casting from complex to real"):
            r = m.numpy.array([1 + 2j, -3 + 1j]).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(r), [1.0, -3.0])


def test_dtype_rules_like_jax():
    specs = [1j, 1.0, 2, np.complex64, np.float16, np.float32, np.int8, np.uint32, np.bool_,
             jnp.zeros(1, jnp.complex64)]
    jspecs = specs[:-1] + [jjnp.zeros(1, jjnp.complex64)]
    for a, ja in zip(specs, jspecs):
        for b, jb in zip(specs, jspecs):
            ours = wjax.dtypes.result_type(a, b, return_weak_type_flag=True)
            theirs = jax.dtypes.result_type(ja, jb, return_weak_type_flag=True)
            assert (np.dtype(ours[0]), ours[1]) == (np.dtype(theirs[0]), theirs[1]), (a, b)
            assert jnp.result_type(a, b) == jjnp.result_type(ja, jb), (a, b)
    assert str(jnp.finfo(jnp.complex64)) == str(jjnp.finfo(jjnp.complex64))
    assert jnp.finfo(jnp.complex64).dtype == np.float32
    assert jnp.issubdtype(jnp.complex64, jnp.complexfloating)
    assert jnp.dtype(jnp.complex64) == jjnp.dtype(jjnp.complex64) == np.complex64


def test_complex_predicates_like_jax():
    x = np.array([1 + 0j, 1j, np.nan, 2 - 1e-30j], np.complex64)
    for name in ("iscomplex", "isreal"):
        np.testing.assert_array_equal(getattr(jnp, name)(x), getattr(jjnp, name)(x))
        np.testing.assert_array_equal(getattr(jnp, name)(x.real), getattr(jjnp, name)(x.real))
    for v in (x, x.real, 1j, 1.0, jnp.asarray(x)):
        jv = jjnp.asarray(v) if isinstance(v, wjax.Array) else v
        assert jnp.iscomplexobj(v) == jjnp.iscomplexobj(jv)
        assert jnp.isrealobj(v) == jjnp.isrealobj(jv)


def test_float16_and_complex_promote_as_jax():
    if not wjax._src.backend.runtime.get().has_f16:
        pytest.skip("the adapter has no shader-f16")
    h = np.array([1.5, -2.0], np.float16)
    for got, want in ((jnp.asarray(h) * 1j, jjnp.asarray(h) * 1j),
                      (jnp.asarray(h) + jnp.ones(2, jnp.complex64),
                       jjnp.asarray(h) + jjnp.ones(2, jjnp.complex64))):
        assert got.dtype == want.dtype and got.weak_type == want.weak_type
        close(got, want)


# --------------------------------------------------------------------------- functions vs JAX

X = crand(3, 4, seed=1)
Y = crand(3, 4, seed=2)
V = crand(4, seed=3)
M = crand(4, 5, seed=4)
SP = np.array([0, -0.0, 1, -1, np.inf, -np.inf, np.nan, 2.5], np.float32)
SPECIAL = np.array([complex(a, b) for a in SP for b in SP], np.complex64)

ELEMENTWISE = {
    "add": lambda m: X + Y, "sub": lambda m: X - Y, "mul": lambda m: X * Y,
    "div": lambda m: X / Y, "neg": lambda m: -m.numpy.asarray(X),
    "add_weak": lambda m: m.numpy.asarray(X) + 2j, "mul_real": lambda m: m.numpy.asarray(X) * 2.5,
    "exp": lambda m: m.numpy.exp(X), "log": lambda m: m.numpy.log(X),
    "log1p": lambda m: m.numpy.log1p(X * 0.01), "expm1": lambda m: m.numpy.expm1(X * 0.01),
    "sqrt": lambda m: m.numpy.sqrt(X), "rsqrt": lambda m: m.lax.rsqrt(X),
    "sin": lambda m: m.numpy.sin(X), "cos": lambda m: m.numpy.cos(X),
    "tan": lambda m: m.numpy.tan(X), "sinh": lambda m: m.numpy.sinh(X),
    "cosh": lambda m: m.numpy.cosh(X), "tanh": lambda m: m.numpy.tanh(X),
    "asin": lambda m: m.numpy.arcsin(X), "acos": lambda m: m.numpy.arccos(X),
    "atan": lambda m: m.numpy.arctan(X), "asinh": lambda m: m.numpy.arcsinh(X),
    "acosh": lambda m: m.numpy.arccosh(X), "atanh": lambda m: m.numpy.arctanh(X),
    "power": lambda m: m.numpy.power(X, Y), "power_int": lambda m: m.numpy.asarray(X) ** 3,
    "power_real": lambda m: m.numpy.asarray(X) ** 0.5,
    "int_pow_neg": lambda m: m.lax.integer_pow(X, -2),
    "square": lambda m: m.numpy.square(X), "reciprocal": lambda m: m.numpy.reciprocal(X),
    "sign": lambda m: m.numpy.sign(X), "exp2": lambda m: m.numpy.exp2(X),
    "log10": lambda m: m.numpy.log10(X), "log2": lambda m: m.numpy.log2(X),
    "abs": lambda m: m.numpy.abs(X), "angle": lambda m: m.numpy.angle(X),
    "angle_deg": lambda m: m.numpy.angle(X, deg=True), "real": lambda m: m.numpy.real(X),
    "imag": lambda m: m.numpy.imag(X), "conj": lambda m: m.numpy.conj(X),
    "conjugate_real": lambda m: m.numpy.conjugate(X.real),
    "lax_complex": lambda m: m.lax.complex(X.real, Y.imag),
    "lax_conj_real": lambda m: m.lax.conj(Y.imag),
    "logistic": lambda m: m.lax.logistic(X), "sinc": lambda m: m.numpy.sinc(X * 0.3),
    "deg2rad": lambda m: m.numpy.deg2rad(X), "rint": lambda m: m.numpy.rint(X * 3),
    "round": lambda m: m.numpy.round(X * 3, 1), "nan_to_num": lambda m: m.numpy.nan_to_num(SPECIAL),
    "eq": lambda m: m.numpy.asarray(SPECIAL) == SPECIAL[::-1],
    "ne": lambda m: m.numpy.asarray(SPECIAL) != SPECIAL[::-1],
    "lt": lambda m: m.numpy.asarray(X) < Y, "ge": lambda m: m.numpy.greater_equal(X, Y),
    "lt_ties": lambda m: m.numpy.less(m.numpy.asarray(X), X.real + 1j),
    "isnan": lambda m: m.numpy.isnan(SPECIAL), "isinf": lambda m: m.numpy.isinf(SPECIAL),
    "isfinite": lambda m: m.numpy.isfinite(SPECIAL),
    "isclose": lambda m: m.numpy.isclose(X, X + 1e-7),
    "where": lambda m: m.numpy.where(X.real > 0, X, Y),
    "select": lambda m: m.lax.select(X.imag > 0, X, Y),
    "astype_int": lambda m: m.numpy.asarray(SPECIAL[SPECIAL.real < 1e30]).real.astype(np.int32),
    "to_bool": lambda m: m.numpy.asarray(SPECIAL).astype(bool),
    "from_int": lambda m: m.numpy.arange(4).astype(np.complex64),
    "from_bool": lambda m: m.numpy.asarray([True, False]).astype(np.complex64),
    "logical_not": lambda m: m.numpy.logical_not(SPECIAL),
}

REDUCE_ETC = {
    "sum": lambda m: m.numpy.sum(X), "sum_axis": lambda m: m.numpy.sum(X, axis=0),
    "prod": lambda m: m.numpy.prod(X, axis=1), "mean": lambda m: m.numpy.mean(X, axis=1),
    "var": lambda m: m.numpy.var(X), "std": lambda m: m.numpy.std(X, axis=0, ddof=1),
    "var_where": lambda m: m.numpy.var(X, where=X.real > -0.5),
    "nansum": lambda m: m.numpy.nansum(SPECIAL[SPECIAL.real == 0]),
    "cumsum": lambda m: m.numpy.cumsum(X, axis=1), "cumprod": lambda m: m.numpy.cumprod(X, axis=0),
    "dot": lambda m: m.numpy.dot(X, M), "matmul": lambda m: m.numpy.asarray(X) @ M,
    "matvec": lambda m: m.numpy.matmul(X, V), "vdot": lambda m: m.numpy.vdot(X, Y),
    "inner": lambda m: m.numpy.inner(X, Y), "outer": lambda m: m.numpy.outer(V, V),
    "tensordot": lambda m: m.numpy.tensordot(X, M, axes=1),
    "einsum": lambda m: m.numpy.einsum("ij,jk,k->i", X, M, V[:1].repeat(5)),
    "dot_general": lambda m: m.lax.dot_general(X, Y, (((1,), (1,)), ((0,), (0,)))),
    "trace": lambda m: m.numpy.trace(X), "linalg_norm": lambda m: m.numpy.linalg.norm(X),
    "index": lambda m: m.numpy.asarray(X)[1:, ::2],
    "take": lambda m: m.numpy.take(X, m.numpy.array([5, 0, 7])),
    "take_fill": lambda m: m.numpy.take(X, m.numpy.array([0, 99]), mode="fill"),
    "gather_int": lambda m: m.numpy.asarray(X)[m.numpy.array([2, 0]), m.numpy.array([1, 3])],
    "bool_mask": lambda m: m.numpy.where(m.numpy.asarray(X).real > 0, X, 0),
    "at_set": lambda m: m.numpy.asarray(X).at[1, 2].set(5j),
    "at_add": lambda m: m.numpy.asarray(X).at[m.numpy.array([0, 0, 2])].add(1 - 1j),
    "at_mul": lambda m: m.numpy.asarray(X).at[m.numpy.array([0, 2, 0]), 1].multiply(2j - 0.5),
    "concatenate": lambda m: m.numpy.concatenate([X, Y], axis=1),
    "stack": lambda m: m.numpy.stack([X, Y]),
    "reshape": lambda m: m.numpy.reshape(X, (2, 6)), "transpose": lambda m: m.numpy.transpose(X),
    "pad": lambda m: m.numpy.pad(X, ((1, 0), (0, 2)), constant_values=1 - 2j),
    "flip": lambda m: m.numpy.flip(X, 1), "roll": lambda m: m.numpy.roll(X, 2, axis=1),
    "tile": lambda m: m.numpy.tile(V, 2), "broadcast": lambda m: m.numpy.broadcast_to(V, (2, 4)),
    "tril": lambda m: m.numpy.tril(X), "diag": lambda m: m.numpy.diag(V),
    "sort": lambda m: m.numpy.sort(SPECIAL), "argsort": lambda m: m.numpy.argsort(X.ravel()),
    "sort_axis0": lambda m: m.numpy.sort(X, axis=0), "ptp_real": lambda m: m.numpy.ptp(X.real),
    "dynamic_slice": lambda m: m.lax.dynamic_slice(X, (1, 1), (2, 2)),
    "dynamic_update": lambda m: m.lax.dynamic_update_slice(X, Y[:1, :2], (2, 1)),
    "array_equal": lambda m: m.numpy.array_equal(X, X),
    "convolve": lambda m: m.numpy.convolve(V, X[0, :3]),
    "correlate": lambda m: m.numpy.correlate(X[0, :2], V, mode="full"),
    "conv": lambda m: m.lax.conv(X[None, None], M[None, None, :2, :2], (1, 1), "SAME"),
    "unique": lambda m: m.numpy.unique(m.numpy.concatenate([X[0], X[0, ::-1]]), size=4),
    "kron": lambda m: m.numpy.kron(V[:2], V[2:]), "diff": lambda m: m.numpy.diff(X, axis=1),
    "average": lambda m: m.numpy.average(X, axis=0, weights=X.real[:, 0] ** 2),
    "count_nonzero": lambda m: m.numpy.count_nonzero(SPECIAL),
}


def _run_table(table, fn_wrap=lambda f: f):
    names = sorted(table)
    ours = wjax.jit(lambda: {n: table[n](wjax) for n in names})()
    theirs = jax.jit(lambda: {n: table[n](jax) for n in names})()
    bad = []
    for n in names:
        try:
            close(ours[n], theirs[n], what=n)
        except AssertionError as e:
            bad.append(str(e))
    assert not bad, "\n".join(bad)


def test_elementwise_functions_like_jax():
    _run_table(ELEMENTWISE)


def test_reductions_products_indexing_and_views_like_jax():
    _run_table(REDUCE_ETC)


def test_eager_matches_jit_on_complex():
    for n in ("exp", "div", "asin", "abs", "lt"):
        close(ELEMENTWISE[n](wjax), wjax.jit(lambda: ELEMENTWISE[n](wjax))(), rtol=0, atol=0,
              what=n)
    for n in ("sum", "matmul", "cumprod", "at_mul", "sort"):
        close(REDUCE_ETC[n](wjax), wjax.jit(lambda: REDUCE_ETC[n](wjax))(), rtol=1e-6, atol=1e-6,
              what=n)


def test_vmap_of_complex_functions_like_jax():
    def f(m, x, y):
        return (m.numpy.sum(m.numpy.exp(x) * m.numpy.conj(y)), m.numpy.abs(x) + m.numpy.angle(y),
                m.numpy.sort(x), m.numpy.vdot(x, y), m.numpy.cumsum(x * 1j))
    ours = wjax.vmap(lambda x, y: f(wjax, x, y))(X, Y)
    theirs = jax.vmap(lambda x, y: f(jax, x, y))(X, Y)
    for a, b in zip(ours, theirs):
        close(a, b)
    ours = wjax.vmap(lambda x: f(wjax, x, V), in_axes=1)(M)
    theirs = jax.vmap(lambda x: f(jax, x, V), in_axes=1)(M)
    for a, b in zip(ours, theirs):
        close(a, b)


@pytest.mark.parametrize("call,exc,match", [
    (lambda m: m.lax.lt(m.numpy.array([1j]), m.numpy.array([2j])), TypeError, "lt does not accept"),
    (lambda m: m.numpy.floor(m.numpy.array([1j])), TypeError, "floor does not accept"),
    (lambda m: m.numpy.clip(m.numpy.array([1j]), 0, 1), ValueError, "Complex values have no"),
    (lambda m: m.numpy.hypot(m.numpy.array([1j]), 1.0), ValueError, "hypot"),
    (lambda m: m.numpy.signbit(m.numpy.array([1j])), ValueError, "signbit"),
    (lambda m: m.numpy.floor_divide(m.numpy.array([1j]), 2), TypeError, "floor_divide"),
    (lambda m: m.numpy.copysign(m.numpy.array([1j]), 1.0), TypeError, "copysign"),
    (lambda m: m.numpy.isposinf(m.numpy.array([1j])), ValueError, "isposinf"),
    (lambda m: m.lax.complex(m.numpy.array([1.0], m.numpy.float16),
                             m.numpy.array([1.0], m.numpy.float16)), TypeError, "complex"),
    (lambda m: m.lax.add(m.numpy.float32(1), 1j), TypeError, "complex"),
    (lambda m: m.numpy.argmax(m.numpy.array([1j])), TypeError, "complex64"),
    (lambda m: m.numpy.argmin(m.numpy.array([1j, 2])), TypeError, "complex64"),
    (lambda m: m.numpy.clip(m.numpy.array([1.0]), 0j, 1), ValueError, "Complex values have no"),
    (lambda m: m.numpy.max(m.numpy.zeros((0,), m.numpy.complex64)), ValueError, "zero-size"),
    (lambda m: m.numpy.linalg.solve(m.numpy.ones((3, 3), m.numpy.complex64),
                                    m.numpy.ones(2, m.numpy.complex64)), ValueError, "size|shape"),
    (lambda m: m.numpy.linalg.det(m.numpy.ones((2, 3), m.numpy.complex64)), ValueError,
     r"\(2, 3\)"),
    (lambda m: m.lax.linalg.lu(m.numpy.ones(3, m.numpy.complex64)), TypeError, "rank"),
    (lambda m: m.lax.linalg.triangular_solve(m.numpy.eye(2, dtype=m.numpy.complex64),
                                             m.numpy.ones((2, 2)), left_side=True),
     TypeError, "dtype"),
    (lambda m: m.lax.top_k(m.numpy.array([1j]), 1), ValueError, "top_k is not compatible"),
    (lambda m: m.numpy.interp(m.numpy.array([1j]), m.numpy.arange(2.0), m.numpy.arange(2.0)),
     ValueError, "complex x"),
    (lambda m: m.lax.bitcast_convert_type(m.numpy.array([1j]), m.numpy.float32), TypeError,
     "complex"),
])
def test_complex_errors_like_jax(call, exc, match):
    for m in (jax, wjax):
        with pytest.raises(exc, match=match):
            call(m)


# --------------------------------------------------------------------------- autodiff

def _f_abs2(m, z):
    x, y = m.numpy.real(z), m.numpy.imag(z)
    return x ** 2 + y ** 2


GRADS = {   # real-valued functions of complex inputs: JAX's grad is the conjugate convention
    "abs2_parts": (_f_abs2, 3.0 + 4j),
    "abs2": (lambda m, z: m.numpy.abs(z) ** 2, 3.0 + 4j),
    "abs": (lambda m, z: m.numpy.abs(z), -1.5 + 0.5j),
    "real_exp": (lambda m, z: m.numpy.real(m.numpy.exp(z)), 0.3 - 1.2j),
    "imag": (lambda m, z: m.numpy.imag(z * z), 0.3 - 1.2j),
    "conj_prod": (lambda m, z: m.numpy.real(m.numpy.conj(z) * m.numpy.sin(z)), 0.7 + 0.2j),
    "angle": (lambda m, z: m.numpy.angle(z * (1 + 1j)), 0.7 + 0.2j),
    "inverse_fns": (lambda m, z: m.numpy.real(m.numpy.sqrt(z) + m.numpy.arctan(z)
                                             + m.numpy.arcsinh(z) + m.numpy.log1p(z)), 0.3 + 0.7j),
    "sum_abs_tanh": (lambda m, z: m.numpy.sum(m.numpy.abs(m.numpy.tanh(z)) ** 2),
                     np.array([1 + 1j, 0.5 - 2j], np.complex64)),
    "matrix": (lambda m, a: m.numpy.real(m.numpy.trace(a @ m.numpy.conj(a.T))),
               crand(3, 3, seed=5)),
    "vdot": (lambda m, a: m.numpy.abs(m.numpy.vdot(a, a[::-1] * 1j)), crand(3, seed=6)),
    "prod_cumsum": (lambda m, a: m.numpy.real(m.numpy.prod(a * 1j) + m.numpy.sum(
        m.numpy.cumsum(a) ** 2)), crand(3, seed=7)),
    "var_mean": (lambda m, a: m.numpy.var(a) + m.numpy.abs(m.numpy.mean(a)), crand(4, seed=8)),
    "scatter": (lambda m, a: m.numpy.sum(m.numpy.abs(a.at[1].multiply(2j).at[0].add(a[2]))),
                crand(3, seed=9)),
    "select_sort": (lambda m, a: m.numpy.sum(m.numpy.real(m.numpy.where(
        a.real > 0, a * a, m.numpy.exp(a)) * m.numpy.sort(a))), crand(4, seed=10)),
    "pow": (lambda m, a: m.numpy.real(m.numpy.sum(a ** (0.5 + 1j))), crand(3, seed=11) + 2),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_grad_of_real_valued_functions_like_jax(name):
    f, x = GRADS[name]
    close(wjax.grad(lambda z: f(wjax, z))(x), jax.grad(lambda z: f(jax, z))(x), rtol=1e-4,
          atol=1e-5, what=name)


def test_grad_conjugate_convention():
    # the cookbook: grad(f)(z) for f = |z|^2 is 2 conj(z), and for f = imag(z) it is -1j
    close(wjax.grad(lambda z: _f_abs2(wjax, z))(3.0 + 4j), np.complex64(6 - 8j), rtol=0, atol=0)
    close(wjax.grad(jnp.imag)(3.0 + 4j), np.complex64(-1j), rtol=0, atol=0)
    close(wjax.grad(jnp.real)(3.0 + 4j), np.complex64(1), rtol=0, atol=0)


HOLO = {   # holomorphic functions: JAX's holomorphic=True derivatives
    "sin": (lambda m, z: m.numpy.sin(z), 1 + 2j),
    "poly": (lambda m, z: z ** 3 + 2 * z + 1j, 1 + 2j),
    "exp_log": (lambda m, z: m.numpy.exp(z) * m.numpy.log(z), 0.5 - 0.7j),
    "div": (lambda m, z: (z + 1j) / (z * z + 2), 0.5 - 0.7j),
    "inverse": (lambda m, z: m.numpy.arcsin(z) + m.numpy.arctanh(z) + m.numpy.arccosh(z * 3)
                + m.numpy.sqrt(z), 0.4 + 0.3j),
    "trig": (lambda m, z: m.numpy.tan(z) + m.numpy.tanh(z) + m.numpy.cosh(z) + m.lax.rsqrt(z)
             + m.numpy.expm1(z) + m.numpy.exp2(z) + m.lax.logistic(z), 0.4 + 0.3j),
}


@pytest.mark.parametrize("name", sorted(HOLO))
def test_holomorphic_derivatives_like_jax(name):
    f, z = HOLO[name]
    fw, fj = (lambda z: f(wjax, z)), (lambda z: f(jax, z))
    t, ct = np.complex64(0.3 - 0.8j), np.complex64(-0.2 + 1.1j)

    def derivatives(m, g):   # grad (holomorphic), jvp, vjp: one jit, one compile
        return m.jit(lambda z, t, ct: (m.grad(g, holomorphic=True)(z), *m.jvp(g, (z,), (t,)),
                                       m.vjp(g, z)[1](ct)[0]))
    ours, theirs = derivatives(wjax, fw)(z, t, ct), derivatives(jax, fj)(z, t, ct)
    for what, a, b in zip(("grad", "jvp primal", "jvp tangent", "vjp"), ours, theirs):
        close(a, b, rtol=1e-4, what=f"{name} {what}")
    if name in ("sin", "poly"):      # Jacobians and the Hessian (compiles are costly: two ops)
        zs = np.array([z, z * 0.5 + 0.1j], np.complex64)
        vf = lambda m, g: (lambda v: m.vmap(g)(v))   # noqa: E731
        for jac in ("jacfwd", "jacrev"):
            close(getattr(wjax, jac)(vf(wjax, fw), holomorphic=True)(zs),
                  getattr(jax, jac)(vf(jax, fj), holomorphic=True)(zs), rtol=1e-4, what=jac)
        close(wjax.hessian(fw, holomorphic=True)(z), jax.hessian(fj, holomorphic=True)(z),
              rtol=2e-4, atol=1e-4, what="hessian")


def test_vjp_jvp_of_non_holomorphic_and_mixed_functions_like_jax():
    def f(m, x, z):                       # real and complex inputs, complex and real outputs
        return (m.numpy.conj(z) * x + m.numpy.abs(z) * 1j, m.numpy.real(z * z) * x)
    x, z = np.float32(1.5), crand(3, seed=12)
    ys_w, pb_w = wjax.vjp(lambda x, z: f(wjax, x, z), x, z)
    ys_j, pb_j = jax.vjp(lambda x, z: f(jax, x, z), x, z)
    cts = (crand(3, seed=13), np.ones(3, np.float32))
    for a, b in zip(pb_w(cts), pb_j(cts)):
        close(a, b, rtol=1e-4)
    tw = wjax.jvp(lambda x, z: f(wjax, x, z), (x, z), (np.float32(0.5), crand(3, seed=14)))[1]
    tj = jax.jvp(lambda x, z: f(jax, x, z), (x, z), (np.float32(0.5), crand(3, seed=14)))[1]
    for a, b in zip(tw, tj):
        close(a, b, rtol=1e-4)
    # lax.complex: its transpose splits the cotangent (real part, minus imaginary part)
    g = lambda m: m.grad(lambda a, b: m.numpy.abs(m.lax.complex(a, b) ** 2),  # noqa: E731
                         argnums=(0, 1))(1.5, -0.5)
    for a, b in zip(g(wjax), g(jax)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)


def test_jit_and_vmap_of_complex_gradients_like_jax():
    f = lambda m: (lambda z: m.numpy.abs(m.numpy.log(z)) + m.numpy.real(z ** 2.5))  # noqa: E731
    zs = crand(4, seed=15) + 1
    close(wjax.jit(wjax.vmap(wjax.grad(f(wjax))))(zs), jax.jit(jax.vmap(jax.grad(f(jax))))(zs),
          rtol=1e-4)


@pytest.mark.parametrize("call", [
    "grad(lambda z: z * 2.0, holomorphic=True)(3.0)",
    "grad(lambda z: z * z)(1j)",
    "grad(lambda z: jnp.real(z), holomorphic=True)(1j)",
    "jacfwd(lambda z: z)(jnp.array([1j]))",
    "jacfwd(lambda z: jnp.abs(z), holomorphic=True)(jnp.array([1j]))",
    "jacrev(lambda z: z * z)(jnp.array([1j]))",
    "jacrev(lambda z: z * z, holomorphic=True)(jnp.array([1.0]))",
])
def test_autodiff_dtype_errors_like_jax(call):
    msgs = []
    for m, np_ in ((jax, jjnp), (wjax, jnp)):
        with pytest.raises(TypeError) as e:
            eval("m." + call, {"m": m, "jnp": np_})
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


# --------------------------------------------------------------------------- accuracy

UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh",
         "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "abs", "sign", "logistic"]


def test_elementwise_accuracy_against_numpy_complex128():
    """Every unary op on 4000 values with magnitudes from 1e-4 to 1e4 (components of either
    sign, near the unit circle and the branch points too): the normwise relative error
    against the complex128 value (NumPy's, through the references) is at most 3e-6."""
    r = np.random.RandomState(42)
    n = 3000
    mag = np.exp(r.uniform(-9, 9, n))
    z = (mag * np.exp(1j * r.uniform(-np.pi, np.pi, n))).astype(np.complex64)
    near = np.array([complex(a, b) for a in (1, -1, 0.999, 1.001, 1e-4) for b in
                     (0, 1e-7, -1e-3, 0.5, -1)], np.complex64)
    unit = np.exp(1j * r.uniform(-np.pi, np.pi, 300)).astype(np.complex64)
    z = np.concatenate([z, near, unit, 1j * unit * 1.0001])
    from wjax._src.core.primitive import REGISTRY
    got = wjax.jit(lambda a: {p: REGISTRY[p].bind(a) for p in UNARY})(z)
    bad = []
    for p in UNARY:
        want = REGISTRY[p].reference(z)
        w128 = want.astype(np.complex128)
        g = np.asarray(got[p]).astype(np.complex128)
        fin = np.isfinite(w128)
        err = np.abs(g[fin] - w128[fin]) / np.maximum(np.abs(w128[fin]), 1e-30)
        if (err > 3e-6).any():
            bad.append(f"{p}: max err {err.max():.2e} at {z[fin][err.argmax()]}")
    # exp2/pow: the float32 phase rounds as JAX's does
    zs = z[np.abs(z) <= 30]
    e2 = np.asarray(wjax.jit(jnp.exp2)(zs)).astype(np.complex128)
    w2 = np.exp2(zs.astype(np.complex128))
    err = np.abs(e2 - w2) / np.abs(w2)
    if (err > 2e-5).any():
        bad.append(f"exp2: max err {err.max():.2e}")
    assert not bad, "\n".join(bad)
    # the references are NumPy's complex128 values for finite inputs
    zz = z[(np.abs(z) < 50) & (np.abs(z + 1) > 1e-3)]
    for p in ("exp", "sin", "asin", "atanh", "log1p"):
        with np.errstate(all="ignore"):
            want = getattr(np, {"asin": "arcsin", "atanh": "arctanh"}.get(p, p))(
                zz.astype(np.complex128))
        close(REGISTRY[p].reference(zz), want.astype(np.complex64), rtol=1e-6, atol=0, what=p)


_T = float(np.finfo(np.float32).tiny)     # 2^-126, the smallest normal
# (function, inputs): a subnormal component, or a component at 2^-126 that a quotient by 1 or
# a product by a cosh(0) below 1 moved below the normal range, where a flushing driver
# (WJAX_STRICT_DRIVER=1: NVIDIA's rules) gave a third value: sign(1e-45) = 1e-45, sin(2^-126)
# = 0, asin(1e-45 + 1e-40j) = (1e-45, 0), exp(2 + 1e-45j) = (7.39, 1e-45)
SUBNORMAL_POINTS = {
    "sign": [1e-45, -1e-45 - 0j, 1e-40 + 1e-45j, -3e-39 - 1e-40j],
    "exp": [2 + 1e-45j, -1 - 1e-40j],
    "expm1": [1e-40 + 1e-45j, 2 + 1e-45j],
    "sinh": [3 + 1e-45j],
    "cosh": [3 + 1e-45j],
    "sin": [_T, -_T + _T * 1j, _T + 1e-45j],
    "tan": [_T, 1e-45 + _T * 1j, _T + _T * 1j],
    "tanh": [_T * 1j, _T + _T * 1j],
    "asin": [_T + _T * 1j, 1e-45 + 1e-40j, -1e-40 - 1e-40j],
    "acos": [1 + 1e-45j, 1 - 1e-45j],
    "acosh": [1 + 1e-45j],
    "asinh": [_T + _T * 1j, 1e-40 + 1e-45j],
    "atan": [_T + _T * 1j, 1e-45 + _T * 1j],
    "atanh": [_T + _T * 1j, -1e-40 + 1e-40j],
    "log1p": [_T + _T * 1j, 1e-45 + _T * 1j, 1e-40 + 1e-45j, -1e-40 - 1e-40j],
}


def _flushed(z):
    def f(v):
        return math.copysign(0.0, v) if abs(v) < _T else v
    return np.array([complex(f(c.real), f(c.imag)) for c in z], np.complex64)


@pytest.mark.parametrize("name", sorted(SUBNORMAL_POINTS))
def test_subnormal_components_give_the_ieee_or_the_flushed_answer(name):
    """Componentwise, the result is the complex128 value (within 3e-6 of each component, or
    one subnormal step) or the value at the input with its subnormal components flushed to
    zeros of their signs -- never a mix, nor a third value; lavapipe keeps subnormals, the
    strict driver flushes them."""
    from wjax._src.core.primitive import REGISTRY
    z = np.array(SUBNORMAL_POINTS[name], np.complex64)
    got = np.asarray(wjax.jit(REGISTRY[name].bind)(z))
    with np.errstate(all="ignore"):
        want, want0 = REGISTRY[name].reference(z), REGISTRY[name].reference(_flushed(z))

    def near(g, w):
        return all(abs(a - b) <= 3e-6 * abs(b) + 2.0 ** -149 and (b != 0 or a == 0)
                   and (b != 0 or math.copysign(1, a) == math.copysign(1, b))
                   for a, b in ((g.real, w.real), (g.imag, w.imag)))
    bad = [f"{name}({zi}) = {g}, want {w} or {w0}" for zi, g, w, w0 in zip(z, got, want, want0)
           if not (near(g, w) or near(g, w0))]
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------- kernel rules

def test_a_kernel_rule_reads_and_writes_complex_buffers():
    """A primitive with a hand-written ``kernel`` rule (as jnp.fft will have) over complex64
    buffers: bound as ``array<vec2<f32>>``, one element a (re, im) vec2; its operand's fused
    producer is inlined into the read, and its output feeds later fused kernels."""
    from wjax._src.backend import wgsl as W
    from wjax._src.backend.wgsl import Index
    from wjax._src.core.ir import ShapedArray
    from wjax._src.core.primitive import Primitive

    p = Primitive("twiddle_reverse", register=False)   # y[k] = x[n-1-k] * exp(-2 pi i k / n)
    p.abstract_eval = lambda x: ShapedArray(x.shape, np.complex64)
    p.fuse_inputs = (0,)

    def kernel(ctx, x):
        n = x.shape[0]
        kb = ctx.new_kb()
        kb.use_helper("wj_cmul")
        kb.use_helper("wj_cexp")
        v = ctx.reader(kb, 0)(Index(kb, x.shape, flat=kb.let(f"{n - 1}u - i", "u32")))
        out = kb.bind(ctx.out_key(0), np.complex64, "read_write")
        w = f"wj_cexp(vec2<f32>(0.0, -6.2831855 * f32(i) / {float(n)}))"
        kb.emit(f"{out}[i] = wj_cmul({v}, {w});")
        ctx.dispatch(kb, *kb.elementwise_kernel(n))

    p.kernel = kernel
    x = crand(37, seed=16)
    y = wjax.jit(lambda a: p.bind(a * (1 + 1j)) * 2j + 1)(x)
    k = np.arange(37)
    want = (x[::-1].astype(np.complex128) * (1 + 1j)) * np.exp(-2j * np.pi * k / 37) * 2j + 1
    close(y, want.astype(np.complex64), rtol=2e-6)
    assert W.storage_type(np.complex64) == "vec2<f32>" and W.storage_itemsize(np.complex64) == 8


# --------------------------------------------------------------------------- max / min

def test_complex_max_min_lexicographic_like_jax():
    """XLA's order: real parts, then imaginary parts; elementwise max(a, b) is ``b`` unless
    ``a`` compares greater (so a NaN part picks the second operand, and equal values of
    different zero signs the second's).  Reductions agree with JAX without NaNs."""
    nan = np.nan
    x = np.array([1 + 2j, 1 + 3j, 2 - 1j, 2, complex(nan, 0), complex(1, nan), 3, -1j,
                  0, complex(-0.0, 0)], np.complex64)
    y = np.array([1 + 1j, 1 + 5j, 2 - 2j, 1 + 9j, 0, 1, complex(nan, 1), complex(0, nan),
                  complex(-0.0, 0), 0], np.complex64)

    def f(m, x, y):
        jn = m.numpy
        return (jn.maximum(x, y), jn.minimum(y, x), m.lax.max(y, x), m.lax.min(x, y),
                jn.fmax(x, y), jn.fmin(y, x), jn.maximum(x, 2.0))

    for a, b in zip(wjax.jit(lambda x, y: f(wjax, x, y))(x, y), f(jax, x, y)):
        close(a, b, rtol=0, atol=0)
        assert (np.signbit(np.asarray(a).real) == np.signbit(np.asarray(b).real)).all()
    v = crand(3, 5, seed=30)
    v[1, 2] = v[1, 0].real + 1j * (v[1, 0].imag + 1)   # a tie in the real parts

    def g(m, v):
        jn = m.numpy
        return (jn.max(v), jn.min(v, axis=0), jn.amax(v, axis=1, keepdims=True),
                jn.amin(v, axis=(0, 1)), jn.ptp(v, axis=1),
                jn.max(v, axis=1, where=v.real > 0, initial=-5 + 0j),
                jn.min(v, initial=0j), m.lax.reduce_max(v, (1,)))

    for a, b in zip(wjax.jit(lambda v: g(wjax, v))(v), g(jax, v)):
        close(a, b, rtol=0, atol=0)
    ours = wjax.vmap(lambda r: g(wjax, r[None])[2])(v)
    close(ours, jax.vmap(lambda r: g(jax, r[None])[2])(v), rtol=0, atol=0)
    # an element with a NaN part wins a reduction (NumPy's rule; JAX's CPU fold keeps what its
    # sequential comparisons leave, an order-dependent value)
    w = v.copy()
    w[0, 3] = complex(nan, 2)
    got = np.asarray(jnp.max(w, axis=1))
    assert np.isnan(got[0].real) and got[0].imag == 2 and (got[1:] == np.max(w[1:], 1)).all()
    # nanmax/nanmin skip elements with a NaN part (NaN where all are), as JAX
    w[2] = complex(0, nan)
    for f in ("nanmax", "nanmin"):
        close(getattr(jnp, f)(w, axis=1), getattr(jjnp, f)(w, axis=1), rtol=0, atol=0)


def test_complex_max_min_gradients_like_jax():
    """JAX 0.10's derivatives of complex max/min: the gradient goes to the operand (or the
    elements) equal to the result, split evenly between ties.  The references are JAX's
    derivatives of that rule written with ``==`` and ``where`` around the result's value
    (JAX 0.11 computes complex max/min values, but its derivative rule raises TypeError on
    complex); JAX's own derivatives are compared too where the oracle has them."""
    z = np.array([1 + 2j, 3 + 1j, 3 - 1j, 0, 3 + 1j], np.complex64)
    w = np.array([1 + 2j, 0, 3 + 1j, 5j, 2], np.complex64)
    c = np.complex64(1 + 2j)

    def fs(m, pair, red):
        jn = m.numpy
        return [lambda z, w: jn.real(jn.sum(pair(jn.maximum, z, w) * c)),
                lambda z, w: jn.imag(jn.sum(pair(jn.minimum, z, w) * c)),
                lambda z, w: jn.abs(red(jn.max, z * w)),
                lambda z, w: jn.real(red(jn.min, z) * red(jn.max, w))]

    def pair_rule(f, a, b):           # f's value; d/da where a == it, halved at a tie
        # (f of stopped operands: no derivative rule of complex max runs -- 0.11 has none)
        r = f(jax.lax.stop_gradient(a), jax.lax.stop_gradient(b))
        ea, eb = a == r, b == r
        return (a * jjnp.where(ea, jjnp.where(eb, 0.5, 1.0), 0.0)
                + b * jjnp.where(eb, jjnp.where(ea, 0.5, 1.0), 0.0))

    def red_rule(f, v):               # f's value; d/dv where v == it, shared by the ties
        hit = v == f(jax.lax.stop_gradient(v))
        return jjnp.sum(jjnp.where(hit, v, 0)) / jjnp.sum(hit)

    ref = fs(jax, pair_rule, red_rule)
    direct = fs(jax, lambda f, a, b: f(a, b), lambda f, v: f(v))
    for ours, want, theirs in zip(fs(wjax, lambda f, a, b: f(a, b), lambda f, v: f(v)), ref,
                                  direct):
        got = wjax.grad(ours, argnums=(0, 1))(z, w)
        refs = [jax.grad(want, argnums=(0, 1))(z, w)]
        try:
            refs.append(jax.grad(theirs, argnums=(0, 1))(z, w))
        except TypeError:             # JAX 0.11: "gt does not accept dtype complex64"
            pass
        for r in refs:
            for a, b in zip(got, r):
                close(a, b, rtol=1e-6, atol=1e-6)
    t = z * 1j
    got = wjax.jvp(lambda z: jnp.max(z), (z,), (t,))
    for a, b in zip(got, jax.jvp(lambda z: red_rule(jjnp.max, z), (z,), (t,))):
        close(a, b)
    try:
        for a, b in zip(got, jax.jvp(lambda z: jjnp.max(z), (z,), (t,))):
            close(a, b)
    except TypeError:                 # JAX 0.11, as above
        pass


def test_complex_dot_inside_a_loop():
    """A complex matmul inside a loop body (the single-workgroup kernel loop's register-tiled
    product, which once multiplied complex values componentwise)."""
    t = crand(1, 3, seed=31)
    x0 = crand(3, 1, seed=32)

    def f(m, x):
        return m.lax.fori_loop(0, 2, lambda i, x: x + m.numpy.matmul(t, x), x)

    close(wjax.jit(lambda x: f(wjax, x))(x0), f(jax, x0))


# --------------------------------------------------------------------------- linear algebra

def _pair(f, *args):
    """``f(module, *args)`` with wjax and with JAX."""
    return f(wjax, *args), f(jax, *args)


def _close_tree(a, b, **kw):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        close(u, v, **kw)


def test_complex_lu_and_triangular_solve_like_jax():
    """LAPACK's pivot is the first largest |re| + |im| (5 loses to 3.5 + 3.5j, 1 beats 1j);
    factors, pivots and permutation as JAX's, rectangular and batched too; the triangular
    solve under every flag."""
    mats = [np.array([[5, 1], [3.5 + 3.5j, 2]], np.complex64),
            np.array([[1, 1], [1j, 2]], np.complex64),
            crand(2, 4, 4, seed=33), crand(3, 5, seed=34), crand(5, 3, seed=35)]
    for a in mats:
        ours, theirs = _pair(lambda m, a: m.lax.linalg.lu(a), a)
        _close_tree(ours, theirs, rtol=2e-6, atol=2e-6)
    a = crand(4, 4, seed=36) + 3 * np.eye(4, dtype=np.complex64)
    b = crand(4, 3, seed=37)
    for left in (True, False):
        for lower in (True, False):
            for tr, conj, unit in ((False, False, False), (True, False, True),
                                   (False, True, False), (True, True, False)):
                kw = dict(left_side=left, lower=lower, transpose_a=tr, conjugate_a=conj,
                          unit_diagonal=unit)
                rhs = b if left else b.T
                ours, theirs = _pair(lambda m: m.lax.linalg.triangular_solve(a, rhs, **kw))
                close(ours, theirs, rtol=2e-5, what=str(kw))


def _linalg_fns(m):
    la = m.numpy.linalg
    return {
        "det": la.det, "slogdet": la.slogdet, "inv": la.inv,
        "solve": lambda a: la.solve(a[0], a[0, :, 0] * 2 + 1j),
        "solve_mat": lambda a: la.solve(a, a[..., :, :2] - 1),
    }


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
def test_complex_linalg_values_like_jax(n):
    a = crand(2, n, n, seed=40 + n)
    for name, f in _linalg_fns(wjax).items():
        ours = wjax.jit(f)(a)
        theirs = _linalg_fns(jax)[name](a)
        _close_tree(ours, theirs, rtol=2e-5, atol=1e-5)
        if n == 4 and name != "solve":
            _close_tree(wjax.vmap(f)(a), jax.vmap(_linalg_fns(jax)[name])(a), rtol=2e-5,
                        atol=1e-5)
    sign, logdet = jnp.linalg.slogdet(a)
    assert sign.dtype == np.complex64 and logdet.dtype == np.float32


def test_complex_singular_det_and_slogdet_like_jax():
    a = crand(4, 4, seed=50)
    a[:, 1] = 0                                        # rank 3, a zero pivot exactly
    z = np.zeros((4, 4), np.complex64)
    for x in (a, z):
        ours, theirs = _pair(lambda m, x: m.numpy.linalg.slogdet(x), x)
        close(ours[0], theirs[0], atol=0, rtol=0)      # sign 0
        close(ours[1], theirs[1], atol=0, rtol=0)      # -inf
        # the adjugate gradient at a rank-(n-1) matrix, 0 at rank < n-1
        g = _pair(lambda m, x: m.grad(lambda x: m.numpy.abs(m.numpy.linalg.det(x) + 1))(x), x)
        close(*g, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [2, 5])
def test_complex_linalg_derivatives_like_jax(n):
    """grad of real-valued functions of complex matrices (JAX's conjugate convention), and
    jvps with complex tangents: det through the adjugate, slogdet (the sign's tangent i Im(tr)
    sign), solve and inv."""
    a = crand(n, n, seed=60 + n)
    b = crand(n, 2, seed=70 + n)
    da = crand(n, n, seed=80 + n)

    def real_fns(m):
        jn = m.numpy
        return [lambda a: jn.abs(jn.linalg.det(a)),
                lambda a: jn.real(jn.sum(jn.linalg.solve(a, b))),
                lambda a: jn.imag(jn.linalg.slogdet(a)[0]) + jn.linalg.slogdet(a)[1],
                lambda a: jn.sum(jn.abs(jn.linalg.inv(a)) ** 2),
                lambda a: jn.real(jn.sum(m.scipy.linalg.lu(a)[2] * (1 + 1j)))]

    for ours, theirs in zip(real_fns(wjax), real_fns(jax)):
        close(wjax.grad(ours)(a), jax.grad(theirs)(a), rtol=1e-4, atol=1e-5)
    fns = lambda m: [m.numpy.linalg.det, m.numpy.linalg.slogdet, m.numpy.linalg.inv,  # noqa
                     lambda a: m.numpy.linalg.solve(a, b)]
    for ours, theirs in zip(fns(wjax), fns(jax)):
        _close_tree(wjax.jvp(ours, (a,), (da,)), jax.jvp(theirs, (a,), (da,)), rtol=1e-4,
                    atol=1e-5)
    # batched and under jit
    ab = np.stack([a, a.T])
    g = wjax.jit(wjax.vmap(wjax.grad(real_fns(wjax)[0])))(ab)
    close(g, jax.vmap(jax.grad(real_fns(jax)[0]))(ab), rtol=1e-4, atol=1e-5)


def test_complex_scipy_linalg_like_jax():
    from jax.scipy import linalg as jsl
    from wjax.scipy import linalg as wsl
    a = crand(4, 4, seed=90)
    b = crand(4, 2, seed=91)
    h = a @ a.conj().T + 4 * np.eye(4, dtype=np.complex64)
    pairs = [(lambda s: s.lu(a)), (lambda s: s.lu(a, permute_l=True)),
             (lambda s: s.lu_factor(a)), (lambda s: s.inv(a)), (lambda s: s.det(a)),
             (lambda s: s.solve(a, b)), (lambda s: s.solve(h, b, assume_a="pos")),
             (lambda s: s.solve(h, b, assume_a="pos", lower=True))]
    pairs += [lambda s, t=t: s.lu_solve(s.lu_factor(a), b, trans=t) for t in (0, 1, 2)]
    pairs += [lambda s, t=t, lo=lo: s.solve_triangular(a, b, trans=t, lower=lo)
              for t in (0, 1, 2, "C") for lo in (True, False)]
    pairs += [lambda s, lo=lo: s.cho_solve(s.cho_factor(h, lower=lo), b) for lo in (True, False)]
    pairs += [lambda s, lo=lo: s.cholesky(h, lower=lo) for lo in (True, False)]
    for f in pairs:
        _close_tree(f(wsl), f(jsl), rtol=2e-5, atol=1e-5)
    A, B = crand(6, 2, 3, seed=92), crand(6, seed=93)
    _close_tree(*_pair(lambda m: m.numpy.linalg.tensorsolve(A, B)), rtol=2e-5, atol=1e-5)
    A = crand(2, 3, 6, seed=94)
    _close_tree(*_pair(lambda m: m.numpy.linalg.tensorinv(A, ind=2)), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("cpu", [True, False])
def test_complex_max_min_reduction_kernel_forms(cpu):
    """The complex max/min fold in every reduction form (per-thread rows and columns, a
    reduction split in parts with a second pass; the GPU forms, ``profiles.GPU_FORMS``), one NaN
    element per case (it wins, as in NumPy), against NumPy."""
    from wjax._src.backend import profiles, runtime
    rt = runtime.get()
    with rt.options(**(profiles.CPU_FORMS if cpu else profiles.GPU_FORMS)):
        for k, (shape, ax) in enumerate([((64, 256), 1), ((256, 64), 0), ((4, 65536), 1)]):
            x = crand(*shape, seed=100 + k)
            x.flat[5] = complex(np.nan, 3)
            got = wjax.jit(lambda a: (jnp.max(a, axis=ax), jnp.min(a, axis=ax)))(x)
            for g, w in zip(got, (np.max(x, axis=ax), np.min(x, axis=ax))):
                assert np.asarray(g).dtype == np.complex64
                assert np.array_equal(np.asarray(g), w, equal_nan=True)
    wjax.clear_caches()


# --------------------------------------------------------------------------- arctan2, logaddexp,
# fmax/fmin, clamp, searchsorted, scatter_max/min, random normals

_CS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan]
_GRID = np.array([complex(a, b) for a in _CS for b in _CS], np.complex64)
_PAIRS = (np.repeat(_GRID, len(_GRID)), np.tile(_GRID, len(_GRID)))   # every pair of specials


def _same_bits_or_nan(got, want, what=""):
    """Exactly the same values, NaN where NaN (per component)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        ok = (g == w) | (np.isnan(g) & np.isnan(w))
        assert ok.all(), f"{what}: got {got[~ok][:5]}, want {want[~ok][:5]}"


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2", "fmax", "fmin", "arctan2"])
def test_binary_functions_on_special_values_like_jax(name):
    """Every pair of components from 0, -0, +-1, 0.5, -2.5, +-inf, NaN, and random values, under
    jit.  arctan2 where its exact value lies on log's cut (a real part of +-pi): JAX's sign of
    pi there is rounding noise of its steps, so those few points (9 of 6561,
    cmath_ref.atan2) are compared up to that sign."""
    x, y = _PAIRS
    r = crand(2, 200, scale=3, seed=21)
    for a, b in ((x, y), (r[0], r[1])):
        got = np.array(wjax.jit(getattr(jnp, name))(a, b))
        want = np.asarray(getattr(jjnp, name)(a, b))
        if name == "arctan2":
            cut = (np.abs(np.abs(got.real) - np.float32(np.pi)) <= 2e-7) & (
                np.abs(got.real + want.real) <= 4e-7)
            assert cut.sum() <= 9, cut.sum()
            got.real[cut] = want.real[cut]
        close(got, want, rtol=3e-6, atol=1e-6, what=name)


def test_fmax_fmin_logaddexp_arctan2_mixed_dtypes_vmap_and_grads_like_jax():
    z, w = crand(4, seed=22), crand(4, seed=23)
    x = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    for name in ("fmax", "fmin", "logaddexp", "arctan2"):
        close(getattr(jnp, name)(z, x), getattr(jjnp, name)(z, x), rtol=3e-6, what=name)
        close(wjax.vmap(getattr(jnp, name), (0, None))(z, w[0]),
              jax.vmap(getattr(jjnp, name), (0, None))(z, w[0]), rtol=3e-6, what=name)

    def f(m, z):   # a real-valued function: the conjugate-convention gradient
        n = m.numpy
        return n.sum(n.abs(n.arctan2(z, w) + n.logaddexp(z, w) * 1j + n.logaddexp2(w, z))
                     + n.real(n.fmax(z, w) - n.fmin(z, 0.3 * w)))
    close(wjax.grad(lambda z: f(wjax, z))(z), jax.grad(lambda z: f(jax, z))(z), rtol=1e-4,
          atol=1e-5, what="grad")
    for name in ("arctan2", "logaddexp"):
        g = lambda m, z: getattr(m.numpy, name)(z, 0.5 - 1j)   # noqa: E731
        close(wjax.grad(lambda z: g(wjax, z), holomorphic=True)(np.complex64(0.3 + 0.8j)),
              jax.grad(lambda z: g(jax, z), holomorphic=True)(np.complex64(0.3 + 0.8j)),
              rtol=1e-4, what=name)


def test_clamp_on_complex_like_jax():
    """XLA's complex clamp compares the real parts only (a NaN real part picks the bound)."""
    v = np.array([complex(a, b) for a in (0, 1, -1, np.nan, np.inf) for b in (0, 1, np.nan)],
                 np.complex64)
    lo, x, hi = (a.ravel() for a in np.meshgrid(v, v, v, indexing="ij"))
    _same_bits_or_nan(wjax.jit(wjax.lax.clamp)(lo, x, hi), jax.lax.clamp(lo, x, hi))
    _same_bits_or_nan(wjax.lax.clamp(np.complex64(0.5j), x, np.complex64(1 - 1j)),
                      jax.lax.clamp(np.complex64(0.5j), x, np.complex64(1 - 1j)))
    _same_bits_or_nan(wjax.vmap(wjax.lax.clamp, (0, None, 0))(lo[:8], x[:5], hi[:8]),
                      jax.vmap(jax.lax.clamp, (0, None, 0))(lo[:8], x[:5], hi[:8]))
    for m in (jax, wjax):   # its derivative compares complex values with lax.gt: TypeError
        with pytest.raises(TypeError, match="complex64"):
            m.grad(lambda z: m.numpy.abs(m.lax.clamp(np.complex64(0), z, np.complex64(1))))(
                np.complex64(0.5))


def test_searchsorted_on_complex_like_jax():
    """Lexicographic, each part NaN last (JAX's sort order), for every side and method."""
    a = np.asarray(jjnp.sort(np.array([complex(r, i) for r in (-1, 0, 1, np.nan)
                                       for i in (-1, 0, 1, np.nan)] + [1 + 1j, 1 + 1j],
                                      np.complex64)))   # sorted in JAX's order
    v = np.array([complex(r, i) for r in (-1, -0.0, 0.5, 1, np.nan, 2)
                  for i in (-1, -0.0, 0, 1, np.nan)], np.complex64)
    for side in ("left", "right"):
        for method in ("scan", "scan_unrolled", "sort", "compare_all"):
            want = jjnp.searchsorted(a, v, side=side, method=method)
            got = wjax.jit(lambda a, v: jnp.searchsorted(a, v, side=side, method=method))(a, v)
            close(got, want, what=f"{side} {method}")
    close(wjax.vmap(jnp.searchsorted, (None, 0))(a, v.reshape(5, 6)),
          jax.vmap(jjnp.searchsorted, (None, 0))(a, v.reshape(5, 6)))
    close(jnp.searchsorted(np.array([0.5, 1.0, 2.0], np.float32), v[:6]),
          jjnp.searchsorted(np.array([0.5, 1.0, 2.0], np.float32), v[:6]), what="promoted")


def test_scatter_max_min_on_complex_like_jax():
    """x.at[i].max/min: XLA's complex max/min folded update by update (real parts first, then
    imaginary; a NaN part never keeps the old value)."""
    x = np.array([1 + 1j, 2 - 1j, 0j, np.nan, 1 + np.nan * 1j, -1j, 3 + 3j, 5], np.complex64)
    i = np.array([0, 0, 1, 2, 3, 4, 4, 5, 6, 6, 6, 7])
    u = np.array([1 + 2j, 0.5 + 9j, 2 - 2j, -1, 0, 1, 1 + 0.5j, -2, 3 + 3j, 3 + 4j, 3 + 3.5j,
                  np.nan + 1j], np.complex64)
    for op in ("max", "min"):
        want = getattr(jjnp.asarray(x).at[i], op)(u)
        _same_bits_or_nan(wjax.jit(lambda x, u: getattr(x.at[i], op)(u))(x, u), want, op)
        xs, us = np.stack([x, x[::-1]]), np.stack([u, u * 1j])
        _same_bits_or_nan(wjax.vmap(lambda x, u: getattr(x.at[i], op)(u))(xs, us),
                          jax.vmap(lambda x, u: getattr(x.at[i], op)(u))(xs, us), f"vmap {op}")
        z, v = crand(5, seed=24), crand(6, seed=25)
        j = np.array([0, 1, 1, 3, 4, 4])

        def f(m, z, v):
            return m.numpy.sum(m.numpy.abs(getattr(m.numpy.asarray(z).at[j], op)(v)) ** 2)
        for k in (0, 1):
            close(wjax.grad(lambda z, v: f(wjax, z, v), k)(z, v),
                  jax.grad(lambda z, v: f(jax, z, v), k)(z, v), rtol=1e-5, what=f"grad {op}")


def test_random_complex_normals_like_jax():
    """normal/lognormal with a complex dtype: JAX's draws (the real and imaginary parts are
    normals of variance 1/2 from a split key) -- the same values to the ulp of the float
    normal -- under jit and vmap; samplers JAX keeps real raise its ValueError."""
    for shape in ((), (5,), (3, 4)):
        got = wjax.random.normal(wjax.random.key(7), shape, jnp.complex64)
        close(got, jax.random.normal(jax.random.key(7), shape, jjnp.complex64), rtol=2e-7,
              atol=0, what=f"normal {shape}")
    close(wjax.jit(lambda k: wjax.random.lognormal(k, 0.5, (6,), jnp.complex64))(
        wjax.random.key(1)), jax.random.lognormal(jax.random.key(1), 0.5, (6,), jjnp.complex64),
        rtol=4e-7, atol=0, what="lognormal")
    keys_w = wjax.random.split(wjax.random.key(2), 3)
    keys_j = jax.random.split(jax.random.key(2), 3)
    close(wjax.vmap(lambda k: wjax.random.normal(k, (2,), jnp.complex64))(keys_w),
          jax.vmap(lambda k: jax.random.normal(k, (2,), jjnp.complex64))(keys_j), rtol=2e-7,
          atol=0, what="vmap")
    big = np.asarray(wjax.random.normal(wjax.random.key(3), (100000,), jnp.complex64))
    assert abs(big.real.var() - 0.5) < 0.01 and abs(big.imag.var() - 0.5) < 0.01
    for m in (jax, wjax):
        for f in (lambda: m.random.uniform(m.random.key(0), (2,), m.numpy.complex64),
                  lambda: m.random.normal(m.random.key(0), (2,), m.numpy.int32)):
            with pytest.raises(ValueError, match="dtype argument to"):
                f()
