"""The bytes of an exported program (``Exported.serialize``), and pytree structures as JSON.

Layout (all integers little-endian; docs/export.md is the reference for other readers)::

    0   8 bytes   magic b"WJAXEXP\\0"
    8   u32       format version (FORMAT_VERSION)
    12  u32       H: byte length of the header (JSON, UTF-8, space-padded to a multiple of 16)
    16  u64       B: byte length of the blob section
    24  8 bytes   zero
    32  32 bytes  SHA-256 of bytes [64, 64 + H + B)
    64  H bytes   header
    64+H B bytes  blobs: the program's constants in their storage dtypes, each at a multiple
                  of 16 bytes (the header's "blobs": offset, nbytes, dtype, shape)
"""
from __future__ import annotations

import base64
import collections
import hashlib
import json
import struct

import numpy as np

from ..core import tree as _tree

MAGIC = b"WJAXEXP\0"
FORMAT_VERSION = 1
_PREFIX = 64


def _pad(n: int, to: int = 16) -> int:
    return (n + to - 1) // to * to


def write(header: dict, blobs: list) -> bytearray:
    """The serialized program: ``header`` (JSON-able) and ``blobs`` (NumPy arrays)."""
    entries, offset = [], 0
    for b in blobs:
        b = np.ascontiguousarray(b)
        entries.append({"offset": offset, "nbytes": int(b.nbytes), "dtype": b.dtype.name,
                        "shape": list(b.shape)})
        offset = _pad(offset + b.nbytes)
    doc = dict(header, format="wjax.export", version=FORMAT_VERSION, blobs=entries)
    text = json.dumps(doc, separators=(",", ":")).encode()
    text += b" " * (_pad(len(text)) - len(text))
    section = bytearray(offset)
    for b, e in zip(blobs, entries):
        section[e["offset"]:e["offset"] + e["nbytes"]] = np.ascontiguousarray(b).tobytes()
    payload = text + bytes(section)
    out = bytearray(MAGIC)
    out += struct.pack("<IIQ", FORMAT_VERSION, len(text), len(section))
    out += bytes(8) + hashlib.sha256(payload).digest()
    out += payload
    return out


def read(data) -> tuple[dict, list]:
    """(header, blobs) of a serialized program; ValueError naming what is wrong with one
    that is not (another file, a newer format, damaged bytes)."""
    data = bytes(data)
    if len(data) < _PREFIX or data[:8] != MAGIC:
        raise ValueError("jax.export.deserialize: these bytes are not a wjax exported program "
                         "(no 'WJAXEXP' header)")
    version, h, b = struct.unpack_from("<IIQ", data, 8)
    if version != FORMAT_VERSION:
        raise ValueError(f"jax.export.deserialize: the program has serialization format "
                         f"version {version}; this wjax reads version {FORMAT_VERSION}")
    if len(data) != _PREFIX + h + b:
        raise ValueError(f"jax.export.deserialize: the program is truncated or damaged "
                         f"({len(data)} bytes where its header says {_PREFIX + h + b})")
    if hashlib.sha256(data[_PREFIX:]).digest() != data[32:64]:
        raise ValueError("jax.export.deserialize: the program is damaged (its SHA-256 "
                         "checksum does not match)")
    header = json.loads(data[_PREFIX:_PREFIX + h].decode())
    base = _PREFIX + h
    blobs = []
    for e in header.pop("blobs"):
        start = base + e["offset"]
        blobs.append(np.frombuffer(data, np.dtype(e["dtype"]), count=int(np.prod(e["shape"])),
                                   offset=start).reshape(e["shape"]).copy())
    return header, blobs


# --------------------------------------------------------------------------- pytrees

_by_type: dict = {}      # node type -> (serialized name, serialize aux, deserialize aux)
_by_name: dict = {}      # serialized name -> node type


