"""demand-forecast: one row per item, and each quantity a quantity customers can order.

``items-once``: no item of out/forecast.csv is written on more than one row (the prompt
asks for one row per item; ``forecast-items`` judges which items, ``forecast-wape`` the
figures). ``quantities-not-negative``: no quantity reads as a negative number (a total
quantity ordered is never below zero; the error bound alone let one item forecast at -5
through). A quantity that is not a number is left to ``forecast-wape``, which fails it.

Read as the file checks read a CSV: UTF-8 with or without a byte-order mark, the first
non-blank row the header, names and cells stripped of surrounding whitespace, rows
whose every cell is blank skipped, numbers with thousands commas, a currency sign or
accounting parentheses.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from decimal import Decimal, InvalidOperation
from pathlib import Path

FORECAST = "out/forecast.csv"
SHOW = 5
MINUS = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-"})


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    """``items-once`` and ``quantities-not-negative`` on out/forecast.csv."""
    names = ("items-once", "quantities-not-negative")
    rows, why = _read(ws / FORECAST)
    if rows is None:
        return [{"name": n, "passed": False, "detail": f"{FORECAST}: {why}"} for n in names]
    counts = Counter(item for item, _ in rows if item)
    twice = sorted(f"{item!r} ({n} rows)" for item, n in counts.items() if n > 1)
    negative = [f"{item!r} = {qty!r}" for item, qty in rows if _negative(qty)]
    return [
        {"name": names[0], "passed": not twice,
         "detail": (f"{FORECAST}: items on more than one row ({len(twice)}): "
                    + _shown(twice)) if twice
         else f"{FORECAST}: each of {len(counts)} items on one row",
         "metrics": {"items_twice": len(twice)}},
        {"name": names[1], "passed": not negative,
         "detail": (f"{FORECAST}: negative quantities ({len(negative)}): "
                    + _shown(negative)) if negative
         else f"{FORECAST}: no negative quantity",
         "metrics": {"negative": len(negative)}},
    ]


def _negative(cell: str) -> bool:
    """Whether ``cell`` reads as a number below zero (``-5``, ``(5)``, ``-$1,200``)."""
    t = re.sub(r"[$€£¥%,\s]", "", cell.translate(MINUS))
    if t.startswith("(") and t.endswith(")"):
        t = "-" + t[1:-1]
    try:
        return Decimal(t) < 0
    except InvalidOperation:
        return False


def _shown(values: list[str]) -> str:
    more = f", ... ({len(values) - SHOW} more)" if len(values) > SHOW else ""
    return ", ".join(values[:SHOW]) + more


def _read(path: Path) -> tuple[list[tuple[str, str]] | None, str]:
    """``(item, quantity)`` per data row, stripped; or None and why the file is unusable."""
    if not path.is_file():
        return None, "no such file"
    try:
        text = path.read_bytes().decode("utf-8-sig")
        table = [row for row in csv.reader(io.StringIO(text, newline=""))
                 if any(cell.strip() for cell in row)]
    except (UnicodeDecodeError, csv.Error) as e:
        return None, f"not a readable UTF-8 CSV ({e})"
    if not table:
        return None, "no header"
    header = [h.strip() for h in table[0]]
    missing = [c for c in ("item", "quantity") if c not in header]
    if missing:
        return None, f"no column {', '.join(missing)} (header: {header})"
    i, q = header.index("item"), header.index("quantity")
    return [(_cell(row, i), _cell(row, q)) for row in table[1:]], ""


def _cell(row: list[str], k: int) -> str:
    return row[k].strip() if k < len(row) else ""
