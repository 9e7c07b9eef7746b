"""jax.experimental.checkify against real JAX: eager checks, functionalized checks under jit,
vmap-free programs, the errors' messages and classes."""
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
