"""``jax.export``: a jitted function exported, serialized, deserialized and called -- in this
process, inside ``jit``, and in another process -- gives real JAX's results; the Exported's
fields and the errors are JAX's.  The browser side of the same programs is tests/test_web.py.

Each program is written once against a ``jax`` module argument, so the same code runs with
wjax and with real JAX (the oracle); weights come from NumPy, identical for both."""
import collections
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import wjax
import wjax.numpy as wjnp
from wjax import export as wexport
from wjax._src.backend.recorder import Recorder, record

RNG = np.random.default_rng(0)
W1 = RNG.normal(size=(12, 16)).astype(np.float32) * 0.3
W2 = RNG.normal(size=(16, 3)).astype(np.float32) * 0.3
WH = RNG.normal(size=(8, 8)).astype(np.float32) * 0.2
WX = RNG.normal(size=(4, 8)).astype(np.float32) * 0.5
KER = RNG.normal(size=(4, 1, 3, 3)).astype(np.float32)
X12 = RNG.normal(size=(5, 12)).astype(np.float32)
XS = RNG.normal(size=(7, 4)).astype(np.float32)
IMG = RNG.normal(size=(2, 1, 8, 8)).astype(np.float32)


def _mlp(jax):
    jnp = jax.numpy
    w1, w2 = jnp.asarray(W1), jnp.asarray(W2)     # captured: constants of the program
    return lambda x: jax.nn.softmax(jax.nn.relu(x @ w1) @ w2), (X12,)


def _conv(jax):
    jnp = jax.numpy

    def f(x):
        y = jax.lax.conv_general_dilated(x, jnp.asarray(KER), (1, 1), "SAME")
        return jax.nn.relu(y).mean(axis=(2, 3))
    return f, (IMG,)


def _rnn_loss(jax):
    jnp = jax.numpy

    def loss(wh, xs):
        def step(h, x):
            h = jnp.tanh(h @ wh + x @ jnp.asarray(WX))
            return h, h.sum()
        h, ys = jax.lax.scan(step, jnp.zeros(8, jnp.float32), xs)
        return (h ** 2).sum() + ys.mean()
    return loss


def _rnn(jax):
    return _rnn_loss(jax), (WH, XS)


def _rnn_grad(jax):
    return jax.grad(_rnn_loss(jax), argnums=(0, 1)), (WH, XS)


def _prng(jax):
    def f(k):
        k1, k2 = jax.random.split(k)
        return (jax.random.normal(k1, (6,)), jax.random.uniform(k2, (2, 3)),
                jax.random.bits(k2, (4,)))
    return f, (np.array([0, 42], np.uint32),)


def _cond(jax):
    jnp = jax.numpy
    return (lambda x: jax.lax.cond(x.sum() > 0, jnp.sin, lambda v: jnp.cos(v) * 2, x),
            (np.array([-1.0, -2.0, 0.5], np.float32),))


def _while(jax):
    def f(x, limit):      # a trip count that depends on the data
        def body(c):
            i, v = c
            return i + 1, v * 1.5 + 0.25
        return jax.lax.while_loop(lambda c: c[1].sum() < limit, body, (0, x))
    return f, (np.array([0.1, 0.2, 0.3], np.float32), np.float32(40.0))


def _while_recorded(jax):
    jnp = jax.numpy

    def f(x):             # a body with a sort: recorded from the host, guarded, in chunks
        def body(c):
            i, v = c
            return i + 1, jnp.sort(v * -1.25 + 0.5)
        return jax.lax.while_loop(lambda c: c[0] < c[1][0] + 5, body, (0, x))
    return f, (np.array([3.0, -1.0, 2.0, 0.5], np.float32),)


def _cond_with_loop(jax):
    jnp = jax.numpy

    def f(x, n):          # a branch holding a loop: the cond reads its index back
        def branch(v):
            return jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1,
                                      jnp.sort(c[1])[::-1] * 0.5), (0, v))[1]
        return jax.lax.cond(n > 2, branch, lambda v: v - 1, x)
    return f, (np.arange(4, dtype=np.float32), np.int32(4))


