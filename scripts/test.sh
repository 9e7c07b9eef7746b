#!/usr/bin/env bash
# Runs the test suite (sets itself up first, with real JAX as the test oracle).
#   bash scripts/test.sh                   everything CI runs: ruff, the suite on the default
#                                          adapter, then the kernel-heavy tests through other drivers
#   bash scripts/test.sh [pytest args]     pytest on the default adapter with those arguments
#   bash scripts/test.sh --fuzz [MINUTES]  fresh random hypothesis examples, for MINUTES (30)
#   bash scripts/test.sh --slow            real arrays past the 128 MiB binding limit (minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
py=.venv/bin/python
if [ "${1:-}" = "--fuzz" ]; then
  shift
  exec bash scripts/fuzz.sh "$@"
fi
if [ "${1:-}" = "--slow" ]; then
  shift
  exec "$py" -m pytest tests -m slow -s "$@"
fi
if [ $# -gt 0 ]; then
  exec "$py" -m pytest tests -m "not slow" "$@"
fi

# Tests run on up to 4 workers (pytest-xdist; one per core): most of a test's time is
# single-threaded Python and LLVM/XLA compiles, so two workers on two cores nearly halve it.
workers="${WJAX_TEST_WORKERS:-$(n=$(nproc); echo $(( n < 4 ? n : 4 )))}"
echo "[test] lint: ruff check (configuration in pyproject.toml)"
.venv/bin/ruff check .
"$py" -m pytest -n "$workers" tests -m "not slow"

# The same WGSL through other compilers: a difference between drivers is a bug.
DRIVER_TESTS="tests/test_ops.py tests/test_numerics.py tests/test_random.py tests/test_loops.py
              tests/test_control.py tests/test_lax_extra.py tests/test_regressions.py
              tests/test_big_arrays.py tests/test_kernel_forms.py tests/test_autotune.py
              tests/test_row_resident.py tests/test_attention.py tests/test_conv_gemm.py
              tests/test_surface_scipy.py tests/test_autodiff.py"
if "$py" -m wjax --has opengl; then
  echo "[test] driver run: wgpu's GL backend (naga -> GLSL -> llvmpipe)"
  WJAX_BACKEND=gl "$py" -m pytest -n "$workers" $DRIVER_TESTS
else
  echo "[test] no GL adapter here: the GL driver run is not possible on this machine"
fi
# the kernels whose code a narrower vector width changes most (every elementwise and
# reduction form, row groups, attention); loops, control flow and the samplers run in the
# GL and strict-driver runs (CI's time: ~25 minutes on 2 cores)
VECTOR_TESTS="tests/test_ops.py tests/test_numerics.py tests/test_regressions.py
              tests/test_big_arrays.py tests/test_kernel_forms.py tests/test_row_resident.py
              tests/test_attention.py"
if "$py" -m wjax --has "vulkan llvmpipe"; then
  echo "[test] driver run: lavapipe with 128-bit vectors (LP_NATIVE_VECTOR_WIDTH=128)"
  WJAX_BACKEND=vulkan WJAX_ADAPTER=llvmpipe LP_NATIVE_VECTOR_WIDTH=128 "$py" -m pytest -n "$workers" $VECTOR_TESTS
  # what a real GPU's driver may do and lavapipe does not (wjax/_src/backend/strict_driver.py):
  # subnormals flushed as NVIDIA does, division and square roots at the WGSL spec's error
  # bound, products contracted into fused multiply-adds
  echo "[test] driver run: the loosest conformant driver, emulated on lavapipe (WJAX_STRICT_DRIVER=1)"
  WJAX_BACKEND=vulkan WJAX_ADAPTER=llvmpipe WJAX_STRICT_DRIVER=1 "$py" -m pytest -n "$workers" $DRIVER_TESTS
fi
