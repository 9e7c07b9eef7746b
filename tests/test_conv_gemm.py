"""Convolutions on GPU targets: im2col onto the matmul kernel (``prims/conv.py``,
``_im2col_decompose``, chosen at lowering where ``Target.matmul == "tiled"``).

Each case runs here (lavapipe) under the GPU strategies (``profiles.GPU_STRATEGIES``) against
the NumPy reference rule and real JAX, forward and ``grad`` with respect to both operands (the
transposes bind convolutions with lhs dilation, swapped dimensions and feature/batch groups,
which take the same path); the lowered programs hold the matmul kernel under the GPU
strategies and lavapipe's direct convolution kernel under its own."""
from __future__ import annotations

import numpy as np
import pytest
from checks import assert_same, rjax

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax._src.backend import execute, passes, profiles, runtime
from wjax._src.backend.target import Target
from wjax._src.prims import conv as CV
from wjax._src.transforms.dce import dce_jaxpr

F = np.float32

CASES = {
    "same": dict(ls=(2, 3, 9, 8), rs=(4, 3, 3, 3), strides=(1, 1), padding="SAME"),
    "valid-strides": dict(ls=(2, 3, 11, 9), rs=(8, 3, 3, 2), strides=(2, 3), padding="VALID"),
    "explicit-pad-dilations": dict(ls=(2, 4, 9, 8), rs=(8, 4, 3, 2), strides=(2, 1),
                                   padding=[(1, 2), (0, -1)], ld=(2, 1), rd=(1, 2)),
    "feature-groups": dict(ls=(2, 6, 7, 8), rs=(9, 2, 3, 3), strides=(1, 1), padding="SAME",
                           fgc=3),
    "batch-groups": dict(ls=(6, 4, 7, 8), rs=(9, 4, 3, 3), strides=(1, 1), padding="SAME",
                         bgc=3),
    "nhwc": dict(ls=(2, 9, 8, 4), rs=(3, 3, 4, 8), strides=(1, 1), padding="SAME",
                 dn=("NHWC", "HWIO", "NHWC")),
    "nhwc-in-nchw-out": dict(ls=(2, 9, 8, 4), rs=(8, 4, 3, 3), strides=(2, 2), padding="SAME",
                             dn=("NHWC", "OIHW", "NCHW")),
    "1x1": dict(ls=(2, 4, 9, 8), rs=(8, 4, 1, 1), strides=(1, 1), padding="VALID"),
    "1x1-strided-nhwc": dict(ls=(2, 9, 8, 4), rs=(1, 1, 4, 8), strides=(2, 2), padding="VALID",
                             dn=("NHWC", "HWIO", "NHWC")),
    "1d-groups-dilations": dict(ls=(2, 4, 9), rs=(6, 2, 3), strides=(2,), padding=[(2, 1)],
                                fgc=2, rd=(2,), ld=(2,)),
    "1d-batch-groups-negative-pad": dict(ls=(4, 2, 7), rs=(4, 2, 3), strides=(1,),
                                         padding=[(-1, 2)], bgc=2),
    "3d": dict(ls=(1, 2, 5, 4, 4), rs=(4, 2, 2, 3, 2), strides=(2, 1, 1), padding="SAME"),
    "window-as-big-as-the-input": dict(ls=(3, 4, 12, 12), rs=(4, 4, 12, 12), strides=(1, 1),
                                       padding=[(1, 1), (1, 1)]),
}


def _kw(case):
    return dict(lhs_dilation=case.get("ld"), rhs_dilation=case.get("rd"),
                dimension_numbers=case.get("dn"), feature_group_count=case.get("fgc", 1),
                batch_group_count=case.get("bgc", 1))


def _operands(case):
    rng = np.random.default_rng(0)
    return (rng.standard_normal(case["ls"]).astype(F),
            rng.standard_normal(case["rs"]).astype(F))


def _conv(mod, case):
    kw = _kw(case)
    return lambda a, b: mod.lax.conv_general_dilated(a, b, case["strides"], case["padding"],
                                                     **kw)


def _loss(mod, case, ct):
    conv = _conv(mod, case)
    return lambda a, b: (conv(a, b) * ct).sum()


def _labels(f, *args, target=None):
    closed = wjax.make_jaxpr(f)(*args)
    target = target or runtime.get().target()
    return [s.label for s in execute.Executable(closed.jaxpr, target).plan.steps
            if hasattr(s, "label")]


