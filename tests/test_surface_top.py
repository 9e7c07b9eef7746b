"""Top-level jax.* names wjax lacked (issue 15): the config flags as context managers with
their effects (rank promotion, tracer leaks, no_tracing/no_execution, cache-miss
explanations, transfer guards, x64 refused, user contexts), float0 and allow_int,
custom_gradient, linear_transpose, fwd_and_bwd, custom_batching, jax.ops segment sums,
api_util, monitoring, dlpack, ds on refs, one-process helpers, new tree_util names and the
import hook for the new modules -- against real JAX."""
from __future__ import annotations

import dataclasses
import logging
import threading
import warnings

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from surface_util import both, raises_like_jax, same

jax = pytest.importorskip("jax")
f32 = np.float32

STATES = ["check_tracer_leaks", "debug_nans", "debug_infs", "log_compiles",
          "default_matmul_precision", "numpy_rank_promotion", "enable_checks",
          "explain_cache_misses", "softmax_custom_jvp", "threefry_partitionable",
          "default_prng_impl", "legacy_prng_key", "enable_custom_prng", "enable_x64",
          "transfer_guard_host_to_device", "transfer_guard_device_to_host",
          "transfer_guard_device_to_device", "no_tracing", "no_execution", "debug_key_reuse",
          "allow_f16_reductions", "numpy_dtype_promotion"]


def test_config_states_are_thread_local_context_managers_like_jax():
    for name in STATES:
        ours, theirs = getattr(wjax, name), getattr(jax, name)
        assert ours.value == theirs.value, name
        with pytest.raises(TypeError, match="bool"):
            bool(ours)
    with wjax.debug_nans(True):
        assert wjax.config.jax_debug_nans and wjax.debug_nans.value
        seen = []
        t = threading.Thread(target=lambda: seen.append(wjax.config.jax_debug_nans))
        t.start()
        t.join()
        assert seen == [False]          # another thread keeps the global value
    assert not wjax.config.jax_debug_nans
    with wjax.debug_infs():             # a bool flag's context defaults to True, as JAX's
        assert wjax.debug_infs.value
    with pytest.raises(TypeError, match="requires an argument"):
        wjax.numpy_rank_promotion()
    raises_like_jax(lambda m: m.numpy_rank_promotion("sometimes"), match="enum value")

    @wjax.log_compiles(True)
    def decorated():
        return wjax.config.jax_log_compiles
    assert decorated() and not wjax.config.jax_log_compiles
    with pytest.raises(NotImplementedError, match="64-bit"):
        with wjax.enable_x64(True):
            pass
    with pytest.raises(NotImplementedError, match="threefry2x32"):
        wjax.config.update("jax_default_prng_impl", "rbg")
    assert wjax.checking_leaks is not None and callable(wjax.transfer_guard)


def test_numpy_rank_promotion_warns_and_raises_like_jax():
    def run(m):
        out = []
        for mode in ("warn", "raise"):
            with warnings.catch_warnings(record=True) as w, m.numpy_rank_promotion(mode):
                warnings.simplefilter("always")
                try:
                    m.numpy.ones(2) + m.numpy.ones((3, 2))
                    out.append("ok")
                except ValueError as e:
                    out.append(str(e))
                m.numpy.ones(()) + m.numpy.ones(3)      # a scalar is not a rank promotion
                out.append([str(x.message).split(";")[0] for x in w])
        return out
    assert run(wjax) == run(jax)
    with wjax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            wjax.jit(lambda a, b: a * b)(jnp.ones(2), jnp.ones((2, 2)))
    # the setting is part of jit's trace key: the same function allows it again outside
    assert wjax.jit(lambda a, b: a * b)(jnp.ones(2), jnp.ones((2, 2))).shape == (2, 2)


def test_tracer_leaks_no_tracing_no_execution_and_cache_miss_explanations(caplog):
    leak = []
    with wjax.check_tracer_leaks(True):
        with pytest.raises(Exception, match="Leaked trace"):
            wjax.jit(lambda x: leak.append(x) or x + 1)(1.0)
        assert wjax.jit(wjax.grad(lambda x: x * x))(3.0) == 6.0     # no false positive
    with jax.check_tracer_leaks(True):
        with pytest.raises(Exception, match="Leaked"):
            jax.jit(lambda x: leak.append(x) or x + 1)(1.0)
    f = wjax.jit(lambda x: x + 1)
    f(1.0)
    for m, g in ((wjax, f), (jax, jax.jit(lambda x: x + 1))):
        g(1.0)
        with m.no_tracing(True):
            out = g(2.0)                        # a cache hit runs
        assert out == 3.0
        with m.no_tracing(True):
            with pytest.raises(RuntimeError, match="'no_tracing' is set"):
                m.jit(lambda x: x * 2)(1.0)
        with m.no_execution(True):
            with pytest.raises(RuntimeError, match="no_execution"):
                g(3.0)
    with caplog.at_level(logging.WARNING, logger="wjax"), wjax.explain_cache_misses(True):
        f(jnp.ones(3))
    assert "TRACING CACHE MISS" in caplog.text and "input types" in caplog.text


