"""``python -m wjax``: the adapters wjax sees, the one it picks, features and limits.

``python -m wjax run script.py [args]`` runs a JAX program on wjax (``import jax`` resolves to
wjax: ``wjax.jax_alias``).

``python -m wjax export-web module:function --arg 'f32[1,784]' --arg 'i32[]' -o directory``
exports the function (jitted if it is not) for arguments of those shapes and dtypes and writes
a web bundle there: ``program.wjax``, ``wjax-web.js``, ``index.html`` (docs/export.md).

``python -m wjax --check`` exits 0 when a Vulkan, Metal or D3D12 adapter exists.
``python -m wjax --has WORD`` exits 0 when an adapter's backend or device name contains WORD
(``--has opengl``, ``--has llvmpipe``): the test script asks it which driver runs exist.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys

import ml_dtypes
import numpy as np

from . import export, jax_alias
from ._src.api.jit import JitWrapped, jit
from ._src.backend import runtime
from ._src.core.ir import ShapeDtypeStruct

# the dtypes of --arg specs (JAX's short names, as in ``f32[2,3]``)
ARG_DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
              "i32": np.int32, "i16": np.int16, "i8": np.int8, "u32": np.uint32,
              "u16": np.uint16, "u8": np.uint8, "bool": np.bool_, "c64": np.complex64}
_SPEC = re.compile(r"^\s*([a-z0-9]+)\s*\[([^\]]*)\]\s*$")


class SpecError(ValueError):
    pass


def parse_arg_spec(spec: str) -> ShapeDtypeStruct:
    """``'f32[1,784]'`` / ``'i32[]'`` -> a ShapeDtypeStruct (SpecError naming what is wrong)."""
    m = _SPEC.match(spec)
    if not m:
        raise SpecError(f"bad --arg {spec!r}: write DTYPE[SHAPE], e.g. 'f32[1,784]' or 'i32[]'")
    name, dims = m.groups()
    if name not in ARG_DTYPES:
        raise SpecError(f"bad --arg {spec!r}: unknown dtype {name!r} (one of "
                        f"{', '.join(ARG_DTYPES)})")
    parts = [d.strip() for d in dims.split(",")] if dims.strip() else []
    if not all(d.isdigit() for d in parts):
        raise SpecError(f"bad --arg {spec!r}: bad shape [{dims}] (non-negative integers "
                        "separated by commas)")
    return ShapeDtypeStruct(tuple(int(d) for d in parts), ARG_DTYPES[name])


def _load_function(target: str):
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise SpecError(f"bad function {target!r}: write module:function (e.g. "
                        "mymodel:predict)")
    sys.path.insert(0, "")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise SpecError(f"cannot import {module!r}: {e}") from None
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SpecError(f"module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise SpecError(f"{target} is not a function")
    return obj


def export_web(argv) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m wjax export-web",
        description="Export a function as a web bundle (program.wjax, wjax-web.js, "
                    "index.html) that runs it on WebGPU in a browser.")
    ap.add_argument("function", help="module:function (jitted here if it is not already)")
    ap.add_argument("--arg", action="append", default=[], metavar="SPEC",
                    help="one per positional argument, in order: DTYPE[SHAPE] such as "
                         f"f32[1,784] or i32[]; DTYPE one of {', '.join(ARG_DTYPES)}")
    ap.add_argument("-o", "--output", required=True, help="the bundle's directory")
    ap.add_argument("--title", help="the page's title (default: the function's name)")
    ns = ap.parse_args(argv)
    try:
        specs = [parse_arg_spec(s) for s in ns.arg]
        fn = _load_function(ns.function)
    except SpecError as e:
        print(f"export-web: {e}", file=sys.stderr)
        return 2
    wrapped = fn if isinstance(fn, JitWrapped) else jit(fn)
    try:
        inspect.signature(wrapped.fun).bind(*specs)
    except TypeError as e:
        n = len(specs)
        print(f"export-web: {ns.function} cannot be called with {n} argument"
              f"{'' if n == 1 else 's'} ({', '.join(ns.arg) or 'no --arg'}): {e}",
              file=sys.stderr)
        return 2
    except ValueError:          # no signature (a builtin): let the export say
        pass
    try:
        exp = export.export(wrapped)(*specs)
    except (NotImplementedError, ValueError, TypeError) as e:
        print(f"export-web: {e}", file=sys.stderr)
        return 1
    page = exp.to_web(ns.output, title=ns.title)
    ins = ", ".join(f"{n}: {a.str_short()}" for n, a in zip(exp.in_names, exp.in_avals))
    outs = ", ".join(f"{n}: {a.str_short()}" for n, a in zip(exp.out_names, exp.out_avals))
    print(f"exported {exp.fun_name}({ins}) -> {outs}\nwrote {page} (serve the directory "
          "over http, e.g. python -m http.server, and open index.html)")
    return 0


def main(argv):
    if argv and argv[0] == "run":
        return jax_alias.run(argv[1:])
    if argv and argv[0] == "export-web":
        return export_web(argv[1:])
    adapters = runtime.list_adapters()
    if "--has" in argv:
        word = argv[argv.index("--has") + 1].lower()
        return 0 if any(word in f"{a.info['backend_type']} {a.info['device']}".lower()
                        for a in adapters) else 1
    if "--check" in argv:
        good = [a for a in adapters if a.info["backend_type"] in ("Vulkan", "Metal", "D3D12")]
        if good:
            print("ok:", runtime._adapter_desc(runtime.choose_adapter(good, honour_env=False)))
            return 0
        print("no Vulkan/Metal/D3D12 adapter found; adapters: "
              + ("; ".join(runtime._adapter_desc(a) for a in adapters) or "none"))
        return 1
    print("Adapters:")
    for i, a in enumerate(adapters):
        print(f"  [{i}] {runtime._adapter_desc(a)}")
    rt = runtime.get()
    print(f"Chosen: {rt.describe()}")
    print("Backend: webgpu")
    print("Features: " + ", ".join(sorted(rt.features)))
    t = rt.target()     # the kernel strategies wjax takes on this adapter (its profile's)
    print(f"Profile: {t.profile}")
    print("Strategies: " + ", ".join(f"{k}={getattr(t, k)}" for k in t.OPTIONS
                                     if k not in ("name", "profile", "compiles", "tune")))
    print("Limits:")
    for k in sorted(rt.limits):
        print(f"  {k}: {rt.limits[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
