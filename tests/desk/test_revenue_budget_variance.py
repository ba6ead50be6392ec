"""revenue-budget-variance: the reference outputs pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its files.
Each mutant of the variance table (a row dropped or added twice, a figure a cent off, a
percentage a tenth off, a flag flipped, a service named as another) and of the
commentary (a figure a cent off, over/under swapped, a fact negated, two figures
swapped between sentences, a flagged line's sentence dropped, a comment on an unflagged
line) must fail at least one required check. ``erpsim run`` accepts the reference and
rejects the null agent.
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

TASK = "revenue-budget-variance"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert "variance-columns" in s.failed()


def test_every_variance_table_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, "out/variance.csv",
                              csv_mutants(solved.path("out/variance.csv"),
                                          id_columns=("service",)))
    assert {"missing row", "add a row", "wrong figure", "change a cell"} <= set(counts)
    assert alive == []


def test_every_commentary_mutant_fails(solved: Solved) -> None:
    counts, alive = survivors(solved, "out/commentary.txt",
                              text_mutants(solved.path("out/commentary.txt")))
    assert {"wrong figure", "wrong qualifier", "wrong sentence", "missing row"} <= set(counts)
    assert alive == []


@pytest.mark.parametrize("edit", [
    ("came in under budget", "came in over budget"),
    ("came in over budget", "came in under budget"),
    ("came in under budget", "did not come in under budget"),
    ("below budget.", "above budget."),
])
def test_direction_words_are_facts(solved: Solved, edit: tuple[str, str]) -> None:
    path = solved.path("out/commentary.txt")
    original = path.read_text(encoding="utf-8")
    assert edit[0] in original
    path.write_text(original.replace(edit[0], edit[1], 1), encoding="utf-8")
    try:
        assert solved.failed() != []
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_comment_on_an_unflagged_line_fails(solved: Solved) -> None:
    path = solved.path("out/commentary.txt")
    original = path.read_text(encoding="utf-8")
    path.write_text(original + "On-site visit came in over budget by 8,877.64.\n",
                    encoding="utf-8")
    try:
        assert solved.failed() == ["commentary-only-flagged-lines"]
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_flag_flipped_near_the_threshold_fails(solved: Solved) -> None:
    path = solved.path("out/variance.csv")
    original = path.read_text(encoding="utf-8")
    row = next(r for r in original.splitlines() if r.startswith("On-site visit,"))
    assert row.endswith(",no")
    path.write_text(original.replace(row, row[:-2] + "yes"), encoding="utf-8")
    try:
        assert solved.failed() == ["variance-flags"]
    finally:
        path.write_text(original, encoding="utf-8")


@pytest.mark.parametrize(("old", "new"), [
    # a flagged line's actual and budget swapped: same figures, same sentence
    ("68,930.15 invoiced against a budget of 88,400.00",
     "88,400.00 invoiced against a budget of 68,930.15"),
    # the totals swapped
    ("May revenue was 575,434.38 against a total budget of 579,200.00",
     "May revenue was 579,200.00 against a total budget of 575,434.38"),
])
def test_actual_and_budget_swapped_fails(solved: Solved, old: str, new: str) -> None:
    path = solved.path("out/commentary.txt")
    original = path.read_text(encoding="utf-8")
    assert old in original
    path.write_text(original.replace(old, new, 1), encoding="utf-8")
    try:
        assert "commentary-figures-in-their-roles/commentary-actual-and-budget-in-their-roles" \
            in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output


ROLES = "commentary-figures-in-their-roles/commentary-actual-and-budget-in-their-roles"




@pytest.mark.parametrize("edit", [
    # exceeded / fell short of budget for over / under
    {"came in under budget by": "fell short of budget by",
     "came in over budget by": "exceeded budget by"},
    # "budgeted revenue of" names the budget, "actual revenue of" the actual
    {"Data migration came in under budget by 19,469.85: 68,930.15 invoiced against a budget "
     "of 88,400.00.": "Data migration: actual revenue of $68,930.15 against budgeted revenue "
                      "of $88,400.00, under budget by $19,469.85."},
])
def test_commentary_in_other_words_passes(solved: Solved, edit: dict[str, str]) -> None:
    """The prompt asks over or under budget and the actual and the budget, not these words."""
    assert solved.failed_with_text("out/commentary.txt", edit) == []


@pytest.mark.parametrize(("edit", "check"), [
    ({"Data migration came in under budget": "Data migration exceeded budget"},
     "commentary-each-flagged-line"),
    ({"Managed services came in over budget": "Managed services fell short of budget"},
     "commentary-each-flagged-line"),
    ({"Data migration came in under budget by 19,469.85: 68,930.15 invoiced against a budget "
      "of 88,400.00.": "Data migration: actual revenue of $88,400.00 against budgeted revenue "
                       "of $68,930.15, under budget by $19,469.85."}, ROLES),
])
def test_commentary_in_other_words_still_checked(solved: Solved, edit: dict[str, str],
                                                 check: str) -> None:
    """The other direction in the new words, the figures swapped in the new phrasing: refused."""
    assert check in solved.failed_with_text("out/commentary.txt", edit)


def test_flag_capitalised_passes_and_a_wrong_flag_fails(solved: Solved) -> None:
    """Yes/No is the prompt's yes/no; a flag flipped is still wrong whatever its case."""
    rel = "out/variance.csv"
    assert solved.failed_with_text(rel, {",yes\n": ",Yes\n", ",no\n": ",No\n"}) == []
    row = "On-site visit,94500.00,103377.64,8877.64,9.4,no"
    assert solved.failed_with_text(rel, {row: row[:-2] + "Yes"}) == ["variance-flags"]


