"""Control flow: cond, switch, while_loop, fori_loop, scan, map — values against Python loops
and real JAX, under jit, grad and vmap in combination; errors; make_jaxpr printing; readbacks."""
from __future__ import annotations

import numpy as np
import pytest

import wjax as jax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import runtime
from wjax._src.core.ir import typecheck
from wjax._src.prims.control import cond_p, eval_jaxpr_reference, scan_p, while_p
from checks import against_jax, close, f16_unsupported

F = np.float32


def readbacks():
    return runtime.get().stats["readbacks"]


V = np.linspace(-1.0, 1.0, 5).astype(F)
XS = np.random.RandomState(1).randn(6, 4).astype(F)
W = (np.random.RandomState(0).randn(4, 4) * 0.5).astype(F)


# --------------------------------------------------------------------------- forward values

def test_cond_and_switch_values():
    for p in (True, False):
        out = lax.cond(p, lambda x, y: (x + y, {"k": x * y}), lambda x, y: (x - y, {"k": x / y}),
                       jnp.float32(3.0), 2.0)
        close(out, ((5.0, {"k": 6.0}) if p else (1.0, {"k": 1.5})))
    f = jax.jit(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))
    for x in (0.7, -0.7):
        close(f(F(x)), np.sin(x) if x > 0 else np.cos(x))
    # integer and float predicates are compared with 0; operand= keyword; old 5-argument form
    assert float(lax.cond(2, lambda x: x, lambda x: -x, 1.0)) == 1.0
    assert float(lax.cond(0.0, lambda x: x, lambda x: -x, operand=1.0)) == -1.0
    assert float(lax.cond(True, 2.0, lambda a: a * 10, 3.0, lambda b: b)) == 20.0
    # switch clamps an out-of-range index, eagerly and under jit
    brs = [lambda x: x, lambda x: 2 * x, lambda x: 3 * x]
    g = jax.jit(lambda i, x: lax.switch(i, brs, x))
    for i, want in ((-5, 1.0), (0, 1.0), (1, 2.0), (2, 3.0), (9, 3.0)):
        assert float(lax.switch(i, brs, 1.0)) == want
        assert float(g(np.int32(i), F(1.0))) == want
    # passthrough outputs (forwarded operands) come back too
    a, b = lax.cond(False, lambda x, y: (x, y * 2), lambda x, y: (x, y + 1), jnp.arange(3.0), 1.0)
    close(a, np.arange(3.0))
    close(b, 2.0)


