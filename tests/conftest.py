"""Shared test setup.

Real JAX (installed in the system python) is a test oracle only: tests import it
inside the individual test with ``pytest.importorskip("jax")``.  It must run on
the CPU and with x64 off, as wjax does.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

from hypothesis import HealthCheck, settings  # noqa: E402

# GPU work makes single examples slower than hypothesis expects; bound counts instead.
# In CI (CI=true) the examples are derandomized so a run is reproducible; locally they vary
# from run to run, to keep finding new cases.
settings.register_profile(
    "wjax", deadline=None, derandomize=bool(os.environ.get("CI")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("wjax")
