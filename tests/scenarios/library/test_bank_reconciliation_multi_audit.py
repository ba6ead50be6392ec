"""bank-reconciliation-multi, audited for false accepts: a clerk who does the month right and
then something wrong after it (a transfer no log holds, a fee on no statement line, the
transfer still in transit recorded as arrived before it arrived, a manual reclass between
expense accounts) was accepted; each is now refused by the check named."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext

NAME = "bank-reconciliation-multi"
solver = load_solver(library_dir() / NAME / "solver.py")


def _verdict(tmp: Path, after: Callable[[TurnContext], None]) -> dict[str, Any]:
    """The reference's month, then ``after`` in the same turn; the attempt's verdict."""

    class Agent:
        name = "after"

        def run_turn(self, desk: TurnContext) -> None:
            solver.reference(desk)
            after(desk)

    result = run_attempt(load_scenario(find_scenario(NAME)), 1, "after", tmp, agent=Agent())
    verdict: dict[str, Any] = result.summary["verdict"]
    return verdict


def _ok(done: Any) -> None:
    assert isinstance(done, list), done


def test_a_transfer_in_no_log_made_after_the_month_is_refused(tmp_path: Path) -> None:
    def sweep(desk: TurnContext) -> None:
        _ok(desk.execute(c.TransferFunds(from_bank_account_id="B-SAVE",
                                         to_bank_account_id="B-OPER", entry_date=desk.day,
                                         amount=100000, memo="sweep")))
    v = _verdict(tmp_path / "a", sweep)
    assert v["status"] == "rejected" and "transfers-recorded" in v["failed"], v


def test_a_fee_on_no_statement_line_is_refused(tmp_path: Path) -> None:
    # the service charge the bank posted twice, booked after the month instead of reported
    def fee(desk: TurnContext) -> None:
        _ok(desk.execute(c.RecordBankFee(bank_account_id="B-OPER", entry_date=desk.day,
                                         amount=1500, memo="service charge")))
    v = _verdict(tmp_path / "a", fee)
    assert v["status"] == "rejected" and "statement-lines-explained" in v["failed"], v


def test_interest_on_no_statement_line_is_refused(tmp_path: Path) -> None:
    def interest(desk: TurnContext) -> None:
        _ok(desk.execute(c.RecordInterest(bank_account_id="B-SAVE", entry_date=desk.day,
                                          amount=500, memo="interest")))
    v = _verdict(tmp_path / "a", interest)
    assert v["status"] == "rejected" and "statement-lines-explained" in v["failed"], v


def test_a_transfer_in_transit_recorded_as_arrived_before_it_arrived_is_refused(
        tmp_path: Path) -> None:
    def arrived(desk: TurnContext) -> None:
        waiting = [t for t in desk.ledger.books.transfers.values()
                   if t.received_on is None and t.to_bank_account_id != "B-CARD"]
        assert waiting
        for t in waiting:
            _ok(desk.execute(c.ReceiveTransfer(transfer_id=t.transfer_id, entry_date=desk.day)))
    v = _verdict(tmp_path / "a", arrived)
    assert v["status"] == "rejected" and "transfers-recorded" in v["failed"], v


def test_a_manual_reclass_between_expense_accounts_is_refused(tmp_path: Path) -> None:
    # a card charge coded to its policy account, then moved by hand to another
    def reclass(desk: TurnContext) -> None:
        _ok(desk.execute(c.PostJournalEntry(entry_date=date(2026, 5, 29), memo="reclass",
                                            lines=(c.JournalLineIn(account="6450", debit=1000),
                                                   c.JournalLineIn(account="6400",
                                                                   credit=1000)))))
    v = _verdict(tmp_path / "a", reclass)
    assert v["status"] == "rejected" and v["failed"] == ["no-manual-journal-entries"], v
