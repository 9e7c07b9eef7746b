"""jax.numpy breadth (issue 3): ufuncs, creation, reductions, shapes, products,
search/sort/cumulative, set functions, histogram/bincount, convolve, linalg.

Each record runs the wjax function and real JAX's on the same inputs and
compares values, dtypes and shapes (NaN, +-inf, -0.0, empty and 0-d inputs
included); NumPy is the oracle where JAX is not needed.  Sizes stay small: every
new shape compiles new shaders on lavapipe.
"""
import numpy as np
from checks import assert_same, examples
import pytest
from hypothesis import given
from hypothesis import strategies as st

import wjax
import wjax.numpy as jnp

F = np.float32
SPECIAL = np.array([-2.5, -0.0, 0.0, 1.5, np.nan, np.inf, -np.inf, 3.0], F)
OTHER = np.array([3.0, 1.0, -1.0, 0.5, 2.0, np.nan, 1.0, -np.inf], F)
M = np.arange(12, dtype=F).reshape(3, 4)[:, ::-1].copy()
MN = M.copy()
MN[1, 2] = np.nan
I10 = np.arange(10, dtype=np.int32)
EMPTY = np.zeros((0,), F)
SCALAR = np.array(2.5, F)


def check(got, want, rtol=2e-5, atol=1e-6, dtype=True):
    assert_same(got, want, rtol, atol, dtype)


def _wj(a):
    if isinstance(a, np.ndarray):
        return jnp.asarray(a)
    if isinstance(a, tuple) and a and all(isinstance(x, np.ndarray) for x in a):
        return tuple(jnp.asarray(x) for x in a)
    if isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a):
        return [jnp.asarray(x) for x in a]
    return a


