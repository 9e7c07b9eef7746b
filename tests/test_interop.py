"""DLPack (both ways, with NumPy), to_device and the array API's inspection namespace, against
real JAX where JAX answers the same question."""
import jax.numpy as jjnp
import numpy as np
import pytest

import wjax
import wjax.numpy as jnp


def test_dlpack_round_trips_with_numpy_like_jax():
    for x in (np.arange(6.0, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int32),
              np.array([True, False])):
        ours, theirs = jnp.asarray(x), jjnp.asarray(x)
        np.testing.assert_array_equal(np.from_dlpack(ours), np.from_dlpack(theirs))
        assert ours.__dlpack_device__() == tuple(theirs.__dlpack_device__())
        back = jnp.from_dlpack(x)
        assert isinstance(back, wjax.Array) and back.dtype == jjnp.from_dlpack(x).dtype
        np.testing.assert_array_equal(back, x)
    y = jnp.arange(3.0)
    assert jnp.from_dlpack(y) is y
    np.testing.assert_array_equal(jnp.from_dlpack(y, copy=True), y)


def test_dlpack_refusals():
    with pytest.raises(BufferError, match="copy=False"):
        jnp.arange(3.0).__dlpack__(copy=False)
    with pytest.raises(TypeError, match="DLPack"):
        jnp.from_dlpack([1, 2])


def test_to_device_is_identity_on_the_one_device():
    x = jnp.arange(3.0)
    assert x.to_device(wjax.devices()[0]) is x
    assert x.to_device(x.sharding) is x
    assert x.to_device(None) is x
    with pytest.raises(ValueError, match="not a device"):
        x.to_device("tpu:7")


def test_namespace_info_like_jax():
    ours, theirs = jnp.__array_namespace_info__(), jjnp.__array_namespace_info__()
    assert ours.capabilities()["boolean indexing"] == theirs.capabilities()["boolean indexing"]
    assert ours.capabilities()["data-dependent shapes"] == \
        theirs.capabilities()["data-dependent shapes"]
    for k, v in ours.default_dtypes().items():
        assert theirs.default_dtypes()[k] == v
    for kind in ("bool", "signed integer", "unsigned integer", "integral", "real floating",
                 "complex floating", "numeric", ("bool", "real floating")):
        assert ours.dtypes(kind=kind) == theirs.dtypes(kind=kind), kind
    assert ours.dtypes(kind="complex floating") == {"complex64": np.dtype("complex64")}
    assert set(ours.dtypes()) == set(theirs.dtypes())
    assert ours.default_device() is None and ours.devices()[1] == wjax.devices()[0]
    with pytest.raises(KeyError):
        ours.dtypes(kind="bogus")
    assert isinstance(jnp.__array_api_version__, str)
