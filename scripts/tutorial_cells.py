#!/usr/bin/env python
"""Run the code cells of JAX's own tutorials under real JAX and under wjax, and compare them.

Each selected doc of JAX's ``docs/`` (at the tag ``jax-v0.10.2``) has its code cells run in
order in ONE fresh interpreter per side, as a notebook kernel would:

* real JAX: ``python driver`` with ``JAX_PLATFORMS=cpu``;
* wjax: ``python -m wjax run driver`` (``import jax`` resolves to wjax, ``wjax/jax_alias.py``),
  with this checkout's ``wjax`` first on ``PYTHONPATH``.

The multi-device docs (``parallel``, ``shard_map``) run with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` on both sides (wjax honours that flag as
``WJAX_NUM_DEVICES``: 8 logical devices on one adapter).

Real JAX runs each doc twice: a cell whose output differs between JAX's two runs (it prints
``np.random`` draws without a seed, a buffer pointer) is compared without its numbers.

For each cell the driver records what the cell printed (stdout; stderr is kept for the report but
not compared), the ``repr`` of the cell's last expression when it is not ``None`` and the cell does
not end in ``;`` (what a notebook displays), and the class and message of an exception the cell
raised (the doc then goes on, as in a notebook).  Two cells match when

* both ran without an exception, or both raised an exception of the same class name; and
* their printed and displayed text is the same after normalization (``normalize``): device and
  platform names (``webgpu`` -> ``cpu``, ``WebGPUDevice(id=N, ...)`` -> ``CpuDevice(id=N)``),
  memory addresses, ``Var(id=...)`` (JAX's are ``id()``s), temporary file names; then the text
  is split into words as tests/test_libraries.py ``_same`` does (brackets, commas, colons and
  box-drawing characters dropped, so whitespace and box widths do not count) and numbers are
  compared with rtol 1e-4 / atol 1e-6, words exactly.

IPython syntax is handled as a notebook's output would need it: ``!`` shell lines and ``%`` line
magics are dropped (``%time STMT`` runs ``STMT``), ``%%time`` runs its body, ``%%timeit`` cells
and ``%timeit`` lines are dropped (their output is a timing), cells tagged ``skip-execution`` are
not run.  A cell left empty by this is not counted.

The method, the selection, the counts and the causes: docs/tutorial_cells.md.

Usage (with the venv that has both JAX and wjax)::

    python scripts/tutorial_cells.py --install-deps       # matplotlib into .tutdeps/ (once)
    python scripts/tutorial_cells.py                      # every selected doc, both sides
    python scripts/tutorial_cells.py --docs jit-compilation shard_map
    python scripts/tutorial_cells.py --side wjax          # rerun wjax only, reuse JAX's results
    python scripts/tutorial_cells.py --compare-only       # report from the stored results
    python scripts/tutorial_cells.py --list               # the selection and the exclusions

Results are stored per doc and side under ``--out`` (``build/tutorial_cells``), one JSON line a
cell, written as each cell ends (a crash or a time-out keeps the cells before it).  The report
(``--report``, default ``build/tutorial_cells/report.md``) has per doc: cells matched / total, and
each differing cell with a short diff.

Run it niced (``nice -n 10``); ``--jobs`` > 1 runs docs in parallel (default 1).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_GIT = os.environ.get("JAX_DOCS_GIT", "/work/.mirror/jax-ml+jax/repo")
DEFAULT_REV = "jax-v0.10.2"
# Packages the docs import that the venv lacks (matplotlib and its own dependencies), installed
# by ``--install-deps`` into DEPS, which both sides get on PYTHONPATH.
DEPS = ROOT / ".tutdeps"
DEP_PACKAGES = ["matplotlib", "contourpy", "cycler", "fonttools", "kiwisolver", "pillow",
                "pyparsing", "python-dateutil"]

# ---------------------------------------------------------------------------------------------
# Selection.  The rule: every doc under docs/ with code cells that JAX's own documentation build
# executes (docs/conf.py at the tag: sources not in ``exclude_patterns``, notebooks not in
# ``nb_execution_excludepatterns``; for a paired .ipynb/.md the cells are the same, and the .md
# is read), less the ones that cannot run on this machine for a reason that is not JAX's API.
# Docs whose cells need several devices form the multi-device group.
SINGLE = [
    "array_refs.md", "autodidax.md", "autodidax2_part1.md", "automatic-differentiation.md",
    "automatic-vectorization.md", "complex-differentiation.md", "control-flow.md",
    "custom_pytrees.md", "debugging.md", "debugging/flags.md", "external-callbacks.md",
    "gradient-checkpointing.md", "higher-order.md", "jacobian-vector-products.md",
    "jax-primitives.md", "jaxpr.md", "jit-compilation.md", "key-concepts.md", "pytrees.md",
    "random-numbers.md", "stateful-computations.md", "tracing.md",
    "notebooks/Common_Gotchas_in_JAX.md", "notebooks/Custom_derivative_rules_for_Python_code.md",
    "notebooks/Writing_custom_interpreters_in_Jax.md", "notebooks/autodiff_cookbook.md",
    "notebooks/colocated-python.md", "notebooks/thinking_in_jax.md",
    "notebooks/vmapped_log_probs.md",
]
MULTI = ["parallel.md", "notebooks/shard_map.md"]
# Not in JAX's executed set but runnable on one CPU device with the packages at hand: run on
# request (``--docs``), reported apart, not in the two counts.
EXTRA = ["notebooks/autodiff_remat.md", "notebooks/convolutions.md", "notebooks/layout.md"]
EXCLUDED = {
    "ffi.md": "builds a C++ shared library with cmake against XLA's FFI headers (not JAX's "
              "Python API; needs a toolchain and jaxlib's include dir)",
    "notebooks/neural_network_with_tfds_data.md": "not executed by JAX's docs build; downloads "
                                                  "MNIST with tensorflow_datasets (no network)",
    "notebooks/Neural_Network_and_Data_Loading.md": "not executed by JAX's docs build; downloads "
                                                    "MNIST with torchvision (no network)",
    "jep/9407-type-promotion.md": "not executed by JAX's docs build; needs pandas, networkx, "
                                  "torch, tensorflow (tables of other libraries' promotion)",
    "distributed_data_loading.md": "not executed by JAX's docs build; tensorflow, several hosts",
    "notebooks/host-offloading.md": "not executed by JAX's docs build; GPU/TPU host memory kinds",
    "notebooks/cute_dsl_jax.md": "not executed by JAX's docs build; CUDA (cutlass)",
    "pallas/*": "not executed by JAX's docs build; Pallas kernels for GPU/TPU",
    "notebooks/autodiff_remat.md": "not executed by JAX's docs build (extra, --docs)",
    "notebooks/convolutions.md": "not executed by JAX's docs build (extra, --docs)",
    "notebooks/layout.md": "not executed by JAX's docs build, TPU layouts (extra, --docs)",
}
MULTI_DEVICE_FLAGS = "--xla_force_host_platform_device_count=8"

# Cells whose output is not a function of the program (wall-clock timings, ...): compared for the
# exception class only.  Keyed by doc, cell index (0-based over the counted cells), with a reason.
LOOSE = {
}


def short(doc: str) -> str:
    return doc.removeprefix("notebooks/").removesuffix(".md")


def resolve_docs(names):
    every = SINGLE + MULTI + EXTRA
    if not names:
        return SINGLE + MULTI
    out = []
    for n in names:
        hits = [d for d in every if n in (d, short(d), d.removesuffix(".md"))]
        if not hits:
            sys.exit(f"unknown doc {n!r}; known: {', '.join(short(d) for d in every)}")
        out += hits
    return out


# ---------------------------------------------------------------------------------------------
# Cells.
FENCE = re.compile(r"^(`{3,})\{code-cell\}[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)


def doc_text(git_dir: str, rev: str, doc: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{rev}:docs/{doc}"],
                          check=True, capture_output=True, text=True).stdout


def _options(body: str):
    """The cell's options (``:key: value`` lines or a ``---`` YAML block) and its source."""
    tags = []
    lines = body.split("\n")
    if lines and lines[0].strip() == "---":
        end = lines.index("---", 1)
        opts, lines = lines[1:end], lines[end + 1:]
    else:
        opts = []
        while lines and lines[0].startswith(":"):
            opts.append(lines.pop(0))
    text = "\n".join(opts)
    m = re.search(r"tags:\s*\[([^\]]*)\]", text)
    if m:
        tags = [t.strip().strip("'\"") for t in m.group(1).split(",") if t.strip()]
    m = re.search(r"tags:\s*\n((?:\s*-\s*\S+\s*\n?)+)", text)
    if m:
        tags += re.findall(r"-\s*(\S+)", m.group(1))
    while lines and not lines[0].strip():
        lines.pop(0)
    return tags, "\n".join(lines)