# (name, args, kwargs); compared against jax.numpy.<name>
RECORDS = [
    # ufuncs
    ("hypot", (SPECIAL, OTHER), {}),
    ("copysign", (SPECIAL, OTHER), {}),
    ("heaviside", (SPECIAL, OTHER), {}),
    ("fmax", (SPECIAL, OTHER), {}),
    ("fmin", (SPECIAL, OTHER), {}),
    ("logaddexp", (SPECIAL, OTHER), {}),
    ("logaddexp2", (SPECIAL, OTHER), {}),
    ("isclose", (SPECIAL, OTHER), {}),
    ("isclose", (SPECIAL, SPECIAL), {"equal_nan": True}),
    ("sinc", (SPECIAL,), {}),
    ("nan_to_num", (SPECIAL,), {}),
    ("nan_to_num", (SPECIAL,), {"nan": 7.0, "posinf": 9.0}),
    ("signbit", (SPECIAL,), {}),
    ("signbit", (I10 - 5,), {}),
    ("fabs", (I10 - 5,), {}),
    ("isneginf", (SPECIAL,), {}),
    ("isposinf", (SPECIAL,), {}),
    ("modf", (SPECIAL,), {}),
    ("frexp", (np.array([8.0, 0.0, -0.3, 1e-3, 3.0], F),), {}),
    ("ldexp", (np.array([1.0, 0.5, -3.0], F), np.array([3, 10, -2], np.int32)), {}),
    ("fmod", (I10 - 5, np.int32(3)), {}),
    ("gcd", (I10, np.int32(6)), {}),
    ("lcm", (I10, np.int32(4)), {}),
    ("allclose", (SPECIAL, SPECIAL), {"equal_nan": True}),
    ("array_equal", (M, M), {}),
    ("array_equal", (M, M[:2]), {}),
    ("array_equiv", (M, M[:1]), {}),
    ("hypot", (SCALAR, SCALAR), {}),
    ("logaddexp", (EMPTY, EMPTY), {}),
    # creation
    ("meshgrid", (I10[:3], I10[:4]), {}),
    ("meshgrid", (I10[:3], I10[:4]), {"indexing": "ij", "sparse": True}),
    ("tril", (M,), {}),
    ("triu", (M, 1), {}),
    ("tril", (np.ones((2, 3, 3), F), -1), {}),
    ("diag", (M,), {}),
    ("diag", (I10[:4], -1), {}),
    ("diagonal", (M, 1), {}),
    ("diagflat", (I10[:3],), {}),
    ("trace", (M,), {}),
    ("trace", (np.ones((2, 3, 3), np.int8), 0, 1, 2), {}),
    ("vander", (np.array([1.0, 2, 3], F),), {}),
    ("vander", (np.array([1, 2, 3], np.int32), 4), {"increasing": True}),
    ("logspace", (0.0, 2.0, 5), {}),
    ("tri", (3, 4, 1), {}),
    ("indices", ((2, 3),), {}),
    ("unravel_index", (np.array([0, 5, 11], np.int32), (3, 4)), {}),
    # reductions
    ("ptp", (M,), {}),
    ("ptp", (M,), {"axis": 1, "keepdims": True}),
    ("count_nonzero", (M,), {"axis": 0}),
    ("nansum", (MN,), {}),
    ("nansum", (MN,), {"axis": 1}),
    ("nanprod", (MN[:, :2],), {}),
    ("nanmean", (MN,), {"axis": 1}),
    ("nanvar", (MN,), {"axis": 1, "ddof": 1}),
    ("nanstd", (MN,), {}),
    ("nanmax", (MN,), {"axis": 0}),
    ("nanmin", (MN,), {}),
    ("nanmax", (np.array([np.nan, np.nan], F),), {}),
    ("nanargmax", (MN,), {"axis": 1}),
    ("nanargmin", (MN,), {}),
    ("median", (M,), {}),
    ("median", (M,), {"axis": 0}),
    ("median", (MN,), {"axis": 1}),
    ("nanmedian", (MN,), {"axis": 1}),
    ("quantile", (M, 0.3), {}),
    ("quantile", (M, np.array([0.1, 0.9], F)), {"axis": 1, "keepdims": True}),
    ("quantile", (M, 0.4), {"axis": (0, 1), "method": "lower"}),
    ("percentile", (M, 40.0), {"method": "nearest"}),
    ("nanpercentile", (MN, 50.0), {"axis": 0}),
    ("average", (M,), {"axis": 1}),
    ("average", (M,), {"axis": 1, "weights": np.array([1.0, 2, 3, 4], F), "returned": True}),
    ("average", (I10,), {"weights": I10}),
    ("cumsum", (M,), {"axis": 1}),
    ("cumsum", (M,), {}),
    ("cumprod", (M[:, :3] * 0.5,), {"axis": 0}),
    ("cumsum", (np.array([True, False, True]),), {}),
    ("cumsum", (np.array([100, 100, 100], np.int8),), {}),
    ("cumsum", (np.array([1, 2, 3], np.uint8),), {}),
    ("nancumsum", (MN,), {}),
    ("nancumprod", (MN[:, :2],), {"axis": 1}),
    ("cumulative_sum", (M,), {"axis": 0, "include_initial": True}),
    ("cumsum", (EMPTY,), {}),
    # shapes
    ("split", (I10, 5), {}),
    ("split", (I10, [2, 7]), {}),
    ("array_split", (I10, 3), {}),
    ("hsplit", (M, 2), {}),
    ("vsplit", (M, 3), {}),
    ("tile", (M, (2, 1, 2)), {}),
    ("tile", (I10[:3], 2), {}),
    ("repeat", (M, 2), {"axis": 1}),
    ("repeat", (M, 2), {}),
    ("repeat", (I10, I10 % 3), {}),
    ("repeat", (I10[:3], np.array([1, 0, 2], np.int32)), {"total_repeat_length": 5}),
    ("pad", (M, ((1, 2), (0, 3))), {}),
    ("pad", (M, 2), {"constant_values": ((1, 2), (3, 4))}),
    ("pad", (M, ((1, 4), (5, 2))), {"mode": "edge"}),
    ("pad", (M, ((1, 4), (5, 2))), {"mode": "reflect"}),
    ("pad", (M, ((1, 4), (5, 2))), {"mode": "symmetric"}),
    ("pad", (M, ((1, 4), (5, 2))), {"mode": "wrap"}),
    ("pad", (I10, (3, 2)), {"mode": "reflect", "reflect_type": "odd"}),
    ("pad", (M, ((1, 2), (2, 1))), {"mode": "maximum"}),
    ("pad", (M, ((1, 2), (2, 1))), {"mode": "mean"}),
    ("pad", (M, ((1, 2), (2, 1))), {"mode": "minimum", "stat_length": 2}),
    ("pad", (M, ((1, 2), (2, 1))), {"mode": "linear_ramp", "end_values": 5}),
    ("pad", (SCALAR, 0), {}),
    ("pad", (EMPTY, 2), {}),
    ("flip", (M,), {}),
    ("flip", (M, 1), {}),
    ("fliplr", (M,), {}),
    ("flipud", (M,), {}),
    ("roll", (M, 2), {}),
    ("roll", (M, (1, -1), (0, 1)), {}),
    ("roll", (M, -5, 1), {}),
    ("rot90", (M,), {}),
    ("rot90", (M, 2), {}),
    ("rot90", (M, 3), {"axes": (1, 0)}),
    ("column_stack", ((I10, I10),), {}),
    ("dstack", ((M, M),), {}),
    ("atleast_3d", (M,), {}),
    ("append", (M, M), {"axis": 0}),
    ("append", (M, I10), {}),
    ("delete", (I10, np.array([1, 3])), {}),
    ("insert", (I10, 2, 99), {}),
    ("insert", (I10, np.array([1, 1, 4]), np.array([7, 8, 9], np.int32)), {}),
    ("diff", (M,), {}),
    ("diff", (I10, 2), {"prepend": np.int32(3)}),
    ("diff", (np.array([True, False, False]),), {}),
    ("ediff1d", (I10,), {"to_begin": np.int32(-1)}),
    ("unstack", (M,), {"axis": 1}),
    ("resize", (I10[:3], (2, 4)), {}),
    ("take", (M, np.array([-1, 30, 2])), {}),
    ("take", (M, np.array([-1, 5, 2])), {"axis": 1, "mode": "clip"}),
    ("take", (I10, np.array([-11, 12])), {"mode": "wrap"}),
    ("take", (np.array([True, False]), np.array([0, 5])), {}),
    ("take_along_axis", (M, np.array([[0, 3], [1, -1], [9, 2]]), 1), {}),
    ("take_along_axis", (M, np.array([[0, 2, 1, 0]]), 0), {"mode": "clip"}),
    ("select", ([M > 5, M < 2], [M, -M], 7.0), {}),
    ("choose", (np.array([0, 1, 1], np.int32), [I10[:3], I10[3:6]]), {}),
    # products
    ("tensordot", (M, M.T, 1), {}),
    ("tensordot", (M, M, ((0, 1), (0, 1))), {}),
    ("kron", (M[:2, :2], M), {}),
    ("kron", (I10[:3], I10[:2]), {}),
    ("cross", (np.array([1.0, 2, 3], F), np.array([4.0, 5, 6], F)), {}),
    ("einsum", ("ij,jk->ik", M, M.T), {}),
    ("einsum", ("ii->i", M[:3, :3]), {}),
    ("einsum", ("ij->", M), {}),
    ("einsum", ("...j,...j->...", M, M), {}),
    ("einsum", ("i,j", I10[:3], I10[:2]), {}),
    ("einsum", ("bij,bjk->bik", np.ones((2, 3, 4), F), np.ones((2, 4, 5), F)), {}),
    ("einsum", ("ij,jk,kl->il", M, M.T, M), {}),
    ("einsum", ("ijk->kji", np.ones((2, 3, 4), F)), {}),
    ("vecdot", (M, M), {}),
    ("matrix_transpose", (np.ones((2, 3, 4), F),), {}),
    # sort & search
    ("sort", (SPECIAL,), {}),
    ("sort", (M,), {"axis": 0}),
    ("sort", (M,), {"axis": None, "descending": True}),
    ("argsort", (SPECIAL,), {}),
    ("argsort", (np.array([3, 1, 2, 1, 3], np.int32),), {"descending": True}),
    ("sort", (np.array([True, False, True]),), {}),
    ("sort", (np.array([200, 3, 7], np.uint8),), {}),
    ("sort", (EMPTY,), {}),
    ("argsort", (np.array([1.0, -0.0, 0.0, -1.0], F),), {}),
    ("lexsort", ((np.array([1, 1, 0, 0]), np.array([2, 1, 2, 1])),), {}),
    ("partition", (np.array([5.0, 1, 4, 2, 3], F), 2), {}),
    (
        "searchsorted",
        (np.array([1.0, 2, 2, 3, np.nan], F), np.array([2.0, 0, 5, np.nan, 2.5], F)),
        {},
    ),
    (
        "searchsorted",
        (np.array([1.0, 2, 2, 3, np.nan], F), np.array([2.0, 0, 5, np.nan, 2.5], F)),
        {"side": "right"},
    ),
    ("searchsorted", (I10, np.array([[3, -1], [20, 9]], np.int32)), {}),
    ("digitize", (np.array([0.5, 1, 2.5, 7], F), np.array([1.0, 2, 3], F)), {}),
    ("digitize", (np.array([0.5, 1, 2.5, 7], F), np.array([3.0, 2, 1], F)), {"right": True}),
    ("nonzero", (M > 5,), {}),
    ("nonzero", (M > 5,), {"size": 10, "fill_value": -1}),
    ("flatnonzero", (M > 5,), {}),
    ("argwhere", (M > 5,), {}),
    ("argwhere", (np.array(3),), {}),
    ("argwhere", (np.array(0),), {}),
    ("unique", (np.array([3, 1, 1, 2, 3, 3]),), {}),
    (
        "unique",
        (np.array([3, 1, 1, 2, 3, 3]),),
        {"return_index": True, "return_inverse": True, "return_counts": True},
    ),
    (
        "unique",
        (np.array([3, 1, 1, 2, 3, 3]),),
        {"return_index": True, "return_counts": True, "size": 5},
    ),
    ("unique", (np.array([3, 1, 1, 2]),), {"size": 5, "fill_value": -7}),
    ("unique", (SPECIAL,), {}),
    ("unique", (np.array([[3, 1], [1, 2]]),), {"return_inverse": True}),
    ("unique", (np.array([[1, 2], [1, 2], [0, 5]]),), {"axis": 0}),
    ("isin", (M, np.array([1.0, 5, 7], F)), {}),
    ("isin", (M, np.array([1.0, 5, 7], F)), {"invert": True}),
    ("bincount", (np.array([0, 1, 1, 5, -1]),), {}),
    ("bincount", (np.array([0, 1, 1]),), {"weights": np.array([0.5, 1, 2], F), "length": 4}),
    ("bincount", (np.array([0, 1, 1]),), {"minlength": 5}),
    ("histogram", (np.array([1.0, 2, 2, 3, 10], F),), {}),
    (
        "histogram",
        (np.array([1.0, 2, 2, 3, 10], F),),
        {"bins": 3, "range": (0, 5), "density": True},
    ),
    (
        "histogram",
        (np.array([1.0, 2, 2, 3, 10], F),),
        {"bins": np.array([0.0, 2, 4, 11], F), "weights": np.array([1.0, 2, 3, 4, 5], F)},
    ),
    ("convolve", (np.array([1, 2, 3]), np.array([0, 1, 0.5])), {"mode": "same"}),
    ("convolve", (np.array([1, 2, 3]), np.array([1, 1, 1, 1, 1])), {}),
    ("correlate", (np.array([1, 2, 3]), np.array([0, 1, 0.5, 2])), {"mode": "full"}),
    ("convolve", (np.array([1.0, 2, 3, 4, 5], F), np.array([1.0, -1], F)), {"mode": "valid"}),
    ("correlate", (np.array([1.0, 2, 3, 4, 5], F), np.array([1.0, -1, 2], F)), {"mode": "same"}),
    (
        "interp",
        (np.array([0.0, 1.5, 2.5, 9], F), np.array([1.0, 2, 3], F), np.array([3.0, 2, 0], F)),
        {},
    ),
    (
        "interp",
        (np.array([0.0, 1.5], F), np.array([1.0, 2, 3], F), np.array([3.0, 2, 0], F)),
        {"left": -1.0},
    ),
    ("trapezoid", (M,), {}),
    ("trapezoid", (M,), {"x": np.array([0.0, 1, 3, 4], F)}),
    # more creation / shapes / sets / array-API spellings
    ("geomspace", (1.0, 1000.0, 4), {}),
    ("fill_diagonal", (M, 5.0), {"inplace": False}),
    ("indices", ((2, 3),), {"sparse": True}),
    ("ravel_multi_index", ((np.array([0, 2]), np.array([1, 3])), (3, 4)), {}),
    (
        "piecewise",
        (
            np.array([-1.0, 0, 2], F),
            [np.array([True, False, False]), np.array([False, False, True])],
            [lambda x: -x, lambda x: x * x, 7.0],
        ),
        {},
    ),
    ("put_along_axis", (M, np.array([[0], [1], [2]]), 99.0, 1), {"inplace": False}),
    ("setdiff1d", (I10, np.array([1, 5, 7], np.int32)), {}),
    ("intersect1d", (I10, np.array([1, 5, 12], np.int32)), {}),
    ("union1d", (I10[:3], np.array([1, 5, 7], np.int32)), {}),
    ("setxor1d", (I10[:6], np.array([1, 5, 7], np.int32)), {}),
    ("trim_zeros", (np.array([0, 0, 1, 2, 0], np.int32),), {}),
    ("rollaxis", (np.ones((2, 3, 4), F), 2), {}),
    ("dsplit", (np.ones((2, 2, 4), F), 2), {}),
    ("vecmat", (np.ones(3, F), M), {}),
    ("matvec", (M, np.ones(4, F)), {}),
    ("angle", (np.array([-1.0, 2.0], F),), {}),
    ("einsum", (M, [0, 1], M, [2, 1], [0, 2]), {}),
    ("argpartition", (np.array([5.0, 1, 4, 2, 3], F), 2), {}),
    ("extract", (M > 5, M), {}),
    ("compress", (np.array([True, False, True]), M), {"axis": 0}),
    ("cumulative_prod", (I10[1:5],), {}),
    (
        "choose",
        (np.array([0, 3, 1], np.int32), [I10[:3], I10[3:6], I10[6:9], I10[:3] * 2]),
        {"mode": "wrap"},
    ),
    ("tril_indices", (3,), {}),
    ("triu_indices", (3, 1, 4), {}),
    ("nanquantile", (np.array([1.0, np.nan, 3, 4], F), 0.5), {}),
    ("linalg.tensorsolve", (np.eye(6, dtype=F).reshape(2, 3, 6), np.ones((2, 3), F)), {}),
    ("linalg.tensorinv", (np.eye(6, dtype=F).reshape(6, 2, 3), 1), {}),
    ("linalg.multi_dot", ([M, M.T, M],), {}),
    ("linalg.cond", (np.array([[2.0, 1], [1, 3]], F), 1), {}),
    ("linalg.vector_norm", (M,), {"ord": 3}),
    ("linalg.matrix_norm", (M,), {"ord": 1}),
    ("linalg.diagonal", (np.ones((2, 3, 3), F),), {"offset": 1}),
    ("linalg.trace", (np.ones((2, 3, 3), F),), {}),
    ("linalg.outer", (I10[:3], I10[:2]), {}),
]


