"""Probe an adapter's cooperative matrices (tensor cores) through wgpu, outside wjax.

wgpu 0.32 exposes the native feature ``cooperative-matrix`` (WGSL ``enable
wgpu_cooperative_matrix;``), but which fragment shapes and scalar types a driver takes is not
queryable from wgpu-py.  This script tries each candidate kernel in its own process (a driver
that rejects a shape may abort the process), checks it against NumPy and times it at 4096:

    python bench/probe_coop.py            # every variant, one line each
    python bench/probe_coop.py --variant 2

Each kernel: a workgroup computes a BM x BN block of C = A @ B with subgroups of 32 in a grid,
each subgroup a (BM/GY) x (BN/GX) region of S x S fragments; K in slabs of BK staged in
workgroup memory (converted to the fragment's input type), then coopLoad / coopMultiplyAdd.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

# (name, S, input type, accumulator type, BM, BN, BK, GY, GX, direct)
VARIANTS = [
    ("f32 8x8 direct (one 8x8 tile a subgroup)", 8, "f32", "f32", 8, 8, 8, 1, 1, True),
    ("f32 8x8 64x64 tile", 8, "f32", "f32", 64, 64, 32, 2, 2, False),
    ("f32 8x8 128x128 tile", 8, "f32", "f32", 128, 128, 32, 4, 2, False),
    ("f16->f32 16x16 128x128 tile", 16, "f16", "f32", 128, 128, 32, 4, 2, False),
    ("f16->f16 16x16 128x128 tile", 16, "f16", "f16", 128, 128, 32, 4, 2, False),
    ("f16->f32 8x8 128x128 tile", 8, "f16", "f32", 128, 128, 32, 4, 2, False),
    ("f16->f32 16x16 64x64 tile", 16, "f16", "f32", 64, 64, 32, 2, 2, False),
]


def kernel(S, tin, tacc, BM, BN, BK, GY, GX, direct, init="ctor"):
    nt = 32 * GY * GX
    fm, fn = BM // GY // S, BN // GX // S
    cm = f"coop_mat{S}x{S}"
    lines = []
    if "f16" in (tin, tacc):
        lines.append("enable f16;")
    lines += ["enable wgpu_cooperative_matrix;",
              "@group(0) @binding(0) var<storage, read> A: array<f32>;",
              "@group(0) @binding(1) var<storage, read> B: array<f32>;",
              f"@group(0) @binding(2) var<storage, read_write> C: array<{tacc}>;",
              "@group(0) @binding(3) var<uniform> dims: vec4<u32>;"]
    if not direct:
        lines += [f"var<workgroup> ta: array<{tin}, {BM * BK}>;",
                  f"var<workgroup> tb: array<{tin}, {BK * BN}>;"]
    lines += [f"@compute @workgroup_size({nt})",
              "fn main(@builtin(workgroup_id) wid: vec3<u32>,"
              " @builtin(local_invocation_index) li: u32) {",
              "  let N = dims.y; let K = dims.z;",
              f"  let m0 = wid.y * {BM}u; let n0 = wid.x * {BN}u;",
              f"  let sg = li / 32u; let wy = sg / {GX}u; let wx = sg % {GX}u;",
              f"  let r0 = m0 + wy * {BM // GY}u; let c0 = n0 + wx * {BN // GX}u;"]
    for i in range(fm):
        for j in range(fn):
            if init == "ctor":
                lines.append(f"  var c{i}_{j} = {cm}<{tacc}, C>();")
            elif init == "decl":
                lines.append(f"  var c{i}_{j}: {cm}<{tacc}, C>;")
            else:       # from the (zeroed) output
                lines.append(f"  var c{i}_{j} = coopLoad<{cm}<{tacc}, C>>("
                             f"&C[(r0 + {i * S}u) * N + c0 + {j * S}u], N);")
    lines.append(f"  for (var k0 = 0u; k0 < K; k0 = k0 + {BK}u) {{")
    if direct:
        lines += [f"    let a = coopLoad<{cm}<f32, A>>(&A[r0 * K + k0], K);",
                  f"    let b = coopLoad<{cm}<f32, B>>(&B[k0 * N + c0], N);",
                  "    c0_0 = coopMultiplyAdd(a, b, c0_0);"]
    else:
        lines += [f"    for (var i = li; i < {BM * BK}u; i = i + {nt}u) {{",
                  f"      let r = i / {BK}u; let c = i % {BK}u;",
                  f"      ta[i] = {tin}(A[(m0 + r) * K + k0 + c]);",
                  "    }",
                  f"    for (var i = li; i < {BK * BN}u; i = i + {nt}u) {{",
                  f"      let r = i / {BN}u; let c = i % {BN}u;",
                  f"      tb[i] = {tin}(B[(k0 + r) * N + n0 + c]);",
                  "    }",
                  "    workgroupBarrier();",
                  f"    for (var kk = 0u; kk < {BK}u; kk = kk + {S}u) {{"]
        for i in range(fm):
            lines.append(f"      let a{i} = coopLoad<{cm}<{tin}, A>>("
                         f"&ta[(wy * {BM // GY}u + {i * S}u) * {BK}u + kk], {BK}u);")
        for j in range(fn):
            lines.append(f"      let b{j} = coopLoad<{cm}<{tin}, B>>("
                         f"&tb[kk * {BN}u + wx * {BN // GX}u + {j * S}u], {BN}u);")
        for i in range(fm):
            for j in range(fn):
                lines.append(f"      c{i}_{j} = coopMultiplyAdd(a{i}, b{j}, c{i}_{j});")
        lines += ["    }", "    workgroupBarrier();"]
    lines.append("  }")
    for i in range(fm):
        for j in range(fn):
            lines.append(f"  coopStore(c{i}_{j}, &C[(r0 + {i * S}u) * N + c0 + {j * S}u], N);")
    lines.append("}")
    return "\n".join(lines), nt


def run_variant(idx, sizes=(512, 4096)):
    import wgpu
    name, S, tin, tacc, BM, BN, BK, GY, GX, direct = VARIANTS[idx]
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    feats = set(adapter.features)
    if "cooperative-matrix" not in feats:
        print(f"{idx} {name}: adapter has no cooperative-matrix")
        return
    want = [f for f in ("cooperative-matrix", "shader-f16", "subgroup") if f in feats]
    dev = adapter.request_device_sync(required_features=want,
                                      required_limits=dict(adapter.limits))
    errors = []
    for init in ("ctor", "decl", "load"):
        src, nt = kernel(S, tin, tacc, BM, BN, BK, GY, GX, direct, init)
        try:
            mod = dev.create_shader_module(code=src)
            pipe = dev.create_compute_pipeline(layout="auto",
                                               compute={"module": mod, "entry_point": "main"})
            break
        except Exception as e:     # noqa: BLE001 -- report any rejection and go on
            errors.append(f"{init}: {type(e).__name__}: {' '.join(str(e).split())[:400]}")
    else:
        print(f"{idx} {name}: REJECTED " + " || ".join(errors))
        return
    name += f" (init {init})"
    out = []
    for n in sizes:
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        if tin == "f16":
            a, b = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
        U = wgpu.BufferUsage
        ba = dev.create_buffer_with_data(data=a, usage=U.STORAGE)
        bb = dev.create_buffer_with_data(data=b, usage=U.STORAGE)
        csize = n * n * (2 if tacc == "f16" else 4)
        bc = dev.create_buffer(size=csize, usage=U.STORAGE | U.COPY_SRC)
        bd = dev.create_buffer_with_data(data=np.array([n, n, n, 0], np.uint32), usage=U.UNIFORM)
        bg = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
            {"binding": i, "resource": {"buffer": x, "offset": 0, "size": x.size}}
            for i, x in enumerate((ba, bb, bc, bd))])

        def go(reps):
            enc = dev.create_command_encoder()
            for _ in range(reps):
                p = enc.begin_compute_pass()
                p.set_pipeline(pipe)
                p.set_bind_group(0, bg)
                p.dispatch_workgroups(n // BN, n // BM, 1)
                p.end()
            dev.queue.submit([enc.finish()])
            dev.queue.read_buffer(bd)       # waits for the work
        go(1)
        got = np.frombuffer(dev.queue.read_buffer(bc),
                            np.float16 if tacc == "f16" else np.float32).reshape(n, n)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        reps = 3 if n <= 1024 else 20
        go(2)
        t0 = time.perf_counter()
        go(reps)
        t = (time.perf_counter() - t0) / reps
        out.append(f"n={n}: max rel err {err:.2e}, {2 * n ** 3 / t / 1e12:.1f} TFLOP/s")
    print(f"{idx} {name}: " + "; ".join(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", type=int)
    ap.add_argument("--print", action="store_true", help="print the WGSL of --variant")
    args = ap.parse_args()
    if args.print:
        print(kernel(*VARIANTS[args.variant][1:])[0])
        return
    if args.variant is not None:
        run_variant(args.variant)
        return
    import wgpu
    ad = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    print("adapter:", ad.info.get("device"), ad.info.get("backend_type"),
          "| cooperative-matrix" if "cooperative-matrix" in ad.features else "| no coop")
    for i in range(len(VARIANTS)):
        try:
            r = subprocess.run([sys.executable, __file__, "--variant", str(i)], timeout=40,
                               capture_output=True, text=True)
            lines = [x for x in (r.stdout + r.stderr).splitlines() if x.strip()]
            print("\n".join(lines[-4:]) if r.returncode == 0 else
                  f"{i} {VARIANTS[i][0]}: process exit {r.returncode}: " + " | ".join(lines[-4:]))
        except subprocess.TimeoutExpired:
            print(f"{i} {VARIANTS[i][0]}: TIMEOUT")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
