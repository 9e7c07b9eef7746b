"""The package imports in one direction.

Every import of a wjax module by a wjax module -- at module level or inside a function -- is
read from the source (no import is executed), and two things are checked:

* layering: a module imports only modules of its own layer or of layers below it, in the order
  of ``LAYERS`` (the order docs/DESIGN.md describes);
* no cycle: the module graph, function-level imports included, has no cycle at all (a package
  ``__init__`` importing its children counts like any other import).

Function-level imports of wjax modules are allowed only where ``LAZY`` lists them with a reason.

Two more rules keep device facts and settings in one place each:

* adapter names: a string naming an adapter or vendor ("llvmpipe", "nvidia", ...) compared with
  or searched in something is allowed only in ``ADAPTER_NAME_OWNERS`` (the profiles say which
  adapter is which; kernels read the Target's strategies);
* the environment: ``os.environ``/``os.getenv`` (any use) only in ``core/config.py``, which
  parses every setting once (``config.settings()``).
"""
from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1] / "wjax"

# Lowest first.  A module's layer is the first dotted component under wjax (its sub-package or
# top-level module).  Layers in one tuple are peers: they may import each other if no cycle forms.
LAYERS = [
    ("core", "util"),  # IR, Primitive contract, tracing, dtypes, pytrees, config, caches;
    # util: JAX's small list helpers (jax._src.util), imported by nothing of wjax
    ("transforms",),  # jaxpr -> jaxpr rewrites: jvp, transpose, partial eval, vmap, dce
    ("backend",),  # Target, WGSL lowering, in-kernel loops, runtime (wgpu), execute
    ("prims",),  # one block per primitive with all its rules and kernels
    ("array",),  # the device Array
    ("sharding_impls",),  # NamedSharding over the meshes (core/mesh.py) and the Array's devices
    ("dispatch",),  # the compile cache and every way a program runs
    ("api",),  # jit, grad/vjp/jvp, vmap, custom derivatives, checkpoint, callbacks, shardings
    ("export",),  # jax.export: programs recorded for any WebGPU host, serialized, web bundles
    ("lax",),  # the public lax namespace and control flow (custom_root on custom_jvp)
    ("numpy",),  # jax.numpy by topic (vectorize on vmap, linalg's custom_jvp rules)
    ("random",),
    ("scipy",),
    ("nn",),
    ("image",),
    ("dtypes", "errors", "tree", "tree_util", "custom_derivatives", "ad_checkpoint",  # public
     "flatten_util", "sharding", "test_util", "typing", "version", "experimental", "api_util",
     "debug", "debugger", "stages", "extend", "interpreters", "_src", "ref", "core",
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


# The engines live under wjax/_src/ (as JAX's under jax/_src): a module there takes the layer
# of its engine (``wjax._src.core.ir`` is in "core"); the rest of _src is JAX's private names.
ENGINES = {"core", "util", "transforms", "backend", "prims", "array", "sharding_impls", "dispatch",
           "api", "export", "spmd", "partition"}


def _layer(mod):
    parts = mod.split(".")
    key = parts[1] if len(parts) > 1 else "__init__"
    if key == "_src" and len(parts) > 2 and parts[2] in ENGINES:
        key = parts[2]
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
    assert ("wjax._src.array", "wjax._src.core.ir", False) in {(a, b, f) for a, b, _, f in EDGES}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# ----------------------------------------------------------------------------- device facts

ADAPTER_NAME_OWNERS = {"wjax._src.backend.runtime", "wjax._src.backend.target",
                       "wjax._src.backend.profiles"}
ENVIRONMENT_OWNER = "wjax._src.core.config"
_ADAPTER_NAME = re.compile(r"\b(llvmpipe|lavapipe|nvidia|geforce|radeon|amd|intel|apple|adreno|"
                           r"mali|swiftshader|warp)\b", re.IGNORECASE)
_SEARCHES = {"find", "rfind", "index", "rindex", "count", "startswith", "endswith", "search",
             "match", "fullmatch", "findall", "split", "partition"}
_ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _adapter_name_checks(tree):
    """(line, text) of each string naming an adapter that is compared or searched: an operand
    of ``==``/``!=``/``in``/``not in``, or an argument (or receiver) of a string search."""
    def named(node):
        return (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and _ADAPTER_NAME.search(node.value))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left] + list(node.comparators)
            for op in operands:
                items = op.elts if isinstance(op, (ast.Tuple, ast.List, ast.Set)) else [op]
                for item in items:
                    if named(item):
                        yield node.lineno, item.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _SEARCHES):
            for arg in [node.func.value, *node.args]:
                if named(arg):
                    yield node.lineno, arg.value


