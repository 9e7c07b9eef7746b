"""The browser side of ``jax.export``: web bundles (``Exported.to_web``, ``python -m wjax
export-web``) run by ``wjax-web.js`` in headless Chromium (WebGPU on SwiftShader) give what the
same programs give in Python (``Exported.call``) and in real JAX.

The programs are tests/test_export.py's.  One Chromium serves the whole module
(tests/browser.py): each test writes a bundle and a small JS module under the served directory;
the harness page runs the module and posts its result back.  Where no Chromium (or no WebGPU in
it) is found the browser tests are skipped, saying why; ``scripts/setup.sh test`` installs it."""
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import wjax
from wjax import __main__ as wmain
from wjax import export as wexport
from wjax._src.export import web as wweb

import browser
from checks import load_script
from test_export import PROGRAMS, _train_step

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _narrow(jax):
    jnp = jax.numpy

    def f(x, y, b, k):    # outputs of every 32-bit-stored dtype; bool and int8 inputs
        return {"same": x, "again": x, "lit": 3.0, "gt": x > 0.5, "i8": (y * 3).astype(jnp.int8),
                "u8": (y * 7).astype(jnp.uint8), "i16": (y * -1000).astype(jnp.int16),
                "bf": x.astype(jnp.bfloat16) * 3, "u32": y.astype(jnp.uint32) * 2,
                "sel": jnp.where(b, k * 2, k), "any": b.any()}
    return f, (np.array([0.25, 0.75], np.float32), np.array([1, 50], np.int32),
               np.array([True, False, True]), np.array([-3, 100, 7], np.int8))


def _complex(jax):
    jnp = jax.numpy

    def f(z, x):          # complex64 in and out: interleaved (re, im) float32 pairs in JS
        return z * jnp.conj(z)[::-1] + x, jnp.abs(z), (z * 1j).real
    return f, (np.array([1 + 2j, -0.5 + 0.25j, 3j], np.complex64),
               np.array([0.5, 1.0, -2.0], np.float32))


ALL = dict(PROGRAMS, narrow=_narrow, complex=_complex)


@pytest.fixture(scope="module")
def chrome(tmp_path_factory):
    binary = browser.find_chromium()
    if binary is None:
        pytest.skip("no chromium/chrome found (scripts/setup.sh test installs it on "
                    "Debian/Ubuntu; or set WJAX_CHROMIUM)")
    root = tmp_path_factory.mktemp("web")
    try:
        b = browser.Browser(root, binary)
    except (OSError, TimeoutError, RuntimeError) as e:
        pytest.skip(f"{binary} did not start headless ({e})")
    try:
        (root / "probe.js").write_text(
            "export default async () => !!(navigator.gpu && await navigator.gpu.requestAdapter())")
        if not b.run_module("probe.js"):
            pytest.skip(f"{binary} has no WebGPU adapter (flags: {' '.join(browser.FLAGS)})")
        b.root_path = root
        (root / "f16.js").write_text(
            "export default async () => "
            "(await navigator.gpu.requestAdapter()).features.has('shader-f16')")
        b.f16 = b.run_module("f16.js")
        yield b
    finally:
        b.close()


def _js_value(x) -> str:
    """A NumPy value as JS source: a typed array of its exact values."""
    x = np.asarray(x)
    if x.dtype == np.complex64:
        x = x.view(np.float32)
    kind = {"float32": "Float32Array", "int32": "Int32Array", "uint32": "Uint32Array",
            "bool": "Uint8Array", "int8": "Int8Array"}[x.dtype.name]
    return f"new {kind}({json.dumps(x.ravel().tolist())})"


def _bundle(chrome, name, f, args):
    exp = wexport.export(wjax.jit(f))(*args)
    exp.to_web(chrome.root_path / name)
    return exp


def _run_js(chrome, name, body, timeout=60):
    """Runs ``body`` (the inside of an async function, with ``loadProgram`` and ``prog`` --
    the bundle's program -- in scope) in the browser; returns what it returns."""
    (chrome.root_path / name / "test.js").write_text(
        'import * as W from "./wjax-web.js";\nconst {loadProgram} = W;\n'
        'export default async () => {\nconst here = u => new URL(u, import.meta.url);\n'
        'const prog = await loadProgram(here("./program.wjax"));\n'
        + body + "\n};\n")
    return chrome.run_module(f"{name}/test.js", timeout=timeout)


