"""payments-match: every planted case must be handled exactly (beyond the 90% floor).

``cases.csv`` (made by the generator from the world's truth) names the bank lines of
each case; for each line the agent's matches must equal the reference's: the same
invoices and, to the cent, the same amounts. Unapplied cases are pinned by the
unapplied-reasons check.
"""

from __future__ import annotations

import csv
from decimal import Decimal, InvalidOperation
from pathlib import Path

CASES = ("card_processor", "intl_wire", "partial", "multi_invoice_ach", "customer_only_wire",
         "wrong_reference")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return [{k.strip(): (v or "").strip() for k, v in row.items() if k}
                for row in csv.DictReader(f)]


def _money(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "").replace("$", ""))
    except InvalidOperation:
        return None


def _by_line(rows: list[dict[str, str]]) -> dict[str, dict[str, Decimal | None]]:
    out: dict[str, dict[str, Decimal | None]] = {}
    for r in rows:
        out.setdefault(r.get("line_id", ""), {})[r.get("invoice_id", "")] = _money(
            r.get("amount_applied", ""))
    return out


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """One result per planted case."""
    cases = {r["case"]: r["line_ids"].split() for r in _rows(ref / "cases.csv")}
    want = _by_line(_rows(ref / "matches.csv"))
    path = ws / "out" / "matches.csv"
    if not path.is_file():
        return [{"name": c, "passed": False, "detail": "out/matches.csv is missing"}
                for c in CASES]
    try:
        got = _by_line(_rows(path))
    except (csv.Error, UnicodeDecodeError) as e:
        return [{"name": c, "passed": False, "detail": f"out/matches.csv unreadable: {e}"}
                for c in CASES]
    results: list[dict[str, object]] = []
    for case in CASES:
        wrong = []
        for line in cases.get(case, []):
            expected = want.get(line, {})
            actual = got.get(line, {})
            same = set(expected) == set(actual) and all(
                actual[k] is not None and abs(actual[k] - v) <= Decimal("0.01")  # type: ignore[operator]
                for k, v in expected.items() if v is not None)
            if not same:
                wrong.append(f"{line}: expected {_show(expected)}, got {_show(actual)}")
        results.append({"name": case, "passed": not wrong,
                        "detail": "; ".join(wrong[:3]) or f"{len(cases.get(case, []))} line(s) "
                        "right"})
    return results


def _show(m: dict[str, Decimal | None]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(m.items())) or "nothing"
