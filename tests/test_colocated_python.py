"""``jax.experimental.colocated_python`` as JAX's colocated-Python notebook uses it: functions
(specialized or not) and classes, compared with real JAX on its CPU devices."""
import contextlib
import io

import numpy as np
import pytest

import wjax


def _notebook(jax, path):
    import importlib
    cp = importlib.import_module(jax.__name__ + ".experimental.colocated_python")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cpu = cp.colocated_cpu_devices(jax.devices())
        assert len(cpu) == len(jax.devices())
        sharding = jax.sharding.NamedSharding(jax.sharding.Mesh(cpu, ["x"]), jax.P())
        x = jax.device_put(1, sharding)
        f = cp.colocated_python(lambda v: v + 1)
        y = f(x)
        assert y.sharding == x.sharding
        print(y, f.specialize(out_specs_fn=lambda v: v)(x))
        spec = jax.ShapeDtypeStruct(shape=(), dtype=np.int32, sharding=sharding)
        g = f.specialize(in_specs=((spec,), {}), out_specs_fn=lambda v: spec)
        print(repr(g(x)))
        def write():                      # runs where the data is: I/O, no return value
            with open(path, "w") as fh:
                fh.write("ran")
        print(cp.colocated_python(write).specialize(devices=cpu)(), open(path).read())

        class Adder:
            def __init__(self, increment):
                print("Adder created")
                self.increment = increment

            def __del__(self):
                print("Adder destroyed")

            def add(self, v):
                return v + self.increment

        adder = cp.colocated_python_class(Adder)(1)
        print("wrapped")
        print(adder.add(x), adder.add(x + 1))
        del adder
    return out.getvalue()


def test_colocated_python_notebook_prints_what_jax_prints(tmp_path):
    jax = pytest.importorskip("jax")
    assert _notebook(wjax, tmp_path / "a") == _notebook(jax, tmp_path / "b")


def test_function_without_arrays_needs_devices():
    f = wjax.experimental.colocated_python.colocated_python(lambda: 1)
    with pytest.raises(ValueError, match="specialize it with devices"):
        f()
