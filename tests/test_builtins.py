"""Kernels call only the WGSL builtins whose accuracy the WGSL spec pins down.

The spec leaves the transcendental builtins loose (``sin``/``cos``: an absolute 2^-11 on
[-pi, pi]; ``exp``/``exp2``: 3 + 2|x| ulp; ``log``: an absolute 2^-21 near 1; ``tan``, ``pow``
and the hyperbolics inherit from their formulas), and NVIDIA's Vulkan driver gives exactly that
(``sin(1e-7) = 0``).  So every kernel computes its math with wjax's own helpers
(``wjax/_src/backend/wgsl_math.py``) and may call a builtin only if it is in
``wgsl_math.ALLOWED_BUILTINS``.  This test reads the WGSL of every registered helper, every
shader template, the kernels lowered for every primitive's records in ``tests/test_ops.py``,
and the kernels a set of programs (control flow, random, special functions, FFT, sorts,
decompositions) compiles, and fails on any call of a function that is neither defined in the
text, nor a wjax helper, nor an allowed builtin.
"""
from __future__ import annotations

import re
from importlib import resources

import numpy as np
import pytest

import wjax
import wjax.numpy as jnp
from wjax import lax
from wjax.scipy import special
from wjax._src.backend import execute, runtime
from wjax._src.backend import wgsl as W
from wjax._src.backend.wgsl_math import ALLOWED_BUILTINS
from wjax._src.core.primitive import REGISTRY

# an identifier followed by "(": not a member, not an attribute (@binding(0)); a type with a
# template list (vec2<f32>(...), bitcast<u32>(...), array<f32, 4>(...)) ends in ">", not in
# an identifier, so it never matches
_CALL = re.compile(r"(?<![\w@.])([A-Za-z_]\w*)\s*\(")
_KEYWORDS = {"if", "for", "while", "loop", "switch", "return", "else", "let", "var", "fn"}
# value constructors and conversions (exact, or rounded to nearest as a conversion must be)
_TYPES = {"f32", "f16", "i32", "u32", "bool", "vec2", "vec3", "vec4", "mat2x2", "mat3x3",
          "mat4x4", "array", "vec2f", "vec3f", "vec4f", "vec2i", "vec3i", "vec4i", "vec2u",
          "vec3u", "vec4u", "vec2h", "vec3h", "vec4h"}


def _helper_fns() -> set:
    names = set(W.HELPERS)
    for src in W.HELPERS.values():
        names |= set(re.findall(r"\bfn\s+(\w+)", src))
    return names


def builtin_calls(src: str, known=frozenset()) -> set:
    """The functions ``src`` calls that it does not define and ``known`` does not name:
    builtins (comments skipped)."""
    src = re.sub(r"//[^\n]*", "", src)
    defined = set(re.findall(r"\bfn\s+(\w+)", src)) | set(re.findall(r"\bstruct\s+(\w+)", src))
    skip = defined | _KEYWORDS | _TYPES | set(known)
    return {m for m in _CALL.findall(src) if m not in skip}


def disallowed(src: str, known=frozenset()) -> set:
    return {b for b in builtin_calls(src, known) if b not in ALLOWED_BUILTINS}


# ---------------------------------------------------------------------------- the checker


def test_checker_flags_a_loose_builtin():
    kernel = """
fn wj_mine(x: f32) -> f32 { return wj_other(x) + sin(x); }
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let v = vec2<f32>(f32(g.x), bitcast<f32>(1u));   // exp(x) in a comment is no call
  out[g.x] = wj_mine(v.x) * exp2 (v.y) + abs(v.x) + array<f32, 2>(1.0, 2.0)[0];
}"""
    assert builtin_calls(kernel, {"wj_other"}) == {"sin", "exp2", "abs"}
    assert disallowed(kernel, {"wj_other"}) == {"sin", "exp2"}
    # an unknown name is not a helper: it counts as a call of something unvetted
    assert disallowed("fn f() -> f32 { return wj_nope(1.0); }") == {"wj_nope"}


