"""``jax.debug``: prints, callbacks and the debugger inside traced code, and drawings of how
arrays are laid out over devices."""
from ._src.api.callbacks import debug_callback as callback
from ._src.api.callbacks import debug_log as log
from ._src.api.callbacks import debug_print as print  # noqa: A001
from .debugger import breakpoint  # noqa: A004

_print = __builtins__["print"] if isinstance(__builtins__, dict) else __builtins__.print


def _blocks(shape, sharding):
    """The distinct blocks of a 1-D or 2-D array: {(row slice, col slice): [device ids]}."""
    idx = sharding.devices_indices_map(tuple(shape))
    out: dict = {}
    for d, ix in sorted(idx.items(), key=lambda kv: kv[0].id):
        rows = ix[0].indices(shape[0]) if len(shape) >= 1 else (0, 1, 1)
        cols = ix[1].indices(shape[1]) if len(shape) == 2 else (0, 1, 1)
        out.setdefault((rows[:2], cols[:2]), []).append(d.id)
    return out


def visualize_sharding(shape, sharding, *, use_color: bool = False, scale: float = 1.0,
                       min_width: int = 9, max_width: int = 80, color_map=None) -> None:
    """Draws which devices hold which block of an array of ``shape`` (1-D or 2-D) as a text
    grid, laid out as JAX's ``jax.debug.visualize_sharding`` lays it out (JAX draws it with
    ``rich``: a box per block, its width and height in proportion to the block's share of the
    array, labelled with the platform and the device ids)."""
    shape = tuple(shape)
    if len(shape) > 2 or len(shape) < 1:
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    kind = next(iter(sharding.device_set)).platform.upper()
    _print(_drawing(shape, _blocks(shape, sharding), kind, scale, min_width, max_width))


def _drawing(shape, blocks, kind, scale, min_width, max_width) -> str:
    """The grid of ``visualize_sharding`` for ``blocks`` ({(rows, cols): device ids}),
    each labelled ``kind`` and its ids."""
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    if len(shape) == 1:       # a row: blocks split columns
        blocks = {((0, 1), r): ids for (r, _), ids in blocks.items()}
    rows = sorted({r for r, _ in blocks})
    cols = sorted({c for _, c in blocks})
    cells = {}
    for (r, c), ids in blocks.items():
        entry = f"{kind} " + ",".join(str(i) for i in sorted(ids))
        if len(shape) == 2:
            width = (c[1] - c[0]) / shape[1]
            height = int((r[1] - r[0]) / shape[0] * base_height)
        else:
            width, height = (c[1] - c[0]) / shape[0], 1
        width = min(max(int(width * base_width * 2.5), min_width), max_width)
        left, extra = divmod(width - len(entry) - 2, 2)
        top, extra_h = divmod(height - 2, 2)
        cells[r, c] = (entry, max(top, 0), max(left + extra, 0), max(top + extra_h, 0),
                       max(left, 0))
    col_w = [max(cells[r, c][4] + len(cells[r, c][0]) + cells[r, c][2] for r in rows
                 if (r, c) in cells) for c in cols]
    out = ["┌" + "┬".join("─" * w for w in col_w) + "┐"]
    for i, r in enumerate(rows):
        lines = []
        for c, w in zip(cols, col_w):
            entry, top, right, bottom, left = cells.get((r, c), ("", 0, 0, 0, 0))
            inner = w - left - right
            pad = inner - len(entry)
            text = " " * left + " " * (pad // 2) + entry + " " * (pad - pad // 2) + " " * right
            lines.append([" " * w] * top + [text] + [" " * w] * bottom)
        height = max(len(col) for col in lines)
        for k in range(height):
            out.append("│" + "│".join(col[k] if k < len(col) else " " * w
                                      for col, w in zip(lines, col_w)) + "│")
        out.append("├" + "┼".join("─" * w for w in col_w) + "┤" if i + 1 < len(rows)
                   else "└" + "┴".join("─" * w for w in col_w) + "┘")
    return "\n".join(out)


def visualize_array_sharding(arr, **kwargs) -> None:
    """Draws how ``arr`` is laid out over devices (see ``visualize_sharding``)."""
    visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value, *, callback) -> None:
    """Calls ``callback(sharding)`` with the sharding of ``value`` (a concrete array)."""
    callback(value.sharding)


__all__ = ["breakpoint", "callback", "inspect_array_sharding", "log", "print",
           "visualize_array_sharding", "visualize_sharding"]
