"""The package imports in one direction.

Every import of a wjax module by a wjax module -- at module level or inside a function -- is
read from the source (no import is executed), and two things are checked:

* layering: a module imports only modules of its own layer or of layers below it, in the order
  of ``LAYERS`` (the order docs/DESIGN.md describes);
* no cycle: the module graph, function-level imports included, has no cycle at all (a package
  ``__init__`` importing its children counts like any other import).

Function-level imports of wjax modules are allowed only where ``LAZY`` lists them with a reason.
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "wjax"

# Lowest first.  A module's layer is the first dotted component under wjax (its sub-package or
# top-level module).  Layers in one tuple are peers: they may import each other if no cycle forms.
LAYERS = [
    ("core",),  # IR, Primitive contract, tracing, dtypes, pytrees, config, caches
    ("transforms",),  # jaxpr -> jaxpr rewrites: jvp, transpose, partial eval, vmap, dce
    ("backend",),  # Target, WGSL lowering, in-kernel loops, runtime (wgpu), execute
    ("prims",),  # one block per primitive with all its rules and kernels
    ("array",),  # the device Array
    ("dispatch",),  # the compile cache and every way a program runs
    ("lax",),  # the public lax namespace and control flow
    ("numpy",),  # jax.numpy by topic; installs Array/Tracer methods
    ("api",),  # jit, grad/vjp/jvp, vmap, custom derivatives, checkpoint
    ("random",),
    ("scipy",),
    ("nn",),
    ("image",),
    ("dtypes", "errors", "tree", "tree_util", "custom_derivatives", "ad_checkpoint",  # public
     "flatten_util", "sharding", "test_util", "typing", "version", "experimental", "api_util",
     "debug", "debugger", "stages", "extend", "interpreters", "_src", "ref",
     "example_libraries", "spmd", "partition", "distributed", "custom_batching", "ops",
     "dlpack", "monitoring", "profiler"),
    ("jax_alias",),                 # `import jax` resolving to wjax (imports by name only)
    ("__init__", "__main__"),
]

# (importing module, imported module) -> why the import must stay inside a function.
LAZY: dict[tuple[str, str], str] = {}


def _modules():
    mods = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("wjax",) + path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _resolve(module, is_package, level, name):
    if level == 0:
        return name
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _imports(mods):
    """Yield (importer, imported, lineno, in_function) for every import of a wjax module."""
    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                inner = in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                names = []
                if isinstance(child, ast.Import):
                    names = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    base = _resolve(mod, is_package, child.level, child.module or "")
                    # `from pkg import sub` depends on pkg.sub when sub is a module
                    names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                             for a in child.names]
                for name in names:
                    while name and name not in mods:
                        name = name.rpartition(".")[0]
                    if name and name != mod and name.split(".")[0] == "wjax":
                        yield mod, name, child.lineno, inner
                yield from visit(child, inner)

        yield from visit(tree, False)


def _layer(mod):
    parts = mod.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    for i, group in enumerate(LAYERS):
        if key in group:
            return i
    raise AssertionError(f"{mod}: not in any layer of tests/test_layering.py LAYERS")


def _cycles(graph):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


MODS = _modules()
EDGES = list(_imports(MODS))


def test_every_module_has_a_layer():
    for mod in MODS:
        _layer(mod)


def test_imports_only_go_down():
    upward = [f"{a} (layer {LAYERS[_layer(a)]}) imports {b} (layer {LAYERS[_layer(b)]}) "
              f"at line {line}" for a, b, line, _ in EDGES if _layer(b) > _layer(a)]
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_no_import_cycle():
    graph = {m: set() for m in MODS}
    for a, b, _, _ in EDGES:
        graph[a].add(b)
    assert _cycles(graph) == []


def test_function_level_imports_are_documented():
    lazy = sorted({(a, b) for a, b, _, inner in EDGES if inner} - set(LAZY))
    assert not lazy, f"imports inside functions not listed in LAZY: {lazy}"
    stale = sorted(set(LAZY) - {(a, b) for a, b, _, inner in EDGES if inner})
    assert not stale, f"LAZY lists imports that no longer exist: {stale}"


def test_the_checker_sees_what_it_must():
    """The parser finds a known module-level import and a cycle in a made-up graph."""
    assert ("wjax.array", "wjax.core.ir", False) in {(a, b, f) for a, b, _, f in EDGES}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