def _under_gpu_strategies(fn, **options):
    rt = runtime.get()
    wjax.clear_caches()
    try:
        with rt.options(**dict(profiles.GPU_STRATEGIES, **options)):
            return fn()
    finally:
        wjax.clear_caches()


@pytest.mark.parametrize("name", list(CASES))
def test_forward_and_grads_against_reference_and_jax(name):
    jax = rjax()
    case = CASES[name]
    x, w = _operands(case)
    ct = np.random.default_rng(1).standard_normal(
        np.shape(jax.eval_shape(_conv(jax, case), x, w))).astype(F)

    def run():
        got = wjax.jit(_conv(wjax, case))(x, w)
        grads = wjax.jit(wjax.grad(_loss(wjax, case, ct), argnums=(0, 1)))(x, w)
        labels = _labels(_conv(wjax, case), x, w)
        return np.asarray(got), [np.asarray(g) for g in grads], labels

    got, grads, labels = _under_gpu_strategies(run)
    assert not any(lb.startswith("conv_general_dilated") for lb in labels), labels
    assert any(lb.startswith("dot_general") for lb in labels), labels
    eqn = wjax.make_jaxpr(_conv(wjax, case))(x, w).jaxpr.eqns[-1]
    assert_same(got, CV.conv_general_dilated_p.reference(x, w, **eqn.params), 1e-4, 1e-4)
    assert_same(got, np.asarray(_conv(jax, case)(x, w)), 1e-4, 1e-4)
    want = jax.grad(_loss(jax, case, ct), argnums=(0, 1))(x, w)
    for g, v in zip(grads, want):
        assert_same(g, np.asarray(v), 1e-4, 1e-4)


def _products(f, *args):
    """(label, reads its patches through a reader function) of each matmul kernel of ``f``,
    and the number of other kernels labelled as a product (the operand copies)."""
    closed = wjax.make_jaxpr(f)(*args)
    steps = [s for s in execute.Executable(closed.jaxpr, runtime.get().target()).plan.steps
             if getattr(s, "label", "").startswith("dot_general")]
    products = [(s.label, "fn wj_rd" in s.wgsl) for s in steps if "var<workgroup> As" in s.wgsl]
    return products, len(steps) - len(products)


# shapes whose products take the tiled kernel (the cases above are small enough for the
# generic one, whose loads always read through the operands' producers)
TILED = {
    "same": dict(ls=(2, 16, 20, 20), rs=(16, 16, 3, 3), strides=(1, 1), padding="SAME"),
    "strides-dilations": dict(ls=(2, 12, 23, 21), rs=(24, 12, 3, 2), strides=(2, 1),
                              padding=[(1, 2), (0, -1)], ld=(1, 2), rd=(2, 1)),
    "nhwc": dict(ls=(2, 18, 17, 12), rs=(3, 3, 12, 20), strides=(1, 1), padding="SAME",
                 dn=("NHWC", "HWIO", "NHWC")),
    "feature-groups": dict(ls=(2, 16, 15, 16), rs=(24, 4, 3, 3), strides=(1, 1),
                           padding="SAME", fgc=4),
    "1d": dict(ls=(4, 16, 130), rs=(20, 16, 5), strides=(1,), padding="VALID"),
    "3d": dict(ls=(2, 8, 9, 8, 8), rs=(16, 8, 3, 3, 2), strides=(1, 1, 1), padding="SAME"),
}


def _products(f, *args):
    """(label, reads an operand through a reader function) of each tiled matmul kernel of
    ``f``, and the labels of the operand copies that gather (the patches)."""
    closed = wjax.make_jaxpr(f)(*args)
    steps = [s for s in execute.Executable(closed.jaxpr, runtime.get().target()).plan.steps
             if getattr(s, "label", "").startswith("dot_general")]
    products = [(s.label, "fn wj_rd" in s.wgsl) for s in steps if "var<workgroup> As" in s.wgsl]
    return products, [s.label for s in steps
                      if "var<workgroup> As" not in s.wgsl and "gather" in s.label]


