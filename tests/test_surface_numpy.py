"""The jax.numpy names wjax lacked (issue 15): ufunc objects and frompyfunc, index tricks,
array builders, windows, statistics, bit packing, float steps, polynomials, host I/O and
printing -- each against real JAX on the same inputs (and its error for bad input)."""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from surface_util import both, raises_like_jax, same

jax = pytest.importorskip("jax")
f32 = np.float32
R = np.random.RandomState(0)
A = np.arange(24.0, dtype=f32).reshape(2, 3, 4)


# --------------------------------------------------------------------------- ufunc objects

def test_ufunc_objects_reduce_accumulate_outer_at_reduceat():
    x = np.arange(6.0, dtype=f32).reshape(2, 3)
    assert repr(jnp.add) == repr(jax.numpy.add) and isinstance(jnp.add, jnp.ufunc)
    for name in ("add", "multiply", "maximum", "logical_and", "bitwise_xor", "logaddexp"):
        u, ju = getattr(jnp, name), getattr(jax.numpy, name)
        assert (u.nin, u.nout, u.nargs, u.identity) == (ju.nin, ju.nout, ju.nargs, ju.identity)
    both(lambda m: [m.numpy.add.reduce(x, axis=None), m.numpy.add.reduce(x, axis=1),
                    m.numpy.add.reduce(x, keepdims=True, initial=1.0),
                    m.numpy.add.reduce(np.arange(4.0, dtype=f32),
                                       where=np.array([True, False, True, True])),
                    m.numpy.multiply.reduce(x, axis=0),
                    m.numpy.maximum.reduce(np.array([1, 5, 2])),
                    m.numpy.subtract.reduce(np.arange(4.0, dtype=f32)),
                    m.numpy.logaddexp.reduce(np.arange(3.0, dtype=f32)),
                    m.numpy.bitwise_xor.reduce(np.array([1, 3, 4])),
                    m.numpy.logical_and.reduce(np.array([[True, False], [True, True]]), axis=1),
                    m.numpy.add.reduce(np.ones((2, 3), np.int32), dtype=np.float32)],
         rtol=1e-6)
    both(lambda m: [m.numpy.subtract.accumulate(np.arange(4.0, dtype=f32)),
                    m.numpy.add.accumulate(x, axis=1), m.numpy.maximum.accumulate(
                        np.array([1.0, 3.0, 2.0, 5.0], f32)),
                    m.numpy.multiply.outer(np.arange(2), np.arange(3)),
                    m.numpy.subtract.outer(np.arange(2.0, dtype=f32), x)])
    idx = np.array([0, 0, 2])
    both(lambda m: [m.numpy.add.at(np.zeros(3, f32), idx, 1.0, inplace=False),
                    m.numpy.subtract.at(np.zeros(3, f32), idx, 1.0, inplace=False),
                    m.numpy.maximum.at(np.zeros(3, f32), idx[:2], np.array([2.0, 3.0], f32),
                                       inplace=False),
                    m.numpy.negative.at(np.ones(3, f32), np.array([1]), inplace=False),
                    m.numpy.add.reduceat(np.arange(8.0, dtype=f32), np.array([0, 4, 1, 5])),
                    m.numpy.maximum.reduceat(np.arange(8.0, dtype=f32), np.array([0, 3]))])
    raises_like_jax(lambda m: m.numpy.negative.reduce(np.ones(2)), match="binary")
    raises_like_jax(lambda m: m.numpy.add.at(np.zeros(3), np.array([0]), 1.0),
                    match="inplace")
    # jit and grad through ufunc methods
    both(lambda m: m.grad(lambda v: m.numpy.multiply.reduce(v))(np.array([1.0, 2.0, 3.0], f32)))
    both(lambda m: m.jit(lambda v: m.numpy.add.accumulate(v))(np.arange(5.0, dtype=f32)))


