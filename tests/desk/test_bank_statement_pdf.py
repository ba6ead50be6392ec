"""bank-statement-pdf: the reference files pass; every mutation class fails a check.

The solution reads the real statement PDF of the workspace and the task's own checks
grade its files. Every mutant of them (each row dropped or added twice, each figure a
cent up, each text cell changed) must fail a required check; so must the plausible
mistakes of this work: a brought-forward line taken for a transaction, a continued
description keyed from its first line, balances filled only where printed, a
withdrawal keyed as a deposit. ``erpsim run`` accepts the reference and rejects null.
"""

from __future__ import annotations

import csv
import io
import itertools
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "bank-statement-pdf"
TXNS = "out/transactions.csv"
SUMMARY = "out/statement_summary.csv"
REF = Path(__file__).resolve().parents[2] / "desk" / "tasks" / TASK / "reference"

Rows = list[dict[str, str]]


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _edited(solved: Solved, rel: str, change: Callable[[Rows], Rows]) -> list[str]:
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(original)))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(change([dict(r) for r in rows]))
    assert buf.getvalue() != original
    path.write_text(buf.getvalue(), encoding="utf-8")
    try:
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []
    for rel in (TXNS, SUMMARY):
        assert solved.path(rel).read_text(encoding="utf-8") == \
            (REF / Path(rel).name).read_text(encoding="utf-8")


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert {"transactions-columns", "summary-columns"} <= set(s.failed())


@pytest.mark.parametrize("rel,ids", [(TXNS, ("line",)), (SUMMARY, ("item",))])
def test_every_output_mutant_fails(solved: Solved, rel: str, ids: tuple[str, ...]) -> None:
    counts, alive = survivors(solved, rel, csv_mutants(solved.path(rel), id_columns=ids))
    assert {"missing row", "add a row", "wrong figure"} <= set(counts)
    assert alive == []


def test_brought_forward_taken_for_a_transaction_fails(solved: Solved) -> None:
    def change(rows: Rows) -> Rows:
        k = len(rows) // 2
        extra = dict(rows[k], description="BALANCE BROUGHT FORWARD", reference="",
                     amount="0.00")
        new = [*rows[:k + 1], extra, *rows[k + 1:]]
        for i, r in enumerate(new, start=1):
            r["line"] = str(i)
        return new
    failed = _edited(solved, TXNS, change)
    assert {"transactions-one-row-each", "transactions-date-description-reference"} <= set(failed)


def test_continued_description_cut_to_its_first_line_fails(solved: Solved) -> None:
    def change(rows: Rows) -> Rows:
        long = next(r for r in rows if len(r["description"]) > 40)
        long["description"] = long["description"][:long["description"].rfind(" ", 0, 40)]
        return rows
    assert _edited(solved, TXNS, change) == ["transactions-date-description-reference"]


def test_balance_only_where_printed_fails(solved: Solved) -> None:
    def change(rows: Rows) -> Rows:
        for r, nxt in itertools.pairwise(rows):
            if r["date"] == nxt["date"]:
                r["balance"] = ""
        return rows
    assert _edited(solved, TXNS, change) == ["transactions-running-balance-ties"]


def test_a_withdrawal_keyed_as_a_deposit_fails(solved: Solved) -> None:
    def change(rows: Rows) -> Rows:
        r = next(r for r in rows if r["amount"].startswith("-"))
        r["amount"] = r["amount"][1:]
        return rows
    assert _edited(solved, TXNS, change) == ["transactions-amounts-to-the-cent"]


def _display(v: str) -> str:
    """An amount as a display format writes it: $, thousands separators, (negative)."""
    f = float(v)
    return f"(${abs(f):,.2f})" if f < 0 else f"${f:,.2f}"


def test_amounts_in_display_format_fail(solved: Solved) -> None:
    """The prompt asks for plain decimals to the cent, a withdrawal with a minus sign:
    "$1,171.00" or "($17,329.07)" are the right figures in the wrong format."""
    def txns(rows: Rows) -> Rows:
        for r in rows:
            r["amount"], r["balance"] = _display(r["amount"]), _display(r["balance"])
        return rows

    def summary(rows: Rows) -> Rows:
        for r in rows:
            if "." in r["value"]:
                r["value"] = _display(r["value"])
        return rows
    assert _edited(solved, TXNS, txns) == ["transactions-amounts-to-the-cent",
                                           "transactions-running-balance-ties"]
    assert _edited(solved, SUMMARY, summary) == ["summary-to-the-cent"]


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output


def test_a_total_row_is_refused_as_the_prompt_says(solved: Solved) -> None:
    """'one row per ...' did not say whether a total row may follow; the prompt now says
    no total row, and one is refused."""
    from tests.desk.output_mutants import assert_total_row_refused_as_told

    assert_total_row_refused_as_told(solved, TASK, TXNS)