def _unmagic(src: str):
    """The cell's Python source with IPython syntax handled; None when nothing is left to run."""
    lines = src.split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        if first.startswith("%%time") and not first.startswith("%%timeit"):
            lines = lines[1:]
        else:
            return None
    out = []
    for line in lines:
        s = line.lstrip()
        ind = line[:len(line) - len(s)]
        if s.startswith("!"):
            continue
        if s.startswith("%time ") and not s.startswith("%timeit"):
            out.append(ind + s[len("%time "):])
        elif s.startswith("%"):
            continue
        else:
            out.append(line)
    code = "\n".join(out)
    return code if code.strip() else None


def cells(text: str):
    """[(source, tags)] of the doc's code cells, in order, counted ones only."""
    out = []
    for m in FENCE.finditer(text):
        tags, src = _options(m.group(2))
        if "skip-execution" in tags:
            continue
        code = _unmagic(src)
        if code is not None:
            out.append({"source": code, "tags": tags})
    return out


# ---------------------------------------------------------------------------------------------
# The driver: runs inside the child interpreter (JAX's or wjax's).
DRIVER = r'''
import __future__, ast, io, json, linecache, os, signal, sys, traceback, types

spec = json.load(open(sys.argv[1]))
out = open(sys.argv[2], "w")
real_stdout, real_stderr = sys.stdout, sys.stderr
main = types.ModuleType("__main__")
main.__dict__["__builtins__"] = __builtins__
sys.modules["__main__"] = main
ns = main.__dict__


class CellTimeout(BaseException):
    pass


def on_alarm(*_):
    raise CellTimeout(f"cell ran past {spec['cell_timeout']} s")


signal.signal(signal.SIGALRM, on_alarm)


def barrier():
    jax = sys.modules.get("jax")
    if jax is not None and hasattr(jax, "effects_barrier"):
        try:
            jax.effects_barrier()
        except Exception:
            pass


flags = 0  # __future__ imports hold for the later cells too, as in IPython
for i, cell in enumerate(spec["cells"]):
    src = cell["source"]
    name = f"/tmp/ipykernel/cell_{i}.py"
    linecache.cache[name] = (len(src), None, [l + "\n" for l in src.split("\n")], name)
    buf_out, buf_err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = buf_out, buf_err
    rec = {"i": i, "display": None, "exc": None}
    signal.alarm(spec["cell_timeout"])
    try:
        tree = ast.parse(src, name)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not src.rstrip().endswith(";"):
            last = ast.Expression(tree.body.pop().value)
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                for alias in node.names:
                    flags |= getattr(__future__, alias.name).compiler_flag
        exec(compile(tree, name, "exec", flags=flags, dont_inherit=True), ns)
        if last is not None:
            value = eval(compile(last, name, "eval", flags=flags, dont_inherit=True), ns)
            if value is not None:
                ns["_"] = value
                rec["display"] = repr(value)
        barrier()
    except BaseException as e:  # noqa: BLE001 -- a notebook shows every exception and goes on
        if isinstance(e, KeyboardInterrupt):
            raise
        barrier()
        rec["exc"] = {"type": type(e).__name__, "module": type(e).__module__,
                      "message": str(e)[:4000],
                      "tb": "".join(traceback.format_exception(e))[-4000:]}
    finally:
        signal.alarm(0)
        sys.stdout, sys.stderr = real_stdout, real_stderr
    rec["stdout"] = buf_out.getvalue()
    rec["stderr"] = buf_err.getvalue()[-4000:]
    out.write(json.dumps(rec) + "\n")
    out.flush()
    if isinstance(rec["exc"], dict) and rec["exc"]["type"] == "SystemExit":
        break
out.close()
os._exit(0)  # as a kernel that is shut down: no atexit work in a half-broken doc
'''


