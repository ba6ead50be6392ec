"""bank-reconciliation-multi: the reference and oracle run as attempts and agree with the
world's truth; the null agent and an agent that books the bank's errors are rejected by
the checks that say why."""

from __future__ import annotations

import csv
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from erp import commands as c
from erp import queries as q
from erp.errors import CommandRejected
from erp.ledger import StoredEvent
from erp.money import parse_cents
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import LoadedScenario, find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from sim.world_events import BankLinePosted, InjectionPlanted
from tests.scenarios.library.attempts import (
    Execute,
    LibraryAttempt,
    attempt_fixtures,
    failed_checks,
    read_verdict,
    routed,
    run_library_attempt,
)

NAME = "bank-reconciliation-multi"
SEED = 3
solver = load_solver(library_dir() / NAME / "solver.py")


class Attempt(LibraryAttempt):
    """A finished attempt with its truth and output files."""

    @property
    def month(self) -> dict[str, Any]:
        """The injection's record of the month."""
        (planted,) = [x for x in self.truth(InjectionPlanted) if x.kind == "multi_bank_month"]
        return dict(planted.detail)

    def rows(self, name: str) -> list[dict[str, str]]:
        """An output file's rows."""
        path = self.result.out / "outputs" / name
        with path.open(encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))

    def failed(self) -> set[str]:
        """The checks that failed."""
        return failed_checks(self.result.out)


scenario, reference, oracle = attempt_fixtures(NAME, SEED, Attempt)


def test_reference_and_oracle_are_accepted(reference: Attempt, oracle: Attempt) -> None:
    assert read_verdict(reference.result.out)["accepted"], reference.failed()
    assert read_verdict(oracle.result.out)["accepted"], oracle.failed()


def test_each_account_reconciles_to_its_statement(reference: Attempt) -> None:
    lines = reference.truth(BankLinePosted)
    rows = reference.rows("bank_reconciliation.csv")
    for account, gl in (("B-OPER", "1000"), ("B-SAVE", "1010"), ("B-CARD", "2060")):
        mine = [r for r in rows if r["account"] == account]
        items = {r["item"] for r in mine}
        assert {"statement_balance", "book_balance"} <= items
        statement = sum(parse_cents(r["amount"]) for r in mine
                        if r["item"] == "statement_balance")
        opening = sum(x.amount for x in lines if x.bank_account_id == account
                      and x.posted_on.isoformat() <= reference.month["statement_day"])
        opened = {b.bank_account_id: b for b in reference.ledger.books.bank_accounts.values()}
        assert opened[account].gl_account == gl
        assert statement == opening + _opening(reference, account)


def _may31() -> date:
    return date(2026, 5, 31)


def _opening(attempt: Attempt, account: str) -> int:
    for e in attempt.ledger.store.read(types=["bank_account_opened"]):
        if e.event.bank_account_id == account:
            return int(e.event.opening_balance)
    return 0


def test_transfers_in_transit_and_errors_as_the_truth_says(reference: Attempt) -> None:
    month = reference.month
    day = month["statement_day"]
    transit = {t["confirmation"] for t in month["transfers"] if t["arrives_on"] > day}
    assert transit, "every tier leaves a transfer in transit"
    assert {r["confirmation"] for r in reference.rows("transfers_in_transit.csv")} == transit
    assert q.account_balance(reference.ledger.store, "1090", as_of=_may31()) == sum(
        t["amount"] for t in month["transfers"] if t["arrives_on"] > day)
    errors = [x for x in reference.truth(BankLinePosted)
              if (x.source or "").startswith("error:")]
    assert len(errors) == 2  # medium: the fee posted twice, another client's deposit
    reported = {d["reference"] for d in reference.docs("bank_error")}
    assert reported == {x.line_id for x in errors}
    corrections = [x for x in reference.truth(BankLinePosted)
                   if (x.source or "").startswith("correction:")]
    assert sorted(x.amount for x in corrections) == sorted(-x.amount for x in errors)
    returned = [d for d in month["deposits"] if d["returned_on"]]
    for d in returned:
        inv = q.document(reference.ledger.store, "invoice", d["invoice_id"])
        assert inv is not None and inv["open_amount"] == d["amount"]


