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


def _days_from(formula: Callable[[str], str]) -> Callable[[Any], None]:
    """Each invoice's days past due as a live formula over its due-date cell."""
    def change(wb: Any) -> None:
        sheet = wb["Invoices"]
        days, due = _column(sheet, "days"), _column(sheet, "due")
        sheet["H1"], sheet["I1"] = "As of", "=DATE(2026,4,15)"
        for row in sheet.iter_rows(min_row=2):
            row[days - 1].value = formula(row[due - 1].coordinate)
    return change


def _summed_cells(wb: Any) -> None:
    """Each bucket total a sum of the cells whose invoices fall in it today: live and
    right, but an invoice aging into another bucket (or a new export) leaves it wrong."""
    sheet, summary = wb["Invoices"], wb["Summary"]
    days, balance = _column(sheet, "days"), _column(sheet, "balance")
    buckets: dict[str, list[str]] = {}
    for row in sheet.iter_rows(min_row=2):
        d = row[days - 1].value
        label = ("Current" if d <= 0 else "1-30" if d <= 30 else "31-60" if d <= 60
                 else "61-90" if d <= 90 else "Over 90")
        buckets.setdefault(label, []).append(f"Invoices!{row[balance - 1].coordinate}")
    for row in summary.iter_rows(min_row=2):
        if row[0].value in buckets:
            row[1].value = "=SUM(" + ",".join(buckets[row[0].value]) + ")"


def _totals_from_due_dates(wb: Any) -> None:
    """The bucket totals by SUMPRODUCT over the due dates and an as-of cell (not over the
    days column): they follow the rows too."""
    sheet, summary = wb["Invoices"], wb["Summary"]
    sheet["H1"], sheet["I1"] = "As of", "=DATE(2026,4,15)"
    due = sheet.cell(1, _column(sheet, "due")).column_letter
    bal = sheet.cell(1, _column(sheet, "balance")).column_letter
    n = sheet.max_row
    d = f"(Invoices!$I$1-DATEVALUE(Invoices!${due}$2:${due}${n}))"
    when = {"Current": f"({d}<=0)", "1-30": f"({d}>=1)*({d}<=30)",
            "31-60": f"({d}>=31)*({d}<=60)", "61-90": f"({d}>=61)*({d}<=90)",
            "Over 90": f"({d}>90)"}
    for row in summary.iter_rows(min_row=2):
        if row[0].value in when:
            row[1].value = f"=SUMPRODUCT({when[row[0].value]}*Invoices!${bal}$2:${bal}${n})"


CASES += [
    ("output: each bucket a sum of today's cells", _edit_book(_summed_cells),
     "totals-follow-the-rows/bucket-totals-follow-the-rows"),
    # refused as the prompt says: TODAY() recalculates to the day the workbook is read
    ("output: days past due from TODAY()",
     _edit_book(_days_from(lambda due: f"=TODAY()-DATEVALUE({due})")),
     "invoice-days-and-balances"),
]

attempt, test_solution_is_accepted, test_mutation_is_rejected = edit_cases(TASK, CASES)


@pytest.mark.parametrize("label,change", [
    ("days from an as-of cell", _days_from(lambda due: f"=$I$1-DATEVALUE({due})")),
    ("summary beside the invoices", lambda wb: _summary_beside_invoices(wb)),
    ("bucket totals from the due dates", _totals_from_due_dates),
])
def test_another_layout_is_accepted(attempt: tuple[Path, Path], label: str,
                                    change: Callable[[Any], None]) -> None:
    from tests.desk.output_mutants import failed_names, regrade

    verdict = regrade(attempt[0], TASK, attempt[1], _edit_book(change))
    assert verdict.status == "accepted", (label, sorted(failed_names(verdict)))


def test_the_prompt_says_today_comes_from_a_cell() -> None:
    from desk.tasks import load_task

    prompt = " ".join(load_task(TASK).loaded.prompt_template.split())
    assert "never from TODAY() or NOW()" in prompt


def _summary_beside_invoices(wb: Any) -> None:
    """The summary in columns H:I of the invoices' sheet, no Summary sheet."""
    sheet, summary = wb["Invoices"], wb["Summary"]
    for r in range(1, summary.max_row + 1):
        value = summary.cell(r, 2).value
        if isinstance(value, str):
            value = (value.replace("Invoices!", "").replace("SUM(B", "SUM(I")
                     .replace(":B", ":I"))
        sheet.cell(r, 8).value = summary.cell(r, 1).value
        sheet.cell(r, 9).value = value
    del wb["Summary"]
