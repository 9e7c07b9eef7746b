"""Refs inside traced code (issue 30), each program run by wjax and by real JAX: refs created
and used inside ``jit``, written in ``fori_loop``/``scan``/``while_loop``/``cond`` bodies,
under ``grad`` and ``vmap``, passed into and closed over by ``jit``, and the cases that raise."""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.numpy as wjnp

jax = pytest.importorskip("jax")
jjnp = jax.numpy

X = np.arange(1.0, 5.0, dtype=np.float32)


def both(program):
    """``program(jax, jnp)`` run with wjax and with JAX, results compared leaf by leaf."""
    ours = program(wjax, wjnp)
    theirs = program(jax, jjnp)
    lo, lt = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(lo) == len(lt)
    for a, b in zip(lo, lt):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    return ours


def _inside(jx, jnp):
    def f(x):
        r = jx.new_ref(x)
        r[...] = r[...] * 2
        r[1] += 10.0
        r[0:2] = r[0:2] + 1
        r[-1] -= x[0]
        third = r[2]
        return jx.freeze(r), third
    return f


def test_ref_created_inside_jit():
    both(lambda jx, jnp: _inside(jx, jnp)(jnp.asarray(X)))
    both(lambda jx, jnp: jx.jit(_inside(jx, jnp))(jnp.asarray(X)))


def test_ref_inside_grad_and_vmap():
    def loss(jx, jnp):
        f = _inside(jx, jnp)
        return lambda x: (f(x)[0] ** 2).sum() + f(x)[1]
    both(lambda jx, jnp: jx.grad(loss(jx, jnp))(jnp.asarray(X)))
    both(lambda jx, jnp: jx.jit(jx.grad(loss(jx, jnp)))(jnp.asarray(X)))
    both(lambda jx, jnp: jx.vmap(_inside(jx, jnp))(jnp.asarray(np.stack([X, 2 * X]))))


def _loops(jx, jnp):
    def g(x):
        r = jx.new_ref(jnp.zeros_like(x))

        def body(i, c):
            r[i] = x[i] * c
            r[...] += 1.0
            return c + 1.0
        c = jx.lax.fori_loop(0, x.shape[0], body, 1.0)

        def sbody(c, xi):
            r[0] += xi
            return c * 2, r[0] * 2
        c2, ys = jx.lax.scan(sbody, c, x)
        return r[...], ys, c2
    return g


def test_ref_in_fori_loop_and_scan_bodies():
    both(lambda jx, jnp: _loops(jx, jnp)(jnp.asarray(X)))
    both(lambda jx, jnp: jx.jit(_loops(jx, jnp))(jnp.asarray(X)))
    both(lambda jx, jnp: jx.grad(lambda x: _loops(jx, jnp)(x)[0].sum()
                                 + _loops(jx, jnp)(x)[1].sum())(jnp.asarray(X)))


def test_ref_in_while_loop_traced_fori_and_cond():
    def prog(jx, jnp):
        @jx.jit
        def f(x, n):
            r = jx.new_ref(x)

            def body(i, c):
                r[1] = r[1] * 2
                return c
            jx.lax.fori_loop(0, n, body, 0.0)          # traced bounds: a while_loop
            jx.lax.cond(x[0] > 0, lambda: r.__setitem__(2, 7.0), lambda: None)
            jx.lax.cond(x[0] < 0, lambda: r.__setitem__(3, 7.0), lambda: None)
            return r[...]
        return f(jnp.asarray(X), 3)
    both(prog)


def test_nested_loops_write_outer_ref():
    def prog(jx, jnp):
        @jx.jit
        def f(x):
            r = jx.new_ref(jnp.zeros((3, 4), jnp.float32))

            def outer(i, c):
                def inner(j, c):
                    r[i, j] += x[j] * (i + 1)
                    return c
                return jx.lax.fori_loop(0, 4, inner, c)
            jx.lax.fori_loop(0, 3, outer, 0)
            return r[...]
        return f(jnp.asarray(X))
    both(prog)


