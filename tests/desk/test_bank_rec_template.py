"""bank-rec-template: the reference template is accepted (this month, and refilled with the
held-out month); each mutation class is rejected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.desk.output_mutants import Case, Edit, edit_cases

TASK = "bank-rec-template"
BOOK = "out/bank_rec_template.xlsx"

pytestmark = pytest.mark.usefixtures("soffice")  # LibreOffice recalculates


def _edit(change: Callable[[Any], None]) -> Edit:
    def edit(ws: Path) -> None:
        import openpyxl

        wb = openpyxl.load_workbook(ws / BOOK)
        change(wb["Reconciliation"])
        wb.save(ws / BOOK)
    return edit


def _typed_results(s: Any) -> None:
    """This month's results typed in (right today, wrong next month)."""
    s["G3"], s["G4"], s["G5"] = 127662.67, 127662.67, 0


def _short_range(s: Any) -> None:
    s["G3"] = "=B3+SUM(B8:B12)-SUM(E8:E12)"  # misses rows 13-27 of the input ranges


def _difference_zero(s: Any) -> None:
    s["G5"] = "=0*(G3-G4)"


def _charges_added(s: Any) -> None:
    s["G4"] = "=B4+B30+B31"


def _drop_transit(s: Any) -> None:
    s["A8"], s["B8"] = None, None


def _cleared_check_listed(s: Any) -> None:
    s["D20"], s["E20"] = "CHK 2041", 1528.34  # a check the bank paid in March


def _cent_off(s: Any) -> None:
    s["B4"] = round(s["B4"].value + 0.01, 2)


def _wrong_cell(s: Any) -> None:
    s["H3"], s["G3"] = s["G3"].value, None  # the result one cell to the right


def _header_dropped(s: Any) -> None:
    for col in "ABDE":
        s[f"{col}7"] = None


def _one_row_short(s: Any) -> None:
    """The outstanding checks summed over 19 of their 20 rows: this month's and the
    held-out month's figures unchanged, a month with 20 checks wrong."""
    s["G3"] = "=B3+SUM(B8:B27)-SUM(E8:E26)"


def _references_swapped(s: Any) -> None:
    """Two deposits in transit with each other's reference (the amounts as a set right)."""
    s["A8"], s["A9"] = s["A9"].value, s["A8"].value


def _error_cell(s: Any) -> None:
    s["G6"] = "=1/0"


CASES: list[Case] = [
    ("tooling: results typed in", _edit(_typed_results), "template/refilled:G3"),
    ("tooling: a formula over too few rows", _edit(_short_range), "template/refilled:G3"),
    ("tooling: the difference pinned to zero", _edit(_difference_zero), "template/refilled:G5"),
    ("wrong qualifier: bank charges added, not deducted", _edit(_charges_added),
     "results-this-month"),
    ("missing rows: a deposit in transit left out", _edit(_drop_transit),
     "template/this-month-inputs"),
    ("output: a cleared check listed as outstanding", _edit(_cleared_check_listed),
     "template/this-month-inputs"),
    ("wrong figure: a cent on the book balance", _edit(_cent_off), "template/this-month-inputs"),
    ("wrong identifier: a result in another cell", _edit(_wrong_cell), "template/refilled:G3"),
    ("output: an error cell", _edit(_error_cell), "no-error-cells"),
    ("tooling: a range one row short of the 20", _edit(_one_row_short),
     "template/refilled-20-rows:G3"),
    ("wrong identifier: two references swapped", _edit(_references_swapped),
     "template/this-month-inputs"),
    ("output: the item headers dropped", _edit(_header_dropped), "template/layout-labels"),
    ("wrong identifier: two check numbers swapped, written as numbers",
     _edit(lambda s: _check_numbers(s, 2046, 2045)), "template/this-month-inputs"),
]


def _check_numbers(s: Any, first: Any, second: Any) -> None:
    """The outstanding checks (the ledger's CHK 2045 and CHK 2046) under other writings."""
    assert (s["D8"].value, s["D9"].value) == ("CHK 2045", "CHK 2046")
    s["D8"], s["D9"] = first, second


attempt, test_solution_is_accepted, test_mutation_is_rejected = edit_cases(TASK, CASES)


@pytest.mark.parametrize("first,second", [(2045, 2046), ("#2045", "Check 2046"),
                                          ("2045", "Chk no. 2046")])
def test_check_numbers_written_as_numbers_are_accepted(attempt: tuple[Path, Path],
                                                       first: Any, second: Any) -> None:
    """"check number" read literally: 2045 for the ledger's CHK 2045 (refused before)."""
    from tests.desk.output_mutants import failed_names, regrade

    verdict = regrade(attempt[0], TASK, attempt[1],
                      _edit(lambda s: _check_numbers(s, first, second)))
    assert verdict.status == "accepted", sorted(failed_names(verdict))
