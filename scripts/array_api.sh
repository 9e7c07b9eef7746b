#!/usr/bin/env bash
# The array API standard's own test suite (data-apis/array-api-tests) as a measure: runs it
# against wjax.numpy and against real JAX's jax.numpy on the same settings and prints both
# pass counts.  Not part of CI: the first run needs the network (it clones the suite and the
# spec it pins, and installs its requirements into a venv of its own).  Safe to run again.
#
#   bash scripts/array_api.sh                  both modules, every test file
#   bash scripts/array_api.sh wjax [PYTEST...] one module ("wjax" or "jax"), extra pytest args
#                                              (e.g. array_api_tests/test_linalg.py -x)
#
# Settings (environment):
#   AAT_DIR      where the suite is cloned           (default: .array-api/suite)
#   AAT_VENV     its virtualenv                       (default: .array-api/venv)
#   AAT_SRC      the suite's git URL or a local clone (default: the data-apis GitHub repo)
#   AAT_SPEC_SRC the spec's git URL (its submodule)   (default: the data-apis GitHub repo)
#   AAT_REV      the suite's commit                   (default: the one the counts in README are for)
#   AAT_EXAMPLES hypothesis examples per test         (default: 20)
#   AAT_VERSION  ARRAY_API_TESTS_VERSION              (default: 2021.12, see below)
#   AAT_WORKERS  pytest-xdist workers                 (default: the cores, at most 4)
# Both runs use --derandomize (the same examples every run), --disable-deadline (a first
# call compiles a kernel, which is not what the suite measures), the same standard version
# and the same skips file, scripts/array_api_skips.txt (tests that hang or crash the
# interpreter on either module; empty today).  The version is pinned because each module
# otherwise picks its own (wjax declares 2023.12, JAX 2024.12).  The default is 2021.12, the
# version the README's counts are for (the last standard without complex dtypes; later
# versions collect complex tests too, which wjax's complex64 can now take).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
AAT_DIR="${AAT_DIR:-$ROOT/.array-api/suite}"
AAT_VENV="${AAT_VENV:-$ROOT/.array-api/venv}"
AAT_SRC="${AAT_SRC:-https://github.com/data-apis/array-api-tests}"
AAT_SPEC_SRC="${AAT_SPEC_SRC:-https://github.com/data-apis/array-api}"
AAT_REV="${AAT_REV:-55fcc60179efa2680ddd6cd926ddf17b83530e2b}"
AAT_EXAMPLES="${AAT_EXAMPLES:-20}"
AAT_VERSION="${AAT_VERSION:-2021.12}"
AAT_WORKERS="${AAT_WORKERS:-$(n=$(nproc 2>/dev/null || echo 2); echo $(( n < 4 ? n : 4 )))}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"

# --- the suite, at a pinned commit, with its spec submodule --------------------------------
if [ ! -d "$AAT_DIR/.git" ]; then
  mkdir -p "$(dirname "$AAT_DIR")"
  git clone -q "$AAT_SRC" "$AAT_DIR"
fi
if [ "$(git -C "$AAT_DIR" rev-parse HEAD)" != "$AAT_REV" ]; then
  git -C "$AAT_DIR" fetch -q origin || true
  git -C "$AAT_DIR" checkout -q "$AAT_REV"
fi
if [ ! -e "$AAT_DIR/array-api/src" ]; then
  git -C "$AAT_DIR" submodule init -q
  git -C "$AAT_DIR" config "submodule.array_api_tests/array-api.url" "$AAT_SPEC_SRC"
  git -C "$AAT_DIR" -c protocol.file.allow=always submodule update -q
fi

# --- its own virtualenv: wjax (editable), the suite's requirements, real JAX on the CPU -----
py="$AAT_VENV/bin/python"
if [ ! -x "$py" ] || ! "$py" -c "import wjax, jax, pytest, hypothesis, ndindex, xdist" 2>/dev/null; then
  python3 -m venv "$AAT_VENV"
  "$py" -m pip install -q --upgrade pip
  "$py" -m pip install -q -e "$ROOT" pytest pytest-json-report pytest-xdist "hypothesis>=6.151.0" \
    "ndindex>=1.8" numpy wgpu "jax[cpu]==0.10.2"
fi

run_one() {   # module name ("wjax" or "jax"), extra pytest args
  local name="$1"; shift
  local out="$AAT_DIR/../$name-$AAT_VERSION"
  local args=("$@")
  [ ${#args[@]} -gt 0 ] || args=(array_api_tests/)
  (cd "$AAT_DIR" && ARRAY_API_TESTS_MODULE="$name.numpy" ARRAY_API_TESTS_VERSION="$AAT_VERSION" \
    "$py" -m pytest -n "$AAT_WORKERS" -p no:cacheprovider -q -rN --tb=line --max-examples="$AAT_EXAMPLES" \
      --derandomize --disable-deadline --skips-file "$ROOT/scripts/array_api_skips.txt" \
      --junitxml="$out.xml" "${args[@]}" > "$out.log" 2>&1) || true
  "$py" - "$name" "$out" <<'PY'
import sys, xml.etree.ElementTree as ET
name, out = sys.argv[1], sys.argv[2]
try:
    root = ET.parse(out + ".xml").getroot()
except (OSError, ET.ParseError):
    print(f"[array-api] {name}.numpy: no result (collection failed?), see {out}.log")
    raise SystemExit
suite = root if root.tag == "testsuite" else root.find("testsuite")
n = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
passed = n["tests"] - n["failures"] - n["errors"] - n["skipped"]
print(f"[array-api] {name}.numpy: {passed} passed, {n['failures'] + n['errors']} failed, "
      f"{n['skipped']} skipped   (per test: {out}.xml)")
PY
}

if [ $# -gt 0 ]; then
  which="$1"; shift
  run_one "$which" "$@"
else
  run_one jax
  run_one wjax
fi