def test_cond_picks_its_branch_on_the_device():
    """A traced index: a gate kernel sets the indirect dispatches of every branch's kernels
    (zero workgroups outside the chosen branch) and a select picks the outputs: no readback."""
    X = ((np.arange(16).reshape(4, 4) - 5) / 7).astype(F)
    y = V[:4]
    # branches of different kernel counts (matmul + reduction, elementwise), pytree operand,
    # a literal output
    f = jax.jit(lambda p, d: lax.cond(p > 0, lambda d: ((d["x"] @ d["x"]).sum(0) + d["y"], 1.0),
                                      lambda d: (d["x"][0] * 2 - d["y"], d["y"][1]), d))
    for p in (1.0, -1.0, 1.0):
        r0 = readbacks()
        out = f(F(p), {"x": X, "y": y})
        assert readbacks() == r0
        close(out, ((X @ X).sum(0) + y, 1.0) if p > 0 else (X[0] * 2 - y, y[1]), rtol=1e-5)
    # switch: out-of-range indices clamp; a branch returns its operand unchanged
    brs = [lambda x: (x * 2, x[0]), lambda x: (x, 3.0), lambda x: (jnp.cumsum(x), x.max())]
    want = [(y * 2, y[0]), (y, 3.0), (np.cumsum(y), y.max())]
    g = jax.jit(lambda i, x: lax.switch(i, brs, x))
    for i in range(-2, 5):
        r0 = readbacks()
        out = g(np.int32(i), y)
        assert readbacks() == r0
        close(out, want[min(max(i, 0), 2)])
    # no kernel in any branch; a nested cond (run as a select inside the branch)
    h = jax.jit(lambda p, x: lax.cond(p > 0, lambda x: x, lambda x: F(5.0), x))
    k = jax.jit(lambda p, q, x: lax.cond(p > 0, lambda x: lax.cond(q > 0, jnp.sin, jnp.cos, x) * 2,
                                         lambda x: x.sum() + x, x))
    for p in (1.0, -1.0):
        r0 = readbacks()
        a = h(F(p), F(2.0))
        bs = [k(F(p), F(q), y) for q in (1.0, -1.0)]
        assert readbacks() == r0
        close(a, 2.0 if p > 0 else 5.0)
        close(bs, [np.sin(y) * 2, np.cos(y) * 2] if p > 0 else [y.sum() + y] * 2, rtol=1e-5)
    # eagerly, with a device predicate
    for p in (True, False):
        r0 = readbacks()
        out = lax.cond(jnp.asarray(p), lambda x: x * 2, lambda x: x - 1, jnp.asarray(y))
        assert readbacks() == r0
        close(out, y * 2 if p else y - 1)
    # a branch holding a while_loop falls back to reading the index back
    w = jax.jit(
        lambda p, x: lax.cond(
            p > 0,
            lambda x: lax.while_loop(lambda c: c.sum() < 100, lambda c: c * 2 + 1, x),
            lambda x: -x,
            x,
        )
    )
    c = y.copy()
    while c.sum() < 100:
        c = c * 2 + 1
    close(w(F(1.0), y), c)
    r0 = readbacks()
    out = w(F(-1.0), y)
    assert readbacks() == r0 + 1
    close(out, -y)