def _host(x):
    """What wjax-web.js returns for an output: its array as the JS typed array holds it."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(np.uint8).ravel()
    if x.dtype == np.complex64:
        return x.ravel().view(np.float32)
    if x.dtype.name in ("float16", "bfloat16"):
        return x.astype(np.float32).ravel()
    return x.ravel()


def _close(got, want, exact):
    got, want = np.asarray(got), _host(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape,
                                                                 want.dtype, want.shape)
    if exact or got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- programs


@pytest.mark.parametrize("name", sorted(ALL))
def test_program_in_the_browser_gives_python_and_jax_results(chrome, name):
    jax = pytest.importorskip("jax")
    f, args = ALL[name](wjax)
    exp = _bundle(chrome, name, f, args)
    leaves = wjax.tree_util.tree_leaves(args)
    # half the programs take their inputs by name, half in flat order
    if len(name) % 2:
        ins = "{" + ", ".join(f"{json.dumps(n)}: {_js_value(x)}"
                              for n, x in zip(exp.in_names, leaves)) + "}"
    else:
        ins = "[" + ", ".join(_js_value(x) for x in leaves) + "]"
    if "shader-f16" in exp.requirements["features"] and not chrome.f16:
        # SwiftShader has no shader-f16: the program is refused, saying so
        with pytest.raises(browser.PageError, match="needs the feature 'shader-f16'"):
            _run_js(chrome, name, f"return await prog.run({ins});")
        return
    got = _run_js(chrome, name, f"return await prog.run({ins});")
    assert sorted(got) == sorted(exp.out_names)
    ours = wjax.tree_util.tree_leaves(exp.call(*args))
    jf, _ = ALL[name](jax)
    theirs = jax.tree_util.tree_leaves(jax.jit(jf)(*args))
    for out, o, t in zip(exp.out_names, ours, theirs):
        # threefry: bits, uniforms and normals bit-identical to Python and to JAX
        exact = name == "prng"
        _close(got[out], o, exact)
        _close(got[out], t, exact)


def test_training_loop_with_device_resident_state(chrome):
    """Ten steps run from JS, the parameters staying on the GPU between steps, give the
    parameters and losses of the same ten steps in Python and in real JAX."""
    jax = pytest.importorskip("jax")
    f, (params, x, y) = _train_step(wjax)
    exp = _bundle(chrome, "train", f, (params, x, y))
    assert exp.in_names == ["params['b']", "params['w']", "x", "y"]
    got = _run_js(chrome, "train", f"""
        const x = {_js_value(x)}, y = {_js_value(y)};
        let b = {_js_value(params['b'])}, w = {_js_value(params['w'])};
        const losses = [];
        for (let i = 0; i < 10; i++) {{
          const ins = {{"params['b']": b, "params['w']": w, x, y}};
          const out = await prog.run(ins, {{device: true}});
          for (const old of [b, w]) if (old instanceof W.DeviceArray) old.destroy();
          b = out["result[0]['b']"]; w = out["result[0]['w']"];
          if (!(b instanceof W.DeviceArray) || b.shape.join() !== "2") throw new Error("handle?");
          losses.push((await out["result[1]"].read())[0]);
          out["result[1]"].destroy();
        }}
        return {{b: await b.read(), w: await w.read(), losses: new Float32Array(losses)}};
    """)
    jf, _ = _train_step(jax)
    for impl, step in (("wjax", exp.call), ("jax", jax.jit(jf))):
        p, losses = params, []
        for _ in range(10):
            p, loss = step(p, x, y)
            losses.append(float(loss))
        np.testing.assert_allclose(got["losses"], losses, rtol=1e-4, err_msg=impl)
        np.testing.assert_allclose(got["w"], np.ravel(p["w"]), rtol=1e-4, atol=1e-6,
                                   err_msg=impl)
        np.testing.assert_allclose(got["b"], np.ravel(p["b"]), rtol=1e-4, atol=1e-6,
                                   err_msg=impl)
    assert got["losses"][-1] < got["losses"][0]


def _js_number(x) -> str:
    """``Number(s)`` of this string is the float ``x`` (infinities and NaN included)."""
    return {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}.get(repr(float(x)),
                                                                     repr(float(x)))


def test_float16_conversions_match_numpy(chrome):
    """float16 inputs and outputs cross as numbers: wjax-web.js's conversions are NumPy's
    (round to nearest even, subnormals, overflow, NaN), checked here even where the adapter
    has no shader-f16 to run a float16 program."""
    (chrome.root_path / "wjax-web.js").write_text(wweb.runtime_source())
    rng = np.random.default_rng(3)
    xs = np.concatenate([rng.normal(0, 1, 300), rng.normal(0, 1e-5, 300),
                         rng.normal(0, 3e4, 300), [0.0, -0.0, 65504, 65520, 65519.99, 1e9, -1e9,
                                                   2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
                                                   np.inf, -np.inf, np.nan]]).astype(np.float32)
    (chrome.root_path / "half.js").write_text(
        'import {halfBits, halfToFloat} from "./wjax-web.js";\n'
        f"const xs = new Float32Array({json.dumps([_js_number(x) for x in xs])}.map(Number));\n"
        "export default async () => ({bits: Uint16Array.from(xs, halfBits),\n"
        "  back: Float32Array.from({length: 65536}, (_, h) => halfToFloat(h))});\n")
    got = chrome.run_module("half.js")
    with np.errstate(over="ignore"):        # 1e9 -> inf is what is checked
        want_bits = xs.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(got["bits"], want_bits)
    want = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got["back"], want)


# --------------------------------------------------------------------------- errors


def test_errors_are_clear(chrome):
    f, args = PROGRAMS["mlp"](wjax)
    _bundle(chrome, "errors", f, args)
    got = _run_js(chrome, "errors", """
        const bytes = new Uint8Array(await (await fetch(here("./program.wjax"))).arrayBuffer());
        const errs = {};
        const attempt = async (key, fn) => {
          try { await fn(); errs[key] = "no error"; } catch (e) { errs[key] = e.message; } };
        const damaged = bytes.slice(); damaged[damaged.length - 3] ^= 1;
        await attempt("damaged", () => loadProgram(damaged));
        const newer = bytes.slice(); newer[8] = 7;
        await attempt("newer", () => loadProgram(newer));
        await attempt("truncated", () => loadProgram(bytes.slice(0, bytes.length - 16)));
        await attempt("not", () => loadProgram(new TextEncoder().encode("<html>404</html>")));
        await attempt("fetch", () => loadProgram(here("./missing.wjax")));
        await attempt("size", () => prog.run([new Float32Array(3)]));
        await attempt("missing", () => prog.run({}));
        await attempt("unknown", () => prog.run({x: prog.ones("x"), y: 1}));
        await attempt("limits", () => W.checkRequirements(prog.requirements, {
          features: new Set(), limits: {maxStorageBufferBindingSize: 16, maxBufferSize: 1 << 30}}));
        await attempt("f16", () => W.checkRequirements({features: ["shader-f16"], limits: {}},
                                                       {features: new Set(), limits: {}}));
        Object.defineProperty(navigator, "gpu", {value: undefined, configurable: true});
        await attempt("nogpu", () => loadProgram(bytes));
        errs.ok = Array.from((await prog.run({x: prog.ones("x")}))["result"]).length;
        return errs;
    """)
    assert "damaged (its SHA-256 checksum does not match)" in got["damaged"]
    assert "format version 7" in got["newer"] and "reads version 1" in got["newer"]
    assert "truncated or damaged" in got["truncated"]
    assert "not a wjax exported program" in got["not"]
    assert "HTTP 404" in got["fetch"]
    assert "expects float32[5,12] (60 numbers) and got 3" in got["size"]
    assert "missing input 'x'" in got["missing"]
    assert "unknown input 'y'" in got["unknown"]
    assert "maxStorageBufferBindingSize >= " in got["limits"] and "has 16)" in got["limits"]
    assert "the feature 'shader-f16'" in got["f16"]
    assert got["nogpu"].startswith("WebGPU is not available in this browser")
    assert got["ok"] == 15


def test_generated_page_runs(chrome):
    f, args = PROGRAMS["conv"](wjax)
    _bundle(chrome, "page", f, args)
    chrome.navigate("page/index.html")
    text = chrome.wait_for("(e => e && e.textContent !== 'loading...' && e.textContent)"
                           "(document.getElementById('out'))")
    assert text.startswith("result = ["), text
    assert "float32[2,1,8,8]" in chrome.evaluate("document.getElementById('inputs').textContent")


# --------------------------------------------------------------------------- the demo


def _load_demo():
    return load_script("demos/web/decision_boundary.py", "decision_boundary")


def test_demo_page_classifies_a_click(chrome):
    """demos/web: the trained classifier's page, clicked at (0.5, 0.5), shows what Python
    computes there, and draws the decision boundary of the reference screenshot."""
    demo = _load_demo()
    classify, acc = demo.build(chrome.root_path / "demo", verbose=False)
    assert acc > 0.95
    chrome.navigate("demo/index.html")
    chrome.wait_for("document.body?.dataset.state === 'ready'")
    left, top = chrome.evaluate("(c => { const r = c.getBoundingClientRect(); "
                                "return [r.left + c.clientLeft, r.top + c.clientTop]; })"
                                "(document.getElementById('plot'))")
    for kind in ("mousePressed", "mouseReleased"):     # canvas pixel (192, 64): (0.5, 0.5)
        chrome.call("Input.dispatchMouseEvent", session=True, type=kind, x=left + 192,
                    y=top + 64, button="left", clickCount=1)
    chrome.wait_for("document.getElementById('point').textContent === '(0.500, 0.500)' && "
                    "document.body?.dataset.state === 'ready'")
    shown = chrome.evaluate("['prob', 'cls'].map(id => document.getElementById(id).textContent)")
    grid = chrome.evaluate("Array.from(window.lastOutput[\"result['grid']\"])")
    want = classify(demo.grid_points(), np.array([0.5, 0.5], np.float32))
    assert abs(float(shown[0]) - float(want["point"])) < 2e-4, (shown, want["point"])
    assert shown[1] == ("1" if want["point"] > 0.5 else "0")
    np.testing.assert_allclose(grid, np.asarray(want["grid"]), rtol=1e-4, atol=1e-5)
    png = chrome.screenshot(clip={"x": left, "y": top, "width": 256, "height": 256, "scale": 1})
    got = browser.png_pixels(png)[..., :3].astype(int)
    ref_path = ROOT / "demos" / "web" / "screenshot.png"
    if os.environ.get("WJAX_UPDATE_SCREENSHOT"):
        ref_path.write_bytes(png)
    ref = browser.png_pixels(ref_path.read_bytes())[..., :3].astype(int)
    assert got.shape == ref.shape
    off = (np.abs(got - ref).max(-1) > 48).mean()
    assert off < 0.03, f"{off:.1%} of the pixels differ from {ref_path}"


# --------------------------------------------------------------------------- CLI


def test_cli_export_web(tmp_path, monkeypatch, capsys):
    (tmp_path / "mymodel.py").write_text(
        "import wjax.numpy as jnp\n"
        "def predict(x, n):\n    return jnp.tanh(x).sum(axis=1) * n\n"
        "def flags(b, k):\n    return b & (k > 3)\n")
    # the real entry point, in a process of its own
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    r = subprocess.run([sys.executable, "-m", "wjax", "export-web", "mymodel:predict", "--arg",
                        "f32[2,3]", "--arg", "i32[]", "-o", "out"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "predict(x: f32[2,3], n: i32[])" in r.stdout
    for f in ("program.wjax", "wjax-web.js", "index.html"):
        assert (tmp_path / "out" / f).exists()
    exp = wexport.deserialize((tmp_path / "out" / "program.wjax").read_bytes())
    assert [str(a) for a in exp.in_avals] == ["float32[2,3]", "int32[]"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
    np.testing.assert_allclose(exp.call(x, np.int32(2)), np.tanh(x).sum(1) * 2, rtol=1e-5)
    # the same CLI in this process: more dtypes, and the errors
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert wmain.main(["export-web", "mymodel:flags", "--arg", "bool[4]", "--arg", "u8[4]",
                       "-o", "out2"]) == 0
    assert "flags(b: bool[4], k: u8[4])" in capsys.readouterr().out
    for argv, msg in [(("mymodel:predict", "--arg", "f33[2]"), "unknown dtype 'f33'"),
                      (("mymodel:predict", "--arg", "f32[2,a]"), "bad shape [2,a]"),
                      (("mymodel:predict", "--arg", "f32(2)"), "write DTYPE[SHAPE]"),
                      (("mymodel:nope", "--arg", "f32[2]"), "has no attribute 'nope'"),
                      (("nomodule:f", "--arg", "f32[2]"), "cannot import 'nomodule'"),
                      (("mymodel", "--arg", "f32[2]"), "write module:function"),
                      (("mymodel:predict", "--arg", "f32[2]"), "cannot be called with 1 "
                       "argument (f32[2]): missing a required argument: 'n'")]:
        assert wmain.main(["export-web", *argv, "-o", "x"]) != 0, argv
        assert msg in capsys.readouterr().err, argv
    assert not (tmp_path / "x").exists()


def test_setup_installs_chromium_for_tests():
    text = (ROOT / "scripts" / "setup.sh").read_text()
    assert 'if [ "$extra" = "test" ] && ! command -v chromium' in text
    assert "apt-get install -y -qq chromium" in text
    r = subprocess.run(["bash", "-n", str(ROOT / "scripts" / "setup.sh")], capture_output=True)
    assert r.returncode == 0, r.stderr

