"""Row-resident groups (``backend/passes.row_groups``, ``prims/rows.py``): softmax, log_softmax,
logsumexp, layer norms and their gradients as ONE kernel per group where ``Target.row_resident``
allows (the GPU forms, run here on lavapipe through ``runtime.options``), each against real JAX
and NumPy: odd row lengths, batch dims, special values, float16/bfloat16, ``where=`` masks,
``grad``, ``vmap``; the subgroup and workgroup-tree folds; the form is asserted to be chosen
(the plan's kernels), and CPU profiles keep their kernels."""
from __future__ import annotations

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax._src.backend import execute, profiles, runtime
from wjax._src.backend.target import Target
from checks import f16_unsupported, rjax

RS = np.random.RandomState(0)


@pytest.fixture(autouse=True)
def _clear():
    yield
    wjax.clear_caches()


def gpu_forms(subgroups=False, **extra):
    rt = runtime.get()
    sg = subgroups and "subgroup" in rt.features
    return dict(profiles.GPU_FORMS, subgroup_size=8 if sg else None, **extra)


def plan_labels(f, *args):
    """The kernel labels of ``jit(f)``'s plan under the current options."""
    return [getattr(s, "label", "host") for s in wjax.jit(f).lower(*args).compile().plan.steps]


def close(got, want, rtol=2e-5, atol=2e-6):
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)


def layer_norm(m, x, gamma, beta):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / m.sqrt(var + 1e-5) * gamma + beta


def programs(J):
    """name -> function of x (the row-resident groups of ``J``, wjax or jax)."""
    nn, m = J.nn, J.numpy
    return {
        "softmax": lambda x: nn.softmax(x, axis=-1),
        "log_softmax": lambda x: nn.log_softmax(x, axis=-1),
        "logsumexp": lambda x: J.scipy.special.logsumexp(x, axis=-1),
        "standardize": lambda x: nn.standardize(x, axis=-1),
        "layer_norm": lambda x: layer_norm(m, x, m.linspace(0.5, 1.5, x.shape[-1]),
                                           m.linspace(-1.0, 1.0, x.shape[-1])),
    }


