"""bank-reconciliation-multi, audited a third time for false accepts (medium seed 0, real
attempts of a sloppy clerk).

Found: a bank error reported and booked after all. The deposit the bank credited to savings
for another client's account (BL-000019, 2,817.59, NORTHSIDE AUTO GLASS) was reported to
the bank and also recorded as cash received, a receipt on B-SAVE dated the turn's day
(2026-06-01): the month's balances, the reconciliation and every line still tie, so it was
accepted, though the books now hold money that is not the company's. The prompt now says
to record no receipt (the customers' cheques are in the books) and to book a bank error in
no other way on no date; ``no-receipts-of-the-clerks`` refuses any receipt of the clerk's.

Tried and rightly refused already: the card payment made from savings
(``card-statement-entered-and-paid``); a deposit in transit listed on the savings account's
reconciliation (``reconciliation-of-each-account``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from erp import commands as c
from runs.attempt import run_attempt
from scenarios.agents import load_solver
from scenarios.loader import find_scenario, library_dir, load_scenario
from scenarios.turn import TurnContext
from tests.scenarios.library.attempts import check_results, failed_checks

NAME = "bank-reconciliation-multi"
SEED = 0
solver = load_solver(library_dir() / NAME / "solver.py")

Route = Callable[[TurnContext, Callable[[c.Command], Any], c.Command], Any]


class _Clerk:
    """The reference with each command through ``route``, then ``after`` in the turn."""

    def __init__(self, name: str, route: Route | None = None,
                 after: Callable[[TurnContext], None] | None = None) -> None:
        self.name, self.route, self.after = name, route, after

    def run_turn(self, desk: TurnContext) -> None:
        if self.route is not None:
            real, route = desk.execute, self.route
            vars(desk)["execute"] = lambda cmd: route(desk, real, cmd)
        try:
            solver.reference(desk)
        finally:
            vars(desk).pop("execute", None)
        if self.after is not None:
            self.after(desk)


def _run(tmp: Path, clerk: _Clerk) -> tuple[set[str], dict[str, Any]]:
    res = run_attempt(load_scenario(find_scenario(NAME)), SEED, clerk.name, tmp / "a",
                      agent=clerk)
    return failed_checks(res.out), check_results(res.out)


def _book_the_misposted_deposit(desk: TurnContext) -> None:
    """Another client's deposit on savings, reported as the reference does, also recorded
    as cash received today."""
    done = desk.execute(c.RecordReceipt(bank_account_id="B-SAVE", entry_date=desk.day,
                                        amount=281759, method="deposit",
                                        reference="FOR ACCT ...1413",
                                        payer="NORTHSIDE AUTO GLASS"))
    assert isinstance(done, list), done


def test_a_bank_error_reported_and_booked_as_a_receipt_is_refused(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk("books-the-error", after=_book_the_misposted_deposit))
    assert failed == {"no-receipts-of-the-clerks"}, failed
    detail = results["no-receipts-of-the-clerks"]["detail"]
    assert "receipt_recorded" in detail, detail


def test_the_reference_records_no_receipt_and_is_accepted(tmp_path: Path) -> None:
    failed, results = _run(tmp_path, _Clerk("reference"))
    assert not failed, failed
    assert results["no-receipts-of-the-clerks"]["passed"]
