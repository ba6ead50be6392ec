"""ar-aging-workbook: the bucket totals follow the invoice rows.

``totals-are-formulas-where-read`` holds the bucket totals to be live formulas, but a sum
of the cells each invoice fell in this time (``=SUM(Invoices!E2,Invoices!E3,...)``) is
live and right today, and wrong as soon as an invoice ages into another bucket or the
controller pastes a new export in: the prompt asks for live formulas over the invoice
rows. Here the Current invoice with the largest balance is aged past 90 days on its row
(its days past due set to 100 and its due date to 100 days before the as-of date, each
written as the cell held it), LibreOffice recalculates, and the bucket totals are read as
``bucket-and-grand-totals`` reads them (``xlsx_ref_values``, run on the changed copy by
``checks.changed_workbook``): Current must drop by the invoice's balance, Over 90 grow by
it, the other buckets and the Total stay.
"""

from __future__ import annotations

import csv
import datetime
from pathlib import Path
from typing import Any

BOOK = "out/ar_aging.xlsx"
AS_OF = datetime.date(2026, 4, 15)
AGED = 100
NAME = "bucket-totals-follow-the-rows"


def _text(value: Any) -> str:
    return " ".join(str(value if value is not None else "").replace("_", " ").split()).casefold()


def _fail(detail: str) -> list[dict[str, object]]:
    return [{"name": NAME, "passed": False, "detail": detail}]


def _columns(sheet: Any) -> tuple[int, int, int, int] | None:
    """The header row and the invoice, due date and days past due columns, if any."""
    for row in sheet.iter_rows(max_row=min(sheet.max_row, 20)):
        cols = {"invoice": 0, "due": 0, "days": 0}
        for c in row:
            t = _text(c.value) if isinstance(c.value, str) else ""
            if "invoice" in t and not cols["invoice"]:
                cols["invoice"] = c.column
            elif "days" in t and not cols["days"]:
                cols["days"] = c.column
            elif "due" in t and not cols["due"]:
                cols["due"] = c.column
        if all(cols.values()):
            return row[0].row, cols["invoice"], cols["due"], cols["days"]
    return None


def _aged_due(old: Any) -> Any:
    """The new due date, written as the old cell was (a date, a serial number or text)."""
    due = AS_OF - datetime.timedelta(days=AGED)
    if isinstance(old, datetime.datetime):
        return datetime.datetime(due.year, due.month, due.day)
    if isinstance(old, datetime.date):
        return due
    if isinstance(old, (int, float)) and not isinstance(old, bool):
        return (due - datetime.date(1899, 12, 30)).days
    if isinstance(old, str) and not old.startswith("="):
        return due.isoformat()
    return old  # a formula: left as it is (the days cell is set)


def check(ws: Path, ref: Path) -> list[dict[str, object]]:
    import openpyxl

    from checks.changed_workbook import check_changed_workbook

    invoices = list(csv.DictReader((ref / "aging_invoices.csv").open(encoding="utf-8")))
    current = [r for r in invoices if int(r["days_past_due"]) <= 0]
    if not current:  # pragma: no cover - the task's reference has current invoices
        raise ValueError("aging_invoices.csv: no current invoice to age")
    moved = max(current, key=lambda r: float(r["balance"]))
    balance = float(moved["balance"])
    book = ws / BOOK
    try:
        wb = openpyxl.load_workbook(book)
    except Exception as e:  # the agent's file
        return _fail(f"{BOOK}: {type(e).__name__}")
    where = None
    for sheet in wb.worksheets:
        cols = _columns(sheet)
        if cols is None:
            continue
        head, inv, due, days = cols
        row = next((r for r in range(head + 1, sheet.max_row + 1)
                    if _text(sheet.cell(r, inv).value) == moved["invoice_id"].casefold()), None)
        if row is not None:
            where = (sheet, row, due, days)
            break
    if where is None:
        return _fail(f"no sheet with {moved['invoice_id']} under headers naming the invoice, "
                     f"its due date and its days past due")
    sheet, row, due, days = where
    sheet.cell(row, days).value = AGED
    sheet.cell(row, due).value = _aged_due(sheet.cell(row, due).value)
    totals = list(csv.DictReader((ref / "aging_totals.csv").open(encoding="utf-8")))
    for t in totals:
        if t["bucket"] == "Current":
            t["total"] = f"{float(t['total']) - balance:.2f}"
        elif t["bucket"] == "Over 90":
            t["total"] = f"{float(t['total']) + balance:.2f}"
    result = check_changed_workbook(wb, totals, {
        "type": "xlsx_ref_values", "path": BOOK, "ref": "aging_totals.csv",
        "label_column": "bucket", "value_column": "total"})
    return [{"name": NAME, "passed": result.passed,
             "detail": f"{moved['invoice_id']} ({balance:.2f}) aged to {AGED} days past due: "
                       + result.detail}]
