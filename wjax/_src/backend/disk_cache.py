"""The persistent compilation cache: lowered plans on disk, across processes.

Enabled by ``wjax.config.update("jax_compilation_cache_dir", path)`` (or the environment
variable ``JAX_COMPILATION_CACHE_DIR``), as JAX names it; JAX's related options apply:
``jax_enable_compilation_cache`` (default on), ``jax_persistent_cache_min_compile_time_secs``
(programs that compiled faster are not written; JAX's default, 1 s),
``jax_persistent_cache_min_entry_size_bytes`` and ``jax_compilation_cache_max_size`` (bytes;
the least recently used entries are removed past it; -1: no limit).

An entry is the ``Executable`` of one jaxpr for one adapter: its plan (every kernel's WGSL,
buffers, grids, liveness) and the constants of its inner jaxprs, as JSON (no pickle: loading
an entry runs no code).  The key hashes the jaxpr's structure (variables renumbered, literals
and parameters by value: ``stable_key``), the ``Target`` (the adapter's limits and options),
the adapter's identity and driver, and the source of wjax's compiler (``backend/``,
``prims/``, ``transforms/``, ``core/`` and the shader templates), so a new wjax never reads an
older one's plans.  Programs whose jaxpr holds something with no stable value (a Python
callable: ``pure_callback``, a user primitive, device-array constants inside a call) and plans
with host steps (loops driven from the host, callbacks) are not written.

What a hit saves is wjax's lowering (tracing still runs, as in JAX).  The driver's shader
compile is not wjax's to keep: WebGPU has no pipeline cache, so each new process creates its
pipelines again -- from the same WGSL, which is what drivers with their own disk caches (Mesa
radv/anv, NVIDIA, Metal) key on; lavapipe compiles every time.  ``stats`` counts hits,
misses, writes and refusals; ``execute.stats["lowered"]`` counts the plans lowered.
"""
from __future__ import annotations

import base64
import enum
import hashlib
import json
import logging
import os
import pathlib
import tempfile

import numpy as np

from ..core.config import config
from ..core.ir import ClosedJaxpr, Jaxpr, Lit, ShapedArray
from .lower import Dispatch, Plan

logger = logging.getLogger("wjax")

FORMAT = 2
stats = {"hits": 0, "misses": 0, "writes": 0, "refused": 0}


class Unstable(Exception):
    """The jaxpr holds something without a value that is the same in every process."""


def cache_dir() -> str | None:
    """The cache directory when the persistent cache is on, else None."""
    if not config.jax_enable_compilation_cache:
        return None
    d = config.jax_compilation_cache_dir
    return str(d) if d else None


# --------------------------------------------------------------------------- keys

def _aval(a) -> tuple:
    if not isinstance(a.dtype, np.dtype):
        raise Unstable(f"dtype {a.dtype}")
    return ("aval", tuple(a.shape), a.dtype.str, bool(a.weak_type))


