"""jax.lax breadth (issue 3): cumulative ops, sort (multi-operand, stable), top_k,
conv_general_dilated, erf_inv, reduce_precision, and the small linalg primitives.

Every new primitive's WGSL kernel is checked against its NumPy reference rule
and against real JAX where it is installed.
"""
import numpy as np
from checks import assert_same, examples, has_f16
import pytest
from hypothesis import given
from hypothesis import strategies as st

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.core.ir import typecheck
from wjax._src.prims import conv as CV
from wjax._src.prims import cumulative as CU
from wjax._src.prims import decomp as DC
from wjax._src.prims import sort as SO
from wjax._src.prims import special as SP

F = np.float32


def check(got, want, rtol=1e-5, atol=1e-6, dtype=True):
    assert_same(got, want, rtol, atol, dtype)


# --------------------------------------------------------------------------- the check

def test_conv_seed_example():
    r = lax.conv_general_dilated(
        jnp.array([1.0, 2, 1]).reshape(1, 1, 3), jnp.ones((1, 1, 10)), (1,), [(9, 9)]
    )
    check(r, np.array([[[1, 3, 4, 4, 4, 4, 4, 4, 4, 4, 3, 1]]], F))


# --------------------------------------------------------------------------- cumulative

_CUM = [("cumsum", CU.cumsum_p), ("cumprod", CU.cumprod_p), ("cummax", CU.cummax_p),
        ("cummin", CU.cummin_p), ("cumlogsumexp", CU.cumlogsumexp_p)]


@pytest.mark.parametrize("name,prim", _CUM, ids=[n for n, _ in _CUM])
def test_cumulative_against_reference_and_jax(name, prim):
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 70)).astype(F)
    if name == "cumprod":
        x = (1 + 0.01 * x).astype(F)
    x[1, 5] = np.nan
    for axis, rev in ((1, False), (1, True), (0, False)):
        got = getattr(lax, name)(jnp.asarray(x), axis=axis, reverse=rev)
        check(got, prim.reference(x, axis=axis, reverse=rev), rtol=1e-4, atol=1e-5)
        check(got, getattr(jax.lax, name)(x, axis=axis, reverse=rev), rtol=1e-4, atol=1e-5)
    specials = np.array([1.0, -np.inf, np.inf, -0.0, 2.0], F)
    check(getattr(lax, name)(jnp.asarray(specials)), getattr(jax.lax, name)(specials), rtol=1e-5)


def test_cumulative_dtypes():
    jax = pytest.importorskip("jax")
    for dt in (np.int32, np.uint32, np.int8, np.uint8, np.int16):
        x = np.array([100, 27, 3, 100, 1], dt)
        for name in ("cumsum", "cumprod", "cummax", "cummin"):
            check(getattr(lax, name)(jnp.asarray(x)), getattr(jax.lax, name)(x))
    b = np.array([False, True, False, False])   # JAX rejects bool here; wjax scans it (or / and)
    check(lax.cummax(jnp.asarray(b)), np.array([False, True, True, True]))
    check(lax.cummin(jnp.asarray(~b)), np.array([True, False, False, False]))
    h = np.array([0.5, 1.5, 2.0], np.float16)
    if has_f16():
        check(lax.cumsum(jnp.asarray(h)), jax.lax.cumsum(h), rtol=1e-3)


def test_cumulative_paths_long_rows_and_many_rows():
    rng = np.random.default_rng(1)
    x = rng.integers(-4, 5, (2, 50000)).astype(np.int32)  # multi-part workgroup scans
    check(
        lax.cumsum(jnp.asarray(x), axis=1, reverse=True),
        CU.cumsum_p.reference(x, axis=1, reverse=True),
    )
    check(lax.cummax(jnp.asarray(x), axis=1), np.maximum.accumulate(x, axis=1))
    y = rng.integers(-4, 5, (5000, 7)).astype(np.int32)    # one thread per row
    check(lax.cummin(jnp.asarray(y), axis=1), np.minimum.accumulate(y, axis=1))


