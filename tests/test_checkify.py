"""jax.experimental.checkify against real JAX: eager checks, functionalized checks under jit,
checks inside jitted functions, loops, conds and vmap, the errors' messages and classes."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import checkify as jcheckify

import wjax
import wjax.numpy as jnp
from wjax.experimental import checkify


def _program(mod, np_mod, ck):
    def f(x, y):
        ck.check(x > 0, "x must be positive, got {}", x)
        ck.check(y.sum() < 10, "sum of y is {s}", s=y.sum())
        return np_mod.log(x) + y
    return f


def _outcome(fn):
    try:
        err, out = fn()
    except Exception as e:            # noqa: BLE001 - the class and words are compared
        return type(e).__name__, str(e).split("\n")[0]
    return err.get(), np.asarray(out).tolist()


@pytest.mark.parametrize("x,y", [(2.0, [1.0, 2.0]), (-1.0, [1.0, 2.0]), (2.0, [9.0, 2.0]),
                                 (-1.0, [9.0, 2.0])])
@pytest.mark.parametrize("jit", [False, True])
def test_checkify_functionalizes_checks_like_jax(x, y, jit):
    results = []
    for mod, np_mod, ck in ((wjax, jnp, checkify), (jax, jjnp, jcheckify)):
        f = ck.checkify(_program(mod, np_mod, ck))
        f = mod.jit(f) if jit else f
        args = (np_mod.float32(x), np_mod.asarray(y, np_mod.float32))
        results.append(_outcome(lambda: f(*args)))
    (m1, o1), (m2, o2) = results
    assert m1 == m2
    np.testing.assert_allclose(o1, o2, rtol=1e-6, equal_nan=True)


def test_check_eager_staged_and_throw():
    for mod, np_mod, ck in ((wjax, jnp, checkify), (jax, jjnp, jcheckify)):
        f = _program(mod, np_mod, ck)
        with pytest.raises(ck.JaxRuntimeError, match="x must be positive, got -1.0"):
            f(np_mod.float32(-1.0), np_mod.ones(2))
        with pytest.raises(ValueError, match="not functionalized"):
            mod.jit(f)(np_mod.float32(1.0), np_mod.ones(2))
        err, _ = mod.jit(ck.checkify(f))(np_mod.float32(-3.0), np_mod.ones(2))
        with pytest.raises(ck.JaxRuntimeError, match="got -3.0"):
            err.throw()
        with pytest.raises(TypeError, match="PyTrees of arrays"):
            ck.check(True, "{}", 1.0)
    assert issubclass(checkify.JaxRuntimeError, ValueError)
    assert checkify.all_checks == checkify.user_checks | checkify.automatic_checks
    with pytest.raises(NotImplementedError, match="NaNError"):
        checkify.checkify(lambda x: x, errors=checkify.nan_checks)


def _bodies(mod, np_mod, ck):
    lax = mod.lax

    def scan(xs):
        def body(c, x):
            ck.check(x < 3.0, "step input too big: {}", x)
            return c + x, c * x
        return lax.scan(body, np_mod.float32(0.0), xs)[0]

    def cond(x):
        def a(x):
            ck.check(x > 2, "a: x={}", x)
            return x * 2
        return lax.cond(x > 1, a, lambda x: x - 1, x)

    def while_(x):
        def b(c):
            ck.check(c < 10, "while c={}", c)
            return c * 2
        return lax.while_loop(lambda c: c < 20, b, x)

    def vmap(xs):
        def g(x):
            ck.check(x != 2.0, "vmap got {}", x)
            ck.check(x < 2.5, "too big: {}", x)
            return x + 1
        return mod.vmap(g)(xs)

    def nested(xs):                  # a jitted scan of a vmapped check, then a cond
        @mod.jit
        def inner(xs):
            def body(c, row):
                ok = mod.vmap(lambda v: (ck.check(v > -5.0, "low {}", v), v)[1])(row)
                return c + ok.sum(), ok
            return lax.scan(body, np_mod.float32(0.0), xs)
        c, ys = inner(xs)
        return lax.cond(c > 100.0, lambda: c, lambda: -c)

    return {"scan": scan, "cond": cond, "while": while_, "vmap": vmap, "nested": nested}


CASES = [("scan", [1.0, 2.0, 5.0, 4.0]), ("scan", [1.0, 2.0]), ("cond", 3.0), ("cond", 1.5),
         ("while", 1.0), ("while", 11.0), ("vmap", [0.0, 1.0, 2.0, 3.0]),
         ("vmap", [3.0, 2.0, 1.0]), ("vmap", [0.0, 1.0]), ("vmap", [0.0, 3.0, 5.0, 1.0]),
         ("nested", [[1.0, -6.0], [-7.0, 2.0]]), ("nested", [[1.0, 2.0], [3.0, 4.0]])]


@pytest.mark.parametrize("name,arg", CASES)
@pytest.mark.parametrize("how", ["eager", "jit outside", "jit inside"])
def test_checks_inside_loops_conds_jit_and_vmap_like_jax(name, arg, how):
    """A check inside a scan or while body, a cond branch, a vmapped function or a jitted one
    is functionalized as JAX's: a loop's first failing step; of a batch, the earliest check
    that any example failed, with the format arguments of the last example failing it; the
    same outputs."""
    results = []
    for mod, np_mod, ck in ((wjax, jnp, checkify), (jax, jjnp, jcheckify)):
        fn = _bodies(mod, np_mod, ck)[name]
        x = np_mod.asarray(arg, np_mod.float32)
        if how == "eager":
            f = ck.checkify(fn)
        elif how == "jit outside":
            f = mod.jit(ck.checkify(fn))
        else:
            f = ck.checkify(mod.jit(fn))
        results.append(_outcome(lambda: f(x)))
    (m1, o1), (m2, o2) = results
    assert m1 == m2
    np.testing.assert_allclose(o1, o2, rtol=1e-6)
