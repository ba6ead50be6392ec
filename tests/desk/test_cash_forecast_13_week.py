"""cash-forecast-13-week: the reference passes; every output mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its file.
Each mutant of the forecast (a week dropped or added twice, a cell changed, a figure a
cent off, a week named as another) fails at least one required check: the roll-forward
check makes a receipts figure changed alone fail even though receipts are only scored
within the error bound. Forecasts that ignore how customers pay (every invoice on its
due date, or all collected in week 1) fail the error bound; the savings account added
to the opening balance fails; ``erpsim run`` accepts the reference and rejects null.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "cash-forecast-13-week"
OUT = "out/cash_forecast.csv"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _rolled(rows: list[dict[str, str]], receipts: list[int], opening: int) -> None:
    """Put these receipts (cents) into the rows and roll the balances forward."""
    balance = opening
    for r, got in zip(rows, receipts, strict=True):
        r["opening"] = f"{balance / 100:.2f}"
        balance += got - round(float(r["disbursements"]) * 100)
        r["receipts"] = f"{got / 100:.2f}"
        r["closing"] = f"{balance / 100:.2f}"


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "forecast-columns" in s.failed()


def test_every_forecast_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, OUT, csv_mutants(solved.path(OUT), id_columns=("week",)))
    assert {"missing row", "add a row", "wrong figure", "change a cell"} <= set(counts)
    assert alive == []


@pytest.mark.parametrize("how", ["due-date", "week-one"])
def test_forecasts_that_ignore_payment_behaviour_fail(solved: Solved, how: str) -> None:
    path = solved.path(OUT)
    original = path.read_text(encoding="utf-8")
    rows = _rows(path)
    ar = _rows(solved.path("ar_open_items.csv"))
    weeks = [r["week_start"] for r in rows]
    receipts = [0] * len(rows)
    for item in ar:
        cents = round(float(item["open_balance"]) * 100)
        due = max(item["due_date"], weeks[0]) if how == "due-date" else weeks[0]
        k = sum(1 for w in weeks if w <= due) - 1
        if k < len(rows) and (how == "week-one" or due <= rows[-1]["week_end"]):
            receipts[k] += cents
    _rolled(rows, receipts, round(float(rows[0]["opening"]) * 100))
    _write(path, rows)
    try:
        assert solved.failed() == ["forecast-receipts-wape"]
    finally:
        path.write_text(original, encoding="utf-8")


def test_savings_in_the_opening_balance_fails(solved: Solved) -> None:
    path = solved.path(OUT)
    original = path.read_text(encoding="utf-8")
    rows = _rows(path)
    savings = next(r for r in _rows(solved.path("cash_position.csv")) if r["account"] == "1010")
    opening = round(float(rows[0]["opening"]) * 100) + round(float(savings["balance"]) * 100)
    _rolled(rows, [round(float(r["receipts"]) * 100) for r in rows], opening)
    _write(path, rows)
    try:
        assert solved.failed() == ["balances/forecast-opening-cash"]
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_past_due_bill_left_out_of_week_one_fails(solved: Solved) -> None:
    path = solved.path(OUT)
    original = path.read_text(encoding="utf-8")
    rows = _rows(path)
    bill = _rows(solved.path("ap_open_bills.csv"))[0]
    assert bill["due_date"] < rows[0]["week_start"]
    less = float(rows[0]["disbursements"]) - float(bill["open_balance"])
    rows[0]["disbursements"] = f"{less:.2f}"
    _rolled(rows, [round(float(r["receipts"]) * 100) for r in rows],
            round(float(rows[0]["opening"]) * 100))
    _write(path, rows)
    try:
        assert solved.failed() == ["forecast-disbursements-by-policy"]
    finally:
        path.write_text(original, encoding="utf-8")


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output


def _restoring(solved: Solved, text: str) -> list[str]:
    path = solved.path(OUT)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(text, encoding="utf-8")
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_header_written_with_spaces_after_the_commas_is_accepted(solved: Solved) -> None:
    """'week, week_start, ..., closing' names the same columns (the shared CSV checks strip
    header names; the balances module did not, and read no 'opening' column)."""
    lines = solved.path(OUT).read_text(encoding="utf-8").splitlines()
    spaced = "\n".join([", ".join(lines[0].split(",")), *lines[1:]]) + "\n"
    assert _restoring(solved, spaced) == []


def test_balances_that_do_not_roll_are_still_refused_under_a_spaced_header(
        solved: Solved) -> None:
    rows = _rows(solved.path(OUT))
    rows[4]["closing"] = f"{float(rows[4]['closing']) + 0.01:.2f}"
    lines = [", ".join(rows[0]), *(",".join(r.values()) for r in rows)]
    assert "balances/forecast-balances-roll" in _restoring(solved, "\n".join(lines) + "\n")


def test_a_week_without_disbursements_is_written_0_00_as_the_prompt_says(
        solved: Solved) -> None:
    """A blank for a week's zero is refused (the figure checks read it as no figure): the
    prompt asks for 0.00."""
    from desk.tasks import load_task

    prompt = " ".join(load_task(TASK).loaded.prompt_template.split())
    assert "every cell a figure (0.00 for a week with no receipts or no disbursements" in prompt
    rows = _rows(solved.path(OUT))
    zero = next(r for r in rows if float(r["disbursements"]) == 0)
    zero["disbursements"] = ""
    path = solved.path(OUT)
    original = path.read_text(encoding="utf-8")
    try:
        _write(path, rows)
        assert "forecast-disbursements-by-policy" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_total_row_is_refused_as_the_prompt_says(solved: Solved) -> None:
    """'one row per ...' did not say whether a total row may follow; the prompt now says
    no total row, and one is refused."""
    from tests.desk.output_mutants import assert_total_row_refused_as_told

    assert_total_row_refused_as_told(solved, TASK, OUT)
