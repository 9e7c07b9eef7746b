#!/usr/bin/env bash
# Idempotent set-up for wjax: a virtual environment in .venv with wjax installed
# (editable; with the test extra when called as `setup.sh test`), and a WebGPU
# adapter.  Where no Vulkan/Metal/D3D12 adapter is found and we run as root on
# Debian/Ubuntu, installs Mesa's software Vulkan driver (lavapipe).  With the test extra it
# also installs Chromium there when none is found (tests/test_web.py runs exported programs in
# headless Chromium's WebGPU; without a Chromium those tests are skipped).
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
if [ "$extra" = "test" ] && ! command -v chromium >/dev/null 2>&1 \
    && ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[setup] installing chromium (headless WebGPU for tests/test_web.py) ..."
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
      || echo "[setup] could not install chromium: tests/test_web.py will be skipped" >&2
  else
    echo "[setup] no chromium found: tests/test_web.py will be skipped (install chromium," >&2
    echo "[setup] or point WJAX_CHROMIUM at a Chrome/Chromium binary)" >&2
  fi
fi
