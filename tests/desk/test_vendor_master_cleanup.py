"""vendor-master-cleanup: the reference clean list and mapping are accepted; mutations are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.desk.output_mutants import (
    Edit,
    add_row,
    drop_row,
    failed_names,
    read_rows,
    regrade,
    set_cell,
    solved_attempt,
)

TASK = "vendor-master-cleanup"
CLEAN, MAP = "out/vendors_clean.csv", "out/vendor_mapping.csv"


@pytest.fixture(scope="module")
def attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp), tmp


def _merged(attempt: tuple[Path, Path]) -> tuple[int, str]:
    """A mapping row whose old id is not its survivor, and that survivor."""
    rows = read_rows(next((attempt[0] / "turns").glob("*/workspace")) / MAP)
    i = next(i for i, r in enumerate(rows[1:]) if r[0] != r[1])
    return i, rows[1 + i][0]


def _cases(attempt: tuple[Path, Path]) -> list[tuple[str, Edit, str]]:
    i, old = _merged(attempt)
    return [
        ("output: drop a vendor", drop_row(CLEAN, 2), "one-survivor-per-tax-id"),
        ("output: a vendor twice", add_row(CLEAN, copy_of=1), "clean-one-row-per-vendor"),
        ("missing rows: a duplicate kept as its own vendor",
         add_row(CLEAN, [old, "x", "00-0000000", "1", "2"]), "one-survivor-per-tax-id"),
        ("output: change a cell (tax id without its dash)",
         set_cell(CLEAN, 0, "tax_id", lambda t: t.replace("-", "")), "tax-ids-dashed"),
        ("wrong figure: another bank account",
         set_cell(CLEAN, 3, "bank_account", lambda a: a[:-1] + str((int(a[-1]) + 1) % 10)),
         "bank-details-from-latest-record"),
        ("wrong identifier: the name in capitals",
         set_cell(CLEAN, 1, "name", lambda n: n.upper() if n.upper() != n else n.lower()),
         "names-from-latest-record"),
        ("change a cell: the latest record's name kept with its spaces",
         set_cell(CLEAN, 1, "name", lambda n: f"  {n} "),
         "names-trimmed/names-without-surrounding-spaces"),
        ("wrong identifier: mapped to itself", set_cell(MAP, i, "new_vendor_id", old),
         "mapped-to-the-survivor"),
        ("missing rows: a mapping row dropped", drop_row(MAP, i), "every-old-id-mapped"),
        ("output: a mapping row twice", add_row(MAP, copy_of=i), "mapping-one-row-per-old-id"),
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