def test_allow_list_gives_each_builtin_its_bound():
    loose = {"sin", "cos", "tan", "exp", "exp2", "log", "log2", "pow", "sinh", "cosh", "tanh",
             "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh"}
    assert not loose & set(ALLOWED_BUILTINS)
    for name, bound in ALLOWED_BUILTINS.items():
        assert isinstance(bound, str) and bound, name


# ---------------------------------------------------------------------------- the kernels


def _record_kernels():
    """(where, wgsl) of the kernels lowered for every record of tests/test_ops.py."""
    import test_ops
    target = runtime.get().target()
    out = []
    for name, rec in sorted(test_ops.RECORDS.items()):
        prim = REGISTRY[name]
        for case in rec.cases():
            args = [np.asarray(a) for a in case.args]
            closed = wjax.make_jaxpr(lambda *a: prim.bind(*a, **case.params))(*args)
            plan = execute.Executable(closed.jaxpr, target).plan
            out += [(f"{name}[{case.label}]", s.wgsl) for s in plan.steps]
    return out


_X = np.linspace(-3.0, 3.0, 24, dtype=np.float32).reshape(4, 6)
_P = np.linspace(0.05, 0.95, 24, dtype=np.float32).reshape(4, 6)
_C = (_X + 1j * _X[::-1]).astype(np.complex64)
_KEY = wjax.random.key(0)

# programs whose kernels the records do not reach: control flow (sub-plans run by host steps),
# samplers, special functions composed of several primitives, FFT sizes, sorts, decompositions
PROGRAMS = {
    "fori_loop": (lambda a: lax.fori_loop(0, 5, lambda i, c: c * 0.9 + jnp.sin(c), a), (_X,)),
    "while_loop": (lambda a: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, jnp.exp(
        c[1]) * 0.1), (0, a))[1], (_X,)),
    "scan": (lambda a: lax.scan(lambda c, r: (jnp.tanh(c + r), jnp.log1p(c * c)), a[0], a)[1],
             (_X,)),
    "cond": (lambda a: lax.cond(a.sum() > 0, jnp.cos, jnp.tan, a), (_X,)),
    "random": (lambda k: (wjax.random.normal(k, (8,)), wjax.random.uniform(k, (8,)),
                          wjax.random.exponential(k, (8,)),
                          wjax.random.truncated_normal(k, -1.0, 1.0, (8,)),
                          wjax.random.categorical(k, jnp.zeros((3, 4)))), (_KEY,)),
    "gamma_samplers": (lambda k: (wjax.random.gamma(k, 0.7, (8,)), wjax.random.loggamma(
        k, 0.5, (8,)), wjax.random.beta(k, 2.0, 3.0, (8,)), wjax.random.poisson(k, 3.0, (8,)),
        wjax.random.dirichlet(k, jnp.ones(3), (2,))), (_KEY,)),
    "gamma": (lambda x, p: (special.gammaln(x), special.digamma(x), special.polygamma(1, p),
                            special.zeta(x + 4.0, 1.0)), (_X, _P)),
    # one program each: a jit of ndtri with erfinv, or with erfcx, log_ndtr and dawsn, asks
    # one kernel for 66 storage buffers (NotImplementedError; the same on main)
    "ndtri": (lambda p: special.ndtri(p), (_P,)),
    "erfinv": (lambda p: special.erfinv(p - 0.5), (_P,)),
    "erfcx": (lambda x: (special.erfcx(x), special.log_ndtr(x), special.dawsn(x)), (_X,)),
    "incomplete": (lambda x, p: (special.betainc(2.0, 3.0, p), special.gammainc(2.0, p * 3),
                                 special.hyp1f1(1.0, 2.0, x)), (_X, _P)),
    "bessel": (lambda x, p: (special.i0e(x), special.i1e(x), special.bessel_jn(x, v=2)),
               (_X, _P)),
    "integrals": (lambda x, p: (special.expi(x), special.spence(p), special.sici(x),
                                special.fresnel(x), special.owens_t(x, p)), (_X, _P)),
    "fft": (lambda c: (jnp.fft.fft(c), jnp.fft.ifft(c[:, :5]), jnp.fft.fft(jnp.tile(c, 3)[:, :17]),
                       jnp.fft.rfft(c.real), jnp.fft.fft2(c)), (_C,)),
    "complex": (lambda c: (jnp.exp(c), jnp.log(c), jnp.sin(c), jnp.tan(c), jnp.arctanh(c),
                           jnp.sqrt(c), c ** (0.5 + 1j), jnp.arccos(c), jnp.exp2(c)), (_C,)),
    "cumulative": (lambda a: (jnp.cumsum(a, 1), lax.cumlogsumexp(a, 1), lax.cummax(a, 0),
                              jnp.cumprod(a, 1)), (_X,)),
    "sort": (lambda a: (jnp.sort(a, 1), jnp.argsort(a, 0), lax.top_k(a, 3)), (_X,)),
    "linalg": (lambda a: (jnp.linalg.cholesky(a @ a.T + 6 * jnp.eye(4)), jnp.linalg.qr(a),
                          jnp.linalg.eigh(a @ a.T), jnp.linalg.svd(a), jnp.linalg.inv(
                              a @ a.T + jnp.eye(4)), jnp.linalg.det(a[:, :4])), (_X,)),
    "nn": (lambda a: (wjax.nn.gelu(a), wjax.nn.softmax(a), wjax.nn.silu(a),
                      wjax.nn.log_sigmoid(a), wjax.image.resize(a, (6, 9), "cubic")), (_X,)),
    "reductions": (lambda a: (a.sum(), a.max(0), jnp.argmax(a, 1), jnp.prod(a, 1), a @ a.T,
                              jnp.var(a), lax.conv(a[None, None], a[None, None, :3, :3],
                                                   (1, 1), "SAME")), (_X,)),
}


