"""wjax quickstart: "JAX as accelerated NumPy", on any GPU through WebGPU.

The tour of JAX's quickstart: create arrays, see which device holds them, update them
functionally with ``.at``, index out of bounds (clamped, not an error), move data to and from
NumPy, and time a dot product of two 10^7-element float32 vectors (with ``block_until_ready``,
after a warm-up, median of a few runs) next to NumPy.

    python3 demos/quickstart.py            # or: bash scripts/demo.sh
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import wjax as jax  # noqa: E402
import wjax.numpy as jnp  # noqa: E402


def section(title):
    print(f"\n== {title} " + "=" * max(0, 66 - len(title)))


def median_time(f, runs=5):
    f()                                       # warm-up: compile shaders, fill the pool
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    section("arrays")
    x = jnp.arange(10.0)
    print("x = jnp.arange(10.0)      ->", repr(x))
    print("x.dtype, x.shape          ->", x.dtype, x.shape)
    m = jnp.arange(6).reshape(2, 3)
    print("m = arange(6).reshape(2,3)->", repr(m).replace("\n", "\n" + " " * 29))
    print("m.T @ m                   ->", (m.T @ m).tolist())
    print("jnp.sin(x[:3]) * 2 + 1    ->", repr(jnp.sin(x[:3]) * 2 + 1))
    print("jnp.array(2.0) (weak)     ->", repr(jnp.array(2.0)))

    section("devices")
    print("jax.devices()             ->", jax.devices())
    print("x.devices()               ->", x.devices())
    print("jax.default_backend()     ->", jax.default_backend())

    section("immutable arrays, .at updates")
    try:
        x[0] = 100.0
    except TypeError as e:
        print(
            "x[0] = 100.0              -> TypeError:",
            str(e)[: str(e).find(".at[idx]") + 20] + "...",
        )
    y = x.at[0].set(100.0)
    print("x.at[0].set(100.0)        ->", repr(y))
    print("x.at[1:4].add(0.5)        ->", repr(x.at[1:4].add(0.5)))
    print("x (unchanged)             ->", repr(x))
    z = jnp.zeros(3, jnp.int32).at[jnp.array([0, 0, 2])].add(1)
    print("zeros(3, int32).at[jnp.array([0, 0, 2])].add(1) ->", repr(z))

    section("out-of-bounds indexing (clamped reads, dropped updates)")
    print("jnp.arange(5)[10]         ->", repr(jnp.arange(5)[10]))
    print("jnp.arange(5).at[10].set(7)->", repr(jnp.arange(5).at[10].set(7)))
    print(
        "x.at[12].get(mode='fill', fill_value=-1) ->",
        repr(x.at[12].get(mode="fill", fill_value=-1)),
    )

    section("NumPy interop")
    h = np.linspace(0, 1, 5, dtype=np.float32)
    d = jnp.asarray(h)                        # host -> device
    back = np.asarray(d * 10)                 # device -> host (waits for the result)
    print("np.asarray(jnp.asarray(h) * 10) ->", back, type(back).__name__)
    print("NumPy array + wjax Array  ->", type(h + d).__name__)
    print("float64 input becomes     ->", jnp.asarray(np.ones(2)).dtype, "(x64 is off, as in JAX)")

    section("timing: dot product of two 10^7-element float32 vectors")
    n = 10**7
    rng = np.random.default_rng(0)
    a_np = rng.random(n, dtype=np.float32)
    b_np = rng.random(n, dtype=np.float32)
    a, b = jnp.asarray(a_np), jnp.asarray(b_np)
    dot_jit = jax.jit(jnp.dot)

    t_np = median_time(lambda: np.dot(a_np, b_np))
    t_eager = median_time(lambda: jnp.dot(a, b).block_until_ready())
    t_jit = median_time(lambda: dot_jit(a, b).block_until_ready())
    exact = float(np.dot(a_np.astype(np.float64), b_np.astype(np.float64)))
    got = float(dot_jit(a, b))
    print(f"  {'':24s} {'median':>10s}")
    print(f"  {'numpy  np.dot':24s} {t_np * 1e3:8.2f} ms")
    print(f"  {'wjax   jnp.dot (eager)':24s} {t_eager * 1e3:8.2f} ms")
    print(f"  {'wjax   jit(jnp.dot)':24s} {t_jit * 1e3:8.2f} ms")
    print(f"  result {got:.6g} (float64 reference {exact:.6g}, rel. error "
          f"{abs(got - exact) / exact:.1e})")
    assert abs(got - exact) / exact < 1e-5, "wrong dot product"
    print(f"\nDevice: {jax.devices()[0]}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(quickstart ran in {time.perf_counter() - t0:.1f} s)")
