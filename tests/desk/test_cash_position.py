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
