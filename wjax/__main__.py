"""``python -m wjax``: the adapters wjax sees, the one it picks, features and limits.

``python -m wjax run script.py [args]`` runs a JAX program on wjax (``import jax`` resolves to
wjax: ``wjax.jax_alias``).

``python -m wjax --check`` exits 0 when a Vulkan, Metal or D3D12 adapter exists.
``python -m wjax --has WORD`` exits 0 when an adapter's backend or device name contains WORD
(``--has opengl``, ``--has llvmpipe``): the test script asks it which driver runs exist.
"""
from __future__ import annotations

import sys

from . import jax_alias
from ._src.backend import runtime


def main(argv):
    if argv and argv[0] == "run":
        return jax_alias.run(argv[1:])
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
    print("Limits:")
    for k in sorted(rt.limits):
        print(f"  {k}: {rt.limits[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
