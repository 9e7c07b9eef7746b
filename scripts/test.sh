#!/usr/bin/env bash
# Runs the test suite (sets itself up first, with real JAX as the test oracle).
#   bash scripts/test.sh [pytest args]     the deterministic suite (CI runs exactly this)
#   bash scripts/test.sh --fuzz [MINUTES]  fresh random hypothesis examples, for MINUTES (30)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
if [ "${1:-}" = "--fuzz" ]; then
  shift
  exec bash scripts/fuzz.sh "$@"
fi
exec .venv/bin/python -m pytest tests "$@"
