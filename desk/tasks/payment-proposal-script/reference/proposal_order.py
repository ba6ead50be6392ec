"""payment-proposal-script: the proposal left in out/ is in vendor_id order.

The prompt asks for one row per vendor "in vendor_id order"; ``proposal-figures`` keys the
rows by vendor and the held-out rerun checks the script's order, not the file left for
Friday's run. Vendor ids compare as text (V001 < V010), as the exports write them.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

PROPOSAL = "out/payment_proposal.csv"


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    return [{"name": "in-vendor-id-order", **_order(ws)}]


def _order(ws: Path) -> dict[str, object]:
    path = ws / PROPOSAL
    if not path.is_file():
        return {"passed": False, "detail": f"no {PROPOSAL}"}
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig",
                                                          errors="replace"))))
    ids = [(r.get("vendor_id") or "").strip() for r in rows]
    if ids != sorted(ids):
        return {"passed": False,
                "detail": f"{PROPOSAL} lists the vendors as {', '.join(ids)}, "
                          f"not in vendor_id order ({', '.join(sorted(ids))})"}
    return {"passed": True, "detail": f"{len(ids)} vendors in vendor_id order"}
