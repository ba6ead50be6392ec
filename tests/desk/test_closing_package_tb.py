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


def test_summary_typed_over_account_row_formulas_fails(solved: Solved) -> None:
    """The summary's current and prior typed in (right figures), the formula count met by
    formulas on the account rows: not live formulas where they are read."""
    import csv

    path = solved.path("out/closing_package.xlsx")
    original = path.read_bytes()
    ref = {r["group"]: r for r in csv.DictReader(
        solved.path("out/tb_by_group.csv").open(encoding="utf-8"))}
    try:
        wb = openpyxl.load_workbook(path)
        for row in wb["Summary"].iter_rows(min_row=2):
            if row[0].value in ref:
                row[1].value = float(ref[row[0].value]["current"])
                row[2].value = float(ref[row[0].value]["prior"])
        accounts = wb["Balances"]
        accounts["E1"], accounts["F1"] = "change", "current, rounded"
        for r in range(2, accounts.max_row + 1):
            accounts[f"E{r}"] = f"=C{r}-D{r}"
            accounts[f"F{r}"] = f"=ROUND(C{r},2)"
        wb.save(path)
        # typed figures do not follow a changed balance either
        assert solved.failed() == ["summary-current-is-formulas", "summary-prior-is-formulas",
                                   "summary-follows-the-balances"]
    finally:
        path.write_bytes(original)


def test_csv_amounts_in_display_format_fail(solved: Solved) -> None:
    """Plain decimals (-1234.50) asked: a credit in parentheses, as April's export writes
    it, or "$1,234.50" is refused."""
    import csv
    import io

    path = solved.path("out/tb_by_group.csv")
    original = path.read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(original)))

    def shown(v: str) -> str:
        f = float(v)
        return f"({abs(f):,.2f})" if f < 0 else f"${f:,.2f}"
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(
        [rows[0], *([r[0], *map(shown, r[1:])] for r in rows[1:])])
    try:
        path.write_text(buf.getvalue(), encoding="utf-8")
        assert solved.failed() == ["group-balances-to-the-cent"]
    finally:
        path.write_text(original, encoding="utf-8")


def test_csv_amounts_pandas_wrote_from_floats_pass(solved: Solved) -> None:
    """The same amounts as pandas writes a float column (-1234.5, 9582.0): plain decimals,
    the numbers right to the cent; accepted (they were compared as text and refused)."""
    import io
    import re

    import pandas as pd

    path = solved.path("out/tb_by_group.csv")
    original = path.read_text(encoding="utf-8")
    text = pd.read_csv(io.StringIO(original)).to_csv(index=False)
    assert re.search(r"(?<![\d.])-?\d+\.\d(?!\d)", text), text  # 76.4, 9582.0
    try:
        path.write_text(text, encoding="utf-8")
        assert solved.failed() == []
    finally:
        path.write_text(original, encoding="utf-8")


@pytest.mark.parametrize("cent", [0, 1])
def test_accounts_sheet_first_and_a_title_over_the_summary(solved: Solved, cent: int) -> None:
    """The balances sheet first, with its own change column under the same headers, and a
    title row over the summary mentioning current, prior and change: the summary is still
    the table read (accepted; before, the account list was read and its repeated groups
    refused). A summary change a cent off under that layout is still refused."""
    path = solved.path("out/closing_package.xlsx")
    original = path.read_bytes()
    try:
        wb = openpyxl.load_workbook(path)
        accounts = wb["Balances"]
        accounts["E1"] = "change"
        for r in range(2, accounts.max_row + 1):
            accounts[f"E{r}"] = f"=C{r}-D{r}"
        wb.move_sheet("Balances", offset=-1)
        summary = wb["Summary"]
        summary.insert_rows(1, 2)
        summary["A1"] = "May 2026 closing package: current vs prior balances and change"
        n = accounts.max_row
        for r in range(4, summary.max_row + 1):
            summary[f"B{r}"] = f"=SUMIF(Balances!$B$2:$B${n},A{r},Balances!$C$2:$C${n})"
            summary[f"C{r}"] = f"=SUMIF(Balances!$B$2:$B${n},A{r},Balances!$D$2:$D${n})"
            summary[f"D{r}"] = f"=B{r}-C{r}" + ("+0.01" if cent and r == 4 else "")
        wb.save(path)
        failed = solved.failed()
        if cent:  # (a one-account group's change is also on its account row: live there)
            assert "workbook-summary-figures" in failed, failed
        else:
            assert failed == [], failed
    finally:
        path.write_bytes(original)