def _fori(jax):
    jnp = jax.numpy
    return (lambda x: jax.lax.fori_loop(0, 9, lambda i, c: jnp.tanh(c @ jnp.asarray(WH)) + i,
                                        x), (RNG.normal(size=(3, 8)).astype(np.float32),))


def _train_step(jax):
    jnp = jax.numpy

    def step(params, x, y):
        def loss(p):
            h = jnp.tanh(x @ p["w"] + p["b"])
            return ((h - y) ** 2).mean()
        l, g = jax.value_and_grad(loss)(params)
        return jax.tree_util.tree_map(lambda p, d: p - 0.5 * d, params, g), l
    params = {"w": RNG.normal(size=(4, 2)).astype(np.float32) * 0.1,
              "b": np.zeros(2, np.float32)}
    return step, (params, RNG.normal(size=(8, 4)).astype(np.float32),
                  RNG.normal(size=(8, 2)).astype(np.float32))


def _outputs(jax):
    jnp = jax.numpy

    def f(x, y):          # outputs that alias inputs, each other, literals; bool and int8
        return {"same": x, "again": x, "lit": 3.0, "gt": x > 0.5,
                "i8": (y * 3).astype(jnp.int8), "f16": x.astype(jnp.float16) * 2}
    return f, (np.array([0.25, 0.75], np.float32), np.array([1, 50], np.int32))


PROGRAMS = {"mlp": _mlp, "conv": _conv, "rnn": _rnn, "rnn_grad": _rnn_grad, "prng": _prng,
            "cond": _cond, "while": _while, "while_recorded": _while_recorded,
            "cond_with_loop": _cond_with_loop, "fori": _fori, "train_step": _train_step,
            "outputs": _outputs}


def _assert_same(got, want, exact=False):
    gl, gt = wjax.tree_util.tree_flatten(got)
    wl = list(__import__("jax").tree_util.tree_leaves(want))
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if exact or g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_exported_and_deserialized_gives_jax_results(name):
    jax = pytest.importorskip("jax")
    f, args = PROGRAMS[name](wjax)
    exp = wexport.export(wjax.jit(f))(*args)
    back = wexport.deserialize(exp.serialize())
    jf, _ = PROGRAMS[name](jax)
    want = jax.jit(jf)(*args)
    _assert_same(back.call(*args), want, exact=name == "prng")   # threefry: bit-identical
    _assert_same(exp.call(*args), want, exact=name == "prng")
    # inside jit: the deserialized program is a call_exported equation
    _assert_same(wjax.jit(back.call)(*args), want, exact=name == "prng")


