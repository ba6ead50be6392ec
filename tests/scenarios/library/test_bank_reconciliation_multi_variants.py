"""bank-reconciliation-multi, audited for false rejects: correct work done another way than
the reference's.

The bank posts its service charge twice on the statement day: two lines identical but for
their line ids. The reference reports the later as the bank's error and records the fee
with the earlier; a clerk who reports the earlier and records the fee with the later did
the same work, and was refused by ``reconciliation-of-each-account`` (its ``bank_error``
row named the line it reported, the check wanted the bank's own erroneous line id). The
check now takes either line of an identical pair (``checks.bank_multi.error_twins``) and
the prompt says either may be reported; listing both lines as errors is still refused.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checks.bank_multi import (
    MultiReconciliationFile,
    error_twins,
    multi_bank_truth,
    multi_reconciliation_file,
)
from checks.context import CheckContext
from erp.ledger import Ledger
from erp.money import format_cents, parse_cents
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import failed_checks, read_verdict

NAME = "bank-reconciliation-multi"
SEED = 0
solver = load_solver(library_dir() / NAME / "solver.py")
FILE = "out/bank_reconciliation.csv"


class _OtherTwin:
    """The reference, but of the service charge's two identical lines it reports the one
    the reference records as the fee, and records the fee with the other (its file names
    the line it reported)."""

    name = "other-twin"

    def __init__(self) -> None:
        self.swapped: dict[str, str] = {}
        """The line reported -> the line the reference reports."""

    def run_turn(self, desk: TurnContext) -> None:
        real = solver._reconcile

        def swapped(turn: TurnContext, plan: Any) -> None:
            lines = solver._by_id(plan)
            for err in [e for e in plan.errors if lines[e][1].description == "SERVICE CHARGE"]:
                account, x = lines[err]
                twin = next(f for f in plan.fees if lines[f][0] == account
                            and (lines[f][1].day, lines[f][1].reference, lines[f][1].amount)
                            == (x.day, x.reference, x.amount))
                plan.fees[plan.fees.index(twin)] = err
                plan.errors[twin] = plan.errors.pop(err)
                self.swapped[twin] = err
            real(turn, plan)

        solver._reconcile = swapped
        try:
            solver.reference(desk)
        finally:
            solver._reconcile = real


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, _OtherTwin]]:
    """The attempt of the clerk reporting the other line of the pair (seed 0, medium)."""
    agent = _OtherTwin()
    out = tmp_path_factory.mktemp("twin") / "a"
    run_attempt(load_scenario(find_scenario(NAME)), SEED, agent.name, out, agent=agent)
    yield out, agent


def test_reporting_the_other_line_of_a_duplicated_charge_is_accepted(
        twin: tuple[Path, _OtherTwin]) -> None:
    out, agent = twin
    assert len(agent.swapped) == 1, agent.swapped  # seed 0: BL-000020 instead of BL-000024
    reported = next(iter(agent.swapped))
    rows = list(csv.DictReader((out / "outputs" / "bank_reconciliation.csv").open()))
    assert [r["reference"] for r in rows if r["item"] == "bank_error"
            and r["account"] == "B-OPER"] == [reported]
    assert read_verdict(out)["accepted"], failed_checks(out)


def test_the_prompt_says_either_line_of_the_pair_may_be_reported(
        twin: tuple[Path, _OtherTwin]) -> None:
    out, _ = twin
    text = " ".join((out / "turns" / "01" / "workspace" / "prompt.md")
                    .read_text(encoding="utf-8").split())
    assert ("report either one of the pair as the bank's error and record the charge with "
            "the other") in text, text


def _grade(out: Path, tmp: Path, rows: list[list[str]]) -> tuple[bool, str]:
    """``multi_reconciliation_file`` on the attempt's books with ``rows`` as the file."""
    (tmp / "out").mkdir(parents=True, exist_ok=True)
    with (tmp / FILE).open("w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows([["account", "item", "reference", "amount"], *rows])
    ledger = Ledger.open(out / "books.db")
    try:
        ctx = CheckContext(store=ledger.store, workspace=tmp)
        assert multi_bank_truth(ctx)
        r = multi_reconciliation_file(
            MultiReconciliationFile(type="multi_reconciliation_file", path=FILE), ctx)
        return r.passed, r.detail
    finally:
        ledger.close()


def test_the_twins_are_the_identical_lines_only(twin: tuple[Path, _OtherTwin]) -> None:
    out, agent = twin
    ledger = Ledger.open(out / "books.db")
    try:
        assert error_twins(CheckContext(store=ledger.store), {**multi_bank_truth(
            CheckContext(store=ledger.store))}) == agent.swapped
    finally:
        ledger.close()


def test_both_lines_of_the_pair_listed_as_errors_are_refused(
        twin: tuple[Path, _OtherTwin], tmp_path: Path) -> None:
    """The loosening names one line of the pair either way; the pair counted twice (and
    the account's items no longer tying) is still refused, and so is a row naming the
    twin with another amount."""
    out, agent = twin
    rows = list(csv.reader((out / "outputs" / "bank_reconciliation.csv").open()))[1:]
    ok, why = _grade(out, tmp_path / "as-is", rows)
    assert ok, why
    (reported, other), = agent.swapped.items()
    at = next(k for k, r in enumerate(rows) if r[1] == "bank_error" and r[2] == reported)
    both = [*rows[:at + 1], [rows[at][0], "bank_error", other, rows[at][3]], *rows[at + 1:]]
    ok, why = _grade(out, tmp_path / "both", both)
    assert not ok and "unexpected row B-OPER; bank_error" in why, why
    cent_more = format_cents(parse_cents(rows[at][3]) + 1)
    off = [r if k != at else [r[0], r[1], r[2], cent_more] for k, r in enumerate(rows)]
    ok, why = _grade(out, tmp_path / "off", off)
    assert not ok and "missing row B-OPER; bank_error" in why, why