def run_side(side: str, doc: str, cell_list, outdir: pathlib.Path, timeout: int,
             cell_timeout: int):
    """Runs the doc's cells on one side; returns the path of its JSON-lines results."""
    outdir.mkdir(parents=True, exist_ok=True)
    res = outdir / f"{doc.replace('/', '__')}.{side}.jsonl"
    log = outdir / f"{doc.replace('/', '__')}.{side}.log"
    with tempfile.TemporaryDirectory(prefix="tutcells-") as tmp:
        tmp = pathlib.Path(tmp)
        (tmp / "spec.json").write_text(json.dumps({"cells": cell_list,
                                                    "cell_timeout": cell_timeout}))
        (tmp / "driver.py").write_text(DRIVER)
        env = dict(os.environ)
        deps = [str(DEPS)] if DEPS.is_dir() else []
        env["MPLBACKEND"] = "Agg"
        env.pop("XLA_FLAGS", None)
        if doc in MULTI:
            env["XLA_FLAGS"] = MULTI_DEVICE_FLAGS
        if side.startswith("jax"):
            env["JAX_PLATFORMS"] = "cpu"
            env["PYTHONPATH"] = os.pathsep.join(deps)
            cmd = [sys.executable, str(tmp / "driver.py")]
        else:
            env.pop("JAX_PLATFORMS", None)
            env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *deps])
            cmd = [sys.executable, "-m", "wjax", "run", str(tmp / "driver.py")]
        cmd += [str(tmp / "spec.json"), str(res)]
        try:
            p = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                               timeout=timeout)
            log.write_text(f"rc={p.returncode}\n--- stdout\n{p.stdout[-20000:]}\n--- stderr\n"
                           f"{p.stderr[-20000:]}")
        except subprocess.TimeoutExpired as e:
            log.write_text(f"timed out after {timeout} s\n{e.stderr or ''}"[-20000:])
    return res


