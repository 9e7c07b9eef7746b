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
    grid (``jax.debug.visualize_sharding``; JAX draws it with ``rich``)."""
    shape = tuple(shape)
    if len(shape) > 2:
        raise ValueError(f"visualize_sharding only works for shapes with 1 or 2 dimensions, "
                         f"got {len(shape)}")
    blocks = _blocks(shape if len(shape) else (1,), sharding)
    if len(shape) == 1:       # a row: blocks split columns
        blocks = {((0, 1), r): ids for (r, _), ids in blocks.items()}
    rows = sorted({r for r, _ in blocks})
    cols = sorted({c for _, c in blocks})
    labels = {k: "webgpu " + ",".join(map(str, v)) for k, v in blocks.items()}
    width = max(min_width, max(len(v) for v in labels.values()) + 2)
    width = min(width, max(max_width // max(len(cols), 1), len(max(labels.values(), key=len))))
    line = lambda l, m, r: l + m.join("─" * width for _ in cols) + r  # noqa: E731
    out = [line("┌", "┬", "┐")]
    for i, r in enumerate(rows):
        out.append("│" + "│".join(labels.get((r, c), "").center(width) for c in cols) + "│")
        out.append(line("├", "┼", "┤") if i + 1 < len(rows) else line("└", "┴", "┘"))
    _print("\n".join(out))


def visualize_array_sharding(arr, **kwargs) -> None:
    """Draws how ``arr`` is laid out over devices (see ``visualize_sharding``)."""
    visualize_sharding(arr.shape, arr.sharding, **kwargs)


def inspect_array_sharding(value, *, callback) -> None:
    """Calls ``callback(sharding)`` with the sharding of ``value`` (a concrete array)."""
    callback(value.sharding)


__all__ = ["breakpoint", "callback", "inspect_array_sharding", "log", "print",
           "visualize_array_sharding", "visualize_sharding"]