def test_while_and_fori_values():
    def py_while(n, x):
        i = 0
        while i < n:
            x = x * F(1.5) + F(i)
            i += 1
        return x

    f = jax.jit(
        lambda n, x: lax.while_loop(
            lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5 + c[0]), (0, x)
        )[1]
    )
    for n in (0, 1, 7):
        close(f(np.int32(n), jnp.ones(3)), py_while(n, np.ones(3, F)), rtol=1e-6)
        close(
            lax.fori_loop(0, n, lambda i, c: c * 1.5 + i, jnp.ones(3)), py_while(n, np.ones(3, F))
        )
    # trip counts around the chunk boundaries (1, 2, 4, then one chunk recorded ahead from 8 on)
    g = jax.jit(
        lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + c[0]), (0, 0))
    )
    for n in (2, 3, 6, 8, 14, 15, 16, 30, 31, 95, 150, 300):
        i, acc = g(np.int32(n))
        assert (int(i), int(acc)) == (n, n * (n - 1) // 2), n
    # dynamic bounds (a while loop), negative trip counts, lower > 0
    h = jax.jit(lambda lo, hi, x: lax.fori_loop(lo, hi, lambda i, c: c + i * i, x))
    for lo, hi in ((2, 6), (5, 3)):
        close(h(np.int32(lo), np.int32(hi), F(0)), sum(i * i for i in range(lo, hi)))
        close(lax.fori_loop(lo, hi, lambda i, c: c + i * i, 0.0), sum(i * i for i in range(lo, hi)))
    # weak-typed initial values are promoted to the body's dtype, as in JAX
    r = lax.while_loop(lambda c: c < 3, lambda c: c + 1.0, 0)
    assert r.dtype == np.float32 and float(r) == 3.0
    assert lax.fori_loop(0, 3, lambda i, c: c + i, jnp.int8(1)).dtype == np.int8


def test_scan_values_against_python_loop():
    def step(c, x):
        return c * 0.9 + x, (c, x * c)

    def py_scan(c, xs, reverse=False):
        ys = [None] * len(xs)
        for t in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
            c, ys[t] = step(c, xs[t])
        return c, (np.array([y[0] for y in ys]), np.array([y[1] for y in ys]))

    xs = np.linspace(0, 1, 11).astype(F)
    for reverse in (False, True):
        for unroll in (1, 3, True):
            for f in (lambda c, x: lax.scan(step, c, x, reverse=reverse, unroll=unroll),
                      jax.jit(lambda c, x: lax.scan(step, c, x, reverse=reverse, unroll=unroll))):
                close(f(F(0.5), xs), py_scan(F(0.5), xs, reverse), rtol=1e-5)
    # pytrees, xs=None with length, zero length
    c, ys = lax.scan(lambda c, x: ({"a": c["a"] + x[0], "b": c["b"] * 2}, x[1] * c["a"]),
                     {"a": 0.0, "b": jnp.ones(2)}, (jnp.arange(4.0), jnp.ones(4)))
    close(c, {"a": 6.0, "b": 16 * np.ones(2)})
    close(ys, np.array([0.0, 0.0, 1.0, 3.0]))
    c, ys = lax.scan(lambda c, _: (c * 2, c), 1.5, None, length=4)
    close((c, ys), (24.0, np.array([1.5, 3.0, 6.0, 12.0])))
    c, ys = lax.scan(lambda c, x: (c * x, c), 1.5, jnp.zeros((0,)))
    assert float(c) == 1.5 and ys.shape == (0,)
    close(lax.map(lambda x: jnp.sin(x) * 2, XS), np.sin(XS) * 2, rtol=1e-5)
    close(lax.map(lambda x: jnp.sin(x) * 2, XS, batch_size=4), np.sin(XS) * 2, rtol=1e-5)


def test_nested_loops_and_cond_in_loops():
    against_jax(lambda J, N, L: J.jit(lambda xs: L.scan(
        lambda c, x: (L.scan(lambda d, y: (d + y * c, d), c, x)[0], c), 0.1, xs)), XS)
    against_jax(
        lambda J, N, L: J.jit(
            lambda xs: L.scan(
                lambda c, x: (
                    L.while_loop(lambda d: d < 5.0, lambda d: d * 2 + 0.1, N.abs(x[0]) + c * 0.01),
                    c,
                ),
                0.1,
                xs,
            )
        ),
        XS,
    )
    # a while in a while body: the outer loop is driven from the host
    f = jax.jit(lambda n: lax.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + lax.while_loop(
            lambda d: d[0] < c[0], lambda d: (d[0] + 1, d[1] + 1.0), (0, 0.0))[1]), (0, 0.0)))
    assert float(f(np.int32(6))[1]) == sum(range(6))
    # a cond inside a scan body runs as a select: no readback per step
    g = jax.jit(
        lambda xs: lax.scan(
            lambda c, x: (lax.cond(x[0] > 0, lambda c: c + x[1], lambda c: c * 0.5, c), c), 1.0, xs
        )
    )
    g(XS)
    r0 = readbacks()
    c, ys = g(XS)
    assert readbacks() == r0
    c_ref, ys_ref = 1.0, []
    for x in XS:
        ys_ref.append(c_ref)
        c_ref = c_ref + x[1] if x[0] > 0 else c_ref * 0.5
    close((c, ys), (c_ref, np.array(ys_ref)), rtol=1e-5)


def test_float16_rows_of_odd_size():
    xs = (np.arange(15).reshape(5, 3) / 8).astype(np.float16)
    if not runtime.get().has_f16:      # wgpu's GL backend: float16 is a clean TypeError
        return f16_unsupported(lambda: jnp.asarray(xs))
    c, ys = lax.scan(
        lambda c, x: (c + x.sum(), x * c), jnp.float16(1), jnp.asarray(xs), reverse=True, unroll=2
    )
    c_ref, ys_ref = np.float16(1), [None] * 5
    for t in range(4, -1, -1):
        ys_ref[t] = xs[t] * c_ref
        c_ref = np.float16(c_ref + xs[t].sum())
    close((c, ys), (c_ref, np.stack(ys_ref)), rtol=2e-3, atol=1e-3)


# --------------------------------------------------------------------------- device behaviour

