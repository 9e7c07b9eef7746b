"""Primitives and the registry of all of them.

A primitive is one block in ``wjax/prims/<family>.py`` that fills these slots
side by side:

    abstract_eval(*avals, **params) -> aval (or list)   shape/dtype rule
    reference(*ndarrays, **params)  -> ndarray (or list) NumPy rule, tests only
    fuse(kb, idx, read, in_avals, out_aval, **params) -> WGSL expression
                                     elementwise/index op, fusable into a kernel
    kernel(kb, ...)                  a whole-kernel op (reduction, matmul, ...)
    element(kb, idx, read, in_avals, out_aval, **params) -> WGSL expression
                                     a kernel op's value at one output index as sequential
                                     code (a loop); used by single-workgroup loop kernels
    jvp, transpose, batch            transformation rules (autodiff and vmap)

Binding a primitive while a tracing builder is active records an equation;
otherwise it runs eagerly as a one-equation jaxpr through the WGSL backend.
"""
from __future__ import annotations

from .tracing import bind as _bind

REGISTRY: dict[str, "Primitive"] = {}


class Primitive:
    multiple_results = False

    def __init__(self, name: str, multiple_results: bool = False):
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} registered twice")
        self.name = name
        self.multiple_results = multiple_results
        self.abstract_eval = None
        self.reference = None
        self.fuse = None          # fusable op: expression template
        self.kernel = None        # whole-kernel op
        self.element = None       # kernel ops: one output element as a sequential loop
        self.fuse_inputs = ()     # kernel ops: operand positions that accept fused producers
        self.merge_key = None     # kernel ops: eqn -> key; equal keys at one level share a kernel
        self.kernel_many = None   # ... emitted together by kernel_many(list of KernelContext)
        self.jvp = None
        self.transpose = None
        self.batch = None
        self.impl = None          # optional eager override (e.g. call primitives)
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
