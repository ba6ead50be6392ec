"""bank-export-import: the reference import file is accepted; every mutation class is not."""

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
)

TASK = "bank-export-import"
OUT = "out/bank_import.csv"


@pytest.fixture(scope="module")
def attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp), tmp


def _row(attempt: tuple[Path, Path], party_type: str) -> int:
    rows = read_rows(next((attempt[0] / "turns").glob("*/workspace")) / OUT)
    return next(i for i, r in enumerate(rows[1:]) if r[2] == party_type)




def _cases(attempt: tuple[Path, Path]) -> list[tuple[str, Edit, str]]:
    cust, vend, bank = _row(attempt, "customer"), _row(attempt, "vendor"), _row(attempt, "bank")
    return [
        ("output: drop a row", drop_row(OUT, cust), "every-bank-line-once-and-nothing-else"),
        ("output: add a row (a line twice)", add_row(OUT, copy_of=vend), "one-row-per-line"),
        ("output: add a row (the closing balance)",
         add_row(OUT, ["", "2026-03-31", "bank", "", "1000.00", "CLOSING BALANCE"]),
         "every-bank-line-once-and-nothing-else"),
        ("output: change a cell (day-first date read month-first)",
         set_cell(OUT, cust, "date", lambda d: f"{d[:4]}-{d[8:10]}-{d[5:7]}"
                  if int(d[8:10]) <= 12 else "2026-13-01"), "iso-posting-dates"),
        ("wrong figure: a cent off", set_cell(OUT, cust, "amount", cent_up),
         "signed-amounts-to-the-cent-in-import-format"),
        ("wrong figure: money out as positive",
         set_cell(OUT, vend, "amount", lambda a: a.lstrip("-")),
         "signed-amounts-to-the-cent-in-import-format"),
        ("wrong figure: thousands separator kept",
         set_cell(OUT, cust, "amount", lambda a: "1," + a),
         "signed-amounts-to-the-cent-in-import-format"),
        ("wrong identifier: another customer",
         set_cell(OUT, cust, "party_id", lambda p: "C0001" if p != "C0001" else "C0002"),
         "parties-from-the-masters"),
        ("wrong identifier: the bank's fee as a vendor",
         set_cell(OUT, bank, "party_type", "vendor"), "parties-from-the-masters"),
        ("wrong identifier: another invoice in the reference",
         set_cell(OUT, cust, "reference", lambda r: r[:-1] + ("1" if r[-1] != "1" else "2")),
         "references-kept"),
        ("missing rows: no bank lines",
         lambda ws: (ws / OUT).write_text(
             "\n".join(",".join(r) for r in read_rows(ws / OUT) if r[2] != "bank") + "\n"),
         "every-bank-line-once-and-nothing-else"),
        ("output: columns in another order",
         lambda ws: (ws / OUT).write_text("\n".join(
             ",".join([r[1], r[0], *r[2:]]) for r in read_rows(ws / OUT)) + "\n"),
         "import-columns-exact"),
    ]


def test_reference_import_is_accepted(attempt: tuple[Path, Path]) -> None:
    verdict = regrade(attempt[0], TASK, attempt[1], lambda ws: None)
    assert verdict.status == "accepted", failed_names(verdict)


def test_every_mutation_class_is_rejected(attempt: tuple[Path, Path]) -> None:
    missed = []
    for label, edit, check in _cases(attempt):
        verdict = regrade(attempt[0], TASK, attempt[1], edit)
        if verdict.status != "rejected" or check not in failed_names(verdict):
            missed.append((label, verdict.status, sorted(failed_names(verdict))))
    assert missed == []