def test_loops_do_not_read_back_per_iteration():
    f = jax.jit(lambda x: lax.scan(lambda c, x: (c * 0.9 + x, c), x[0], x))
    x = jnp.arange(50.0)
    f(x)[0].block_until_ready()
    r0 = readbacks()
    c, ys = f(x)
    c.block_until_ready()
    assert readbacks() == r0  # a scan of 50 steps reads nothing back
    g = jax.jit(
        lambda x: lax.while_loop(lambda c: c[0] < 100, lambda c: (c[0] + 1, c[1] * 1.01), (0, x))
    )
    g(x)[0].block_until_ready()
    r0 = readbacks()
    n, y = g(x)
    n.block_until_ready()
    assert readbacks() - r0 <= 8  # 100 iterations: one readback per chunk (1, 2, 4, ...)
    assert int(n) == 100
    close(y, np.arange(50.0, dtype=F) * F(1.01) ** 100, rtol=1e-4)


# --------------------------------------------------------------------------- autodiff

def test_grad_through_cond_scan_fori():
    x = F(0.7)
    against_jax(lambda J, N, L: J.grad(lambda x: L.cond(x > 0, N.sin, N.cos, x)), x)
    against_jax(
        lambda J, N, L: J.jit(J.grad(lambda x: L.cond(x < 0, lambda y: y * x, N.cos, x))), x
    )
    against_jax(lambda J, N, L: J.grad(lambda w, x: L.cond(x > 0, lambda: w * x, lambda: w ** 2),
                                       argnums=(0, 1)), F(0.5), F(-1.0))
    against_jax(
        lambda J, N, L: J.grad(lambda x: L.switch(2, [N.sin, N.cos, lambda z: z * 3], x)), x
    )
    against_jax(
        lambda J, N, L: J.grad(lambda x: L.fori_loop(0, 5, lambda i, c: N.sin(c) * i, x)), x
    )
    against_jax(
        lambda J, N, L: J.jit(J.grad(lambda x: L.fori_loop(0, 5, lambda i, c: N.sin(c) * x, x))), x
    )
    against_jax(
        lambda J, N, L: J.grad(
            lambda xs: N.sum(L.scan(lambda c, x: (c * x + 1, N.sin(c)), 0.5, xs, reverse=True)[1])
        ),
        V,
    )
    # an RNN: gradients w.r.t. the weights, the initial state and the inputs
    rnn = lambda J, N, L: J.jit(J.grad(  # noqa: E731
        lambda W, h0, xs: N.sum(L.scan(lambda h, x: (N.tanh(W @ h + x), h.sum()), h0, xs)[0] ** 2),
        argnums=(0, 1, 2)))
    against_jax(rnn, W, np.ones(4, F), XS, rtol=1e-4, atol=1e-5)
    against_jax(
        lambda J, N, L: J.grad(
            lambda xs: L.scan(
                lambda c, x: (
                    L.cond(x[0] > 0, lambda c: N.sin(c + x[1]), lambda c: c * x[2], c),
                    c,
                ),
                1.0,
                xs,
            )[0]
        ),
        XS,
    )
    # higher order
    against_jax(
        lambda J, N, L: J.hessian(
            lambda x: L.scan(lambda c, y: (N.sin(c * y), c), x, N.arange(1.0, 4.0))[0]
        ),
        F(0.3),
        rtol=1e-4,
    )
    against_jax(
        lambda J, N, L: J.jacrev(lambda x: L.fori_loop(0, 3, lambda i, c: N.sin(c) * (i + 1), x)), V
    )


