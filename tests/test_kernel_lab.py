"""bench/kernel_lab.py's kernel variants (a GPU run's diagnosis of where a kernel's time goes):
each swap of a driver-proof helper for the WGSL builtin it stands in for finds the helper in
the row-resident softmax kernel (GPU forms), compiles, and still computes softmax (within the
builtins' looser error) on the same buffers."""
from __future__ import annotations

import re

import numpy as np

from checks import load_script

import wjax
from wjax._src.backend import profiles, runtime


def _lab():
    return load_script("bench/kernel_lab.py", "kernel_lab")


def test_swapped_helpers_compile_and_compute_softmax():
    lab = _lab()
    rt = runtime.get()
    x = np.random.RandomState(0).randn(32, 256).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    with rt.options(**dict(profiles.GPU_STRATEGIES, spin_wait_us=0)):
        disp, out = lab.capture(rt, lambda a: wjax.nn.softmax(a, axis=-1),
                                (wjax.device_put(x),))
        assert [d[4] for d in disp] == ["row_group(exp,sub,max,div,reduce_max,reduce_sum)"]
        wgsl, bufs, grid, ranges, _ = disp[0]
        np.testing.assert_allclose(np.asarray(out), want, rtol=2e-6, atol=1e-7)
        (k,) = [int(i) for i in re.findall(r"read_write> b(\d+)", wgsl)]

        def result():               # the output buffer itself (the array keeps its host copy)
            return np.frombuffer(rt.read(bufs[k], x.nbytes), np.float32).reshape(x.shape)
        variants = [v(wgsl) for v in lab.VARIANTS.values()]
        variants.append(lab.all_swapped(wgsl))
        for src in variants + [lab.replace_fn(wgsl, "wj_div", "  return a * 0.5;")]:
            assert src != wgsl
            rt.zero(bufs[k])
            rt.dispatch(src, bufs, grid, ranges)
            rt.synchronize()
            scale = 1.0 if src in variants else 0.5 * e.sum(1, keepdims=True)  # a * 0.5
            np.testing.assert_allclose(result(), want * scale, rtol=1e-5, atol=1e-7)
        assert "wj_div(" in wgsl and lab.replace_fn(wgsl, "wj_div", "  return a / b;").count(
            "return a / b;") == 1
        ts = lab.profiler.time_dispatches(rt, [(variants[-1], bufs, grid, ranges)])
        assert len(ts) == 1 and ts[0] > 0


def test_written_out_slab_loop_and_other_checks_compute_the_product():
    """The tiled matmul, lowered with its slab loop written out (kk a constant in each of the
    BK steps), and compiled under wgpu's other shader checks, writes the product."""
    lab = _lab()
    rt = runtime.get()
    rs = np.random.RandomState(1)
    a, b = rs.randn(96, 80).astype(np.float32), rs.randn(80, 72).astype(np.float32)
    with rt.options(**dict(profiles.GPU_STRATEGIES, spin_wait_us=0, matmul_tile="64x64x16")):
        disp, out = lab.capture(rt, lambda x, y: x @ y,
                                (wjax.device_put(a), wjax.device_put(b)))
        (wgsl, bufs, grid, ranges, label), = disp
        assert label == "dot_general" and "for (var kk" not in wgsl
        assert wgsl.count("let kk = 15u;") == 1 and "let kk = 16u;" not in wgsl
        (k,) = [int(i) for i in re.findall(r"read_write> b(\d+)", wgsl)]
        srcs = [wgsl]
        for mode in lab.CHECKS.values():
            srcs.append(f"{wgsl}\n// checks {mode}\n")
            with rt.options(shader_checks=mode):
                rt.pipeline(srcs[-1])
        for src in srcs:
            rt.zero(bufs[k])
            rt.dispatch(src, bufs, grid, ranges)
            got = np.frombuffer(rt.read(bufs[k], 96 * 72 * 4), np.float32).reshape(96, 72)
            np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
