"""Primitives and the registry of all of them.

A primitive is one block in ``wjax/_src/prims/<family>.py`` that fills the slots below side by
side.  Everything the rest of wjax asks of a primitive is a slot or a flag declared here; no
module lists primitives by name.

Binding a primitive while a tracing builder is active records an equation; otherwise it runs
eagerly, as a one-equation jaxpr through the WGSL backend (``wjax/_src/dispatch.py``).
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Optional

from .tracing import bind as _bind

REGISTRY: dict[str, "Primitive"] = {}
_user_serial = itertools.count()

Rule = Optional[Callable[..., Any]]


class Primitive:
    """One operation of the IR.

    Rules (None when the primitive has none):

    ``abstract_eval(*avals, **params) -> aval (or list)``   shape/dtype rule (required)
    ``reference(*ndarrays, **params) -> ndarray (or list)`` NumPy rule (tests, constant folding)
    ``fuse(kb, idx, read, in_avals, out_aval, **params) -> str``
        an elementwise/index op: a WGSL expression, fused into its consumers' kernels
    ``kernel(ctx, *avals, **params)``  a whole-kernel op (reduction, matmul, sort, control flow)
    ``element(kb, idx, read, in_avals, out_aval, **params) -> str``
        a kernel op's value at one output index as sequential code (single-workgroup loops)
    ``element_tile(kb, wg, read, in_avals, out_aval, store, rows=, cols=, **params) -> int``
        every output element by ``wg`` threads of one workgroup, each computing blocks of
        outputs (``store(flat, value)`` emits a store); returns the sequential steps per
        thread (with ``kb=None``, only that); single-workgroup loops prefer it to ``element``
    ``merge_key(eqn) -> key`` / ``kernel_many(ctxs)``  kernel ops with equal keys at one
        fusion level are emitted together by ``kernel_many``
    ``jvp(primals, tangents, **params) -> (outs, tangents)``    forward-mode rule
    ``transpose(cts, *args, **params) -> cts of the linear args``  reverse-mode rule
    ``batch(args, dims, **params) -> (outs, out dims)``          vmap rule
    ``partial_eval(eqn, unknowns) -> (known eqns, unknown eqns, out unknowns)``
        how an equation with some unknown operands splits (calls, control flow); without
        one, an equation with any unknown operand is unknown as a whole
    ``dce(eqn, used_outputs) -> eqn``  drops unused outputs of an equation carrying jaxprs
    ``impl(*args, **params)``  an eager override (custom calls evaluate their jaxpr)
    ``expand(*operands, **params)``  a composition of other primitives: the backend traces it
        and inlines the result (user primitives lowered through ``mlir.lower_fun``)
    ``axis_map(in_avals, out_avals, **params) -> [(operand, axis, output, axis), ...]``
        the axes along which the operation keeps positions apart: element ``i`` along an
        operand's listed axis reaches only position ``i`` along the output's axis (operand
        None: the output is the same at every position along that axis, a broadcast's new
        axes).  An axis listed nowhere mixes positions (a reduction's, a contraction's, a
        slice's).  Loops split their independent rows over workgroups by it
        (``transforms/row_split.py``); without the rule every axis counts as mixed
    ``with_shapes(params, in_avals, out_avals) -> params``  the parameters that name shapes
        (``broadcast_in_dim``'s ``shape``), for operands and results of these shapes: the same
        operation on a block of the rows ``axis_map`` keeps apart
    ``decompose(target, *avals, **params) -> fn or None``  a choice made at lowering, for
        one device: ``fn(*operands)``, a composition of other primitives that the backend
        traces and inlines in the equation's place (a contraction too long for the driver's
        loop limit, split into chunks), or None to keep the equation for its kernel

    Flags:

    ``multiple_results``  returns a list
    ``fuse_inputs``       kernel ops: operand positions that accept fused producers
    ``epilogue``          kernel ops: same-shaped elementwise consumers fuse into the kernel
    ``epilogue_layouts``  kernel ops with an epilogue of one value at a time: a consumer that
                          reads the output through a permutation of its axes fuses too, stored
                          at its own position (a transposed product)
    ``store_inputs``      kernel ops: ``(eqn, lowering) -> positions`` of fused operands that
                          have a buffer (read elsewhere too) but that the kernel computes from
                          their producers as it reads them and stores itself, instead of a
                          kernel of their own before it (``Lowering.store_claimable`` says which
                          it may claim; ``KernelContext.stores``)
    ``materialize_inputs`` kernel ops: ``(eqn, lowering) -> positions`` of fused operands that
                          get a buffer all the same (the kernel would copy them: computed
                          where they are made instead, e.g. by the epilogue of the product
                          that makes their input)
    ``table``             elementwise ops: the dtype -> WGSL template table they were made from
    ``zero_jvp``          the output's tangent is always zero (comparisons, integer ops)
    ``call``              carries a ``jaxpr`` parameter that the backend inlines
    ``transparent_call``  a call that only runs its ``jaxpr`` (``pjit``, ``checkpoint``): its
                          unused outputs may be pruned and its traced constants hoisted
    ``shares_storage``    a contiguous view (reshape): its output aliases its operand's buffer
    ``view``              moves elements without arithmetic (loops index through it)
    ``effectful``         never removed by dead-code elimination
    ``collective``        acts over the named axes in ``params['axes']`` (``psum``): its batch
                          rule runs at the ``vmap`` of that name even on unbatched operands
    ``remat``             ``checkpoint``: its partial-eval rule runs even when every operand is
                          unknown (it recomputes, rather than saves, what it can)

    ``row_group``         reductions (sum, max, min): the primitive whose kernel runs a
                          row-resident group holding them -- the reductions over a short last
                          axis and the elementwise work reading their results back
                          (``backend/passes.row_groups``, ``prims/rows.py``); None: never grouped
    """

    def __init__(self, name: str, multiple_results: bool = False, register: bool = True):
        """``register=False`` makes a primitive outside the registry (a user's, through
        ``jax.extend.core.Primitive``): names may repeat, and ``key`` tells them apart."""
        if register and name in REGISTRY:
            raise ValueError(f"primitive {name!r} registered twice")
        self.name = name
        self.key = name if register else f"{name}#{next(_user_serial)}"
        self.multiple_results = multiple_results
        self.abstract_eval: Rule = None
        self.reference: Rule = None
        self.fuse: Rule = None
        self.kernel: Rule = None
        self.element: Rule = None
        self.element_tile: Rule = None
        self.merge_key: Rule = None
        self.kernel_many: Rule = None
        self.jvp: Rule = None
        self.transpose: Rule = None
        self.batch: Rule = None
        self.partial_eval: Rule = None
        self.dce: Rule = None
        self.impl: Rule = None
        self.expand: Rule = None
        self.decompose: Rule = None
        self.axis_map: Rule = None
        self.with_shapes: Rule = None
        self.fuse_inputs: tuple[int, ...] = ()
        self.epilogue: bool = False
        self.epilogue_layouts: bool = False
        self.materialize_inputs: Rule = None
        self.store_inputs: Rule = None
        self.table: dict | None = None
        self.zero_jvp: bool = False
        self.call: bool = False
        self.transparent_call: bool = False
        self.shares_storage: bool = False
        self.view: bool = False
        self.effectful: bool = False
        self.remat: bool = False
        self.collective: bool = False
        self.row_group: "Primitive | None" = None
        # printing (core/ir.py): the name jaxprs show, ``pp_params(params, eqn) -> [(key,
        # value)]``
        # (JAX's printer hides parameters implied by the result's type), and whether a call's
        # inner binders take the names of its operands and results
        self.pp_name: str | None = None
        self.pp_params: Rule = None
        self.pp_share_names: bool = False
        if register:
            REGISTRY[name] = self

    def bind(self, *args, **params):
        return _bind(self, args, params)

    def __repr__(self):
        return self.name

    __str__ = __repr__

    # decorator helpers, so a rule can be registered right after the primitive
    def def_abstract_eval(self, f):
        self.abstract_eval = f
        return f

    def def_reference(self, f):
        self.reference = f
        return f

    def def_fuse(self, f):
        self.fuse = f
        return f

    def def_kernel(self, f):
        self.kernel = f
        return f
