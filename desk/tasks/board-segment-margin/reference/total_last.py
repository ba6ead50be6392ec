"""board-segment-margin: the "Total" row is the table's last row, as the prompt asks.

The figure checks key rows by segment, so a table with its Total first (or between two
segments) matched them; the board pack reads the total at the foot of the table.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

TABLE = "out/segment_margin.csv"


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    path = ws / TABLE
    if not path.is_file():
        return [{"name": "total-is-the-last-row", "passed": False, "detail": f"no {TABLE}"}]
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig",
                                                          errors="replace"))))
    segments = [(r.get("segment") or "").strip() for r in rows]
    last = segments[-1] if segments else ""
    passed = last.casefold() == "total"
    detail = "" if passed else f"the last row is {last!r}, not 'Total' (rows: {segments})"
    return [{"name": "total-is-the-last-row", "passed": passed, "detail": detail}]
