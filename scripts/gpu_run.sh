#!/usr/bin/env bash
# One run on a lent NVIDIA machine (the `device` tool; ../shared/gpu-kit/README.md).  Output goes
# to $OUT (or ./gpu-out), in at most 8 files (what the device tool brings back).
#   once, here:  cp -r ../shared/gpu-kit .gpu-kit && echo /.gpu-kit/ >> .git/info/exclude
#   there:       bash scripts/gpu_run.sh probe   # cooperative matrices, the card's test failures
#                                                # with full logs, profiles of the slow workloads
#                TESTS=240 bash scripts/gpu_run.sh bench   # bench_gpu.py on wjax (Vulkan) and
#                    # on real JAX (CUDA) on the same card, profiles, the whole suite on the card
#                    # (TESTS: its seconds at most), TILES="128x64x16 ...": matmul tile variants,
#                    # CHECKS="none" (none by default; "all none" for both): the rows again under
#                    # other shader checks (kernel_lab.py times each kernel under both)
# The 2026-11-28 run took 560 s with TESTS=150 (wjax's rows 155 s, JAX's 92, the profiles
# and the lab 160, CHECKS=none 60) and its tests were cut at 76%: leave the device tool's
# timeout room, or lower TESTS.
set -uo pipefail
mode="${1:-bench}"
out="${OUT:-gpu-out}"
mkdir -p "$out"
source .gpu-kit/setup.sh > "$out/card.txt" 2>&1 || { cat "$out/card.txt"; exit 1; }
export WJAX_BACKEND=vulkan PYTHONUNBUFFERED=1
stamp() { echo "[$(date +%T) $SECONDS s] $*"; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tail -1
  python3 -m wjax 2>&1 | head -8     # adapters, the chosen one, its profile and strategies
} | tee -a "$out/card.txt"

if [ "$mode" = probe ]; then
  stamp "cooperative matrices" | tee -a "$out/card.txt"
  timeout 90 python3 bench/probe_coop.py 2>&1 | tee -a "$out/card.txt"
  stamp "tests" | tee -a "$out/card.txt"
  # the files that failed on the H100 first, then the kernel-form files; full tracebacks
  JAX_PLATFORMS=cpu timeout 90 python3 -m pytest -n 14 -q -p no:cacheprovider -m "not slow" \
    tests/test_numerics.py tests/test_complex.py tests/test_fft.py tests/test_bfloat16.py \
    tests/test_nn.py tests/test_random.py tests/test_scipy.py tests/test_scipy_linalg.py \
    -rf --tb=short > "$out/tests1.txt" 2>&1
  JAX_PLATFORMS=cpu timeout 60 python3 -m pytest -n 14 -q -p no:cacheprovider -m "not slow" \
    tests/test_matmul_tiled.py tests/test_conv_gemm.py tests/test_sort_radix.py tests/test_attention.py \
    tests/test_loops.py tests/test_loop_rows.py tests/test_lax_extra.py \
    tests/test_kernel_forms.py tests/test_ops.py \
    -rf --tb=short > "$out/tests2.txt" 2>&1
  grep -hE "^FAILED|passed|failed" "$out"/tests1.txt "$out"/tests2.txt | tail -60
  stamp "profiles" | tee -a "$out/card.txt"
  timeout 70 python3 bench/bench_gpu.py --only softmax mlp rnn attention cumsum sort call \
    --profile "$out/profile.txt" 2>&1 | grep -v Warning | tee "$out/bench_wjax.txt"
  timeout 90 python3 bench/kernel_lab.py 2>&1 | grep -v Warning >> "$out/profile.txt"
  stamp "done" | tee -a "$out/card.txt"
  exit 0
fi

# bench: at most 8 files -- card.txt, bench_wjax.txt (and the tile variants), bench_xla.txt,
# wjax.json, xla.json, autotune.json (the tuner's choices), profile.txt, tests.txt
export WJAX_AUTOTUNE_CACHE="$out/autotune.json"
stamp "wjax" | tee -a "$out/card.txt"
python3 bench/bench_gpu.py --json "$out/wjax.json" 2>&1 | grep -v Warning | tee "$out/bench_wjax.txt"
# a lost device voids every row after it (2026-11-28: the waits returned early, the queue grew)
grep -qi "device is lost\|device was lost" "$out/bench_wjax.txt" && echo "!! the device was lost" \
  | tee -a "$out/card.txt"