def _rid(r):
    return f"{r[0]}-" + "-".join(f"{k}" for k in r[2]) if r[2] else r[0]


@pytest.mark.parametrize("rec", RECORDS, ids=[f"{i}-{_rid(r)}" for i, r in enumerate(RECORDS)])
def test_against_jax(rec):
    jax = pytest.importorskip("jax")
    import jax.numpy as rjnp
    name, args, kw = rec
    fw, fr = jnp, rjnp
    for part in name.split("."):
        fw, fr = getattr(fw, part), getattr(fr, part)
    want = fr(*args, **kw)
    got = fw(*[_wj(a) for a in args], **{k: _wj(v) for k, v in kw.items()})
    del jax
    check(got, want, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- NumPy oracle


def test_ufuncs_against_numpy():
    with np.errstate(all="ignore"):
        for f in ["hypot", "copysign", "fmax", "fmin", "logaddexp", "logaddexp2"]:
            check(getattr(jnp, f)(SPECIAL, OTHER), getattr(np, f)(SPECIAL, OTHER), dtype=False)
        check(
            jnp.sinc(SPECIAL[np.isfinite(SPECIAL)]),
            np.sinc(SPECIAL[np.isfinite(SPECIAL)]).astype(F),
        )
        check(jnp.nan_to_num(SPECIAL), np.nan_to_num(SPECIAL))
        check(jnp.signbit(SPECIAL), np.signbit(SPECIAL))


def test_sort_argsort_stable_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (3, 37)).astype(F)
    x[0, 3] = np.nan
    check(jnp.sort(x), np.sort(x))
    check(jnp.argsort(x, axis=1), np.argsort(x, axis=1, kind="stable").astype(np.int32))
    check(jnp.argsort(x, axis=0), np.argsort(x, axis=0, kind="stable").astype(np.int32))
    # crosses the workgroup-block size: global merge steps
    big = rng.standard_normal(3000).astype(F)
    check(jnp.sort(big), np.sort(big))
    check(jnp.argsort(big), np.argsort(big, kind="stable").astype(np.int32))