# ---------------------------------------------------------------------------------------------
# Comparison.
def normalize(text: str) -> str:
    text = re.sub(r"WebGPUDevice\(id=(\d+), kind='[^']*', backend=\w+\)", r"CpuDevice(id=\1)",
                  text)
    text = re.sub(r"\bwebgpu:(\d+)", r"cpu:\1", text)
    text = re.sub(r"llvmpipe \(LLVM [^)]*\)", "cpu", text)
    text = re.sub(r"\bWEBGPU\b", "CPU", text)  # visualize_array_sharding's labels
    # ... whose boxes are as wide as the label (the platform's name) needs: the runs of a
    # drawing's lines are compared, not their lengths (tests/test_visualize_sharding.py
    # checks the widths against JAX's with JAX's label)
    text = "\n".join(re.sub(r" +", " ", re.sub(r"─+", "─", ln)) if re.search("[┌│├└]", ln)
                     else ln for ln in text.split("\n"))
    text = re.sub(r"\bWebGPU\b|\bwebgpu\b", "cpu", text)
    text = re.sub(r"0x[0-9a-fA-F]{6,}", "0x?", text)
    text = re.sub(r"\bVar\(id=\d+\)", "Var(id=?)", text)  # JAX's are id()s
    text = re.sub(r"/tmp/tutcells-[^/\s]+", "/tmp/X", text)
    return text


