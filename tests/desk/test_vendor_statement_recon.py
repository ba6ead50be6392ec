"""vendor-statement-recon: the reference outputs are accepted; mutations of them are not,
and neither is an attempt that writes to the books, which the prompt forbids ("Do not enter
anything in the books today"): a vendor paid from the bank is a write as much as a bill
entered."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from runs.cli import main
from tests.desk.output_mutants import (
    add_row,
    cent_up,
    drop_row,
    edit_cases,
    set_cell,
)

TASK = "vendor-statement-recon"
SEED = 7
ITEMS, BALANCES = "out/reconciling_items.csv", "out/balances.csv"
SOLVE = Path(__file__).resolve().parents[2] / "desk" / "tasks" / TASK / "solution" / "solve"

attempt, test_solution_is_accepted, test_mutation_is_rejected = edit_cases(TASK, [
    ("missing row: a statement entry left out", drop_row(ITEMS, 0),
     "items-exactly-the-statement-entries-missing-in-books"),
    ("add a row: an entry listed twice", add_row(ITEMS, copy_of=0), "items-one-row-each"),
    ("wrong sign: a credit note as a positive amount",
     set_cell(ITEMS, 2, "amount", lambda a: a.lstrip("-")), "items-kind-and-signed-amount"),
    ("wrong figure: a balance a cent off", set_cell(BALANCES, 0, "books_balance", cent_up),
     "balances-per-vendor"),
])


def test_a_vendor_paid_in_the_books_is_rejected(tmp_path: Path) -> None:
    # the right files, and one of the ledger's bills paid from the operating account
    agent = tmp_path / "pays_a_bill"
    agent.write_text(f"#!/bin/bash\n{SOLVE} \"$@\" || exit 1\n"
                     "erp payments pay-vendor V001 --bank B-OPER "
                     "--bill BILL-O00001:1357.00 >&2 || exit 1\n", encoding="utf-8")
    agent.chmod(0o755)
    result = CliRunner().invoke(main, ["run", TASK, "--seed", str(SEED), "--agent-cmd",
                                       str(agent), "--out", str(tmp_path / "run")])
    verdict = json.loads((tmp_path / "run" / "verdict.json").read_text(encoding="utf-8"))
    failed = {r["name"] for r in verdict["results"] if r["required"] and not r["passed"]}
    assert verdict["status"] == "rejected", result.output
    assert failed == {"no-agent-writes-to-the-books"}


def test_the_prompt_names_every_column_the_checks_require() -> None:
    """items-columns and balances-columns required vendor_id, document, kind, amount and
    statement_balance, books_balance, difference while the prompt named no column (an agent
    writing document_number or closing_balance was refused); and the difference's
    direction, which balances-per-vendor compares, is said."""
    import re

    from desk.tasks import load_task

    task = load_task(TASK)
    prompt = " ".join(task.spec.prompt.split())
    columns = [c for check in task.spec.checks if check["type"] == "csv_columns"
               for c in check["columns"]]
    assert len(columns) == 8
    for column in columns:
        assert re.search(rf"(?<!\w){column}(?!\w)", prompt), column
    assert "difference (statement_balance less books_balance)" in prompt


def _kinds_capitalised(ws: Path) -> None:
    path = ws / ITEMS
    text = path.read_text(encoding="utf-8")
    for kind in ("invoice", "credit_note", "payment"):
        text = text.replace(f",{kind},", f",{kind.capitalize()},")
    path.write_text(text, encoding="utf-8")


def test_kinds_capitalised_pass(attempt: tuple[Path, Path]) -> None:
    """Invoice / Credit_note / Payment are the prompt's kinds (they were refused by
    items-kind-and-signed-amount, compared case-sensitively); a kind changed to another
    one still fails (the mutation cases above)."""
    from tests.desk.output_mutants import failed_names, regrade

    verdict = regrade(attempt[0], TASK, attempt[1], _kinds_capitalised)
    assert verdict.status == "accepted", failed_names(verdict)


def test_another_kind_capitalised_fails(attempt: tuple[Path, Path]) -> None:
    """A credit note called an invoice is wrong whatever the case."""
    from tests.desk.output_mutants import failed_names, regrade

    def edit(ws: Path) -> None:
        path = ws / ITEMS
        path.write_text(path.read_text(encoding="utf-8").replace(",credit_note,", ",Invoice,",
                                                                 1), encoding="utf-8")

    assert "items-kind-and-signed-amount" in failed_names(regrade(attempt[0], TASK,
                                                                  attempt[1], edit))
