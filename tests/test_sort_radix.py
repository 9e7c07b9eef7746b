"""The LSD radix sort of long rows (``prims/sort.py``'s ``_RadixSort``, chosen where a row has
at least ``Target.radix_sort`` elements), against NumPy's stable sorts and real JAX: float32
with NaNs, infinities and signed zeros (bit-exact values, stable order), integer extremes,
narrow dtypes (one to five passes), several rows along either axis, lengths that are no
multiple of a chunk, payload operands, two key operands, descending sorts and ``top_k``.
Each case runs with the threshold forced down to 1 (short rows keep the tests fast) under
the device's own strategies and under the GPU ones (``profiles.GPU_STRATEGIES``); one test
checks what the lowering emits for a long row under the default rule."""
from __future__ import annotations

import numpy as np
import pytest
from checks import rjax

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import profiles, runtime

RNG = np.random.default_rng(0)
FORMS = {"device": {}, "gpu": dict(profiles.GPU_STRATEGIES)}


@pytest.fixture(params=sorted(FORMS))
def radix(request):
    """Every sort in the test takes the radix kernels, with the device's or the GPU forms."""
    wjax.clear_caches()          # jit's caches would hand back programs of another target
    with runtime.get().options(**dict(FORMS[request.param], radix_sort=1)):
        yield request.param
    wjax.clear_caches()


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint32) if a.dtype == np.float32 else a


def specials(n):
    """float32 with duplicates, NaNs of both signs and other payloads, infinities and zeros
    (no subnormals: XLA on the CPU and GPUs compare them as zeros, lavapipe does not)."""
    x = np.round(RNG.standard_normal(n).astype(np.float32) * 4) / 4   # many duplicates
    x[::7] = 0.0
    x[3::11] = -0.0
    x[1::13] = np.nan
    x[2::29] = -np.nan
    x[4::31] = np.array(0x7FC00123, np.uint32).view(np.float32)       # another NaN payload
    x[5::17] = np.inf
    x[6::19] = -np.inf
    return x


@pytest.mark.parametrize("n", [1, 2, 127, 1000, 4099])
def test_float32_special_values(radix, n):
    x = specials(n)
    want = np.argsort(x, kind="stable")        # NaNs last in order, -0.0 == 0.0: JAX's order
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.argsort(a))(x)), want)
    np.testing.assert_array_equal(bits(wjax.jit(lambda a: jnp.sort(a))(x)), bits(x[want]))
    J = rjax()
    np.testing.assert_array_equal(bits(wjax.jit(lambda a: jnp.sort(a))(x)),
                                  bits(J.numpy.sort(x)))
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.argsort(a))(x)),
                                  np.asarray(J.numpy.argsort(x)))


@pytest.mark.parametrize("n", [2048, 2049, 3 * 2048 + 1000])
def test_several_tiles(radix, n):
    """Rows of several of the GPU form's 2048-element tiles, the last one whole or ragged;
    many equal digits in every pass (stability across tiles and threads), two rows."""
    x = (RNG.integers(0, 40, (2, n)) * 0.5 - 7).astype(np.float32)
    x[:, ::97] = np.nan
    x[1, ::5] = -0.0
    want = np.argsort(x, axis=1, kind="stable")
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.argsort(a, axis=1))(x)),
                                  want)
    np.testing.assert_array_equal(
        bits(wjax.jit(lambda a: jnp.sort(a, axis=1))(x)), bits(np.take_along_axis(x, want, 1)))


@pytest.mark.parametrize("dt", [np.int32, np.uint32])
def test_integer_extremes(radix, dt):
    info = np.iinfo(dt)
    x = RNG.integers(info.min, info.max, 3000, dtype=np.int64, endpoint=True).astype(dt)
    x[::5] = info.min
    x[1::7] = info.max
    x[2::9] = 0
    x[3::11] = 1
    want = np.argsort(x, kind="stable")
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.argsort(a))(x)), want)
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.sort(a))(x)), x[want])


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "bool", "float16",
                                "bfloat16"])
