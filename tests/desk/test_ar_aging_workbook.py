"""ar-aging-workbook: the reference workbook is accepted after LibreOffice recalculation;
an invoice's days past due a day off (in its bucket: no total moves), its balance a cent
off, or a bucket total typed in, is rejected by the check named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.desk.output_mutants import Case, Edit, edit_cases

TASK = "ar-aging-workbook"
BOOK = "out/ar_aging.xlsx"

pytestmark = pytest.mark.usefixtures("soffice")  # LibreOffice recalculates


def _edit_book(change: Callable[[Any], None]) -> Edit:
    def edit(ws: Path) -> None:
        import openpyxl

        wb = openpyxl.load_workbook(ws / BOOK)
        change(wb)
        wb.save(ws / BOOK)
    return edit


def _column(sheet: Any, header: str) -> int:
    return next(c.column for c in sheet[1] if header in str(c.value))


def _a_day_off(wb: Any) -> None:
    """An invoice 40 days past due written as 41: still 31-60, every total the same."""
    sheet = wb["Invoices"]
    days = _column(sheet, "days")
    cell = next(row[days - 1] for row in sheet.iter_rows(min_row=2)
                if isinstance(row[days - 1].value, int) and 31 <= row[days - 1].value < 60)
    cell.value += 1


def _a_cent_off(wb: Any) -> None:
    sheet = wb["Invoices"]
    cell = sheet.cell(2, _column(sheet, "balance"))
    cell.value = round(float(cell.value) + 0.01, 2)


def _typed_total(wb: Any) -> None:
    wb["Summary"]["B7"] = 1.0


def _typed_totals_over_day_formulas(wb: Any) -> None:
    """The right figures, but the bucket totals typed in: the six formulas the count wants
    are days-past-due formulas on invoice rows (today minus the due date, live)."""
    import csv

    ref = Path(__file__).resolve().parents[2] / "desk" / "tasks" / TASK / "reference"
    totals = {r["bucket"]: float(r["total"]) for r in
              csv.DictReader((ref / "aging_totals.csv").open(encoding="utf-8"))}
    sheet = wb["Invoices"]
    days, due = _column(sheet, "days"), _column(sheet, "due")
    for row in sheet.iter_rows(min_row=2):
        due_at = row[due - 1].coordinate
        row[days - 1].value = f'=DATEVALUE("2026-04-15")-DATEVALUE({due_at})'
    for row in wb["Summary"].iter_rows(min_row=2):
        if row[0].value in totals:
            row[1].value = totals[row[0].value]


CASES: list[Case] = [
    ("output: totals typed in, the formula count met on the invoice rows",
     _edit_book(_typed_totals_over_day_formulas), "totals-are-formulas-where-read"),
    ("wrong figure: days past due a day off", _edit_book(_a_day_off),
     "invoice-days-and-balances"),
    ("wrong figure: a balance a cent off", _edit_book(_a_cent_off), "invoice-days-and-balances"),
    ("output: the grand total typed in", _edit_book(_typed_total), "bucket-and-grand-totals"),
]


attempt, test_solution_is_accepted, test_mutation_is_rejected = edit_cases(TASK, CASES)