def test_transfer_guards(caplog):
    x = jnp.ones(3)
    f = wjax.jit(lambda v: v * 2)
    with wjax.transfer_guard("disallow"):
        with pytest.raises(wjax.errors.JaxRuntimeError, match="Disallowed host-to-device"):
            f(np.ones(3, f32))
        with pytest.raises(wjax.errors.JaxRuntimeError, match="host-to-device"):
            jnp.sin(np.ones(2, f32))
        wjax.device_put(np.ones(3, f32))        # explicit transfers pass
        y = f(x)                                # device arrays stay on the device
        with pytest.raises(wjax.errors.JaxRuntimeError, match="Disallowed device-to-host"):
            np.asarray(y)
        assert np.asarray(wjax.device_get(y)).tolist() == [2.0, 2.0, 2.0]
    with jax.transfer_guard("disallow"):        # JAX refuses the same implicit upload
        with pytest.raises(Exception, match="Disallowed host-to-device"):
            jax.jit(lambda v: v * 2)(np.ones(3, f32))
    with wjax.transfer_guard_host_to_device("disallow_explicit"):
        with pytest.raises(wjax.errors.JaxRuntimeError):
            wjax.device_put(np.ones(2, f32))
    with caplog.at_level(logging.WARNING, logger="wjax"), wjax.transfer_guard("log"):
        f(np.ones(4, f32))
    assert "host-to-device transfer" in caplog.text


def test_user_context_is_part_of_the_trace_key():
    for m in (wjax, jax):
        ctx = m.make_user_context(0)
        traces = []
        g = m.jit(lambda v: traces.append(1) or v + 1)
        with ctx(1):
            g(1.0)
            g(2.0)
        with ctx(2):
            g(1.0)
        assert len(traces) == 2


# --------------------------------------------------------------------------- autodiff names

def test_float0_and_allow_int():
    assert wjax.dtypes.float0 == jax.dtypes.float0 and wjax.float0 == jax.float0
    g = wjax.grad(lambda x, n: (x * n).sum(), argnums=(0, 1), allow_int=True)(
        np.ones(3, f32), np.arange(3, dtype=np.int32))
    jg = jax.grad(lambda x, n: (x * n).sum(), argnums=(0, 1), allow_int=True)(
        np.ones(3, f32), np.arange(3, dtype=np.int32))
    same(g[0], jg[0])
    assert g[1].dtype == jg[1].dtype == jax.dtypes.float0 and g[1].shape == jg[1].shape
    assert wjax.dtypes.itemsize_bits(np.float16) == jax.dtypes.itemsize_bits(np.float16)
    raises_like_jax(lambda m: m.grad(lambda n: n * 2)(np.int32(3)), match="int")


def test_custom_gradient_linear_transpose_fwd_and_bwd():
    def make(m):
        @m.custom_gradient
        def f(x):
            return x ** 2, lambda g: (g * x,)          # a deliberately "wrong" gradient
        return f
    both(lambda m: [make(m)(f32(3.0)), m.grad(make(m))(f32(3.0)),
                    m.vmap(m.grad(make(m)))(np.arange(3.0, dtype=f32)),
                    m.jit(m.grad(make(m)))(f32(3.0)), m.grad(m.grad(make(m)))(f32(3.0))])
    both(lambda m: m.custom_derivatives.custom_gradient(lambda x: (m.numpy.sin(x), lambda g: (
        g * 2,)))(f32(1.0)))
    lin = lambda x, y: (2 * x + y.sum(), x * 3)      # noqa: E731
    both(lambda m: m.linear_transpose(lin, np.ones(3, f32), np.ones(2, f32))(
        (np.ones(3, f32), np.arange(3.0, dtype=f32))))
    both(lambda m: m.jit(m.linear_transpose(lambda x: x[0] * 2, (np.ones(2, f32),)))(
        np.ones(2, f32)))
    both(lambda m: m.linear_transpose(lambda n: n, np.int32(1))(np.int32(3)))
    with pytest.raises(TypeError):
        wjax.linear_transpose(lambda x: x * x, 1.0)(1.0)
    raises_like_jax(lambda m: m.linear_transpose(lambda x: (x, x), 1.0)((1.0,)),
                    match="cotangent tree")
    raises_like_jax(lambda m: m.linear_transpose(lambda x: x.astype(np.int32), 1.0))

    def fb(m, argnums):
        fwd, bwd = m.fwd_and_bwd(lambda x, w: m.numpy.tanh(x @ w), argnums=argnums)
        y, res = fwd(np.ones((2, 2), f32), np.arange(4.0, dtype=f32).reshape(2, 2) / 4)
        return y, bwd(res, np.ones((2, 2), f32))
    both(lambda m: fb(m, (0, 1)), rtol=1e-5)
    both(lambda m: fb(m, 1), rtol=1e-5)