def test_narrow_dtypes(radix, dt):
    """Narrow keys sort in fewer passes (bool one, 8-bit two, bfloat16 four, float16 five)."""
    dtype = jnp.dtype(dt)
    if dt in ("float16", "bfloat16"):
        x = (RNG.standard_normal(2500) * 100).astype(dtype)
        x[::9] = np.nan
        x[1::10] = -0.0
        x[2::11] = np.inf
        x[3::13] = -np.inf
    elif dt == "bool":
        x = RNG.integers(0, 2, 2500).astype(bool)
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(info.min, info.max, 2500, endpoint=True).astype(dtype)
    want = np.argsort(x.astype(np.float32) if dt == "bfloat16" else x, kind="stable")
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.argsort(a))(x)), want)
    got = np.asarray(wjax.jit(lambda a: jnp.sort(a))(x))
    np.testing.assert_array_equal(got.view(np.uint16) if x.dtype.itemsize == 2 and
                                  dt.startswith(("float", "bf")) else got,
                                  x[want].view(np.uint16) if x.dtype.itemsize == 2 and
                                  dt.startswith(("float", "bf")) else x[want])


@pytest.mark.parametrize("shape,axis", [((3, 1000), -1), ((1001, 3), 0), ((4, 301, 2), 1)])
def test_rows(radix, shape, axis):
    x = RNG.integers(-50, 50, shape).astype(np.float32)     # duplicates: stability per row
    want = np.argsort(x, axis=axis, kind="stable")
    got = wjax.jit(lambda a: jnp.argsort(a, axis=axis))(x)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda a: jnp.sort(a, axis=axis))(x)),
                                  np.take_along_axis(x, want, axis))
    np.testing.assert_array_equal(
        np.asarray(wjax.jit(lambda a: jnp.argsort(a, axis=axis, descending=True))(x)),
        np.asarray(rjax().numpy.argsort(x, axis=axis, descending=True)))


def test_payload_operands(radix):
    """lax.sort with num_keys=1 moves any number of operands of any dtype along, stably."""
    n = 2049
    k = RNG.integers(0, 20, n).astype(np.float32)
    p = [RNG.standard_normal(n).astype(np.float32), np.arange(n, dtype=np.int32)[::-1].copy(),
         RNG.integers(0, 2, n).astype(bool), RNG.integers(0, 2**32, n, dtype=np.uint64)
         .astype(np.uint32), RNG.integers(-100, 100, n).astype(np.int8)]
    order = np.argsort(k, kind="stable")
    got = wjax.jit(lambda *a: lax.sort(a, num_keys=1))(k, *p)
    for g, w in zip(got, [k] + p):
        np.testing.assert_array_equal(np.asarray(g), w[order])
    kv, vv = wjax.jit(lambda a, b: lax.sort_key_val(a, b))(k, p[0])
    np.testing.assert_array_equal(np.asarray(vv), p[0][order])
    J = rjax()
    want = J.lax.sort((k,) + tuple(p[:2]), num_keys=1)
    for g, w in zip(wjax.jit(lambda *a: lax.sort(a, num_keys=1))(k, *p[:2]), want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    kv2, vv2 = J.lax.sort_key_val(k, p[0])
    np.testing.assert_array_equal(np.asarray(vv), np.asarray(vv2))


def test_two_keys_and_lexsort(radix):
    """num_keys=2: the second key's passes first, then the first key's."""
    n = 1500
    a = RNG.integers(0, 6, n).astype(np.int32)
    b = specials(n)
    c = np.arange(n, dtype=np.int32)
    got = wjax.jit(lambda *o: lax.sort(o, num_keys=2))(a, b, c)
    J = rjax()
    want = J.lax.sort((a, b, c), num_keys=2)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(bits(g), bits(w))
    np.testing.assert_array_equal(np.asarray(wjax.jit(lambda x, y: jnp.lexsort((x, y)))(b, a)),
                                  np.lexsort((b, a)))


def test_top_k_long_row(radix):
    x = specials(3000)
    J = rjax()
    v, i = wjax.jit(lambda a: lax.top_k(a, 50))(x)
    wv, wi = J.lax.top_k(x, 50)
    np.testing.assert_array_equal(bits(v), bits(wv))
    np.testing.assert_array_equal(np.asarray(i), np.asarray(wi))


def test_gradient_and_vmap(radix):
    x = RNG.standard_normal((3, 700)).astype(np.float32)
    g = wjax.jit(wjax.grad(lambda a: (jnp.sort(a) * jnp.arange(700.0)).sum()))(x[0])
    want = np.zeros(700, np.float32)
    want[np.argsort(x[0], kind="stable")] = np.arange(700.0)
    np.testing.assert_array_equal(np.asarray(g), want)
    np.testing.assert_array_equal(np.asarray(wjax.jit(wjax.vmap(jnp.argsort))(x)),
                                  np.argsort(x, axis=1, kind="stable"))


@pytest.mark.parametrize("forms", sorted(FORMS))
def test_lowering_picks_radix_for_long_rows(forms):
    """Under each strategy set's own rule, a long row gets the radix kernels (the scan's
    shader names itself) and a short one the bitonic network."""
    wjax.clear_caches()
    with runtime.get().options(**FORMS[forms]) as t:
        long_n = t.radix_sort
        assert long_n in (profiles.CPU_STRATEGIES["radix_sort"],
                          profiles.GPU_STRATEGIES["radix_sort"])
        f = lambda a: jnp.sort(a)          # noqa: E731
        text = wjax.jit(f).lower(np.zeros(long_n, np.float32)).compile().as_text()
        assert "LSD radix sort" in text
        # init, 8 passes (CPU: count / superblock sums / scan / scatter; GPU: count /
        # scan / scatter, tiles ranked in workgroup memory), the gather
        per_pass = 4 if t.sort == "registers" else 3
        assert text.count("@compute") == 2 + 8 * per_pass
        assert ("radix sort (GPU form)" in text) == (t.sort != "registers")
        short = wjax.jit(f).lower(np.zeros(long_n - 1, np.float32)).compile().as_text()
        assert "LSD radix sort" not in short
        x = RNG.standard_normal(long_n + 3).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(wjax.jit(f)(x)), np.sort(x))
    wjax.clear_caches()