def test_cumsum_long_and_wide():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5000)).astype(F)
    check(
        jnp.cumsum(x, axis=1),
        np.cumsum(x.astype(np.float64), axis=1),
        rtol=1e-4,
        atol=1e-3,
        dtype=False,
    )
    y = rng.integers(-3, 4, (40000,)).astype(np.int32)   # one long row: multi-part scan
    check(jnp.cumsum(y), np.cumsum(y).astype(np.int32))
    z = rng.integers(-3, 4, (3000, 3)).astype(np.int32)  # many short rows: one thread per row
    check(jnp.cumsum(z, axis=0), np.cumsum(z, axis=0).astype(np.int32))
    check(jnp.cumprod(np.array([[1, 2, 3], [4, 5, 6]], np.int32), axis=1),
          np.array([[1, 2, 6], [4, 20, 120]], np.int32))


def test_pairwise_sum_precision():
    # the cumulative and nan reductions compose with the tree reductions
    x = jnp.ones(10**5) * 0.1
    assert abs(float(jnp.nansum(x)) - 10000.0) < 0.05


def test_nonzero_unique_argwhere_outside_and_inside_jit():
    x = np.array([[0, 3, 0], [2, 0, 2]], np.int32)
    check(jnp.nonzero(x), tuple(i.astype(np.int32) for i in np.nonzero(x)))
    check(jnp.argwhere(x), np.argwhere(x).astype(np.int32))
    check(jnp.unique(x), np.unique(x))
    f = wjax.jit(lambda a: jnp.nonzero(a, size=5, fill_value=-1))
    r, c = f(x)
    check(r, np.array([0, 1, 1, -1, -1], np.int32))
    check(c, np.array([1, 0, 2, -1, -1], np.int32))
    u = wjax.jit(lambda a: jnp.unique(a, size=4))(x)
    check(u, np.array([0, 2, 3, 0], np.int32))
    with pytest.raises(wjax.errors.ConcretizationTypeError, match="size argument of jnp.nonzero"):
        wjax.jit(jnp.nonzero)(x)
    with pytest.raises(Exception, match="size"):
        wjax.jit(jnp.unique)(x)
    with pytest.raises(Exception, match="length"):
        wjax.jit(lambda a: jnp.bincount(a.ravel()))(x)