def test_custom_vmap_and_sequential_vmap():
    def make(m, seen):
        @m.custom_batching.custom_vmap
        def f(x, y):
            return x + y

        @f.def_vmap
        def rule(axis_size, in_batched, x, y):
            seen.append((axis_size, list(in_batched)))
            return x * 0 + 100 + y, True
        return f
    for m in (wjax, jax):
        seen = []
        f = make(m, seen)
        out = [f(1.0, 2.0), m.vmap(f, in_axes=(0, None))(m.numpy.arange(3.0), 1.0),
               m.jit(m.vmap(f))(np.arange(2.0, dtype=f32), np.ones(2, f32)),
               m.jvp(f, (1.0, 2.0), (1.0, 0.0)),
               m.jvp(m.vmap(f, in_axes=(0, None)), (np.ones(3, f32), 2.0),
                     (np.ones(3, f32), 1.0))]
        out.append(seen)
        if m is wjax:
            ours = out
        else:
            same(ours[:5], out[:5])
            assert ours[5] == out[5]
    both(lambda m: m.vmap(m.custom_batching.sequential_vmap(lambda x: x.sum() * 2))(
        np.ones((3, 4), f32)))
    with pytest.raises(AttributeError, match="def_vmap"):
        wjax.custom_batching.custom_vmap(lambda x: x)(1.0)


# --------------------------------------------------------------------------- jax.ops, helpers

def test_segment_reductions_like_jax():
    d = np.array([1.0, 2.0, 3.0, 4.0, 5.0], f32)
    ids = np.array([0, 0, 2, 1, 2], np.int32)
    both(lambda m: [getattr(m.ops, f)(d, ids, num_segments=4) for f in
                    ("segment_sum", "segment_max", "segment_min", "segment_prod")])
    both(lambda m: m.ops.segment_sum(d, ids), jit_jax=False)
    both(lambda m: m.jit(lambda v: m.ops.segment_sum(v, ids, 3))(d))
    both(lambda m: m.grad(lambda v: m.ops.segment_max(v, ids, 3).sum())(d))
    both(lambda m: m.ops.segment_sum(np.arange(10.0, dtype=f32).reshape(5, 2), ids, 3))
    with pytest.raises(wjax.errors.ConcretizationTypeError):
        wjax.jit(lambda v, i: wjax.ops.segment_sum(v, i))(d, ids)


def test_one_process_and_array_construction_helpers(capsys):
    for name in ("process_count", "process_index", "host_count", "host_id", "host_ids",
                 "process_indices"):
        assert getattr(wjax, name)() == getattr(jax, name)(), name
    sh = wjax.sharding.SingleDeviceSharding(wjax.devices()[0])
    jsh = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    data = np.arange(6.0, dtype=f32).reshape(2, 3)
    same(wjax.make_array_from_callback((2, 3), sh, lambda idx: data[idx]),
         jax.make_array_from_callback((2, 3), jsh, lambda idx: data[idx]))
    same(wjax.make_array_from_single_device_arrays((2, 3), sh, [jnp.asarray(data)]),
         jax.make_array_from_single_device_arrays((2, 3), jsh, [jax.numpy.asarray(data)]))
    same(wjax.make_array_from_process_local_data(sh, data),
         jax.make_array_from_process_local_data(jsh, data))
    with pytest.raises(ValueError, match="shape"):
        wjax.make_array_from_callback((3, 3), sh, lambda idx: data[idx])
    x = jnp.ones(3)
    assert wjax.copy_to_host_async({"a": x}) == {"a": x}
    wjax.print_environment_info()
    text = capsys.readouterr().out
    assert text.startswith("jax:") and "numpy:" in text and "device info:" in text
    assert wjax.print_environment_info(return_string=True).startswith("jax:")


