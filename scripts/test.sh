#!/usr/bin/env bash
# Runs the test suite (sets itself up first, with real JAX as the test oracle).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
exec .venv/bin/python -m pytest tests "$@"
