#!/usr/bin/env bash
# Idempotent set-up for wjax: a virtual environment in .venv with wjax installed
# (editable; with the test extra when called as `setup.sh test`), and a WebGPU
# adapter.  Where no Vulkan/Metal/D3D12 adapter is found and we run as root on
# Debian/Ubuntu, installs Mesa's software Vulkan driver (lavapipe).
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
spec="."
[ -n "$extra" ] && spec=".[$extra]"
want="$(cat pyproject.toml | sha1sum | cut -c1-16)"
stamp=".venv/.installed-${extra:-base}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "[setup] installing wjax${extra:+[$extra]} into .venv ..."
  .venv/bin/python -m pip install -q --disable-pip-version-check -e "$spec"
  echo "$want" > "$stamp"
fi
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
if ! .venv/bin/python -m wjax --check >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] no Vulkan/Metal/D3D12 adapter: installing mesa-vulkan-drivers (lavapipe) ..."
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-vulkan-drivers >/dev/null
  else
    echo "[setup] No Vulkan, Metal or D3D12 adapter was found." >&2
    echo "[setup] Install a GPU driver with Vulkan support, or Mesa's CPU driver:" >&2
    echo "[setup]   Debian/Ubuntu: sudo apt-get install mesa-vulkan-drivers" >&2
    echo "[setup]   Fedora: sudo dnf install mesa-vulkan-drivers" >&2
  fi
  .venv/bin/python -m wjax --check
fi