def test_ds_slices_refs():
    assert repr(wjax.ds(1, 2)) == repr(jax.ds(1, 2)) and repr(wjax.ds(3)) == repr(jax.ds(3))
    r = wjax.new_ref(jnp.arange(8.0))
    same(r[wjax.ds(2, 3)], np.arange(2.0, 5.0, dtype=f32))
    same(r[wjax.ds(1, 3, 2)], np.array([1.0, 3.0, 5.0], f32))
    r[wjax.ds(4, 2)] = 0.0
    same(r[...], np.array([0, 1, 2, 3, 0, 0, 6, 7], f32))
    e = wjax.empty_ref(wjax.ShapeDtypeStruct((2,), np.int32))
    e[...] = np.array([4, 5], np.int32)
    same(e[...], np.array([4, 5], np.int32))
    wjax.free_ref(e)
    with pytest.raises(ValueError, match="free_ref"):
        e[...]


def test_tree_additions_like_jax():
    for m in (wjax, jax):
        assert m.tree.reduce_associative(lambda a, b: (a, b), [1, 2, 3, 4, 5]) == \
            ((1, 2), (3, (4, 5)))
        assert m.tree_util.tree_reduce_associative(lambda a, b: a * b, [], identity=1) == 1
    raises_like_jax(lambda m: m.tree.reduce_associative(lambda a, b: a, []), match="identity")
    tree = {"a": 1, "b": [2, (3,)]}
    for fn in ("flatten_one_level", "flatten_one_level_with_keys"):
        ours = getattr(wjax.tree_util, fn)(tree)
        theirs = getattr(jax.tree_util, fn)(tree)
        assert repr(ours) == repr(theirs), fn
    raises_like_jax(lambda m: m.tree_util.flatten_one_level(m.random.key(0)))
    raises_like_jax(lambda m: m.tree_util.flatten_one_level(1.0))
    for m in (wjax, jax):
        reg = m.tree_util.default_registry
        assert reg.is_node(list) and not reg.is_node(int)
        leaves, td = reg.flatten({"x": [1, 2]})
        assert leaves == [1, 2] and str(td) == "PyTreeDef({'x': [*, *]})"

    def op_class(m):
        @m.tree_util.register_dataclass
        @dataclasses.dataclass
        class Op:
            x: object
            name: str = m.tree.static(default="add")
        return Op
    assert str(wjax.tree.structure(op_class(wjax)(1))) == \
        str(jax.tree.structure(op_class(jax)(1)))


def test_api_util_monitoring_dlpack_and_errors():
    from wjax import api_util
    from jax import api_util as japi
    assert api_util.shaped_abstractify(jnp.ones(3)).shape == \
        japi.shaped_abstractify(jax.numpy.ones(3)).shape
    assert api_util.safe_map(lambda a, b: a + b, [1, 2], [3, 4]) == [4, 6]
    with pytest.raises(ValueError):
        api_util.safe_map(lambda a, b: a, [1], [1, 2])
    tree = wjax.tree_util.tree_structure(((1, {"a": 2}), {}))
    jtree = jax.tree_util.tree_structure(((1, {"a": 2}), {}))
    assert api_util.flatten_axes("vmap in_axes", tree, (0, None)) == \
        japi.flatten_axes("vmap in_axes", jtree, (0, None))
    assert api_util.rebase_donate_argnums((0, 3), (1,)) == japi.rebase_donate_argnums((0, 3),
                                                                                      (1,))
    flat, out_tree = api_util.flatten_fun_nokwargs(lambda a, b: {"s": a + b}, wjax.tree_util.
                                                   tree_structure((1, 2)))
    assert flat.call_wrapped(1, 2) == [3] and str(out_tree()) == "PyTreeDef({'s': *})"
    part, dyn = api_util.argnums_partial(lambda a, b, c: a * b + c, (0, 2), (2, 3, 4))
    assert dyn == (2, 4) and part.call_wrapped(2, 4) == 10
    events = []
    wjax.monitoring.register_event_duration_secs_listener(
        lambda name, secs, **kw: events.append((name, secs)))
    wjax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
    wjax.monitoring.record_event("/my/event")
    wjax.jit(lambda v: v * 7 + 3)(jnp.ones(5))
    wjax.monitoring.clear_event_listeners()
    assert "/my/event" in events
    assert any(e[0] == "/jax/core/compile/backend_compile_duration" and e[1] >= 0
               for e in events if isinstance(e, tuple))
    assert wjax.dlpack.is_supported_dtype(np.float32) and \
        jax.dlpack.is_supported_dtype(np.float32)
    same(wjax.dlpack.from_dlpack(np.arange(3, dtype=np.int32)), np.arange(3, dtype=np.int32))
    for name in ("JAXIndexError", "JaxprTypeError", "KeyReuseError",
                 "InconclusiveDimensionOperation"):
        builtin = next(c for c in getattr(jax.errors, name).__mro__ if c.__module__ == "builtins")
        assert issubclass(getattr(wjax.errors, name), builtin), name