def test_ref_passed_into_jit():
    def prog(jx, jnp):
        @jx.jit
        def f(r, x):
            r[...] += x
            r[0] = r[0] * 3
            return r[...].sum()
        r = jx.new_ref(jnp.arange(3.0))
        a = f(r, jnp.ones(3))
        v1 = r[...]
        b = f(r, jnp.ones(3))

        @jx.jit
        def outer(x):
            q = jx.new_ref(x)
            s = f(q, x)
            jx.lax.fori_loop(0, 2, lambda i, c: (f(q, c), c + 1)[1], x)
            return q[...], s
        return a, v1, b, r[...], outer(jnp.ones(3))
    both(prog)


def test_ref_closed_over_by_jit():
    def prog(jx, jnp):
        cnt = jx.new_ref(jnp.zeros((), jnp.int32))

        @jx.jit
        def step(x):
            cnt[...] += 1
            return x * cnt[...]
        a, b = step(jnp.ones(2)), step(jnp.ones(2))
        c = jx.jit(lambda x: step(x) + step(x))(jnp.ones(2))
        return a, b, c, cnt[...]
    both(prog)


def test_unsupported_cases_raise():
    for m in (wjax, jax):
        r = m.new_ref(m.numpy.zeros(3))

        def g(x):
            r[...] = x
            return x
        with pytest.raises(Exception, match="(?i)differentiated|grad"):
            m.grad(lambda x: g(x).sum())(m.numpy.ones(3))
        with pytest.raises(Exception, match="(?i)vmap"):
            m.vmap(g)(m.numpy.ones((2, 3)))
        with pytest.raises(ValueError, match="cannot be returned"):
            m.jit(lambda a: m.new_ref(a))(m.numpy.ones(3))
    w = wjax.new_ref(wjnp.zeros(3))
    with pytest.raises(NotImplementedError, match="inside grad"):
        wjax.grad(lambda x: (w.__setitem__(..., x), x.sum())[1])(wjnp.ones(3))


def test_refs_print_vmap_and_refuse_math_as_in_jax():
    jax = pytest.importorskip("jax")

    def program(m):
        jnp = m.numpy
        out = []
        out.append(repr(m.new_ref(jnp.zeros((2, 3)))))
        out.append(repr(m.new_ref(1.0)))
        out.append(str(m.new_ref(jnp.arange(3))))

        def dist(x, y, out_ref):          # vmap over ref arguments (the array refs doc)
            assert out_ref.ndim == 0
            out_ref[...] = jnp.sum((x - y) ** 2)
        vecs = jnp.arange(12.).reshape(3, 4)
        out_ref = m.new_ref(jnp.zeros((3, 3)))
        m.vmap(m.vmap(dist, (0, None, 0)), (None, 0, 0))(vecs, vecs, out_ref)
        out.append(repr(out_ref))
        r = m.new_ref(jnp.zeros(3))

        def acc(v, rr):
            rr[...] = rr[...] + v
            return v * 2
        out.append(repr(m.vmap(acc)(jnp.arange(3.), r)) + repr(r))
        x_ref = m.new_ref(0.)

        def closed(v):
            x_ref[...] = v
        for f, a in ((closed, (jnp.arange(3.),)),
                     (lambda v, rr: acc(v, rr), (jnp.arange(3.), m.new_ref(jnp.zeros(()))))):
            try:
                m.vmap(f, (0,) * len(a) if len(a) == 1 else (0, None))(*a)
                out.append("no error")
            except Exception as e:        # noqa: BLE001 - JAX raises Exception itself
                out.append(f"{type(e).__name__}: {e}")
        try:
            jnp.sin(m.new_ref(1.0))
        except TypeError as e:
            out.append(str(e).split(", got")[0])
        out.append(type(m.new_ref(jnp.ones(2)).unsafe_buffer_pointer()).__name__)
        return out
    assert program(wjax) == program(jax)


def test_ref_argument_errors_are_jax_errors():
    jax = pytest.importorskip("jax")

    def program(m):
        x_ref = m.new_ref(0.)
        out = []

        def err1(r):
            r[...] = 5.
            return r

        def err2(a, b):
            return None

        def err3(y_ref):
            y_ref[...] = x_ref[...]

        for f, args in ((err1, (x_ref,)), (err2, (x_ref, x_ref)), (err3, (x_ref,))):
            try:
                m.jit(f)(*args)
                out.append("no error")
            except ValueError as e:
                out.append(str(e))
        return out
    assert program(wjax) == program(jax)