SHAPES = [(8, 64), (5, 3), (7, 33), (4, 1000), (3, 4097), (2, 3, 33), (2, 3, 64), (16, 4096),
          (1, 12), (1000,)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("subgroups", [False, True])
def test_one_kernel_matches_jax(shape, subgroups):
    """Each program is ONE row_group kernel (so the row is read once), whatever the row
    length (vec4 units, odd lengths as scalars, rows shorter than a team, several rows per
    workgroup, slots past the row's end), and agrees with JAX and with NumPy in float64."""
    J = rjax()
    x = (RS.randn(*shape) * 3).astype(np.float32)
    ours, theirs = programs(wjax), programs(J)
    rt = runtime.get()
    with rt.options(**gpu_forms(subgroups)):
        for name, f in ours.items():
            labels = plan_labels(f, x)
            assert len(labels) == 1 and labels[0].startswith("row_group("), (name, labels)
            got = wjax.jit(f)(x)
            close([got], [J.jit(theirs[name])(x)], rtol=2e-5, atol=2e-5)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    with rt.options(**gpu_forms(subgroups)):
        got = wjax.jit(ours["softmax"])(x), wjax.jit(ours["logsumexp"])(x)
    close(got, [(e / e.sum(-1, keepdims=True)).astype(np.float32),
                (np.log(e.sum(-1)) + xd.max(-1)).astype(np.float32)], rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("subgroups", [False, True])
def test_special_values(subgroups):
    """NaN rows, inf and -inf entries, rows of all -inf, huge values: JAX's results (NaN
    where JAX has NaN)."""
    J = rjax()
    for n in (7, 64, 4097):
        x = RS.randn(8, n).astype(np.float32)
        x[0, 3] = np.nan
        x[1, 1] = np.inf
        x[2, :] = -np.inf
        x[3, ::2] = -np.inf
        x[4, 2] = 1e30
        x[5, :] = 3.0
        x[6, 0] = -np.inf
        x[7, :] = 1000.0 * np.sign(RS.randn(n))
        ours, theirs = programs(wjax), programs(J)
        with runtime.get().options(**gpu_forms(subgroups)):
            for name in ("softmax", "log_softmax", "logsumexp"):
                got = wjax.jit(ours[name])(x)
                close([got], [J.jit(theirs[name])(x)], rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_floats(dtype):
    """float16 (where the adapter has shader-f16) and bfloat16 rows: scalar units, every
    result rounded as JAX rounds it."""
    J = rjax()
    rt = runtime.get()
    dt = jnp.bfloat16 if dtype == "bfloat16" else np.float16
    x = (RS.randn(6, 72) * 2).astype(np.float32).astype(dt)
    if dtype == "float16" and not rt.has_f16:      # (wgpu's GL backend): TypeError, named
        return f16_unsupported(lambda: wjax.jit(programs(wjax)["softmax"])(x))
    ours, theirs = programs(wjax), programs(J)
    with rt.options(**gpu_forms()):
        for name in ("softmax", "log_softmax", "logsumexp"):
            labels = plan_labels(ours[name], x)
            assert len(labels) == 1 and labels[0].startswith("row_group("), labels
            got = wjax.jit(ours[name])(x)
            close([got], [J.jit(theirs[name])(x)], rtol=2e-2, atol=1e-2)


def test_where_masks():
    """``where=``: the mask is an operand of the group, read at each element."""
    J = rjax()
    x = RS.randn(9, 40).astype(np.float32)
    w = RS.rand(9, 40) > 0.3
    w[4, :] = False
    with runtime.get().options(**gpu_forms()):
        f = lambda x, w: (wjax.nn.softmax(x, where=w), wjax.nn.log_softmax(x, where=w))  # noqa
        labels = plan_labels(f, x, w)
        assert sum(lab.startswith("row_group(") for lab in labels) >= 1, labels
        got = wjax.jit(f)(x, w)
    want = (J.nn.softmax(x, where=w), J.nn.log_softmax(x, where=w))
    close(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("subgroups", [False, True])
def test_gradients(subgroups):
    """grad of softmax, log_softmax, logsumexp and a layer norm: the backward pass's row
    reductions (three stages for softmax: max, sum, the cotangent's sum) in one kernel."""
    J = rjax()
    x = RS.randn(12, 96).astype(np.float32)
    w = RS.randn(12, 96).astype(np.float32)
    for name in ("softmax", "log_softmax", "logsumexp", "layer_norm"):
        fo, ft = programs(wjax)[name], programs(J)[name]
        go = wjax.grad(lambda v, w: jnp.sum(fo(v) * (w if name != "logsumexp" else w[:, 0])))
        gt = J.grad(lambda v, w: J.numpy.sum(ft(v) * (w if name != "logsumexp" else w[:, 0])))
        with runtime.get().options(**gpu_forms(subgroups)):
            labels = plan_labels(go, x, w)
            assert labels and labels[0].startswith("row_group("), (name, labels)
            assert len(labels) <= 2, (name, labels)
            got = wjax.jit(go)(x, w)
            eager = go(x, w)
        want = J.jit(gt)(x, w)
        close([got, eager], [want, want], rtol=1e-4, atol=1e-5)


def test_vmap_and_batch_dims():
    """vmap over a leading and a middle axis, axis=-1 of 3-D and 4-D inputs."""
    J = rjax()
    x = RS.randn(4, 6, 50).astype(np.float32)
    with runtime.get().options(**gpu_forms()):
        got = [wjax.jit(wjax.vmap(wjax.nn.softmax))(x),
               wjax.jit(wjax.vmap(wjax.nn.log_softmax, in_axes=1))(x),
               wjax.jit(lambda a: wjax.nn.softmax(a.reshape(2, 2, 6, 50)))(x)]
        assert len(plan_labels(wjax.vmap(wjax.nn.softmax), x)) == 1
    want = [J.vmap(J.nn.softmax)(x), J.vmap(J.nn.log_softmax, in_axes=1)(x),
            J.nn.softmax(x.reshape(2, 2, 6, 50))]
    close(got, want)


def test_other_layouts():
    """Reductions over the two trailing axes (vec4 units across a dim boundary, scalar where
    an operand needs the column), a causal mask from iotas (the column index: scalar units),
    a per-row bias read at the row, a per-column scale (vec4 loads along the row), and the
    softmax of a vector under grad."""
    J = rjax()
    x = RS.randn(4, 6, 8).astype(np.float32)
    y = RS.randn(3, 5, 7).astype(np.float32)
    s = RS.randn(16, 16).astype(np.float32)
    b = RS.randn(16).astype(np.float32)
    v = RS.randn(1000).astype(np.float32)

    def progs(J, x, y, s, b, v):
        m = J.numpy
        causal = m.arange(16)[None, :] <= m.arange(16)[:, None]
        return (J.nn.softmax(x, axis=(1, 2)), J.nn.log_softmax(y, axis=(-2, -1)),
                J.nn.softmax(s, where=causal), J.nn.softmax(s + b[:, None]),
                J.nn.softmax(s * m.linspace(0.0, 2.0, 16)),
                J.grad(lambda v: m.sum(J.nn.softmax(v) * m.arange(1000.0)))(v))
    with runtime.get().options(**gpu_forms()):
        f = lambda *a: progs(wjax, *a)           # noqa: E731
        labels = plan_labels(f, x, y, s, b, v)
        # (the three softmaxes of ``s`` share one kernel: one group per shape and axes)
        assert len(labels) == 4 and all(lab.startswith("row_group(") for lab in labels), labels
        got = wjax.jit(f)(x, y, s, b, v)
    close(got, J.jit(lambda *a: progs(J, *a))(x, y, s, b, v), rtol=2e-5, atol=2e-6)


def test_groups_around_other_kernels():
    """Attention: softmax of a product, whose result feeds another product and a second
    softmax -- a group's output read by a kernel whose result another group reads (two
    groups, never one with a cycle); a lone row sum stays a reduction; a softmax over axis 0
    and rows longer than ``row_resident`` keep the old kernels."""
    J = rjax()
    q, k, v = (RS.randn(32, 16).astype(np.float32) for _ in range(3))

    def attn(m, q, k, v):
        p = m.nn.softmax(q @ k.T / 4.0, axis=-1)
        o = p @ v
        return m.nn.softmax(o @ o.T, axis=-1) @ v, o.sum(-1)
    with runtime.get().options(**gpu_forms(attention=0)):    # (else: attention kernels)
        labels = plan_labels(lambda *a: attn(wjax, *a), q, k, v)
        assert sum(lab.startswith("row_group(") for lab in labels) == 2, labels
        got = wjax.jit(lambda *a: attn(wjax, *a))(q, k, v)
        x = RS.randn(40, 24).astype(np.float32)
        assert not any(lab.startswith("row_group(") for lab in
                       plan_labels(lambda a: wjax.nn.softmax(a, axis=0), x))
        assert not any(lab.startswith("row_group(") for lab in plan_labels(
            lambda a: a.sum(-1), x))
        s0 = wjax.jit(lambda a: wjax.nn.softmax(a, axis=0))(x)
    with runtime.get().options(**gpu_forms(row_resident=16)):
        assert not any(lab.startswith("row_group(") for lab in
                       plan_labels(lambda a: wjax.nn.softmax(a), x))
        s1 = wjax.jit(wjax.nn.softmax)(x)
    with runtime.get().options(**gpu_forms(row_resident=24)):
        assert plan_labels(lambda a: wjax.nn.softmax(a), x)[0].startswith("row_group(")
    close(got, J.jit(lambda *a: attn(J, *a))(q, k, v), rtol=1e-4, atol=1e-5)
    close([s0, s1], [J.nn.softmax(x, axis=0), J.nn.softmax(x)])


def test_the_targets_forms():
    """What each profile's lowering emits for the issue's softmax (8192 x 4096 float32): on
    ``nvidia`` one kernel, a workgroup of 256 per row (8192 workgroups), vec4 loads,
    subgroup shuffles; ``webgpu-default`` (no subgroups) the same with a workgroup tree; rows
    of 1024 a workgroup of 64 each with subgroups, four a workgroup of 256 without;
    ``lavapipe`` (CPU forms) keeps its three kernels."""
    def steps(f, shape, profile):
        closed = wjax.make_jaxpr(f)(wjax.ShapeDtypeStruct(shape, np.float32))
        return execute.Executable(closed.jaxpr, Target.for_profile(profile)).plan.steps
    soft = lambda a: wjax.nn.softmax(a, axis=-1)      # noqa: E731
    for profile, sg in (("nvidia", True), ("webgpu-default", False)):
        (k,) = steps(soft, (8192, 4096), profile)
        assert k.label.startswith("row_group(") and k.grid[0] * k.grid[1] == 8192
        assert "@workgroup_size(256)" in k.wgsl and "array<vec4<f32>>" in k.wgsl
        assert ("subgroupShuffleXor" in k.wgsl) == sg
        assert k.wgsl.count("workgroupBarrier()") == (2 if sg else 18)   # 2 stages
        assert len(steps(lambda a: wjax.nn.standardize(a), (4096, 1024), profile)) == 1
        # rows of 1024 (attention's scores): 64 threads a row; with subgroups a workgroup
        # of its own (shuffles and one barrier a stage), else 4 rows a workgroup (a tree)
        (k,) = steps(soft, (8192, 1024), profile)
        assert k.grid[0] * k.grid[1] == (8192 if sg else 2048)
        assert (f"@workgroup_size({64 if sg else 256})") in k.wgsl
        assert ("subgroupShuffleXor" in k.wgsl) == sg
        assert k.wgsl.count("workgroupBarrier()") == (2 if sg else 14)
    assert Target.for_profile("lavapipe").row_resident == 0
    assert len(steps(soft, (256, 512), "lavapipe")) == 3
    with runtime.get().options(**profiles.CPU_FORMS):
        assert not any(lab.startswith("row_group(") for lab in
                       plan_labels(soft, np.ones((8, 64), np.float32)))


def test_binding_limits():
    """A group reading more buffers through its fused operands than the device binds: the
    operand is split into a kernel of its own (as for any kernel) and the group stays one
    kernel; a group that cannot fit is not formed."""
    xs = [RS.randn(4, 32).astype(np.float32) for _ in range(4)]
    f = lambda a, b, c, d: wjax.nn.softmax(a + b * c - d)      # noqa: E731
    closed = wjax.make_jaxpr(f)(*xs)
    for n in (4, 8):
        t = Target.for_profile("nvidia", limits={"max-storage-buffers-per-shader-stage": n})
        labels = [s.label for s in execute.Executable(closed.jaxpr, t).plan.steps]
        assert (len(labels) > 1) == (n == 4) and labels[-1].startswith("row_group("), labels
    t = Target.for_profile("nvidia", limits={"max-storage-buffers-per-shader-stage": 3})
    g = lambda a: (wjax.nn.softmax(a), wjax.nn.log_softmax(a))        # noqa: E731
    labels = [s.label for s in execute.Executable(wjax.make_jaxpr(g)(xs[0]).jaxpr,
                                                  t).plan.steps]
    assert not any(lab.startswith("row_group(") for lab in labels), labels
    with runtime.get().options(**gpu_forms()):
        got = wjax.jit(f)(*xs)
    a, b, c, d = xs
    e = np.exp((a + b * c - d) - (a + b * c - d).max(-1, keepdims=True))
    close([got], [e / e.sum(-1, keepdims=True)])


def test_the_primitive_is_its_body():
    """A ``row_group`` equation only exists inside the lowering; bound by hand it runs its
    kernel eagerly (any target), and its reference, derivative and batched form are its
    body's."""
    from wjax._src.backend import passes
    from wjax._src.prims.rows import row_group_p
    from wjax._src.transforms.dce import dce_jaxpr
    x = RS.randn(4, 16).astype(np.float32)
    j = dce_jaxpr(passes.cse_and_fold(wjax.make_jaxpr(wjax.nn.softmax)(x).jaxpr))[0]
    (e,) = passes.row_groups(j, Target.for_profile("nvidia")).eqns
    assert e.prim is row_group_p and passes.row_groups(j, Target.for_profile("lavapipe")) is j
    body = e.params["jaxpr"]
    f = lambda a: row_group_p.bind(a, jaxpr=body)[0]      # noqa: E731
    w = np.arange(16.0, dtype=np.float32)
    xb = np.stack([x, 2 * x])
    close([f(x), row_group_p.reference(x, jaxpr=body)[0],
           wjax.grad(lambda a: jnp.sum(f(a) * w))(x), wjax.vmap(f)(xb)],
          [wjax.nn.softmax(x), wjax.nn.softmax(x),
           wjax.grad(lambda a: jnp.sum(wjax.nn.softmax(a) * w))(x), wjax.vmap(wjax.nn.softmax)(xb)])
