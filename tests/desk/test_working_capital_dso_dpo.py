"""working-capital-dso-dpo: the reference outputs pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its file.
Each mutant of the table (a month dropped or added twice, a figure a cent off, a month
named as another) fails at least one required check; so do the
plausible wrong methods: revenue (4000's movement) taken for credit sales, payables
left negative, a 30-day month for every month. ``erpsim run`` accepts the reference and
rejects the null agent.
"""

from __future__ import annotations

import csv
import shutil
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "working-capital-dso-dpo"
OUT = "out/working_capital.csv"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _graded(solved: Solved, rows: list[dict[str, str]]) -> list[str]:
    path = solved.path(OUT)
    original = path.read_text(encoding="utf-8")
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    try:
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "wc-columns" in s.failed()


def test_every_table_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, OUT, csv_mutants(solved.path(OUT), id_columns=("month",)))
    # every column but the month is a figure: no free-text cell to change
    assert {"missing row", "add a row", "wrong figure", "wrong identifier"} <= set(counts)
    assert alive == []


def test_revenue_taken_for_credit_sales_fails(solved: Solved) -> None:
    tb = _rows(solved.path("trial_balances.csv"))
    revenue = {r["period_end"][:7]: Decimal(r["credit"] or "0") for r in tb
               if r["account"] == "4000"}
    rows = _rows(solved.path(OUT))
    before = Decimal(0)
    for r in rows:
        r["credit_sales"] = f"{revenue[r['month']] - before:.2f}"
        before = revenue[r["month"]]
    assert "wc-receivables-and-sales" in _graded(solved, rows)


def test_payables_left_negative_fails(solved: Solved) -> None:
    rows = _rows(solved.path(OUT))
    for r in rows:
        r["closing_ap"] = f"-{r['closing_ap']}"
    assert "wc-payables-and-purchases" in _graded(solved, rows)


def test_thirty_days_every_month_fails(solved: Solved) -> None:
    rows = _rows(solved.path(OUT))
    for r in rows:
        dso = (Decimal(r["closing_ar"]) / Decimal(r["credit_sales"]) * 30).quantize(
            Decimal("0.1"), ROUND_HALF_UP)
        r["dso"] = str(dso)
    assert _graded(solved, rows) == ["wc-days"]


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output