def test_where_one_argument():
    x = np.array([0.0, 2.0, 0.0, -1.0], F)
    check(jnp.where(x), (np.array([1, 3], np.int32),))


def test_jit_matches_eager():
    x = jnp.asarray(M)
    fs = [
        lambda a: jnp.sort(a, axis=0),
        jnp.median,
        lambda a: jnp.quantile(a, jnp.array([0.2, 0.7])),
        lambda a: jnp.pad(a, 2, mode="reflect"),
        lambda a: jnp.roll(a, 1),
        jnp.tril,
        lambda a: jnp.einsum("ij,kj->ik", a, a),
        lambda a: jnp.histogram(a, bins=4),
        lambda a: jnp.searchsorted(jnp.sort(a.ravel()), a),
        jnp.nanmax,
        lambda a: jnp.cumsum(a, 1),
        lambda a: jnp.take(a, jnp.array([0, 5, -1])),
        lambda a: jnp.convolve(a[0], a[1]),
    ]
    for f in fs:
        check(wjax.jit(f)(x), f(x))


def test_roll_traced_shift():
    x = jnp.asarray(I10)
    f = wjax.jit(lambda a, s: jnp.roll(a, s))
    for s in (0, 3, -4, 13):
        check(f(x, np.int32(s)), np.roll(I10, s))


