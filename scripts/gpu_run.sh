#!/usr/bin/env bash
# One run on a lent NVIDIA machine (the `device` tool; ../shared/gpu-kit/README.md): the card,
# bench/bench_gpu.py on wjax (Vulkan) and on real JAX (CUDA) on the same card, the matmul tile
# variants, then the kernel-heavy tests on the card.  Everything goes to $OUT (or ./gpu-out),
# in at most 8 files (what the device tool brings back).
#   once, here:  cp -r ../shared/gpu-kit .gpu-kit && echo /.gpu-kit/ >> .git/info/exclude
#   there:       bash scripts/gpu_run.sh [seconds for the tests]
set -uo pipefail
out="${OUT:-gpu-out}"
mkdir -p "$out"
test_budget="${1:-150}"
source .gpu-kit/setup.sh > "$out/card.txt" 2>&1 || { cat "$out/card.txt"; exit 1; }
export WJAX_BACKEND=vulkan PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())" 2>&1 | tail -1
  python3 -m wjax 2>&1 | head -6
} | tee -a "$out/card.txt"
echo "## wjax"
python3 bench/bench_gpu.py --json "$out/wjax.json" 2>&1 | grep -v Warning | tee "$out/bench_wjax.txt"
echo "## JAX"
JAX_PLATFORMS=cuda python3 bench/bench_gpu.py --module jax --json "$out/xla.json" 2>&1 \
  | grep -v Warning | tee "$out/bench_xla.txt"
for t in 128x128x32 128x128x8 128x64x16 64x64x16; do
  echo "## wjax, matmul tile $t" | tee -a "$out/bench_tiles.txt"
  WJAX_MATMUL_TILE=$t python3 bench/bench_gpu.py --only matmul mlp 2>&1 | grep -v Warning \
    | tee -a "$out/bench_tiles.txt"
done
python3 bench/bench_gpu.py --compare "$out/wjax.json" "$out/xla.json" | tee "$out/table.txt"
echo "## tests (${test_budget} s)"
JAX_PLATFORMS=cpu timeout "$test_budget" python3 -m pytest -n 14 -q -p no:cacheprovider \
  -m "not slow" tests/test_ops.py tests/test_numerics.py tests/test_conv_gemm.py \
  tests/test_kernel_forms.py tests/test_linalg_sizes.py tests/test_nn.py tests/test_complex.py \
  tests/test_fft.py tests/test_reduce_window.py tests/test_bfloat16.py tests/test_control.py \
  tests/test_matmul_tiled.py tests/test_sort_radix.py tests/test_loops.py tests/test_lax_extra.py \
  --maxfail=60 -rf --tb=short > "$out/tests.txt" 2>&1
grep -E "^FAILED|passed|failed" "$out/tests.txt" | tail -40
cat "$out/table.txt"
