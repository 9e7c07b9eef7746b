"""``jax._src.util``: the small list helpers JAX's tutorials and libraries import from JAX's
internals ("Writing custom interpreters": ``safe_map``)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["merge_lists", "partition_list", "safe_map", "safe_zip", "split_list", "subvals",
           "unzip2", "unzip3"]


def safe_map(f: Callable, *args: Sequence) -> list:
    """``list(map(f, *args))``, requiring equal lengths."""
    args = [list(a) for a in args]
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"length mismatch: {[len(x) for x in args]}")
    return list(map(f, *args))


def safe_zip(*args: Sequence) -> list:
    """``list(zip(*args))``, requiring equal lengths."""
    args = [list(a) for a in args]
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"length mismatch: {[len(x) for x in args]}")
    return list(zip(*args))


def unzip2(pairs) -> tuple[tuple, tuple]:
    xs, ys = [], []
    for x, y in pairs:
        xs.append(x)
        ys.append(y)
    return tuple(xs), tuple(ys)


def unzip3(triples) -> tuple[tuple, tuple, tuple]:
    xs, ys, zs = [], [], []
    for x, y, z in triples:
        xs.append(x)
        ys.append(y)
        zs.append(z)
    return tuple(xs), tuple(ys), tuple(zs)


def split_list(args: Sequence, ns: Sequence[int]) -> list[list]:
    """``args`` cut into pieces of the lengths ``ns``, and the rest."""
    args, out = list(args), []
    for n in ns:
        out.append(args[:n])
        args = args[n:]
    return out + [args]


def partition_list(bs: Sequence[bool], xs: Sequence) -> tuple[list, list]:
    """``(xs where not b, xs where b)``."""
    falses, trues = [], []
    for b, x in safe_zip(bs, xs):
        (trues if b else falses).append(x)
    return falses, trues


def merge_lists(bs: Sequence[bool], falses: Sequence, trues: Sequence) -> list:
    """The inverse of :func:`partition_list`."""
    f, t = iter(falses), iter(trues)
    return [next(t) if b else next(f) for b in bs]


def subvals(lst: Sequence, replace: Sequence[tuple[int, Any]]) -> tuple:
    out = list(lst)
    for i, v in replace:
        out[i] = v
    return tuple(out)
