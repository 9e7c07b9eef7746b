"""The web bundle: an exported program, the ES module runtime ``wjax-web.js`` and a page."""
from __future__ import annotations

import importlib.resources
import json
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
    ins = [{"name": n, "shape": a["shape"], "dtype": a["dtype"]}
           for n, a in zip(header["in_names"], header["in_avals"])]
    return _PAGE.replace("{{TITLE}}", title).replace("{{INPUTS}}", json.dumps(ins))


_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>{{TITLE}} (wjax)</title>
<h1>{{TITLE}}</h1>
<pre id="out">loading...</pre>
<script type="module">
import { loadProgram } from "./wjax-web.js";
const out = document.getElementById("out");
try {
  const prog = await loadProgram("./program.wjax");
  // every input filled with ones (edit to pass your own typed arrays, by name or in order)
  const inputs = {};
  for (const x of prog.inputs) inputs[x.name] = prog.ones(x.name);
  const outs = await prog.run(inputs);
  out.textContent = Object.entries(outs)
      .map(([k, v]) => `${k} = [${Array.from(v).slice(0, 16).join(", ")}]`).join("\\n");
} catch (e) {
  out.textContent = "error: " + e.message;
}
</script>
"""