def test_a_total_row_fails(solved: Solved) -> None:
    """The prompt asks for one row per service line and no total row."""
    failed = solved.failed_with_text("out/variance.csv", {
        "Training session,70600.00,79804.97,9204.97,13.0,yes\n":
            "Training session,70600.00,79804.97,9204.97,13.0,yes\n"
            "Total,579200.00,575434.38,-3765.62,-0.7,no\n"})
    assert "variance-one-row-per-line" in failed


TOTAL = ("In total, May revenue was 575,434.38 against a total budget of 579,200.00, "
         "3,765.62 below budget.")
MANAGED = ("Managed services came in over budget by 10,532.06: 68,832.06 invoiced against a "
           "budget of 58,300.00.")
DATA = ("Data migration came in under budget by 19,469.85: 68,930.15 invoiced against a "
        "budget of 88,400.00.")


@pytest.mark.parametrize("edit", [
    # the total's sentence names lines going the other way
    {TOTAL: TOTAL[:-1] + ", although Managed services and Training session ran over."},
    {TOTAL: TOTAL[:-1] + ", after the Managed services overrun."},
    {TOTAL: "Despite Managed services running over, in total May revenue was 575,434.38 "
            "against a total budget of 579,200.00, 3,765.62 below budget."},
    # a line's sentence names the total, or another line, going the other way
    {MANAGED: MANAGED[:-1] + ", while the total came in under budget."},
    {MANAGED: MANAGED[:-1] + ", whereas Data migration fell short."},
])
def test_a_clause_on_another_subject_is_its_own(solved: Solved, edit: dict[str, str]) -> None:
    """A sentence on the total may say a line went the other way, and a line's the total:
    each clause is its subject's (the false refusals of the summary sentences)."""
    assert solved.failed_with_text("out/commentary.txt", edit) == []


@pytest.mark.parametrize(("edit", "check"), [
    # "as did": the line's clause says no direction, the sentence's is the line's
    ({DATA: DATA[:-1] + ", as did Managed services."}, "commentary-each-flagged-line"),
    # the total the other way beside a line's clause
    ({TOTAL: TOTAL.replace("below budget", "above budget")[:-1]
      + ", although Data migration fell short."}, "commentary-totals"),
    # the line the other way beside the total's clause
    ({MANAGED: MANAGED.replace("over budget", "under budget")[:-1]
      + ", although the total came in over."}, "commentary-each-flagged-line"),
    # a second clause on the same line (naming nothing else) saying the other way
    ({MANAGED: MANAGED[:-1] + ", but under budget for the quarter."},
     "commentary-each-flagged-line"),
    # a negation in the total's own clause
    ({TOTAL: "In total, May revenue was not 575,434.38 against a total budget of 579,200.00, "
             "3,765.62 below budget, although Managed services ran over."},
     "commentary-totals"),
])
def test_a_clause_on_its_own_subject_is_still_judged(solved: Solved, edit: dict[str, str],
                                                     check: str) -> None:
    """What the clauses of a subject say of it is judged: an elliptical clause, the other
    direction in its own clause, a second clause naming nothing else, a negation."""
    assert check in solved.failed_with_text("out/commentary.txt", edit)


def test_the_totals_aside_names_every_service_line() -> None:
    """The totals' check names the lines it sets aside in a regex of the task: every
    service the generator can draw must match it."""
    import re

    import yaml

    from counterparties.customers import SERVICES

    task = yaml.safe_load((Path(__file__).parents[2] / "desk" / "tasks" / TASK
                           / "task.yaml").read_text())
    (totals,) = [c for c in task["checks"] if c.get("name") == "commentary-totals"]
    (aside,) = totals["aside"]
    assert all(re.search(aside, s, re.IGNORECASE) for s in SERVICES)
