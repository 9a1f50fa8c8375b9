"""The safe, versioned encoding of what fusion parties send each other (no pickle).

Every message is::

    magic b"ANLF" | version u16 | kind u8 | header length u32 | header (UTF-8 JSON) | body

all integers little-endian. Kinds:

* ``instructions`` (1): one round's specialization. Header: ``attribute``,
  ``parent`` (node id in the shared cut), ``parent_label``, ``children``
  (labels) and ``counts`` (records per child). Body: the record ids (row
  positions in id order) of each child in turn, as int32.
* ``columns`` (3): a provider's part of the fused table at the end. Header:
  ``provider``, ``columns``, ``rows`` and ``labels`` (per column its distinct
  values). Body: per column, each row's index into its labels, as int32.

:func:`decode` checks the magic, the version, the kind and every field's type
and size, and raises :class:`anonlab.fusion.codec.ProtocolError` (a one-line
:class:`AnonlabError`) on anything else: never another exception, whatever
the bytes. Record ids, counts, rows and node ids are at most :data:`MAX_INDEX`
(they index int32 arrays).
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.fusion.codec import ProtocolError

MAGIC = b"ANLF"
VERSION = 1
KIND_INSTRUCTIONS = 1
KIND_COLUMNS = 3
_PREFIX = struct.Struct("<4sHBI")
MAX_HEADER = 64 * 1024 * 1024
MAX_INDEX = 2**31 - 1


@dataclass(frozen=True)
class Instructions:
    """One specialization: records of ``parent`` move to each child value."""

    attribute: str
    parent: int
    parent_label: str
    children: tuple[str, ...]
    records: tuple[NDArray[Any], ...]


@dataclass(frozen=True)
class Columns:
    """A provider's released columns of the fused table (strings, one array per column)."""

    provider: int
    columns: Mapping[str, Sequence[str] | NDArray[Any]]


def _pack(kind: int, header: dict[str, Any], body: bytes = b"") -> bytes:
    head = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return _PREFIX.pack(MAGIC, VERSION, kind, len(head)) + head + body


def encode_instructions(instr: Instructions) -> bytes:
    """Encode one round's instructions."""
    arrays = [np.ascontiguousarray(r, dtype="<i4") for r in instr.records]
    header = {
        "attribute": instr.attribute,
        "parent": int(instr.parent),
        "parent_label": instr.parent_label,
        "children": list(instr.children),
        "counts": [int(a.size) for a in arrays],
    }
    return _pack(KIND_INSTRUCTIONS, header, b"".join(a.tobytes() for a in arrays))


def encode_columns(cols: Columns) -> bytes:
    """Encode a provider's part of the fused table (dictionary-encoded columns)."""
    lengths = {len(v) for v in cols.columns.values()}
    rows = lengths.pop() if lengths else 0
    if lengths:
        raise ValueError("columns of different lengths")
    labels, bodies = [], []
    for values in cols.columns.values():
        codes, uniques = pd.factorize(np.asarray(values, dtype=object))
        labels.append([str(u) for u in uniques])
        bodies.append(codes.astype("<i4").tobytes())
    header = {
        "provider": cols.provider,
        "columns": list(cols.columns),
        "rows": rows,
        "labels": labels,
    }
    return _pack(KIND_COLUMNS, header, b"".join(bodies))


def _bad(what: str) -> ProtocolError:
    return ProtocolError(
        f"malformed fusion message: {what}: the sending party is not a "
        "compatible anonlab party or the message was corrupted"
    )


def _split(data: bytes) -> tuple[int, dict[str, Any], bytes]:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise _bad("not bytes")
    data = bytes(data)
    if len(data) < _PREFIX.size:
        raise _bad(f"{len(data)} bytes, shorter than the {_PREFIX.size}-byte prefix")
    magic, version, kind, head_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise _bad(f"foreign magic {magic!r}")
    if version != VERSION:
        raise ProtocolError(
            f"fusion message version {version}, this anonlab speaks version "
            f"{VERSION}: run the same anonlab version at every party"
        )
    if head_len > MAX_HEADER or _PREFIX.size + head_len > len(data):
        raise _bad(f"header length {head_len} exceeds the message")
    try:
        header = json.loads(data[_PREFIX.size : _PREFIX.size + head_len].decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError
        raise _bad(f"header is not UTF-8 JSON ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise _bad("header is not a JSON object")
    return int(kind), header, data[_PREFIX.size + head_len :]


def _field(header: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in header:
        raise _bad(f"field '{name}' is missing")
    value = header[name]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise _bad(f"field '{name}' has the wrong type")
    if isinstance(value, int) and not 0 <= value <= MAX_INDEX:
        raise _bad(f"field '{name}' = {value} is outside 0..{MAX_INDEX}")
    return value


def _expect(kind: int, wanted: int) -> None:
    names = {KIND_INSTRUCTIONS: "instructions", KIND_COLUMNS: "columns"}
    if kind != wanted:
        raise _bad(f"expected {names[wanted]}, got kind {kind}")


def decode_instructions(data: bytes) -> Instructions:
    """Decode and check one round's instructions."""
    kind, header, body = _split(data)
    _expect(kind, KIND_INSTRUCTIONS)
    attribute = _field(header, "attribute", str)
    parent = _field(header, "parent", int)
    parent_label = _field(header, "parent_label", str)
    children = _field(header, "children", list)
    counts = _field(header, "counts", list)
    if not children or len(children) != len(counts):
        raise _bad("children and counts differ in length or are empty")
    if not all(isinstance(c, str) for c in children) or len(set(children)) != len(children):
        raise _bad("child labels are not distinct strings")
    if not all(
        isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= MAX_INDEX for c in counts
    ):
        raise _bad(f"counts are not integers in 0..{MAX_INDEX}")
    if len(body) != 4 * sum(counts):
        raise _bad(f"body has {len(body)} bytes for {sum(counts)} record ids")
    ids = np.frombuffer(body, dtype="<i4").astype(np.int64)
    bounds = np.cumsum([0, *counts])
    records = tuple(ids[a:b] for a, b in itertools.pairwise(bounds))
    return Instructions(attribute, parent, parent_label, tuple(children), records)


def decode_columns(data: bytes) -> Columns:
    """Decode and check a provider's part of the fused table."""
    kind, header, body = _split(data)
    _expect(kind, KIND_COLUMNS)
    provider = _field(header, "provider", int)
    names = _field(header, "columns", list)
    rows = _field(header, "rows", int)
    labels = _field(header, "labels", list)
    if (
        not all(isinstance(n, str) for n in names)
        or len(set(names)) != len(names)
        or len(labels) != len(names)
    ):
        raise _bad("column names and labels do not match")
    if len(body) != 4 * rows * len(names):
        raise _bad(f"body has {len(body)} bytes for {len(names)} columns of {rows} rows")
    codes = np.frombuffer(body, dtype="<i4").reshape(len(names), rows)
    out: dict[str, NDArray[Any]] = {}
    for name, table, col in zip(names, labels, codes, strict=True):
        if not isinstance(table, list) or not all(isinstance(v, str) for v in table):
            raise _bad(f"labels of column '{name}' are not strings")
        if rows and (col.min() < 0 or col.max() >= len(table)):
            raise _bad(f"column '{name}' refers to a label it does not have")
        out[name] = np.asarray(table, dtype=object)[col] if table else np.zeros(0, dtype=object)
    return Columns(provider, out)
