"""Public names JAX programs and libraries import: versions, typing, sharding (one device),
ravel_pytree, check_grads, jacobian, typeof, named_scope/named_call, tree_util.KeyPath --
each against real JAX."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax.flatten_util import ravel_pytree


def test_versions_declare_the_jax_api_level():
    assert wjax.__version__ == jax.__version__.split(".dev")[0][: len(wjax.__version__)]
    assert wjax.__version_info__ == tuple(int(p) for p in wjax.__version__.split("."))
    assert wjax.version.__version__ == wjax.__version__
    assert wjax.__wjax_version__ == wjax.version.wjax_version == "0.1.0"


def test_typing_names():
    from wjax.typing import ArrayLike, DTypeLike

    def scale(x: ArrayLike, dtype: DTypeLike = None):
        return jnp.asarray(x, dtype) * 2

    assert scale(3).tolist() == 6
    assert wjax.Array in ArrayLike.__args__ and np.ndarray in ArrayLike.__args__
    assert np.dtype in DTypeLike.__args__


def test_typeof_matches_jax():
    for ours, theirs in [(wjax.typeof(jnp.ones((2, 3))), jax.typeof(jjnp.ones((2, 3)))),
                         (wjax.typeof(2.0), jax.typeof(2.0)),
                         (wjax.typeof(np.int32(1)), jax.typeof(np.int32(1)))]:
        assert (ours.shape, ours.dtype, ours.weak_type) == \
            (theirs.shape, theirs.dtype, theirs.weak_type)
    seen = []
    wjax.jit(lambda x: seen.append(wjax.typeof(x)) or x)(jnp.ones(3, jnp.int32))
    assert seen[0].shape == (3,) and seen[0].dtype == np.int32


def test_partition_spec_mesh_and_named_sharding_like_jax():
    from jax.sharding import Mesh as JMesh, NamedSharding as JNS, PartitionSpec as JP
    from wjax.sharding import Mesh, NamedSharding, PartitionSpec as P
    for parts in [(), ("x",), ("x", None), (("x", "y"), None)]:
        assert repr(P(*parts)) == repr(JP(*parts)) and tuple(P(*parts)) == tuple(JP(*parts))
    assert wjax.P is P
    m, jm = Mesh(wjax.devices(), ("x",)), JMesh(jax.devices()[:1], ("x",))
    assert (repr(m), str(m)) == (repr(jm), str(jm))
    assert dict(m.shape) == dict(jm.shape) and m.size == jm.size
    s, js = NamedSharding(m, P("x")), JNS(jm, JP("x"))
    assert repr(s) == repr(js)
    assert (s.num_devices, s.is_fully_replicated) == (js.num_devices, js.is_fully_replicated)
    assert s == NamedSharding(m, P("x")) and hash(s) == hash(NamedSharding(m, P("x")))
    with pytest.raises(ValueError, match="Resource axis: y"):
        NamedSharding(m, P("y"))
    with pytest.raises(ValueError, match="Resource axis: y"):
        JNS(jm, JP("y"))
    with pytest.raises(ValueError, match="ndim"):
        Mesh(wjax.devices(), ("x", "y"))


def test_abstract_mesh_follows_the_mesh_in_use():
    from wjax.sharding import AbstractMesh, Mesh, get_abstract_mesh
    assert repr(get_abstract_mesh()) == repr(jax.sharding.get_abstract_mesh())
    m = Mesh(wjax.devices(), ("batch",))
    with wjax.set_mesh(m):
        assert get_abstract_mesh() == AbstractMesh((1,), ("batch",))
        # a concrete mesh's abstract mesh names its platform, as JAX's does
        assert repr(get_abstract_mesh()) == ("AbstractMesh('batch': 1, axis_types=(Auto,), "
                                             "device_kind=webgpu, num_cores=None, "
                                             "platform=webgpu)")
    assert get_abstract_mesh().empty
    assert repr(AbstractMesh((2,), ("x",))) == repr(jax.sharding.AbstractMesh((2,), ("x",)))


def test_array_sharding_is_a_sharding():
    from wjax.sharding import Sharding, SingleDeviceSharding
    s = jnp.ones(3).sharding
    assert isinstance(s, SingleDeviceSharding) and isinstance(s, Sharding)
    assert s.device_set == {wjax.devices()[0]} and s.is_fully_replicated
    assert repr(s).startswith("SingleDeviceSharding(device=") and repr(s).endswith(
        "memory_kind=device)")


TREES = [
    {"a": np.ones((2, 2), np.float32), "b": (np.arange(3, dtype=np.int32), 2.0)},
    [np.ones(2, np.float16), np.ones(2, np.int32)],
    (np.float32(1.5), [np.arange(4.0, dtype=np.float32).reshape(2, 2)]),
    [],
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_ravel_pytree_matches_jax(tree):
    from jax.flatten_util import ravel_pytree as jravel
    flat, unravel = ravel_pytree(wjax.tree_util.tree_map(jnp.asarray, tree))
    jflat, junravel = jravel(jax.tree_util.tree_map(jjnp.asarray, tree))
    assert flat.dtype == jflat.dtype and flat.shape == jflat.shape
    np.testing.assert_array_equal(np.asarray(flat), np.asarray(jflat))
    back, jback = unravel(flat * 2), junravel(jflat * 2)
    assert wjax.tree_util.tree_structure(back) == wjax.tree_util.tree_structure(
        wjax.tree_util.tree_map(np.asarray, tree))
    for a, b in zip(wjax.tree_util.tree_leaves(back), jax.tree_util.tree_leaves(jback)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_ravel_pytree_under_jit_grad_vmap_and_bad_sizes():
    params = {"w": jnp.arange(6.0).reshape(2, 3), "b": jnp.ones(2)}
    jparams = {"w": jjnp.arange(6.0).reshape(2, 3), "b": jjnp.ones(2)}

    def loss(rav, p):
        flat, unravel = rav(p)
        q = unravel(flat * 3.0)
        return (q["w"] ** 2).sum() + (flat ** 3).sum() + q["b"].sum()

    from jax.flatten_util import ravel_pytree as jravel
    g = wjax.jit(wjax.grad(lambda p: loss(ravel_pytree, p)))(params)
    jg = jax.grad(lambda p: loss(jravel, p))(jparams)
    for k in g:
        np.testing.assert_allclose(np.asarray(g[k]), np.asarray(jg[k]), rtol=1e-6)
    flats = wjax.vmap(lambda p: ravel_pytree(p)[0])(
        {"w": jnp.ones((4, 2, 3)), "b": jnp.zeros((4, 2))})
    assert flats.shape == (4, 8)
    _, unravel = ravel_pytree(params)
    with pytest.raises(ValueError, match="shape"):
        unravel(jnp.ones(7))
    _, junravel = jravel(jparams)
    with pytest.raises(ValueError):
        junravel(jjnp.ones(7))


def test_check_grads_passes_for_true_derivatives_and_catches_wrong_ones():
    from wjax.test_util import check_grads
    x = jnp.asarray(np.linspace(0.1, 1.2, 5, dtype=np.float32))
    check_grads(lambda v: jnp.sin(v) * jnp.exp(v), (x,), order=2)
    check_grads(lambda a, b: (a * b).sum() + jnp.tanh(a), (x, x * 2), order=1,
                modes=("fwd", "rev", "lin"))

    @wjax.custom_jvp
    def wrong(v):
        return jnp.sin(v)

    wrong.defjvp(lambda p, t: (jnp.sin(p[0]), 2.0 * jnp.cos(p[0]) * t[0]))
    for mode in ("fwd", "rev"):
        with pytest.raises(AssertionError):
            check_grads(wrong, (x,), order=1, modes=(mode,))
    # JAX's check_grads agrees on both verdicts
    import jax.test_util
    jax.test_util.check_grads(lambda v: jjnp.sin(v) * jjnp.exp(v), (np.asarray(x),), order=2)


def test_jacobian_named_scope_named_call_keypath():
    f = lambda x: jnp.sin(x) * x[::-1]
    jf = lambda x: jjnp.sin(x) * x[::-1]
    x = np.arange(1.0, 4.0, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(wjax.jacobian(f)(x)), np.asarray(jax.jacobian(jf)(x)),
                               rtol=1e-6)
    with wjax.named_scope("layer1"):
        y = wjax.named_call(f, name="f")(x)
    np.testing.assert_allclose(np.asarray(y), np.asarray(jf(x)), rtol=1e-6)
    with pytest.raises(TypeError, match="string"):
        with wjax.named_scope(3):
            pass
    paths = [p for p, _ in wjax.tree_util.tree_flatten_with_path({"a": [1, 2]})[0]]
    assert all(isinstance(p, tuple) for p in paths)
    assert str(wjax.tree_util.KeyPath) == str(jax.tree_util.KeyPath)


# ------------------------------------------------------------------------ behaviour libraries test

def _seen_under_transforms(jax_mod, jnp_mod):
    seen = []

    def f(x):
        seen.append((isinstance(x, jax_mod.Array), repr(x), f"{x}"))
        try:
            f"{x:.2f}"
        except TypeError:
            seen.append("format spec refused")
        return x

    jax_mod.jit(f)(jnp_mod.ones(3))
    jax_mod.jit(f)(1.0)
    jax_mod.jit(f)(jnp_mod.int32(1))
    jax_mod.make_jaxpr(f)(jnp_mod.ones((2, 2)))
    jax_mod.vjp(f, 1.0)
    jax_mod.linearize(f, 1.0)
    jax_mod.jit(f)(jax_mod.random.key(0))          # a typed key array
    return seen


def test_tracers_are_arrays_and_print_like_jax():
    ours, theirs = _seen_under_transforms(wjax, jnp), _seen_under_transforms(jax, jjnp)
    assert ours == theirs
    seen = []
    wjax.vmap(lambda x: seen.append((isinstance(x, wjax.Array), repr(x))) or x)(jnp.ones((2, 3)))
    assert seen == [(True, "VmapTracer(aval=float32[3])")]   # JAX also shows the batched type
    assert f"{jnp.float32(2.5):.2f}" == "2.50"
    assert issubclass(type(jnp.ones(1)), wjax.Array) and isinstance(jnp.ones(1), wjax.Array)
    assert not isinstance(np.ones(1), wjax.Array)
    with pytest.raises(TypeError):
        wjax.Array(1)


def test_jit_accepts_none_for_static_and_donated_arguments():
    for mod, np_mod in ((wjax, jnp), (jax, jjnp)):
        f = mod.jit(lambda x: x + 1, static_argnums=None, static_argnames=None,
                    donate_argnums=None)
        assert float(f(np_mod.float32(1.0))) == 2.0


def test_jit_of_the_same_function_twice_traces_once_like_jax():
    counts = []
    for mod, np_mod in ((wjax, jnp), (jax, jjnp)):
        calls = []

        def g(x):
            calls.append(1)
            return x * 3

        mod.jit(g)(np_mod.ones(2))
        mod.jit(g)(np_mod.ones(2))
        mod.jit(g, static_argnums=())(np_mod.ones(2))
        mod.jit(g)(np_mod.ones(3))                      # a new shape traces again
        counts.append(len(calls))
    assert counts[0] == counts[1] == 2


def test_vjp_function_is_a_pytree_of_residuals_like_jax():
    x = np.arange(3.0, dtype=np.float32)
    outs = []
    for mod, np_mod in ((wjax, jnp), (jax, jjnp)):
        _, vjp_fn = mod.vjp(lambda v: np_mod.sin(v) * v, np_mod.asarray(x))
        leaves = mod.tree_util.tree_leaves(vjp_fn)
        assert leaves and all(isinstance(leaf, mod.Array) for leaf in leaves)
        # it crosses a jit boundary as an argument, as JAX's docs do
        outs.append(np.asarray(mod.jit(lambda g, c: g(c)[0])(vjp_fn, np_mod.ones(3))))
        outs.append(np.asarray(vjp_fn(np_mod.ones(3))[0]))
    np.testing.assert_allclose(outs[0], outs[2], rtol=1e-6)
    np.testing.assert_allclose(outs[1], outs[3], rtol=1e-6)


@pytest.fixture
def debug_nans():
    wjax.config.update("jax_debug_nans", True)
    jax.config.update("jax_debug_nans", True)
    # JAX checks only programs it compiles with the flag on: an executable cached by an earlier
    # test (same op, same shapes) would run unchecked, so the oracle starts from empty caches
    jax.clear_caches()
    yield
    wjax.config.update("jax_debug_nans", False)
    jax.config.update("jax_debug_nans", False)


def _nan_error(fn, *args):
    try:
        fn(*args)
    except FloatingPointError as e:
        return str(e).split(".")[0]
    return None


@pytest.mark.parametrize("case", ["eager", "jit", "grad", "jit_grad", "loop", "clean"])
def test_debug_nans_raises_at_the_op_like_jax(debug_nans, case):
    def program(mod, np_mod):
        f = lambda x: np_mod.sqrt(x - 5.0) * 2.0
        x = np_mod.arange(3.0)
        return {
            "eager": lambda: f(x),
            "jit": lambda: mod.jit(f)(x),
            "grad": lambda: mod.grad(lambda v: f(v).sum())(x),
            "jit_grad": lambda: mod.jit(mod.grad(lambda v: f(v).sum()))(x),
            "loop": lambda: mod.lax.fori_loop(0, 3, lambda i, v: np_mod.log(v - 3.0), 1.0),
            "clean": lambda: mod.jit(lambda v: np_mod.log(v) * 0.0 + 1.0)(x + 1.0),
        }[case]

    ours, theirs = _nan_error(program(wjax, jnp)), _nan_error(program(jax, jjnp))
    assert ours == theirs
    if case != "clean":
        assert ours.startswith("invalid value (nan) encountered in")


@pytest.mark.parametrize("case", ["div", "nested_jit", "scan", "cond", "while", "empty_mean",
                                  "vmap", "not_reproduced"])
def test_debug_nans_names_the_primitive_like_jax(debug_nans, case):
    """A NaN made in the middle of a jitted function: JAX re-runs it op by op and names the
    primitive (or the control-flow primitive holding it); where the op-by-op run makes none,
    its message starts with ``('jit(<name>)', 'nan')``."""
    def program(mod, np_mod):
        lax = mod.lax

        def mid(x):
            y = x * 2.0
            return np_mod.sin((y - y) / (y - y)) + 1.0
        x = np_mod.ones(3)
        return {
            "div": lambda: mod.jit(mid)(x),
            "nested_jit": lambda: mod.jit(lambda v: mod.jit(np_mod.log)(v - 5.0) * 2)(x),
            "scan": lambda: mod.jit(lambda v: lax.scan(
                lambda c, a: (c + np_mod.log(a - 2.0), c), 0.0, v)[0])(x),
            "cond": lambda: mod.jit(lambda v: lax.cond(
                v[0] > 0, lambda y: np_mod.arcsin(y * 3), lambda y: y, v))(x),
            "while": lambda: mod.jit(lambda v: lax.while_loop(
                lambda c: c[0] < 3, lambda c: (c[0] + 1, np_mod.sqrt(c[1] - 2.0)), (0, v))[1])(x),
            "empty_mean": lambda: np_mod.mean(np_mod.zeros((0,))),
            "vmap": lambda: mod.vmap(np_mod.log)(-x),
            "not_reproduced": lambda: mod.jit(lambda v: np_mod.nan)(x),
        }[case]

    ours, theirs = _nan_error(program(wjax, jnp)), _nan_error(program(jax, jjnp))
    assert ours is not None and ours == theirs


@pytest.mark.parametrize("case", ["eager_div", "eager_exp", "jit_exp"])
def test_debug_infs_names_the_primitive_like_jax(case):
    def program(mod, np_mod):
        return {
            "eager_div": lambda: np_mod.float32(1.0) / np_mod.float32(0.0),
            "eager_exp": lambda: np_mod.exp(np_mod.ones(3) * 1000.0),
            "jit_exp": lambda: mod.jit(lambda x: np_mod.exp(x * 100.0) + 1.0)(np_mod.ones(3)),
        }[case]

    for mod in (wjax, jax):
        mod.config.update("jax_debug_infs", True)
    jax.clear_caches()
    try:
        ours, theirs = _nan_error(program(wjax, jnp)), _nan_error(program(jax, jjnp))
    finally:
        for mod in (wjax, jax):
            mod.config.update("jax_debug_infs", False)
    assert ours is not None and ours == theirs
    assert ours.startswith("invalid value (inf) encountered in")


def test_debug_infs_and_flags_off():
    x = jnp.arange(3.0)
    assert np.isnan(np.asarray(jnp.sqrt(x - 5.0))).all()        # off: no check
    wjax.config.update("jax_debug_infs", True)
    try:
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in log"):
            jnp.log(x)
    finally:
        wjax.config.update("jax_debug_infs", False)


def test_shape_dtype_struct_like_and_lax_primitives():
    for x, jx in [(jnp.ones((2, 3), jnp.int32), jjnp.ones((2, 3), jjnp.int32)), (2.0, 2.0),
                  (np.ones(3), np.ones(3)), (wjax.ShapeDtypeStruct((2,), "float32"),
                                             jax.ShapeDtypeStruct((2,), "float32"))]:
        ours, theirs = wjax.ShapeDtypeStruct.like(x), jax.ShapeDtypeStruct.like(jx)
        assert repr(ours) == repr(theirs) and ours.weak_type == theirs.weak_type
    names = [n for n in dir(jax.lax) if n.endswith("_p") and hasattr(wjax.lax, n)]
    assert len(names) > 90
    for n in names:
        assert getattr(wjax.lax, n).name == getattr(jax.lax, n).name.replace("-", "_"), n
    assert float(wjax.lax.sin_p.bind(jnp.float32(1.0))) == pytest.approx(np.sin(1.0), rel=1e-6)


def test_jax_core_names():
    import wjax.core as core
    for name in ["ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive", "ShapedArray",
                 "Tracer", "Var", "concrete_or_error", "eval_jaxpr", "get_aval"]:
        assert hasattr(core, name), name
    seen = []
    wjax.jit(lambda x: seen.append(isinstance(x, core.Tracer)) or x)(1.0)
    assert seen == [True]
    closed = wjax.make_jaxpr(lambda x: x * 2)(1.0)
    assert isinstance(closed, core.ClosedJaxpr) and isinstance(closed.jaxpr, core.Jaxpr)
    eqn = closed.jaxpr.eqns[0]
    assert isinstance(eqn, core.JaxprEqn) and isinstance(eqn.prim, core.Primitive)
    assert core.get_aval(jnp.ones(2)).shape == (2,)


def test_stages_trace_lower_compile():
    f = wjax.jit(lambda x, y: x * y + 1.0)
    traced = f.trace(jnp.ones(3), 2.0)
    assert isinstance(traced, wjax.stages.Traced) and isinstance(f, wjax.stages.Wrapped)
    jt = jax.jit(lambda x, y: x * y + 1.0).trace(jjnp.ones(3), 2.0)
    assert traced.out_avals.shape == jt.out_avals.shape == (3,)
    assert "mul" in str(traced.jaxpr)
    lowered = traced.lower()
    assert isinstance(lowered, wjax.stages.Lowered) and "@compute" in lowered.as_text()
    compiled = lowered.compile()
    assert isinstance(compiled, wjax.stages.Compiled)
    np.testing.assert_allclose(np.asarray(compiled([jnp.ones(3), 2.0])[0]), [3.0, 3.0, 3.0])


def test_initializer_protocol():
    from wjax.nn.initializers import Initializer, glorot_uniform
    init: Initializer = glorot_uniform()
    assert init(wjax.random.key(0), (2, 3)).shape == (2, 3)
    assert "Initializer" in wjax.nn.initializers.__all__


def test_flax_internals_api_util_and_partial_eval_like_jax():
    """flax's lifted scan traces its body through api_util.flatten_fun_nokwargs and
    pe.trace_to_jaxpr_nounits: outputs of the known inputs come back as known values."""
    from jax.extend import linear_util as jlu
    from jax.interpreters import partial_eval as jpe
    from wjax.extend import linear_util as wlu
    from wjax.interpreters import partial_eval as wpe

    results = []
    for lib, lu, pe, np_ in ((wjax, wlu, wpe, jnp), (jax, jlu, jpe, jjnp)):
        f = lambda carry, xs, np_=np_: ({"c": carry * 2.0, "k": np_.ones(3) * 5.0}, xs.sum())
        tree = lib.tree_util.tree_structure((np.float32(1.0), np.ones(4, np.float32)))
        info = lib.api_util.debug_info("scan", f, (tree,), {})
        assert info.traced_for == "scan"
        flat, out_tree = lib.api_util.flatten_fun_nokwargs(lu.wrap_init(f, debug_info=info), tree)
        avals = [lib.core.ShapedArray((), np.float32), lib.core.ShapedArray((4,), np.float32)]
        assert all(isinstance(a, lib.core.AbstractValue) for a in avals)
        _, out_pvals, _ = pe.trace_to_jaxpr_nounits(flat, [pe.PartialVal.unknown(a)
                                                            for a in avals])
        known = [None if pv is not None else np.asarray(c) for pv, c in out_pvals]
        results.append((lib.tree_util.tree_unflatten(out_tree(), known), out_tree()))
    (wk, wtree), (jk, jtree) = results
    assert str(wtree).replace("PyTreeDef", "") == str(jtree).replace("PyTreeDef", "")
    assert wk[0]["c"] is None and jk[0]["c"] is None and wk[1] is None and jk[1] is None
    np.testing.assert_array_equal(wk[0]["k"], jk[0]["k"])


def test_partial_eval_outputs_of_an_enclosing_trace_are_known_like_jax():
    """Inside ``jit``, an output of the partially evaluated function computed only from the
    jit's tracers it closes over (flax's scan: the parameters its body broadcasts) is known,
    its value a tracer of the jit; one reading an unknown input is not."""
    from jax.extend import linear_util as jlu
    from jax.interpreters import partial_eval as jpe
    from wjax.extend import linear_util as wlu
    from wjax.interpreters import partial_eval as wpe

    got = {}
    for lib, lu, pe in ((wjax, wlu, wpe), (jax, jlu, jpe)):
        def outer(w, lib=lib, lu=lu, pe=pe):
            def f(c):
                return [w * 2.0 + 1.0, c * w, w]
            _, pvals, _ = pe.trace_to_jaxpr_nounits(
                lu.wrap_init(f, debug_info=lib.api_util.debug_info("t", f, (1,), {})),
                [pe.PartialVal.unknown(lib.core.ShapedArray((3,), np.float32))])
            got[lib.__name__] = [pv is None for pv, _ in pvals]
            return pvals[0][1] + pvals[2][1]       # the known outputs, tracers of this jit
        out = lib.jit(outer)(np.arange(3, dtype=np.float32))
        np.testing.assert_allclose(np.asarray(out), np.arange(3) * 3.0 + 1.0)
    assert got["wjax"] == got["jax"] == [True, False, True]


def test_partial_eval_sees_into_a_checkpoint_like_jax():
    """An output of a ``checkpoint`` (flax's ``nn.remat``) that reads only known values is
    known, though the call also computes outputs of the unknown inputs."""
    from jax.extend import linear_util as jlu
    from jax.interpreters import partial_eval as jpe
    from wjax.extend import linear_util as wlu
    from wjax.interpreters import partial_eval as wpe

    for lib, lu, pe in ((wjax, wlu, wpe), (jax, jlu, jpe)):
        def outer(w, lib=lib, lu=lu, pe=pe):
            def f(c):
                both = lib.checkpoint(lambda w, c: (lib.numpy.sin(w) * 2.0, c * w))
                return list(both(w, c))
            _, pvals, _ = pe.trace_to_jaxpr_nounits(
                lu.wrap_init(f, debug_info=lib.api_util.debug_info("t", f, (1,), {})),
                [pe.PartialVal.unknown(lib.core.ShapedArray((3,), np.float32))])
            assert [pv is None for pv, _ in pvals] == [True, False], lib.__name__
            return pvals[0][1]
        x = np.arange(3, dtype=np.float32)
        np.testing.assert_allclose(np.asarray(lib.jit(outer)(x)), np.sin(x) * 2.0, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(outer(x)), np.sin(x) * 2.0, rtol=1e-6)


def test_hijax_names_import_and_refuse_use():
    from wjax.experimental import hijax as whjx
    from jax.experimental import hijax as jhjx
    assert {n for n in dir(jhjx) if not n.startswith("_")} <= set(dir(whjx))

    class Mine(whjx.HiPrimitive):
        def abstract_eval(self, x):
            return x
    with pytest.raises(NotImplementedError, match="high-level types"):
        Mine("mine").bind(jnp.ones(2))
    assert issubclass(whjx.MutableHiType, whjx.HiType)
    assert isinstance(wjax.core.ShapedArray((2,), np.float32), whjx.AbstractValue)


def test_out_sharding_and_device_arguments_are_accepted_like_jax():
    x = jnp.arange(6.0).reshape(2, 3)
    for lib, np_ in ((wjax, jnp), (jax, jjnp)):
        got = [np_.zeros((2, 2), out_sharding=None), np_.ones(3, device=None),
               np_.reshape(np_.arange(6.0), (3, 2), out_sharding=None),
               np_.matmul(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32),
                          out_sharding=None),
               lib.random.normal(lib.random.key(0), (3,), out_sharding=None),
               lib.random.bernoulli(lib.random.key(1), 0.3, (5,), out_sharding=None),
               lib.lax.broadcasted_iota(np.int32, (2, 3), 1, out_sharding=None)]
        if lib is wjax:
            wgot = got
    for a, b in zip(wgot, got):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    assert repr(wjax.typeof(x).sharding) == repr(jax.typeof(jjnp.asarray(x)).sharding)
    spec = wjax.typeof(x).sharding.update(spec=wjax.sharding.PartitionSpec(None))
    assert spec.spec == wjax.sharding.PartitionSpec(None)
    aval = wjax.core.ShapedArray((2,), np.float32, sharding=None, weak_type=True)
    assert aval.weak_type and aval.shape == (2,)


def test_out_sharding_of_no_mesh_places_nothing_like_jax():
    """``jax.typeof(x).sharding`` of an array on no mesh (a sharding over the empty mesh)
    passed on as ``out_sharding=`` -- optax's ``tree.random_like`` does, under ``jit`` --
    places nothing: JAX's values, traced or not; a key array's placement is its data's."""
    got = []
    for lib, np_ in ((wjax, jnp), (jax, jjnp)):
        def f(x, k, lib=lib, np_=np_):
            s = lib.typeof(x).sharding
            return (lib.random.normal(k, x.shape, x.dtype, out_sharding=s)
                    + np_.zeros(x.shape, out_sharding=s))
        k = lib.random.key(7)
        x = np_.ones((2, 3))
        got.append([np.asarray(lib.jit(f)(x, k)), np.asarray(f(x, k))])
        assert str(k.sharding).split("(")[0] == "SingleDeviceSharding"
        assert len(k.devices()) == 1
    np.testing.assert_allclose(got[0], got[1], rtol=1e-6)


def test_partition_spec_unconstrained_like_jax():
    """``P.UNCONSTRAINED`` (flax's logical-axis rules discard it from their sets) prints as
    JAX's and lays a dimension out unsplit."""
    JP, WP = jax.sharding.PartitionSpec, wjax.sharding.PartitionSpec
    assert repr(WP(WP.UNCONSTRAINED, None)) == repr(JP(JP.UNCONSTRAINED, None))
    assert repr(WP.UNCONSTRAINED) == repr(JP.UNCONSTRAINED)
    mesh = wjax.sharding.Mesh(wjax.devices()[:1], ("d",))
    s = wjax.sharding.NamedSharding(mesh, WP(WP.UNCONSTRAINED, "d"))
    x = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    y = wjax.jit(lambda x: wjax.lax.with_sharding_constraint(x * 2, s))(x)
    np.testing.assert_array_equal(np.asarray(y), x * 2)
