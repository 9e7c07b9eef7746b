"""``shard_map``: a per-device program over blocks of its operands, and ``pvary``.

    shard_map   operands: global arrays   params: jaxpr (the per-device body, over blocks),
                mesh, in_specs, out_specs (one PartitionSpec per operand / result), check_vma
    pvary       operands: x               params: axes    (identity; marks x as varying)

The body's collectives (``psum``, ``all_gather``, ... of ``collective.py``) name mesh axes.
``shard_map`` is not a call the backend inlines: ``wjax/_src/spmd.py`` runs the body on every device
of the mesh (one program per stage between collectives, the collectives through host memory)
and installs the eager ``impl``.

Autodiff follows JAX's shard_map without the replication rewrite (``check_vma`` does not change
values): ``jvp`` is the shard_map of the body's jvp; partial evaluation splits the body, its
residuals leaving the known half stacked per device (a new leading axis split over every mesh
axis); the transpose divides each output cotangent by the size of the mesh axes its spec leaves
out (the output was replicated over them) and ``psum``s each input cotangent over the axes its
spec leaves out, with ``psum`` transposing to ``psum`` inside.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes, ops
from ..core.ir import ClosedJaxpr, Eqn, ShapedArray, Var
from ..core.partition_spec import PartitionSpec, spec_axes
from ..core.primitive import Primitive
from ..core.tracing import eval_jaxpr, trace_flat
from ..transforms import ad as _ad
from ..transforms.jvp import jvp_jaxpr
from ..transforms.partial_eval import partial_eval_jaxpr
from ..transforms.transpose import transpose_jaxpr
from .collective import _collective, psum_p

shard_map_p = Primitive("shard_map")
shard_map_p.multiple_results = True


def mentioned(spec) -> set:
    return {a for p in spec for a in spec_axes(p)}


def axis_sizes(mesh) -> dict:
    return dict(zip(mesh.axis_names, mesh.axis_sizes))


def global_aval(block: ShapedArray, spec, mesh) -> ShapedArray:
    sizes = axis_sizes(mesh)
    shape = list(block.shape)
    for d, p in enumerate(spec):
        for a in spec_axes(p):
            shape[d] *= sizes[a]
    return ShapedArray(tuple(shape), block.dtype, block.weak_type)


def block_aval(aval: ShapedArray, spec, mesh) -> ShapedArray:
    sizes = axis_sizes(mesh)
    shape = list(aval.shape)
    for d, p in enumerate(spec):
        for a in spec_axes(p):
            shape[d] //= sizes[a]
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def _abstract(*avals, jaxpr, mesh, in_specs, out_specs, check_vma):
    return [global_aval(a, s, mesh) for a, s in zip(jaxpr.out_avals, out_specs)]


shard_map_p.abstract_eval = _abstract


def _jvp(primals, tangents, *, jaxpr, mesh, in_specs, out_specs, check_vma):
    nz = tuple(not isinstance(t, _ad.Zero) for t in tangents)
    jc, out_nz = jvp_jaxpr(jaxpr, nz)
    ins = tuple(in_specs) + tuple(s for s, z in zip(in_specs, nz) if z)
    outs_s = tuple(out_specs) + tuple(s for s, z in zip(out_specs, out_nz) if z)
    outs = shard_map_p.bind(*primals, *[t for t in tangents if not isinstance(t, _ad.Zero)],
                            jaxpr=jc, mesh=mesh, in_specs=ins, out_specs=outs_s,
                            check_vma=check_vma)
    n = len(out_specs)
    it = iter(outs[n:])
    return list(outs[:n]), [next(it) if z else _ad.Zero(global_aval(a, s, mesh))
                            for z, a, s in zip(out_nz, jaxpr.out_avals, out_specs)]


shard_map_p.jvp = _jvp


def _wrap(in_avals, fun) -> ClosedJaxpr:
    return trace_flat(lambda *xs: list(fun(*xs)), list(in_avals))


def _partial_eval(e: Eqn, uin):
    """Splits a shard_map in two; each residual leaves the known half as ``[1, *block]`` per
    device, a global ``[mesh size, *block]`` split over every mesh axis."""
    p = e.params
    body, mesh = p["jaxpr"], p["mesh"]
    known, unknown, uout, nres = partial_eval_jaxpr(body, list(uin))
    nk = len(known.out_avals) - nres
    res_blocks = list(known.out_avals[nk:])
    every = (tuple(mesh.axis_names),)
    res_spec = PartitionSpec(*every)

    def known_fn(*xs):
        outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
        return outs[:nk] + [ops.reshape(r, (1,) + tuple(a.shape))
                            for r, a in zip(outs[nk:], res_blocks)]

    def unknown_fn(*xs):
        res = [ops.reshape(r, tuple(a.shape)) for r, a in zip(xs[:nres], res_blocks)]
        return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[nres:])

    kj = _wrap(known.in_avals, known_fn)
    res_in = [ShapedArray((1,) + tuple(a.shape), a.dtype) for a in res_blocks]
    uj = _wrap(res_in + list(unknown.in_avals[nres:]), unknown_fn)
    res_vars = [Var(ShapedArray((mesh.size,) + tuple(a.shape), a.dtype)) for a in res_blocks]
    k_in = tuple(s for s, u in zip(p["in_specs"], uin) if not u)
    u_in = tuple(s for s, u in zip(p["in_specs"], uin) if u)
    k_out = tuple(s for s, u in zip(p["out_specs"], uout) if not u)
    u_out = tuple(s for s, u in zip(p["out_specs"], uout) if u)
    kouts = [v for v, u in zip(e.outvars, uout) if not u]
    uouts = [v for v, u in zip(e.outvars, uout) if u]
    ke = Eqn(shard_map_p, [a for a, u in zip(e.invars, uin) if not u], kouts + res_vars,
             dict(p, jaxpr=kj, in_specs=k_in, out_specs=k_out + (res_spec,) * nres))
    ue = Eqn(shard_map_p, res_vars + [a for a, u in zip(e.invars, uin) if u], uouts,
             dict(p, jaxpr=uj, in_specs=(res_spec,) * nres + u_in, out_specs=u_out))
    return [ke], [ue], list(uout)


shard_map_p.partial_eval = _partial_eval


def _transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, check_vma):
    lin = tuple(_ad.is_undefined_primal(a) for a in args)
    tj = transpose_jaxpr(jaxpr, lin)
    sizes = axis_sizes(mesh)
    nl_specs = tuple(s for s, l in zip(in_specs, lin) if not l)
    lin_specs = tuple(s for s, l in zip(in_specs, lin) if l)
    n_nl = len(nl_specs)

    def fun(*xs):
        cts_in = []
        for ct, s in zip(xs[n_nl:], out_specs):
            k = int(np.prod([sizes[a] for a in mesh.axis_names if a not in mentioned(s)]))
            if k != 1 and dtypes.is_float(ops._aval(ct).dtype):
                ct = ops.div(ct, np.asarray(k, ops._aval(ct).dtype))
            cts_in.append(ct)
        outs = eval_jaxpr(tj.jaxpr, tj.consts, *xs[:n_nl], *cts_in)
        res = []
        for o, s in zip(outs, lin_specs):
            free = tuple(a for a in mesh.axis_names if a not in mentioned(s))
            res.append(psum_p.bind(o, axes=free) if free else o)
        return res

    tjw = _wrap(tj.in_avals, fun)
    ct_vals = [_ad.instantiate(c) for c in cts]
    outs = shard_map_p.bind(*[a for a in args if not _ad.is_undefined_primal(a)], *ct_vals,
                            jaxpr=tjw, mesh=mesh, in_specs=nl_specs + tuple(out_specs),
                            out_specs=lin_specs, check_vma=check_vma)
    it = iter(outs)
    return [next(it) if l else None for l in lin]


shard_map_p.transpose = _transpose


def _batch(args, dims, **params):
    raise NotImplementedError("vmap of shard_map is not supported by wjax yet")


shard_map_p.batch = _batch


# --------------------------------------------------------------------------- pvary

pvary_p = _collective("pvary")
pvary_p.def_abstract_eval(lambda x, *, axes: x)
pvary_p.def_reference(lambda x, *, axes: x)


def _pvary_batch(args, dims, *, axes):
    return args[0], dims[0]


pvary_p.batch = _pvary_batch
# identity in value; its transpose is too, since shard_map's transpose psums each input's
# cotangent over the axes the input is replicated on (JAX's rewrite makes it a psum instead)
_ad.deflinear(pvary_p, lambda ct, x, *, axes: [ct])