@pytest.mark.parametrize("n,rows", [(2 ** 21 + 3, 1), (300001, 2), (20000, 3)])
def test_long_cumulative_rows_three_passes(n, rows):
    """Long rows are cut into parts of 16 elements a thread whose totals a middle pass scans
    (parts > 16: three dispatches, exclusive prefixes); float sums then round about as well
    as real JAX's cumsum (a blocked pairwise sum), where 256 threads folding 8192 elements
    each were 5x further off; integer sums, extrema and reverse scans exact."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((rows, n)).astype(np.float32)
    exact = np.cumsum(x.astype(np.float64), axis=1)
    got = np.asarray(wjax.jit(lambda a: lax.cumsum(a, axis=1))(x), np.float64)
    err = np.abs(got - exact).max()
    scale = np.abs(x).sum(axis=1).max() * np.finfo(np.float32).eps
    jax = pytest.importorskip("jax")
    jerr = np.abs(np.asarray(jax.jit(lambda a: jax.lax.cumsum(a, axis=1))(x), np.float64)
                  - exact).max()
    assert err <= max(3 * jerr, 64 * np.finfo(np.float32).eps * np.abs(exact).max()), \
        (err, jerr, scale)
    xi = rng.integers(-9, 10, (rows, n)).astype(np.int32)
    check(lax.cumsum(jnp.asarray(xi), axis=1, reverse=True),
          CU.cumsum_p.reference(xi, axis=1, reverse=True))
    check(lax.cummax(jnp.asarray(x), axis=1), np.maximum.accumulate(x, axis=1))
    check(lax.cummin(jnp.asarray(x), axis=1, reverse=True),
          np.flip(np.minimum.accumulate(np.flip(x, 1), axis=1), 1))


def test_cumulative_jaxpr_and_errors():
    j = wjax.make_jaxpr(lambda x: lax.cumsum(x, 0, reverse=True))(jnp.ones(3))
    assert "cumsum[axis=0 reverse=True]" in str(j)
    typecheck(j.jaxpr)
    with pytest.raises(ValueError, match=r"axis 2 is out of bounds.*\(3,\)"):
        lax.cumsum(jnp.ones(3), axis=2)
    with pytest.raises(TypeError, match="cumlogsumexp does not accept dtype int32"):
        lax.cumlogsumexp(jnp.arange(3))
    # fused producer: the elementwise op feeding the scan is inlined into its reads
    f = wjax.jit(lambda x: lax.cumsum(x * 2.0 + 1.0))
    check(f(jnp.arange(5.0)), np.cumsum(np.arange(5.0) * 2 + 1).astype(F))


# --------------------------------------------------------------------------- sort, top_k

def test_sort_multi_operand_and_stability():
    jax = pytest.importorskip("jax")
    k = np.array([3, 1, 2, 1, 3, 1], np.int32)
    v = np.arange(6, dtype=F)
    w = np.array([5, 4, 3, 2, 1, 0], np.uint32)
    check(lax.sort((jnp.asarray(k), jnp.asarray(v), jnp.asarray(w)), num_keys=1),
          jax.lax.sort((k, v, w), num_keys=1))
    k2 = np.array([1, 0, 1, 0, 1, 0], np.int32)
    check(lax.sort((jnp.asarray(k), jnp.asarray(k2), jnp.asarray(v)), num_keys=2),
          jax.lax.sort((k, k2, v), num_keys=2))
    check(lax.sort_key_val(jnp.asarray(k), jnp.asarray(v)), jax.lax.sort_key_val(k, v))
    f = np.array([1.0, np.nan, -0.0, 0.0, -np.nan, -np.inf, np.inf, -1.0], F)
    check(lax.sort(jnp.asarray(f)), jax.lax.sort(f))
    check(lax.sort((jnp.asarray(f), jnp.asarray(np.arange(8, dtype=np.int32))), num_keys=1),
          jax.lax.sort((f, np.arange(8, dtype=np.int32)), num_keys=1))
    m = np.random.default_rng(0).integers(0, 3, (4, 5, 3)).astype(np.int8)
    for d in range(3):
        check(lax.sort(jnp.asarray(m), dimension=d), jax.lax.sort(m, dimension=d))
    j = wjax.make_jaxpr(lambda a, b: lax.sort((a, b), num_keys=1))(jnp.ones(3), jnp.ones(3))
    assert "sort[dimension=0 is_stable=True num_keys=1]" in str(j)
    typecheck(j.jaxpr)


def test_sort_large_rows_global_merges():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, (2, 5000)).astype(F)
    idx = np.broadcast_to(np.arange(5000, dtype=np.int32), x.shape)
    s, i = lax.sort((jnp.asarray(x), jnp.asarray(idx)), dimension=1, num_keys=1)
    check(s, np.sort(x, axis=1))
    check(i, np.argsort(x, axis=1, kind="stable").astype(np.int32))


@pytest.mark.parametrize("strategy", ["workgroup", "registers"])
def test_sort_strategies(target_options, strategy):
    # GPUs sort blocks in workgroup memory, CPU adapters in register passes: cover both anywhere
    target_options(sort=strategy)
    rng = np.random.default_rng(4)
    x = rng.integers(0, 40, (2, 4100)).astype(F)
    check(lax.sort(jnp.asarray(x), dimension=1), np.sort(x, axis=1))
    y = rng.integers(0, 5, (301, 6)).astype(np.int32)   # short rows packed into one block
    idx = np.broadcast_to(np.arange(6, dtype=np.int32), y.shape)
    s, i = lax.sort((jnp.asarray(y), jnp.asarray(idx)), dimension=1, num_keys=1)
    check(s, np.sort(y, axis=1))
    check(i, np.argsort(y, axis=1, kind="stable").astype(np.int32))


def test_top_k_against_jax():
    jax = pytest.importorskip("jax")
    x = np.array([[1.0, np.nan, 3.0, 3.0, -np.nan, 0.0, -0.0], [5, 4, 4, 2, 9, 1, 4]], F)
    check(lax.top_k(jnp.asarray(x), 4), jax.lax.top_k(x, 4))
    xi = np.array([3, 7, 7, -1, 0], np.int32)
    check(lax.top_k(jnp.asarray(xi), 3), jax.lax.top_k(xi, 3))
    check(lax.top_k(jnp.asarray(xi), 0), jax.lax.top_k(xi, 0))
    with pytest.raises(ValueError, match="k argument to top_k"):
        lax.top_k(jnp.asarray(xi), 6)


# --------------------------------------------------------------------------- conv

_CONV_CASES = [
    dict(ls=(2, 3, 9, 8), rs=(4, 3, 3, 2), strides=(1, 1), padding="SAME"),
    dict(
        ls=(2, 9, 8, 3),
        rs=(3, 2, 3, 4),
        strides=(2, 1),
        padding="VALID",
        dn=("NHWC", "HWIO", "NHWC"),
    ),
    dict(ls=(2, 4, 9), rs=(6, 2, 3), strides=(2,), padding=[(2, 1)], fgc=2, rd=(2,), ld=(2,)),
    dict(ls=(4, 2, 7), rs=(4, 2, 3), strides=(1,), padding=[(-1, 2)], bgc=2),
    dict(
        ls=(1, 2, 5, 5),
        rs=(2, 2, 2, 2),
        strides=(1, 1),
        padding="SAME_LOWER",
        dn=("NCHW", "OIHW", "NHWC"),
    ),
    dict(ls=(1, 1, 4, 4, 4), rs=(2, 1, 2, 2, 2), strides=(2, 1, 1), padding="VALID"),
    dict(ls=(3, 1, 6), rs=(1, 1, 4), strides=(1,), padding=[(0, 0)], ld=(3,)),
]


@pytest.mark.parametrize("case", _CONV_CASES, ids=[str(i) for i in range(len(_CONV_CASES))])
def test_conv_general_dilated_against_jax_and_reference(case):
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case["ls"]).astype(F)
    w = rng.standard_normal(case["rs"]).astype(F)
    kw = dict(
        lhs_dilation=case.get("ld"),
        rhs_dilation=case.get("rd"),
        dimension_numbers=case.get("dn"),
        feature_group_count=case.get("fgc", 1),
        batch_group_count=case.get("bgc", 1),
    )
    got = lax.conv_general_dilated(
        jnp.asarray(x), jnp.asarray(w), case["strides"], case["padding"], **kw
    )
    want = jax.lax.conv_general_dilated(x, w, case["strides"], case["padding"], **kw)
    check(got, want, rtol=1e-4, atol=1e-4)
    # the NumPy reference rule agrees with the kernel
    eqn = wjax.make_jaxpr(
        lambda a, b: lax.conv_general_dilated(a, b, case["strides"], case["padding"], **kw)
    )(x, w).jaxpr.eqns[-1]
    check(CV.conv_general_dilated_p.reference(x, w, **eqn.params), got, rtol=1e-4, atol=1e-4)


_DIRECT_CASES = [  # float32 with output features % 4 == 0: the register-blocked direct kernel
    dict(ls=(2, 8, 12, 12), rs=(8, 4, 3, 3), strides=(1, 1), padding="SAME", fgc=2),
    dict(
        ls=(2, 12, 12, 8),
        rs=(3, 3, 8, 8),
        strides=(2, 1),
        padding=[(1, 2), (0, 1)],
        dn=("NHWC", "HWIO", "NHWC"),
        rd=(2, 1),
    ),
    dict(
        ls=(4, 6, 20),
        rs=(8, 6, 5),
        strides=(1,),
        padding=[(3, 3)],
        ld=(2,),
        dn=("NCW", "OIW", "NWC"),
    ),
    dict(ls=(4, 6, 200), rs=(8, 6, 5), strides=(1,), padding="VALID", bgc=2),
]


@pytest.mark.parametrize("case", _DIRECT_CASES, ids=[str(i) for i in range(len(_DIRECT_CASES))])
def test_conv_direct_kernel_against_jax(case):
    test_conv_general_dilated_against_jax_and_reference(case)


def test_conv_int_dtype_preferred_and_fused_input():
    jax = pytest.importorskip("jax")
    x = np.arange(12, dtype=np.int32).reshape(1, 2, 6)
    w = np.array([[[1, 0, -1], [2, 1, 0]]], np.int32)
    check(lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), (1,), "SAME"),
          jax.lax.conv_general_dilated(x, w, (1,), "SAME"))
    check(
        lax.conv_general_dilated(
            jnp.asarray(x), jnp.asarray(w), (1,), "VALID", preferred_element_type=np.float32
        ),
        jax.lax.conv_general_dilated(x, w, (1,), "VALID", preferred_element_type=np.float32),
    )
    f = wjax.jit(lambda a, b: lax.conv(a * 2.0, b + 1.0, (1, 1), "SAME"))
    a = np.ones((1, 1, 4, 4), F)
    b = np.zeros((1, 1, 3, 3), F)
    check(f(a, b), jax.lax.conv(a * 2.0, b + 1.0, (1, 1), "SAME"))


def test_conv_errors_name_shapes():
    x, w = jnp.ones((1, 2, 5)), jnp.ones((1, 3, 3))
    with pytest.raises(ValueError, match=r"2 // 1 != 3"):
        lax.conv_general_dilated(x, w, (1,), "VALID")
    with pytest.raises(ValueError, match="padding"):
        lax.conv_general_dilated(jnp.ones((1, 3, 5)), w, (1,), [(1, 1), (2, 2)])
    with pytest.raises(ValueError, match="Negative padding"):
        lax.conv_general_dilated(jnp.ones((1, 3, 5)), w, (1,), [(-4, -3)])
    with pytest.raises(ValueError, match="String padding"):
        lax.conv_general_dilated(jnp.ones((1, 3, 5)), w, (1,), "SAME", lhs_dilation=(2,))
    with pytest.raises(TypeError, match="must contain the characters"):
        lax.conv_general_dilated(
            jnp.ones((1, 3, 5)), w, (1,), "SAME", dimension_numbers=("NWX", "OIW", "NCW")
        )
    with pytest.raises(TypeError, match="same dtypes"):
        lax.conv_general_dilated(jnp.ones((1, 3, 5)), jnp.ones((1, 3, 3), jnp.int32), (1,), "SAME")


# ----------------------------------------------------------------------- erf_inv, reduce_precision


def test_erf_inv_against_jax():
    jax = pytest.importorskip("jax")
    x = np.array([-1.0, -0.999, -0.5, -0.0, 0.0, 1e-4, 0.3, 0.9, 0.99999, 1.0, 1.5, np.nan], F)
    check(lax.erf_inv(jnp.asarray(x)), jax.lax.erf_inv(x), rtol=2e-6, atol=1e-7)
    check(lax.erf(lax.erf_inv(jnp.asarray(x[2:9]))), x[2:9], rtol=1e-5, atol=2e-6)
    check(lax.erf_inv(jnp.asarray(x)), SP.erf_inv_p.reference(x), rtol=2e-5, atol=1e-6)


def test_reduce_precision_against_jax():
    jax = pytest.importorskip("jax")
    x = np.array([1.0, 1.0009765625, 3.14159, 65504.0, 70000.0, 1e-8, -1e-30, np.inf, np.nan, -0.0,
                  1.00390625], F)
    for e, m in ((5, 10), (8, 7), (4, 3), (8, 23), (3, 0)):
        got = lax.reduce_precision(jnp.asarray(x), e, m)
        check(got, jax.lax.reduce_precision(x, e, m))
        check(got, SP.reduce_precision_p.reference(x, exponent_bits=e, mantissa_bits=m))


# ------------------------------------------------------------------ lu, triangular_solve, cholesky


def test_decomp_primitives_against_reference():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 4, 4)).astype(F)
    lu, piv, perm = DC.lu_p.bind(jnp.asarray(a))
    rlu, rpiv, rperm = DC.lu_p.reference(a)
    check(lu, rlu, rtol=1e-4, atol=1e-5)
    check(piv, rpiv)
    check(perm, rperm)
    b = rng.standard_normal((2, 4, 3)).astype(F)
    for lower in (True, False):
        for tr in (False, True):
            for unit in (False, True):
                t = (
                    np.tril(a) + 4 * np.eye(4, dtype=F)
                    if lower
                    else np.triu(a) + 4 * np.eye(4, dtype=F)
                )
                got = DC.triangular_solve_p.bind(
                    jnp.asarray(t),
                    jnp.asarray(b),
                    left_side=True,
                    lower=lower,
                    transpose_a=tr,
                    conjugate_a=False,
                    unit_diagonal=unit,
                )
                want = DC.triangular_solve_p.reference(
                    t, b, left_side=True, lower=lower, transpose_a=tr, unit_diagonal=unit
                )
                check(got, want, rtol=1e-4, atol=1e-4)
    bt = np.swapaxes(b, -1, -2).copy()
    t = np.tril(a) + 4 * np.eye(4, dtype=F)
    got = DC.triangular_solve_p.bind(jnp.asarray(t), jnp.asarray(bt), left_side=False, lower=True,
                                     transpose_a=False, conjugate_a=False, unit_diagonal=False)
    check(
        got,
        DC.triangular_solve_p.reference(t, bt, left_side=False, lower=True),
        rtol=1e-4,
        atol=1e-4,
    )
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4, dtype=F)
    check(DC.cholesky_p.bind(jnp.asarray(spd)), DC.cholesky_p.reference(spd), rtol=1e-4, atol=1e-4)


def test_registry_rules_present():
    from wjax._src.core.primitive import REGISTRY
    for name in [
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "cumlogsumexp",
        "sort",
        "top_k",
        "conv_general_dilated",
        "erf_inv",
        "reduce_precision",
        "lu",
        "triangular_solve",
        "cholesky",
    ]:
        p = REGISTRY[name]
        assert p.abstract_eval is not None and p.reference is not None, name
        assert p.fuse is not None or p.kernel is not None, name


# --------------------------------------------------------------------------- hypothesis

@examples(12)
@given(
    st.sampled_from([(7,), (3, 5), (2, 3, 4), (0, 4)]),
    st.integers(0, 2),
    st.booleans(),
    st.sampled_from(["cumsum", "cummax", "cummin"]),
    st.sampled_from([np.float32, np.int32, np.uint8]),
    st.integers(0, 1000),
)
def test_hypothesis_cumulative(shape, axis, reverse, name, dtype, seed):
    x = np.random.default_rng(seed).integers(0, 9, shape).astype(dtype)
    if axis >= len(shape):
        with pytest.raises(ValueError):
            getattr(lax, name)(jnp.asarray(x), axis=axis)
        return
    prim = dict(_CUM)[name]
    check(
        getattr(lax, name)(jnp.asarray(x), axis=axis, reverse=reverse),
        prim.reference(x, axis=axis, reverse=reverse),
    )


@examples(10)
@given(
    st.sampled_from([(6,), (3, 9), (2, 2, 5)]),
    st.integers(0, 1000),
    st.sampled_from([np.float32, np.int32]),
)
def test_hypothesis_sort_two_keys(shape, seed, dtype):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, shape).astype(dtype)
    b = rng.integers(0, 3, shape).astype(np.int32)
    c = rng.standard_normal(shape).astype(F)
    d = len(shape) - 1
    got = lax.sort((jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)), dimension=d, num_keys=2)
    check(got, SO.sort_p.reference(a, b, c, dimension=d, num_keys=2))


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 2), (0, 1))])
@pytest.mark.parametrize("strides", [(1, 1), (2, 2), (2, 1)])
def test_conv_transpose_and_shape_tuples_match_jax(padding, strides):
    import jax
    r = np.random.RandomState(0)
    x = r.randn(2, 5, 5, 3).astype(np.float32)
    w = r.randn(3, 3, 3, 4).astype(np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    got = wjax.lax.conv_transpose(x, w, strides, padding)
    want = jax.lax.conv_transpose(x, w, strides, padding)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert wjax.lax.conv_transpose_shape_tuple(x.shape, w.shape, strides, padding, dn) == \
        tuple(int(d) for d in jax.lax.conv_transpose_shape_tuple(x.shape, w.shape, strides,
                                                                 padding, dn))
    if isinstance(padding, str):
        assert wjax.lax.conv_general_shape_tuple(x.shape, w.shape, strides, padding, dn) == \
            tuple(int(d) for d in jax.lax.conv_general_shape_tuple(x.shape, w.shape, strides,
                                                                   padding, dn))
    t = wjax.lax.conv_transpose(x, np.swapaxes(w, 2, 3), strides, padding, transpose_kernel=True)
    np.testing.assert_allclose(t, jax.lax.conv_transpose(x, np.swapaxes(w, 2, 3), strides,
                                                         padding, transpose_kernel=True),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("batch", [(), (2,), (2, 3)])
def test_tridiagonal_solve_like_jax(batch):
    """lax.linalg.tridiagonal_solve: values and gradients in every argument against JAX
    (diagonally dominant systems), under jit and vmap; JAX's errors for mismatched shapes."""
    jax = pytest.importorskip("jax")
    rs = np.random.RandomState(len(batch))
    m = 6
    dl, du = rs.randn(*batch, m).astype(F), rs.randn(*batch, m).astype(F)
    d = (rs.randn(*batch, m) + 5 * np.sign(rs.randn(*batch, m))).astype(F)
    dl[..., 0], du[..., -1] = 0, 0
    b = rs.randn(*batch, m, 2).astype(F)
    args = (dl, d, du, b)
    want = jax.lax.linalg.tridiagonal_solve(*args)
    np.testing.assert_allclose(np.asarray(wjax.jit(lax.linalg.tridiagonal_solve)(*args)),
                               np.asarray(want), rtol=2e-5, atol=2e-6)
    A = (np.eye(m, k=-1) * dl[..., :, None] + np.eye(m) * d[..., :, None]
         + np.eye(m, k=1) * du[..., :, None])
    np.testing.assert_allclose(A @ np.asarray(want), b, rtol=1e-4, atol=1e-4)

    def loss(L):
        return lambda *a: (L.linalg.tridiagonal_solve(*a) ** 2).sum()
    got = wjax.grad(loss(lax), argnums=(0, 1, 2, 3))(*args)
    want = jax.grad(loss(jax.lax), argnums=(0, 1, 2, 3))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)
    if batch:
        got = wjax.vmap(lax.linalg.tridiagonal_solve)(*args)
        np.testing.assert_allclose(np.asarray(got),
                                   np.asarray(jax.vmap(jax.lax.linalg.tridiagonal_solve)(*args)),
                                   rtol=2e-5, atol=2e-6)
    for L in (lax, jax.lax):
        with pytest.raises(TypeError, match="all diagonal arguments have the same shape"):
            L.linalg.tridiagonal_solve(dl[..., :-1], d, du, b)
        with pytest.raises(TypeError, match="leading ndim-1 dimensions of b"):
            L.linalg.tridiagonal_solve(dl, d, du, b[..., :-1, :])


