"""Shared test setup.

Real JAX (installed in the test environment) is a test oracle only: tests import it
inside the individual test with ``pytest.importorskip("jax")``.  It must run on
the CPU and with x64 off, as wjax does.

Hypothesis runs under one of two profiles, chosen by ``WJAX_HYPOTHESIS``:

* ``ci`` (the default, used by ``scripts/test.sh``): derandomized, no example database,
  no deadline -- every run on every machine tries the same examples, so a pass is a pass.
* ``fuzz`` (``scripts/test.sh --fuzz``): fresh random examples every run, ``WJAX_FUZZ_SCALE``
  times as many per test (default 10), failures saved to ``.hypothesis/`` and replayed first
  on the next fuzz run.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
# kernels take their default variants: no timing, no autotune cache read or written
# (tests/test_autotune.py turns the tuner on with a cache file of its own)
os.environ.setdefault("WJAX_AUTOTUNE", "0")

from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.database import DirectoryBasedExampleDatabase  # noqa: E402

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

# GPU work makes single examples slower than hypothesis expects: no deadline, bounded counts.
settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True,
                          suppress_health_check=_SLOW_OK)
settings.register_profile(
    "fuzz",
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=_SLOW_OK,
    database=DirectoryBasedExampleDatabase(
        os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".hypothesis", "fuzz"
        )
    ),
)
settings.load_profile(os.environ.get("WJAX_HYPOTHESIS", "ci"))


import contextlib  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

_RNG_STATES = {}


@pytest.fixture(autouse=True)
def _module_rngs_restarted(request):
    """Every test starts its module's random generators (module-level ``RandomState`` /
    ``Generator`` objects) where they stood when the module's first test began, so a
    test's inputs do not depend on which tests its xdist worker happened to run before."""
    mod = request.module
    if mod is None:
        yield
        return
    states = _RNG_STATES.get(mod.__name__)
    if states is None:
        states = _RNG_STATES[mod.__name__] = {}
        for name, obj in vars(mod).items():
            if isinstance(obj, np.random.RandomState):
                states[name] = obj.get_state()
            elif isinstance(obj, np.random.Generator):
                states[name] = obj.bit_generator.state
    for name, state in states.items():
        obj = getattr(mod, name)
        if isinstance(obj, np.random.RandomState):
            obj.set_state(state)
        else:
            obj.bit_generator.state = state
    yield


@pytest.fixture(autouse=True)
def _gpu_strategies_if_asked(request):
    """``WJAX_TEST_STRATEGIES=gpu``: every test runs under the GPU kernel strategies
    (``profiles.GPU_STRATEGIES``: tiled matmuls, workgroup sorts and FFTs, row-resident
    softmax, strided reductions, ...) on whatever adapter runs it -- a sweep on lavapipe for
    the kernel forms a real GPU takes, before device time is spent on them (tests that pin
    the CPU forms, or count a CPU form's kernels, set their own; a test of the adapter's own
    strategies is marked ``own_strategies`` and left alone).  Waits sleep at
    once, as on a CPU adapter (spinning would take the cores lavapipe runs on)."""
    if (os.environ.get("WJAX_TEST_STRATEGIES", "") != "gpu"
            or request.node.get_closest_marker("own_strategies")):
        yield
        return
    from wjax._src.backend import profiles, runtime
    with runtime.get().options(**dict(profiles.GPU_STRATEGIES, spin_wait_us=0)):
        yield


@pytest.fixture
def target_options():
    """``target_options(matmul="tiled", loop_work=64, ...)`` sets options of the device's
    ``Target`` (``wjax/_src/backend/target.py``) for the rest of the test: tests exercise every
    kernel form on any adapter.  Executables are cached per target, so none leaks across."""
    from wjax._src.backend import runtime
    with contextlib.ExitStack() as stack:
        yield lambda **options: stack.enter_context(runtime.get().options(**options))
