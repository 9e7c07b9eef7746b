"""The internals libraries reach into (jax.extend.core, jax.interpreters.{ad,batching,mlir},
jax.core) and the smaller behaviours equinox/chex rely on (pmap on one device,
ensure_compile_time_eval, numpy_dtype_promotion, custom_vjp symbolic_zeros), against real JAX
where JAX runs the same program.  The JAX primitives / custom-interpreter tutorial program is
tests/programs/custom_primitive.py (tests/test_libraries.py)."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax.extend import core as wcore
from wjax.interpreters import ad as wad
from wjax.interpreters import batching as wbatching
from wjax.interpreters import mlir as wmlir

X = np.arange(1.0, 4.0, dtype=np.float32)


def _multiply_add(jax, core, mlir, hlo, ad, batching):
    """JAX's primitives tutorial's multiply_add, its MLIR-style lowering written with hlo
    operations, and its jvp, transpose and batching rules -- against either library."""
    lax = jax.lax
    p = core.Primitive("multiply_add")
    p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
    p.def_abstract_eval(lambda xs, ys, zs: jax.core.ShapedArray(xs.shape, xs.dtype))
    mlir.register_lowering(p, lambda ctx, x, y, z: [hlo.AddOp(hlo.MulOp(x, y), z).result],
                           platform="cpu")

    def ma(x, y, z):
        return p.bind(x, y, z)

    def jvp(primals, tangents):
        x, y, z = primals

        def zero(t):
            return lax.full_like(x, 0) if type(t) is ad.Zero else t
        xt, yt, zt = (zero(t) for t in tangents)
        return ma(x, y, z), ma(xt, y, ma(x, yt, zt))

    def transpose(ct, x, y, z):
        if not ad.is_undefined_primal(x):
            return None, ma(x, ct, lax.full_like(x, 0)), ct
        return ma(ct, y, lax.full_like(y, 0)), None, ct

    ad.primitive_jvps[p] = jvp
    ad.primitive_transposes[p] = transpose
    batching.primitive_batchers[p] = lambda args, dims: (ma(*args), dims[0])
    return p, lambda a, b: ma(a, a, b)


def _tutorial_results(jax, sq):
    v = np.array([2.0, 3.0], np.float32), np.array([10.0, 20.0], np.float32)
    return [sq(2.0, 10.0), jax.jit(sq)(2.0, 10.0), jax.jit(sq, static_argnums=1)(2.0, 10.0),
            jax.jvp(sq, (2.0, 10.0), (1.0, 1.0)), jax.grad(sq)(2.0, 10.0),
            jax.jit(jax.grad(sq))(2.0, 10.0), jax.vmap(sq)(*v), jax.jit(jax.vmap(sq))(*v)]


def test_primitives_tutorial_runs_with_an_hlo_lowering_as_in_jax():
    jax = pytest.importorskip("jax")
    from jax.extend import core as jcore
    from jax.interpreters import ad as jad, batching as jbatching, mlir as jmlir
    from jax._src.lib.mlir.dialects import hlo as jhlo
    from wjax._src.lib.mlir.dialects import hlo as whlo
    _, theirs = _multiply_add(jax, jcore, jmlir, jhlo, jad, jbatching)
    _, ours = _multiply_add(wjax, wcore, wmlir, whlo, wad, wbatching)
    for a, b in zip(_tutorial_results(wjax, ours), _tutorial_results(jax, theirs)):
        for x, y in zip(wjax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6)


def test_missing_rules_raise_jax_errors():
    jax = pytest.importorskip("jax")
    from jax.extend import core as jcore
    for lib, core in ((wjax, wcore), (jax, jcore)):
        p = core.Primitive("bare_ma")
        with pytest.raises(NotImplementedError, match="Evaluation rule for 'bare_ma'"):
            p.bind(2.0)
        p.def_impl(lambda x: np.asarray(x) * 2)
        assert float(p.bind(2.0)) == 4.0          # eager: the impl
        with pytest.raises(NotImplementedError, match="Abstract evaluation for 'bare_ma'"):
            lib.jit(lambda x: p.bind(x))(2.0)
        p.def_abstract_eval(lambda x: lib.core.ShapedArray(x.shape, x.dtype))
        with pytest.raises(NotImplementedError,
                           match="MLIR translation rule for primitive 'bare_ma' not found"):
            lib.jit(lambda x: p.bind(x))(2.0)


def test_internal_module_paths_of_the_tutorials():
    from wjax._src import api
    from wjax._src.lax import lax
    assert lax.add is wjax.lax.add and lax.full_like is wjax.lax.full_like
    assert api.grad is wjax.grad and api.jit is wjax.jit


def test_primitives_with_one_name_stay_distinct():
    a, b = wcore.Primitive("same"), wcore.Primitive("same")
    for p, k in ((a, 2.0), (b, 3.0)):
        p.def_impl(lambda x, k=k: x * k)
        p.def_abstract_eval(lambda x: x)
        wmlir.register_lowering(p, wmlir.lower_fun(lambda x, k=k: x * k, multiple_results=False))
    np.testing.assert_allclose(wjax.jit(lambda x: a.bind(x) + b.bind(x))(X), X * 5)
    np.testing.assert_allclose(a.bind(X), X * 2)
    np.testing.assert_allclose(b.bind(X), X * 3)


def test_primitive_without_rules_raises():
    p = wcore.Primitive("bare")
    p.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="bare"):
        p.bind(X)
    with pytest.raises(NotImplementedError, match="bare"):
        wjax.jit(lambda x: p.bind(x))(X)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'bare'"):
        wjax.grad(lambda x: p.bind(x).sum())(X)
    with pytest.raises(NotImplementedError, match="Batching rule for 'bare'"):
        wjax.vmap(lambda x: p.bind(x))(np.ones((2, 3), np.float32))


def test_rule_tables_read_and_write_primitive_rules():
    assert wjax.lax.sin_p in wad.primitive_jvps
    assert callable(wad.primitive_jvps[wjax.lax.sin_p])
    assert wjax.lax.add_p in wad.primitive_transposes
    assert wjax.lax.sin_p in wbatching.primitive_batchers
    p = wcore.Primitive("twice")
    assert p not in wad.primitive_jvps
    with pytest.raises(KeyError):
        wad.primitive_jvps[p]
    rule = lambda primals, tangents: (p.bind(*primals), 2 * tangents[0])  # noqa: E731
    wad.primitive_jvps[p] = rule
    assert wad.primitive_jvps[p] is rule and p in wad.primitive_jvps


def test_axis_primitive_batchers_receive_the_axis():
    seen = []
    p = wcore.Primitive("shift")
    p.def_impl(lambda x: x + 1)
    p.def_abstract_eval(lambda x: x)

    def batch(axis_size, axis_name, trace_type, args, dims):
        seen.append((axis_size, axis_name))
        return p.bind(*args), dims[0]
    wbatching.axis_primitive_batchers[p] = batch
    out = wjax.vmap(lambda x: p.bind(x), axis_name="rows")(np.zeros((4, 2), np.float32))
    np.testing.assert_allclose(out, np.ones((4, 2)))
    assert seen == [(4, "rows")]


def test_mapped_and_unmapped_avals():
    a = wcore.ShapedArray((3, 4), np.float32)
    assert wcore.mapped_aval(3, 0, a).shape == (4,)
    assert wcore.unmapped_aval(5, 1, a).shape == (3, 5, 4)
    assert wcore.mapped_aval(3, None, a) is a


def test_opaque_trace_state_tells_traces_apart():
    states = []

    def f(x):
        states.append(wcore.get_opaque_trace_state())
        states.append(wcore.get_opaque_trace_state())
        return x
    wjax.jit(f)(X)
    outside = wcore.get_opaque_trace_state()
    assert states[0] == states[1] and states[0] != outside


def _compile_time_eval(jx, np_):
    box = []

    def f(x):
        with jx.ensure_compile_time_eval():
            c = np_.sin(np_.float32(1.0)) * 2
            box.append(isinstance(c, jx.core.Tracer))
            branch = float(c) > 1.0          # Python branches on the value
        return x * c if branch else x
    return np.asarray(jx.jit(f)(X)).tolist(), box


def test_ensure_compile_time_eval_matches_jax():
    got, want = _compile_time_eval(wjax, jnp), _compile_time_eval(jax, jjnp)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1] == want[1] == [False]


def _promotion(jx, np_):
    out = []
    with jx.numpy_dtype_promotion("strict"):
        out.append(str((np_.ones(2) + 1.0).dtype))
        out.append(str((np_.ones(2, np_.int32) + 1).dtype))
        out.append(str((np_.ones(2) + 1).dtype))
        for f in (lambda: np_.ones(2) + np_.ones(2, np_.int32),
                  lambda: np_.ones(2) + np_.ones(2, np_.float16),
                  lambda: np_.ones(2, np_.int32) + 2.5,
                  lambda: np_.promote_types("float32", "int32"),
                  lambda: np_.ones(2, np_.uint8) + 1):
            try:
                out.append(str(f().dtype))
            except Exception as e:      # noqa: BLE001 - the class is compared
                out.append(type(e).__name__)
    out.append(str((np_.ones(2) + np_.ones(2, np_.int32)).dtype))
    try:
        jx.config.update("jax_numpy_dtype_promotion", "bogus")
    except Exception as e:              # noqa: BLE001
        out.append(type(e).__name__)
    return out


def test_numpy_dtype_promotion_strict_matches_jax():
    assert _promotion(wjax, jnp) == _promotion(jax, jjnp)


def _pmap(jx, np_):
    out = [np.asarray(jx.pmap(lambda a: jx.lax.psum(a, "i") * 2, axis_name="i")(
        np_.ones((1, 3)))).tolist()]
    try:
        jx.pmap(lambda a: a)(np_.ones((2, 3)))
    except ValueError:
        out.append("ValueError")
    return out


def test_pmap_on_one_device_matches_jax():
    assert _pmap(wjax, jnp) == _pmap(jax, jjnp)


def _symbolic_zeros_vjp(jx, np_):
    seen = []

    @jx.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        seen.append(type(x).__name__)
        # a leaf of tree_map, as equinox's filter_custom_vjp reads it
        seen.append(jx.tree_util.tree_map(lambda p: type(p).__name__, {"x": x}))
        return x.value * y.value, (x.value, y.value)

    def bwd(res, g):
        x, y = res
        return g * y, g * x
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    g = jx.grad(lambda a: f(a, np_.float32(3.0)))(np_.float32(2.0))
    return float(g), sorted(map(str, seen))


def test_custom_vjp_symbolic_zeros_passes_primals_like_jax():
    assert _symbolic_zeros_vjp(wjax, jnp) == _symbolic_zeros_vjp(jax, jjnp)


def _partial_eval(jx, np_):
    from importlib import import_module
    lu = import_module(jx.__name__ + ".extend.linear_util")
    pe = import_module(jx.__name__ + ".interpreters.partial_eval")

    def f(a, b):
        return [a * 2, a + b, np_.sin(a)]
    unknown = pe.PartialVal.unknown(jx.core.ShapedArray((), np.float32))
    _, outs, _ = pe.trace_to_jaxpr_nounits(lu.wrap_init(f), [pe.PartialVal.known(
        np_.float32(3.0)), unknown])
    return [("unknown", str(o[0])) if o[1] is None else ("known", float(o[1])) for o in outs]


def test_partial_eval_known_outputs_match_jax():
    got, want = _partial_eval(wjax, jnp), _partial_eval(jax, jjnp)
    assert [g[0] for g in got] == [w[0] for w in want]
    for g, w in zip(got, want):
        if g[0] == "known":
            np.testing.assert_allclose(g[1], w[1], rtol=1e-6)


def test_trace_to_jaxpr_dynamic_and_linear_util():
    from wjax.extend import linear_util as lu
    from wjax.interpreters import partial_eval as pe

    def scaled(x, *, k):
        return [x * k, x + 1.0]
    wrapped = lu.wrap_init(scaled, {"k": 3.0})
    jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(wrapped, [wcore.ShapedArray((2,),
                                                                                      np.float32)])
    outs = wcore.jaxpr_as_fun(wcore.ClosedJaxpr(jaxpr, consts))(X[:2])
    np.testing.assert_allclose(outs[0], X[:2] * 3)
    assert [a.shape for a in out_avals] == [(2,), (2,)]

    @lu.transformation
    def plus_one(*args):
        out = yield args, {}
        yield [o + 1 for o in out]
    np.testing.assert_allclose(plus_one(wrapped).call_wrapped(X)[1], X + 2)

    @lu.transformation_with_aux
    def count(*args):
        out = yield args, {}
        yield out, len(out)
    fun, aux = count(wrapped)
    fun.call_wrapped(X)
    assert aux() == 2


def _refs(jx, np_):
    r = jx.new_ref(np_.zeros(3, np_.float32))
    r[...] = np_.ones(3, np_.float32)
    r[1] = 5.0
    return np.asarray(r[...]).tolist(), str(jx.typeof(r)), isinstance(r, jx.Array)


def test_refs_outside_traced_code_match_jax():
    assert _refs(wjax, jnp) == _refs(jax, jjnp)
    r = wjax.new_ref(X)
    with pytest.raises(ValueError, match="cannot be returned"):
        wjax.jit(lambda a: wjax.new_ref(a))(X)
    np.testing.assert_allclose(wjax.freeze(r), X)


def test_layouts_dtypes_and_trace_objects():
    from wjax.experimental import layout
    np.testing.assert_allclose(layout.with_layout_constraint(X, layout.Layout((0,))), X)
    with pytest.raises(NotImplementedError, match="row-major"):
        layout.with_layout_constraint(np.ones((2, 2)), layout.Layout((1, 0)))
    assert jnp.issubdtype(wjax.random.key(0).dtype, wjax.dtypes.extended)
    assert jjnp.issubdtype(jax.random.key(0).dtype, jax.dtypes.extended)
    assert np.dtype(jnp.float8_e4m3fn) == np.dtype(jjnp.float8_e4m3fn)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        jnp.zeros(3, jnp.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="Trace objects"):
        wcore.take_current_trace()


def test_extend_core_primitives_name_the_primitives_jaxprs_hold():
    # numpyro's provenance interpreter keys rules on these (call_p, closed_call_p, jit_p)
    import jax.extend.core.primitives as jprims

    import wjax.extend.core.primitives as wprims
    for name in ("add_p", "sin_p", "dot_general_p", "jit_p", "call_p", "closed_call_p",
                 "scan_p", "while_p", "cond_p", "remat_p", "custom_jvp_call_p"):
        assert hasattr(jprims, name) and hasattr(wprims, name), name
    eqn = wjax.make_jaxpr(wjax.jit(jnp.sin))(1.0).jaxpr.eqns[0]
    assert eqn.primitive is wprims.jit_p and "jaxpr" in eqn.params
    assert jax.make_jaxpr(jax.jit(jjnp.sin))(1.0).jaxpr.eqns[0].primitive is jprims.jit_p
    # a closed call bound by hand runs its jaxpr, eagerly and under every transformation
    inner = wjax.make_jaxpr(lambda x: [jnp.sin(x) * 2])(1.0)
    f = lambda x: wprims.closed_call_p.bind(x, jaxpr=inner)[0]
    want = [np.sin(1.0) * 2, np.sin(1.0) * 2, np.cos(1.0) * 2]
    np.testing.assert_allclose([f(1.0), wjax.jit(f)(1.0), wjax.grad(f)(1.0)], want, rtol=1e-6)
    np.testing.assert_allclose(wjax.vmap(f)(X), np.sin(X) * 2, rtol=1e-6)


def test_trace_state_clean_matches_jax():
    from jax._src.core import trace_state_clean as jclean

    from wjax._src.core import trace_state_clean as wclean
    for mod, clean, numpy in ((wjax, wclean, jnp), (jax, jclean, jjnp)):
        seen = []

        def f(x):
            seen.append(clean())
            return numpy.sin(x)
        f(1.0)
        mod.jit(f)(2.0)
        mod.grad(f)(3.0)
        mod.vmap(f)(X)
        assert clean() and seen == [True, False, False, False], (mod, seen)


def _perturbed_flags(jx, np_):
    # a symbolic_zeros fwd sees which inputs carry tangents (JAX's CustomVJPPrimal.perturbed),
    # jitted or not; a Python residual reaches bwd as a Python value (bwd branches on it)
    seen = []

    @jx.custom_vjp
    def f(x, y):
        return x * y

    def fwd(x, y):
        seen.append((x.perturbed, y.perturbed))
        return x.value * y.value, (x.value, y.value, y.perturbed)

    def bwd(res, g):
        x, y, y_perturbed = res
        return g * y, (g * x if y_perturbed else None)
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    y = np_.float32(3.0)
    g1 = jx.grad(lambda a: f(a, y))(np_.float32(2.0))
    g2 = jx.jit(jx.grad(lambda a, b: f(a, b) + f(b, a), argnums=1))(np_.float32(2.0), y)
    g3 = jx.grad(jx.jit(lambda a: f(a, y) * 2))(np_.float32(2.0))
    return [float(g1), float(g2), float(g3)], sorted(set(seen))


def test_custom_vjp_perturbed_flags_and_static_residuals_match_jax():
    assert _perturbed_flags(wjax, jnp) == _perturbed_flags(jax, jjnp)


def _prefix_cotangents(jx, np_):
    # bwd returns a prefix of the primal's structure: None for a whole subtree, and a value
    # where the primal has None (dropped, as JAX's)
    @jx.custom_vjp
    def f(p):
        return p["a"] * p["b"][0] + p["b"][1]

    f.defvjp(lambda p: (f(p), p), lambda p, g: ({"a": g * p["b"][0], "b": None, "c": g},))
    p = {"a": np_.float32(2.0), "b": (np_.float32(3.0), np_.float32(1.0)), "c": None}
    return jx.tree_util.tree_map(float, jx.grad(f)(p))


def test_custom_vjp_cotangent_prefix_matches_jax():
    assert _prefix_cotangents(wjax, jnp) == _prefix_cotangents(jax, jjnp)


def test_registered_array_types_are_abstracted_like_jax():
    # tfp registers its ndarray subclass in both tables (jax.interpreters.xla and jax.core)
    from jax.interpreters import xla as jxla

    from wjax.interpreters import xla as wxla

    class Var(np.ndarray):
        pass
    for jx, xla in ((wjax, wxla), (jax, jxla)):
        xla.canonicalize_dtype_handlers[Var] = xla.canonicalize_dtype_handlers[np.ndarray]
        jx.core.pytype_aval_mappings[Var] = jx.core.pytype_aval_mappings[np.ndarray]
        assert xla.canonicalize_dtype_handlers[np.ndarray](np.arange(3.0)).dtype == np.float32
        aval = jx.core.pytype_aval_mappings[np.ndarray](np.arange(3.0))
        assert (aval.shape, aval.dtype) == ((3,), np.float32)
    v = np.arange(3.0, dtype=np.float32).view(Var)
    np.testing.assert_allclose(wjax.jit(lambda x: x * 2)(v), jax.jit(lambda x: x * 2)(v))
    np.testing.assert_allclose(jnp.sin(v), jjnp.sin(v), rtol=1e-6)