def test_forward_mode_and_while_errors():
    x = F(1.1)
    body = lambda J, N, L: lambda x: L.while_loop(  # noqa: E731
        lambda c: c[0] < 4, lambda c: (c[0] + 1, N.sin(c[1]) * x), (0, x))[1]
    against_jax(lambda J, N, L: J.jacfwd(body(J, N, L)), x)
    against_jax(lambda J, N, L: lambda x: J.jvp(body(J, N, L), (x,), (F(1.0),)), x)
    against_jax(lambda J, N, L: lambda x: J.linearize(body(J, N, L), x)[1](F(2.0)), x)
    against_jax(
        lambda J, N, L: (
            lambda x: J.jvp(lambda x: L.scan(lambda c, y: (c * y, N.cos(c)), x, V), (x,), (F(1.0),))
        ),
        x,
    )
    with pytest.raises(
        ValueError, match="Reverse-mode differentiation does not work for lax.while_loop"
    ):
        jax.grad(lambda x: lax.while_loop(lambda c: c < 3, lambda c: c * 2, x))(1.0)
    with pytest.raises(ValueError, match="fori_loop with dynamic start/stop"):
        jax.grad(jax.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 2, x)))(
            1.0, jnp.int32(3)
        )


def test_transformed_jaxprs_typecheck():
    f = lambda w, xs: jnp.sum(lax.scan(lambda h, x: (jnp.tanh(w * h + x), h), 0.0, xs)[1])  # noqa: E731
    for j in (
        jax.make_jaxpr(jax.grad(f))(0.5, jnp.arange(3.0)),
        jax.make_jaxpr(jax.vmap(lambda x: lax.while_loop(lambda c: c < 3.0, lambda c: c * 2, x)))(
            jnp.ones(3)
        ),
        jax.make_jaxpr(jax.vmap(jax.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))))(
            jnp.ones(3)
        ),
        jax.make_jaxpr(
            jax.jacfwd(
                lambda x: lax.while_loop(
                    lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, x)
                )[1]
            )
        )(1.0),
    ):
        typecheck(j.jaxpr)
    names = {e.prim.name for e in jax.make_jaxpr(jax.grad(f))(0.5, jnp.arange(3.0)).jaxpr.eqns}
    assert "scan" in names


# --------------------------------------------------------------------------- vmap

def test_vmap_of_control_flow():
    against_jax(lambda J, N, L: J.vmap(lambda x: L.cond(x > 0, N.sin, N.cos, x)), V)
    against_jax(
        lambda J, N, L: J.vmap(
            lambda x, y: L.cond(y > 0, lambda a: a * 2, lambda a: a - 1, x), in_axes=(0, None)
        ),
        V,
        F(0.3),
    )
    against_jax(lambda J, N, L: J.vmap(lambda p, x: L.cond(p, lambda a: (a, {"k": a * 2}),
                                                           lambda a: (-a, {"k": a + 1}), x)),
                np.array([True, False, True]), np.arange(3.0, dtype=F))
    against_jax(
        lambda J, N, L: J.vmap(lambda i, x: L.switch(i, [N.sin, N.cos, lambda z: z * 3], x)),
        np.array([0, 1, 2, 7, -1], np.int32),
        V,
    )
    against_jax(
        lambda J, N, L: J.vmap(
            lambda x: L.while_loop(lambda c: c < 3.0, lambda c: c * 1.5 + 0.1, x)
        ),
        np.abs(V),
    )
    against_jax(
        lambda J, N, L: J.jit(J.vmap(lambda n, x: L.fori_loop(0, n, lambda i, c: c * 1.5 + i, x))),
        np.array([0, 1, 3, 5], np.int32),
        np.ones(4, F),
    )
    against_jax(
        lambda J, N, L: J.vmap(lambda xs: L.scan(lambda c, x: (c + x, c * x), 0.0, xs), in_axes=1),
        XS,
    )
    against_jax(
        lambda J, N, L: J.vmap(lambda w: L.scan(lambda c, x: (c * w + x, c), 0.0, N.arange(3.0))), V
    )
    against_jax(
        lambda J, N, L: J.vmap(J.grad(lambda x: L.cond(x > 0, N.sin, lambda y: y**3, x))), V
    )
    against_jax(
        lambda J, N, L: J.vmap(
            J.grad(lambda xs: N.sum(L.scan(lambda c, x: (c * x + 1, N.sin(c)), 0.5, xs)[1]))
        ),
        np.stack([V, 2 * V]),
    )
    against_jax(
        lambda J, N, L: J.jit(
            J.vmap(J.grad(lambda x: L.fori_loop(0, 4, lambda i, c: N.sin(c) * x, x)))
        ),
        V,
    )


