"""The event-log browser's data: the log cut into compressed pages and a compact index.

A 100,000-event log is never put in the page as DOM, nor as one JSON document. It is
cut into *chunks* of :data:`CHUNK_SIZE` events, each gzip-compressed JSON in base64,
which the page decodes only when a row of that chunk is shown (the browser's own
``DecompressionStream``). Filtering runs over an *index*: per event, the dictionary
codes of its type, actor, stream, realm and business date, as little-endian ``Int32``
columns, gzip-compressed too. Filtering 100,000 events is a loop over five integer
arrays; a page of rows decodes one or two chunks.

In ``--serve`` mode the chunks are not embedded: the page fetches them from the server
(:attr:`EventLog.chunks` is what it serves).
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from erp.store import EventStore

CHUNK_SIZE = 500
"""Events per compressed chunk."""

COLUMNS = ("type", "actor", "stream", "realm", "date")
"""The index's columns, in the order they are packed."""


@dataclass(frozen=True)
class EventLog:
    """A log ready for the page: the dictionaries, the packed index and the chunks."""

    count: int
    first_position: int
    dictionaries: dict[str, list[str]]
    """Per index column, its values (the codes index into them); dates sorted."""
    index_b64: str
    """gzip of ``count`` Int32 codes per column, columns one after another, in base64."""
    chunks: tuple[str, ...]
    """Per chunk, gzip of its JSON rows in base64 (see :func:`build_event_log`)."""

    def manifest(self) -> dict[str, Any]:
        """What the page's script reads first (everything but the chunks)."""
        return {"count": self.count, "first_position": self.first_position,
                "chunk_size": CHUNK_SIZE, "columns": list(COLUMNS),
                "dictionaries": self.dictionaries, "index": self.index_b64,
                "chunks": len(self.chunks)}


def _pack(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode("ascii")


def build_event_log(store: EventStore) -> EventLog:
    """Read every event of ``store`` (in position order) into an :class:`EventLog`.

    A chunk's rows are ``[position, stream, type, realm, business_date, sim_time, actor,
    role, command, causation_id, correlation_id, payload]``, the payload as the stored
    JSON text (the page parses it only when a row is opened).
    """
    codes: dict[str, dict[str, int]] = {c: {} for c in COLUMNS}
    cols: dict[str, list[int]] = {c: [] for c in COLUMNS}
    chunks: list[str] = []
    rows: list[list[Any]] = []
    first = 0
    count = 0
    sql = ("SELECT position, stream, type, realm, business_date, sim_time, actor, role, "
           "command, causation_id, correlation_id, payload FROM events ORDER BY position")
    with store.engine.connect() as conn:
        for r in conn.exec_driver_sql(sql):
            (pos, stream, type_, realm, day, sim_time, actor, role, command, cause, corr,
             payload) = r
            if count == 0:
                first = int(pos)
            for col, value in (("type", type_), ("actor", actor), ("stream", stream),
                               ("realm", realm), ("date", str(day))):
                table = codes[col]
                code = table.get(value)
                if code is None:
                    code = table[value] = len(table)
                cols[col].append(code)
            rows.append([int(pos), stream, type_, realm, str(day), sim_time, actor, role,
                         command, cause, corr, payload])
            count += 1
            if len(rows) == CHUNK_SIZE:
                chunks.append(_pack(json.dumps(rows, separators=(",", ":")).encode()))
                rows = []
    if rows:
        chunks.append(_pack(json.dumps(rows, separators=(",", ":")).encode()))
    # dates sorted, so a date range is a range of codes
    dates = sorted(codes["date"])
    remap = {codes["date"][d]: i for i, d in enumerate(dates)}
    cols["date"] = [remap[c] for c in cols["date"]]
    dictionaries = {c: list(codes[c]) for c in COLUMNS}
    dictionaries["date"] = dates
    packed = b"".join(struct.pack(f"<{count}i", *cols[c]) for c in COLUMNS)
    return EventLog(count=count, first_position=first, dictionaries=dictionaries,
                    index_b64=_pack(packed), chunks=tuple(chunks))


def decode_chunk(text: str) -> list[list[Any]]:
    """A chunk's rows back (what the page does; the tests use it)."""
    return list(json.loads(gzip.decompress(base64.b64decode(text))))


def decode_index(log: EventLog) -> dict[str, Sequence[int]]:
    """The index's columns back as lists of codes."""
    raw = gzip.decompress(base64.b64decode(log.index_b64))
    n = log.count
    out: dict[str, Sequence[int]] = {}
    for i, c in enumerate(COLUMNS):
        out[c] = struct.unpack_from(f"<{n}i", raw, i * 4 * n)
    return out