def test_frompyfunc_generic_ufunc():
    def make(m):
        return m.numpy.frompyfunc(lambda a, b: a * b + 1, nin=2, nout=1, identity=1)
    x = np.arange(1.0, 4.0, dtype=f32)
    both(lambda m: [make(m)(np.arange(3.0, dtype=f32), 2.0), make(m).reduce(x),
                    make(m).reduce(np.arange(6.0, dtype=f32).reshape(2, 3), axis=1),
                    make(m).accumulate(x), make(m).outer(np.arange(2.0, dtype=f32), x),
                    make(m).at(np.ones(3, f32), np.array([0, 0]), 2.0, inplace=False)])
    both(lambda m: m.numpy.frompyfunc(lambda a: (a, a * 2), nin=1, nout=2)(x))
    both(lambda m: m.numpy.apply_along_axis(lambda v: v.max() - v.min(), 1, A))
    both(lambda m: m.numpy.apply_along_axis(lambda v, s: m.numpy.outer(v, v) * s, 2,
                                            A[:, :2], 2.0))


# --------------------------------------------------------------------------- index tricks

def test_index_tricks_and_builders():
    both(lambda m: [m.numpy.block([[np.ones((2, 2), f32), np.zeros((2, 1), f32)],
                                   [np.zeros((1, 3), f32)]]),
                    m.numpy.block([np.ones(2, f32), np.zeros(3, f32)]),
                    m.numpy.block([[[np.ones((1, 1, 2), f32)]], [[np.zeros((1, 1, 2), f32)]]])])
    raises_like_jax(lambda m: m.numpy.block([[np.ones(2)], np.ones(2)]), match="depths")
    both(lambda m: [m.numpy.r_[1:3, [4, 5], 0], m.numpy.r_[0:1:3j, np.array([2.0, 3.0], f32)],
                    m.numpy.r_["0,2", [1, 2], [3, 4]], m.numpy.r_["1,2,0", [1, 2], [3, 4]],
                    m.numpy.r_["-1", np.ones((2, 2), f32), np.zeros((2, 1), f32)],
                    m.numpy.c_[np.array([1, 2]), np.array([3, 4])],
                    m.numpy.c_[np.ones((2, 2), f32), np.array([3.0, 4.0], f32)]])
    assert jnp.s_[1:2, ::2] == jax.numpy.s_[1:2, ::2] and jnp.index_exp[3] == (3,)
    both(lambda m: [m.numpy.ix_(np.array([0, 1]), np.array([2, 3, 4])),
                    m.numpy.mgrid[0:3, 0:2], m.numpy.mgrid[0:1:3j, -1:1:0.5],
                    m.numpy.mgrid[0:4], m.numpy.ogrid[0:2, 0:3]])
    raises_like_jax(lambda m: m.numpy.ix_(np.array([True, False])), match="Boolean")
    both(lambda m: [m.numpy.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
                    m.numpy.fromfunction(lambda i, j: i + j, (2, 2), dtype=int)])
    both(lambda m: [m.numpy.diag_indices_from(np.ones((3, 3))),
                    m.numpy.tril_indices_from(np.ones((3, 4)), k=1),
                    m.numpy.triu_indices_from(np.ones((3, 2)), k=-1),
                    m.numpy.mask_indices(3, m.numpy.triu, 1),
                    m.numpy.apply_over_axes(m.numpy.sum, A, [0, 2])], jit_jax=False)
    raises_like_jax(lambda m: m.numpy.diag_indices_from(np.ones((2, 3))))
    both(lambda m: [m.numpy.place(np.arange(6), np.arange(6) % 2 == 0, np.array([9, 8]),
                                  inplace=False),
                    m.numpy.put(np.arange(5.0, dtype=f32), np.array([0, 2, 9]),
                                np.array([7.0, 8.0, 9.0], f32), inplace=False),
                    m.numpy.put(np.arange(5.0, dtype=f32), np.array([0, 7]),
                                np.array([7.0, 8.0], f32), mode="wrap", inplace=False),
                    m.numpy.put(np.arange(5.0, dtype=f32), np.array([-1, 7]),
                                np.array([7.0, 8.0], f32), mode="clip", inplace=False)])
    raises_like_jax(lambda m: m.numpy.put(np.arange(5.0), 1, 2.0), match="in-place")
    raises_like_jax(lambda m: m.numpy.place(np.arange(5.0), np.ones(5, bool), 2.0),
                    match="in-place")


