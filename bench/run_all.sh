#!/usr/bin/env bash
# The main benchmarks in one run on one adapter, one after the other (so the ratios of a row
# come from the same minutes of the same machine), into bench/results/all-*.txt:
#   reductions vs hand WGSL, call overhead and eager mode, matmul/conv (autotuned),
#   the MLP step, loops (fori/while/scan RNN and its grad), the persistent cache, selu.
#   bash bench/run_all.sh            (after `bash scripts/test.sh` set up .venv)
set -uo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
py=.venv/bin/python
mkdir -p bench/results
out="bench/results/all-$(date -u +%Y%m%d-%H%M).txt"
{
  echo "# wjax benchmarks (bench/run_all.sh), $(date -u), $(uname -m), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$py" -m wjax 2>/dev/null | head -5
  for b in bench_reduce bench_overhead bench_matmul bench_mlp bench_control bench_cache bench_jit; do
    echo; echo "## bench/$b.py"
    "$py" "bench/$b.py" 2>&1 | grep -v "^WARNING\|UserWarning\|warnings.warn"
  done
} | tee "$out"
echo "[bench] written to $out"
