"""``jax.example_libraries.stax``: neural-network layers as ``(init_fun, apply_fun)`` pairs.

``init_fun(rng, input_shape) -> (output_shape, params)`` draws parameters (the same key
splits and initializers as JAX, so one key gives JAX's parameters); ``apply_fun(params,
inputs, **kwargs)`` computes the layer (``rng=`` for Dropout).  Layers compose with
``serial``, ``parallel`` and ``shape_dependent``."""
import functools
import math

from .. import lax, random
from .. import numpy as jnp
from ..nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus,
                  standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros

# JAX's older names, kept by its stax for backwards compatibility
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

__all__ = ["AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense",
           "Dropout", "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu",
           "GeneralConv", "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax",
           "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
           "elementwise", "parallel", "serial", "shape_dependent",
           # what JAX's stax has in its namespace besides its layers
           "elu", "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax",
           "normal", "ones", "randn", "relu", "selu", "sigmoid", "softmax", "softplus",
           "standardize", "zeros"]


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully-connected layer."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return input_shape[:-1] + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _kernel_shape(specs, out_chan, filter_shape, input_shape):
    lhs_spec, rhs_spec, _ = specs
    it = iter(filter_shape)
    return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I" else next(it)
            for c in rhs_spec]


def _conv_layer(dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
                shape_fn, conv_fn):
    _, rhs_spec, out_spec = dimension_numbers
    strides = strides or (1,) * len(filter_shape)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
        out_shape = shape_fn(input_shape, kernel_shape, strides, padding, dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return out_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return conv_fn(inputs, W, strides) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """A convolution layer with the given ``(lhs, rhs, out)`` dimension numbers."""
    one = (1,) * len(filter_shape)
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
        lax.conv_general_shape_tuple,
        lambda x, W, strides: lax.conv_general_dilated(x, W, strides, padding, one, one,
                                                       dimension_numbers=dimension_numbers))


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """A transposed-convolution layer with the given ``(lhs, rhs, out)`` dimension numbers."""
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
        lax.conv_transpose_shape_tuple,
        lambda x, W, strides: lax.conv_transpose(x, W, strides, padding,
                                                 dimension_numbers=dimension_numbers))


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalizes over ``axis`` with the batch's statistics, then scales and shifts."""
    axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying ``fun`` to its input."""
    return (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        strides = strides or (1,) * len(window_shape)
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        non_spatial = (0, len(window_shape) + 1) if spec is None else \
            (spec.index("N"), spec.index("C"))
        for i in sorted(non_spatial):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
            return lax.reduce_window_shape_tuple(input_shape, window_shape, strides, pads), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)


def _normalize_by_window_size(dims, strides, padding):
    def rescale(outputs, inputs, spec):
        non_spatial = (0, inputs.ndim - 1) if spec is None else \
            (spec.index("N"), spec.index("C"))
        spatial = tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in non_spatial)
        counts = lax.reduce_window(jnp.ones(spatial, inputs.dtype), 0.0, lax.add, dims,
                                   strides, padding)
        for i in sorted(non_spatial):
            counts = jnp.expand_dims(counts, i)
        return outputs / counts
    return rescale


AvgPool = _pooling_layer(lax.add, 0.0, _normalize_by_window_size)


def _flatten():
    return (lambda rng, input_shape: ((input_shape[0], math.prod(input_shape[1:])), ()),
            lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)))


Flatten = _flatten()
Identity = (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: inputs)


def FanOut(num):
    """Copies the input into a list of ``num`` inputs."""
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


def FanInConcat(axis=-1):
    """Concatenates a list of inputs along ``axis``."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return input_shape[0][:ax] + (size,) + input_shape[0][ax + 1:], ()
    return init_fun, lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis)


def Dropout(rate, mode="train"):
    """Keeps each input with probability ``rate`` (scaled by ``1/rate``) in ``train`` mode;
    needs ``rng=`` at apply time."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That "
                "is, instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, "
                "inputs, rng)` where `rng` is a PRNG key (e.g. from `jax.random.key`).")
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return (lambda rng, input_shape: (input_shape, ())), apply_fun


def serial(*layers):
    """The layers one after the other."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, p = init(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        for fun, p, r in zip(apply_funs, params, rngs):
            inputs = fun(p, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """The layers side by side, each on its own element of a list of inputs."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, n)
        return zip(*[init(r, s) for init, r, s in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built from the input's shape when it is known."""
    return (lambda rng, input_shape: make_layer(input_shape)[0](rng, input_shape),
            lambda params, inputs, **kwargs: make_layer(inputs.shape)[1](params, inputs,
                                                                         **kwargs))
