"""The web bundle: an exported program, the ES module runtime ``wjax-web.js`` and a page."""
from __future__ import annotations

import importlib.resources
import html
import os

RUNTIME = "wjax-web.js"
PROGRAM = "program.wjax"


def runtime_source() -> str:
    """The browser runtime's source (package data next to this module)."""
    return importlib.resources.files(__package__).joinpath(RUNTIME).read_text()


def write_bundle(serialized: bytes, header: dict, directory, *, title: str | None = None) -> str:
    """Writes ``program.wjax``, ``wjax-web.js`` and ``index.html`` into ``directory``;
    returns the page's path."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, PROGRAM), "wb") as f:
        f.write(bytes(serialized))
    with open(os.path.join(directory, RUNTIME), "w") as f:
        f.write(runtime_source())
    page = os.path.join(directory, "index.html")
    with open(page, "w") as f:
        f.write(_page(header, title or header["fun_name"]))
    return page


def _page(header: dict, title: str) -> str:
    return _PAGE.replace("{{TITLE}}", html.escape(title))


_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>{{TITLE}} (wjax)</title>
<style>body { font: 15px system-ui, sans-serif; margin: 24px; } pre { background: #f4f4f4;
  padding: 8px; overflow-x: auto; }</style>
<h1>{{TITLE}}</h1>
<p>A function exported with wjax's <code>jax.export</code>, run on WebGPU by
<code>wjax-web.js</code>. Inputs (all ones here; edit this page to pass your own):</p>
<pre id="inputs"></pre>
<p>Outputs (the first 16 values of each):</p>
<pre id="out">loading...</pre>
<p id="time"></p>
<script type="module">
import { loadProgram } from "./wjax-web.js";
const out = document.getElementById("out");
const fmt = d => `${d.name}: ${d.dtype}[${d.shape}]`;
try {
  const prog = await loadProgram("./program.wjax");
  document.getElementById("inputs").textContent =
      prog.inputs.map(fmt).join("\\n") || "(none)";
  // inputs by name (or an array in this order): typed arrays, arrays or numbers
  const inputs = {};
  for (const x of prog.inputs) inputs[x.name] = prog.ones(x.name);
  const t0 = performance.now();
  const outs = await prog.run(inputs);
  const ms = performance.now() - t0;
  out.textContent = Object.entries(outs)
      .map(([k, v]) => `${k} = [${Array.from(v).slice(0, 16).join(", ")}` +
                       `${v.length > 16 ? ", ..." : ""}]`).join("\\n");
  document.getElementById("time").textContent =
      `${prog.header.program.kernels.length} kernels; this run took ${ms.toFixed(1)} ms`;
} catch (e) {
  out.textContent = "error: " + e.message;
}
</script>
"""
