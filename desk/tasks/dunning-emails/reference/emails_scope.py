"""dunning-emails: the emails written are the note's customers' only, and an invoice left
out is not mentioned by its number in any form nor by its open balance.

``emails-only-the-noted-customers``: out/emails/ holds exactly one .txt per customer of
dunning.csv (the note's three), no email to anyone else. ``emails-leave-out-unmentioned``:
no email names an excluded invoice (not yet due, or on hold) of its customer, written as
in the export (INV-000030), as the note writes it (inv 30, invoice 30, #30, INV-30) or by
its open balance (939.92 or 939,92 with or without thousands separators).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path


def _rows(ref: Path) -> list[dict[str, str]]:
    with (ref / "dunning.csv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _money(amount: str) -> re.Pattern[str]:
    whole, cents = amount.split(".")
    grouped = f"{int(whole):,}".replace(",", ",?")
    return re.compile(rf"(?<![\d,.]){grouped}\.{cents}(?!\d)")


def _number(invoice_id: str) -> re.Pattern[str]:
    n = int(re.sub(r"\D", "", invoice_id))
    return re.compile(rf"(?i)(\bINV-0*{n}\b|\b(inv|invoice|no\.?|number|#)\s*#?\s*0*{n}\b)")


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    rows = _rows(ref)
    wanted = sorted({r["customer_id"] for r in rows})
    folder = ws / "out" / "emails"
    found = sorted(p.stem for p in folder.glob("*.txt")) if folder.is_dir() else []
    extra = [c for c in found if c not in wanted]
    out: list[dict[str, object]] = [{
        "name": "emails-only-the-noted-customers", "passed": not extra,
        "detail": f"emails to customers not in the note: {extra}" if extra
        else f"emails: {found}"}]
    named: list[str] = []
    for r in rows:
        if r["action"] != "exclude":
            continue
        path = folder / f"{r['customer_id']}.txt"
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if _number(r["invoice_id"]).search(text) or _money(r["open_balance"]).search(text):
            named.append(f"{r['customer_id']}: {r['invoice_id']} ({r['open_balance']}, "
                         f"{r['why']})")
    out.append({"name": "emails-leave-out-unmentioned", "passed": not named,
                "detail": ("left-out invoices mentioned: " + "; ".join(named)) if named
                else "no left-out invoice mentioned"})
    return out
