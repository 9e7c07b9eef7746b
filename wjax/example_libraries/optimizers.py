"""``jax.example_libraries.optimizers``: first-order optimizers as ``(init_fun, update_fun,
get_params)`` triples over pytrees of parameters, and step-size schedules.

An optimizer is written for one array (``@optimizer`` lifts it to pytrees): ``init(x0)``
returns its state, ``update(step, grad, state)`` the next state, ``get_params(state)`` the
parameters.  The lifted state is an ``OptimizerState`` pytree (flat states plus the trees to
rebuild them), as in JAX, so it passes through ``jit`` and ``lax`` loops."""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from .. import numpy as jnp
from .. import tree as jtree
from ..tree_util import register_pytree_node

__all__ = ["Array", "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params", "ParamsFn",
           "Schedule", "State", "Step", "UpdateFn", "Updates", "adagrad", "adam", "adamax",
           "clip_grads", "constant", "exponential_decay", "inverse_time_decay", "l2_norm",
           "make_schedule", "momentum", "nesterov", "optimizer", "pack_optimizer_state",
           "piecewise_constant", "polynomial_decay", "rmsprop", "rmsprop_momentum", "sgd",
           "sm3", "unpack_optimizer_state"]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
register_pytree_node(OptimizerState,
                     lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                     lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

# JAX's type names for the pieces of an optimizer
Array = Any
Params = Any   # a pytree of arrays
State = Any    # one array's optimizer state
Updates = Params
InitFn = Callable[[Params], OptimizerState]
Step = int
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _flatten_each(states):
    pairs = [jtree.flatten(s) for s in states]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def optimizer(opt_maker: Callable) -> Callable[..., Optimizer]:
    """Lifts an optimizer written for single arrays to pytrees of parameters."""
    @functools.wraps(opt_maker)
    def make(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            leaves, tree = jtree.flatten(x0_tree)
            states, subtrees = _flatten_each([init(x) for x in leaves])
            return OptimizerState(states, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states, tree, subtrees = opt_state
            grads, gtree = jtree.flatten(grad_tree)
            if gtree != tree:
                raise TypeError(f"optimizer update function was passed a gradient tree that did "
                                f"not match the parameter tree structure with which it was "
                                f"initialized: parameter tree {tree} and grad tree {gtree}.")
            old = [jtree.unflatten(t, s) for t, s in zip(subtrees, states)]
            new_states, new_subtrees = _flatten_each(
                [update(i, g, s) for g, s in zip(grads, old)])
            for a, b in zip(subtrees, new_subtrees):
                if a != b:
                    raise TypeError(f"optimizer update function produced an output structure "
                                    f"that did not match its input structure: input {a} and "
                                    f"output {b}.")
            return OptimizerState(new_states, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states, tree, subtrees = opt_state
            return jtree.unflatten(tree, [get_params(jtree.unflatten(t, s))
                                          for t, s in zip(subtrees, states)])
        return Optimizer(tree_init, tree_update, tree_get_params)
    return make


def _params_first(state):
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0, lambda i, g, x: x - step_size(i) * g, lambda x: x)


@optimizer
def momentum(step_size, mass: float):
    """Gradient descent with (heavy-ball) momentum ``mass``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return (lambda x0: (x0, jnp.zeros_like(x0)), update, _params_first)


@optimizer
def nesterov(step_size, mass: float):
    """Nesterov's accelerated gradient."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return (lambda x0: (x0, jnp.zeros_like(x0)), update, _params_first)


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum on the scaled gradient."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _params_first)


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg + eps), avg
    return (lambda x0: (x0, jnp.zeros_like(x0)), update, _params_first)


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg + eps)
        return x - mom, avg, mom
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _params_first)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (bias-corrected first and second moments)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _params_first)


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax (Adam with the infinity norm)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u
    return (lambda x0: (x0, jnp.zeros_like(x0), jnp.zeros_like(x0)), update, _params_first)


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3: one accumulator per axis of each parameter (memory-efficient Adagrad)."""
    step_size = make_schedule(step_size)

    def along(ndim, v, axis):
        # v along ``axis`` of an ndim-array; as JAX splices, a scalar's gradient keeps v whole
        idx = [None] * ndim
        idx[axis:axis + 1] = [slice(None)]
        return v[tuple(idx)]

    def init(x0):
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        return x0, jnp.zeros_like(x0), [jnp.zeros(n, x0.dtype) for n in x0.shape], shape

    def update(i, g, state):
        x, m, vs, shape = state
        vs = [along(g.ndim, v, k) for k, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        inv = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(tuple(a for a in range(x.ndim) if a != k)) for k in range(x.ndim)]
        return x, m, vs, shape
    return init, update, lambda state: state[0].reshape(state[3])


# --------------------------------------------------------------------------- schedules

def constant(step_size) -> Schedule:
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False) -> Schedule:
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0) -> Schedule:
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        mult = (1 - step_num / decay_steps) ** power
        return mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# --------------------------------------------------------------------------- utilities

def l2_norm(tree):
    """The l2 norm of all the leaves of a pytree together."""
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in jtree.leaves(tree)))


def clip_grads(grad_tree, max_norm):
    """Scales a gradient pytree down to l2 norm ``max_norm`` when it is larger."""
    norm = l2_norm(grad_tree)
    return jtree.map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where a parameter's optimizer state sits in an unpacked state tree."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """The state as a pytree shaped like the parameters, each leaf a ``JoinPoint`` holding
    that parameter's state (picklable: no treedefs)."""
    states, tree, subtrees = opt_state
    return jtree.unflatten(tree, [JoinPoint(jtree.unflatten(t, s))
                                  for t, s in zip(subtrees, states)])


def pack_optimizer_state(marked_pytree):
    """The inverse of ``unpack_optimizer_state``."""
    marks, tree = jtree.flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(m, JoinPoint) for m in marks):   # JAX asserts this
        raise AssertionError("pack_optimizer_state: every leaf must be a JoinPoint")
    states, subtrees = _flatten_each([m.subtree for m in marks])
    return OptimizerState(states, tree, subtrees)
