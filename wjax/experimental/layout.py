"""``jax.experimental.layout``: how an array's elements are laid out in device memory.
wjax stores every array row-major (the last axis fastest), so the one layout it has is
``Layout(major_to_minor=(0, 1, ..., n-1))``; asking for another raises."""
from __future__ import annotations

from typing import Any, Sequence

__all__ = ["Format", "Layout", "with_layout_constraint"]


class Layout:
    """``major_to_minor``: the axes from slowest- to fastest-varying (None: unspecified)."""

    AUTO: "Layout"

    def __init__(self, major_to_minor: Sequence[int] | None = None, tiling: Any = None,
                 sub_byte_element_size_in_bits: int = 0):
        self.major_to_minor = None if major_to_minor is None else tuple(major_to_minor)
        self.tiling = tiling
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def __eq__(self, other):
        return (isinstance(other, Layout) and self.major_to_minor == other.major_to_minor
                and self.tiling == other.tiling)

    def __hash__(self):
        return hash((self.major_to_minor, self.tiling))

    def __repr__(self):
        return f"Layout(major_to_minor={self.major_to_minor})"


Layout.AUTO = Layout()


class Format:
    """A layout together with a sharding."""

    def __init__(self, layout: Layout | None = None, sharding: Any = None):
        self.layout, self.sharding = layout, sharding

    def __eq__(self, other):
        return (isinstance(other, Format) and self.layout == other.layout
                and self.sharding == other.sharding)

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __repr__(self):
        return f"Format({self.layout}, {self.sharding})"


def with_layout_constraint(x: Any, layout: Layout | Format | None) -> Any:
    """``x``, which is row-major: any other requested layout raises NotImplementedError."""
    lay = layout.layout if isinstance(layout, Format) else layout
    if lay is None or lay.major_to_minor is None:
        return x
    row_major = tuple(range(len(getattr(x, "shape", ()))))
    if lay.major_to_minor != row_major:
        raise NotImplementedError(f"wjax stores arrays row-major {row_major}; layout "
                                  f"{lay.major_to_minor} is not supported")
    return x
