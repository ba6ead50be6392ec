"""audit-overpaid-bills-sql: the reference query and result are accepted; a query that
breaks a rule (run on today's and the held-out extract) or an edited result is not."""

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
    remove,
    replace_text,
    set_cell,
    solved_attempt,
)

TASK = "audit-overpaid-bills-sql"
OUT, SQL = "out/overpaid_bills.csv", "out/overpaid_bills.sql"
HELD_OUT = "query/held-out-extract"


@pytest.fixture(scope="module")
def attempt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp(TASK)
    return solved_attempt(TASK, tmp), tmp


def _hard_coded(ws: Path) -> None:
    """Today's answer typed into the query as a VALUES list."""
    rows = read_rows(ws / OUT)
    values = ", ".join("(" + ", ".join([f"'{r[0]}'", f"'{r[1]}'", *r[2:]]) + ")"
                       for r in rows[1:])
    (ws / SQL).write_text(
        "WITH t(bill_id, vendor_id, total_cents, paid_cents, overpaid_cents) AS "
        f"(VALUES {values}) SELECT * FROM t\n")


def _write_statement(ws: Path) -> None:
    (ws / SQL).write_text("DELETE FROM bills\n")


def _no_tie_break(ws: Path) -> None:
    """A one-join query ordered by overpaid_cents alone ("then by bill_id" forgotten): right
    on both extracts (no ties there), wrong where two bills are overpaid alike."""
    (ws / SQL).write_text(
        "SELECT b.bill_id, b.vendor_id, b.total_cents, SUM(pl.amount_cents) AS paid_cents,\n"
        "       SUM(pl.amount_cents) - b.total_cents AS overpaid_cents\n"
        "FROM bills AS b JOIN payment_lines AS pl ON pl.bill_id = b.bill_id\n"
        "JOIN payments AS p ON p.payment_id = pl.payment_id AND p.status = 'cleared'\n"
        "GROUP BY b.bill_id HAVING paid_cents > b.total_cents\n"
        "ORDER BY overpaid_cents DESC\n")


CASES: list[tuple[str, Edit, str]] = [
    ("tooling: no tie-break by bill_id", _no_tie_break, "query/tie-extract"),
    ("output: drop a bill", drop_row(OUT, 0), "exactly-the-overpaid-bills"),
    ("output: a bill twice", add_row(OUT, copy_of=1), "one-row-per-bill"),
    ("output: a fully paid bill added",
     add_row(OUT, ["BILL-O00001", "V001", "100", "100", "0"]), "exactly-the-overpaid-bills"),
    ("wrong figure: a cent more overpaid",
     set_cell(OUT, 0, "overpaid_cents", lambda v: str(int(v) + 1)), "result-figures"),
    ("wrong identifier: another vendor", set_cell(OUT, 0, "vendor_id", "V099"),
     "result-figures"),
    ("tooling: void payments counted",
     replace_text(SQL, "WHERE p.status = 'cleared'", ""), HELD_OUT),
    ("tooling: paid in full counted as overpaid",
     replace_text(SQL, "paid.paid_cents > b.total_cents", "paid.paid_cents >= b.total_cents"),
     HELD_OUT),
    ("tooling: smallest overpayment first",
     replace_text(SQL, "overpaid_cents DESC", "overpaid_cents ASC"), HELD_OUT),
    ("tooling: today's answer hard-coded", _hard_coded, HELD_OUT),
    ("tooling: a column renamed",
     replace_text(SQL, "AS overpaid_cents", "AS overpaid"), "query/todays-extract"),
    ("tooling: a write statement", _write_statement, "query/one-read-only-select"),
    ("tooling: two statements",
     replace_text(SQL, "-- Bills", "SELECT 1; -- Bills"), "query/one-read-only-select"),
    ("tooling: no query left", remove(SQL), "query-left"),
]


def test_reference_is_accepted(attempt: tuple[Path, Path]) -> None:
    verdict = regrade(attempt[0], TASK, attempt[1], lambda ws: None)
    assert verdict.status == "accepted", failed_names(verdict)


def test_every_mutation_class_is_rejected(attempt: tuple[Path, Path]) -> None:
    missed = []
    for label, edit, check in CASES:
        verdict = regrade(attempt[0], TASK, attempt[1], edit)
        if verdict.status != "rejected" or check not in failed_names(verdict):
            missed.append((label, verdict.status, sorted(failed_names(verdict))))
    assert missed == []
