"""intercompany-recon: the reference outputs pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its files.
Each mutant of the differences list and of the balances (a row dropped or added twice,
a figure a cent off, an intercompany number or an entity changed to another row's, a
reason changed to another) must fail at least one required check; so must the planted
ambiguities done the plausible wrong way. ``erpsim run`` accepts the reference and
rejects the null agent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from runs.cli import main
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "intercompany-recon"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def test_reference_outputs_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert {"differences-columns", "balances-columns"} <= set(s.failed())


@pytest.mark.parametrize("rel,ids", [("out/ic_differences.csv", ("ic_ref",)),
                                     ("out/ic_balances.csv", ("entity",))])
def test_every_output_mutant_fails(solved: Solved, rel: str, ids: tuple[str, ...]) -> None:
    counts, alive = survivors(solved, rel, csv_mutants(solved.path(rel), id_columns=ids))
    assert {"missing row", "add a row", "wrong figure", "wrong identifier"} <= set(counts)
    assert alive == []


def _replace(solved: Solved, rel: str, old: str, new: str) -> list[str]:
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    assert old in original
    path.write_text(original.replace(old, new, 1), encoding="utf-8")
    try:
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_the_duplicate_called_an_amount_mismatch_fails(solved: Solved) -> None:
    assert _replace(solved, "out/ic_differences.csv", "duplicate_in_labs",
                    "amount_mismatch") == ["differences-reasons"]


def test_labs_amounts_with_their_debit_sign_fail(solved: Solved) -> None:
    # Labs' side stated as its own ledger's sign (a credit negative): the row no longer ties
    failed = _replace(solved, "out/ic_differences.csv", ",12559.98,-6279.99,",
                      ",-12559.98,18839.97,")
    assert failed == ["differences-amounts-to-the-cent"]


def test_the_difference_the_wrong_way_round_fails(solved: Solved) -> None:
    assert _replace(solved, "out/ic_balances.csv", "difference,-74272.94",
                    "difference,74272.94") == ["balances-to-the-cent"]


def test_the_difference_row_labelled_capitalised_is_refused_as_the_prompt_says(
        solved: Solved) -> None:
    """The balances are keyed by their labels, compared exactly; "Difference" was refused
    while the prompt only quoted "difference": the prompt now says the labels are written
    exactly as quoted, difference in lower case."""
    from desk.tasks import load_task

    assert "difference in lower case" in " ".join(load_task(TASK).spec.prompt.split())
    assert "balances-three-rows" in _replace(solved, "out/ic_balances.csv",
                                             "difference,-74272.94", "Difference,-74272.94")


def test_run_accepts_the_reference_and_rejects_null(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["run", TASK, "--agent", "reference", "--out",
                                   str(tmp_path / "ref")])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(main, ["run", TASK, "--agent", "null", "--out",
                                    str(tmp_path / "null")])
    assert bad.exit_code == 1, bad.output
