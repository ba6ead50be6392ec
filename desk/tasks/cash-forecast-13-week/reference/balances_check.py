"""cash-forecast-13-week: the forecast's cash balances roll forward week by week.

``forecast-opening-cash``: week 1 opens at the operating account's balance at the task
date (``opening.csv``), to the cent. ``forecast-balances-roll``: every week's closing is
its opening plus receipts less disbursements, and every week opens at the previous
week's closing, to the cent; so a receipts or disbursements cell changed alone fails.
"""

from __future__ import annotations

import csv
from decimal import Decimal, InvalidOperation
from pathlib import Path

FORECAST = "out/cash_forecast.csv"


def _cents(text: str) -> int:
    return int((Decimal(text.replace("$", "").replace(",", "").strip()) * 100)
               .to_integral_value())


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """``forecast-opening-cash`` and ``forecast-balances-roll``."""
    path = ws / FORECAST
    names = ("forecast-opening-cash", "forecast-balances-roll")
    if not path.is_file():
        return [{"name": n, "passed": False, "detail": f"no {FORECAST}"} for n in names]
    with path.open(encoding="utf-8-sig", newline="") as f:
        rows = [{(k or "").strip(): v for k, v in r.items()}  # " opening" is opening
                for r in csv.DictReader(f)]
    with (ref / "opening.csv").open(encoding="utf-8", newline="") as f:
        want = _cents(next(csv.DictReader(f))["opening"])
    try:
        rows.sort(key=lambda r: int(r["week"]))
        table = [(r["week"], _cents(r["opening"]), _cents(r["receipts"]),
                  _cents(r["disbursements"]), _cents(r["closing"])) for r in rows]
    except (KeyError, ValueError, InvalidOperation, TypeError) as exc:
        why = f"{FORECAST}: unreadable week, opening, receipts, disbursements or closing ({exc})"
        return [{"name": n, "passed": False, "detail": why} for n in names]
    if not table:
        return [{"name": n, "passed": False, "detail": f"{FORECAST} has no rows"} for n in names]
    first = table[0]
    opening_ok = first[0] == "1" and first[1] == want
    off: list[str] = []
    previous = None
    for week, opening, receipts, disbursements, closing in table:
        if previous is not None and opening != previous:
            off.append(f"week {week} opens at {opening / 100:.2f}, week before closed at "
                       f"{previous / 100:.2f}")
        if opening + receipts - disbursements != closing:
            off.append(f"week {week}: {opening / 100:.2f} + {receipts / 100:.2f} - "
                       f"{disbursements / 100:.2f} is not {closing / 100:.2f}")
        previous = closing
    return [
        {"name": names[0], "passed": opening_ok,
         "detail": f"week {first[0]} opens at {first[1] / 100:.2f} (operating account "
                   f"{want / 100:.2f})"},
        {"name": names[1], "passed": not off,
         "detail": "; ".join(off[:5]) if off else f"{len(table)} weeks roll forward"},
    ]
