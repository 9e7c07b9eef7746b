"""A wheel of wjax holds the package and nothing beside it, and runs from where it is installed.

The WGSL templates are package data (``wjax/_src/backend/shaders``, read with importlib.resources):
a wheel that put a top-level ``shaders/`` folder into site-packages, or a loader that found the
templates through the checkout's layout, would fail here.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("wheel")
    # from a copy of the sources alone: a checkout's build/ or egg-info (from an editable
    # install) must not decide what the wheel holds
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "wjax", src / "wjax",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    # no network, no build isolation: setuptools of the test environment builds it
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                        "-q", "-w", str(out), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("wjax-*.whl")
    return whl


def test_wheel_holds_only_the_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"wjax"}, sorted(tops)
    shaders = sorted(n for n in names if n.endswith(".wgsl"))
    want = sorted(f"wjax/_src/backend/shaders/{p.name}"
                  for p in (ROOT / "wjax" / "_src" / "backend" / "shaders").glob("*.wgsl"))
    assert want and shaders == want
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)


def test_installed_wheel_runs_from_another_directory(wheel, tmp_path):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                        str(site), str(wheel)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == \
        ["wjax"]
    # a matmul renders a template from shaders/; the run must not see the checkout
    code = (
        "import numpy as np, wjax, wjax.numpy as jnp\n"
        "assert wjax.__file__.startswith(%r), wjax.__file__\n"
        "from wjax._src.backend import wgsl\n"
        "assert 'fn main' in wgsl.load_shader('matmul_tiled.wgsl')\n"
        "a = np.arange(12, dtype=np.float32).reshape(3, 4)\n"
        "print(float(abs(np.asarray(jnp.dot(a, a.T)) - a @ a.T).max()))\n" % str(site))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    env["PYTHONNOUSERSITE"] = "1"
    r = subprocess.run([sys.executable, "-I", "-c", code.replace("import numpy", "import sys; "
                        f"sys.path.insert(0, {str(site)!r}); import numpy")],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert float(r.stdout.strip().splitlines()[-1]) == 0.0
