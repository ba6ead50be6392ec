"""bank-reconciliation-multi, audited a third time for false accepts (medium seed 0, real
attempts of a sloppy clerk).

Found: a bank error reported and booked after all. The deposit the bank credited to savings
for another client's account (BL-000019, 2,817.59, NORTHSIDE AUTO GLASS) was reported to
the bank and also recorded as cash received, a receipt on B-SAVE dated the turn's day
(2026-06-01): the month's balances, the reconciliation and every line still tie, so it was
accepted, though the books now hold money that is not the company's. The prompt now says
to record no receipt (the customers' cheques are in the books) and to book a bank error in
no other way on no date; ``no-receipts-of-the-clerks`` refuses any receipt of the clerk's.

Found: reports that say nothing. Each bank error reported with the description 'x' (or
'bank error') was accepted; the bank acts on the report. The prompt now says the description
says what the bank got wrong, and ``bank-errors-reported-not-booked``
(``description_words``) asks it in any words of the error's kind (a charge posted twice,
another client's deposit).

Tried and rightly refused already: the card payment made from savings
(``card-statement-entered-and-paid``); a deposit in transit listed on the savings account's
reconciliation (``reconciliation-of-each-account``); the card's book balance written as the
operating account's, and the misposted deposit's error row naming the savings line beside it
(``reconciliation-of-each-account``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

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


def _describing(words: dict[str, str]) -> Route:
    """Each bank error reported with ``words[kind]`` (kind: what the reference's own
    description names) as its description."""
    def route(desk: TurnContext, real: Callable[[c.Command], Any], cmd: c.Command) -> Any:
        if isinstance(cmd, c.ReportBankError):
            kind = "twice" if "twice" in cmd.description else "deposit"
            return real(cmd.model_copy(update={"description": words[kind]}))
        return real(cmd)
    return route


@pytest.mark.parametrize("say", ["x", "bank error"])
def test_bank_errors_reported_with_a_placeholder_are_refused(tmp_path: Path, say: str) -> None:
    failed, results = _run(tmp_path, _Clerk("placeholder", _describing(
        {"twice": say, "deposit": say})))
    assert failed == {"bank-errors-reported-not-booked"}, failed
    detail = results["bank-errors-reported-not-booked"]["detail"]
    assert f"line BL-000019 reported as {say!r}: the report does not say what the bank got " \
           "wrong (another client's deposit)" in detail, detail
    assert f"line BL-000024 reported as {say!r}: the report does not say what the bank got " \
           "wrong (a charge posted twice)" in detail, detail


def test_bank_errors_reported_in_a_clerks_own_words_are_accepted(tmp_path: Path) -> None:
    failed, _ = _run(tmp_path, _Clerk("own-words", _describing({
        "twice": "Duplicate service charge - please refund",
        "deposit": "Deposit belongs to another customer (acct ending 1413)"})))
    assert not failed, failed
