"""pure_callback and debug.print errors, against real JAX."""
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp

CASES = {
    "bad_shape": lambda mod, np_: mod.jit(lambda x: mod.pure_callback(
        lambda v: np.ones(5, np.float32), mod.ShapeDtypeStruct((3,), np.float32), x))(
            np_.ones(3)),
    "grad": lambda mod, np_: mod.grad(lambda x: mod.pure_callback(
        lambda v: v, mod.ShapeDtypeStruct((), np.float32), x))(1.0),
    "vmap_no_method": lambda mod, np_: mod.vmap(lambda x: mod.pure_callback(
        lambda v: v, mod.ShapeDtypeStruct((), np.float32), x))(np_.ones(3)),
    "unused_format_arg": lambda mod, np_: mod.debug.print("{}", 1.0, 2.0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_callback_errors_like_jax(case):
    errors = []
    for mod, np_ in ((wjax, jnp), (jax, jjnp)):
        with pytest.raises(Exception) as info:
            np.asarray(CASES[case](mod, np_))
        errors.append(type(info.value))
    ours, theirs = errors
    assert issubclass(ours, theirs) or ours.__name__ == theirs.__name__, errors


def test_pure_callback_values_pytrees_and_eval_order():
    calls = []

    def host(a, b):
        calls.append(1)
        return {"s": np.asarray(a + b["c"]), "t": np.asarray(a * 2)}

    spec = {"s": wjax.ShapeDtypeStruct((2,), np.float32),
            "t": wjax.ShapeDtypeStruct((2,), np.float32)}
    out = wjax.jit(lambda a, c: wjax.pure_callback(host, spec, a, {"c": c}))(
        jnp.ones(2), jnp.arange(2.0))
    np.testing.assert_array_equal(np.asarray(out["s"]), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(out["t"]), [2.0, 2.0])
    assert calls == [1]
