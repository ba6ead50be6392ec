"""revenue-budget-variance: the commentary does not give the budget as the actual or the
actual as the budget.

``commentary-actual-and-budget-in-their-roles``: for each flagged line (variance.csv,
flag yes) and the totals (totals.csv), no text states the actual figure as the budget
("budget of 68,930.15", "68,930.15 budgeted") nor the budget figure as the actual
("revenue was 88,400.00", "88,400.00 invoiced"), figures to the cent with ``$`` and
thousands separators optional. Both figures in one sentence in any other wording pass.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

LINK = r"(?:\s+(?:of|was|were|is|at|came to|amounted to|totall?ed|:))?\s*\$?\s*"
# "budgeted revenue of 88,400.00" states a budget, not an actual
AS_BUDGET = (r"\bbudget(?:ed)?(?:\s+revenue)?" + LINK + "{x}",
             "{x}" + r"\s+(?:budget|budgeted)\b")
AS_ACTUAL = (r"(?<!budgeted )(?<!budget )\b(?:actual|revenue|invoiced|billed|sales)" + LINK
             + "{x}",
             "{x}" + r"\s+(?:invoiced|billed|actual)\b")


def _money(amount: str) -> str:
    value = abs(float(amount))
    whole, cents = f"{value:.2f}".split(".")
    return r"(?<![\d,.])" + f"{int(whole):,}".replace(",", ",?") + r"\." + cents + r"(?!\d)"


def _pairs(ref: Path) -> list[tuple[str, str, str]]:
    out = []
    with (ref / "variance.csv").open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            if r["flag"] == "yes":
                out.append((r["service"], r["actual"], r["budget"]))
    with (ref / "totals.csv").open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            out.append(("total", r["total_actual"], r["total_budget"]))
    return out


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    name = "commentary-actual-and-budget-in-their-roles"
    path = ws / "out" / "commentary.txt"
    if not path.is_file():
        return [{"name": name, "passed": False, "detail": "no out/commentary.txt"}]
    text = " ".join(path.read_text(encoding="utf-8", errors="replace").split())
    bad = []
    for label, actual, budget in _pairs(ref):
        if actual == budget:
            continue
        for pattern in AS_BUDGET:
            if re.search(pattern.format(x=_money(actual)), text, re.I):
                bad.append(f"{label}: the actual {actual} stated as the budget")
        for pattern in AS_ACTUAL:
            if re.search(pattern.format(x=_money(budget)), text, re.I):
                bad.append(f"{label}: the budget {budget} stated as the actual")
    return [{"name": name, "passed": not bad,
             "detail": "; ".join(sorted(set(bad))) if bad
             else "every actual and budget in its role"}]
