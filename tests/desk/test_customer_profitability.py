"""customer-profitability: the reference outputs pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its files.
Each mutant of the table (a customer dropped or added twice, a figure a cent off, a
percentage or rank changed, a customer id swapped for another) and of the memo (a figure
a cent off, below/above swapped, a fact negated, figures swapped between sentences, a
recommendation dropped) fails at least one required check; so do a near-floor customer
recommended for review and the concentration verdict reversed. ``erpsim run`` accepts
the reference and rejects the null agent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.desk.output_mutants import (
    Solved,
    csv_mutants,
    solve,
    survivors,
    text_mutants,
)

TASK = "customer-profitability"
MEMO = "out/memo.txt"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def _edited(solved: Solved, old: str, new: str) -> list[str]:
    path = solved.path(MEMO)
    original = path.read_text(encoding="utf-8")
    assert old in original
    path.write_text(original.replace(old, new, 1), encoding="utf-8")
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
    assert "table-columns" in s.failed()


def test_every_table_mutant_fails(solved: Solved) -> None:
    rel = "out/customer_profitability.csv"
    counts, alive = survivors(solved, rel, csv_mutants(solved.path(rel),
                                                       id_columns=("customer_id",)))
    assert {"missing row", "add a row", "wrong figure", "change a cell"} <= set(counts)
    assert alive == []


def test_every_memo_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, MEMO, text_mutants(solved.path(MEMO)))
    assert {"wrong figure", "wrong qualifier", "wrong sentence", "missing row"} <= set(counts)
    assert alive == []


@pytest.mark.parametrize("edit", [
    ("which is below the 40% threshold: revenue is not concentrated",
     "which is above the 40% threshold: revenue is concentrated"),
    ("revenue is not concentrated", "revenue is concentrated"),
    ("is 18.0%, below the 20% floor", "is 18.0%, not below the 20% floor"),
])
def test_qualifiers_are_facts(solved: Solved, edit: tuple[str, str]) -> None:
    assert _edited(solved, *edit) != []


def test_a_near_floor_customer_recommended_fails(solved: Solved) -> None:
    path = solved.path(MEMO)
    original = path.read_text(encoding="utf-8")
    path.write_text(original + "We recommend a pricing review for Lee-Patterson: its gross "
                    "margin of 3,149.76 on revenue of 15,745.33 is 20.0%, at the 20% floor.\n",
                    encoding="utf-8")
    try:
        assert solved.failed() == ["memo-no-other-customer"]
    finally:
        path.write_text(original, encoding="utf-8")


@pytest.mark.parametrize(("old", "new", "check"), [
    # revenue and margin swapped between the two figures of one sentence
    ("Total revenue for the quarter was 654,936.64, with a gross margin of 229,372.40",
     "Total revenue for the quarter was 229,372.40, with a gross margin of 654,936.64",
     "memo-totals"),
    ("its gross margin of 2,320.43 on revenue of 12,920.38",
     "its gross margin of 12,920.38 on revenue of 2,320.43", "memo-review-C0017"),
    # a customer neither the largest nor below the floor (nor near it) named anyway
    ("is 7.5%, below the 20% floor.\n",
     "is 7.5%, below the 20% floor.\nSaunders LLC earns our best margin, 52.5%.\n",
     "memo-no-other-customer"),
])
def test_wrong_memo_refused(solved: Solved, old: str, new: str, check: str) -> None:
    assert check in _edited(solved, old, new)


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output


LINE2 = ("The five largest customers account for 229,160.31, 35.0% of revenue, which is below "
         "the 40% threshold: revenue is not concentrated.")


@pytest.mark.parametrize(("old", "new"), [
    # the concentration verdict in other words
    (LINE2, "Our top 5 customers generated $229,160.31, or 35.0% of total revenue; this is "
            "below our 40% concentration threshold, so revenue is not considered concentrated."),
    (LINE2, "The five largest customers account for $229,160.31 (35.0% of revenue), below the "
            "40% threshold, so revenue isn't concentrated."),
    (LINE2, "The five largest customers account for $229,160.31 (35.0% of revenue), which is "
            "below the 40% threshold: there is no revenue concentration."),
    # the largest customer called the biggest, the top customer
    ("The largest customer, Vasquez-Nguyen, brought in",
     "Our biggest customer, Vasquez-Nguyen, brought in"),
    ("The largest customer, Vasquez-Nguyen, brought in",
     "Our top customer is Vasquez-Nguyen, with"),
    # percentages spelled out
    ("(35.0% of revenue)", "(35.0 percent of revenue)"),
    ("is 18.0%, below the 20% floor", "is 18.0 percent, below the 20 percent floor"),
])
def test_memo_in_other_words_passes(solved: Solved, old: str, new: str) -> None:
    """The prompt asks for these facts, not these words: each rewording is accepted."""
    assert _edited(solved, old, new) == []


@pytest.mark.parametrize(("old", "new", "check"), [
    (LINE2, LINE2.replace("is below", "is above").replace("is not concentrated", "is concentrated"),
     "memo-concentration-below-threshold"),
    (LINE2, LINE2.replace("revenue is not concentrated", "revenue is concentrated"),
     "memo-concentration-below-threshold"),
    (LINE2, LINE2.replace(": revenue is not concentrated", ""),
     "memo-concentration-below-threshold"),
    ("(35.0% of revenue)", "(35.1 percent of revenue)", "memo-totals"),
    ("The largest customer, Vasquez-Nguyen, brought in",
     "The smallest customer, Vasquez-Nguyen, brought in", "memo-largest-customer"),
])
def test_memo_in_other_words_still_checked(solved: Solved, old: str, new: str,
                                           check: str) -> None:
    """The widened wordings keep their facts: the verdict reversed or left out, a percentage
    off by a tenth, the largest not called so, each still fails."""
    assert check in _edited(solved, old, new)


def test_a_total_row_is_refused_as_the_prompt_says(solved: Solved) -> None:
    """A Total row is not a customer (table-every-customer, table-one-row-per-customer); the
    prompt now says no total row."""
    from desk.tasks import load_task

    assert "(no total row)" in load_task(TASK).spec.prompt
    path = solved.path("out/customer_profitability.csv")
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + "TOTAL,Total,654936.64,425564.24,229372.40,35.0,100.0,\n",
                        encoding="utf-8")
        assert {"table-every-customer", "table-one-row-per-customer"} <= set(solved.failed())
    finally:
        path.write_text(original, encoding="utf-8")