def test_the_card_statement_is_entered_and_paid(reference: Attempt) -> None:
    month = reference.month
    charges = reference.docs("card_charge")
    assert sorted((d["account"], d["total"]) for d in charges) == sorted(
        (x["account"], x["amount"]) for x in month["card_charges"])
    (paid,) = [d for d in reference.docs("transfer_out") if d["party"] == "B-CARD"]
    assert paid["total"] == sum(x["amount"] for x in month["card_charges"])
    assert paid["reference"] == "B-OPER"


def test_null_is_rejected_naming_the_work_left(scenario: LoadedScenario,
                                               tmp_path: Path) -> None:
    null = run_library_attempt(scenario, "null", tmp_path / "null", SEED, Attempt)
    try:
        assert not read_verdict(null.result.out)["accepted"]
        assert {"statements-imported", "bank-errors-reported-not-booked", "transfers-recorded",
                "card-statement-entered-and-paid", "returned-items-reopened",
                "reconciliation-of-each-account"} <= null.failed()
    finally:
        null.ledger.close()


class _BooksTheErrors:
    """The reference, except that it books the bank's errors as its own entries."""

    name = "books-the-errors"

    def run_turn(self, turn: TurnContext) -> None:
        def execute(real: Execute, cmd: c.Command) -> list[StoredEvent] | CommandRejected:
            if isinstance(cmd, c.ReportBankError):
                line = turn.ledger.books.statement_lines[cmd.line_id]
                account = line.bank_account_id
                day = turn.day - timedelta(days=3)
                if line.amount < 0:
                    return real(c.RecordBankFee(bank_account_id=account, amount=-line.amount,
                                                entry_date=day, line_id=cmd.line_id))
                return real(c.RecordInterest(bank_account_id=account, amount=line.amount,
                                             entry_date=day, line_id=cmd.line_id))
            return real(cmd)

        with routed(turn, execute):
            solver.reference(turn)


def test_an_agent_booking_the_banks_errors_is_rejected(scenario: LoadedScenario,
                                                      tmp_path: Path) -> None:
    res = run_attempt(scenario, SEED, "books-the-errors", tmp_path / "a",
                      agent=_BooksTheErrors())
    assert not read_verdict(res.out)["accepted"]
    assert {"bank-errors-reported-not-booked", "book-balances-as-bank"} <= failed_checks(res.out)


@pytest.mark.parametrize("tier", ["easy", "hard"])
def test_every_tier_is_solved_by_the_reference(tier: str, tmp_path: Path) -> None:
    loaded = load_scenario(find_scenario(NAME), tier=tier)
    res = run_attempt(loaded, SEED, "reference", tmp_path / tier)
    assert read_verdict(res.out)["accepted"], failed_checks(res.out)


class _Twisted:
    """The reference with each command changed on the way to the books (``twist``)."""

    name = "twisted"

    def __init__(self, twist: Any) -> None:
        self.twist = twist

    def run_turn(self, turn: TurnContext) -> None:
        with routed(turn, lambda real, cmd: real(self.twist(cmd, turn))):
            solver.reference(turn)


def _other_line_ids(cmd: c.Command, turn: TurnContext) -> c.Command:
    # every statement line imported (and then matched, reported) under an id of the
    # clerk's own, not the bank's; the files still name the bank's ids
    if isinstance(cmd, c.ImportStatementLines):
        return cmd.model_copy(update={"lines": tuple(
            x.model_copy(update={"line_id": f"X{x.line_id}"}) for x in cmd.lines)})
    line_id = getattr(cmd, "line_id", None)
    return cmd if line_id is None else cmd.model_copy(update={"line_id": f"X{line_id}"})