def _param(v):
    if isinstance(v, ClosedJaxpr):
        return ("closed", _jaxpr(v.jaxpr), tuple(_const(c) for c in v.consts))
    if isinstance(v, Jaxpr):
        return ("jaxpr", _jaxpr(v))
    if isinstance(v, (bool, int, float, str, bytes, type(None))):
        return (type(v).__name__, repr(v))
    if isinstance(v, enum.Enum):
        return ("enum", type(v).__qualname__, v.name)
    if isinstance(v, tuple):          # NamedTuples included
        return (type(v).__qualname__,) + tuple(_param(x) for x in v)
    if isinstance(v, list):
        return ("list",) + tuple(_param(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((repr(k), _param(x)) for k, x in sorted(v.items(), key=repr))
    if isinstance(v, (frozenset, set)):
        return ("set",) + tuple(sorted(repr(_param(x)) for x in v))
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, (np.ndarray, np.generic)):
        return _const(v)
    if isinstance(v, type):
        return ("type", v.__module__, v.__qualname__)
    if isinstance(v, ShapedArray):
        return _aval(v)
    raise Unstable(f"parameter of type {type(v).__name__}")


def _const(c):
    if isinstance(c, (np.ndarray, np.generic, bool, int, float)):
        a = np.asarray(c)
        if a.dtype.kind not in "biuf":
            raise Unstable(f"constant of dtype {a.dtype}")
        return ("nd", a.dtype.str, a.shape, hashlib.sha256(a.tobytes()).hexdigest())
    raise Unstable(f"constant of type {type(c).__name__}")


def _jaxpr(j: Jaxpr) -> tuple:
    ids: dict = {}

    def atom(a):
        if isinstance(a, Lit):
            return ("lit", a.val.tobytes().hex(), a.val.dtype.str, bool(a.aval.weak_type))
        if a.id not in ids:
            ids[a.id] = len(ids)
        return ids[a.id]

    parts: list = [tuple(_aval(v.aval) for v in j.constvars),
                   tuple(_aval(v.aval) for v in j.invars)]
    for v in j.constvars + j.invars:
        atom(v)
    for e in j.eqns:
        if "#" in e.prim.key:                  # a user primitive: numbered per process
            raise Unstable(f"user primitive {e.prim.name}")
        parts.append((e.prim.key, tuple(atom(a) for a in e.invars),
                      tuple((k, _param(v)) for k, v in sorted(e.params.items())),
                      tuple(_aval(o.aval) for o in e.outvars)))
        for o in e.outvars:
            atom(o)
    parts.append(tuple(atom(a) for a in j.outvars))
    return tuple(parts)


_source_digest: str | None = None


def _source() -> str:
    """A digest of the compiler's source (a changed wjax never reads another's plans)."""
    global _source_digest
    if _source_digest is None:
        root = pathlib.Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        files = []
        for sub in ("backend", "prims", "transforms", "core"):
            files += sorted((root / sub).rglob("*.py"))
        files += sorted((root / "backend" / "shaders").glob("*.wgsl"))
        for f in files:
            h.update(str(f.relative_to(root.parent)).encode())
            h.update(f.read_bytes())
        _source_digest = h.hexdigest()
    return _source_digest


def key(jaxpr: Jaxpr, target, adapter_info: dict) -> str | None:
    """The entry's file key, or None when the jaxpr cannot be keyed across processes."""
    try:
        struct = _jaxpr(jaxpr)
    except Unstable as e:
        stats["refused"] += 1
        logger.debug("not cached on disk: %s", e)
        return None
    info = tuple(sorted((k, str(v)) for k, v in adapter_info.items()))
    blob = repr((FORMAT, struct, target.key(), info, _source()))
    return hashlib.sha256(blob.encode()).hexdigest()


# --------------------------------------------------------------------------- (de)serialize

def _enc_key(k):
    if isinstance(k, tuple):
        if k and k[0] == "lit" and isinstance(k[1], Lit):
            return {"lit": _enc_array(k[1].val), "aval": _enc_aval(k[1].aval)}
        return {"t": [_enc_key(x) for x in k]}
    if isinstance(k, (int, str)) or k is None:
        return k
    raise Unstable(f"buffer key {k!r}")


def _dec_key(k):
    if isinstance(k, dict):
        if "lit" in k:
            return ("lit", Lit(_dec_array(k["lit"]), _dec_aval(k["aval"])))
        return tuple(_dec_key(x) for x in k["t"])
    return k


def _enc_array(a) -> dict:
    a = np.ascontiguousarray(a)
    return {"dtype": a.dtype.str, "shape": list(a.shape),
            "data": base64.b64encode(a.tobytes()).decode()}


def _dec_array(d) -> np.ndarray:
    return np.frombuffer(base64.b64decode(d["data"]), dtype=np.dtype(d["dtype"])).reshape(
        d["shape"]).copy()


def _enc_aval(a: ShapedArray) -> list:
    if not isinstance(a.dtype, np.dtype):
        raise Unstable(f"dtype {a.dtype}")
    return [list(a.shape), a.dtype.str, bool(a.weak_type)]


def _dec_aval(d) -> ShapedArray:
    return ShapedArray(d[0], np.dtype(d[1]), d[2])


def dumps(exe) -> str | None:
    """The executable as JSON, or None when it cannot be stored."""
    plan = exe.plan
    try:
        steps = []
        for d in plan.steps:
            if not isinstance(d, Dispatch):
                raise Unstable("a host step")
            steps.append({"wgsl": d.wgsl, "keys": [_enc_key(k) for k in d.keys],
                          "grid": list(d.grid), "writes": [_enc_key(k) for k in d.writes],
                          "ranges": None if d.ranges is None else
                          [None if r is None else list(r) for r in d.ranges],
                          "label": d.label, "flops": int(d.flops), "nbytes": int(d.nbytes)})
        inner = []
        for c, aval in exe._inner:
            if not isinstance(c, (np.ndarray, np.generic, bool, int, float)):
                raise Unstable(f"an inner constant of type {type(c).__name__}")
            inner.append([_enc_array(np.asarray(c)), _enc_aval(aval)])
        doc = {"format": FORMAT, "name": exe.name, "compile_s": exe.compile_s,
               "in_avals": [_enc_aval(a) for a in exe.in_avals],
               "out_avals": [_enc_aval(a) for a in exe.out_avals],
               "inner": inner,
               "plan": {"steps": steps,
                        "in_keys": [_enc_key(k) for k in plan.in_keys],
                        "out_keys": [_enc_key(k) for k in plan.out_keys],
                        "avals": [[_enc_key(k), _enc_aval(a)] for k, a in plan.avals.items()],
                        "aliases": [[_enc_key(k), _enc_key(v)] for k, v in plan.aliases.items()],
                        "last_use": [[_enc_key(k), i] for k, i in plan.last_use.items()],
                        "consts": [[_enc_key(k), _enc_array(v)]
                                   for k, v in plan.consts.items()],
                        "submit_early": plan.submit_early}}
    except Unstable as e:
        stats["refused"] += 1
        logger.debug("not cached on disk: %s", e)
        return None
    return json.dumps(doc)


def loads(text: str):
    """(name, in avals, out avals, inner constants, Plan, compile seconds) from JSON."""
    doc = json.loads(text)
    if doc.get("format") != FORMAT:
        raise ValueError("format")
    p = doc["plan"]
    plan = Plan()
    for s in p["steps"]:
        plan.steps.append(Dispatch(
            s["wgsl"], [_dec_key(k) for k in s["keys"]], tuple(s["grid"]),
            [_dec_key(k) for k in s["writes"]],
            None if s["ranges"] is None else [None if r is None else tuple(r)
                                             for r in s["ranges"]],
            s["label"], s["flops"], s["nbytes"]))
    plan.in_keys = [_dec_key(k) for k in p["in_keys"]]
    plan.out_keys = [_dec_key(k) for k in p["out_keys"]]
    plan.avals = {_dec_key(k): _dec_aval(a) for k, a in p["avals"]}
    plan.aliases = {_dec_key(k): _dec_key(v) for k, v in p["aliases"]}
    plan.last_use = {_dec_key(k): i for k, i in p["last_use"]}
    plan.consts = {_dec_key(k): _dec_array(v) for k, v in p["consts"]}
    plan.submit_early = int(p.get("submit_early", 0))
    inner = [(_dec_array(c), _dec_aval(a)) for c, a in doc["inner"]]
    return (doc["name"], [_dec_aval(a) for a in doc["in_avals"]],
            [_dec_aval(a) for a in doc["out_avals"]], inner, plan, doc["compile_s"])


# --------------------------------------------------------------------------- files

def _path(d: str, k: str) -> str:
    return os.path.join(d, f"wjax-{k}.json")


def load(k: str):
    """The stored parts for key ``k`` (see ``loads``), or None."""
    d = cache_dir()
    if d is None:
        return None
    path = _path(d, k)
    try:
        with open(path) as f:
            text = f.read()
        parts = loads(text)
    except FileNotFoundError:
        stats["misses"] += 1
        return None
    except Exception as e:                      # a damaged or foreign entry: recompile
        logger.warning("wjax: ignoring the compilation cache entry %s (%s)", path, e)
        stats["misses"] += 1
        return None
    try:
        os.utime(path)                          # recently used (for the size limit)
    except OSError:
        pass
    stats["hits"] += 1
    return parts


def save(k: str, exe) -> bool:
    """Writes ``exe`` under key ``k`` when the options allow; True when written."""
    d = cache_dir()
    if d is None or exe.compile_s < float(config.jax_persistent_cache_min_compile_time_secs):
        return False
    text = dumps(exe)
    if text is None or len(text) < int(config.jax_persistent_cache_min_entry_size_bytes):
        return False
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".wjax-", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, _path(d, k))            # atomic: readers never see half a file
    except OSError as e:
        logger.warning("wjax: could not write the compilation cache in %s (%s)", d, e)
        return False
    stats["writes"] += 1
    _evict(d)
    return True


def _evict(d: str) -> None:
    limit = int(config.jax_compilation_cache_max_size)
    if limit < 0:
        return
    entries = []
    for name in os.listdir(d):
        if name.startswith("wjax-") and name.endswith(".json"):
            p = os.path.join(d, name)
            try:
                st = os.stat(p)
            except OSError:
                continue
            entries.append((st.st_mtime, st.st_size, p))
    total = sum(e[1] for e in entries)
    for _, size, p in sorted(entries):
        if total <= limit:
            break
        try:
            os.remove(p)
            total -= size
        except OSError:
            pass