def words(text: str):
    # box-drawing characters (visualize_array_sharding's boxes, whose widths follow the length
    # of the device names) separate words like brackets: the boxes' labels are compared in order
    text = re.sub(r"[\[\](){},:\u2500-\u257f]", " ", normalize(text))
    text = re.sub(r"(\d\.?)\s+([+-](?:\d+\.?\d*(?:e[+-]?\d+)?|inf|nan)j)", r"\1\2", text)
    return text.split()


def _number(t):
    try:
        return float(t)
    except ValueError:
        try:
            return complex(t) if t.endswith("j") else None
        except ValueError:
            return None


def same_words(a, b) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        fx, fy = _number(x), _number(y)
        if fx is None or fy is None:
            return False
        if fx == fy or (fx != fx and fy != fy):
            continue
        if abs(fx - fy) > 1e-6 + 1e-4 * abs(fy):
            return False
    return True


def shown(rec) -> str:
    s = rec.get("stdout", "")
    if rec.get("display") is not None:
        s += ("" if not s or s.endswith("\n") else "\n") + rec["display"]
    return s


def deterministic(rec_j, rec_j2) -> bool:
    """Whether JAX's two runs of the cell agree (a cell printing np.random draws does not)."""
    if rec_j is None or rec_j2 is None:
        return True
    if bool(rec_j["exc"]) != bool(rec_j2["exc"]):
        return False
    return same_words(words(shown(rec_j)), words(shown(rec_j2)))


def unnumbered(ws):
    return ["#" if _number(w) is not None else w for w in ws]


def compare(rec_j, rec_w, loose=False, nondeterministic=False):
    """(matched, cause) for one cell; cause is a short text when not matched.  A cell whose
    output differs between two runs of JAX is compared without its numbers."""
    if rec_w is None:
        return False, "not run by wjax (the interpreter died or timed out before this cell)"
    if rec_j is None:
        return False, "not run by JAX"
    ej, ew = rec_j["exc"], rec_w["exc"]
    if ej and not ew:
        return False, f"JAX raises {ej['type']}: {ej['message'][:200]!r}; wjax does not"
    if ew and not ej:
        return False, f"wjax raises {ew['type']}: {ew['message'][:300]!r}"
    if ej and ew and ej["type"] != ew["type"]:
        return False, (f"JAX raises {ej['type']}: {ej['message'][:160]!r}; wjax raises "
                       f"{ew['type']}: {ew['message'][:200]!r}")
    if loose:
        return True, ""
    a, b = shown(rec_j), shown(rec_w)
    if nondeterministic and unnumbered(words(a)) == unnumbered(words(b)):
        return True, ""
    if same_words(words(b), words(a)):
        return True, ""
    diff = difflib.unified_diff(normalize(a).splitlines(), normalize(b).splitlines(),
                                "jax", "wjax", n=0, lineterm="")
    lines = [l for l in diff if not l.startswith(("---", "+++", "@@"))]
    text = "\n".join(l[:220] for l in lines[:14]) + ("\n..." if len(lines) > 14 else "")
    return False, "output differs:\n" + text


def load(path: pathlib.Path):
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[r["i"]] = r
    return out