if [ -z "${SKIP_XLA:-}" ]; then
  stamp "JAX" | tee -a "$out/card.txt"
  JAX_PLATFORMS=cuda python3 bench/bench_gpu.py --module jax --json "$out/xla.json" 2>&1 \
    | grep -v Warning | tee "$out/bench_xla.txt"
  python3 bench/bench_gpu.py --compare "$out/wjax.json" "$out/xla.json"
fi
stamp "profiles" | tee -a "$out/card.txt"
# the profiler's kernels, and each call split into record / submit / wait (--phases: the wall
# time beyond the GPU's, e.g. the column normalisation's 1.7 ms wall against 0.5 ms of kernels)
timeout 120 python3 bench/bench_gpu.py --only ${PROFILE:-elementwise colnorm softmax cumsum sort mlp rnn conv attention call} \
  --profile "$out/profile.txt" --phases 2>&1 | grep -v Warning >> "$out/profile.txt"
# each memory-bound kernel again with one driver-proof helper at a time swapped for the
# builtin it stands in for (division, exp, max, compensated sums, opaque values): what each
# costs on the card (the softmax kernel took 322 us where its bytes need ~90)
timeout 90 python3 bench/kernel_lab.py 2>&1 | grep -v Warning >> "$out/profile.txt"
# the run-time checks naga compiles into kernels (Target.shader_checks; the profiles take
# "bounds": no loop counters): wgpu's default "all", and "none", beside the run above
for m in ${CHECKS:-}; do
  echo "## wjax, WJAX_SHADER_CHECKS=$m" | tee -a "$out/bench_wjax.txt"
  WJAX_SHADER_CHECKS=$m timeout 120 python3 bench/bench_gpu.py \
    --only elementwise softmax matmul mlp rnn attention 2>&1 | grep -v Warning \
    | tee -a "$out/bench_wjax.txt"
done
for t in ${TILES:-}; do
  echo "## wjax, matmul tile $t" | tee -a "$out/bench_wjax.txt"
  WJAX_MATMUL_TILE=$t python3 bench/bench_gpu.py --only matmul mlp 2>&1 | grep -v Warning \
    | tee -a "$out/bench_wjax.txt"
done
if [ -n "${TESTS:-}" ]; then
  # the whole suite on the card for at most TESTS seconds, one line a test (-vv against the -q of pyproject: what a run
  # cut off by the timeout reached is still in the file), the failures' tracebacks short
  # (SIGINT at the limit: pytest still prints the tracebacks of what failed so far)
  stamp "tests" | tee -a "$out/card.txt"
  # the kernel-heavy files first (those that failed on the H100, then the kernel forms'),
  # half the time, then the rest: a run cut short has covered them
  first="test_numerics test_complex test_fft test_bfloat16 test_nn test_random test_scipy
    test_scipy_linalg test_matmul_tiled test_conv_gemm test_attention test_deferred_softmax
    test_loops test_loop_rows test_kernel_forms test_ops test_row_resident test_runtime"
  half=$(( TESTS / 2 ))
  for part in first rest; do
    if [ $part = first ]; then limit=$half; args=$(for f in $first; do echo "tests/$f.py"; done)
    else limit=$(( TESTS - half )); args="tests $(for f in $first; do echo "--ignore=tests/$f.py"; done)"
    fi
    JAX_PLATFORMS=cpu timeout -s INT -k 30 "$limit" python3 -m pytest -n 14 -p no:cacheprovider \
      -m "not slow" $args -vv --tb=short -W ignore 2>&1 \
      | grep -v -e PytestBenchmarkWarning -e "warner(" >> "$out/tests.txt"
  done
  grep -cE " PASSED" "$out/tests.txt" | sed 's/^/passed: /'
  grep -E " FAILED|^FAILED| ERROR|[0-9]+ (passed|failed)" "$out/tests.txt" | sort -u | tail -60
fi
stamp "done" | tee -a "$out/card.txt"
