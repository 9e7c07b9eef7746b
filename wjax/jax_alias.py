"""Running JAX programs unchanged: ``import jax`` resolving to wjax.

``install_as_jax()`` puts a finder first on ``sys.meta_path`` that answers every import of
``jax`` or ``jax.<sub>`` with the wjax module of the same name (``jax.numpy`` *is*
``wjax.numpy``), so a program and the libraries it imports (optax, chex, equinox, ...) run on
wjax without an edit.  Real ``jax`` and ``jaxlib`` are never loaded: a ``jax`` module wjax does
not have raises ``ModuleNotFoundError`` naming it, and ``jaxlib`` is refused the same way.
``python -m wjax run script.py [args]`` installs the hook and runs the script as ``__main__``.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys

_PREFIXES = ("jax", "jaxlib")
# JAX's private modules that libraries patch, and the wjax module that plays their part (also
# an attribute of wjax._src, for ``from jax._src import compiler``)
_RENAMED = {"jax._src.compiler": "wjax._src.backend.compiler"}


def _wjax_name(fullname: str) -> str | None:
    """The wjax module behind ``jax.<sub>`` (None for ``jaxlib``: wjax replaces it entirely)."""
    head, _, rest = fullname.partition(".")
    if head != "jax":
        return None
    if fullname in _RENAMED:
        return _RENAMED[fullname]
    return "wjax" + ("." + rest if rest else "")


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module          # the wjax module itself, not a copy

    def exec_module(self, module):
        pass


class JaxAliasFinder(importlib.abc.MetaPathFinder):
    """Answers imports of ``jax``/``jax.*`` with wjax's modules and refuses ``jaxlib``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] not in _PREFIXES:
            return None
        target_name = _wjax_name(fullname)
        if target_name is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: wjax replaces jax and jaxlib (install_as_jax is "
                f"active), so {fullname} is not loaded", name=fullname)
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as err:
            if err.name is not None and err.name != target_name and \
                    not target_name.startswith(err.name + "."):
                raise                       # a real missing dependency inside wjax
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: wjax has no {target_name} (jax is wjax here, "
                f"through wjax.install_as_jax)", name=fullname) from None
        is_package = hasattr(module, "__path__")
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=is_package)
        if is_package:
            spec.submodule_search_locations = []
        return spec


_finder = JaxAliasFinder()


def install_as_jax() -> None:
    """Makes ``import jax`` (and ``jax.numpy``, ``jax.lax``, ...) resolve to wjax.

    Idempotent.  Raises ``RuntimeError`` when the real ``jax`` is already imported in this
    process: two array libraries under one name would mix silently."""
    loaded = sys.modules.get("jax")
    if loaded is not None and loaded is not sys.modules["wjax"]:
        raise RuntimeError("install_as_jax(): the real jax is already imported in this process; "
                           "call install_as_jax() before anything imports jax")
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall_as_jax() -> None:
    """Removes the hook and the ``jax`` aliases it made (the wjax modules stay loaded)."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n.partition(".")[0] == "jax"]:
        if getattr(sys.modules[name], "__name__", "").partition(".")[0] == "wjax":
            del sys.modules[name]


def run(argv: list[str]) -> int:
    """``python -m wjax run script.py [args]`` / ``python -m wjax run -m module [args]``."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m wjax run SCRIPT.py [ARGS...]\n"
              "       python -m wjax run -m MODULE [ARGS...]\n"
              "Runs a JAX program on wjax: `import jax` resolves to wjax (wjax.install_as_jax).")
        return 0 if argv else 2
    install_as_jax()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("python -m wjax run -m: a module name is required", file=sys.stderr)
            return 2
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
        runpy.run_path(os.path.abspath(argv[0]), run_name="__main__")  # as `python f.py`
    return 0

