"""A width-aware pretty printer (the document algebra jaxprs are printed with).

A document is text, a concatenation, a *break* (a separator that is printed as its text when
its group fits on the line and as a newline plus the current indentation when not), a *nest*
(more indentation for the breaks inside) or a *group* (a unit laid out flat if all of it fits
in the remaining width, else with its own breaks as newlines; groups inside it decide for
themselves).  ``fmt(doc, width)`` lays a document out; jaxprs use width 80, as JAX's printer
does, so equations, parameter lists and sub-jaxprs break where JAX's break.
"""
from __future__ import annotations

from typing import Sequence

FLAT, BREAK = 0, 1


class Doc:
    __slots__ = ()

    def __add__(self, other: "Doc") -> "Doc":
        return Concat([self, other])


class Text(Doc):
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class Concat(Doc):
    __slots__ = ("children",)

    def __init__(self, children: Sequence[Doc]):
        self.children = list(children)


class Brk(Doc):
    __slots__ = ("text",)

    def __init__(self, text: str = " "):
        self.text = text


class Group(Doc):
    __slots__ = ("child",)

    def __init__(self, child: Doc):
        self.child = child


class Nest(Doc):
    __slots__ = ("n", "child")

    def __init__(self, n: int, child: Doc):
        self.n, self.child = n, child


def text(s: str) -> Doc:
    return Text(s)


def concat(docs: Sequence[Doc]) -> Doc:
    return Concat(docs)


def brk(s: str = " ") -> Doc:
    return Brk(s)


def group(d: Doc) -> Doc:
    return Group(d)


def nest(n: int, d: Doc) -> Doc:
    return Nest(n, d)


def nil() -> Doc:
    return Concat([])


def join(sep: Doc, docs: Sequence[Doc]) -> Doc:
    out: list[Doc] = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return Concat(out)


def _fits(doc: Doc, width: int) -> bool:
    """Whether ``doc`` laid out flat takes at most ``width`` columns."""
    stack = [doc]
    while stack and width >= 0:
        d = stack.pop()
        if isinstance(d, Text):
            width -= len(d.text)
        elif isinstance(d, Brk):
            width -= len(d.text)
        elif isinstance(d, Concat):
            stack.extend(reversed(d.children))
        else:                        # Group, Nest: flat all the way down
            stack.append(d.child)
    return width >= 0


def fmt(doc: Doc, width: int = 80) -> str:
    out: list[str] = []
    col = 0
    agenda = [(0, BREAK, doc)]
    while agenda:
        indent, mode, d = agenda.pop()
        if isinstance(d, Text):
            out.append(d.text)
            col += len(d.text)
        elif isinstance(d, Concat):
            agenda.extend((indent, mode, c) for c in reversed(d.children))
        elif isinstance(d, Brk):
            if mode == BREAK:
                out.append("\n" + " " * indent)
                col = indent
            else:
                out.append(d.text)
                col += len(d.text)
        elif isinstance(d, Group):
            agenda.append((indent, FLAT if mode == FLAT or _fits(d.child, width - col)
                           else BREAK, d.child))
        elif isinstance(d, Nest):
            agenda.append((indent + d.n, mode, d.child))
    return "".join(out)