def register_pytree_node_serialization(nodetype, *, serialized_name: str, serialize_auxdata,
                                       deserialize_auxdata, from_children=None):
    """Lets ``in_tree``/``out_tree`` hold ``nodetype`` nodes: ``serialize_auxdata(aux) ->
    bytes`` and ``deserialize_auxdata(bytes) -> aux`` (JAX's
    ``jax.export.register_pytree_node_serialization``)."""
    if nodetype in _by_type:
        raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. "
                         f"Previous registration was with serialized_name "
                         f"`{_by_type[nodetype][0]}`.")
    if serialized_name in _by_name:
        raise ValueError(f"Duplicate serialization registration for serialized_name "
                         f"`{serialized_name}`. Previous registration was for type "
                         f"`{_by_name[serialized_name]}`.")
    _by_type[nodetype] = (serialized_name, serialize_auxdata, deserialize_auxdata)
    _by_name[serialized_name] = nodetype
    return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name: str):
    """Lets ``in_tree``/``out_tree`` hold the namedtuple type ``nodetype``."""
    if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)
            and hasattr(nodetype, "_fields")):
        raise ValueError(f"Cannot register {nodetype} as a namedtuple: it is not a "
                         "namedtuple type")
    return register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name, serialize_auxdata=lambda aux: b"",
        deserialize_auxdata=lambda b: nodetype)


def _unregistered(typ) -> ValueError:
    return ValueError(f"Cannot serialize PyTreeDef containing an unregistered type `{typ}`. "
                      "Use `export.register_pytree_node_serialization` or "
                      "`export.register_namedtuple_serialization`.")


def _json_key(k):
    if isinstance(k, (str, int, float, bool)) or k is None:
        return k
    raise ValueError(f"Cannot serialize a PyTreeDef with the dictionary key {k!r} (keys must "
                     "be strings, numbers, booleans or None)")


def tree_to_json(t: _tree.PyTreeDef):
    """``"*"`` for a leaf, else ``{"t": kind, "c": children, ...}`` (docs/export.md)."""
    entry = t._entry
    if entry is None:
        return "*"
    children = [tree_to_json(c) for c in t._children]
    if entry.kind in ("none", "tuple", "list"):
        return {"t": entry.kind, "c": children}
    if entry.kind == "dict":
        return {"t": "dict", "k": [_json_key(k) for k in t._aux], "c": children}
    if t._type is collections.OrderedDict:
        return {"t": "ordereddict", "k": [_json_key(k) for k in t._aux], "c": children}
    typ = t._aux if entry.kind == "namedtuple" else t._type
    reg = _by_type.get(typ)
    if reg is None:
        raise _unregistered(typ)
    name, ser, _ = reg
    if entry.kind == "namedtuple":
        return {"t": "namedtuple", "n": name, "c": children}
    return {"t": "custom", "n": name, "a": base64.b64encode(bytes(ser(t._aux))).decode(),
            "c": children}


def tree_from_json(d) -> _tree.PyTreeDef:
    if d == "*":
        return _tree._LEAF
    children = [tree_from_json(c) for c in d["c"]]
    kind = d["t"]
    if kind in ("none", "tuple", "list"):
        typ = {"none": type(None), "tuple": tuple, "list": list}[kind]
        return _tree.PyTreeDef(_tree._registry[typ], typ, None, children)
    if kind == "dict":
        return _tree.PyTreeDef(_tree._registry[dict], dict, tuple(d["k"]), children)
    if kind == "ordereddict":
        typ = collections.OrderedDict
        return _tree.PyTreeDef(_tree._registry[typ], typ, tuple(d["k"]), children)
    typ = _by_name.get(d["n"])
    if typ is None:
        raise ValueError(f"Cannot deserialize a PyTreeDef with the node type serialized as "
                         f"`{d['n']}`: register it first with "
                         "`export.register_pytree_node_serialization` (or "
                         "`register_namedtuple_serialization`)")
    if kind == "namedtuple":
        return _tree.PyTreeDef(_tree._NAMEDTUPLE, typ, typ, children)
    aux = _by_type[typ][2](base64.b64decode(d["a"]))
    return _tree.PyTreeDef(_tree._registry[typ], typ, aux, children)
