"""vendor-master-cleanup: each surviving vendor's name without leading or trailing spaces.

Today's master writes some names with spaces around them ("  Harvey Ltd "); the prompt
asks for the name "without leading or trailing spaces". ``names-from-latest-record``
compares stripped cells (as every CSV check does), so an untrimmed name passed it. Spaces
inside a name are the name's own and not looked at.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

CLEAN = "out/vendors_clean.csv"


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    return [{"name": "names-without-surrounding-spaces", **_trimmed(ws)}]


def _trimmed(ws: Path) -> dict[str, object]:
    path = ws / CLEAN
    if not path.is_file():
        return {"passed": False, "detail": f"no {CLEAN}"}
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig",
                                                          errors="replace"))))
    padded = [f"{(r.get('vendor_id') or '').strip()}: {r.get('name')!r}" for r in rows
              if r.get("name") is not None and r["name"] != r["name"].strip()]
    if padded:
        return {"passed": False, "detail": f"{CLEAN}: {len(padded)} names with leading or "
                                           f"trailing spaces: {'; '.join(padded[:5])}"}
    return {"passed": True, "detail": f"{len(rows)} names without surrounding spaces"}
