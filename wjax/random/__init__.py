"""wjax.random: JAX's counter-based PRNG (threefry2x32), with JAX's exact bits.

Keys are either raw ``uint32[2]`` arrays (``PRNGKey``) or typed key arrays
(``key``), whose dtype prints as ``key<fry>``: a :class:`PRNGKeyArray` is a
thin wrapper around its ``uint32[..., 2]`` key data, registered as a pytree
so keys pass through ``jit`` and ``vmap`` (a batch of keys is a batch of key
data along the same leading axes).

Every sampler is written the way JAX writes it (``jax/_src/random/core.py``)
on top of three primitives computed on the device (``wjax/_src/prims/random.py``):
``random_bits``, ``random_split`` and ``random_fold_in``.  Bits, integers and
uniforms are bit-identical to JAX for the same key, shape and dtype in both
of JAX's modes (``jax_threefry_partitionable``, default True); normals and the
other transcendental samplers agree to float32 rounding.  Like JAX, samplers
are jitted (one fused kernel for most of them) with the shape, dtype and the
current threefry mode as static arguments.
"""
import functools
import inspect

from .keys import (KEY_DTYPE, KeyDType, PRNGKey, PRNGKeyArray, clone, fold_in, key, key_data,
                   key_dtype, key_impl, split, wrap_key_data)
from .samplers import (ball, bernoulli, beta, bits, cauchy, chisquare, dirichlet,
                       double_sided_maxwell, exponential, f, gamma, generalized_normal,
                       geometric, gumbel, laplace, loggamma, logistic, lognormal, maxwell,
                       multivariate_normal, normal, orthogonal, pareto, rademacher, randint,
                       rayleigh, t, triangular, truncated_normal, uniform, wald, weibull_min)
from .discrete import (binomial, categorical, choice, multinomial, permutation, poisson,
                       shuffle)

__all__ = [
    "PRNGKey", "key", "key_data", "wrap_key_data", "key_impl", "key_dtype", "clone", "split",
    "fold_in", "bits", "uniform", "normal", "truncated_normal", "randint", "bernoulli",
    "categorical", "choice", "permutation", "shuffle", "gumbel", "exponential", "laplace",
    "logistic", "rademacher", "cauchy", "lognormal", "pareto", "rayleigh", "wald", "geometric",
    "triangular", "maxwell", "weibull_min", "gamma", "loggamma", "beta", "dirichlet",
    "chisquare", "t", "multivariate_normal", "PRNGKeyArray",
    "f", "double_sided_maxwell", "generalized_normal", "ball", "orthogonal",
    "poisson", "binomial", "multinomial",
]


# ------------------------------------------------------------------- out_sharding
# JAX's samplers take ``out_sharding=`` (where the result is placed); with one device every
# result is on it, so the argument is checked and the result is the same.
_OUT_SHARDING_SAMPLERS = (
    "ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare", "dirichlet",
    "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel", "laplace",
    "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal", "normal",
    "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint", "rayleigh", "t",
    "triangular", "truncated_normal", "uniform", "wald")


def _check_out_sharding(name, out_sharding):
    devices = getattr(out_sharding, "device_set", None)
    if devices is not None and len(devices) > 1:
        raise ValueError(f"{name}: out_sharding {out_sharding} spans {len(devices)} devices; "
                         f"this wjax runtime has one device")


def _with_out_sharding(fn):
    @functools.wraps(fn)
    def sampler(*args, out_sharding=None, **kwargs):
        _check_out_sharding(fn.__name__, out_sharding)
        return fn(*args, **kwargs)
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    at = len(params) - (params and params[-1].kind == inspect.Parameter.VAR_KEYWORD)
    params.insert(at, inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                        default=None))
    sampler.__signature__ = sig.replace(parameters=params)
    return sampler


for _name in _OUT_SHARDING_SAMPLERS:
    if "out_sharding" not in inspect.signature(globals()[_name]).parameters:
        globals()[_name] = _with_out_sharding(globals()[_name])
del _name

