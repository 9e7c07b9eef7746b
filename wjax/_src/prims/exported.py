"""``call_exported``: a deserialized ``jax.export`` program called inside a trace.

The program is a recording (``backend/recorder.py``: kernels and the operations over buffers
one run performs); inside ``jit`` it lowers to a plan host step that replays it on the
operands' buffers and copies its (fresh) outputs into the equation's.  It has no jvp and no
batching rule: as JAX's, a deserialized program is differentiated only through a VJP
serialized with it (``Exported.call`` then wraps the call in a ``custom_vjp`` whose backward
rule is the VJP program).

    call_exported   operands: *args   params: program (a Recorded), out_avals, fun_name
"""
from __future__ import annotations

from ..backend.execute import nbytes_of
from ..backend.host_steps import step_io
from ..core.primitive import Primitive

call_exported_p = Primitive("call_exported", multiple_results=True)


def _abstract(*avals, program, out_avals, fun_name):
    return list(out_avals)


def _kernel(ctx, *avals, program, out_avals, fun_name):
    keys, out_keys, split = step_io(ctx)
    sizes = [nbytes_of(a) for a in out_avals]

    def run(rt, bufs):
        ins, outs = split(rt, bufs)
        for src, dst, n in zip(program.run(rt, ins), outs, sizes):
            if n:
                rt.copy(src, dst, n)

    ctx.host_step(run, keys, out_keys, label=f"call_exported {fun_name}")


def _jvp(primals, tangents, *, program, out_avals, fun_name):
    raise ValueError(f"No VJP is available: the exported function '{fun_name}' was "
                     "serialized without it (serialize(vjp_order=1) keeps one order of "
                     "derivatives; or export the gradient function itself)")


def _batch(args, dims, **params):
    raise NotImplementedError("Batching rule for 'call_exported' not implemented")


call_exported_p.abstract_eval = _abstract
call_exported_p.batch = _batch
call_exported_p.kernel = _kernel
call_exported_p.jvp = _jvp