def test_lines_imported_under_other_ids_than_the_banks_are_rejected(
        scenario: LoadedScenario, tmp_path: Path) -> None:
    res = run_attempt(scenario, SEED, "twisted", tmp_path / "a",
                      agent=_Twisted(_other_line_ids))
    assert not read_verdict(res.out)["accepted"]
    assert failed_checks(res.out) == {"statements-imported"}
    (r,) = [r for r in read_verdict(res.out)["results"] if r["name"] == "statements-imported"]
    assert "not imported under its id" in r["detail"], r["detail"]


def _card_paid_tomorrow(cmd: c.Command, turn: TurnContext) -> c.Command:
    # the card statement paid in the turn of June 1 but dated June 2
    if isinstance(cmd, c.TransferFunds) and cmd.to_bank_account_id == "B-CARD":
        return cmd.model_copy(update={"entry_date": turn.day + timedelta(days=1)})
    return cmd


def test_a_card_payment_dated_after_today_is_rejected(scenario: LoadedScenario,
                                                      tmp_path: Path) -> None:
    res = run_attempt(scenario, SEED, "twisted", tmp_path / "a",
                      agent=_Twisted(_card_paid_tomorrow))
    assert not read_verdict(res.out)["accepted"]
    assert failed_checks(res.out) == {"card-statement-entered-and-paid"}
    (r,) = [r for r in read_verdict(res.out)["results"]
            if r["name"] == "card-statement-entered-and-paid"]
    assert "made in the turn of 2026-06-01" in r["detail"], r["detail"]


class _FilesRewritten:
    """The reference, its two files written with the prompt's columns in another order
    (header capitalized), a column of the clerk's own beside them and every cell quoted."""

    name = "files-rewritten"

    def run_turn(self, turn: TurnContext) -> None:
        solver.reference(turn)
        for path in sorted(turn.output_dir.glob("*.csv")):
            with path.open(encoding="utf-8", newline="") as f:
                header, *rows = list(csv.reader(f))
            order = list(reversed(range(len(header))))
            with path.open("w", encoding="utf-8", newline="") as f:
                w = csv.writer(f, quoting=csv.QUOTE_ALL)
                w.writerow([header[k].capitalize() for k in order] + ["note"])
                w.writerows([r[k] for k in order] + ["checked"] for r in rows)


def test_files_with_the_columns_in_another_order_and_one_more_are_accepted(
        scenario: LoadedScenario, tmp_path: Path) -> None:
    """The prompt names the files' columns, not their order (it says no "exact"), nor that
    no other column may stand beside them: both files read by their column names."""
    res = run_attempt(scenario, SEED, "files-rewritten", tmp_path / "a",
                      agent=_FilesRewritten())
    assert read_verdict(res.out)["accepted"], failed_checks(res.out)
    header = (res.out / "outputs" / "bank_reconciliation.csv").read_text().split("\n")[0]
    assert header.startswith('"Amount","Reference"'), header


def test_the_prompt_says_what_the_balance_rows_reference(scenario: LoadedScenario,
                                                         tmp_path: Path) -> None:
    """The reconciliation's rows are compared whole with the truth's: a reference of the
    clerk's own on a balance row (the statement's date, the GL account) is refused, so
    the prompt says both balance rows' reference is empty (and how dates are written)."""

    class BalanceRefs:
        name = "balance-refs"

        def run_turn(self, turn: TurnContext) -> None:
            solver.reference(turn)
            path = turn.output_dir / "bank_reconciliation.csv"
            with path.open(encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f))
            for r in rows:
                if r["item"].endswith("_balance"):
                    r["reference"] = "2026-05-29"
            with path.open("w", encoding="utf-8", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)

    res = run_attempt(scenario, SEED, "balance-refs", tmp_path / "a", agent=BalanceRefs())
    assert failed_checks(res.out) == {"reconciliation-of-each-account"}
    text = " ".join((tmp_path / "a" / "turns" / "01" / "workspace" / "prompt.md")
                    .read_text(encoding="utf-8").split())
    assert "closing balance, reference empty)" in text, text
    assert "2026-05-31, reference empty;" in text, text
    assert "dates as `2026-05-28`" in text, text