def test_linalg_small_matrices():
    rng = np.random.default_rng(2)
    for n in (1, 3, 6):
        a = rng.standard_normal((n, n)).astype(F)
        b = rng.standard_normal((n, 2)).astype(F)
        check(jnp.linalg.inv(a), np.linalg.inv(a), rtol=2e-3, atol=2e-3)
        check(jnp.linalg.solve(a, b), np.linalg.solve(a, b), rtol=2e-3, atol=2e-3)
        check(jnp.linalg.solve(a, b[:, 0]), np.linalg.solve(a, b[:, 0]), rtol=2e-3, atol=2e-3)
        check(jnp.linalg.det(a), np.linalg.det(a).astype(F), rtol=1e-3, atol=1e-4)
        spd = a @ a.T + n * np.eye(n, dtype=F)
        check(jnp.linalg.cholesky(spd), np.linalg.cholesky(spd), rtol=1e-4, atol=1e-4)
        s, ld = jnp.linalg.slogdet(a)
        ws, wl = np.linalg.slogdet(a)
        check((s, ld), (np.asarray(ws, F), np.asarray(wl, F)), rtol=1e-3, atol=1e-3)
    A = rng.standard_normal((4, 3, 3)).astype(F)
    check(jnp.linalg.inv(A), np.linalg.inv(A), rtol=2e-3, atol=2e-3)
    check(jnp.linalg.det(A), np.linalg.det(A).astype(F), rtol=1e-3, atol=1e-4)
    check(jnp.linalg.matrix_power(A, 3), np.linalg.matrix_power(A, 3), rtol=1e-4, atol=1e-4)
    for o in (None, "fro", 1, -1, np.inf, -np.inf):
        check(jnp.linalg.norm(M, ord=o), np.asarray(np.linalg.norm(M, ord=o), F), rtol=1e-5)
    check(wjax.jit(jnp.linalg.inv)(A), np.linalg.inv(A), rtol=2e-3, atol=2e-3)


def test_linalg_singular_like_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as rjnp
    sing = np.array([[1.0, 2], [2, 4]], F)
    check(jnp.linalg.det(np.zeros((2, 2), F)), rjnp.linalg.det(np.zeros((2, 2), F)))
    check(jnp.linalg.inv(sing), rjnp.linalg.inv(sing))
    notpd = np.array([[1.0, 2], [2, 1]], F)
    check(jnp.linalg.cholesky(notpd), rjnp.linalg.cholesky(notpd))
    check(
        jnp.linalg.slogdet(np.array([[0.0, 1], [1, 0]], F)),
        rjnp.linalg.slogdet(np.array([[0.0, 1], [1, 0]], F)),
    )
    del jax


def test_array_namespace():
    x = jnp.arange(3)
    ns = x.__array_namespace__()
    assert ns is jnp
    for name in [
        "asarray",
        "sort",
        "argsort",
        "cumulative_sum",
        "unique_values",
        "unique_counts",
        "unique_inverse",
        "unique_all",
        "take",
        "take_along_axis",
        "searchsorted",
        "vecdot",
        "matrix_transpose",
        "permute_dims",
        "concat",
        "acos",
        "atan2",
        "pow",
        "isdtype",
        "bitwise_left_shift",
        "tril",
        "triu",
        "linalg",
    ]:
        assert hasattr(ns, name), name
    assert ns.__array_api_version__
    check(ns.unique_counts(np.array([1, 1, 2], np.int32)).counts, np.array([2, 1], np.int32))
    assert ns.isdtype(np.float32, "real floating") and not ns.isdtype(np.int32, "real floating")


# --------------------------------------------------------------------------- bad input