def test_host_constructors_io_and_printing(tmp_path):
    both(lambda m: [m.numpy.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint8),
                    m.numpy.fromstring("1 2 3", sep=" ")])
    raises_like_jax(lambda m: m.numpy.fromiter(range(3), float), match="not implemented")
    x = jnp.arange(6.0).reshape(2, 3)
    jnp.save(tmp_path / "a.npy", x)
    back = jnp.load(tmp_path / "a.npy")
    assert isinstance(back, wjax.Array)
    same(back, np.arange(6.0, dtype=f32).reshape(2, 3))
    jnp.savez(tmp_path / "b.npz", a=x, b=np.arange(3))
    with jnp.load(tmp_path / "b.npz") as z:
        assert sorted(z.files) == ["a", "b"]
    assert jnp.array_str(jnp.ones(3)) == jax.numpy.array_str(jax.numpy.ones(3))
    # JAX names its arrays' class: ArrayImpl([1., 1.], dtype=float32)
    assert jnp.array_repr(jnp.ones(2)) == jax.numpy.array_repr(jax.numpy.ones(2))
    assert jnp.array_repr(np.ones(2)) == jax.numpy.array_repr(np.ones(2))
    with jnp.printoptions(precision=2):
        assert jnp.get_printoptions()["precision"] == 2
        assert jnp.array_str(jnp.asarray([1.23456])) == "[1.23]"
    for name in ("single", "double", "float_", "int_", "uint", "object_"):
        assert np.dtype(getattr(jnp, name)) == np.dtype(getattr(jax.numpy, name)), name
    assert jnp.character is jax.numpy.character and jnp.flexible is jax.numpy.flexible
    assert jnp.iterable([1]) and not jnp.iterable(1)


# --------------------------------------------------------------------------- numerics

def test_windows_bits_and_float_steps():
    both(lambda m: [getattr(m.numpy, w)(n) for w in ("bartlett", "blackman", "hamming",
                                                     "hanning") for n in (0, 1, 5, 8)],
         atol=1e-6)
    both(lambda m: [m.numpy.kaiser(7, 3.5), m.numpy.kaiser(1, 2.0)], rtol=1e-5)
    both(lambda m: [m.numpy.bitwise_count(np.array([0, 3, -1, 255, -128], np.int32)),
                    m.numpy.bitwise_count(np.array([0, 3, 200], np.uint8)),
                    m.numpy.bitwise_count(np.array([True, False]))])
    both(lambda m: [m.numpy.packbits(np.array([1, 0, 1, 1, 0, 0, 0, 1, 1], np.uint8)),
                    m.numpy.packbits(np.array([[1, 0, 1], [1, 1, 0]], bool), axis=1,
                                     bitorder="little"),
                    m.numpy.packbits(np.array([[1, 0, 1], [1, 1, 0]], np.int32), axis=0),
                    m.numpy.unpackbits(np.array([5, 255], np.uint8)),
                    m.numpy.unpackbits(np.array([5, 255], np.uint8), count=5,
                                       bitorder="little"),
                    m.numpy.unpackbits(np.array([[5], [2]], np.uint8), axis=1),
                    m.numpy.unpackbits(np.array([[5, 1], [2, 3]], np.uint8), axis=0,
                                       count=-3)])
    raises_like_jax(lambda m: m.numpy.unpackbits(np.array([1.0])))
    raises_like_jax(lambda m: m.numpy.packbits(np.array([1]), bitorder="middle"))
    both(lambda m: [m.numpy.nextafter(np.array([1.0, 0.0, -1.0], f32),
                                      np.array([2.0, -1.0, 0.0], f32)),
                    m.numpy.spacing(np.array([1.0, -1.0, 0.0, np.inf, 1e-3, 1e30], f32)),
                    m.numpy.i0(np.array([-3.0, 0.0, 0.5, 10.0], f32))], rtol=1e-6)
    both(lambda m: m.vmap(m.grad(m.numpy.i0))(np.array([-1.0, 0.0, 2.0], f32)), rtol=1e-6)


