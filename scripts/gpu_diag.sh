#!/usr/bin/env bash
# A short diagnostic run on a lent GPU (see scripts/gpu_run.sh): the RNN scan and MLP step
# with and without the autotuner, each workload's kernels from wjax's profiler, the tuner's
# choices.
set -uo pipefail
out="${OUT:-gpu-out}"; mkdir -p "$out"
source .gpu-kit/setup.sh > "$out/card.txt" 2>&1 || { cat "$out/card.txt"; exit 1; }
export WJAX_BACKEND=vulkan PYTHONUNBUFFERED=1 WJAX_AUTOTUNE_CACHE="$out/autotune.json"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee -a "$out/card.txt"
for at in ${AT:-0 1}; do
  echo "## WJAX_AUTOTUNE=$at"
  WJAX_AUTOTUNE=$at timeout 60 python3 bench/bench_gpu.py --only ${ONLY:-rnn mlp call} \
    --profile "$out/profile$at.txt" 2>&1 | grep -v Warning
done
cat "$out/autotune.json"
