"""cash-position: the reference files pass; every mutation class fails a check.

The solution runs on a copy of the workspace and the task's own checks grade its two
files. Each mutant (a row dropped or added twice, a figure a cent up, an identifier or a
cell changed) must fail a required check; so must an April item carried although the
bank paid it in May, and the bank items the books lack left out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from desk.generators import GeneratorContext, cash_position
from desk.tasks import load_task
from tests.desk.output_mutants import Solved, csv_mutants, solve, survivors

TASK = "cash-position"
POSITION = "out/cash_position.csv"
ITEMS = "out/uncleared_items.csv"


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Solved:
    return solve(TASK, tmp_path_factory.mktemp(TASK))


def test_reference_files_pass(solved: Solved) -> None:
    assert solved.failed() == []


def test_untouched_workspace_fails(tmp_path: Path) -> None:
    s = solve(TASK, tmp_path)
    shutil.rmtree(s.path("out"))
    s.path("out").mkdir()
    assert {"position-figures-to-the-cent", "every-uncleared-item-once"} <= set(s.failed())


@pytest.mark.parametrize("rel,ids", [(POSITION, ("account",)),
                                     (ITEMS, ("account", "reference"))])
def test_every_csv_mutant_fails(solved: Solved, rel: str, ids: tuple[str, ...]) -> None:
    counts, alive = survivors(solved, rel, csv_mutants(solved.path(rel), id_columns=ids))
    assert alive == []
    assert {"missing row", "add a row", "wrong figure", "wrong identifier"} <= set(counts)


def test_april_item_paid_in_may_carried_fails(solved: Solved) -> None:
    """JE-2604-007 (April's rent) is on April's list and cleared on May 5."""
    april = (solved.workspace / "bank_rec_2026-04-30.csv").read_text(encoding="utf-8")
    carried = next(x for x in april.splitlines() if ",JE-2604-007," in x)
    path = solved.path(ITEMS)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + carried + "\n", encoding="utf-8")
        assert {"every-uncleared-item-once", "no-item-twice"} <= set(solved.failed())
    finally:
        path.write_text(original, encoding="utf-8")


def test_bank_items_left_out_fails(solved: Solved) -> None:
    path = solved.path(ITEMS)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text("\n".join(x for x in original.splitlines()
                                  if "bank_not_in_books" not in x) + "\n", encoding="utf-8")
        assert "every-uncleared-item-once" in solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def _rewritten(solved: Solved, rel: str, lines: list[str]) -> list[str]:
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def _display(v: str) -> str:
    f = float(v)
    return f"(${abs(f):,.2f})" if f < 0 else f"${f:,.2f}"


def test_amounts_in_display_format_fail(solved: Solved) -> None:
    """Plain decimals (-1234.56) asked: "$800,906.80" or "($12,500.00)" are refused."""
    pos = solved.path(POSITION).read_text(encoding="utf-8").splitlines()
    shown = [pos[0], *(",".join([*x.split(",")[:2], *(f'"{_display(v)}"'
                                                      for v in x.split(",")[2:])])
                       for x in pos[1:])]
    assert _rewritten(solved, POSITION, shown) == ["position-figures-to-the-cent"]
    items = solved.path(ITEMS).read_text(encoding="utf-8").splitlines()
    shown = [items[0]]
    for x in items[1:]:
        c = x.split(",")
        shown.append(",".join([*c[:3], f'"{_display(c[3])}"', c[4]]))
    assert _rewritten(solved, ITEMS, shown) == ["items-account-date-amount-type"]


def test_total_row_first_fails(solved: Solved) -> None:
    lines = solved.path(POSITION).read_text(encoding="utf-8").splitlines()
    moved = [lines[0], lines[-1], *lines[1:-1]]
    assert _rewritten(solved, POSITION, moved) == ["position-rows/total-is-the-last-row"]


@pytest.mark.parametrize("label", ["", "Total", "All accounts"])
def test_any_label_of_the_total_row_passes(solved: Solved, label: str) -> None:
    """The prompt names no label for the Total row: not refused (it was: a false reject)."""
    lines = solved.path(POSITION).read_text(encoding="utf-8").splitlines()
    assert lines[-1].startswith("Total,All bank accounts,")
    relabelled = [*lines[:-1], lines[-1].replace("All bank accounts", label, 1)]
    assert _rewritten(solved, POSITION, relabelled) == []


def test_an_account_misnamed_fails(solved: Solved) -> None:
    lines = solved.path(POSITION).read_text(encoding="utf-8").splitlines()
    wrong = [lines[0], lines[1].replace("Operating account", "Operating"), *lines[2:]]
    assert _rewritten(solved, POSITION, wrong) == ["position-rows/accounts-named-as-in-the-list"]


@pytest.mark.parametrize("tier", ["easy", "hard"])
def test_solution_solves_every_tier(tmp_path: Path, tier: str) -> None:
    """The other tiers' files, made by the generator, are solved to their own reference."""
    files = cash_position.generate(GeneratorContext(
        task_id=TASK, seed=2, day=date(2026, 6, 1), scenario=load_task(TASK).loaded.scenario,
        params={"tier": tier}))
    ws = tmp_path / "ws"
    for rel, data in files.items():
        if rel.startswith("workspace/"):
            (ws / rel.removeprefix("workspace/")).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel.removeprefix("workspace/")).write_bytes(data)
    subprocess.run([sys.executable, str(load_task(TASK).solution), "--workspace", str(ws),
                    "--output-dir", str(ws / "out")], check=True, timeout=120)
    for name in ("cash_position.csv", "uncleared_items.csv"):
        assert (ws / "out" / name).read_bytes() == files[f"reference/{name}"]


def _restoring(solved: Solved, rel: str, text: str) -> list[str]:
    path = solved.path(rel)
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(text, encoding="utf-8")
        return solved.failed()
    finally:
        path.write_text(original, encoding="utf-8")


def test_a_header_written_with_spaces_after_the_commas_is_accepted(solved: Solved) -> None:
    """'account, name, book_balance, ...' names the same columns (the shared CSV checks strip
    header names; position_rows read no 'name' column)."""
    lines = solved.path(POSITION).read_text(encoding="utf-8").splitlines()
    spaced = "\n".join([", ".join(lines[0].split(",")), *lines[1:]]) + "\n"
    assert _restoring(solved, POSITION, spaced) == []


def test_an_account_misnamed_is_still_refused_under_a_spaced_header(solved: Solved) -> None:
    lines = solved.path(POSITION).read_text(encoding="utf-8").splitlines()
    assert "Operating account" in lines[1]
    wrong = [", ".join(lines[0].split(",")), lines[1].replace("Operating account", "Operating"),
             *lines[2:]]
    assert "position-rows/accounts-named-as-in-the-list" in _restoring(
        solved, POSITION, "\n".join(wrong) + "\n")


def test_a_total_row_is_refused_as_the_prompt_says(solved: Solved) -> None:
    """'one row per ...' did not say whether a total row may follow; the prompt now says
    no total row, and one is refused."""
    from tests.desk.output_mutants import assert_total_row_refused_as_told

    assert_total_row_refused_as_told(solved, TASK, ITEMS)
