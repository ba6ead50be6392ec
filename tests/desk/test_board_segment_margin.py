"""board-segment-margin: the reference table passes; every mutation class fails a check.

Each mutant of the reference CSV (each row dropped and added twice, each figure a cent
or a tenth of a percent off, each segment name changed) must fail a required check.
"""

from __future__ import annotations

import shutil
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
