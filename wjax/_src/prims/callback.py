"""Host callbacks: ``debug_callback`` (``jax.debug.print``/``callback``: effectful, no results)
and ``pure_callback`` (results computed by Python on the host).

Each lowers to a plan *host step*: when the program runs, the step reads its operands back
(waiting for the device), calls the Python function with NumPy values, and -- for
``pure_callback`` -- uploads the results into the output buffers, all in program order.
The step's buffers come from ``backend/host_steps.step_io`` (literal operands uploaded once
per device), as control flow's do.  Loops whose body prints run host-driven (one iteration at
a time, ``backend/host_steps.py``), so a print runs once per real iteration.

    debug_callback  operands: *args   params: callback                  (no results)
    io_callback     operands: *args   params: callback, result_avals    (effectful)
    pure_callback   operands: *args   params: callback, result_avals
"""
from __future__ import annotations

import numpy as np

from ..backend.execute import download, upload_into
from ..backend.host_steps import step_io
from ..core import ops
from ..core.errors import JaxRuntimeError
from ..core.ir import ShapedArray
from ..core.primitive import Primitive
from ..transforms import ad as _ad
from ..transforms.batching import move_batch_axis

debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.effectful = True
pure_callback_p = Primitive("pure_callback", multiple_results=True)
io_callback_p = Primitive("io_callback", multiple_results=True)    # effectful, with results
io_callback_p.effectful = True


class HostCallback:
    """A Python function on flat NumPy values, compared by identity in jaxpr parameters."""

    def __init__(self, fn, name: str):
        self.fn, self.name = fn, name

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self):
        return self.name


def _kernel(ctx, *avals, callback, result_avals=(), vmap_method=None, ordered=False):
    keys, out_keys, split = step_io(ctx)

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        try:
            results = list(callback(*[download(rt, b, a) for b, a in zip(ins, avals)]) or ())
            _check_results(results, result_avals)
        except Exception as err:        # as JAX: the running program fails with the cause
            raise JaxRuntimeError(f"{callback!r} raised {type(err).__name__}: {err}") from err
        for buf, r, a in zip(outs, results, result_avals):
            upload_into(rt, buf, np.asarray(r, a.dtype).reshape(a.shape))
    ctx.host_step(run, keys, out_keys, label=f"{callback!r} (runs on the host)")


def _check_results(results, result_avals):
    for r, a in zip(results, result_avals):
        if np.shape(r) != tuple(a.shape):
            raise ValueError(f"Callback returned a result of shape {np.shape(r)} where "
                             f"{tuple(a.shape)} was declared")


def _reference(*args, callback, result_avals=(), vmap_method=None, ordered=False):
    results = list(callback(*[np.asarray(a) for a in args]) or ())
    _check_results(results, result_avals)
    return [np.asarray(r, a.dtype).reshape(a.shape) for r, a in zip(results or (), result_avals)]


# --------------------------------------------------------------------------- debug_callback

debug_callback_p.abstract_eval = lambda *avals, callback: []
debug_callback_p.reference = _reference
debug_callback_p.kernel = _kernel


def _debug_jvp(primals, tangents, *, callback):
    return debug_callback_p.bind(*primals, callback=callback), []


def _debug_batch(args, dims, *, callback):
    """Under vmap the callback runs once per example, in order (as JAX's does)."""
    for example in _examples(args, dims):
        debug_callback_p.bind(*example, callback=callback)
    return [], []


def _examples(args, dims):
    """The operands of each example of a batch, in order."""
    size = next(np.shape(x)[d] for x, d in zip(args, dims) if d is not None)
    moved = [move_batch_axis(x, d, 0, size) if d is not None else x for x, d in zip(args, dims)]
    for i in range(size):
        yield [ops.index_in_dim(x, i, 0, keepdims=False) if d is not None else x
               for x, d in zip(moved, dims)]


debug_callback_p.jvp = _debug_jvp
debug_callback_p.batch = _debug_batch


# --------------------------------------------------------------------------- pure_callback

def _pure_abstract(*avals, callback, result_avals, vmap_method=None, ordered=False):
    return [ShapedArray(a.shape, a.dtype) for a in result_avals]


pure_callback_p.abstract_eval = _pure_abstract
pure_callback_p.reference = _reference
pure_callback_p.kernel = _kernel


def _pure_jvp(primals, tangents, *, callback, result_avals, vmap_method=None):
    if any(not isinstance(t, _ad.Zero) for t in tangents):
        raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to "
                         "use callbacks while taking gradients.")
    outs = pure_callback_p.bind(*primals, callback=callback, result_avals=result_avals,
                                vmap_method=vmap_method)
    return outs, [_ad.Zero(ShapedArray(a.shape, a.dtype)) for a in result_avals]


def _pure_batch(args, dims, *, callback, result_avals, vmap_method=None):
    """``sequential``: one call per example, results stacked; ``expand_dims`` /
    ``broadcast_all``: one call with the batch as a leading axis (size 1 for unbatched
    operands, or broadcast to the batch)."""
    size = next(np.shape(x)[d] for x, d in zip(args, dims) if d is not None)
    if vmap_method in ("sequential", "sequential_unrolled"):
        per = [pure_callback_p.bind(*ex, callback=callback, result_avals=result_avals,
                                    vmap_method=vmap_method) for ex in _examples(args, dims)]
        outs = [ops.concatenate([ops.expand_dims(r[k], (0,)) for r in per], 0)
                for k in range(len(result_avals))]
        return outs, [0] * len(outs)
    if vmap_method in ("expand_dims", "broadcast_all"):
        ops_in = []
        for x, d in zip(args, dims):
            if d is not None:
                ops_in.append(move_batch_axis(x, d, 0, size))
            else:
                n = size if vmap_method == "broadcast_all" else 1
                ops_in.append(ops.broadcast_in_dim(x, (n,) + tuple(np.shape(x)),
                                                   tuple(range(1, np.ndim(x) + 1))))
        batched = tuple(ShapedArray((size,) + tuple(a.shape), a.dtype) for a in result_avals)
        outs = pure_callback_p.bind(*ops_in, callback=callback, result_avals=batched,
                                    vmap_method=vmap_method)
        return list(outs), [0] * len(outs)
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")


pure_callback_p.jvp = _pure_jvp
pure_callback_p.batch = _pure_batch


# --------------------------------------------------------------------------- io_callback

def _io_batch(args, dims, *, callback, result_avals, vmap_method=None, ordered=False):
    """Once per example, in order; results stacked (JAX refuses an ordered one)."""
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    per = [io_callback_p.bind(*ex, callback=callback, result_avals=result_avals)
           for ex in _examples(args, dims)]
    outs = [ops.concatenate([ops.expand_dims(r[k], (0,)) for r in per], 0)
            for k in range(len(result_avals))]
    return outs, [0] * len(outs)


def _io_jvp(primals, tangents, *, callback, result_avals, vmap_method=None, ordered=False):
    if any(not isinstance(t, _ad.Zero) for t in tangents):
        raise ValueError("IO callbacks do not support JVP.")
    outs = io_callback_p.bind(*primals, callback=callback, result_avals=result_avals,
                              ordered=ordered)
    return outs, [_ad.Zero(ShapedArray(a.shape, a.dtype)) for a in result_avals]


io_callback_p.abstract_eval = _pure_abstract
io_callback_p.reference = _reference
io_callback_p.kernel = _kernel
io_callback_p.jvp = _io_jvp
io_callback_p.batch = _io_batch
