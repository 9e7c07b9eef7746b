#!/usr/bin/env bash
# Random exploration: runs every hypothesis test (`-m hypothesis`) with fresh random examples
# (profile `fuzz` in tests/conftest.py: WJAX_FUZZ_SCALE x the CI example counts) round after
# round until MINUTES (default 30) have passed.  A failing example is saved in
# .hypothesis/fuzz and replayed first by the next round; the run stops at the first failure.
# Call it through `bash scripts/test.sh --fuzz [MINUTES] [pytest args]` (which sets up .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-30}"
shift || true
export WJAX_HYPOTHESIS=fuzz
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
end=$(( $(date +%s) + minutes * 60 ))
round=0
while [ "$(date +%s)" -lt "$end" ]; do
  round=$((round + 1))
  echo "[fuzz] round $round ($(( (end - $(date +%s)) / 60 )) min left)"
  .venv/bin/python -m pytest tests -m hypothesis -x -q -p no:cacheprovider "$@"
done
echo "[fuzz] $round rounds in $minutes min: no failure"
