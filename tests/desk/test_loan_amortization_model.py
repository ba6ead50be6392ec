"""loan-amortization-model: the reference model is accepted after LibreOffice recalculation
and when the held-out loan is typed into its Inputs; each mutation class is rejected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.desk.output_mutants import Case, Edit, edit_cases

TASK = "loan-amortization-model"
BOOK = "out/loan_model.xlsx"

pytestmark = pytest.mark.usefixtures("soffice")  # LibreOffice recalculates


def _edit_book(change: Callable[[Any], None]) -> Edit:
    def edit(ws: Path) -> None:
        import openpyxl

        wb = openpyxl.load_workbook(ws / BOOK)
        change(wb)
        wb.save(ws / BOOK)
    return edit


def _typed_payment(wb: Any) -> None:
    """The summary's payment typed in (today's figure, right until the inputs change)."""
    from desk.tasks import load_task

    text = (load_task(TASK).folder / "reference" / "summary.csv").read_text()
    payment = next(line.split(",")[1] for line in text.splitlines()
                   if line.startswith("Monthly payment"))
    wb["Summary"]["B1"] = float(payment)


def _unrounded_interest(wb: Any) -> None:
    for row in wb["Schedule"].iter_rows(min_row=2, min_col=5, max_col=5):
        c = row[0]
        c.value = c.value.replace("=ROUND(", "=(").replace(",2)", ")")


def _no_final_adjustment(wb: Any) -> None:
    for row in wb["Schedule"].iter_rows(min_row=2, min_col=4, max_col=4):
        c = row[0]
        c.value = "=" + c.value[c.value.index("ROUND(PMT"):-1]


def _wrong_year(wb: Any) -> None:
    wb["Summary"]["B4"] = wb["Summary"]["B4"].value.replace("E2:", "E3:")


def _hard_coded_rate(wb: Any) -> None:
    rate = wb["Inputs"]["B2"].value
    for row in wb["Schedule"].iter_rows(min_row=2, min_col=4, max_col=5):
        for c in row:
            c.value = c.value.replace("Inputs!$B$2", str(rate))


def _more_principal(wb: Any) -> None:
    wb["Inputs"]["B1"] = wb["Inputs"]["B1"].value + 1000


def _renumbered_row(wb: Any) -> None:
    wb["Schedule"]["A5"] = 5  # instalment 4 numbered 5 (twice 5, no 4)


def _a_cent_in_one_row(wb: Any) -> None:
    cell = wb["Schedule"]["E20"]  # one month's interest a cent more, typed
    cell.value = cell.value.replace("=ROUND(", "=0.01+ROUND(")


def _error_cell(wb: Any) -> None:
    wb["Summary"]["C1"] = "=1/0"


def _rows_typed(wb: Any) -> None:
    for row in wb["Schedule"].iter_rows(min_row=30, min_col=4, max_col=7):
        for c in row:
            c.value = 1.0


CASES: list[Case] = [
    ("tooling: a summary figure typed in", _edit_book(_typed_payment),
     "reuse/reused:Monthly payment"),
    ("wrong figure: interest not rounded monthly", _edit_book(_unrounded_interest),
     "summary-figures"),
    ("wrong figure: last instalment not adjusted", _edit_book(_no_final_adjustment),
     "summary-figures"),
    ("wrong qualifier: interest of the wrong twelve months", _edit_book(_wrong_year),
     "summary-figures"),
    ("tooling: the rate typed into the formulas", _edit_book(_hard_coded_rate),
     "reuse/reused:Total interest"),
    ("wrong figure: another principal", _edit_book(_more_principal), "summary-figures"),
    ("output: an error cell", _edit_book(_error_cell), "no-error-cells"),
    ("output: an instalment numbered twice", _edit_book(_renumbered_row), "schedule-rows"),
    ("wrong figure: a cent in one month's interest", _edit_book(_a_cent_in_one_row),
     "schedule-rows"),
    ("output: rows typed in", _edit_book(_rows_typed), "schedule-is-live"),
]


attempt, test_solution_is_accepted, test_mutation_is_rejected = edit_cases(TASK, CASES)


def _labels_with_colons(wb: Any) -> None:
    for (cell,) in wb["Summary"].iter_rows(min_col=1, max_col=1):
        if isinstance(cell.value, str):
            cell.value = cell.value + ":"


def _colon_on_a_wrong_label(wb: Any) -> None:
    _labels_with_colons(wb)
    wb["Summary"]["B1"] = "=Schedule!D3+1"  # "Monthly payment:" a dollar off


def test_summary_labels_with_colons_accepted(attempt: tuple[Path, Path]) -> None:
    """"Monthly payment:" is the prompt's label with a colon, as summary-figures reads it;
    the reuse check refused it (found no figure next to "Monthly payment")."""
    from tests.desk.output_mutants import failed_names, regrade

    verdict = regrade(attempt[0], TASK, attempt[1], _edit_book(_labels_with_colons))
    assert verdict.status == "accepted", failed_names(verdict)
    verdict = regrade(attempt[0], TASK, attempt[1], _edit_book(_colon_on_a_wrong_label))
    assert "reuse/reused:Monthly payment" in failed_names(verdict)