# --------------------------------------------------------------------------- printing, references

def test_make_jaxpr_prints_nested_jaxprs():
    s = str(jax.make_jaxpr(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(1.0))
    assert "cond[\n      branches=(" in s and "cos" in s and "sin" in s
    assert s.index("cos") < s.index("sin")
    assert "convert_element_type" in s
    s = str(
        jax.make_jaxpr(
            lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * x), (0, x))
        )(1.0)
    )
    assert "while[\n      body_jaxpr={ lambda ; " in s and "cond_jaxpr={ lambda ; " in s
    assert "body_nconsts=1" in s and "cond_nconsts=0" in s and "lt" in s
    s = str(jax.make_jaxpr(lambda x: lax.fori_loop(0, 5, lambda i, c: c * 2, x))(1.0))
    assert (
        "scan[\n      jaxpr={ lambda ; " in s and "length=5" in s and "num_carry=2" in s
        and "unroll=1" in s
    )
    assert "reverse=False" in s and "num_consts=0" in s
    s = str(jax.make_jaxpr(lambda x: lax.switch(2, [jnp.sin, jnp.cos, jnp.tan], x))(1.0))
    assert "clamp" in s and s.count("{ lambda") == 4


def test_reference_rules():
    j = jax.make_jaxpr(
        lambda x, xs: lax.scan(
            lambda c, y: (c * y + x, lax.cond(y > 0.5, lambda: c, lambda: -c)), x, xs
        )
    )(F(0.5), np.linspace(0, 1, 4).astype(F))
    eqn = next(e for e in j.jaxpr.eqns if e.prim is scan_p)
    got = eval_jaxpr_reference(j.jaxpr, j.consts, F(0.5), np.linspace(0, 1, 4).astype(F))
    want = lax.scan(lambda c, y: (c * y + 0.5, lax.cond(y > 0.5, lambda: c, lambda: -c)), F(0.5),
                    jnp.linspace(0, 1, 4))
    close(got, want, rtol=1e-6)
    assert eqn.prim.reference is not None and cond_p.reference is not None
    out = while_p.reference(np.int32(5), np.int32(0), F(1.0), **jax.make_jaxpr(
        lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2), (0, 1.0)))(
            np.int32(5)).jaxpr.eqns[0].params)
    assert int(out[0]) == 5 and float(out[1]) == 32.0


# --------------------------------------------------------------------------- errors