def test_new_modules_resolve_through_the_import_hook(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "prog.py"
    script.write_text(
        "import jax, jax.image, jax.scipy.signal, jax.scipy.ndimage, jax.scipy.optimize\n"
        "import jax.scipy.integrate, jax.custom_batching, jax.api_util, jax.ops\n"
        "import jax.monitoring, jax.dlpack, jax.scipy.stats, jax.scipy.special\n"
        "from jax.scipy.stats import gamma, truncnorm\n"
        "import jax.numpy as jnp\n"
        "print(jax.__name__.split('.')[0], jax.image.__name__, jnp.ufunc.__module__,\n"
        "      float(jax.scipy.integrate.trapezoid(jnp.arange(3.0))))\n")
    out = subprocess.run([sys.executable, "-m", "wjax", "run", str(script)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["wjax", "wjax.image", "wjax.numpy.ufunc_objects", "2.0"]


def test_debug_log_goes_to_jax_logger(caplog):
    for m in (wjax, jax):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="jax._src.debugging"):
            m.debug.log("hello {x}", x=3)
            m.jit(lambda v: m.debug.log("v={v}", v=v))(2.0)
            m.effects_barrier()
        assert [r.getMessage() for r in caplog.records
                if r.name == "jax._src.debugging"] == ["hello 3", "v=2.0"], m.__name__
    with pytest.raises(ValueError, match="format string"):
        wjax.debug.log("{}", 1, 2)


def test_linear_call_uses_its_transpose():
    def f(m):
        def g(x, y):
            return x + m.custom_derivatives.linear_call(
                lambda r, v: v / r, lambda r, t: t / r * 10, y, x)
        return g
    both(lambda m: [f(m)(f32(1.0), f32(2.0)), m.grad(f(m))(f32(1.0), f32(2.0)),
                    m.jvp(lambda x: f(m)(x, f32(2.0)), (f32(1.0),), (f32(1.0),)),
                    m.jit(m.grad(f(m)))(f32(1.0), f32(2.0))])
    # vmap (JAX has no batching rule for linear_call; wjax batches both functions)
    same(wjax.vmap(wjax.grad(f(wjax)))(np.arange(3.0, dtype=f32), np.full(3, 2.0, f32)),
         np.full(3, 6.0, f32))
    with pytest.raises(TypeError, match="residual"):
        wjax.grad(f(wjax), argnums=1)(f32(1.0), f32(2.0))


def test_array_copy_method():
    """``x.copy()`` as JAX's: ``jnp.copy`` on arrays and tracers, no arguments taken."""
    real = pytest.importorskip("jax")
    for j in (wjax, real):
        x = j.numpy.arange(3.)
        assert np.asarray(x.copy()).tolist() == [0., 1., 2.]
        assert np.asarray(j.jit(lambda v: v.copy() * 2)(x)).tolist() == [0., 2., 4.]
        assert float(j.grad(lambda v: (v.copy() * v).sum())(x)[2]) == 4.
        with pytest.raises(TypeError):
            x.copy(order="F")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "complex64"])
def test_round_decimals_bit_for_bit(dtype):
    """jnp.round with decimals as JAX's, bit for bit (float32 scaled back by the reciprocal:
    round(2.675, 2) is 2.6799998)."""
    real = pytest.importorskip("jax")
    rng = np.random.RandomState(0)
    vals = np.concatenate([[2.675, 1.005, 0.125, -2.675, 1234.5678, 0.285],
                           rng.uniform(-100, 100, 300)])

    def run(j):
        x = j.numpy.asarray(vals).astype(dtype)
        return [np.asarray(j.numpy.round(x, d)).astype(np.complex64).tobytes()
                for d in (1, 2, 3, 5, -1)]
    assert run(wjax) == run(real)
    for j in (wjax, real):
        with pytest.raises(NotImplementedError):
            j.numpy.round(j.numpy.arange(3), -1)
