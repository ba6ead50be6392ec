"""board-segment-margin: the reference table passes; every mutation class fails a check.

Each mutant of the reference CSV (each row dropped and added twice, each figure a cent
or a tenth of a percent off, each segment name changed) must fail a required check.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "board-segment-margin"
TABLE = "out/segment_margin.csv"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def test_reference_table_passes(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "segment-figures-to-the-cent" in s.failed()


def test_every_csv_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, TABLE, csv_mutants(solved.path(TABLE),
                                                         id_columns=("segment",)))
    assert alive == []
    assert {"missing row", "add a row", "wrong figure", "wrong identifier"} <= set(counts)


def test_revenue_with_tax_or_without_total_row_fails(solved: Solved) -> None:
    path = solved.path(TABLE)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text("\n".join(x for x in original.splitlines()
                                  if not x.startswith("Total")) + "\n", encoding="utf-8")
        assert "every-segment-and-total-once" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def _failed_with(solved: Solved, change: Callable[[list[str]], list[str]]) -> list[str]:
    path = solved.path(TABLE)
    original = path.read_text(encoding="utf-8")
    lines = original.splitlines()
    try:
        path.write_text("\n".join(change(lines)) + "\n", encoding="utf-8")
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_total_row_first_fails(solved: Solved) -> None:
    """The prompt asks for a last row "Total": the right figures with the total on top."""
    def change(lines: list[str]) -> list[str]:
        total = next(x for x in lines if x.startswith("Total,"))
        return [lines[0], total, *(x for x in lines[1:] if x != total)]
    assert _failed_with(solved, change) == ["table-order/total-is-the-last-row"]


def test_amounts_in_display_format_fail(solved: Solved) -> None:
    """Amounts as plain decimals: "$84,495.07" is the right figure in the wrong format."""
    def change(lines: list[str]) -> list[str]:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        for r in rows[1:]:
            r[1:4] = [f"${float(v):,.2f}" for v in r[1:4]]
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        return buf.getvalue().splitlines()
    assert _failed_with(solved, change) == ["segment-figures-to-the-cent"]


def test_percentage_with_a_percent_sign_passes(solved: Solved) -> None:
    """margin_pct written 45.7% is the same figure: not refused."""
    def change(lines: list[str]) -> list[str]:
        return [lines[0], *(x + "%" for x in lines[1:])]
    assert _failed_with(solved, change) == []