def _environment_uses(tree):
    """(line, text) of each ``os.environ``/``os.getenv``/``environ.get`` and of each
    ``from os import environ``."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr in _ENV_NAMES
                and isinstance(node.value, ast.Name) and node.value.id == "os"):
            yield node.lineno, f"os.{node.attr}"
        elif (isinstance(node, ast.Attribute) and node.attr == "get"
              and isinstance(node.value, ast.Name) and node.value.id == "environ"):
            yield node.lineno, "environ.get"
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            for a in node.names:
                if a.name in _ENV_NAMES:
                    yield node.lineno, f"from os import {a.name}"


TREES = {mod: ast.parse(path.read_text(), str(path)) for mod, path in MODS.items()}


def test_adapter_names_only_in_the_profiles():
    found = [f"{MODS[mod]}:{line}: {text!r}" for mod, tree in TREES.items()
             if mod not in ADAPTER_NAME_OWNERS for line, text in _adapter_name_checks(tree)]
    assert not found, (
        "adapter names checked outside backend/runtime.py, target.py and profiles.py -- give "
        "the Target a named strategy (set from the adapter's profile in "
        "wjax/_src/backend/profiles.py) and read that instead:\n" + "\n".join(found))


def test_environment_read_only_by_config():
    found = [f"{MODS[mod]}:{line}: {text}" for mod, tree in TREES.items()
             if mod != ENVIRONMENT_OWNER for line, text in _environment_uses(tree)]
    assert not found, (
        "the environment is read outside wjax/_src/core/config.py -- add the variable to "
        "config.Settings (with its type, default and doc, and to the table in docs/DESIGN.md) "
        "and read config.settings().<name>:\n" + "\n".join(found))


def test_the_device_checks_see_what_they_must():
    """Each rule catches the forms it names, and leaves docstrings and look-alikes alone."""
    bad = ast.parse('''
"""a docstring naming lavapipe and NVIDIA is fine"""
if "llvmpipe" in info["device"].lower(): pass
if info["vendor"] == "NVIDIA": pass
if info["device"].startswith("Mali"): pass
if name in ("adreno", "x"): pass
if "normalize" in name: pass
''')
    assert [line for line, _ in _adapter_name_checks(bad)] == [3, 4, 5, 6]
    env = ast.parse("import os\nfrom os import environ\na = os.environ['A']\n"
                    "b = os.getenv('B')\nc = environ.get('C')\nd = os.path.join('e')\n")
    assert [line for line, _ in _environment_uses(env)] == [2, 3, 4, 5]


# ----------------------------------------------------------------------------- one definition

# (module, assigned name) -> why a module assigns into another at import.  Everything else is
# defined once, in the module that owns it.  Hooks are slots a lower layer declares (None until
# filled) and a higher one fills: the lower layer calls up without importing up.
PATCHES = {
    ("wjax._src.partition", "dispatch._sharded_hook"): "hook: jit over sharded arguments",
    ("wjax._src.partition", "dispatch._text_hook"): "hook: the partitioned program's text",
    ("wjax._src.partition", "dispatch._program_hook"): "hook: programs with sharding constraints",
    ("wjax._src.spmd", "dispatch._program_hook"): "hook: programs holding shard_map",
    ("wjax._src.spmd", "shard_map_p.impl"): "a rule slot of the primitive, filled where its "
                                            "evaluation (over devices) lives",
    ("wjax._src.sharding_impls", "_ir.aval_sharding_hook"): "hook: jax.typeof(x).sharding of a "
                                                            "core ShapedArray (a NamedSharding)",
    ("wjax.numpy.linalg", "_lax_linalg._numpy_linalg"): "hook: lax.linalg's eigh/qr/svd, whose "
                                                        "algorithms live in jnp.linalg",
}


def _module_level_patches(tree):
    """(line, "module.name") of each module-level assignment into an imported module, and of
    each module-level ``setattr(module, ...)``."""
    imported = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}

    def targets(node):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            ts = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in ts:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                            and e.value.id in imported):
                        yield node.lineno, f"{e.value.id}.{e.attr}"
        elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
              and isinstance(node.value.func, ast.Name) and node.value.func.id == "setattr"
              and isinstance(node.value.args[0], ast.Name)
              and node.value.args[0].id in imported):
            yield node.lineno, f"{node.value.args[0].id}.<setattr>"

    for node in tree.body:
        for stmt in ([node] + (node.body if isinstance(node, (ast.For, ast.If)) else [])):
            yield from targets(stmt)


def test_no_module_patches_another_at_import():
    found = [f"{MODS[mod]}:{line}: {text}" for mod, tree in TREES.items()
             for line, text in _module_level_patches(tree) if (mod, text) not in PATCHES]
    assert not found, (
        "a module assigns into another at import -- define the function once where it belongs "
        "(docs/DESIGN.md, 'Layers'):\n" + "\n".join(found))


def test_the_patch_check_sees_what_it_must():
    tree = ast.parse("from . import numpy\nfrom .api import v\nnumpy.vectorize = v\n"
                     "for n in ('a',):\n    setattr(numpy, n, v)\nx = 1\n")
    assert list(_module_level_patches(tree)) == [(3, "numpy.vectorize"), (5, "numpy.<setattr>")]