def test_exported_fields_are_jax_fields():
    jax = pytest.importorskip("jax")
    from jax import export as jexport

    def f(x, p, *, scale):
        return {"y": x * scale + p["b"], "n": (x.sum(), p["w"] @ x)}
    args = (np.ones(3, np.float32), {"w": np.ones((2, 3), np.float32),
                                     "b": np.float32(1.0)})
    ours = wexport.export(wjax.jit(f))(*args, scale=np.float32(2))
    theirs = jexport.export(jax.jit(f))(*args, scale=np.float32(2))
    for field in ("fun_name", "nr_devices", "ordered_effects", "unordered_effects",
                  "module_kept_var_idx", "uses_global_constants"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert str(ours.in_tree) == str(theirs.in_tree)
    assert str(ours.out_tree) == str(theirs.out_tree)
    assert [str(a) for a in ours.in_avals] == [str(a) for a in theirs.in_avals]
    assert [str(a) for a in ours.out_avals] == [str(a) for a in theirs.out_avals]
    assert len(ours.in_shardings_hlo) == len(theirs.in_shardings_hlo)
    assert len(ours.out_shardings_hlo) == len(theirs.out_shardings_hlo)
    assert str(ours) == str(theirs) == "Exported(fun_name=f, ...)"
    assert ours.platforms == ("webgpu",) and wexport.default_export_platform() == "webgpu"
    assert ours.in_names == ["x", "p['b']", "p['w']", "scale"]
    assert ours.out_names == ["result['n'][0]", "result['n'][1]", "result['y']"]
    back = wexport.deserialize(ours.serialize())
    assert back.in_tree == ours.in_tree and back.out_tree == ours.out_tree
    assert back.in_avals == ours.in_avals and back.out_avals == ours.out_avals
    _assert_same(back.call(*args, scale=np.float32(2)),
                 theirs.call(*args, scale=np.float32(2)))
    assert "@compute" in ours.mlir_module()


def test_static_arguments_and_weak_scalars_as_jax():
    jax = pytest.importorskip("jax")
    from jax import export as jexport
    ours = wexport.export(wjax.jit(lambda x, n: x * n, static_argnums=1))(np.ones(3, np.float32),
                                                                         4)
    theirs = jexport.export(jax.jit(lambda x, n: x * n, static_argnums=1))(
        np.ones(3, np.float32), 4)
    assert str(ours.in_tree) == str(theirs.in_tree)
    _assert_same(ours.call(np.ones(3, np.float32)), theirs.call(np.ones(3, np.float32)))
    ours = wexport.export(wjax.jit(lambda x, s: x * s))(np.ones(3, np.float32), 2.0)
    theirs = jexport.export(jax.jit(lambda x, s: x * s))(np.ones(3, np.float32), 2.0)
    assert [str(a) for a in ours.in_avals] == [str(a) for a in theirs.in_avals]
    _assert_same(ours.call(np.ones(3, np.float32), 3.0),
                 theirs.call(np.ones(3, np.float32), 3.0))


def _errors(jax, export, exp, blob):
    """(what, thunk) pairs that raise in both JAX and wjax."""
    jnp = jax.numpy
    return [
        ("not jit", lambda: export.export(lambda x: x)(np.ones(2))),
        ("shape", lambda: exp.call(jnp.ones(4))),
        ("dtype", lambda: exp.call(jnp.ones(3, jnp.int32))),
        ("tree", lambda: exp.call(jnp.ones(3), jnp.ones(3))),
        ("callback", lambda: export.export(jax.jit(
            lambda x: jax.pure_callback(np.sin, x, x)))(np.ones(3, np.float32)).serialize()),
        ("grad of deserialized", lambda: jax.grad(
            lambda x: export.deserialize(blob).call(x).sum())(jnp.ones(3))),
        ("vmap of deserialized", lambda: jax.vmap(export.deserialize(blob).call)(
            jnp.ones((2, 3)))),
        ("garbage", lambda: export.deserialize(bytearray(b"not a program at all"))),
    ]


def test_errors_are_jax_errors():
    jax = pytest.importorskip("jax")
    from jax import export as jexport
    spec = lambda m: m.ShapeDtypeStruct((3,), np.float32)   # noqa: E731
    ours = wexport.export(wjax.jit(lambda x: x * 2))(spec(wjax))
    theirs = jexport.export(jax.jit(lambda x: x * 2))(spec(jax))
    mine = _errors(wjax, wexport, ours, ours.serialize())
    ref = _errors(jax, jexport, theirs, theirs.serialize())
    for (what, a), (_, b) in zip(mine, ref):
        with pytest.raises(Exception) as theirs_err:
            b()
        cls = theirs_err.type if theirs_err.type in (ValueError, NotImplementedError,
                                                      TypeError) else ValueError
        with pytest.raises(cls) as ours_err:
            a()
        assert str(ours_err.value), what
    with pytest.raises(ValueError, match=r"args\[0\]\.shape\[0\].*expected \(3,\) and called "
                                         r"with \(4,\)"):
        ours.call(wjnp.ones(4))
    with pytest.raises(ValueError, match="Dtype mismatch for args\\[0\\]: expected float32"):
        ours.call(wjnp.ones(3, wjnp.int32))
    with pytest.raises(NotImplementedError, match="host callback"):
        wexport.export(wjax.jit(lambda x: wjax.pure_callback(np.sin, x, x)))(np.ones(3))
    with pytest.raises(NotImplementedError, match="concrete shapes only"):
        wexport.symbolic_shape("b, 3")
    with pytest.raises(ValueError, match="'webgpu' platform only"):
        wexport.export(wjax.jit(lambda x: x), platforms=["cuda"])


def test_typed_keys_cross_as_their_key_data():
    f = lambda k: (wjax.random.normal(k, (3,)), wjax.random.split(k))   # noqa: E731
    exp = wexport.export(wjax.jit(f))(wjax.random.key(7))
    assert [str(a) for a in exp.in_avals] == ["uint32[2]"]
    back = wexport.deserialize(exp.serialize())
    normal, keys = back.call(wjax.random.key(7))
    np.testing.assert_array_equal(normal, wjax.random.normal(wjax.random.key(7), (3,)))
    np.testing.assert_array_equal(wjax.random.key_data(keys),
                                  wjax.random.key_data(wjax.random.split(wjax.random.key(7))))


def test_serialized_bytes_are_checked():
    exp = wexport.export(wjax.jit(lambda x: wjnp.cumsum(x) * 2))(np.ones(5, np.float32))
    blob = bytes(exp.serialize())
    assert blob[:8] == b"WJAXEXP\0"
    with pytest.raises(ValueError, match="not a wjax exported program"):
        wexport.deserialize(b"PK\x03\x04" + blob[4:])
    with pytest.raises(ValueError, match="truncated or damaged"):
        wexport.deserialize(blob[:-3])
    damaged = bytearray(blob)
    damaged[200] ^= 0x55
    with pytest.raises(ValueError, match="checksum"):
        wexport.deserialize(damaged)
    newer = bytearray(blob)
    newer[8] = 99
    with pytest.raises(ValueError, match="format version 99"):
        wexport.deserialize(newer)


def test_pytree_nodes_need_registration_as_in_jax():
    jax = pytest.importorskip("jax")
    from jax import export as jexport
    P = collections.namedtuple("P", "a b")
    args = (P(np.ones(2, np.float32), np.zeros(3, np.float32)),)
    ours = wexport.export(wjax.jit(lambda p: P(p.b * 2, p.a)))(*args)
    theirs = jexport.export(jax.jit(lambda p: P(p.b * 2, p.a)))(*args)
    with pytest.raises(ValueError, match="unregistered type"):
        theirs.serialize()
    with pytest.raises(ValueError, match="unregistered type"):
        ours.serialize()
    wexport.register_namedtuple_serialization(P, serialized_name="test_export.P")
    with pytest.raises(ValueError, match="Duplicate"):
        wexport.register_namedtuple_serialization(P, serialized_name="test_export.P2")
    back = wexport.deserialize(ours.serialize())
    out = back.call(*args)
    assert type(out) is P and back.out_tree == ours.out_tree
    np.testing.assert_array_equal(out.a, np.zeros(3) * 2)


def test_call_in_another_process(tmp_path):
    jax = pytest.importorskip("jax")
    f, args = _train_step(wjax)
    exp = wexport.export(wjax.jit(f))(*args)
    path = tmp_path / "step.wjax"
    path.write_bytes(exp.serialize())
    np.savez(tmp_path / "args.npz", w=args[0]["w"], b=args[0]["b"], x=args[1], y=args[2])
    script = f"""
import numpy as np, wjax
from wjax import export
exp = export.deserialize(open({str(path)!r}, 'rb').read())
a = np.load({str(tmp_path / 'args.npz')!r})
params = {{'w': a['w'], 'b': a['b']}}
for _ in range(10):
    params, loss = exp.call(params, a['x'], a['y'])
np.savez({str(tmp_path / 'out.npz')!r}, w=params['w'], b=params['b'], loss=loss)
"""
    root = pathlib.Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, cwd=root)
    assert p.returncode == 0, p.stderr
    got = np.load(tmp_path / "out.npz")
    jf, _ = _train_step(jax)
    params = args[0]
    step = jax.jit(jf)
    for _ in range(10):
        params, loss = step(params, args[1], args[2])
    np.testing.assert_allclose(got["w"], params["w"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["b"], params["b"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["loss"], loss, rtol=1e-5)


def test_recording_shares_memory_and_names_requirements():
    # a recorded scan of 60 steps allocates per step; its temps share a few slots
    def f(x):
        return wjax.lax.scan(lambda c, v: (wjnp.sort(c + v), c.sum()), x[0], x)
    exp = wexport.export(wjax.jit(f))(np.ones((60, 16), np.float32))
    prog = exp.program
    temps = [b for b in prog["buffers"] if b["kind"] == "temp"]
    assert len(temps) > 100 and len(prog["slots"]) < 20
    r = exp.requirements
    assert r["features"] == []
    assert 1 <= r["limits"]["maxStorageBuffersPerShaderStage"] <= 8
    half = wexport.export(wjax.jit(lambda x: x.astype(wjnp.float16) * 2))(np.ones(4, np.float32))
    assert half.requirements["features"] == ["shader-f16"]


def test_recorder_refuses_host_reads():
    rec = Recorder(1 << 27)
    with pytest.raises(Exception, match="reads a value back"):
        rec.read(rec.alloc(4), 4)
    with pytest.raises(Exception, match="writes into a program input"):
        record(lambda r, ins: (r.copy(r.alloc(16), ins[0], 16), [ins[0]])[1],
               [wjax.ShapedArray((4,), np.float32)], 1 << 27)


def test_vjp_serialized_to_an_order_differentiates_as_in_jax():
    jax = pytest.importorskip("jax")
    from jax import export as jexport

    def f(x):
        return 7 * x * x * x

    ours = wexport.deserialize(wexport.export(wjax.jit(f))(1.0).serialize(vjp_order=3)).call
    theirs = jexport.deserialize(jexport.export(jax.jit(f))(1.0).serialize(vjp_order=3)).call
    for k in range(4):
        a, b = ours, theirs
        for _ in range(k):
            a, b = wjax.grad(a), jax.grad(b)
        np.testing.assert_allclose(a(0.1), b(0.1), rtol=1e-6)
    np.testing.assert_allclose(wjax.jit(wjax.grad(ours))(0.1), jax.grad(theirs)(0.1), rtol=1e-6)
    with pytest.raises(ValueError, match="No VJP is available"):
        wjax.grad(wjax.grad(wjax.grad(wjax.grad(ours))))(0.1)
    with pytest.raises(ValueError, match="No VJP is available"):
        jax.grad(jax.grad(jax.grad(jax.grad(theirs))))(0.1)


def test_vjp_of_a_pytree_program_matches_jax_gradients():
    jax = pytest.importorskip("jax")
    f, args = _rnn(wjax)
    exp = wexport.export(wjax.jit(f))(*args)
    assert exp.has_vjp() and exp.vjp().fun_name == "vjp_loss"
    back = wexport.deserialize(exp.serialize(vjp_order=1))
    jf, _ = _rnn(jax)
    _assert_same(wjax.grad(back.call, argnums=(0, 1))(*args),
                 jax.grad(jf, argnums=(0, 1))(*args))
    # integer inputs or outputs: no VJP, as the message says
    ints = wexport.export(wjax.jit(lambda x: x * 2))(np.ones(3, np.int32))
    assert not ints.has_vjp()
    with pytest.raises(ValueError, match="No VJP is available"):
        ints.serialize(vjp_order=1)


def test_program_does_not_depend_on_the_exporting_adapter(target_options):
    # lowered for the portable target: the local adapter's strategies and options (here
    # forced to other kernel forms) do not reach the program
    f, args = _fori(wjax)
    plain = wexport.export(wjax.jit(f))(*args).program
    target_options(matmul="vec4", reduction="slices", elementwise="looped",
                   in_kernel_loops=False, loop_workgroup=64)
    forced = wexport.export(wjax.jit(f))(*args).program
    assert forced == plain
    assert wexport.export(wjax.jit(f))(*args).requirements["limits"][
        "maxComputeInvocationsPerWorkgroup"] == 256       # the WebGPU default