def test_statistics_gradient_histograms_unwrap():
    X = R.randn(3, 6).astype(f32)
    both(lambda m: [m.numpy.cov(X), m.numpy.cov(X.T, rowvar=False, ddof=0),
                    m.numpy.cov(X[0], X[1]), m.numpy.cov(np.array([1.0, 2.0, 4.0], f32),
                                                         bias=True),
                    m.numpy.cov(X, fweights=np.array([1, 2, 1, 3, 1, 1]),
                                aweights=np.arange(1.0, 7.0)),
                    m.numpy.corrcoef(X), m.numpy.corrcoef(X[0], X[1])], rtol=1e-5, atol=1e-6)
    raises_like_jax(lambda m: m.numpy.cov(X, fweights=np.ones(6)))
    y = np.array([1.0, 2.0, 4.0, 7.0, 11.0], f32)
    both(lambda m: [m.numpy.gradient(y), m.numpy.gradient(A[0] ** 2, 2.0),
                    m.numpy.gradient(A ** 2, axis=(0, 2)),
                    m.numpy.gradient(y, np.array([0.0, 1.0, 1.5, 3.5, 4.0], f32))], rtol=1e-5)
    raises_like_jax(lambda m: m.numpy.gradient(y, edge_order=2), match="edge_order")
    S = R.rand(20, 2).astype(f32)
    both(lambda m: [m.numpy.histogramdd(S, bins=3),
                    m.numpy.histogramdd(S, bins=[2, 4], range=[(0, 1), (0, 2)],
                                        weights=np.arange(20.0), density=True),
                    m.numpy.histogram2d(S[:, 0], S[:, 1], bins=3)], rtol=1e-5)
    both(lambda m: [m.numpy.unwrap(np.array([0.0, 3.0, 6.5, 0.1, -3.0], f32)),
                    m.numpy.unwrap(np.array([[0.0, 1.0, 8.0], [0, 5, 10.0]], f32), axis=1,
                                   period=6.0, discont=2.0)], rtol=1e-6, atol=1e-6)
    both(lambda m: m.grad(lambda v: m.numpy.cov(v).sum())(X), rtol=1e-4, atol=1e-6)


def test_polynomials():
    p1, p2 = np.array([1.0, 2.0, 3.0], f32), np.array([2.0, -1.0], f32)
    both(lambda m: [m.numpy.poly(np.array([1.0, 2.0, -3.0], f32)), m.numpy.polyadd(p1, p2),
                    m.numpy.polysub(p2, p1),
                    m.numpy.polyadd(np.array([1, 2]), np.array([1, 2, 3])),
                    m.numpy.polymul(p1, p2),
                    m.numpy.polydiv(np.array([1.0, 2.0, 3.0, 4.0], f32), p2),
                    m.numpy.polydiv(np.array([1.0, 2.0], f32), np.array([1.0, 1.0, 1.0], f32)),
                    m.numpy.polyder(np.array([1.0, 2.0, 3.0, 4.0], f32), 2),
                    m.numpy.polyder(p1, 0), m.numpy.polyder(p1, 5), m.numpy.polyint(p1),
                    m.numpy.polyint(np.array([1.0, 2.0], f32), m=2,
                                    k=np.array([1.0, 2.0], f32)),
                    m.numpy.polyint(p1, k=3.0),
                    m.numpy.polyval(p1, np.array([0.0, 1.0, 2.5], f32)),
                    m.numpy.polyval(np.array([1, 2, 3]), 2)], rtol=1e-5, atol=1e-6)
    xf = np.linspace(0, 3, 8).astype(f32)
    yf = (2 * xf ** 2 - xf + 0.5).astype(f32)
    both(lambda m: [m.numpy.polyfit(xf, yf, 2),
                    m.numpy.polyfit(xf, np.stack([yf, xf], 1), 1, w=np.arange(1.0, 9.0)),
                    m.numpy.polyfit(xf, yf, 1, full=True)[:3],
                    m.numpy.polyfit(xf, yf + np.sin(xf), 1, cov=True)], rtol=1e-3, atol=1e-3)
    both(lambda m: m.grad(lambda c: m.numpy.polyval(c, f32(2.0)))(p1))
    raises_like_jax(lambda m: m.numpy.polyder(p1, -1), match="positive")
    raises_like_jax(lambda m: m.numpy.polyfit(xf, yf[:3], 1), match="same length")