def test_lax_linalg_eigh_qr_svd_like_jax():
    """lax.linalg.eigh (vectors first), qr and svd (full or thin), their values against JAX's
    and a gradient through eigh; JAX's error for full_matrices with subset_by_index."""
    jax = pytest.importorskip("jax")
    rs = np.random.RandomState(5)
    a = rs.randn(2, 4, 4).astype(F)
    s = a + np.swapaxes(a, -1, -2)
    v, w = lax.linalg.eigh(s)
    jv, jw = jax.lax.linalg.eigh(s)
    np.testing.assert_allclose(np.asarray(w), np.asarray(jw), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.abs(np.asarray(v)), np.abs(np.asarray(jv)), atol=1e-4)
    np.testing.assert_allclose(np.asarray(v) @ (np.asarray(w)[..., None] * np.swapaxes(
        np.asarray(v), -1, -2)), s, atol=1e-4)
    g = wjax.grad(lambda s: (lax.linalg.eigh(s)[1] ** 2).sum())(s)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(
        lambda s: (jax.lax.linalg.eigh(s)[1] ** 2).sum())(s)), rtol=1e-4, atol=1e-4)
    b = rs.randn(5, 3).astype(F)
    for full in (True, False):
        for got, want in zip(lax.linalg.qr(b, full_matrices=full),
                             jax.lax.linalg.qr(b, full_matrices=full)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5)
        u, sv, vh = lax.linalg.svd(b, full_matrices=full)
        ju, js, jvh = jax.lax.linalg.svd(b, full_matrices=full)
        assert u.shape == ju.shape and vh.shape == jvh.shape
        np.testing.assert_allclose(np.asarray(sv), np.asarray(js), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lax.linalg.svd(b, compute_uv=False)),
                               np.asarray(jax.lax.linalg.svd(b, compute_uv=False)), rtol=1e-5)
    for L in (lax, jax.lax):
        with pytest.raises(ValueError, match="cannot both be set"):
            L.linalg.svd(b, subset_by_index=(0, 2))
