"""closing-package-tb: the summary follows the account balances.

``summary-*-is-formulas`` hold each group's figures to be live formulas where they are
read, but a formula over a typed-in total (``=Calc!B2``, the group totals worked out
elsewhere and typed on a helper sheet) is live and right today and never moves when a
balance does: the prompt asks for live formulas over the account rows. Here the May
account with the largest debit (tb_2026-05-31.csv) is raised by 1,000.00 in every typed
cell holding its May balance on a row naming the account, LibreOffice recalculates, and
the summary is read as ``workbook-summary-figures`` reads it (``xlsx_table_values``, run
on the changed copy by ``checks.changed_workbook``): the account's group's current and
change must rise by 1,000.00, every other figure stay.
Fixed ranges (``SUMIF(B$2:B$18, ...)``, as the solution's) and sums of the group's rows
pass: the rows are changed in place, not added.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

BOOK = "out/closing_package.xlsx"
MAY = "tb_2026-05-31.csv"
GROUPS = "account_groups.csv"
DELTA = 1000.00
NAME = "summary-follows-the-balances"


def _fail(detail: str) -> list[dict[str, object]]:
    return [{"name": NAME, "passed": False, "detail": detail}]


def _group_of(account: int, rows: list[dict[str, str]]) -> str | None:
    """The account's group: a row naming it alone, else the range holding it."""
    single = [r["group"] for r in rows if r["from_account"] == r["to_account"]
              and int(r["from_account"]) == account]
    ranged = [r["group"] for r in rows if r["from_account"] != r["to_account"]
              and int(r["from_account"]) <= account <= int(r["to_account"])]
    found = single or ranged
    return found[0] if found else None


def _names(value: Any, account: int) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) == account
    return isinstance(value, str) and re.fullmatch(rf"\s*{account}(?:-\d+)?\b.*", value) is not None


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    import openpyxl

    from checks.changed_workbook import check_changed_workbook

    try:
        may = list(csv.DictReader((ws / MAY).open(encoding="utf-8")))
        groups = list(csv.DictReader((ws / GROUPS).open(encoding="utf-8")))
    except OSError as e:
        return _fail(f"the supplied {e.filename} is gone: nothing to change")
    top = max(may, key=lambda r: float(r["debit"] or 0))
    account, balance = int(top["account"]), round(float(top["debit"]), 2)
    group = _group_of(account, groups)
    if group is None:  # pragma: no cover - every account of the task has a group
        raise ValueError(f"{GROUPS}: no group holds account {account}")
    try:
        wb = openpyxl.load_workbook(ws / BOOK)
    except Exception as e:  # the agent's file
        return _fail(f"{BOOK}: {type(e).__name__}")
    changed = []
    for sheet in wb.worksheets:
        for row in sheet.iter_rows():
            if not any(_names(c.value, account) for c in row):
                continue
            for c in row:
                v = c.value
                if (isinstance(v, (int, float)) and not isinstance(v, bool)
                        and round(float(v), 2) == balance):
                    c.value = float(v) + DELTA
                    changed.append(f"{sheet.title}!{c.coordinate}")
    if not changed:
        return _fail(f"no row naming account {account} holds its May balance "
                     f"({balance:.2f}) as a typed figure to change")
    totals = list(csv.DictReader((ref / "tb_by_group.csv").open(encoding="utf-8")))
    for t in totals:
        if t["group"] == group:
            t["current"] = f"{float(t['current']) + DELTA:.2f}"
            t["change"] = f"{float(t['change']) + DELTA:.2f}"
    result = check_changed_workbook(wb, totals, {
        "type": "xlsx_table_values", "path": BOOK, "ref": "tb_by_group.csv", "key": "group",
        "columns": {"current": "current", "prior": "prior", "change": "change"}})
    return [{"name": NAME, "passed": result.passed,
             "detail": f"account {account} ({group}) raised by {DELTA:,.2f} in "
                       f"{', '.join(changed)}: " + result.detail}]