def _program_kernels(monkeypatch):
    """(where, wgsl) of every kernel the programs dispatch (host steps' sub-plans too)."""
    seen = []
    current = ["?"]
    original = runtime.Runtime.dispatch

    def recording(self, wgsl, *args, **kwargs):
        seen.append((current[0], wgsl))
        return original(self, wgsl, *args, **kwargs)

    monkeypatch.setattr(runtime.Runtime, "dispatch", recording)
    for name, (f, args) in PROGRAMS.items():
        current[0] = name
        wjax.block_until_ready(wjax.jit(f)(*args))
    assert {w for w, _ in seen} == set(PROGRAMS)
    return seen


def test_every_kernel_calls_only_allowed_builtins(monkeypatch):
    kernels = _record_kernels() + _program_kernels(monkeypatch)
    assert len(kernels) > 1000
    bad = {}
    for where, src in kernels:
        for b in disallowed(W.finalize(src)):
            bad.setdefault(b, set()).add(where)
    assert not bad, "kernels call builtins outside wgsl_math.ALLOWED_BUILTINS: " + "; ".join(
        f"{b}: {sorted(w)[:6]}" for b, w in sorted(bad.items()))


def test_every_helper_and_template_calls_only_allowed_builtins(monkeypatch):
    _program_kernels(monkeypatch)        # registers the helpers made on first use (samplers)
    known = _helper_fns()
    bad = {name: sorted(disallowed(src, known)) for name, src in W.HELPERS.items()}
    for path in resources.files(W.__package__).joinpath("shaders").iterdir():
        if path.name.endswith(".wgsl"):
            bad[f"shaders/{path.name}"] = sorted(disallowed(path.read_text(), known))
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"helpers calling builtins outside wgsl_math.ALLOWED_BUILTINS: {bad}"
    assert len(W.HELPERS) > 100



def test_a_helper_name_has_one_source():
    """Two helpers of one name would make every shader get whichever registered last (the
    special functions' ``wj_fkey`` once replaced a new reduction helper of that name)."""
    name = next(iter(W.HELPERS))
    assert W.helper(name, W.HELPERS[name]) == name          # the same source again: fine
    with pytest.raises(ValueError, match="registered twice"):
        W.helper(name, W.HELPERS[name] + "\n// another")