def test_every_gpu_profile_runs_the_radix_kernels_here():
    """The radix kernels lowered for each GPU profile's Target (its strategies; its limits
    clipped to this device's: a mobile GPU's 16 KiB, the default 8 storage buffers) run here
    and sort as NumPy does, with a payload and two key words."""
    from wjax._src.backend import execute
    from wjax._src.backend.target import Target
    rt = runtime.get()
    n = 3001
    k = RNG.integers(0, 9, n).astype(np.float32)
    k2 = RNG.integers(-5, 5, n).astype(np.int32)
    p = RNG.standard_normal(n).astype(np.float32)
    f = lambda a, b, c: (lax.sort((a, c), num_keys=1), lax.sort((a, b, c), num_keys=2))  # noqa
    closed = wjax.make_jaxpr(f)(k, k2, p)
    o1, o2 = np.argsort(k, kind="stable"), np.lexsort((k2, k))
    want = [k[o1], p[o1], k[o2], k2[o2], p[o2]]
    seen = 0
    for prof in profiles.PROFILES:
        if prof.strategies != profiles.GPU_STRATEGIES:
            continue
        limits = {a: min(v, rt.limits[a]) for a, v in prof.limits.items() if a in rt.limits}
        target = Target.for_profile(prof.name, limits=limits, features=prof.features & rt.features,
                                    compiles=rt.compiles, loop_limit=rt.target().loop_limit,
                                    radix_sort=1)
        exe = execute.Executable(closed.jaxpr, target)
        texts = [getattr(s, "wgsl", "") for s in exe.plan.steps]
        for kernel in ("LSD radix sort, one pass's scan",         # one each a pass: 8 + 16
                       "LSD radix sort (GPU form), one pass's count",
                       "LSD radix sort (GPU form), one pass's scatter"):
            assert sum(kernel in t for t in texts) == 8 + 16, kernel
        bufs = [jnp.asarray(a).buffer for a in (k, k2, p)]
        outs = execute.Bound(exe, closed.consts).run(rt, bufs)
        got = [np.asarray(wjax._src.array.Array(o, av)) for o, av in zip(outs, exe.out_avals)]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, err_msg=prof.name)
        seen += 1
    assert seen >= 3
