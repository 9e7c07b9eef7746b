"""Row splits: the axis along which a jaxpr keeps its inputs' rows apart, and the same jaxpr
for a block of those rows.

A loop body such as an RNN cell, ``h = tanh(h @ W + x @ U)``, computes each row of its carry
from that row alone (and from values every row shares, ``W``): along the carry's leading axis
nothing mixes.  Such a loop over ``b`` rows is ``b / block`` independent loops over blocks of
rows, which an in-kernel loop runs as that many workgroups instead of one
(``backend/loops.py``).

``find_rows`` decides it.  Every axis of every variable is a node; each equation's
``axis_map`` rule (``core/primitive.py``) joins the operand axes it keeps apart with the
output axes they become, and marks every other axis of the equation *mixed* (a reduction's,
a contraction's, a slice's, any axis of an equation without the rule).  A loop's carry and
its new value are one value, so their axes join too.  The rows are the class of a carry's
leading axis when no axis of the class is mixed, all have one size, and no variable holds two
of them.  A result axis that no operand maps and along which the result is the same at
every position (a broadcast's new axis: a bias broadcast over the rows) may join the class;
its block is as good as the whole.

``block_jaxpr`` rewrites the jaxpr with ``block`` in place of that size along each row axis
(the parameters that name shapes through each primitive's ``with_shapes`` rule) and checks
every equation's result type against its primitive's ``abstract_eval``.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from ..core.ir import Eqn, Jaxpr, Lit, Var


def elementwise_axes(in_avals, out_avals, **params) -> list:
    """The ``axis_map`` of an elementwise primitive: each operand axis of the result's size
    (operands of the result's rank; a rank-0 operand broadcasts) maps to the same axis of
    every result; an operand's size-1 axis broadcasts.  Operands of another rank (a bitcast
    to a narrower type adds a last axis) map their common leading axes of equal size."""
    out = []
    for j, o in enumerate(out_avals):
        for k, a in enumerate(in_avals):
            if a.ndim == 0:
                continue
            for d in range(min(a.ndim, o.ndim)):
                if a.shape[d] == o.shape[d]:
                    out.append((k, d, j, d))
                elif a.ndim != o.ndim:
                    break           # another rank: the common leading axes only
                # else a size-1 axis, broadcast
    return out


def kept_axes(ndim: int, dropped) -> list:
    """(operand axis, result axis) of the axes an operation keeps when it drops ``dropped``
    (a reduction's ``axes``, a squeeze's ``dimensions``), in order."""
    gone = {d % max(ndim, 1) for d in dropped}
    kept = [d for d in range(ndim) if d not in gone]
    return list(zip(kept, range(len(kept))))


class _Classes:
    """Union-find over (variable id, axis) nodes, with mixed classes."""

    def __init__(self):
        self.parent: dict = {}
        self.mixed: list = []

    def find(self, n):
        p = self.parent.setdefault(n, n)
        while p != n:
            self.parent[n] = self.parent.setdefault(p, p)
            n, p = p, self.parent[p]
        return n

    def join(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb


@dataclasses.dataclass
class Rows:
    """The row axis of each variable that holds rows (``axis``: variable id -> axis) and how
    many rows there are (``size``)."""
    axis: dict
    size: int


def _classes(jaxpr: Jaxpr, tied) -> _Classes:
    c = _Classes()
    for e in jaxpr.eqns:
        ins, outs = [a.aval for a in e.invars], [v.aval for v in e.outvars]
        rule = e.prim.axis_map
        pairs = rule(ins, outs, **e.params) if rule is not None else []
        seen_in, seen_out = set(), set()
        for k, a, j, b in pairs:
            seen_out.add((j, b))
            if k is None:
                continue
            seen_in.add((k, a))
            if isinstance(e.invars[k], Var):
                c.join((e.invars[k].id, a), (e.outvars[j].id, b))
        for k, x in enumerate(e.invars):
            if isinstance(x, Var):
                c.mixed += [(x.id, a) for a in range(x.aval.ndim) if (k, a) not in seen_in]
        for j, v in enumerate(e.outvars):
            c.mixed += [(v.id, b) for b in range(v.aval.ndim) if (j, b) not in seen_out]
    for x, y in tied:
        if isinstance(x, Var) and isinstance(y, Var):
            for a in range(min(x.aval.ndim, y.aval.ndim)):
                c.join((x.id, a), (y.id, a))
    return c


def find_rows(jaxpr: Jaxpr, tied: Sequence[tuple] = (),
              candidates: Sequence[Var] = ()) -> Rows | None:
    """The rows the jaxpr keeps apart: the class of the leading axis of the first of
    ``candidates`` for which that class is rows (see the module docstring); ``tied`` pairs
    variables that hold one value (a loop's carry and its new value).  None when there is
    none."""
    c = _classes(jaxpr, tied)
    mixed = {c.find(n) for n in c.mixed}
    every = [v for v in jaxpr.constvars + jaxpr.invars]
    every += [v for e in jaxpr.eqns for v in e.outvars]
    for cand in candidates:
        if cand.aval.ndim == 0:
            continue
        root = c.find((cand.id, 0))
        if root in mixed:
            continue
        size, axis, ok = cand.aval.shape[0], {}, True
        for v in every:
            for a in range(v.aval.ndim):
                if c.find((v.id, a)) == root:
                    if v.aval.shape[a] != size or v.id in axis:
                        ok = False
                    axis[v.id] = a
        if ok and size > 1:
            return Rows(axis, size)
    return None


def block_jaxpr(jaxpr: Jaxpr, rows: Rows, block: int) -> tuple[Jaxpr, dict] | None:
    """``jaxpr`` for ``block`` of the rows: each row axis ``block`` long, the parameters that
    name shapes to match (``with_shapes``).  Returns (the jaxpr, old variable id -> new
    variable), or None when an equation's result type disagrees with its primitive's
    ``abstract_eval`` (a parameter naming a shape that no ``with_shapes`` rule updates)."""
    new: dict = {}

    def var(v):
        if isinstance(v, Lit):
            return v
        n = new.get(v.id)
        if n is None:
            a = rows.axis.get(v.id)
            aval = v.aval
            if a is not None:
                shape = list(aval.shape)
                shape[a] = block
                aval = aval.update(shape=tuple(shape))
            n = new[v.id] = Var(aval)
        return n

    constvars = [var(v) for v in jaxpr.constvars]
    invars = [var(v) for v in jaxpr.invars]
    eqns = []
    for e in jaxpr.eqns:
        ins = [var(x) for x in e.invars]
        outs = [var(v) for v in e.outvars]
        params = e.params
        in_avals, out_avals = [x.aval for x in ins], [v.aval for v in outs]
        if e.prim.with_shapes is not None:
            params = e.prim.with_shapes(dict(params), in_avals, out_avals)
        if params is not e.params or any(isinstance(x, Var) and x.id in rows.axis
                                          for x in e.invars + e.outvars):
            try:
                got = e.prim.abstract_eval(*in_avals, **params)
            except (TypeError, ValueError):
                return None
            got = got if isinstance(got, (list, tuple)) else [got]
            if [(tuple(g.shape), g.dtype) for g in got] != \
                    [(tuple(a.shape), a.dtype) for a in out_avals]:
                return None
        eqns.append(Eqn(e.prim, ins, outs, params, e.source))
    outvars = [var(v) for v in jaxpr.outvars]
    return Jaxpr(constvars, invars, outvars, eqns), new

