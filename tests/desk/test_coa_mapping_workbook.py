"""coa-mapping-workbook: the reference workbook is accepted after LibreOffice recalculation;
each mutation class (a typed-in lookup, a wrong rule, a dropped, changed or added row, a
wrong account number, an error cell, a rule's range end moved) is rejected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.desk.output_mutants import Case, Edit, edit_cases

TASK = "coa-mapping-workbook"
BOOK = "out/coa_mapping.xlsx"

pytestmark = pytest.mark.usefixtures("soffice")  # LibreOffice recalculates


def _edit_book(change: Callable[[Any], None]) -> Edit:
    def edit(ws: Path) -> None:
        import openpyxl

        wb = openpyxl.load_workbook(ws / BOOK)
        change(wb)
        wb.save(ws / BOOK)
    return edit


def _find(sheet: Any, value: Any) -> Any:
    return next(c for row in sheet.iter_rows() for c in row if c.value == value)


def _typed_lookup(wb: Any) -> None:
    wb["Legacy TB"]["E2"] = 1000  # the first legacy row's company account typed in


def _wrong_rule(wb: Any) -> None:
    _find(wb["Rules"], 12050).offset(column=2).value = 1200  # the carve-out ignored


def _drop_legacy_row(wb: Any) -> None:
    wb["Legacy TB"].delete_rows(3)


def _a_cent_up(wb: Any) -> None:
    """One cent: the prompt reads figures to the cent."""
    cell = wb["Legacy TB"]["C2"]
    cell.value = round(float(cell.value) + 0.01, 2)


def _total_range_short(wb: Any) -> None:
    """The debit total over a range one row short (the credit total still reads the
    same figure: only a check of the debit column's Total cell fails it)."""
    cell = _find(wb["Company TB"], "Total").offset(column=2)
    start, end = cell.value[len("=SUM("):-1].split(":")
    cell.value = f"=SUM({start}:C{int(end[1:]) - 1})"


def _lookup_of_the_next_row(wb: Any) -> None:
    """The last cash row's lookup pointed at the next row's account (a receivable)."""
    sheet = wb["Legacy TB"]
    cell = sheet["E4"]
    cell.value = cell.value.replace("A4", "A5")


def _legacy_row_twice(wb: Any) -> None:
    sheet = wb["Legacy TB"]
    sheet.insert_rows(2)
    for k in range(1, 5):
        sheet.cell(2, k).value = sheet.cell(3, k).value
    sheet.cell(2, 5).value = sheet.cell(3, 5).value.replace("A3", "A2")


def _wrong_account(wb: Any) -> None:
    _find(wb["Company TB"], 1000).value = 1010


def _rule_end_moved(wb: Any) -> None:
    """The first rule's range end one lower: no legacy account of the month sits there, so
    only the rules sheet is wrong (for next month's reuse)."""
    cell = _find(wb["Rules"], 11999)
    cell.value = 11998


def _error_cell(wb: Any) -> None:
    wb["Company TB"]["F1"] = "=1/0"


def _net_column(sheet: Any) -> None:
    """A net column of live formulas on the legacy rows: makes up the formula count."""
    sheet.cell(1, sheet.max_column + 1).value = "net"
    col = sheet.max_column
    for r in range(2, sheet.max_row + 1):
        sheet.cell(r, col).value = f"=C{r}-D{r}"


def _every_lookup_typed_count_made_up(wb: Any) -> None:
    """Every company account typed in (the right ones), a net column making up the count."""
    sheet = wb["Legacy TB"]
    rules = [(r[0], r[1], r[2]) for r in wb["Rules"].iter_rows(min_row=2, values_only=True)]
    for r in range(2, sheet.max_row + 1):
        account = sheet.cell(r, 1).value
        sheet.cell(r, 5).value = next(c for lo, hi, c in rules if lo <= account <= hi)
    _net_column(sheet)


def _company_tb_typed_count_made_up(wb: Any) -> None:
    """The Company TB's debits and credits typed in (the right figures), a net column on
    the legacy rows making up the count (with the lookups: 34 of the 33 wanted)."""
    import csv

    ref = Path(__file__).resolve().parents[2] / "desk" / "tasks" / TASK / "reference"
    want = {r["account"]: r for r in
            csv.DictReader((ref / "company_tb.csv").open(encoding="utf-8"))}
    tb = wb["Company TB"]
    for row in tb.iter_rows(min_row=2):
        key = str(row[0].value)
        if key in want:
            row[2].value = float(want[key]["debit"])
            row[3].value = float(want[key]["credit"])
    _net_column(wb["Legacy TB"])


def _ranges_typed_into_the_formulas(wb: Any) -> None:
    """Each company account by a live formula with the rules' ranges typed into it: right
    this month, but blind to the rules sheet the controller reviews and reuses."""
    sheet = wb["Legacy TB"]
    rules = [(r[0], r[1], r[2]) for r in wb["Rules"].iter_rows(min_row=2, values_only=True)]
    for r in range(2, sheet.max_row + 1):
        formula = '"unmapped"'
        for lo, hi, account in reversed(rules):
            formula = f"IF(AND(A{r}>={lo},A{r}<={hi}),{account},{formula})"
        sheet.cell(r, 5).value = "=" + formula


def _lookups(make: Callable[[int], str]) -> Edit:
    def change(wb: Any) -> None:
        sheet = wb["Legacy TB"]
        for r in range(2, sheet.max_row + 1):
            sheet.cell(r, 5).value = make(r)
    return _edit_book(change)


def test_other_lookups_into_the_rules_are_accepted(attempt: tuple[Path, Path]) -> None:
    """VLOOKUP and INDEX/MATCH into the rules sheet follow it as the solution's LOOKUP does."""
    from tests.desk.output_mutants import failed_names, regrade

    for make in (lambda r: f'=IF(A{r}<=VLOOKUP(A{r},Rules!$A$2:$C$10,2,TRUE),'
                           f'VLOOKUP(A{r},Rules!$A$2:$C$10,3,TRUE),"unmapped")',
                 lambda r: f"=INDEX(Rules!$C$2:$C$10,MATCH(A{r},Rules!$A$2:$A$10,1))"):
        verdict = regrade(attempt[0], TASK, attempt[1], _lookups(make))
        assert verdict.status == "accepted", failed_names(verdict)


CASES: list[Case] = [
    ("output: the rules' ranges typed into live formulas",
     _edit_book(_ranges_typed_into_the_formulas), "live-cells/lookups-follow-the-rules"),
    ("output: every lookup typed in, the formula count made up by a net column",
     _edit_book(_every_lookup_typed_count_made_up), "live-cells/company-account-lookups"),
    ("output: the Company TB typed in, the formula count made up by net columns",
     _edit_book(_company_tb_typed_count_made_up), "live-cells/company-tb-formulas"),
    ("output: a lookup typed in", _edit_book(_typed_lookup), "lookups-and-totals-are-live"),
    ("wrong identifier: the carve-out rule ignored", _edit_book(_wrong_rule),
     "legacy-rows-mapped"),
    ("missing rows: a legacy account dropped", _edit_book(_drop_legacy_row), "company-tb-rows"),
    ("wrong figure: a cent off", _edit_book(_a_cent_up), "company-tb-rows"),
    ("output: a total over a range one row short", _edit_book(_total_range_short),
     "company-tb-rows"),
    ("output: a lookup pointed at the next row", _edit_book(_lookup_of_the_next_row),
     "legacy-rows-mapped"),
    ("output: a legacy row twice", _edit_book(_legacy_row_twice), "company-tb-rows"),
    ("wrong identifier: another company account", _edit_book(_wrong_account), "company-tb-rows"),
    ("output: an error cell", _edit_book(_error_cell), "no-error-cells"),
    ("wrong figure: a rule's range end moved", _edit_book(_rule_end_moved), "rules-kept"),
]


attempt, test_solution_is_accepted, test_mutation_is_rejected = edit_cases(TASK, CASES)