def test_bad_input_errors():
    x = jnp.asarray(M)
    with pytest.raises(ValueError, match="axis 5 is out of bounds"):
        jnp.cumsum(x, axis=5)
    with pytest.raises(ValueError, match="axis -3"):
        jnp.sort(x, axis=-3)
    with pytest.raises(ValueError, match="negative"):
        jnp.pad(x, -1)
    with pytest.raises(ValueError, match=r"pad_width .*rank 2"):
        jnp.pad(x, ((1, 2, 3),))
    with pytest.raises(NotImplementedError, match="Unimplemented padding mode"):
        jnp.pad(x, 1, mode="bogus")
    with pytest.raises(ValueError, match="equal division"):
        jnp.split(jnp.arange(10), 3)
    with pytest.raises(TypeError, match=r"shape mismatch.*\(3, 4\)"):
        jnp.tensordot(x, x, ((1,), (1,))) if False else jnp.tensordot(x, x, ((0,), (1,)))
    with pytest.raises(ValueError, match="einsum"):
        jnp.einsum("ij,jk->ik", x, x)
    with pytest.raises(ValueError, match="1-dimensional"):
        jnp.convolve(x, x)
    with pytest.raises(ValueError, match="mode must be one of"):
        jnp.convolve(jnp.ones(3), jnp.ones(2), mode="bogus")
    with pytest.raises(ValueError, match="0d"):
        jnp.nonzero(jnp.asarray(1.0))
    with pytest.raises(ValueError, match="same number of dimensions"):
        jnp.take_along_axis(x, jnp.zeros((3,), jnp.int32), 1)
    with pytest.raises(ValueError, match="square"):
        jnp.linalg.inv(jnp.ones((2, 3)))
    with pytest.raises(ValueError, match="does not match"):
        jnp.linalg.solve(jnp.eye(3), jnp.ones((2,)))
    with pytest.raises(TypeError, match="integer"):
        jnp.bincount(jnp.ones(3))
    with pytest.raises(ValueError, match="weights"):
        jnp.bincount(jnp.arange(3), weights=jnp.ones(2))


# --------------------------------------------------------------------------- hypothesis

_SHAPES = st.sampled_from([(5,), (2, 3), (3, 1, 4), (0, 3), (4, 4)])
_DTYPES = st.sampled_from([np.float32, np.int32, np.int8, np.uint8])


def _arr(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-5, 6, shape)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    return x.astype(dtype)


@examples(12)
@given(_SHAPES, _DTYPES, st.integers(-3, 2), st.integers(0, 1000))
def test_hypothesis_sort_cumsum_flip(shape, dtype, axis, seed):
    x = _arr(shape, dtype, seed)
    if not -x.ndim <= axis < x.ndim:
        with pytest.raises(ValueError):
            jnp.sort(x, axis=axis)
        return
    check(jnp.sort(x, axis=axis), np.sort(x, axis=axis))
    check(jnp.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable").astype(np.int32))
    want_dt = np.int32 if dtype == np.bool_ else dtype
    check(jnp.cumsum(x, axis=axis), np.cumsum(x, axis=axis, dtype=want_dt))
    check(jnp.flip(x, axis), np.flip(x, axis))
    check(jnp.roll(x, 2, axis), np.roll(x, 2, axis))


@examples(10)
@given(_SHAPES, st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]),
       st.integers(0, 3), st.integers(0, 3), st.integers(0, 100))
def test_hypothesis_pad(shape, mode, lo, hi, seed):
    x = _arr(shape, np.float32, seed)
    if 0 in shape and mode != "constant" and (lo or hi):
        with pytest.raises(ValueError):
            jnp.pad(x, (lo, hi), mode=mode)
        return
    check(jnp.pad(x, (lo, hi), mode=mode), np.pad(x, (lo, hi), mode=mode))


@examples(10)
@given(st.sampled_from([(6,), (2, 5), (3, 2, 2)]), st.integers(0, 100), st.booleans())
def test_hypothesis_take_along_axis_and_quantile(shape, seed, keepdims):
    x = _arr(shape, np.float32, seed)
    ax = len(shape) - 1
    idx = np.argsort(x, axis=ax, kind="stable")
    check(jnp.take_along_axis(x, idx.astype(np.int32), ax), np.take_along_axis(x, idx, ax))
    check(
        jnp.median(x, axis=ax, keepdims=keepdims),
        np.median(x, axis=ax, keepdims=keepdims).astype(F),
        rtol=1e-5,
    )
    check(
        jnp.quantile(x, 0.25, axis=ax),
        np.quantile(x, 0.25, axis=ax).astype(F),
        rtol=1e-5,
        atol=1e-5,
    )