def test_carry_and_branch_type_errors():
    with pytest.raises(
        TypeError,
        match=r"while_loop body function carry input and carry output must have equal "
        r"types(.|\n)*input carry c has type float32\[\] but the corresponding "
        r"output carry component has type int32\[\], so the dtypes do not match",
    ):
        lax.while_loop(lambda c: c < 3, lambda c: (c + 1).astype(jnp.int32), jnp.float32(0))
    with pytest.raises(
        TypeError, match=r"float32\[\] (.|\n)*float32\[2\], so the shapes do not match"
    ):
        lax.while_loop(lambda c: c < 3, lambda c: jnp.ones(2), 1.0)
    with pytest.raises(
        TypeError, match="must have the same pytree structure(.|\n)*their Python types differ"
    ):
        lax.while_loop(lambda c: c[0] < 3, lambda c: c[0], (1.0,))
    with pytest.raises(
        TypeError,
        match=r"scan body function carry input(.|\n)*loop_carry\[1\] has type "
        r"float32\[3\] but the corresponding output carry component has type "
        r"int32\[3\]",
    ):
        lax.fori_loop(0, 3, lambda i, c: c.astype(jnp.int32), jnp.ones(3))
    with pytest.raises(
        TypeError,
        match="tuple of length 1 but the corresponding component of the carry output "
        "is a tuple of length 2",
    ):
        lax.fori_loop(0, 3, lambda i, c: (c, c), (1.0,))
    with pytest.raises(TypeError, match="pytree node metadata does not match"):
        lax.scan(lambda c, x: ({"a": c["a"], "c": 1.0}, x), {"a": 0.0, "b": 1.0}, jnp.ones(3))
    with pytest.raises(
        TypeError,
        match=r"cond branches must have equal output types(.|\n)*The output of true_fun "
        r"has type float32\[\] but the corresponding output of false_fun has type "
        r"int32\[\]",
    ):
        lax.cond(True, lambda x: x, lambda x: x.astype(jnp.int32), 1.0)
    with pytest.raises(TypeError, match="cond branch outputs must have the same pytree structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, 1.0)
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c, 1.0)
    with pytest.raises(
        TypeError, match=r"Pred must be a scalar, got \[ True  True\] of shape \(2,\)"
    ):
        lax.cond(np.array([True, True]), lambda x: x, lambda x: x, 1.0)
    with pytest.raises(TypeError, match="Index type must be an integer, got 1.0 as float32"):
        lax.switch(1.0, [lambda x: x], 1.0)
    with pytest.raises(ValueError, match="Empty branch sequence"):
        lax.switch(1, [], 1.0)
    with pytest.raises(
        ValueError,
        match=r"scan got `length` argument of 4 which disagrees with leading axis "
        r"sizes \[3\]",
    ):
        lax.scan(lambda c, x: (c, x), 0.0, jnp.ones(3), length=4)
    with pytest.raises(ValueError, match="scan got values with different leading axis sizes: 3, 4"):
        lax.scan(lambda c, x: (c, x), 0.0, (jnp.ones(3), jnp.ones(4)))
    with pytest.raises(
        ValueError, match="scan got no values to scan over and `length` not provided"
    ):
        lax.scan(lambda c, x: (c, x), 0.0, None)
    with pytest.raises(TypeError, match=r"scan body output must be a pair, got ~float32\[\]"):
        lax.scan(lambda c, x: c, 0.0, jnp.ones(3))
    with pytest.raises(
        TypeError, match="lower and upper arguments to fori_loop must have equal types"
    ):
        lax.fori_loop(0, 3.0, lambda i, c: c + i, 1)


def test_disable_jit_runs_python_loops():
    with jax.disable_jit():
        c, ys = lax.scan(lambda c, x: (c + x, c), 0.0, jnp.arange(3.0))
        close((c, ys), (3.0, np.array([0.0, 0.0, 1.0])))
        assert int(lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0)) == 3
        assert lax.cond(True, lambda: 1, lambda: 2) == 1


def test_dce_prunes_unused_outputs_of_control_flow():
    from wjax._src.core.tracing import eval_jaxpr
    from wjax._src.transforms.dce import dce_jaxpr
    xs = np.linspace(0, 1, 5).astype(F)
    j = jax.make_jaxpr(
        lambda xs: lax.scan(
            lambda c, x: ((c[0] + x, c[1] * 2), (c[0] * x, jnp.sin(x))), (0.0, 1.0), xs
        )[1][0]
    )(xs)
    d, _ = dce_jaxpr(j.jaxpr)
    (e,) = [e for e in d.eqns if e.prim is scan_p]
    assert len(e.outvars) == 2 and e.params["num_carry"] == 1       # c[1] and sin(x) are gone
    typecheck(d)
    close(
        eval_jaxpr(d, j.consts, jnp.asarray(xs))[0],
        np.cumsum(np.concatenate([[0], xs[:-1]])) * xs,
        rtol=1e-6,
    )
    j = jax.make_jaxpr(
        lambda x: lax.cond(x > 0, lambda a, b: (a + 1, b * 2), lambda a, b: (a - 1, b), x, 2 * x)[0]
    )(1.0)
    d, _ = dce_jaxpr(j.jaxpr)
    (e,) = [e for e in d.eqns if e.prim is cond_p]
    assert len(e.outvars) == 1 and len(e.invars) == 2               # the second operand is unused
    typecheck(d)
    j = jax.make_jaxpr(
        lambda x: lax.while_loop(
            lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] * x, c[2] + 1.0), (0, x, 0.0)
        )[2]
    )(1.0)
    d, _ = dce_jaxpr(j.jaxpr)
    (e,) = [e for e in d.eqns if e.prim is while_p]
    assert len(e.outvars) == 2 and e.params["body_nconsts"] == 0    # c[1] (and x) are gone
    typecheck(d)
    assert float(eval_jaxpr(d, j.consts, 1.0)[0]) == 5.0


