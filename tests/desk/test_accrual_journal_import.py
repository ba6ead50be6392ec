"""accrual-journal-import: the reference journal file is accepted; every mutation is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import (
    Edit,
    add_row,
    cent_up,
    drop_row,
    failed_names,
    read_rows,
    regrade,
    set_cell,
    solved_attempt,
    write_rows,
)

TASK = "accrual-journal-import"
OUT = "out/journal_import.csv"


@pytest.fixture(scope="module")
def attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp), tmp


def _swap_sides(ws: Path) -> None:
    """A release booked as an accrual: its credit moved to the debit side."""
    rows = read_rows(ws / OUT)
    r = next(r for r in rows[1:] if r[3] != "2100" and r[6] != "0.00")
    r[5], r[6] = r[6], r[5]
    write_rows(ws / OUT, rows)


def _one_entry(ws: Path) -> None:
    """Every accrual in one entry (not one per vendor)."""
    rows = read_rows(ws / OUT)
    for r in rows[1:]:
        r[0] = "ACC-2605-ALL"
    write_rows(ws / OUT, rows)


def _cases(attempt: tuple[Path, Path]) -> list[tuple[str, Edit, str]]:
    return [
        ("output: drop a line", drop_row(OUT, 0), "one-line-per-accrual-and-one-per-vendor"),
        ("output: a line twice", add_row(OUT, copy_of=1),
         "one-line-per-accrual-and-one-per-vendor"),
        ("output: an unbalancing line added",
         add_row(OUT, ["ACC-2605-V001", "9", "2026-05-31", "6000", "CC-100 Ops", "1.00", "0.00"]),
         "one-line-per-accrual-and-one-per-vendor"),
        ("wrong figure: a cent on the liability line", set_cell(OUT, 2, "credit", cent_up),
         "debits-and-credits-to-the-cent"),
        ("wrong figure: a release as a debit", _swap_sides, "debits-and-credits-to-the-cent"),
        ("wrong figure: one decimal", set_cell(OUT, 0, "debit", lambda d: d[:-1]),
         "debits-and-credits-to-the-cent"),
        ("wrong identifier: another expense account",
         set_cell(OUT, 0, "account", lambda a: "6000" if a != "6000" else "6100"),
         "accounts-and-cost-centers"),
        ("wrong identifier: the accrual credited to payables",
         set_cell(OUT, 2, "account", "2000"), "accounts-and-cost-centers"),
        ("wrong identifier: another cost center",
         set_cell(OUT, 0, "cost_center", "CC-999 Other"), "accounts-and-cost-centers"),
        ("wrong identifier: dated the first of June", set_cell(OUT, 0, "date", "2026-06-01"),
         "dated-at-month-end"),
        ("missing rows: one entry for all vendors", _one_entry, "one-entry-per-vendor"),
    ]


def test_reference_is_accepted(attempt: tuple[Path, Path]) -> None:
    verdict = regrade(attempt[0], TASK, attempt[1], lambda ws: None)
    assert verdict.status == "accepted", failed_names(verdict)


def test_every_mutation_class_is_rejected(attempt: tuple[Path, Path]) -> None:
    missed = []
    for label, edit, check in _cases(attempt):
        verdict = regrade(attempt[0], TASK, attempt[1], edit)
        if verdict.status != "rejected" or check not in failed_names(verdict):
            missed.append((label, verdict.status, sorted(failed_names(verdict))))
    assert missed == []


def test_the_prompt_fixes_how_the_cost_center_is_written(attempt: tuple[Path, Path]) -> None:
    """'CC-300' for the schedule's 'CC-300 Admin' (a code, as the account is) is refused by
    accounts-and-cost-centers: the prompt says the cost center is written as the schedule
    writes it."""
    from desk.tasks import load_task

    prompt = " ".join(load_task(TASK).loaded.prompt_template.split())
    assert "the cost center as the schedule writes it (e.g. CC-300 Admin)" in prompt
    v = regrade(attempt[0], TASK, attempt[1],
                set_cell(OUT, 0, "cost_center", lambda c: c.split()[0]))
    assert failed_names(v) == {"accounts-and-cost-centers"}