@pytest.mark.parametrize("name", list(TILED))
def test_the_product_reads_the_patches_implicit_gemm(name):
    """Under the GPU strategies (``operand_reads="inline"``) a convolution whose output
    features fit in two of the matmul's tiles never writes its patch matrix: the tiled
    kernel's loads gather the patches from the input (``dot._inline_operand``), in the
    forward and both gradients; ``operand_reads="copy"`` copies them first (one more kernel a
    product, explicit im2col).  Both against real JAX."""
    jax = rjax()
    case = TILED[name]
    x, w = _operands(case)
    ct = np.random.default_rng(1).standard_normal(
        np.shape(jax.eval_shape(_conv(jax, case), x, w))).astype(F)
    fwd, grad = _conv(wjax, case), wjax.grad(_loss(wjax, case, ct), argnums=(0, 1))
    want = [np.asarray(_conv(jax, case)(x, w))] + [
        np.asarray(g) for g in jax.grad(_loss(jax, case, ct), argnums=(0, 1))(x, w)]
    for reads in ("inline", "copy"):
        def run():
            got = [wjax.jit(fwd)(x, w), *wjax.jit(grad)(x, w)]
            return [np.asarray(g) for g in got], _products(fwd, x, w), _products(grad, x, w)
        # (a forced tile: small products are tuned, and may take register blocks)
        got, *plans = _under_gpu_strategies(run, operand_reads=reads, matmul_tile="64x64x16")
        for g, v in zip(got, want):
            assert_same(g, v, 1e-4, 1e-4)
        for products, copies in plans:
            gathers = [r for label, r in products if "gather" in label]
            if reads == "inline":
                assert gathers and all(gathers) and not copies, (products, copies)
            else:
                assert copies and not any(r for _, r in products), (products, copies)


@pytest.mark.parametrize("name", ["nhwc", "same"])
def test_a_layer_is_one_kernel(name):
    """A layer, ``relu(conv(x, w) + b)``, is one kernel under the GPU strategies: the bias and
    relu are the product's epilogue and the product itself, read by nothing else, is not
    stored.  Channels-last (flax's and haiku's layout), the decomposition's transposes cancel
    and the epilogue finds the product at its own coordinates (``lower._same_position``);
    channels-first, the product's rows are (batch, positions) and its columns the features,
    and the epilogue stores the layer's output transposed, where it belongs
    (``KernelContext._transposed_position``).  The input gradient likewise stores its
    product in the input's layout (no transposing kernel after it).  Against real JAX,
    forward and ``value_and_grad``."""
    jax = rjax()
    case = dict(TILED[name], dn=("NHWC", "HWIO", "NHWC") if name == "nhwc" else None)
    x, w = _operands(case)
    feat = case["rs"][-1 if name == "nhwc" else 0]
    b = np.random.default_rng(2).standard_normal(feat).astype(F)
    if name != "nhwc":
        b = b[:, None, None]

    def layer(mod):
        conv = _conv(mod, case)
        return lambda x, w, b: mod.numpy.maximum(conv(x, w) + b, 0)

    def loss(mod):
        return lambda w, x, b: (layer(mod)(x, w, b) ** 2).sum()
    vg = wjax.value_and_grad(loss(wjax), argnums=(0, 1, 2))

    def run():
        fwd = wjax.jit(layer(wjax))
        kernels = fwd.lower(x, w, b).as_text().split("// ---- kernel")[1:]
        return (np.asarray(fwd(x, w, b)), wjax.jit(vg)(w, x, b), kernels,
                _labels(vg, w, x, b))
    got, (val, grads), kernels, labels = _under_gpu_strategies(run, matmul_tile="64x64x16")
    assert len(kernels) == 1 and kernels[0].count("read_write>") == 1, kernels
    assert "fused(transpose)" not in labels, labels        # (the weights' flip is one)
    assert_same(got, np.asarray(layer(jax)(x, w, b)), 1e-4, 1e-4)
    want = jax.value_and_grad(loss(jax), argnums=(0, 1, 2))(w, x, b)
    assert_same(np.asarray(val), np.asarray(want[0]), 1e-4, 1e-4)
    for g, v in zip(grads, want[1]):       # (sums of ~600 terms: a scale for the zeros)
        v = np.asarray(v)
        assert_same(np.asarray(g), v, 1e-4, 1e-5 * np.abs(v).max())


