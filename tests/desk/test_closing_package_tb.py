"""closing-package-tb: the reference outputs pass; every mutation class fails a check.

The solution runs on a copy of the workspace; the task's checks grade its files (the
workbook recalculated by LibreOffice). Each mutant of the CSV (a row dropped or added
twice, a figure a cent off, a group name changed) and of the workbook (a formula typed
over with its value, a summary figure wrong, a group label changed, a summary row gone)
must fail at least one required check.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "closing-package-tb"

pytestmark = pytest.mark.usefixtures("soffice")  # LibreOffice recalculates


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "group-balances-to-the-cent" in s.failed()


def test_every_csv_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, "out/tb_by_group.csv",
                              csv_mutants(solved.path("out/tb_by_group.csv"),
                                          id_columns=("group",)))
    assert alive == []
    assert {"missing row", "add a row", "wrong figure", "wrong identifier"} <= set(counts)


def _edit_summary(path: Path, edit: Callable[[Any], None]) -> None:
    wb = openpyxl.load_workbook(path)
    edit(wb["Summary"])
    wb.save(path)


@pytest.mark.parametrize("what", ["typed-value", "wrong-figure", "wrong-label", "row-gone",
                                  "wrong-sign"])
def test_workbook_mutants_fail(solved: Solved, what: str) -> None:
    path = solved.path("out/closing_package.xlsx")
    original = path.read_bytes()
    try:
        def edit(ws: Any) -> None:
            rows = list(ws.iter_rows(min_row=2))
            revenue = next(r for r in rows if r[0].value == "Revenue")
            if what == "typed-value":  # every change typed in: not live formulas
                for r in rows:
                    r[3].value = 0
            elif what == "wrong-figure":
                revenue[3].value = f"={revenue[3].value[1:]}+0.01"  # a cent
            elif what == "wrong-label":
                revenue[0].value = "Sales"
            elif what == "row-gone":
                ws.delete_rows(revenue[0].row)
            else:
                revenue[3].value = f"=C{revenue[0].row}-B{revenue[0].row}"

        _edit_summary(path, edit)
        failed = solved.failed()
        assert failed, f"{what}: the workbook mutant passed every check"
        assert not [f for f in failed if "group" in f], failed  # the CSV is untouched
    finally:
        path.write_bytes(original)
