#!/usr/bin/env bash
# Runs the headline demo (sets itself up first; idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python demos/quickstart.py "$@"