def test_int_and_preferred_element_type_under_gpu_strategies():
    jax = rjax()
    x = np.arange(2 * 3 * 7 * 6, dtype=np.int32).reshape(2, 3, 7, 6) % 11 - 5
    w = np.arange(4 * 3 * 3 * 3, dtype=np.int32).reshape(4, 3, 3, 3) % 7 - 3
    xb, wb = x.astype(np.int8), w.astype(np.int8)

    def run():
        return (np.asarray(lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), (1, 2),
                                                    "SAME")),
                np.asarray(lax.conv_general_dilated(jnp.asarray(xb), jnp.asarray(wb), (1, 1),
                                                    "VALID", preferred_element_type=np.int32)))
    a, b = _under_gpu_strategies(run)
    assert_same(a, np.asarray(jax.lax.conv_general_dilated(x, w, (1, 2), "SAME")), 0, 0)
    assert_same(b, np.asarray(jax.lax.conv_general_dilated(
        xb, wb, (1, 1), "VALID", preferred_element_type=np.int32)), 0, 0)


def test_chunks_bound_the_patch_matrix(monkeypatch):
    """A patch matrix over the cap is built and multiplied a chunk of the batch at a time, or
    (one batch element over the cap) a block of output rows at a time."""
    jax = rjax()
    case = dict(ls=(4, 3, 10, 9), rs=(8, 3, 3, 3), strides=(1, 1), padding="SAME")
    x, w = _operands(case)
    want = np.asarray(_conv(jax, case)(x, w))
    per_n = 4 * 3 * 9 * 10 * 9                      # bytes of one batch element's patches
    for cap, dots in ((2 * per_n, 2), (per_n // 3, 4 * 4)):
        monkeypatch.setattr(CV, "CONV_PATCH_BYTES", cap)
        labels, got = _under_gpu_strategies(lambda: (
            _labels(_conv(wjax, case), x, w), np.asarray(wjax.jit(_conv(wjax, case))(x, w))))
        assert sum(lb.startswith("dot_general(gather") for lb in labels) == dots, labels
        assert_same(got, want, 1e-4, 1e-4)


def test_weight_gradient_splits_its_long_contraction():
    """The weight gradient (few outputs, a contraction over batch x positions) runs as a
    product with the contraction cut into parts as a batch axis, then a sum."""
    jax = rjax()
    case = dict(ls=(4, 8, 40, 40), rs=(8, 8, 3, 3), strides=(1, 1), padding="SAME")
    x, w = _operands(case)
    ct = np.random.default_rng(1).standard_normal((4, 8, 40, 40)).astype(F)
    f = lambda b: _loss(wjax, case, ct)(x, b)               # noqa: E731
    closed = wjax.make_jaxpr(wjax.grad(f))(w)
    target = Target.for_profile("nvidia")
    flat, _ = passes.flatten_closed(closed, target)
    flat, _ = dce_jaxpr(flat)        # (make_jaxpr(grad) keeps the unused forward, as JAX's)
    dots = [e for e in flat.eqns if e.prim.name == "dot_general"]
    assert len(dots) == 1 and len(dots[0].params["dimension_numbers"][1][0]) == 1
    assert any(e.prim.name == "reduce_sum" for e in flat.eqns)
    got = _under_gpu_strategies(lambda: np.asarray(wjax.jit(wjax.grad(f))(w)))
    want = np.asarray(jax.grad(lambda b: _loss(jax, case, ct)(x, b))(w))
    # 6400-term float32 sums: both round at about 1e-6 of the largest entry
    assert_same(got, want, 1e-4, 1e-5 * np.abs(want).max())


def test_gpu_targets_use_the_matmul_kernel_and_lavapipe_its_direct_kernel():
    x = np.ones((2, 8, 12, 12), F)
    w = np.ones((8, 8, 3, 3), F)
    f = lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME")   # noqa: E731
    for name in ("nvidia", "webgpu-default"):
        labels = _labels(f, x, w, target=Target.for_profile(name))
        assert any(lb.startswith("dot_general(gather") for lb in labels), labels
        assert not any(lb.startswith("conv_general_dilated") for lb in labels), labels
    gpu = _under_gpu_strategies(lambda: _labels(f, x, w))
    assert any(lb.startswith("dot_general") for lb in gpu), gpu
    assert not any(lb.startswith("conv_general_dilated") for lb in gpu), gpu
    rt = runtime.get()
    if rt.target().matmul != "vec4":
        pytest.skip(f"not a CPU adapter: {rt.describe()}")
    cpu = _labels(f, x, w)
    assert cpu and all(lb.startswith("conv_general_dilated") for lb in cpu), cpu
    # the jaxpr is the same everywhere: one conv_general_dilated, as JAX binds
    assert [e.prim.name for e in wjax.make_jaxpr(f)(x, w).jaxpr.eqns] == ["conv_general_dilated"]