def report(docs, cells_of, outdir: pathlib.Path, path: pathlib.Path):
    groups = {"single-device": [d for d in docs if d in SINGLE],
              "multi-device": [d for d in docs if d in MULTI],
              "extra (not in the counts)": [d for d in docs if d in EXTRA]}
    lines = [f"# Tutorial cells: wjax vs JAX {DEFAULT_REV}", ""]
    details = []
    totals = {}
    nondet_cells = []
    for group, gdocs in groups.items():
        if not gdocs:
            continue
        lines += [f"## {group}", "", "| doc | matched | cells | differing cells |",
                  "| --- | ---: | ---: | --- |"]
        gm = gt = 0
        for doc in gdocs:
            key = doc.replace("/", "__")
            rj, rw = load(outdir / f"{key}.jax.jsonl"), load(outdir / f"{key}.wjax.jsonl")
            rj2 = load(outdir / f"{key}.jax2.jsonl")
            n = len(cells_of[doc])
            bad = []
            for i in range(n):
                nondet = not deterministic(rj.get(i), rj2.get(i))
                if nondet:
                    nondet_cells.append(f"{short(doc)} {i}")
                ok, cause = compare(rj.get(i), rw.get(i), loose=(short(doc), i) in LOOSE,
                                    nondeterministic=nondet)
                if not ok:
                    bad.append((i, cause))
            gm += n - len(bad)
            gt += n
            lines.append(f"| {short(doc)} | {n - len(bad)} | {n} | "
                         f"{', '.join(str(i) for i, _ in bad)} |")
            for i, cause in bad:
                src = cells_of[doc][i]["source"]
                details += [f"### {short(doc)} cell {i}", "", "```python",
                            textwrap.shorten(src, 600, placeholder=" ...")
                            if src.count("\n") > 25 else src, "```", "", "```",
                            cause, "```", ""]
        pct = 100.0 * gm / gt if gt else 0.0
        totals[group] = (gm, gt)
        lines += [f"| **total** | **{gm}** | **{gt}** | {pct:.1f}% |", ""]
    lines += ["Cells whose output differs between two runs of JAX (compared without their "
              "numbers): " + (", ".join(nondet_cells) or "none") + ".", ""]
    lines += ["## Differing cells", ""] + details
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return totals


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", nargs="*", help="docs by name (jit-compilation, shard_map, ...)")
    ap.add_argument("--jobs", type=int, default=1, help="docs run at once (default 1)")
    ap.add_argument("--report", default=str(ROOT / "build/tutorial_cells/report.md"))
    ap.add_argument("--out", default=str(ROOT / "build/tutorial_cells"),
                    help="per-doc, per-side results (JSON lines)")
    ap.add_argument("--git-dir", default=DEFAULT_GIT, help="a git dir of jax-ml/jax")
    ap.add_argument("--rev", default=DEFAULT_REV)
    ap.add_argument("--side", choices=["both", "jax", "wjax"], default="both",
                    help="which side to run (the other's stored results are reused)")
    ap.add_argument("--compare-only", action="store_true", help="only write the report")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per doc and side")
    ap.add_argument("--cell-timeout", type=int, default=900, help="seconds per cell")
    ap.add_argument("--list", action="store_true", help="print the selection and exit")
    ap.add_argument("--install-deps", action="store_true",
                    help=f"pip-install the docs' plotting packages into {DEPS} and exit")
    args = ap.parse_args(argv)
    if args.install_deps:
        # matplotlib for the docs that plot (Agg backend); --no-deps keeps the venv's NumPy
        return subprocess.call([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                                "--target", str(DEPS), *DEP_PACKAGES])
    docs = resolve_docs(args.docs)
    if args.list:
        for title, ds in (("single-device", SINGLE), ("multi-device", MULTI), ("extra", EXTRA)):
            print(f"{title}: " + " ".join(short(d) for d in ds))
        for d, why in EXCLUDED.items():
            print(f"excluded {d}: {why}")
        return 0
    outdir = pathlib.Path(args.out).resolve()  # the children run in temporary folders
    cells_of = {d: cells(doc_text(args.git_dir, args.rev, d)) for d in docs}
    if not args.compare_only:
        # JAX runs twice: the cells whose outputs differ between its runs are nondeterministic
        sides = {"both": ["jax", "jax2", "wjax"], "jax": ["jax", "jax2"],
                 "wjax": ["wjax"]}[args.side]

        def one(doc):
            for side in sides:
                run_side(side, doc, cells_of[doc], outdir, args.timeout, args.cell_timeout)
            return doc

        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
            for doc in ex.map(one, docs):
                print(f"ran {short(doc)} ({len(cells_of[doc])} cells)", flush=True)
    totals = report(docs, cells_of, outdir, pathlib.Path(args.report))
    for group, (m, t) in totals.items():
        print(f"{group}: {m}/{t} cells match ({100.0 * m / t if t else 0:.1f}%)")
    print(f"report: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