def _zero_trip_programs(J, N, L, x):
    """Loops that run no step: a scan over zero-length xs, a scan of length 0 (reverse, a
    counter, consts), unrolled, a static and a dynamic zero-trip fori_loop, a while_loop whose
    condition is false at once -- with their gradients and a vmap."""
    def s_xs(x):
        return L.scan(lambda c, xt: (c * 0.5 + xt.sum(), c * xt), x, N.zeros((0, 4), N.float32))

    def s_len0(x):
        def body(c, t):
            i, v = c
            return (i + 1, v * x[0] + i), v.sum()
        return L.scan(body, (0, x), None, length=0, reverse=True)

    def s_unrolled(x):
        return L.scan(lambda c, xt: (c * 0.5 + xt.sum(), c * xt), x,
                      N.zeros((0, 4), N.float32), unroll=4)

    def carry_only(x):
        return L.scan(lambda c, _: (c * 0.5, None), x, None, length=0)[0]

    def fori0(x):
        return L.fori_loop(0, 0, lambda i, c: c * 2 + i, x)

    def fori_dynamic(x):
        return L.fori_loop(0, (x[0] > 5).astype(N.int32), lambda i, c: c * 2 + i, x)

    def while0(x):
        return L.while_loop(lambda c: c[0] > 100, lambda c: c * 2, x)

    def grad(f, first=False):
        w = N.arange(1.0, 5.0) / 3
        return J.grad(lambda x: N.sum((f(x)[0] if first else f(x)) * w))
    return {"scan over no xs": s_xs, "scan length 0": s_len0, "unrolled": s_unrolled,
            "carry only": carry_only, "fori 0": fori0, "fori dynamic 0": fori_dynamic,
            "while 0": while0, "grad scan": grad(s_xs, True), "grad carry": grad(carry_only),
            "grad fori": grad(fori0), "grad unrolled": grad(s_unrolled, True),
            "vmap scan": lambda x: J.vmap(s_xs)(N.stack([x, x + 1])),
            "vmap grad fori": lambda x: J.vmap(grad(fori0))(N.stack([x, x + 1]))}


@pytest.mark.parametrize("forms", ["adapter", "gpu"])
def test_loops_of_no_step_pass_their_carries_through(target_options, forms):
    """A loop that runs no step returns its initial carries (and empty ``ys``), and its
    gradient is the cotangent passed straight through: the recorded scan of length 0 left
    its carry outputs unwritten (zeros on lavapipe, whatever a pooled buffer held on a GPU's
    forms), so ``grad`` through ``fori_loop(0, 0, ...)`` or a scan over no xs gave zeros."""
    rjax = pytest.importorskip("jax")
    if forms == "gpu":
        from wjax._src.backend import profiles
        target_options(**dict(profiles.GPU_STRATEGIES, spin_wait_us=0))
    x = np.arange(1, 5, dtype=np.float32)
    want = _zero_trip_programs(rjax, rjax.numpy, rjax.lax, x)
    for name, f in _zero_trip_programs(jax, jnp, lax, x).items():
        for how, fn in (("eager", f), ("jit", jax.jit(f))):
            got = jax.tree_util.tree_leaves(fn(x))
            ref = rjax.tree_util.tree_leaves(want[name](x))
            assert [np.asarray(g).dtype for g in got] == [np.asarray(w).dtype for w in ref], (
                name, how)
            close(got, ref, rtol=1e-6, atol=0)
