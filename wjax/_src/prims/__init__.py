"""All primitives, one block each, grouped by family (importing this registers them all)."""
from . import elementwise, shape, reduce, indexing, dot  # noqa: F401
from . import cumulative, sort, conv, special, decomp  # noqa: F401
from . import bitcast, random, fft, rows, attention  # noqa: F401
from . import calls, control, callback, collective, exported, shard_map, solves  # noqa: F401