def test_vecdot_conjugates_and_keeps_the_dtype_as_jax():
    jjnp = pytest.importorskip("jax.numpy")
    r = np.random.RandomState(5)
    c1 = (r.randn(2, 3) + 1j * r.randn(2, 3)).astype(np.complex64)
    c2 = (r.randn(2, 3) + 1j * r.randn(2, 3)).astype(np.complex64)
    u = np.array([[200, 100, 7]], np.uint8)
    i8, f = np.ones((2, 3), np.int8), r.randn(2, 3).astype(np.float32)
    for a, b in ((c1, c2), (u, u), (i8, f), (f, f)):
        for mod_w, mod_j in ((jnp, jjnp), (jnp.linalg, jjnp.linalg)):
            got, want = mod_w.vecdot(a, b), mod_j.vecdot(a, b)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)
    got = wjax.grad(lambda x: jnp.vecdot(x, f).sum())(f)
    np.testing.assert_allclose(got, f, rtol=1e-6)


def test_creation_functions_take_the_array_apis_device_keyword():
    dev = wjax.devices()[0]
    np.testing.assert_array_equal(jnp.eye(2, device=dev), np.eye(2))
    np.testing.assert_array_equal(jnp.empty_like(np.ones(3), device=dev).shape, (3,))
    np.testing.assert_allclose(jnp.linspace(0, 1, 3, device=dev), [0, 0.5, 1])


def test_logaddexp_derivatives_match_jax():
    # JAX's rule: exp(x_i - out) per operand (half each at a tie, as softplus at 0), +inf
    # counted as 0 in the exponent
    import jax
    import jax.numpy as jjnp

    import wjax
    import wjax.numpy as wjnp
    cases = [(0.0, 0.0), (1.0, -np.inf), (1.0, np.inf), (-np.inf, -np.inf), (np.inf, 1.0),
             (2.0, -3.0)]
    for name in ("logaddexp", "logaddexp2"):
        for a, b in cases:
            a, b = np.float32(a), np.float32(b)
            got = wjax.grad(getattr(wjnp, name), argnums=(0, 1))(a, b)
            want = jax.grad(getattr(jjnp, name), argnums=(0, 1))(a, b)
            np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)
    x = np.array([-2.0, 0.0, 3.0], np.float32)
    np.testing.assert_allclose(wjax.vmap(wjax.grad(wjax.nn.softplus))(x),
                               jax.vmap(jax.grad(jax.nn.softplus))(x), rtol=1e-6)


def test_expand_dims_takes_any_sequence_of_axes_like_jax():
    import jax.numpy as jjnp

    import wjax.numpy as wjnp
    x = np.ones((2,), np.float32)
    for axis in (range(0), range(2), np.array([0, 2]), (0, -1), 1, np.int64(0)):
        assert wjnp.expand_dims(x, axis).shape == jjnp.expand_dims(x, axis).shape
    for mod in (wjnp, jjnp):
        with pytest.raises(TypeError):
            mod.expand_dims(x, 1.0)


def test_roots_sort_complex_and_numpy_names_like_jax():
    """jnp.roots (companion eigenvalues; leading zeros stripped), sort_complex, the complex
    dtype aliases and fromfile's error, against JAX."""
    jax = pytest.importorskip("jax")
    J = jax.numpy
    for p in ([1.0, -3.0, 2.0], [0.0, 0.0, 1.0, -1.0], [1.0, -1.0, 0.0], [5.0], [0.0, 0.0],
              [1, 2, 1], [1.0, 0.0, 1.0], [2.0, -4.0, 1.5, 7.0]):
        got, want = jnp.roots(jnp.array(p)), J.roots(J.array(p))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(np.sort_complex(np.asarray(got)),
                                   np.sort_complex(np.asarray(want)), atol=2e-5)
    x = [3 + 1j, 1 + 2j, 1 - 1j, 2.0]
    np.testing.assert_array_equal(np.asarray(jnp.sort_complex(jnp.array(x))),
                                  np.asarray(J.sort_complex(J.array(x))))
    assert jnp.sort_complex(jnp.array([3, 1])).dtype == J.sort_complex(J.array([3, 1])).dtype
    assert jnp.csingle(1).dtype == J.csingle(1).dtype and jnp.ComplexWarning is J.ComplexWarning
    for M in (jnp, J):
        with pytest.raises(NotImplementedError, match="fromfile"):
            M.fromfile("nothing")


def test_polyval_of_coefficient_arrays_like_jax():
    """Coefficients of more dimensions are polynomials along the first axis, broadcast
    against x (diffrax's interpolation); a scalar is JAX's IndexError."""
    jax = pytest.importorskip("jax")
    p = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    for x in (np.float32(0.5), np.array([[0.5], [2.0]], np.float32)):
        np.testing.assert_allclose(np.asarray(jnp.polyval(p, x)),
                                   np.asarray(jax.numpy.polyval(p, x)), rtol=1e-6)
    for M in (jnp, jax.numpy):
        with pytest.raises(IndexError):
            M.polyval(np.float32(3.0), 2.0)
